"""The layout a newcomer walks: concerns mirrored between config/ and components/, no circle in the model, and
every module path a consumer imported before the concern packages still importing with the same names."""

from __future__ import annotations

import ast
import importlib
import json
import re
import tomllib
from collections.abc import Container, Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from aks_gpu_platform.moved_modules import MOVED, NOT_BEFORE, REMOVED_IN, OldLayoutWarning

ROOT = Path(__file__).resolve().parents[2]
BEFORE = json.loads((ROOT / "tests" / "fixtures" / "layout" / "modules-before-concerns.json").read_text())["modules"]

# Config-only: dated facts with their sources, read by every concern. Components-only: what every concern uses
# to build (the cluster handle, role assignments, workload identities, one-shot pods, scan exceptions).
CONFIG_ONLY = {"catalog"}
COMPONENTS_ONLY = {"shared"}

# Names that left their module with a reason (CHANGELOG "Changed" and "Removed").
MOVED_NAMES = {
    ("aks_gpu_platform.config.gpu", "check_amd_pools"): "a rule across sections: config/rules.py, taking sections",
    ("aks_gpu_platform.config.security", "check_pod_security_exclusions"): "a rule across sections: config/rules.py",
    ("aks_gpu_platform.config.security", "check_rdma_pod_security"): "a rule across sections: config/rules.py",
    ("aks_gpu_platform.config.scheduling", "pod_fits_node"): "only tests used it: tests/upstream/kube_scheduler.py",
    ("aks_gpu_platform.components.metrics_labels", "gpu_series_labels"): "only tests used it: they compute it",
    ("aks_gpu_platform.components.metrics_labels", "target_series_labels"): "only tests used it: they compute it",
    ("aks_gpu_platform.config.field_paths", "literal_values"): "nothing used it",
}


def _packages(top: str) -> set[str]:
    return {p.parent.name for p in (ROOT / top).glob("*/__init__.py")}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["aks_gpu_platform", *parts])


