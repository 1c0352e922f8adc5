"""docs/importing.md's first hour: the consumer's Pulumi.yaml and the stack file's `$schema` line work as shown."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest
import yaml

from aks_gpu_platform.plan import shipped
from aks_gpu_platform.testing.runtime import project_entry
from tools import REPO_ROOT

IMPORTING = REPO_ROOT / "docs" / "importing.md"
YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


def _documented_project_card() -> dict[str, object]:
    (card,) = [yaml.safe_load(b) for b in YAML_BLOCK.findall(IMPORTING.read_text()) if "runtime:" in b]
    return card


def test_the_documented_pulumi_yaml_is_the_one_the_example_runs_with(tmp_path: Path) -> None:
    card = _documented_project_card()
    example = yaml.safe_load((REPO_ROOT / "examples" / "minimal-dev" / "Pulumi.yaml").read_text())
    assert card["runtime"] == example["runtime"], (
        f"the runtime a consumer copies is the example's, whose virtualenv the Pulumi CLI finds: {card['runtime']}"
    )
    assert "main" not in card, "the program is __main__.py beside Pulumi.yaml, as the page says"
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump(card))
    (tmp_path / "__main__.py").write_text("")
    name, entry = project_entry(tmp_path)
    assert (name, entry) == (card["name"], tmp_path / "__main__.py"), "the offline plan finds the program the same way"


def _schema_hints(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(folder)
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        assert shipped.schema_main(["--write", "stack-config.schema.json"]) == 0
    return errors.getvalue()


def test_a_stack_file_copied_from_the_repository_is_pointed_at_the_written_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(REPO_ROOT / "Pulumi.dev.yaml", tmp_path / "Pulumi.dev.yaml")
    (tmp_path / "Pulumi.prod.yaml").write_text("# yaml-language-server: $schema=./stack-config.schema.json\n")
    hints = _schema_hints(tmp_path, monkeypatch).splitlines()
    assert len(hints) == 1 and hints[0].startswith("Pulumi.dev.yaml: $schema=./aks_gpu_platform/"), (
        f"the copied file's reference into the platform's own tree is named, the correct one is not: {hints}"
    )
    documented = "# yaml-language-server: $schema=./stack-config.schema.json"
    assert f"`{documented}`" in hints[0] and documented in IMPORTING.read_text(), hints[0]
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text("\n".join([documented, *stack.read_text().splitlines()[1:]]) + "\n")
    assert (tmp_path / "stack-config.schema.json").is_file()
    assert _schema_hints(tmp_path, monkeypatch) == "", "with the suggested line the reference resolves"
