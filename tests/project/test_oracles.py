"""The simulators in tests/upstream share no code with what they check.

Each simulator follows an external system from its upstream source; one that imported the platform's own logic
(its scheduling helpers, its catalog, its components) would agree with a wrong helper instead of catching it. So a
simulator imports the standard library, third-party packages and other simulators, and of this repository only
what the recording it reads is made of.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tools import REPO_ROOT

UPSTREAM = REPO_ROOT / "tests" / "upstream"
# This repository's top-level packages: what a simulator must not import, apart from the names below.
OURS = ("aks_gpu_platform", "components", "config", "policy", "provider", "tools", "tests", "__main__")
ALLOWED = {
    # The record of what the program registered under the mocks: the input every simulator reads, not logic of
    # the platform's (kubernetes_object only drops Pulumi's own `__` keys from a recorded object's inputs).
    ("aks_gpu_platform.testing", "Recording"),
    ("aks_gpu_platform.testing", "RecordedResource"),
    ("aks_gpu_platform.testing", "kubernetes_object"),
}


def imported(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of every import in the file, in functions too; name None for `import module`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [(module, alias.name) for alias in node.names]
    return found


def foreign(module: str, name: str | None) -> bool:
    """An import of this repository's code other than another simulator and the allowed recording types."""
    if module.startswith(".."):
        return True  # above tests/upstream
    if module.startswith(".") or module == "tests.upstream" or module.startswith("tests.upstream."):
        return False
    if module.split(".")[0] not in OURS:
        return False
    return (module, name) not in ALLOWED


def test_the_simulators_import_none_of_the_platforms_code() -> None:
    simulators = sorted(UPSTREAM.glob("*.py"))
    assert len(simulators) > 20, "the simulators live in tests/upstream"
    found = {
        str(path.relative_to(REPO_ROOT)): [f"{m} {n}" if n else m for m, n in imported(path) if foreign(m, n)]
        for path in simulators
    }
    offending = {path: imports for path, imports in found.items() if imports}
    assert not offending, (
        "a simulator implements the upstream behaviour itself, from the source its docstring cites; it may read the "
        f"recording (aks_gpu_platform.testing's Recording, RecordedResource, kubernetes_object) and nothing else of "
        f"ours: {offending}"
    )


def test_the_scan_sees_every_form_of_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import aks_gpu_platform.config.gpu.scheduling\n"
        "from aks_gpu_platform.testing import Recording, evaluate\n"
        "from tests.upstream.scrape import Series\n"
        "from ..gpu import test_gpu\n"
        "def late():\n"
        "    from aks_gpu_platform.config.catalog.gpu_sizes import gpu_sku\n"
        "    from tools import REPO_ROOT\n"
    )
    assert [f"{m} {n}" if n else m for m, n in imported(sample) if foreign(m, n)] == [
        "aks_gpu_platform.config.gpu.scheduling",
        "aks_gpu_platform.testing evaluate",
        "..gpu test_gpu",
        "aks_gpu_platform.config.catalog.gpu_sizes gpu_sku",
        "tools REPO_ROOT",
    ], "module imports, names beside an allowed one, relative imports above the folder and imports in functions"
