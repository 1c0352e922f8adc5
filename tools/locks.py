"""The dependency locks in locks/: what `make` installs into each virtualenv, read back for tools and tests.

A lock is `uv pip compile --universal --generate-hashes` output (`make lock`): one entry per distribution and
version, each with an environment marker where the version differs by Python or platform, and hashes. This reads
the pins that hold for one interpreter, which is what `uv pip sync` installs there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from . import REPO_ROOT

LOCKS = REPO_ROOT / "locks"

# Each virtualenv `make` builds, the requirement file that says what it needs, and the lock it installs from.
VIRTUALENVS: dict[str, tuple[str, str]] = {
    "venv": ("requirements-dev.txt", "locks/venv.txt"),
    "policy/venv": ("policy/requirements.txt", "locks/policy.txt"),
    ".venv-tools": ("requirements-tools.txt", "locks/tools.txt"),
    ".venv-checkov": ("requirements-checkov.txt", "locks/checkov.txt"),
    ".venv-uv": ("requirements-uv.txt", "locks/uv.txt"),
}

_ENTRY = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)


@dataclass(frozen=True)
class LockEntry:
    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]

    def applies(self, environment: dict[str, str] | None = None) -> bool:
        if self.marker is None:
            return True
        return Marker(self.marker).evaluate(environment)


def entries(lock: Path) -> list[LockEntry]:
    """Every entry of `lock`, in file order."""
    found: list[LockEntry] = []
    for raw in lock.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("--hash="):
            if not found:
                raise ValueError(f"{lock}: a hash with no entry before it: {raw!r}")
            last = found[-1]
            digest = line.removeprefix("--hash=").rstrip(" \\")
            found[-1] = LockEntry(last.name, last.version, last.marker, (*last.hashes, digest))
            continue
        match = _ENTRY.match(line)
        if match is None:
            raise ValueError(f"{lock}: not a pinned entry: {raw!r}")
        found.append(LockEntry(canonicalize_name(match["name"]), match["version"], match["marker"], ()))
    return found


def pins(lock: Path, environment: dict[str, str] | None = None) -> dict[str, str]:
    """Canonical name -> version of the entries that hold for `environment` (this interpreter's by default)."""
    chosen: dict[str, str] = {}
    for entry in entries(lock):
        if entry.applies(environment):
            if entry.name in chosen and chosen[entry.name] != entry.version:
                raise ValueError(f"{lock}: {entry.name} pinned twice for one environment")
            chosen[entry.name] = entry.version
    return chosen


def requirement_pins(path: Path) -> dict[str, str]:
    """Canonical name -> version of a requirement or constraints file's exact pins, following `-r` includes."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found |= requirement_pins(path.parent / line.removeprefix("-r ").strip())
        elif line and not line.startswith("-"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            if spec.operator != "==":
                raise ValueError(f"{path.name}: {line} is not an exact pin")
            found[canonicalize_name(requirement.name)] = spec.version
    return found
