"""Security baseline switches reach the cluster by value, and bad switches name their field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from config import ConfigError, load_platform_config
from tests.conftest import settings_of
from tools.offline import Recording

CLUSTER = "azure-native:containerservice:ManagedCluster"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_policy_addon_and_rotating_secrets_store_are_on(recordings: dict[str, Recording], stack: str) -> None:
    addons = recordings[stack].one(CLUSTER).inputs["addonProfiles"]
    assert addons["azurepolicy"] == {"enabled": True}, "Azure Policy audits every object the cluster admits"
    store = addons["azureKeyvaultSecretsProvider"]
    assert store["enabled"] is True
    assert store["config"] == {"enableSecretRotation": "true", "rotationPollInterval": "2m"}, (
        "rotated Key Vault secrets must reach running pods"
    )


def test_prod_defender_reports_to_the_configured_workspace(
    prod_recording: Recording, stack_config: Callable[[str], dict[str, Any]]
) -> None:
    workspace = stack_config("prod")["aks-gpu-platform:security"]["defender"]["logAnalyticsWorkspaceId"]
    defender = prod_recording.one(CLUSTER).inputs["securityProfile"]["defender"]
    assert defender == {"logAnalyticsWorkspaceResourceId": workspace, "securityMonitoring": {"enabled": True}}


def test_dev_runs_without_defender(dev_recording: Recording) -> None:
    assert "defender" not in dev_recording.one(CLUSTER).inputs["securityProfile"], "dev skips the Defender plan"


def test_disabled_secrets_store_sends_no_config(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    settings["security"]["secretsStore"] = {"enabled": False}
    profiles = load_platform_config(settings).security.addon_profiles()
    assert profiles["azureKeyvaultSecretsProvider"] == {"enabled": False, "config": None}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"defender": {"enabled": True}}, "security.defender.logAnalyticsWorkspaceId:"),
        (
            {"defender": {"enabled": True, "logAnalyticsWorkspaceId": "log-1"}},
            "security.defender.logAnalyticsWorkspaceId:",
        ),
        ({"secretsStore": {"rotationPollInterval": "2 minutes"}}, "security.secretsStore.rotationPollInterval:"),
        ({"azurePolicy": "sometimes"}, "security.azurePolicy:"),
        ({"encryptionAtHost": True}, "security.encryptionAtHost:"),
    ],
)
def test_invalid_security_setting_names_its_field(
    stack_config: Callable[[str], dict[str, Any]], change: dict[str, Any], path: str
) -> None:
    settings = settings_of(stack_config("dev"))
    settings["security"] = change
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    assert any(p.startswith(path) for p in raised.value.problems), raised.value.problems
