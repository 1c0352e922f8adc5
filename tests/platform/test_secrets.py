"""Credentials never leave the stack in plain text: every output is walked, the kubeconfig is secret."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from aks_gpu_platform.policy_rules import looks_like_credentials
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS


def _walk(value: Any, path: str) -> list[tuple[str, Any]]:
    """Every leaf of an output with its path, so nested maps and lists are inspected too."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _walk(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _walk(v, f"{path}[{i}]")]
    return [(path, value)]


@pytest.mark.parametrize("stack", STACKS)
def test_no_plain_output_carries_credentials(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    assert recording.stack_outputs, "the stack exports outputs"
    leaks = [
        (path, reason)
        for key, value in recording.stack_outputs.items()
        if key not in recording.secret_outputs
        for path, leaf in _walk(value, key)
        if (reason := looks_like_credentials(leaf))
    ]
    assert leaks == [], f"{stack} exports credentials in plain text: {leaks}"


@pytest.mark.parametrize("stack", STACKS)
def test_kubeconfig_is_secret_and_holds_no_static_credential(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    assert "kubeconfig" in recording.secret_outputs, "the kubeconfig must be encrypted in state and CLI output"
    document = yaml.safe_load(recording.stack_outputs["kubeconfig"])
    assert document["users"], "the kubeconfig names a user"
    for user in document["users"]:
        assert set(user["user"]) == {"exec"}, "no client key, certificate, token or password in the file"
        assert user["user"]["exec"]["command"] == "kubelogin", "tokens are fetched per use through Entra ID"


def test_the_detector_sees_what_the_walk_must_catch(prod_recording: Recording) -> None:
    kubeconfig = prod_recording.stack_outputs["kubeconfig"]
    assert looks_like_credentials(kubeconfig) == "it is a kubeconfig", "were it plain, the walk would flag it"
    assert looks_like_credentials({"nested": ["AccountKey=abc"]}) is not None
    assert looks_like_credentials(prod_recording.stack_outputs["clusterId"]) is None, "resource IDs are not secrets"
