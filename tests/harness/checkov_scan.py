"""checkov over a folder of rendered files, from its own virtualenv, with its reports kept by content.

A report is a function of checkov's installed packages, the arguments and the files scanned (paths and bytes):
the same scan in a later session, or in another test, reads the stored report instead of starting checkov
(3-4 s each). The folder is the test session's cache (aks_gpu_platform/plan/recording_cache.py); with it off
every scan runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.plan.recording_cache import RECORDING_CACHE
from tools import REPO_ROOT

CHECKOV_VENV = REPO_ROOT / ".venv-checkov"
CHECKOV = CHECKOV_VENV / "bin" / "checkov"
STORED_FORMAT = b"reports by framework"  # part of the key: a stored file of another shape is never read


def _installed() -> bytes:
    """The names of the distributions in checkov's virtualenv: their versions are in the names."""
    return "\n".join(sorted(p.name for p in CHECKOV_VENV.glob("lib/python*/site-packages/*.dist-info"))).encode()


def _key(folder: Path, arguments: list[str]) -> str:
    digest = hashlib.sha256(STORED_FORMAT + b"\0" + _installed() + b"\0" + "\0".join(arguments).encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def checkov_reports(folder: Path, frameworks: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """checkov's JSON report of each framework in `frameworks` over `folder`, passed checks included."""
    if not CHECKOV.exists():
        pytest.fail(".venv-checkov is missing: run `make checkov-venv` (make test does)")
    arguments = ["--framework", *frameworks, "--skip-download", "-o", "json"]
    root = os.environ.get(RECORDING_CACHE)
    stored = Path(root).parent / "checkov" / f"{_key(folder, arguments)}.json" if root else None
    if stored is not None and stored.is_file():
        stored.touch()  # still in use: prune_reports keeps it
        return json.loads(stored.read_text())
    result = subprocess.run([str(CHECKOV), "-d", str(folder), *arguments], capture_output=True, text=True, timeout=240)
    assert result.returncode in (0, 1), f"checkov could not scan {folder}: {result.stderr}"
    printed = json.loads(result.stdout)
    # One framework prints one report, several print a list; a framework that found nothing to scan prints none.
    reports = {report["check_type"]: report for report in (printed if isinstance(printed, list) else [printed])}
    assert set(reports) == set(frameworks), f"checkov scanned {sorted(reports)} of {list(frameworks)} in {folder}"
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=stored.parent, delete=False) as partial:
            json.dump(reports, partial)
        os.replace(partial.name, stored)
    return reports


def prune_reports(recordings_root: Path, max_age_days: float = 7) -> None:
    """Drop reports no session has read for `max_age_days`: their files have changed since."""
    cutoff = time.time() - max_age_days * 86400
    for report in (recordings_root.parent / "checkov").glob("*.json"):
        if report.stat().st_mtime < cutoff:
            report.unlink(missing_ok=True)
