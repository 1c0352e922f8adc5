"""Adoption basics: an OSI licence, one version, a changelog entry for it, a written semver policy."""

from __future__ import annotations

import re
import tomllib

from aks_gpu_platform import config
from aks_gpu_platform.config.version import CHECKOUT_PYPROJECT, package_version
from tools.stack_files import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
RELEASE_HEADING = re.compile(
    r"^## \[(?P<version>[0-9]+\.[0-9]+\.[0-9]+)\] - (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})$", re.M
)


def test_the_licence_is_the_apache_2_text_and_the_metadata_says_so() -> None:
    text = (REPO_ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text, "LICENSE must be the Apache-2.0 text"
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text, "the full terms, not a summary"
    assert "END OF TERMS AND CONDITIONS" in text, "the licence text must be complete"
    assert PYPROJECT["license"] == "Apache-2.0", "the package metadata must declare the same licence (SPDX)"
    assert PYPROJECT["license-files"] == ["LICENSE"], "wheels must carry the licence text"


def test_the_runtime_version_is_pyproject_s() -> None:
    assert CHECKOUT_PYPROJECT == REPO_ROOT / "pyproject.toml", "a checkout reads the repository's own pyproject"
    assert package_version() == config.__version__ == PYPROJECT["version"], (
        "the version lives only in pyproject.toml; the code must report exactly that"
    )


def test_the_changelog_has_an_unreleased_section_and_one_for_the_current_version() -> None:
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()
    headings = [line for line in changelog.splitlines() if line.startswith("## ")]
    assert headings and headings[0] == "## [Unreleased]", "Keep a Changelog: Unreleased comes first"
    releases = [m["version"] for m in RELEASE_HEADING.finditer(changelog)]
    assert PYPROJECT["version"] in releases, (
        f"CHANGELOG.md must have a dated section for version {PYPROJECT['version']} (pyproject.toml)"
    )
    assert len(headings) == 1 + len(releases), f"every other heading must be '## [X.Y.Z] - YYYY-MM-DD': {headings}"
    ordered = sorted(releases, key=lambda v: tuple(int(p) for p in v.split(".")), reverse=True)
    assert releases == ordered, "releases are listed newest first"


def test_the_versioning_policy_defines_breaking_changes() -> None:
    policy = (REPO_ROOT / "docs" / "versioning.md").read_text()
    for must_cover in ("renames a resource", "pool-name hash", "immutable_pool_fields", "0.x"):
        assert must_cover in policy, f"docs/versioning.md must say how {must_cover!r} is versioned"
    assert "docs/versioning.md" in (REPO_ROOT / "CHANGELOG.md").read_text(), "the changelog links the policy"
