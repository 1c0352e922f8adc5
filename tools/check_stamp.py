"""Run a check unless it already passed on exactly the same inputs: `python -m tools.check_stamp NAME -- COMMAND...`.

The key digests the command line, this Python's version, every distribution of the virtualenvs the check reads
(name and version from its .dist-info folder, the RECORD of file hashes the installer wrote, every .pth file) and the
path and bytes of every file the check reads. The stamp `out/stamps/NAME/<key>` is written only after the command
exits 0, with the key taken before it starts: a failing check runs every time, and a change to any input (a file
edited, added, removed or renamed, a package installed again from another build) runs it again.
`CHECK_STAMPS=off` runs the command regardless; `make clean` deletes out/.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tools import REPO_ROOT

STAMPS = Path("out") / "stamps"

# Never inputs: virtualenvs (read as distributions, below), generated output, git's and the tools' own caches.
_SKIPPED_FOLDERS = {
    ".git",
    "out",
    "node_modules",
    "__pycache__",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "build",
}


def _is_python(path: Path) -> bool:
    return path.suffix in (".py", ".pyi")


def _under_github(path: Path) -> bool:
    return path.parts[0] == ".github"


@dataclass(frozen=True)
class Check:
    reads: Callable[[Path], bool]
    """Which files of the repository (relative paths) the check reads."""
    files: tuple[str, ...]
    """Further files it reads when present (configuration)."""
    venvs: tuple[str, ...]
    """The virtualenvs it runs from or resolves imports in."""


CHECKS = {
    # pyright reads every Python file it is given or that they import, its configuration in pyproject.toml, and the
    # packages of `venv` (pyproject's venvPath/venv); its own version (and bundled typeshed) is the `pyright`
    # distribution there. All Python files count, not only pyproject's `include`: a wider key only re-runs more.
    "typecheck": Check(_is_python, ("pyproject.toml", "pyrightconfig.json"), ("venv",)),
    # check-jsonschema's vendored schema and zizmor's audits come with their versions in .venv-tools; zizmor reads
    # its configuration from .github/zizmor.yml or zizmor.yml.
    "workflows": Check(_under_github, ("zizmor.yml", ".zizmor.yml"), (".venv-tools",)),
}


def repository_files(root: Path) -> Iterator[Path]:
    """Every file and link under `root`, relative, in a stable order, outside virtualenvs and caches. A link to a
    folder is listed, not entered: what it links to is walked where it lives."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        links = [d for d in dirs if (here / d).is_symlink()]
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in links
            and d not in _SKIPPED_FOLDERS
            and not d.endswith(".egg-info")
            and not (here / d / "pyvenv.cfg").exists()
        )
        for name in sorted([*files, *links]):
            yield (here / name).relative_to(root)


def _site_packages(venv: Path) -> list[Path]:
    return sorted(venv.resolve().glob("lib/python*/site-packages"))


def _distributions(venv: Path, digest: hashlib._Hash) -> None:
    cfg = venv / "pyvenv.cfg"
    digest.update(b"venv\0" + str(venv).encode() + b"\0" + (cfg.read_bytes() if cfg.is_file() else b"missing"))
    for site in _site_packages(venv):
        for entry in sorted(site.iterdir()):
            if entry.name.endswith(".dist-info"):
                record = entry / "RECORD"
                metadata = record if record.is_file() else entry / "METADATA"
                digest.update(entry.name.encode() + b"\0" + (metadata.read_bytes() if metadata.is_file() else b""))
            elif entry.suffix == ".pth":
                digest.update(entry.name.encode() + b"\0" + entry.read_bytes())


def key(name: str, command: list[str], root: Path = REPO_ROOT) -> str:
    check = CHECKS[name]
    digest = hashlib.sha256(b"\0".join([name.encode(), *(c.encode() for c in command), sys.version.encode()]))
    for venv in check.venvs:
        _distributions(root / venv, digest)
    for path in repository_files(root):
        full = root / path
        if full.is_symlink():
            digest.update(b"link\0" + str(path).encode() + b"\0" + os.readlink(full).encode())
        elif check.reads(path) or str(path) in check.files:
            digest.update(b"file\0" + str(path).encode() + b"\0" + full.read_bytes())
    return digest.hexdigest()[:32]


def run(name: str, command: list[str], root: Path = REPO_ROOT) -> int:
    if os.environ.get("CHECK_STAMPS") == "off":
        return subprocess.run(command, cwd=root).returncode
    stamp = root / STAMPS / name / key(name, command, root)
    if stamp.is_file():
        print(f"{name}: passed before on these same inputs (stamp {stamp.relative_to(root)}); not run again")
        return 0
    code = subprocess.run(command, cwd=root).returncode
    if code == 0:
        for old in stamp.parent.glob("*") if stamp.parent.is_dir() else ():
            old.unlink()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    return code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[0] not in CHECKS or args[1] != "--":
        print(f"usage: python -m tools.check_stamp {{{','.join(CHECKS)}}} -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    return run(args[0], args[2:])


if __name__ == "__main__":
    sys.exit(main())
