"""Recordings of `__main__.py` kept on disk, so a test run evaluates each stack and config once.

An evaluation is a pure function of the program's source, the installed packages, the stack name
and its config: the key covers all four, so an edit anywhere in the program, a stack file or a pin
makes a new key. The test session turns the cache on (`RECORDING_CACHE` names its folder); pytest's
workers and the commands the tests start in subprocesses share it. Nothing else uses it: `make plan`
and `pulumi up` always evaluate.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pickle
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from aks_gpu_platform.testing import Recording

RECORDING_CACHE = "AKS_GPU_PLATFORM_RECORDING_CACHE"
"""Environment variable: the cache's folder. Unset or empty, every evaluation runs."""

# What an evaluation reads besides its arguments: the platform package (with the components and config it maps in,
# wherever they live), and the evaluated project's program, Pulumi.yaml, stack files and pyproject.toml.
_PACKAGES = ("aks_gpu_platform", "aks_gpu_platform.components", "aks_gpu_platform.config")
_PROJECT_FILES = ("__main__.py", "Pulumi.yaml", "pyproject.toml")


def _package_folders() -> list[Path]:
    folders: dict[Path, None] = {}
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            folders[Path(location).resolve()] = None
    return list(folders)


def _source_files(project: Path) -> Iterator[Path]:
    for folder in _package_folders():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                yield path
    yield from (project / name for name in _PROJECT_FILES if (project / name).is_file())
    yield from sorted(project.glob("Pulumi.*.yaml"))


@cache
def source_fingerprint(project: Path) -> str:
    """A digest of everything an evaluation of `project` depends on besides its arguments."""
    digest = hashlib.sha256(sys.version.encode())
    for dist in sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()):
        digest.update(dist.encode())
    for path in _source_files(project):
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def cache_folder(project: Path) -> Path | None:
    root = os.environ.get(RECORDING_CACHE)
    return Path(root) / source_fingerprint(project) if root else None


def cached(evaluate: Callable[[], Recording], project: Path, *key: Any) -> Recording:
    """`evaluate()` of `project`, or the recording an earlier call with the same key and sources stored.

    Failed evaluations are not stored: a config error is raised again on every call.
    """
    folder = cache_folder(project)
    if folder is None:
        return evaluate()
    name = hashlib.sha256(json.dumps([str(project), *key], sort_keys=True, default=repr).encode()).hexdigest()[:32]
    path = folder / f"{name}.pickle.z"
    stored = _read(path)
    if stored is not None:
        return stored
    folder.mkdir(parents=True, exist_ok=True)
    with _held(folder / f"{name}.lock"):
        stored = _read(path)  # stored by another process while this one waited
        if stored is not None:
            return stored
        recording = evaluate()
        # Written whole, then renamed: a reader in another process sees the old state or the complete file.
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as partial:
            partial.write(zlib.compress(pickle.dumps(recording, protocol=pickle.HIGHEST_PROTOCOL), 1))
        os.replace(partial.name, path)
    return recording


def _read(path: Path) -> Recording | None:
    try:
        return pickle.loads(zlib.decompress(path.read_bytes()))
    except FileNotFoundError:
        return None


@contextmanager
def _held(lock_path: Path) -> Iterator[None]:
    """An exclusive lock on `lock_path`: a second caller of the same key waits for the first one's recording.

    Two pytest workers start with the same stacks; without it both would evaluate them at once. Where
    `fcntl` is missing (Windows) both evaluate, and the last complete file wins.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield
