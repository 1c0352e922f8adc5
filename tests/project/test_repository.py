"""What the repository tracks: a fresh clone must build the same way on any machine."""

from __future__ import annotations

import subprocess

from tools import REPO_ROOT


def test_the_repository_tracks_no_links() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=REPO_ROOT, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    links = {line.split("\t", 1)[1] for line in listed if line.startswith("120000 ")}
    assert not links, (
        "a link checks out as a plain file where git has no symlinks (Git for Windows' default) and a link to a local "
        "virtualenv or folder breaks every other clone; pyproject.toml's package-dir maps components/ and config/ "
        f"into the package, found {sorted(links)}"
    )


def test_make_help_lists_the_quick_start_targets() -> None:
    shown = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    listed = {line.split()[1] for line in shown.stdout.splitlines() if line.strip().startswith("make ")}
    assert {"plan", "test", "plan-diff", "help"} <= listed, f"`make help` names what a newcomer runs: {listed}"


def test_plan_targets_print_only_the_plan_on_stdout() -> None:
    # `make plan FORMAT=markdown > plan.md` must be markdown only: make echoes a recipe line unless it starts with @.
    recipes = (REPO_ROOT / "Makefile").read_text().split("\nplan:", 1)[1].split("\n## docs", 1)[0]
    commands = [line for line in recipes.splitlines() if line.startswith("\t")]
    assert len(commands) == 2, f"one command each for plan and plan-diff: {commands}"
    assert all(line.startswith("\t@") for line in commands), f"plan recipes must not echo themselves: {commands}"
