"""Before a release is built: the tag, pyproject.toml's version and CHANGELOG.md must tell one story.

`python -m tools.release_check v0.2.0` exits 0 when the tag is `v<version>`, the changelog's newest
release section is that version with a date, and nothing is left under `## [Unreleased]`; otherwise
it prints every disagreement and exits 1. The release workflow runs it before building.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

from tools import REPO_ROOT

RELEASE_HEADING = re.compile(
    r"^## \[(?P<version>[0-9]+\.[0-9]+\.[0-9]+)\] - (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})$", re.M
)


def unreleased_entries(changelog: str) -> list[str]:
    """The bullet lines between `## [Unreleased]` and the next release heading."""
    section = changelog.split("## [Unreleased]", 1)[1] if "## [Unreleased]" in changelog else ""
    section = section.split("\n## [", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def disagreements(tag: str, root: Path = REPO_ROOT) -> list[str]:
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    changelog = (root / "CHANGELOG.md").read_text()
    found: list[str] = []
    if tag != f"v{version}":
        found.append(f"tag {tag!r} is not 'v' + pyproject.toml's version {version!r}")
    releases = [m["version"] for m in RELEASE_HEADING.finditer(changelog)]
    if not releases or releases[0] != version:
        newest = releases[0] if releases else "none"
        found.append(f"CHANGELOG.md's newest release is {newest}, not {version}: rename [Unreleased] to [{version}]")
    if entries := unreleased_entries(changelog):
        found.append(f"{len(entries)} entries still under [Unreleased]: they belong to a release section")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tag", help="the git tag being released, e.g. v0.2.0")
    problems = disagreements(parser.parse_args(argv).tag)
    for problem in problems:
        print(f"release: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
