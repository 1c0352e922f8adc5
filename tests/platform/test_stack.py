"""The whole stack program for dev and prod under mocks: cluster, pools, provider, outputs."""

from __future__ import annotations

import re

import pytest
import yaml

from aks_gpu_platform.components.cluster.agent_pools import hashed_pool_name, immutable_pool_fields
from aks_gpu_platform.components.cluster.aks_cluster import SYSTEM_POOL_TAINT
from aks_gpu_platform.components.cluster.kubeconfig import AKS_SERVER_APP_ID
from aks_gpu_platform.components.shared import roles
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.cluster.node_pools import CpuPoolConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS, assert_rejected, settings_of
from tools.bench import critical_path

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"


@pytest.mark.parametrize("stack", STACKS)
def test_one_cluster_with_only_the_tainted_system_pool_inline(recordings: dict[str, Recording], stack: str) -> None:
    cluster = recordings[stack].one(CLUSTER)
    inline = cluster.inputs["agentPoolProfiles"]
    assert len(inline) == 1, "only the system pool may live inline; other pools are AgentPool resources"
    assert inline[0]["mode"] == "System"
    assert inline[0]["nodeTaints"] == [SYSTEM_POOL_TAINT], "user workloads must stay off the system pool"
    assert inline[0]["enableAutoScaling"] is True
    assert "agentPoolProfiles" in cluster.ignore_changes, "the inline list must not fight the separate pools"


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_identity_access_and_networking(recordings: dict[str, Recording], stack: str) -> None:
    i = recordings[stack].one(CLUSTER).inputs
    assert i["oidcIssuerProfile"] == {"enabled": True}, "workload identity needs the OIDC issuer"
    assert i["securityProfile"]["workloadIdentity"] == {"enabled": True}
    assert i["securityProfile"]["imageCleaner"]["enabled"] is True
    assert i["aadProfile"]["managed"] is True and i["aadProfile"]["enableAzureRBAC"] is True
    assert i["aadProfile"]["adminGroupObjectIDs"], "someone must be able to administer the cluster"
    net = i["networkProfile"]
    assert (net["networkPlugin"], net["networkPluginMode"], net["networkDataplane"], net["networkPolicy"]) == (
        "azure",
        "overlay",
        "cilium",
        "cilium",
    )
    assert i["identity"]["type"] == "UserAssigned"
    kubelet = recordings[stack].one("azure-native:managedidentity:UserAssignedIdentity", "kubelet")
    brought = i["identityProfile"]["kubeletidentity"]
    assert brought["resourceId"] == kubelet.outputs["id"], "the kubelet identity is the one we create, not implicit"
    assert brought["objectId"] == kubelet.outputs["principalId"], "its object ID is that identity's principal"
    storage = i["storageProfile"]
    for driver in ("blobCSIDriver", "diskCSIDriver", "fileCSIDriver", "snapshotController"):
        assert storage[driver] == {"enabled": True}, f"{driver} must be on for the storage classes"
    assert i["apiServerAccessProfile"]["authorizedIPRanges"], "a public API server must be fenced by ranges"


@pytest.mark.parametrize("stack", STACKS)
def test_autoscaler_profile_comes_from_config(recordings: dict[str, Recording], stack: str) -> None:
    profile = recordings[stack].one(CLUSTER).inputs["autoScalerProfile"]
    assert profile["expander"] == "least-waste", "the cheapest fitting pool should win"
    assert profile["scaleDownDelayAfterAdd"] == "15m"
    assert profile["maxGracefulTerminationSec"] == "900"


def test_prod_disables_local_accounts_and_spreads_the_system_pool(prod_recording: Recording) -> None:
    i = prod_recording.one(CLUSTER).inputs
    assert i["disableLocalAccounts"] is True, "prod must accept Entra ID identities only"
    assert i["agentPoolProfiles"][0]["availabilityZones"] == ["1", "2", "3"]
    assert prod_recording.one(CLUSTER).protect, "prod refuses to delete or replace the cluster"


@pytest.mark.parametrize("stack", STACKS)
def test_cpu_pool_is_a_separate_autoscaled_pool(recordings: dict[str, Recording], stack: str) -> None:
    pool = recordings[stack].one(AGENT_POOL, "cpu")
    assert pool.inputs["nodeLabels"]["pool"] == "cpu"
    assert pool.inputs["mode"] == "User"
    assert pool.inputs["enableAutoScaling"] is True
    assert pool.inputs["minCount"] <= pool.inputs["maxCount"]
    assert "count" in pool.ignore_changes, "re-sending count after the autoscaler moved it fails the update"
    assert pool.inputs["vnetSubnetID"] == recordings[stack].one("azure-native:network:Subnet", "nodes").outputs["id"]


def _cpu_pool_name(**changes: object) -> str:
    pool = CpuPoolConfig.model_validate({"vmSize": "Standard_D8ds_v5", "zones": ["1", "2"], **changes})
    return hashed_pool_name(pool.name, immutable_pool_fields(pool, encryption_at_host=False))


