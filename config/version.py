"""The package version, kept in one place: `[project] version` of pyproject.toml.

Installed (pip, a wheel), the version comes from the distribution's metadata; in a checkout
that was never installed, from the pyproject.toml beside the package. Release rules are in
docs/versioning.md and every release is listed in CHANGELOG.md.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "aks-gpu-platform"
# PEP 440 local version for code that is neither installed nor in a checkout.
UNKNOWN_VERSION = "0+unknown"
# In a checkout (the editable install maps aks_gpu_platform.config to config/), pyproject.toml is one folder up.
CHECKOUT_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def package_version() -> str:
    """The version of this code: the checkout's pyproject.toml when there is one, else the installed metadata.

    The checkout wins so that a stale install in the same virtualenv never reports another version
    than the code that runs.
    """
    if CHECKOUT_PYPROJECT.is_file():
        with CHECKOUT_PYPROJECT.open("rb") as f:
            project = tomllib.load(f).get("project", {})
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        # Sources copied without their pyproject.toml and never installed: no version to report.
        return UNKNOWN_VERSION


__version__ = package_version()
