"""What the repository tracks: a fresh clone must build the same way on any machine."""

from __future__ import annotations

import subprocess

from tools.stack_files import REPO_ROOT

PACKAGE_LINKS = {"aks_gpu_platform/components", "aks_gpu_platform/config"}


def test_the_only_tracked_links_are_the_package_links() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=REPO_ROOT, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    links = {line.split("\t", 1)[1] for line in listed if line.startswith("120000 ")}
    assert links == PACKAGE_LINKS, (
        "a tracked link to a local virtualenv or folder breaks every other clone; only the package's own links "
        f"(components/ and config/ under aks_gpu_platform) belong in git, found {sorted(links)}"
    )