def test_cpu_pool_name_changes_exactly_when_azure_cannot_update_in_place(prod_recording: Recording) -> None:
    pool = prod_recording.one(AGENT_POOL, "cpu")
    name = pool.inputs["agentPoolName"]
    assert re.fullmatch(r"cpu[0-9a-f]{4}", name), f"{name}: cpuPool.name + 4 hex chars of the immutable fields"
    assert prod_recording.stack_outputs["cpuPoolName"] == name, "operators find the hashed name in the outputs"
    base = _cpu_pool_name()
    assert _cpu_pool_name(maxCount=9, labels={"team": "a"}) == base, "bounds and labels update in place: same pool"
    for why, changed in (
        ("VM size", _cpu_pool_name(vmSize="Standard_D16ds_v5")),
        ("zones", _cpu_pool_name(zones=["1"])),
        ("ephemeral OS disk", _cpu_pool_name(osDiskType="Ephemeral")),
        ("max pods", _cpu_pool_name(maxPods=60)),
    ):
        assert changed != base, f"a {why} change is rejected in place by Azure: it must create a new pool"
    pool_config = CpuPoolConfig.model_validate({"vmSize": "Standard_D8ds_v5"})
    encrypted = hashed_pool_name("cpu", immutable_pool_fields(pool_config, encryption_at_host=True))
    assert encrypted != hashed_pool_name("cpu", immutable_pool_fields(pool_config, encryption_at_host=False)), (
        "host encryption is set only at creation"
    )


def test_cpu_pool_name_leaves_room_for_the_hash(stack_config) -> None:  # type: ignore[no-untyped-def]
    config = stack_config("dev")
    config["aks-gpu-platform:cpuPool"]["name"] = "cpuworker"
    with pytest.raises(ConfigError, match=r"cpuPool\.name:"):
        load_platform_config(settings_of(config))


@pytest.mark.parametrize("stack", STACKS)
def test_kubernetes_provider_uses_a_secret_non_interactive_kubeconfig(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    assert "kubeconfig" in recording.secret_outputs, "the kubeconfig output must be a Pulumi secret"
    provider = recording.one("pulumi:providers:kubernetes")
    kubeconfig = yaml.safe_load(provider.inputs["kubeconfig"])
    assert kubeconfig["users"], "the provider's kubeconfig names a user"
    for user in kubeconfig["users"]:
        exec_ = user["user"]["exec"]
        assert exec_["command"] == "kubelogin"
        assert exec_["interactiveMode"] == "Never", "pulumi up must never wait for a browser login"
        assert "devicecode" not in exec_["args"]
        assert AKS_SERVER_APP_ID in exec_["args"]
    invokes = [token for token, _ in recording.invokes]
    assert "azure-native:containerservice:listManagedClusterUserCredentials" in invokes
    assert "azure-native:containerservice:listManagedClusterAdminCredentials" not in invokes, (
        "admin credentials do not exist with local accounts disabled"
    )


def test_login_mode_follows_config(prod_recording: Recording) -> None:
    kubeconfig = yaml.safe_load(prod_recording.one("pulumi:providers:kubernetes").inputs["kubeconfig"])
    args = kubeconfig["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--login") + 1] == "workloadidentity", "prod deploys from CI with workload identity"


@pytest.mark.parametrize("stack", STACKS)
def test_control_plane_may_use_the_kubelet_identity_and_subnet(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    cluster = recording.one(CLUSTER)
    grants = recording.of_type("azure-native:authorization:RoleAssignment")
    grant_urns = {g.urn for g in grants if g.name.removeprefix("platform-").startswith("aks-control-plane")}
    assert len(grant_urns) == 2
    assert grant_urns <= set(cluster.depends_on), "the cluster must wait for its identity's grants"
    for grant in grants:
        if grant.name.removeprefix("platform-").startswith("aks-control-plane"):
            assert grant.inputs["principalType"] == "ServicePrincipal"


@pytest.mark.parametrize("stack", STACKS)
def test_a_new_cluster_waits_until_its_identity_grants_have_taken_effect(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    cluster = recording.one(CLUSTER)
    grants = [g for g in recording.of_type("azure-native:authorization:RoleAssignment") if g.urn in cluster.depends_on]
    assert {g.inputs["roleDefinitionId"].rsplit("/", 1)[-1] for g in grants} == {
        roles.MANAGED_IDENTITY_OPERATOR,
        roles.NETWORK_CONTRIBUTOR,
    }, "the cluster depends on the kubelet-identity and subnet grants"
    for grant in grants:
        waited = roles.propagation_seconds(grant.after_create_hooks)
        assert waited >= 600, (
            f"{grant.name} holds the cluster {waited}s once created; AKS rejects a cluster whose grant over the "
            "kubelet identity has not taken effect, which Azure RBAC documents can take up to 10 minutes"
        )
    _, chain = critical_path(recording, cluster.urn)
    assert [r for r in chain if r.urn in {g.urn for g in grants}], "the first deploy pays the wait before the cluster"


def test_the_cluster_grant_wait_is_configurable(stack_config) -> None:  # type: ignore[no-untyped-def]
    config = stack_config("dev")
    config["aks-gpu-platform:cluster"]["roleAssignmentPropagationSeconds"] = 0
    recording = run_stack("dev", config)
    grants = [
        g
        for g in recording.of_type("azure-native:authorization:RoleAssignment")
        if g.name.removeprefix("platform-").startswith("aks-")
    ]
    assert len(grants) == 2
    assert not any(g.after_create_hooks for g in grants), "0 creates the cluster right after its grants"
    settings = settings_of(stack_config("dev"))
    settings["cluster"]["roleAssignmentPropagationSeconds"] = 3600
    field = "cluster.roleAssignmentPropagationSeconds"
    assert_rejected(settings, "an hour-long wait is a typo", field, "less than or equal to 1800")


def test_bad_config_stops_the_program_before_any_resource(stack_config) -> None:  # type: ignore[no-untyped-def]
    config = stack_config("dev")
    config["aks-gpu-platform:cpuPool"]["minCount"] = 50
    from aks_gpu_platform.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        run_stack("dev", config)
    assert "cpuPool.minCount" in str(caught.value)
