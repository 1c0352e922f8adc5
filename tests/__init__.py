"""The project's tests (docs/testing.md)."""

from importlib.util import find_spec

if find_spec("aks_gpu_platform.components") is None:
    raise ImportError(
        "aks_gpu_platform.components does not import: a checkout reaches components/ and config/ through its editable "
        "install (pyproject.toml's package-dir), which `make venvs` makes; run it"
    )
