"""The evaluation API's edges a consumer meets first: secrets in their stack file, a missing extra, a wrong name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aks_gpu_platform.config.loader import settings_from_runtime_config
from aks_gpu_platform.testing import Recording, evaluate_stack_file, schema_verdicts
from aks_gpu_platform.testing.recording import RecordedResource
from aks_gpu_platform.testing.stack_files import to_runtime_config


def test_a_secret_in_a_consumer_project_gets_a_placeholder_that_fits_the_platform_field() -> None:
    # What `pulumi config set --secret --path` writes in a project called `gpu-team`, which configures the
    # platform through its `aks-gpu-platform:*` keys like any consumer.
    config = {
        "aks-gpu-platform:monitoring": {"alerts": {"emailReceivers": [{"name": "ops", "email": {"secure": "v1:x"}}]}}
    }
    encoded, secret_keys = to_runtime_config(config, "gpu-team")
    assert secret_keys == ["aks-gpu-platform:monitoring"], "the key holding a secret is marked secret, as the CLI does"
    receiver = settings_from_runtime_config(encoded)["monitoring"]["alerts"]["emailReceivers"][0]
    assert receiver["email"] == "offline-secret@example.com", (
        "the platform's e-mail field gets an address whatever the consumer's project is called; a generic "
        "string would fail validation and stop the consumer's offline test"
    )


def test_schema_checks_without_the_testing_extra_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = RecordedResource(
        type="kubernetes:core/v1:Namespace", name="team", urn="urn:team", parent="", custom=True,
        inputs={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, outputs={},
        protect=False, ignore_changes=[], replace_on_changes=[], delete_before_replace=False,
        retain_on_delete=False, depends_on=[], deleted_with="", provider="",
    )  # fmt: skip
    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)  # as where the extra is not installed
    with pytest.raises(ModuleNotFoundError) as missing:
        schema_verdicts(Recording(resources=[namespace]), "1.33")
    assert "aks-gpu-platform[testing]" in str(missing.value), "the error names the extra that brings the schemas"


def test_an_unknown_stack_names_the_stacks_there_are(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-team\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    with pytest.raises(FileNotFoundError) as missing:
        evaluate_stack_file("prod", project_dir=tmp_path)
    assert "known stacks: dev" in str(missing.value), "a typo in the stack name is answered with the stacks there are"
