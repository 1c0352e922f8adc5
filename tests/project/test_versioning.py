"""Adoption basics: an OSI licence, one version, a changelog entry for it, a written semver policy."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from aks_gpu_platform import config
from aks_gpu_platform.config.version import CHECKOUT_PYPROJECT, package_version
from tools import REPO_ROOT
from tools.release_check import RELEASE_HEADING, disagreements

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]


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


def test_the_licence_names_its_copyright_holder() -> None:
    text = (REPO_ROOT / "LICENSE").read_text()
    assert "[name of copyright owner]" not in text and "[yyyy]" not in text, "the appendix template is filled in"
    assert re.search(r"^\s*Copyright \d{4} \S.+$", text, re.M), "LICENSE names the year and the copyright holder"


def _release_tree(tmp_path: Path, version: str, changelog: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "aks-gpu-platform"\nversion = "{version}"\n')
    (tmp_path / "CHANGELOG.md").write_text(changelog)
    return tmp_path


RELEASED = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-03\n\n- **Breaking:** x\n\n## [0.1.0] - 2026-12-02\n"


def test_a_release_tag_agrees_with_the_version_and_the_changelog(tmp_path: Path) -> None:
    assert disagreements("v0.2.0", _release_tree(tmp_path, "0.2.0", RELEASED)) == [], "a consistent release passes"


@pytest.mark.parametrize(
    ("tag", "version", "changelog", "names"),
    [
        ("v0.3.0", "0.2.0", RELEASED, "tag 'v0.3.0'"),
        ("v0.3.0", "0.3.0", RELEASED, "newest release is 0.2.0"),
        (
            "v0.2.0",
            "0.2.0",
            RELEASED.replace("## [Unreleased]\n", "## [Unreleased]\n\n- **Breaking:** y\n"),
            "1 entries",
        ),
    ],
    ids=["tag is not the version", "version has no changelog section", "entries left under Unreleased"],
)
def test_a_release_that_disagrees_is_refused_naming_what(
    tmp_path: Path, tag: str, version: str, changelog: str, names: str
) -> None:
    found = disagreements(tag, _release_tree(tmp_path, version, changelog))
    assert any(names in problem for problem in found), f"the check must name the disagreement ({names}): {found}"


def test_the_release_workflow_checks_before_it_builds_and_attaches_both_artifacts() -> None:
    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "release.yml").read_text())
    trigger = workflow.get("on") or workflow.get(True)
    assert trigger == {"push": {"tags": ["v*.*.*"]}}, "only a version tag releases"
    steps = workflow["jobs"]["build"]["steps"]
    runs = [step.get("run", "") for step in steps]
    check = next(i for i, run in enumerate(runs) if "tools.release_check" in run)
    build = next(i for i, run in enumerate(runs) if "-m build" in run)
    tests = runs.index("make test")
    assert check < tests < build, "tag, version and changelog are checked, then the tests run, then the build"
    publish = " ".join(step.get("run", "") for step in workflow["jobs"]["publish"]["steps"])
    assert "gh release create" in publish and "dist/*" in publish, "the wheel and the sdist are attached"
