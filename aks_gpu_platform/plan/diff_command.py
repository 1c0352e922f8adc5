"""`make plan-diff BASE=<ref>`: what a change does to a stack, before any cloud call.

    aks-gpu-platform plan-diff --stack dev                      # the working tree against the default branch
    aks-gpu-platform plan-diff --stack dev --base v1.2.0        # ... against any commit, branch or tag
    aks-gpu-platform plan-diff --base-plan a.json --head-plan b.json

The offline counterpart of `pulumi preview` on a pull request. It plans the working tree and the
BASE ref (checked out with `git worktree add` into a temporary folder and planned there with this
virtualenv's packages and the BASE's own package, `planning_python`), then compares the two
`plan.json` files (diff.py) and prints the result (diff_text.py). An in-place update Azure refuses
makes it exit 1: `pulumi up` would stop halfway.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from .diff import diff_plans
from .diff_text import render
from .document import PLAN_FILE, PlanFileError, read_plan
from .offline import find_project

# The module that writes plan.json, where the platform's own repository keeps it (before and after it moved into
# the package): a base of that repository without it cannot be compared, and is refused before it is checked out.
PLAN_WRITERS = {"aks_gpu_platform/plan/__main__.py": "aks_gpu_platform.plan", "tools/plan_document.py": "tools.plan"}
PREDATES = "it predates machine-readable plans"


def _git(repository: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repository), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def plan_command(project: Path, stack: str, out_dir: Path, python: str) -> list[str]:
    """The command that plans `project` with `python`.

    A consumer's project is planned by the installed package; a tree of the platform's own repository by its own
    plan module, wherever that tree keeps it.
    """
    module = "aks_gpu_platform.plan"
    for writer, writer_module in PLAN_WRITERS.items():
        if (project / writer).is_file():
            module = writer_module
            break
    plan = [] if module == "tools.plan" else ["plan"]
    return [python, "-m", module, *plan, "--stack", stack, "--out", str(out_dir)]


def planning_python(project: Path, scratch: Path) -> str:
    """The interpreter that plans `project`: this one, unless `project` is a tree of the platform's own repository
    other than the one this interpreter imports (a BASE checkout).

    A checkout reaches components/ and config/ through its editable install of pyproject.toml's package-dir, which
    names one tree; planned with this interpreter, a BASE checkout would run the working tree's components. Such a
    tree gets a virtualenv of its own: this interpreter's packages (a .pth file) and the tree installed editable,
    as `make venvs` installs a checkout.
    """
    if not (project / "aks_gpu_platform" / "__init__.py").is_file():
        return sys.executable  # a consumer's project: the installed package plans it
    imported = importlib.util.find_spec("aks_gpu_platform.components")
    if imported is not None and imported.origin and Path(imported.origin).resolve().parents[1] == project.resolve():
        return sys.executable
    return str(_tree_virtualenv(project, scratch / f"{project.name}-venv"))


def _tree_virtualenv(tree: Path, folder: Path) -> Path:
    """A virtualenv at `folder` with this interpreter's packages and `tree` installed editable; its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    python = folder / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    site = Path(subprocess.run(purelib, check=True, capture_output=True, text=True).stdout.strip())
    (site / "planning-interpreter.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    install += ["--no-deps", "--no-build-isolation", "--no-index", "--editable", str(tree)]
    result = subprocess.run(install, capture_output=True, text=True, check=False, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(
            f"the tree at {tree} does not install (pip install --editable): {result.stderr.strip()[-500:]}"
        )
    return python


def plan_at(project: Path, stack: str, out_dir: Path, python: str) -> Path:
    """Plan the project at `project` with `python`; the path of the plan.json it writes."""
    result = subprocess.run(
        plan_command(project, stack, out_dir, python),
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if result.returncode == 2:
        raise RuntimeError(f"the plan of {project} stopped on a config error:\n{result.stderr.strip()}")
    path = out_dir / PLAN_FILE
    if not path.is_file():
        raise PlanFileError(
            f"the tree at {project} wrote no {PLAN_FILE}: {PREDATES}; "
            f"choose a BASE that has them (exit status {result.returncode}{': ' if result.stderr else ''}"
            f"{result.stderr.strip()[-500:]})"
        )
    return path


NAME_THE_BASE = "name the ref to compare against with --base REF (make plan-diff BASE=REF)"


def _has_commit(repository: Path, ref: str) -> bool:
    found = subprocess.run(
        ["git", "-C", str(repository), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


def _repository(project: Path) -> Path:
    try:
        return Path(_git(project, "rev-parse", "--show-toplevel"))
    except RuntimeError as err:
        raise RuntimeError(
            f"plan-diff compares the working tree with a git ref, and {project} is not in a git repository: "
            "commit your project to git first, or compare two plan files with --base-plan and --head-plan"
        ) from err


def default_base(project: Path) -> str:
    """The branch a change is compared against when --base is not given: the remote's default branch
    (origin/HEAD), else a local main, master or the branch `init.defaultBranch` names, whichever exists first."""
    top = _repository(project)
    remote = subprocess.run(
        ["git", "-C", str(top), "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    configured = subprocess.run(
        ["git", "-C", str(top), "config", "--get", "init.defaultBranch"], capture_output=True, text=True, check=False
    ).stdout.strip()
    for candidate in (remote, "main", "master", configured):
        if candidate and _has_commit(top, candidate):
            return candidate
    raise RuntimeError(
        f"no default branch to compare against in {top} (no origin/HEAD, and no main, master or init.defaultBranch "
        f"branch with a commit): {NAME_THE_BASE}"
    )


def base_plan(ref: str, stack: str, scratch: Path, project: Path) -> tuple[Path, str]:
    """Check `ref` of the repository holding `project` out into a temporary worktree, plan the project there,
    remove the worktree; (plan.json, commit)."""
    top = _repository(project)
    inside = project.resolve().relative_to(top.resolve())
    if not _has_commit(top, ref):
        raise RuntimeError(f"{ref} is no commit, branch or tag of {top}: {NAME_THE_BASE}")
    commit = _git(top, "rev-parse", "--verify", f"{ref}^{{commit}}")
    if inside == Path(".") and (top / "aks_gpu_platform" / "__init__.py").is_file():
        has_writer = [
            subprocess.run(["git", "-C", str(top), "cat-file", "-e", f"{commit}:{w}"], capture_output=True).returncode
            == 0
            for w in PLAN_WRITERS
        ]
        if not any(has_writer):
            raise PlanFileError(f"{ref} ({commit[:12]}) has no plan writer: {PREDATES}; choose a BASE that has them")
    tree = scratch / "base"
    _git(top, "worktree", "add", "--detach", str(tree), commit)
    try:
        return plan_at(tree / inside, stack, scratch / "base-out", planning_python(tree / inside, scratch)), commit
    finally:
        _git(top, "worktree", "remove", "--force", str(tree))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    parser.add_argument(
        "--base",
        default=None,
        help="git ref to compare against (default: origin/HEAD, else main, master or init.defaultBranch)",
    )
    parser.add_argument("--base-plan", type=Path, help="compare this plan.json instead of planning --base")
    parser.add_argument("--head-plan", type=Path, help="compare this plan.json instead of planning the working tree")
    parser.add_argument("--format", choices=("text", "markdown"), default="text")
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the Pulumi project to compare (default: the folder of the nearest Pulumi.yaml at or above this one)",
    )
    options = parser.parse_args(argv)
    try:
        project = options.project_dir or (None if options.base_plan and options.head_plan else find_project())
        with tempfile.TemporaryDirectory(prefix="plan-diff-") as scratch_dir:
            scratch = Path(scratch_dir)
            if options.base_plan:
                base_path, base_name = options.base_plan, str(options.base_plan)
            else:
                where = project or find_project()
                ref = options.base or default_base(where)
                base_path, commit = base_plan(ref, options.stack, scratch, where)
                base_name = f"{ref} ({commit[:12]})"
            if options.head_plan:
                head_path, head_name = options.head_plan, str(options.head_plan)
            else:
                head = project or find_project()
                head_path = plan_at(head, options.stack, scratch / "head-out", planning_python(head, scratch))
                head_name = "the working tree"
            diff = diff_plans(read_plan(base_path), read_plan(head_path))
    except (PlanFileError, RuntimeError, FileNotFoundError, subprocess.TimeoutExpired) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    title = f"Plan diff for stack '{options.stack}': {base_name} -> {head_name}"
    sys.stdout.write(render(diff, title, markdown=options.format == "markdown"))
    return 1 if diff.refused else 0


if __name__ == "__main__":
    sys.exit(main())
