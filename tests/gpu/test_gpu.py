"""GPU pools, the GPU software stack and the smoke test: config rules, stack wiring, schedulability."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any, get_args

import pulumi_azure_native.containerservice as containerservice
import pytest

from aks_gpu_platform.components.gpu.node_pool import GpuNodePool, azure_pool_name, immutable_fields
from aks_gpu_platform.components.gpu.nvidia_stack import GpuStack
from aks_gpu_platform.components.gpu.smoke_test import smoke_test_name
from aks_gpu_platform.components.shared.context import ClusterHandle
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS, gpu_sku
from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE, GPU_TAINT, SPOT_TAINT
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackConfig, GpuStackMode
from aks_gpu_platform.config.gpu.section import MigProfile as MigProfileName
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.types import POOL_NAME_PATTERN
from aks_gpu_platform.config.upgrade.section import GpuPoolUpgradeConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import STACKS, assert_rejected, cluster_handle, settings_of, without_models
from tests.upstream.artifact_cache import cached_upstream
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import node_template, node_templates, release_pod_templates
from tools import REPO_ROOT

AGENT_POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
GPU_CHARTS = {"nvidia-device-plugin", "gpu-operator"}

# The design notes' `gpu-test` Pod, spelled out literally (not through the helper under test).
DESIGN_NOTES_POD: dict[str, Any] = {
    "nodeSelector": {"pool": "gpu"},
    "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    "containers": [{"name": "gpu-test", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
}


def gpu_agent_pools(recording: Recording) -> list[Any]:
    return [r for r in recording.of_type(AGENT_POOL) if (r.inputs.get("nodeLabels") or {}).get("pool") == "gpu"]


def _pool(**overrides: Any) -> GpuPoolConfig:
    base: dict[str, Any] = {"name": "gpua100", "vmSize": "Standard_NC24ads_A100_v4", "minCount": 0, "maxCount": 4}
    return GpuPoolConfig.model_validate({**base, **overrides})


# ---------------------------------------------------------------- config rules


def _gpu_pool(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def apply(settings: dict[str, Any]) -> None:
        settings["gpuPools"][0].update(fields)

    return apply


def _gpu_stack(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def apply(settings: dict[str, Any]) -> None:
        settings.setdefault("gpuStack", {}).update(fields)

    return apply


BROKEN_GPU: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("non-GPU SKU", _gpu_pool(vmSize="Standard_D8ds_v5"), "gpuPools[0].vmSize", "not a GPU size of the catalog"),
    ("MIG on a SKU without MIG", _gpu_pool(migProfile="MIG1g"), "gpuPools[0].migProfile", "supports MIG profiles"),
    ("unknown MIG profile", _gpu_pool(migProfile="MIG5g"), "gpuPools[0].migProfile", "MIG1g"),
    (
        "NVIDIA profile AKS has no gpuInstanceProfile for",
        _gpu_pool(vmSize="Standard_ND96isr_H100_v5", migProfile="MIG1g20gb"),
        "gpuPools[0].migProfile",
        "'MIG1g', 'MIG2g', 'MIG3g', 'MIG4g' or 'MIG7g'",
    ),
    (
        "MIG on an A10, which has none",
        _gpu_pool(vmSize="Standard_NV36ads_A10_v5", migProfile="MIG1g"),
        "gpuPools[0].migProfile",
        "supports MIG profiles: none",
    ),
    ("InfiniBand on a SKU without it", _gpu_pool(infiniband=True), "gpuPools[0].infiniband", "has no InfiniBand"),
    (
        "InfiniBand pool over several zones",
        _gpu_pool(vmSize="Standard_ND96isr_H100_v5", infiniband=True, zones=["1", "2"]),
        "gpuPools[0].zones",
        "exactly one zone",
    ),
    ("min above max", _gpu_pool(minCount=3, maxCount=2), "gpuPools[0].minCount", "must not exceed maxCount"),
    ("name with capitals", _gpu_pool(name="GpuT4"), "gpuPools[0].name", "pattern"),
    ("name leaves no room for the hash", _gpu_pool(name="gpupool12"), "gpuPools[0].name", "pattern"),
    ("spot settings on a regular pool", _gpu_pool(spot={"maxPrice": 0.5}), "gpuPools[0].spot", "priority Spot"),
    (
        "negative spot price",
        _gpu_pool(priority="Spot", spot={"maxPrice": -3}),
        "gpuPools[0].spot.maxPrice",
        "positive USD price",
    ),
    ("malformed taint", _gpu_pool(taints=["dedicated"]), "gpuPools[0].taints[0]", "key=value:"),
    ("taint on the GPU key", _gpu_pool(taints=["sku=cpu:NoSchedule"]), "gpuPools[0].taints[0]", "set by the platform"),
    ("platform label", _gpu_pool(labels={"gpu-model": "x"}), "gpuPools[0].labels", "set by the platform"),
    ("unknown stack mode", _gpu_stack(mode="both"), "gpuStack.mode", "devicePlugin"),
    ("operator DCGM without the operator", _gpu_stack(operatorDcgm=True), "gpuStack.operatorDcgm", "gpuOperator"),
]


@pytest.mark.parametrize(("why", "breaker", "field", "hint"), BROKEN_GPU, ids=[b[0] for b in BROKEN_GPU])
def test_invalid_gpu_setting_is_rejected_naming_the_field(
    stack_config: Callable[[str], dict[str, Any]],
    why: str,
    breaker: Callable[[dict[str, Any]], None],
    field: str,
    hint: str,
) -> None:
    settings = settings_of(stack_config("dev"))
    breaker(settings)
    assert_rejected(settings, why, field, hint)


def test_catalog_covers_the_supported_families() -> None:
    families = {sku.family for sku in GPU_SKUS.values()}
    for family in ("NCads_A100_v4", "NCads_H100_v5", "NDasrA100_v4", "NDisrH100_v5", "NDisrH200_v5", "NCasT4_v3"):
        assert family in families, f"{family} must be selectable for a GPU pool"
    assert "NVadsA10_v5" in families
    assert gpu_sku("standard_nd96isr_h100_v5") is GPU_SKUS["Standard_ND96isr_H100_v5"], "Azure sizes ignore case"
    for size, sku in GPU_SKUS.items():
        assert sku.gpus_per_vm >= 1 and sku.gpu_memory_gib >= 16, f"{size}: a GPU size has GPUs with memory"
        assert not sku.infiniband or "_ND" in size, f"{size}: only ND sizes have InfiniBand"
    assert not GPU_SKUS["Standard_NC4as_T4_v3"].mig, "T4 has no MIG"
    assert "MIG7g" in {s.profile for s in GPU_SKUS["Standard_NC24ads_A100_v4"].mig}, "A100 supports MIG"


@pytest.mark.parametrize(
    ("size", "profile", "slice_"),
    [("Standard_ND96isr_H100_v5", "MIG1g", "1g.10gb"), ("Standard_ND96isr_H200_v5", "MIG3g", "3g.71gb")],
)
def test_nd_h100_and_h200_pools_accept_mig(
    stack_config: Callable[[str], dict[str, Any]], size: str, profile: str, slice_: str
) -> None:
    settings = settings_of(without_models(stack_config("prod")))  # a model server needs whole GPUs
    h100 = next(p for p in settings["gpuPools"] if p["vmSize"] == "Standard_ND96isr_H100_v5")
    h100.update(vmSize=size, migProfile=profile)
    pool = next(p for p in load_platform_config(settings).gpu_pools if p.name == h100["name"])
    assert pool.mig_profile == profile, "AKS supports MIG on ND H100 v5 and ND H200 v5 (gpu-multi-instance doc)"
    mig = pool.sku.mig_slice(profile)
    assert mig is not None and mig.nvidia_profile == slice_, f"{profile} on {pool.sku.gpu_model} yields {slice_}"


def test_mig_profiles_are_the_aks_api_values_and_fit_their_gpu() -> None:
    aks_values = {p.value for p in containerservice.GPUInstanceProfile}
    assert set(get_args(MigProfileName)) == aks_values, "the config accepts exactly AKS's gpuInstanceProfile values"
    mig_sizes = [(size, sku) for size, sku in GPU_SKUS.items() if sku.mig]
    assert len(mig_sizes) >= 6, "A100, H100 and H200 sizes are MIG-capable"
    for size, sku in mig_sizes:
        assert {s.profile for s in sku.mig} <= aks_values, f"{size}: only AKS profile names reach the AgentPool"
        for mig in sku.mig:
            slices, memory = re.fullmatch(r"(\d)g\.(\d+)gb", mig.nvidia_profile).groups()  # type: ignore[union-attr]
            assert mig.profile == f"MIG{slices}g", f"{size}: {mig.profile} is the {slices}-slice profile"
            assert int(slices) * mig.per_gpu <= 7, f"{size}: a GPU has 7 compute slices"
            # NVIDIA rounds each instance's memory to whole GB in the name (2 x 3g.71gb on a 141 GB H200).
            assert (int(memory) - 1) * mig.per_gpu < sku.gpu_memory_gib, f"{size}: {mig.nvidia_profile} fits the GPU"
            if slices == "7":
                assert abs(int(memory) - sku.gpu_memory_gib) <= 1, f"{size}: 7g is the whole GPU, so its memory"


# ---------------------------------------------------------------- pools in the stacks


@pytest.mark.parametrize("stack", STACKS)
def test_gpu_pools_are_tainted_labelled_autoscaled_user_pools(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    cfg = load_platform_config(settings_of(load_stack_file(stack, REPO_ROOT)))
    pools = gpu_agent_pools(recording)
    assert len(pools) == len(cfg.gpu_pools), "one AgentPool per configured GPU pool"
    subnet = recording.one("azure-native:network:Subnet", "nodes").outputs["id"]
    cluster = recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    by_name = {p.inputs["nodeLabels"]["gpu-pool"]: p for p in pools}  # registration order is not config order
    for config in cfg.gpu_pools:
        pool = by_name[config.name]
        i = pool.inputs
        assert i["nodeTaints"][0] == GPU_TAINT, "non-GPU pods must stay off GPU nodes"
        assert i["nodeLabels"]["gpu-pool"] == config.name
        assert i["nodeLabels"]["gpu-model"] == config.sku.gpu_model, "the model label comes from the catalog"
        assert i["mode"] == "User"
        assert i["enableAutoScaling"] is True and i["minCount"] == config.min_count
        assert "count" in pool.ignore_changes, "re-sending count makes Azure reject the autoscaled pool's update"
        assert i["gpuProfile"] == {"driver": "Install"}, "devicePlugin mode keeps the AKS-managed driver"
        assert i["vnetSubnetID"] == subnet and i["resourceName"] == cluster, "the pool joins this cluster's subnet"
        assert not pool.delete_before_replace, "a replaced pool must exist before the old one is deleted"
        assert len(i["agentPoolName"]) <= 12 and i["agentPoolName"].startswith(config.name)


def test_prod_gpu_capacity_covers_every_zone(prod_recording: Recording) -> None:
    zones = {z for p in gpu_agent_pools(prod_recording) for z in p.inputs["availabilityZones"]}
    assert zones == {"1", "2", "3"}, "a zone outage must not take all GPU capacity"
    infiniband = [p for p in gpu_agent_pools(prod_recording) if gpu_sku(p.inputs["vmSize"]).infiniband]  # type: ignore[union-attr]
    assert infiniband, "prod trains on InfiniBand pools"
    for pool in infiniband:
        assert len(pool.inputs["availabilityZones"]) == 1, "an InfiniBand pool is one fabric in one zone"


@pytest.mark.parametrize("stack", STACKS)
def test_design_notes_pod_is_schedulable_on_every_gpu_pool(recordings: dict[str, Recording], stack: str) -> None:
    nodes = [n for n in node_templates(recordings[stack]) if n.gpu]
    assert nodes, "every stack has GPU pools"
    for node in nodes:
        assert pod_fits_node(DESIGN_NOTES_POD, node.labels, node.taints), (
            f"the guide's GPU pod cannot land on {node.pool}"
        )
        assert not pod_fits_node({"nodeSelector": {"pool": "gpu"}}, node.labels, node.taints), (
            "the taint must repel others"
        )


@pytest.mark.parametrize("stack", STACKS)
def test_gpu_pool_names_are_exported(recordings: dict[str, Recording], stack: str) -> None:
    cfg = load_platform_config(settings_of(load_stack_file(stack, REPO_ROOT)))
    expected = [azure_pool_name(p, cfg.gpu_stack.mode, cfg.security.encryption_at_host) for p in cfg.gpu_pools]
    assert recordings[stack].stack_outputs["gpuPoolNames"] == expected, "gpuPoolNames lists the pools in config order"
    registered = {p.inputs["agentPoolName"] for p in gpu_agent_pools(recordings[stack])}
    assert registered == set(expected), "the exported names are the registered Azure pool names"


# ---------------------------------------------------------------- immutable fields


def test_immutable_change_renames_the_pool_and_mutable_change_does_not() -> None:
    base = azure_pool_name(_pool(), "devicePlugin")
    assert len(base) <= 12 and re.match(POOL_NAME_PATTERN, base), "a valid AKS pool name"
    assert azure_pool_name(_pool(maxCount=9, minCount=1, labels={"team": "a"}), "devicePlugin") == base, (
        "autoscale bounds and labels update in place: same pool"
    )
    for why, changed in (
        ("VM size", azure_pool_name(_pool(vmSize="Standard_NC48ads_A100_v4"), "devicePlugin")),
        ("MIG profile", azure_pool_name(_pool(migProfile="MIG3g"), "devicePlugin")),
        ("taints", azure_pool_name(_pool(taints=["team=a:NoSchedule"]), "devicePlugin")),
        ("driver mode", azure_pool_name(_pool(), "gpuOperator")),
        ("zones", azure_pool_name(_pool(zones=["1"]), "devicePlugin")),
        ("ephemeral OS disk", azure_pool_name(_pool(osDiskType="Ephemeral", osDiskSizeGb=64), "devicePlugin")),
        ("encryption at host", azure_pool_name(_pool(), "devicePlugin", encryption_at_host=True)),
    ):
        assert changed != base, f"a {why} change cannot be applied in place: it must create a new pool"


def test_host_encryption_off_leaves_existing_pool_names_alone(stack_config: Callable[[str], dict[str, Any]]) -> None:
    cfg = load_platform_config(settings_of(stack_config("dev")))
    (pool,) = cfg.gpu_pools
    assert "encryptionAtHost" not in immutable_fields(pool, "devicePlugin", encryption_at_host=False), (
        "pools created before the switch existed must keep their hash"
    )
    # The dev T4 pool's Azure name since the first release: a changed hash would replace a running pool.
    assert azure_pool_name(pool, cfg.gpu_stack.mode, cfg.security.encryption_at_host) == "gput42aa3"


def _component_pool(settings: dict[str, Any], mode: GpuStackMode, handle: ClusterHandle | None = None) -> GpuNodePool:
    return GpuNodePool(
        "gpu",
        {
            "cluster": handle or cluster_handle(),
            "nodes_subnet_id": "subnet-id",
            "settings": validate_section(GpuPoolConfig, settings, source="gpuPools[0]"),
            "stack_mode": mode,
            "kubernetes_version": "1.36",
            "tracks_versions": True,
            "upgrade": GpuPoolUpgradeConfig(),
        },
    )


def test_spot_mig_pool_under_the_gpu_operator(build: Callable[[Callable[[], Any]], Recording]) -> None:
    settings = {
        "name": "spot",
        "vmSize": "Standard_NC24ads_A100_v4",
        "minCount": 0,
        "maxCount": 3,
        "priority": "Spot",
        "spot": {"evictionPolicy": "Delete", "maxPrice": 1.5},
        "migProfile": "MIG3g",
        "taints": ["team=research:NoSchedule"],
    }
    i = build(lambda: _component_pool(settings, "gpuOperator")).one(AGENT_POOL).inputs
    assert i["gpuProfile"] == {"driver": "None"}, "the GPU Operator brings the driver"
    assert i["gpuInstanceProfile"] == "MIG3g"
    assert (i["scaleSetPriority"], i["scaleSetEvictionPolicy"], i["spotMaxPrice"]) == ("Spot", "Delete", 1.5)
    assert i["nodeTaints"] == [GPU_TAINT, "team=research:NoSchedule", SPOT_TAINT], "AKS adds the spot taint anyway"
    upgrade = i["upgradeSettings"]
    assert (upgrade["maxSurge"], upgrade["maxUnavailable"]) == ("0", "1"), "the pool's upgrade settings reach it"
    assert i["agentPoolName"] == azure_pool_name(GpuPoolConfig.model_validate(settings), "gpuOperator")


# ---------------------------------------------------------------- software stack


@pytest.mark.parametrize("stack", STACKS)
def test_exactly_one_pinned_gpu_stack_on_gpu_nodes(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    stacks = [r for r in recording.of_type(RELEASE) if r.inputs["chart"] in GPU_CHARTS]
    assert len(stacks) == 1, "a device plugin next to the GPU Operator's own double-advertises GPUs"
    release = stacks[0]
    i = release.inputs
    assert (
        i["chart"] == "nvidia-device-plugin"
        and i["repositoryOpts"]["repo"] == "https://nvidia.github.io/k8s-device-plugin"
    )
    assert i["version"][0].isdigit() and "*" not in i["version"], "the chart version is pinned"
    assert i["namespace"] == "gpu-resources"
    values = i["values"]
    assert values["priorityClassName"] == "system-node-critical"
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]
    (plugin,) = [p for p in release_pod_templates(recording)[0] if p.source.startswith(release.name)]
    nodes = [n for n in node_templates(recording) if n.gpu]
    assert nodes, "the stack has GPU pools"
    for node in nodes:
        assert pod_fits_node(plugin.spec, node.labels, node.taints), f"no nvidia.com/gpu on {node.pool} without it"
    assert release.provider.startswith(recording.one("pulumi:providers:kubernetes").urn)


def test_prod_infiniband_pools_get_the_network_operator_and_rdma(prod_recording: Recording) -> None:
    operator = prod_recording.one(RELEASE, "network-operator")
    assert operator.inputs["chart"] == "network-operator"
    assert operator.inputs["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    policy = prod_recording.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
    assert operator.urn in policy.depends_on, "the NicClusterPolicy CRD comes from the operator chart"
    spec = policy.inputs["spec"]
    cfg = load_platform_config(settings_of(load_stack_file("prod", REPO_ROOT)))
    ib = [p.name for p in cfg.gpu_pools if p.infiniband]
    assert len(ib) == 3, "prod runs one InfiniBand pool per zone"
    expressions = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert {"key": "gpu-pool", "operator": "In", "values": ib} in expressions["matchExpressions"]
    rdma_plugin = {"tolerations": spec["tolerations"], "affinity": {"nodeAffinity": spec["nodeAffinity"]}}
    ib_nodes = [n for n in node_templates(prod_recording) if n.labels.get("gpu-pool") in ib]
    assert len(ib_nodes) == len(ib)
    for node in ib_nodes:
        assert pod_fits_node(rdma_plugin, node.labels, node.taints), f"no rdma/ib on {node.pool} without it"
    assert "rdma_shared_device_a" not in spec["rdmaSharedDevicePlugin"]["config"]
    assert '"resourceName": "ib"' in spec["rdmaSharedDevicePlugin"]["config"]


def test_dev_has_no_network_operator(dev_recording: Recording) -> None:
    assert not [r for r in dev_recording.of_type(RELEASE) if r.inputs["chart"] == "network-operator"]


def test_gpu_operator_mode_installs_only_the_operator(build: Callable[[Callable[[], Any]], Recording]) -> None:
    made: dict[str, GpuStack] = {}
    # A Spot InfiniBand pool with a team's taint: every operand must still reach its nodes.
    pool = {
        "name": "h100",
        "vmSize": "Standard_ND96isr_H100_v5",
        "zones": ["1"],
        "minCount": 0,
        "maxCount": 2,
        "infiniband": True,
        "priority": "Spot",
        "taints": ["team=research:NoExecute"],
    }

    def program() -> None:
        handle = cluster_handle()
        made["stack"] = GpuStack(
            "gs",
            {
                "settings": GpuStackConfig(mode="gpuOperator", operator_dcgm=True),
                "pools": [validate_section(GpuPoolConfig, pool, source="gpuPools[0]")],
                "cluster": handle,
            },
        )
        _component_pool(pool, "gpuOperator", handle)

    recording = build(program)
    charts = {r.inputs["chart"]: r.inputs for r in recording.of_type(RELEASE)}
    assert set(charts) == {"gpu-operator", "network-operator"}, "no separate device plugin next to the operator"
    values = charts["gpu-operator"]["values"]
    assert values["driver"]["enabled"] and values["devicePlugin"]["enabled"] and values["dcgmExporter"]["enabled"]
    assert charts["network-operator"]["values"]["nfd"]["enabled"] is False, "one node-feature-discovery only"
    assert made["stack"].dcgm_from_operator and made["stack"].rdma_resource == "rdma/ib"
    node = node_template(recording.one(AGENT_POOL).inputs)
    operator_pods = [p for p in release_pod_templates(recording)[0] if p.source.startswith("gs-gpu-operator")]
    assert {p.source.split(": ")[1] for p in operator_pods} == {"operand DaemonSets", "node-feature-discovery worker"}
    for pod in operator_pods:
        assert pod_fits_node(pod.spec, node.labels, node.taints), f"{pod.source} must reach the Spot, tainted pool"


# ---------------------------------------------------------------- smoke test


def test_smoke_test_job_is_restricted_and_waits_for_gpus_and_stack(dev_recording: Recording) -> None:
    job = dev_recording.one(JOB, "smoke-test")
    manifest = kubernetes_object(job)
    assert validate_object(manifest, "1.33.0") == ("valid", ""), "the Job must pass the upstream schema"
    assert "pulumi.com/skipAwait" not in (manifest["metadata"].get("annotations") or {}), "pulumi must wait for it"
    pod = manifest["spec"]["template"]["spec"]
    nodes = [n for n in node_templates(dev_recording) if n.gpu]
    assert nodes, "dev has a GPU pool"
    for node in nodes:
        assert pod_fits_node(pod, node.labels, node.taints), f"the test must be able to run on {node.pool}"
    container = pod["containers"][0]
    assert container["command"] == ["nvidia-smi"]
    image = cached_upstream(container["image"], dev_recording)
    assert image is not None, f"{container['image']} must come through the platform's registry"
    assert image.startswith("docker.io/nvidia/cuda:12.") and image.endswith("-base-ubuntu22.04")
    assert container["resources"]["limits"][GPU_RESOURCE] == "1"
    assert (
        pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    )
    sc = container["securityContext"]
    assert (
        sc["allowPrivilegeEscalation"] is False
        and sc["capabilities"]["drop"] == ["ALL"]
        and sc["readOnlyRootFilesystem"]
    )
    needed = {p.urn for p in gpu_agent_pools(dev_recording)} | {dev_recording.one(RELEASE, "device-plugin").urn}
    assert needed <= set(job.depends_on), "the test must run after the GPU pools and the device plugin exist"
    namespace = dev_recording.one("kubernetes:core/v1:Namespace", "gpu-stack").inputs["metadata"]["name"]
    assert manifest["metadata"]["namespace"] == namespace == "gpu-resources"
    assert job.deleted_with == dev_recording.one("azure-native:containerservice:ManagedCluster").urn


def test_smoke_test_name_follows_the_gpu_settings(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    base = {"gpuPools": settings["gpuPools"], "gpuStack": settings["gpuStack"]}
    changed = copy.deepcopy(base)
    changed["gpuPools"][0]["maxCount"] = 5
    assert smoke_test_name(base) == smoke_test_name(copy.deepcopy(base)), "stable name: no rerun without change"
    assert smoke_test_name(changed) != smoke_test_name(base), "a pool change must rerun the test"


def test_smoke_test_can_be_switched_off(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = stack_config("dev")
    config["aks-gpu-platform:gpuStack"]["smokeTest"] = False
    jobs = [j.name for j in run_stack("dev", config=config).of_type(JOB)]
    assert not [j for j in jobs if "smoke-test" in j], f"smokeTest: false creates no smoke test Job: {jobs}"


def test_pool_name_output_is_the_azure_pool_name(build: Callable[[Callable[[], Any]], Recording]) -> None:
    recording = build(
        lambda: _component_pool({"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 1}, "devicePlugin")
    )
    pool = recording.one(AGENT_POOL)
    assert pool.outputs["name"] == pool.inputs["agentPoolName"], "gpuPoolNames must carry the Azure pool name"
