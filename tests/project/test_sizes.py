"""Blocks a maintainer reads in one sitting: no product function over 60 lines, no product module over 500.

A constructor longer than a screen hides which step builds what; a module longer than about 500 lines holds more
than one concern. Generated code (provider/adapters.py, written by `make docs`) is exempt: nobody edits it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("components", "config", "aks_gpu_platform", "provider", "policy", "tools")
GENERATED = {Path("provider/adapters.py")}
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500


def _product_modules() -> list[Path]:
    found: list[Path] = [ROOT / "__main__.py"]
    for top in PRODUCT:
        for path in (ROOT / top).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if relative in GENERATED or "venv" in relative.parts or "__pycache__" in relative.parts:
                continue
            if path.is_symlink() or any(p.is_symlink() for p in path.parents if ROOT in p.parents):
                continue
            found.append(path)
    return sorted(found)


def _long_functions(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_product_function_is_longer_than_a_screen() -> None:
    long = [finding for path in _product_modules() for finding in _long_functions(path)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long}"


def test_no_product_module_holds_more_than_one_concern_by_size() -> None:
    big = [
        f"{path.relative_to(ROOT)} ({n} lines)"
        for path in _product_modules()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split them by what they build): {big}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n" + "    x = 1\n" * (MAX_FUNCTION_LINES - 1), 0),
        ("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES, 1),
        ("class C:\n    def m(self):\n" + "        x = 1\n" * MAX_FUNCTION_LINES, 1),
    ],
    ids=["at-the-limit", "one-past", "a-method-one-past"],
)
def test_the_size_rule_counts_def_to_last_line(tmp_path: Path, source: str, expected: int) -> None:
    module = tmp_path / "probe.py"
    module.write_text(source)
    assert len(_long_functions(module, tmp_path)) == expected
