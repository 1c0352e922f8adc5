"""Offline tooling: evaluate the stack program under Pulumi mocks, render and check what it would create."""

import sys
from pathlib import Path

# The project folder: `__main__.py`, `Pulumi.yaml` and the stack files.
REPO_ROOT = Path(__file__).resolve().parent.parent


def write_or_check(path: Path, wanted: str, check: bool, regenerate: str) -> int:
    """Write a generated page; with `check`, only say whether it is current: 1 when it is stale (and how to
    regenerate it), 0 otherwise."""
    if not check:
        path.write_text(wanted)
        return 0
    if path.read_text() != wanted:
        print(f"{path.relative_to(REPO_ROOT)} is stale: run `{regenerate}`", file=sys.stderr)
        return 1
    return 0
