"""Offline tooling: evaluate the stack program under Pulumi mocks, render and check what it would create."""

from pathlib import Path

# The project folder: `__main__.py`, `Pulumi.yaml` and the stack files.
REPO_ROOT = Path(__file__).resolve().parent.parent
