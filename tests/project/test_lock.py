"""Every virtualenv the project builds installs from a lock: the same set on every machine and every later day.

A requirement file pins what we ask for; its lock in locks/ pins everything that pulls in, each file by hash.
A transitive release after the lock was made changes nothing a fresh clone installs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tools import REPO_ROOT, locks

MAKEFILE = (REPO_ROOT / "Makefile").read_text()


# The virtualenvs that run this checkout's code: `make venvs` installs the project into them, editable.
PROJECT_VENVS = ("venv", "policy/venv")
PROJECT = "aks-gpu-platform"


def _installed(venv: Path) -> dict[str, str]:
    """Canonical name -> version of every distribution in `venv`'s site-packages, read from its metadata."""
    installed: dict[str, str] = {}
    for metadata in venv.glob("lib/python3*/site-packages/*.dist-info/METADATA"):
        fields = dict(re.findall(r"^(Name|Version): (.+)$", metadata.read_text(errors="replace"), re.M))
        installed[canonicalize_name(fields["Name"])] = fields["Version"].strip()
    return installed


@pytest.mark.parametrize("venv", sorted(locks.VIRTUALENVS))
def test_each_virtualenv_is_built_from_its_lock_and_the_lock_is_refreshed_by_one_command(venv: str) -> None:
    requirements, lock = locks.VIRTUALENVS[venv]
    assert (REPO_ROOT / lock).is_file(), f"{venv} installs from {lock}"
    assert f"{requirements}:{lock}" in MAKEFILE, f"`make lock` resolves {requirements} into {lock}"
    if venv != ".venv-uv":
        # The virtualenvs that run the project's code also install the project itself (`editable`), and are rebuilt
        # when pyproject.toml (its package-dir) moves.
        project = r"(?: pyproject\.toml)?" if venv in PROJECT_VENVS else ""
        editable = ",editable" if venv in PROJECT_VENVS else ""
        assert re.search(
            rf"^\S+: {re.escape(lock)}{project} \| \$\(UV_MARK\)\n\t\$\(call venv,[^,]+,{re.escape(lock)}{editable}\)$",
            MAKEFILE,
            re.M,
        ), f"the Makefile builds {venv} from {lock} and rebuilds it when the lock moves"
    else:
        assert "-r locks/uv.txt" in MAKEFILE and "--require-hashes" in MAKEFILE, "uv itself installs from its lock"
    assert "#    make lock\n" in (REPO_ROOT / lock).read_text()[:200], f"{lock} names the command that refreshes it"


@pytest.mark.parametrize("venv", sorted(locks.VIRTUALENVS))
def test_every_locked_file_is_pinned_by_hash_and_every_request_is_locked_at_its_pin(venv: str) -> None:
    requirements, lock = locks.VIRTUALENVS[venv]
    entries = locks.entries(REPO_ROOT / lock)
    unhashed = [e.name for e in entries if not e.hashes]
    assert not unhashed, f"{lock}: every entry carries hashes, so a re-uploaded file fails the install: {unhashed}"
    locked = locks.pins(REPO_ROOT / lock)
    asked = locks.requirement_pins(REPO_ROOT / requirements)
    stale = {name: (pin, locked.get(name)) for name, pin in asked.items() if locked.get(name) != pin}
    assert not stale, f"{lock} is older than {requirements} (asked, locked): run `make lock`: {stale}"


@pytest.mark.parametrize("venv", sorted(locks.VIRTUALENVS))
def test_every_package_installed_in_a_virtualenv_is_the_locked_one(venv: str) -> None:
    """What is installed is exactly the lock: nothing newer, nothing extra (a seeded pip or wheel included)."""
    path = REPO_ROOT / venv
    if venv == ".venv-uv" or not (path / ".installed").is_file():
        pytest.skip(f"{venv} is not built here (.venv-uv only where uv is not on PATH)")
    installed = _installed(path)
    if venv in PROJECT_VENVS:
        installed.pop(PROJECT, None)
        (origin,) = path.glob(f"lib/python3*/site-packages/{PROJECT.replace('-', '_')}-*.dist-info/direct_url.json")
        found = json.loads(origin.read_text())
        assert found.get("dir_info", {}).get("editable") and found["url"] == REPO_ROOT.as_uri(), (
            f"{venv} holds the project itself, installed editable from this checkout (make venvs): {found}"
        )
    locked = locks.pins(REPO_ROOT / locks.VIRTUALENVS[venv][1])
    differing = {n: (v, locked.get(n)) for n, v in installed.items() if locked.get(n) != v}
    assert not differing, (
        f"{venv} holds packages at versions its lock does not pin (installed, locked); rebuild with `make -B venvs` "
        f"or, if a requirement file changed, `make lock`: {differing}"
    )
    missing = sorted(set(locked) - set(installed))
    assert not missing, f"{venv} lacks packages its lock pins: {missing}"


