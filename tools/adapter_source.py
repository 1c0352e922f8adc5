"""What provider/adapters.py is generated from, read off the source: the keys a class body annotates (with the
docstring under each, which the component provider host's analyzer reads raw), and the import statement that
binds each name an annotation uses, in isort's order."""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import sys
import textwrap
import typing
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pulumi

LINE = 120
INDENT = "    "
PULUMI_BASES = (object, pulumi.Resource, pulumi.ComponentResource)


# --- what the source declares ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """One annotated key of a class body, as its source spells it (the analyzer reads docstrings raw)."""

    name: str
    annotation: str
    docstring: str | None
    module: ModuleType

    @property
    def doc(self) -> str:
        return ast.literal_eval(self.docstring) if self.docstring else ""


def _class_node(cls: type) -> tuple[ast.ClassDef, str]:
    source = textwrap.dedent(inspect.getsource(cls))
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    return node, source


def declared(cls: type) -> list[Declared]:
    """The keys annotated in the class body itself, with the docstring under each."""
    node, source = _class_node(cls)
    module = sys.modules[cls.__module__]
    found: list[Declared] = []
    for stmt, after in zip(node.body, [*node.body[1:], None], strict=True):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            docstring = ast.get_source_segment(source, after) if is_doc and after else None
            annotation = ast.get_source_segment(source, stmt.annotation)
            assert annotation is not None
            found.append(Declared(stmt.target.id, annotation, docstring, module))
    return found


def typed_dict_keys(args_type: type) -> list[Declared]:
    """A TypedDict's keys in declaration order, inherited ones first."""
    node, _ = _class_node(args_type)
    module = sys.modules[args_type.__module__]
    keys: list[Declared] = []
    for base in node.bases:
        value = getattr(module, base.id, None) if isinstance(base, ast.Name) else None
        if value is not None and typing.is_typeddict(value):
            keys += typed_dict_keys(value)
    return keys + declared(args_type)


def outputs_of(component: type) -> list[Declared]:
    """Annotated attributes along the MRO, Pulumi's own bases left out, as the analyzer collects them."""
    merged: dict[str, Declared] = {}
    for cls in reversed(component.__mro__):
        if cls not in PULUMI_BASES:
            merged.update({d.name: d for d in declared(cls) if not d.name.startswith("_")})
    return list(merged.values())


def output_type(component: type, name: str) -> Any:
    """An output's annotation as an object, from the class of the MRO that declares it."""
    return next(inspect.get_annotations(c)[name] for c in component.__mro__ if name in inspect.get_annotations(c))


def args_type_of(component: type) -> type:
    return inspect.get_annotations(component.__init__)["args"]


# --- imports -----------------------------------------------------------------------------------------------------


def _import_of(name: str, value: Any, home: ModuleType) -> str:
    if isinstance(value, ModuleType):
        return f"import {value.__name__}" + ("" if value.__name__ == name else f" as {name}")
    origin = getattr(value, "__module__", None)
    if origin in sys.modules and getattr(sys.modules[origin], name, None) is value:
        return f"from {origin} import {name}"
    return f"from {home.__name__} import {name}"


class Imports:
    """Every name the generated file binds, and the statement that binds it (one per name)."""

    def __init__(self) -> None:
        self.bound: dict[str, str | None] = {}

    def bind(self, name: str, statement: str | None) -> None:
        """`statement` None: a class the file defines itself."""
        if self.bound.setdefault(name, statement) != statement:
            raise ValueError(f"`{name}` would be bound twice: {self.bound[name]!r} and {statement!r}")

    def names_in(self, annotation: str, module: ModuleType) -> str:
        """Bind every name an annotation (source text from `module`) uses, as that module binds it."""
        for node in ast.walk(ast.parse(annotation, mode="eval")):
            if isinstance(node, ast.Name) and node.id not in vars(builtins):
                self.bind(node.id, _import_of(node.id, getattr(module, node.id), module))
        return annotation

    def render(self) -> str:
        groups: dict[int, list[str]] = {0: [], 1: [], 2: []}
        merged: dict[str, set[str]] = {}
        for statement in filter(None, self.bound.values()):
            if statement.startswith("from "):
                module, name = re.fullmatch(r"from (\S+) import (\S+)", statement).groups()  # type: ignore[union-attr]
                merged.setdefault(module, set()).add(name)
            else:
                groups[_section(statement.split()[1])].append(statement)
        for module, names in merged.items():
            groups[_section(module)].append(_from_import(module, names))
        # isort's order: plain imports before from-imports, each by module name.
        blocks = [sorted(g, key=lambda s: (s.startswith("from "), s.split()[1])) for g in groups.values() if g]
        return "\n\n".join("\n".join(b) for b in blocks)


def _section(module: str) -> int:
    top = module.split(".")[0]
    return 0 if top in sys.stdlib_module_names else 2 if top in ("aks_gpu_platform", "provider", "tools") else 1


def _from_import(module: str, names: set[str]) -> str:
    # isort's order-by-type: CONSTANTS, then Classes, then functions and modules.
    ordered = sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    line = f"from {module} import {', '.join(ordered)}"
    if len(line) <= LINE:
        return line
    return f"from {module} import (\n" + "".join(f"{INDENT}{n},\n" for n in ordered) + ")"
