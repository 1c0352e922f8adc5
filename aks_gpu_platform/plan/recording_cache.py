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
import json
import os
import pickle
import shutil
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from aks_gpu_platform.testing import Recording

from . import REPO_ROOT

RECORDING_CACHE = "AKS_GPU_PLATFORM_RECORDING_CACHE"
"""Environment variable: the cache's folder. Unset or empty, every evaluation runs."""

# What an evaluation of __main__.py reads: the program, its package, the stack files, the version in pyproject.toml
# and the caller of this module.
_SOURCE_FOLDERS = ("aks_gpu_platform", "components", "config")
_SOURCE_FILES = ("__main__.py", "Pulumi.yaml", "pyproject.toml", "tools/__init__.py", "tools/offline.py")


def _source_files() -> Iterator[Path]:
    for folder in _SOURCE_FOLDERS:
        for path in sorted((REPO_ROOT / folder).rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                yield path
    yield from (REPO_ROOT / name for name in _SOURCE_FILES)
    yield from sorted(REPO_ROOT.glob("Pulumi.*.yaml"))


@cache
def source_fingerprint() -> str:
    """A digest of everything an evaluation depends on besides its arguments."""
    digest = hashlib.sha256(sys.version.encode())
    for dist in sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()):
        digest.update(dist.encode())
    for path in _source_files():
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def cache_folder() -> Path | None:
    root = os.environ.get(RECORDING_CACHE)
    return Path(root) / source_fingerprint() if root else None


def cached(evaluate: Callable[[], Recording], *key: Any) -> Recording:
    """`evaluate()`, or the recording an earlier call with the same key and sources stored.

    Failed evaluations are not stored: a config error is raised again on every call.
    """
    folder = cache_folder()
    if folder is None:
        return evaluate()
    name = hashlib.sha256(json.dumps(key, sort_keys=True, default=repr).encode()).hexdigest()[:32]
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


def prune(root: Path) -> None:
    """Drop what earlier sources stored; only the current sources' recordings can be read again."""
    if not root.is_dir():
        return
    keep = source_fingerprint()
    for entry in root.iterdir():
        if entry.name != keep:
            shutil.rmtree(entry, ignore_errors=True)