def _imports(path: Path, modules: Container[str]) -> Iterator[str]:
    """Every module `path` imports, TYPE_CHECKING blocks and function bodies included (a circle there still ties
    the two modules together for a reader and a type checker). `from pkg import module` imports the module."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            submodules = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in modules]
            yield from submodules or [module]
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def _graph(top: str) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in (ROOT / top).rglob("*.py")}
    return {name: {m for m in _imports(path, modules) if m in modules and m != name} for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node], _ = 1, stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node], _ = 2, stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_config_and_components_name_the_same_concerns() -> None:
    config, components = _packages("config") - CONFIG_ONLY, _packages("components") - COMPONENTS_ONLY
    assert config == components, (
        "a concern's config model and the component that builds it are found by the same name: "
        f"config only {sorted(config - components)}, components only {sorted(components - config)}"
    )
    assert len(config) >= 8, "the layout is by concern: cluster, network, gpu, monitoring, storage, training, ..."


@pytest.mark.parametrize("top", ["config", "components"])
def test_no_module_imports_itself_back(top: str) -> None:
    cycle = _cycle(_graph(top))
    assert not cycle, f"{top}/ has an import circle (TYPE_CHECKING imports count): {' -> '.join(cycle)}"


def _concern(module: str, top: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 else ""  # aks_gpu_platform.<top>.<concern>.<module>; "" for the top files


@pytest.mark.parametrize("top", ["config", "components"])
def test_the_concerns_stand_in_layers(top: str) -> None:
    """A concern builds on the ones below it and never on one above: between concern packages too, no circle."""
    packages: dict[str, set[str]] = {}
    for module, deps in _graph(top).items():
        source = _concern(module, top)
        for dep in deps:
            target = _concern(dep, top)
            if source and target and source != target:
                packages.setdefault(source, set()).add(target)
    for package in list(packages.values()):
        for target in package:
            packages.setdefault(target, set())
    cycle = _cycle(packages)
    assert not cycle, f"{top}/: these concerns import each other: {' -> '.join(cycle)}"


def test_only_the_platform_model_reads_the_cross_section_rules() -> None:
    graph = _graph("config")
    readers = sorted(m for m, deps in graph.items() if "aks_gpu_platform.config.rules" in deps)
    assert readers == ["aks_gpu_platform.config.platform"], (
        f"config/rules.py holds the rules across sections and must sit above them; imported by {readers}"
    )
    assert "aks_gpu_platform.config.platform" not in graph["aks_gpu_platform.config.rules"], (
        "the rules take sections, not the whole model, so the model can import them without a circle"
    )


def test_the_circle_check_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("old", sorted(BEFORE))
def test_a_module_path_of_the_flat_layout_still_imports_with_its_names_and_warns_until_its_removal(old: str) -> None:
    moved = old.removeprefix("aks_gpu_platform.") in MOVED
    if not moved and old not in _concern_packages():
        module = importlib.import_module(old)  # the same path as before: no warning (the tests make one an error)
        missing = [name for name in BEFORE[old] if not hasattr(module, name) and (old, name) not in MOVED_NAMES]
        assert not missing, f"`from {old} import ...` worked before the concern packages; gone now: {missing}"
        return
    removal = rf"removed in {re.escape(REMOVED_IN)} \(not before {NOT_BEFORE}\)"
    with pytest.warns(OldLayoutWarning, match=removal) as caught:
        module = importlib.import_module(old)
        missing = [name for name in BEFORE[old] if not hasattr(module, name) and (old, name) not in MOVED_NAMES]
    assert not missing, f"`from {old} import ...` worked before the concern packages; gone now: {missing}"
    if moved:
        assert importlib.import_module(module.__name__) is module, "the old path is the same module, not a copy"
        assert any(module.__name__ in str(w.message) for w in caught), f"importing {old} names its new home"
        assert module.__spec__ is not None and module.__spec__.name == module.__name__, (
            "the shared module keeps its own spec (reload and pickling follow the new path)"
        )


def test_the_old_layout_is_gone_in_the_release_that_removes_it() -> None:
    """docs/versioning.md and CHANGELOG.md name the release and its earliest date; from that version on the tables
    and hooks of moved_modules.py must be gone, so the removal cannot be forgotten."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    removal = f"{REMOVED_IN}"
    for page in ("docs/versioning.md", "CHANGELOG.md"):
        text = (ROOT / page).read_text()
        assert removal in text and NOT_BEFORE in text, f"{page} names the release removing the 0.2 layout and its date"
    if Version(version) >= Version(REMOVED_IN):
        assert not MOVED and not _concern_packages(), (
            f"{version} is the release that removes the 0.2 module paths and section names (moved_modules.py)"
        )


def _concern_packages() -> list[str]:
    """Packages whose `__getattr__` reads on from their section module (aks_gpu_platform/moved_modules.py)."""
    found = []
    for init in sorted([*ROOT.glob("config/*/__init__.py"), *ROOT.glob("components/*/__init__.py")]):
        if "section_names(__name__" in init.read_text():
            found.append("aks_gpu_platform." + ".".join(init.parent.relative_to(ROOT).parts))
    return found


@pytest.mark.parametrize("package", _concern_packages())
def test_a_name_no_concern_package_holds_fails_at_import_naming_it(package: str) -> None:
    # A consumer's misspelt or retired import must fail where it is written, not hand back None to fail later.
    assert len(_concern_packages()) >= 8, "the concern packages of config/ and components/ read on from a section"
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"{package}.*NoSuchName"):
        module.NoSuchName  # noqa: B018
    with pytest.raises(ImportError, match="NoSuchName"):
        exec(f"from {package} import NoSuchName", {})


def test_a_rule_that_left_a_concern_package_is_gone_from_it() -> None:
    # config/gpu.py's check_amd_pools now takes sections (config/rules.py): the old name must not linger as None.
    module = importlib.import_module("aks_gpu_platform.config.gpu")
    assert not hasattr(module, "check_amd_pools"), "the rule moved to config/rules.py and takes sections"
