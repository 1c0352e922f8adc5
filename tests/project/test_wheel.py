"""The wheel on its own: what `pip install aks-gpu-platform` gives a consumer, with nothing of the repository.

Each test installs into a new virtualenv only the wheel (or the clone) and what its metadata declares:
no requirements file, no shared site-packages. A dependency pyproject.toml forgets is missing there, as
it is on a consumer's machine.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.harness.fresh_install import (
    PACKAGE,
    build_wheel,
    clean_environment,
    install_alone,
    install_into,
    repository_copy,
)
from tools import REPO_ROOT, locks

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
IMPORTER_PAGES = (
    "README.md",
    "docs/importing.md",
    "examples/minimal-dev/README.md",
    "examples/minimal-dev/__main__.py",
)


@dataclass(frozen=True)
class Venv:
    python: Path
    site: Path

    def bin(self, name: str) -> Path:
        return self.python.parent / name


def _site(python: Path) -> Path:
    probe = [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    return Path(subprocess.run(probe, check=True, capture_output=True, text=True).stdout.strip())


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What pip reads of a clone of the repository."""
    return repository_copy(tmp_path_factory.mktemp("clone") / "aks-gpu-platform")


@pytest.fixture(scope="module")
def wheel_alone(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    wheel = build_wheel(checkout, tmp_path_factory.mktemp("dist"))
    python = install_alone(str(wheel), tmp_path_factory.mktemp("alone") / "venv")
    return Venv(python, _site(python))


# Every module of the installed package, imported one by one in the fresh virtualenv.
IMPORT_EVERY_MODULE = r"""
import importlib, json, pkgutil, sys
import aks_gpu_platform

failed, loaded = {}, {}
def record(name):
    failed[name] = repr(sys.exc_info()[1])
for info in pkgutil.walk_packages(aks_gpu_platform.__path__, "aks_gpu_platform.", onerror=record):
    if info.name.rsplit(".", 1)[-1] == "__main__":
        continue
    try:
        loaded[info.name] = importlib.import_module(info.name).__file__
    except Exception as error:
        failed[info.name] = f"{type(error).__name__}: {error}"
print(json.dumps({"failed": failed, "loaded": loaded}))
"""


def test_the_wheel_installed_alone_imports_every_module_of_the_package(wheel_alone: Venv, tmp_path: Path) -> None:
    run = subprocess.run(
        [wheel_alone.python, "-c", IMPORT_EVERY_MODULE],
        cwd=tmp_path,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert not result["failed"], (
        "`pip install aks-gpu-platform` must bring every dependency the package imports (pyproject.toml's "
        f"dependencies are all a consumer gets): {result['failed']}"
    )
    loaded = result["loaded"]
    for module in ("components.monitoring.grafana", "components.platform", "plan.report", "plan.diff", "testing"):
        assert f"{PACKAGE}.{module}" in loaded, f"{module} is part of the installed package"
    stray = [name for name, file in loaded.items() if not Path(file).is_relative_to(wheel_alone.site / PACKAGE)]
    assert not stray, f"every module comes from the installed wheel, none from the repository: {stray}"


def test_the_wheel_ships_the_users_commands_and_leaves_project_tooling_out(wheel_alone: Venv) -> None:
    files = {p.relative_to(wheel_alone.site).as_posix() for p in wheel_alone.site.glob(f"{PACKAGE}/**/*.py")}
    assert {f"{PACKAGE}/plan/report.py", f"{PACKAGE}/plan/diff.py", f"{PACKAGE}/plan/cost.py"} <= files, (
        "the plan, its diff and its cost model ship in the wheel: a consumer plans their own stack"
    )
    assert not (wheel_alone.site / "tools").exists(), "project tooling (bench, generators, e2e checks) stays out"
    tooling = ("bench", "e2e_checks", "adapters_gen", "adapter_source", "config_reference", "release_check", "arm")
    assert not [f for f in files if Path(f).stem in tooling], "no project tool is copied into the package"
    for shipped in ("stack-config.schema.json", "constraints.txt"):
        assert (wheel_alone.site / PACKAGE / shipped).is_file(), f"{shipped} ships for consumers' repositories"
    usage = subprocess.run([wheel_alone.bin("aks-gpu-platform"), "--help"], capture_output=True, text=True)
    assert usage.returncode == 0 and "plan-diff" in usage.stdout, "the console command is installed with the wheel"


def test_the_plan_without_its_extra_says_what_to_install_before_evaluating(wheel_alone: Venv, tmp_path: Path) -> None:
    """A deploy-only install has no Kubernetes schemas: the plan says so in one line, not in a traceback."""
    project = tmp_path / "minimal-dev"
    shutil.copytree(REPO_ROOT / "examples" / "minimal-dev", project)
    run = subprocess.run(
        [wheel_alone.bin("aks-gpu-platform"), "plan", "--stack", "dev"],
        cwd=project,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr, (
        f"without the `plan` extra the command stops with a usage error, not a crash:\n{run.stderr}"
    )
    assert "aks-gpu-platform[plan]" in run.stderr, f"it names the install that brings the schemas:\n{run.stderr}"
    assert not (project / "out").exists(), "it stops before evaluating the stack (seconds, not a whole plan)"


def test_runtime_dependencies_are_declared_once_and_pinned_to_the_tested_versions() -> None:
    declared = {canonicalize_name(Requirement(r).name): Requirement(r) for r in PYPROJECT["dependencies"]}
    pinned = locks.requirement_pins(REPO_ROOT / "requirements.txt")
    assert set(pinned) == set(declared), (
        "requirements.txt pins exactly pyproject.toml's dependencies (the one list of what the package needs): "
        f"only pinned {sorted(set(pinned) - set(declared))}, only declared {sorted(set(declared) - set(pinned))}"
    )
    outside = {name: v for name, v in pinned.items() if not declared[canonicalize_name(name)].specifier.contains(v)}
    assert not outside, f"each pin satisfies pyproject.toml's range, or the tested set is not installable: {outside}"
    shipped = locks.requirement_pins(REPO_ROOT / PACKAGE / "constraints.txt")
    assert all(shipped.get(name) == version for name, version in pinned.items()), (
        "the shipped constraints pin the same versions as requirements.txt"
    )


def test_the_testing_extra_brings_what_the_testing_page_runs() -> None:
    extra = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["optional-dependencies"]["testing"]}
    assert {"pytest", "kubernetes-validate"} <= extra, "docs/testing.md runs pytest and schema_verdicts"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_importer_pages_show_one_import_path() -> None:
    imports: dict[str, set[str]] = {}
    for page in IMPORTER_PAGES:
        text = (REPO_ROOT / page).read_text()
        code = "\n".join(_python_blocks(text)) if page.endswith(".md") else text
        imports[page] = {line.strip() for line in code.splitlines() if line.startswith("from aks_gpu_platform")}
    first = imports["README.md"]
    assert "from aks_gpu_platform import AksGpuPlatform, load_deployment_config" in first, (
        "the README imports the platform from the package's top level"
    )
    differing = {page: found for page, found in imports.items() if not first <= found}
    assert not differing, f"README, importing.md and minimal-dev import the platform the same way: {differing}"


def documented_extras(page: str) -> str:
    """The extras of the page's `pip install "aks-gpu-platform[...] @ git+..."` line (one line per page)."""
    (extras,) = re.findall(r'pip install "aks-gpu-platform\[([^\]]+)\] @ git\+', (REPO_ROOT / page).read_text())
    return extras


def test_the_importer_pages_install_what_the_plan_needs() -> None:
    """Each page that tells an importer how to install gives the same line, with the extra the console plan needs."""
    extras = {
        page: documented_extras(page) for page in ("README.md", "docs/importing.md", "examples/minimal-dev/README.md")
    }
    assert all("plan" in found.split(",") for found in extras.values()), (
        f"without the `plan` extra, `aks-gpu-platform plan` has no Kubernetes schemas to check against: {extras}"
    )


def _readme_program() -> str:
    (program,) = [b for b in _python_blocks((REPO_ROOT / "README.md").read_text()) if "AksGpuPlatform(" in b]
    return program


def _testing_page_test() -> str:
    return _python_blocks((REPO_ROOT / "docs" / "testing.md").read_text())[0]


def test_an_importer_goes_from_a_clone_to_the_plan_of_their_own_stack(
    checkout: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """README's install, README's program, docs/testing.md's test, the schema modeline and the console plan."""
    # Each page's own install line, from the clone: README's for the program and its plan, then testing.md's.
    venv = install_alone(f"{checkout}[{documented_extras('README.md')}]", tmp_path_factory.mktemp("importer") / "venv")
    env = {**clean_environment(), "PATH": f"{venv.parent}:{clean_environment()['PATH']}"}
    project = tmp_path_factory.mktemp("consumer") / "gpu-team"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: gpu-team\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n")
    (project / "__main__.py").write_text(_readme_program())
    stack = (REPO_ROOT / "examples" / "minimal-dev" / "Pulumi.dev.yaml").read_text().split("\n", 1)[1]
    (project / "Pulumi.dev.yaml").write_text("# yaml-language-server: $schema=./stack-config.schema.json\n" + stack)
    (project / "test_stack.py").write_text(_testing_page_test())

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)

    written = run("aks-gpu-platform", "schema", "--write", "stack-config.schema.json")
    assert written.returncode == 0, written.stderr
    import jsonschema

    modeline = (project / "Pulumi.dev.yaml").read_text().splitlines()[0].split("$schema=", 1)[1]
    schema = json.loads((project / modeline).read_text())
    config = yaml.safe_load((project / "Pulumi.dev.yaml").read_text())
    jsonschema.validate(config, schema)  # the editor's check, with the schema the modeline names

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        assert run(*git, *step).returncode == 0
    (project / "Pulumi.dev.yaml").write_text(
        (project / "Pulumi.dev.yaml").read_text().replace("maxCount: 1", "maxCount: 2")
    )
    plan = run("aks-gpu-platform", "plan", "--stack", "dev")
    assert plan.returncode == 0, (
        f"the console plan runs on the consumer's program after README's install:\n{plan.stderr}"
    )
    for part in ("Verdicts", "quota", "cost", "Cold start"):
        assert part.lower() in plan.stdout.lower(), f"the consumer's plan shows {part}"
    assert (project / "out" / "dev" / "plan.json").is_file(), "the plan is written beside the consumer's project"
    diff = run("aks-gpu-platform", "plan-diff", "--stack", "dev", "--base", "HEAD", "--head-plan", "out/dev/plan.json")
    assert diff.returncode == 0, diff.stderr
    assert re.search(r"update .*AgentPool \S*gput4", diff.stdout) and "maxCount: 1 -> 2" in diff.stdout, (
        f"the diff of the consumer's change names the pool and the setting:\n{diff.stdout}"
    )
    shutil.rmtree(project / "out")

    install_into(venv, f"{checkout}[{documented_extras('docs/testing.md')}]")
    tests = run("pytest", "-q", "-p", "no:cacheprovider", "test_stack.py")
    assert tests.returncode == 0, f"docs/testing.md's test passes on the consumer's stack:\n{tests.stdout}"
