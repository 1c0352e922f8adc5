"""`make typecheck` and `make workflows` skip a check only when it passed before on exactly the same inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools import check_stamp

# The check: appends a line to ran.log each time it runs, and exits with the code written in exit-code.
COMMAND = [sys.executable, "-c", "import pathlib; open('ran.log', 'a').write('x'); exit(int(open('exit-code').read()))"]


def _venv(root: Path, name: str, distributions: dict[str, str]) -> None:
    site = root / name / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / name / "pyvenv.cfg").write_text("version = 3.11.7\n")
    for dist, record in distributions.items():
        (site / f"{dist}.dist-info").mkdir()
        (site / f"{dist}.dist-info" / "RECORD").write_text(record)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "module.py").write_text("x: int = 1\n")
    (tmp_path / "pyproject.toml").write_text("[tool.pyright]\n")
    (tmp_path / "README.md").write_text("# readme\n")
    (tmp_path / "exit-code").write_text("0")
    _venv(tmp_path, "venv", {"pyright-1.1.400": "pyright/__init__.py,sha256=a,1\n"})
    _venv(tmp_path, ".venv-tools", {"zizmor-1.0.0": "zizmor/__init__.py,sha256=a,1\n"})
    return tmp_path


def runs(root: Path, name: str) -> int:
    """How many times the check's command has run so far, after one more `make` of it."""
    assert check_stamp.run(name, COMMAND, root) == int((root / "exit-code").read_text()), "the command's exit code"
    log = root / "ran.log"
    return len(log.read_text()) if log.exists() else 0


def test_a_passed_check_is_skipped_until_a_file_it_reads_changes(repository: Path) -> None:
    assert runs(repository, "typecheck") == 1
    assert runs(repository, "typecheck") == 1, "nothing pyright reads changed: the pass stands"
    (repository / "README.md").write_text("# edited\n")
    (repository / ".github" / "workflows" / "ci.yml").write_text("on: pull_request\n")
    assert runs(repository, "typecheck") == 1, "a page and a workflow are not pyright's inputs"
    (repository / "pkg" / "module.py").write_text("x: int = 'one'\n")
    assert runs(repository, "typecheck") == 2, "an edited module must be type checked again"
    (repository / "pkg" / "module.py").rename(repository / "pkg" / "renamed.py")
    assert runs(repository, "typecheck") == 3, "a renamed module changes what imports resolve: check again"
    (repository / "pkg" / "new.py").write_text("")
    assert runs(repository, "typecheck") == 4, "a new module must be checked"
    (repository / "pyproject.toml").write_text("[tool.pyright]\nstrict = ['pkg']\n")
    assert runs(repository, "typecheck") == 5, "pyright's settings changed: check again"


def test_a_reinstalled_package_or_another_command_runs_the_check_again(repository: Path) -> None:
    assert runs(repository, "workflows") == 1
    record = repository / ".venv-tools" / "lib" / "python3.11" / "site-packages" / "zizmor-1.0.0.dist-info" / "RECORD"
    record.write_text("zizmor/__init__.py,sha256=b,1\n")
    assert runs(repository, "workflows") == 2, "the same version built again (other file hashes) may audit otherwise"
    (record.parent).rename(record.parent.with_name("zizmor-1.1.0.dist-info"))
    assert runs(repository, "workflows") == 3, "another zizmor version audits otherwise"
    (repository / ".github" / "zizmor.yml").write_text("rules: {}\n")
    assert runs(repository, "workflows") == 4, "zizmor's configuration is an input"
    assert check_stamp.run("workflows", [*COMMAND, "--persona", "auditor"], repository) == 0
    assert runs(repository, "workflows") == 6, "another command line is another check, and back again"


def test_a_failing_check_is_never_skipped(repository: Path) -> None:
    (repository / "exit-code").write_text("1")
    assert runs(repository, "typecheck") == 1
    assert runs(repository, "typecheck") == 2, "a check that failed must fail again on the next run, not pass"
    assert not list((repository / "out" / "stamps").glob("*/*")), "no stamp is written for a failure"


def test_check_stamps_off_runs_the_check_every_time(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert runs(repository, "typecheck") == 1
    monkeypatch.setenv("CHECK_STAMPS", "off")
    assert runs(repository, "typecheck") == 2, "CHECK_STAMPS=off runs the check though it passed before"


def test_the_makefile_runs_both_checks_through_their_stamp() -> None:
    """The stamp covers the command it was written for: the Makefile must pass the real commands through it."""
    from tools import REPO_ROOT

    makefile = (REPO_ROOT / "Makefile").read_text()
    typecheck = makefile.split("\ntypecheck:", 1)[1].split("\n\n", 1)[0]
    workflows = makefile.split("\nworkflows:", 1)[1].split("\n\n", 1)[0]
    assert "tools.check_stamp typecheck --" in typecheck and "$(BIN)/pyright" in typecheck
    assert "tools.check_stamp workflows --" in workflows
    assert "check-jsonschema" in workflows and "zizmor" in workflows