def test_a_lock_is_read_per_environment_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text(
        "# header\n"
        "soupsieve==2.10 ; python_full_version < '3.11.5' \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n"
        "    # via beautifulsoup4\n"
        "soupsieve==4.1.4 ; python_full_version >= '3.11.5' \\\n    --hash=sha256:cc\n"
        "idna==3.20 \\\n    --hash=sha256:dd\n"
    )
    old = {"python_full_version": "3.11.2", "python_version": "3.11"}
    new = {"python_full_version": "3.13.1", "python_version": "3.13"}
    assert locks.pins(lock, old) == {"soupsieve": "2.10", "idna": "3.20"}
    assert locks.pins(lock, new) == {"soupsieve": "4.1.4", "idna": "3.20"}
    assert [len(e.hashes) for e in locks.entries(lock)] == [2, 1, 1]
    lock.write_text("idna>=3.20\n")
    with pytest.raises(ValueError, match="not a pinned entry"):
        locks.entries(lock)


def test_the_shipped_constraints_are_the_lock_s_versions() -> None:
    from tools import constraints

    shipped = {
        canonicalize_name(n): v
        for n, v in re.findall(
            r"^([^#\s=]+)==(\S+)$", (REPO_ROOT / "aks_gpu_platform/constraints.txt").read_text(), re.M
        )
    }
    locked = locks.pins(REPO_ROOT / "locks/venv.txt")
    assert shipped and all(locked.get(n) == v for n, v in shipped.items()), (
        "constraints.txt pins what locks/venv.txt pins: it is generated from the lock"
    )
    assert (REPO_ROOT / "aks_gpu_platform/constraints.txt").read_text() == constraints.constraints_text(), (
        "constraints.txt is generated by `make lock` from locks/venv.txt"
    )


def _wheel(directory: Path, name: str, version: str) -> str:
    """Write a one-module wheel of `name` `version` into `directory`; return its lock entry (pinned by hash)."""
    import base64
    import hashlib
    import zipfile

    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
        f"{len(text.encode())}"
        for path, text in files.items()
    ]
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return f"{name}=={version} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n"


def test_the_pip_fallback_builds_a_virtualenv_holding_exactly_its_lock(tmp_path: Path) -> None:
    """`INSTALLER=pip` (a machine without uv): no seeded pip or setuptools, and a pin dropped from the lock is gone."""
    import os
    import subprocess
    import sys

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    lock = tmp_path / "lock.txt"
    venv = tmp_path / "v"
    makefile = tmp_path / "test.mk"
    makefile.write_text(f"include {REPO_ROOT / 'Makefile'}\n{venv}/.installed: {lock}\n\t$(call venv,{venv},{lock})\n")
    # The outer pip installs only from the local wheels; the project's make variables stay as they are.
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}

    def build() -> dict[str, str]:
        subprocess.run(
            ["make", "--no-print-directory", "-f", str(makefile), "-B", f"{venv}/.installed", "INSTALLER=pip",
             f"PYTHON={sys.executable}"],
            cwd=REPO_ROOT, env=env, check=True, capture_output=True,
        )  # fmt: skip
        return _installed(venv)

    lock.write_text(_wheel(wheels, "locked_a", "1.0") + _wheel(wheels, "locked_b", "1.0"))
    assert build() == {"locked-a": "1.0", "locked-b": "1.0"}, "nothing but the lock: no pip, no setuptools"
    lock.write_text(_wheel(wheels, "locked_a", "2.0"))
    assert build() == {"locked-a": "2.0"}, "a pin moved is installed at its new version, a pin dropped is removed"
