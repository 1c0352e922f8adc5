"""The README stays a front page and every relative link in the docs reaches its file and heading.

Anchors follow GitHub's heading slugs (lowercase; punctuation other than `-` and `_` dropped; spaces
become `-`; a repeated heading gets `-1`, `-2`, ...), the way the rendered pages resolve them.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tools import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
MAX_README_LINES = 200
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:")
CODE_SPAN = re.compile(r"`[^`]*`")


def documents() -> list[Path]:
    """README.md, every page under docs/ and every README of the examples."""
    return [README, *sorted(DOCS.glob("*.md")), *sorted((REPO_ROOT / "examples").glob("**/README.md"))]


def prose_lines(path: Path) -> list[str]:
    """The lines outside fenced code blocks: a `#` inside a shell block is a comment, not a heading."""
    lines: list[str] = []
    fenced = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: Counter[str] = Counter()
    for line in prose_lines(path):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def relative_links(path: Path) -> list[str]:
    """Link targets outside code: `[a-z]([-a-z]*)` in a code span is a regular expression, not a link."""
    return [
        target
        for line in prose_lines(path)
        for target in LINK.findall(CODE_SPAN.sub("", line))
        if not target.startswith(EXTERNAL) and not target.startswith("<")
    ]


def section(path: Path, title: str) -> str:
    text = path.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_readme_is_a_front_page_under_200_lines() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < MAX_README_LINES, (
        f"README.md has {len(lines)} lines: it says what the project is and links the docs; "
        f"details belong in a docs/ page (limit {MAX_README_LINES})"
    )


def test_quick_start_still_names_make_plan_and_make_test() -> None:
    quick_start = section(README, "Quick start")
    block = re.search(r"```sh\n(.*?)```", quick_start, re.DOTALL)
    assert block is not None, "the Quick start shows its commands in a shell block"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert commands == ["make plan", "make test"], (
        "exactly two commands: `make plan` runs the dev stack offline, `make test` every check (`.ci/run` calls it)"
    )
    makefile = (REPO_ROOT / "Makefile").read_text()
    for command in commands:
        target = command.removeprefix("make ").split()[0]
        assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), f"`{command}`: no such Makefile target"


def test_the_readme_indexes_every_docs_page() -> None:
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds the pages"
    linked = {(README.parent / target.split("#")[0]).resolve() for target in relative_links(README)}
    unlisted = [p.name for p in pages if p.resolve() not in linked]
    assert not unlisted, f"every docs page is reachable from the README's index; add a row for {unlisted}"


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_reaches_its_file_and_heading(document: Path) -> None:
    links = relative_links(document)
    if document == README:
        assert links, "the README links the pages it summarises"
    broken: list[str] = []
    for target in links:
        file_part, _, anchor = target.partition("#")
        resolved = (document.parent / file_part).resolve() if file_part else document
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {resolved.name}")
    assert not broken, f"{document.relative_to(REPO_ROOT)} has broken links (a reader lands nowhere): {broken}"


def test_slugs_follow_github() -> None:
    assert slug("The first `pulumi up` waits for new role assignments") == (
        "the-first-pulumi-up-waits-for-new-role-assignments"
    )
    assert slug("Kubernetes access: kubelogin and the API server's reach") == (
        "kubernetes-access-kubelogin-and-the-api-servers-reach"
    )
    assert slug("Training: team queues, GPU quotas, all-or-nothing admission") == (
        "training-team-queues-gpu-quotas-all-or-nothing-admission"
    )
