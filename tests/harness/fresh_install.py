"""Fresh virtualenvs that see none of the repository, and the copy of the repository pip installs from.

The pinned SDKs reach a fresh virtualenv through a .pth file naming this interpreter's site-packages:
installing them again would download pulumi-azure-native's hundreds of megabytes, and pip counts
what the .pth file makes importable as installed, so requirements pinned to the same versions are
already satisfied.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

from aks_gpu_platform.plan.recording_cache import RECORDING_CACHE
from tools import REPO_ROOT

PACKAGE = "aks_gpu_platform"


def repository_copy(target: Path, files: Iterable[str] = ()) -> Path:
    """What `pip install <repository>` reads: pyproject.toml (with the licence it names), the package folder and the
    two folders pyproject.toml's package-dir maps into it. A copy leaves nothing in the work tree. `files` are
    further top-level files to copy."""
    target.mkdir()
    for name in ("pyproject.toml", "LICENSE", *files):
        shutil.copy(REPO_ROOT / name, target)
    for folder in (PACKAGE, "components", "config"):
        shutil.copytree(REPO_ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def share_sdks(python: Path) -> Path:
    """Make this interpreter's SDKs importable in the virtualenv of `python`; returns its site-packages."""
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "sdks.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Path(site)


# PYTHONPATH would import the repository; the recording cache (conftest.py) would put a consumer's evaluations in
# this checkout's out/recordings, where another test session's prune can delete them mid-write.
REPOSITORY_VARIABLES = ("PYTHONPATH", RECORDING_CACHE)


def clean_environment() -> dict[str, str]:
    """This process's environment without what points into the repository, so nothing of it leaks in."""
    return {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES}


def _uv() -> str | None:
    """uv from PATH, else the private copy `make` installs (.venv-uv)."""
    private = REPO_ROOT / ".venv-uv" / "bin" / "uv"
    return shutil.which("uv") or (str(private) if private.is_file() else None)


def build_wheel(checkout: Path, out: Path) -> Path:
    """The wheel `pip install <checkout>` builds, built with this interpreter's setuptools (no download)."""
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out)]
    subprocess.run([*build, str(checkout)], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = out.glob(f"{PACKAGE}-*.whl")
    return wheel


def install_alone(requirement: str, folder: Path) -> Path:
    """A new virtualenv at `folder` holding `requirement` and what its metadata pulls in, nothing else.

    No requirements file and no .pth: a dependency the wheel forgets to declare is missing here, as on a
    consumer's machine. Returns the Python.
    """
    env = clean_environment()
    uv = _uv()
    if uv is not None:
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], check=True, env=env)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, env=env)
    python = folder / "bin" / "python"
    install_into(python, requirement)
    return python


def install_into(python: Path, requirement: str) -> None:
    """Install `requirement` into the virtualenv of `python`, as a consumer's next `pip install` would.

    uv installs from its cache (filled by `make venvs`) by hard links in well under a second; without uv,
    or with a cold cache, the packages come from the index.
    """
    env = clean_environment()
    uv = _uv()
    if uv is not None:
        install = [uv, "pip", "install", "--quiet", "--python", str(python), requirement]
        if subprocess.run([*install, "--offline"], capture_output=True, env=env).returncode != 0:
            subprocess.run(install, check=True, capture_output=True, env=env, timeout=900)
        return
    pip = [str(python), "-m", "pip", "install", "--quiet", requirement]
    subprocess.run(pip, check=True, capture_output=True, env=env, timeout=900)
