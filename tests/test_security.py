"""Security baseline switches reach the cluster by value, and bad switches name their field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.vm_catalog import ephemeral_os_disk_limit_gib
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
STORAGE_ACCOUNT = "azure-native:storage:StorageAccount"
PRIVATE_ENDPOINT = "azure-native:network:PrivateEndpoint"


def _pools(recording: Recording) -> dict[str, dict[str, Any]]:
    """Every node pool: the system pool inline in the cluster (by pool name) and each AgentPool (by resource name)."""
    pools = {p["name"]: p for p in recording.one(CLUSTER).inputs["agentPoolProfiles"]}
    pools.update({r.name.removeprefix("platform-"): r.inputs for r in recording.of_type(AGENT_POOL)})
    return pools


@pytest.mark.parametrize(("stack", "encrypted"), [("dev", False), ("prod", True)])
def test_every_pool_follows_the_encryption_at_host_switch(
    recordings: dict[str, Recording], stack: str, encrypted: bool
) -> None:
    pools = _pools(recordings[stack])
    cfg = load_platform_config(settings_of(load_stack_file(stack, REPO_ROOT)))
    assert len(pools) == 2 + len(cfg.gpu_pools), "system, CPU and every GPU pool"
    assert {name: p.get("enableEncryptionAtHost") for name, p in pools.items()} == dict.fromkeys(pools, encrypted), (
        "security.encryptionAtHost reaches every pool: temp disks and disk caches are encrypted on the host"
    )


def test_prod_uses_ephemeral_os_disks_where_they_fit(prod_recording: Recording) -> None:
    pools = _pools(prod_recording)
    assert {name: p["osDiskType"] for name, p in pools.items()} == {
        "system": "Ephemeral",
        "cpu-pool": "Ephemeral",
        "gpu-gpua100-pool": "Managed",
        **dict.fromkeys(["gpu-h100z1-pool", "gpu-h100z2-pool", "gpu-h100z3-pool"], "Ephemeral"),
    }, "the A100 size's 64 GiB temp disk cannot hold a 128 GiB OS disk; every other prod size can"
    for name, p in pools.items():
        if p["osDiskType"] == "Ephemeral":
            limit = ephemeral_os_disk_limit_gib(p["vmSize"])
            assert limit is not None and p["osDiskSizeGB"] <= limit, f"{name}: the OS disk must fit the temp disk"


def test_dev_pools_keep_managed_os_disks(dev_recording: Recording) -> None:
    assert {p["osDiskType"] for p in _pools(dev_recording).values()} == {"Managed"}


def test_prod_hsm_account_is_reachable_only_through_its_blob_private_endpoint(prod_recording: Recording) -> None:
    r = prod_recording
    account = r.one(STORAGE_ACCOUNT, "hsm")
    i = account.inputs
    assert (i["publicNetworkAccess"], i["networkRuleSet"]) == (
        "Disabled",
        {"defaultAction": "Deny", "bypass": "AzureServices"},
    ), "no public endpoint for the training data and checkpoints"
    assert (i["minimumTlsVersion"], i["enableHttpsTrafficOnly"]) == ("TLS1_2", True), "TLS 1.2+, HTTPS only"
    assert i["allowSharedKeyAccess"] is True, "Azure Managed Lustre's blob integration needs account key access"
    endpoint = r.one(PRIVATE_ENDPOINT, "lustre-hsm")
    (connection,) = endpoint.inputs["privateLinkServiceConnections"]
    assert connection["privateLinkServiceId"] == account.outputs["id"]
    assert connection["groupIds"] == ["blob"], "the blob sub-resource is what the Lustre HSM reads and writes"
    assert endpoint.inputs["subnet"]["id"] == r.one("azure-native:network:Subnet", "private-endpoints").outputs["id"]
    zone = r.one("azure-native:privatedns:PrivateZone", "lustre-hsm")
    assert zone.inputs["privateZoneName"] == "privatelink.blob.core.windows.net"
    link = r.one("azure-native:privatedns:VirtualNetworkLink", "lustre-hsm")
    assert link.inputs["virtualNetwork"]["id"] == r.one("azure-native:network:VirtualNetwork").outputs["id"], (
        "the Lustre subnet's VNet resolves the account name to the endpoint"
    )
    group = r.one("azure-native:network:PrivateDnsZoneGroup", "lustre-hsm")
    assert group.inputs["privateDnsZoneConfigs"][0]["privateDnsZoneId"] == zone.outputs["id"]
    filesystem = r.one("azure-native:storagecache:AmlFilesystem")
    assert {endpoint.urn, group.urn, link.urn} <= set(filesystem.depends_on), (
        "the filesystem imports from Blob at creation: the private path must resolve first"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_policy_addon_and_rotating_secrets_store_are_on(recordings: dict[str, Recording], stack: str) -> None:
    addons = recordings[stack].one(CLUSTER).inputs["addonProfiles"]
    assert addons["omsagent"]["enabled"] is True, "merging the security add-ons keeps Container Insights"
    assert addons["azurepolicy"] == {"enabled": True}, "Azure Policy audits every object the cluster admits"
    store = addons["azureKeyvaultSecretsProvider"]
    assert store["enabled"] is True
    assert store["config"] == {"enableSecretRotation": "true", "rotationPollInterval": "2m"}, (
        "rotated Key Vault secrets must reach running pods"
    )


def test_prod_defender_reports_to_the_platform_workspace(prod_recording: Recording) -> None:
    workspace = prod_recording.one("azure-native:operationalinsights:Workspace").outputs["id"]
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
        (
            {"defender": {"enabled": True, "logAnalyticsWorkspaceId": "log-1"}},
            "security.defender.logAnalyticsWorkspaceId:",
        ),
        ({"secretsStore": {"rotationPollInterval": "2 minutes"}}, "security.secretsStore.rotationPollInterval:"),
        ({"azurePolicy": "sometimes"}, "security.azurePolicy:"),
        ({"encryptionAtHost": "sometimes"}, "security.encryptionAtHost:"),
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


@pytest.mark.parametrize(
    ("section", "change", "path", "says"),
    [
        (
            "gpuPools",
            {"osDiskType": "Ephemeral", "osDiskSizeGb": 200},
            "gpuPools[0].osDiskType:",
            "osDiskSizeGb 200 does not fit the 176 GiB temp disk of Standard_NC4as_T4_v3",
        ),
        ("systemPool", {"osDiskType": "Ephemeral", "osDiskSizeGb": 200}, "systemPool.osDiskType:", "150 GiB"),
        ("cpuPool", {"vmSize": "Standard_E8s_v5", "osDiskType": "Ephemeral"}, "cpuPool.osDiskType:", "catalog"),
    ],
)
def test_ephemeral_os_disk_that_does_not_fit_names_the_pool_field(
    stack_config: Callable[[str], dict[str, Any]], section: str, change: dict[str, Any], path: str, says: str
) -> None:
    settings = settings_of(stack_config("dev"))
    target = settings["gpuPools"][0] if section == "gpuPools" else settings[section]
    target.update(change)
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    (problem,) = [p for p in raised.value.problems if p.startswith(path)]
    assert says in problem, f"the message says the size and the SKU's limit: {problem}"


def test_ephemeral_os_disk_on_the_a100_size_is_rejected_at_the_default_size(
    stack_config: Callable[[str], dict[str, Any]],
) -> None:
    settings = settings_of(stack_config("prod"))
    settings["gpuPools"][0]["osDiskType"] = "Ephemeral"
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    assert any(
        p.startswith("gpuPools[0].osDiskType:") and "128" in p and "64 GiB" in p and "Standard_NC24ads_A100_v4" in p
        for p in raised.value.problems
    ), raised.value.problems


def test_invalid_storage_network_switch_names_its_field(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("prod"))
    settings["storage"]["lustre"]["blob"]["publicNetworkAccess"] = "sometimes"
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    assert any(p.startswith("storage.lustre.blob.publicNetworkAccess:") for p in raised.value.problems)
