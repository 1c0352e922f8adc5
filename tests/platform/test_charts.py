"""Helm charts and custom resources checked against what the pinned charts do with our values.

Each test models one fact read in the chart's templates at the pinned tag (docs/charts.md names
the files): which component a values key reaches, what the chart does when we leave a key out,
and which release installs the CRD of an object. The chart defaults below are spelled out from
those files, not taken from the code under test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.components.gpu.node_pool import GpuNodePool
from aks_gpu_platform.components.gpu.nvidia_stack import GpuStack
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS, MIG_PARTED_CONFIGS
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackConfig
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.testing import Recording, evaluate
from tests.conftest import assert_rejected, cluster_handle, settings_of
from tests.upstream.artifact_cache import cached_upstream, serving_rule
from tests.upstream.kube_scheduler import pod_fits_node

RELEASE = "kubernetes:helm.sh/v3:Release"
AGENT_POOL = "azure-native:containerservice:AgentPool"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "charts.md"

# network-operator 26.4.1 values.yaml: operator.tolerations (templates/operator.yaml puts them on
# the operator Deployment only) and node-feature-discovery.worker.tolerations.
NETWORK_OPERATOR_DEFAULT_OPERATOR_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
]
NETWORK_OPERATOR_DEFAULT_NFD_WORKER_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]
# gpu-operator v26.7.0 values.yaml node-feature-discovery.worker.tolerations.
GPU_OPERATOR_DEFAULT_NFD_WORKER_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]


def _nodes(recording: Recording, pool_label: str) -> list[tuple[str, dict[str, str], list[str]]]:
    """(name, node labels, node taints) of the recorded AgentPools labelled `pool=<pool_label>`."""
    pools = [r for r in recording.of_type(AGENT_POOL) if (r.inputs.get("nodeLabels") or {}).get("pool") == pool_label]
    return [(p.name, p.inputs["nodeLabels"], p.inputs.get("nodeTaints") or []) for p in pools]


def _infiniband_nodes(recording: Recording) -> list[tuple[str, dict[str, str], list[str]]]:
    sizes = {r.name: r.inputs["vmSize"] for r in recording.of_type(AGENT_POOL)}
    return [n for n in _nodes(recording, "gpu") if GPU_SKUS[sizes[n[0]]].infiniband]


def _release(recording: Recording, chart: str) -> Any:
    (release,) = [r for r in recording.of_type(RELEASE) if r.inputs["chart"] == chart]
    return release


def _operator_stack(pools: list[dict[str, Any]]) -> Callable[[], None]:
    """A GPU Operator stack with its pools, as a program for the `build` fixture."""

    def program() -> None:
        handle = cluster_handle()
        validated = [validate_section(GpuPoolConfig, pool, source="gpuPools") for pool in pools]
        for pool in validated:
            GpuNodePool(
                pool.name,
                {
                    "cluster": handle,
                    "nodes_subnet_id": "subnet-id",
                    "settings": pool,
                    "stack_mode": "gpuOperator",
                    "kubernetes_version": "1.36",
                    "tracks_versions": True,
                },
            )
        GpuStack(
            "gs",
            {"settings": GpuStackConfig(mode="gpuOperator", operator_dcgm=True), "pools": validated, "cluster": handle},
        )

    return program


IB_POOL = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "zones": ["1"], "maxCount": 2, "infiniband": True}
MIG_POOL = {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "migProfile": "MIG3g"}


@pytest.fixture(scope="module")
def operator_recording() -> Recording:
    return evaluate(_operator_stack([IB_POOL, MIG_POOL]))


# ---------------------------------------------------------------- Network Operator


def test_network_operator_controller_stays_off_gpu_nodes(prod_recording: Recording) -> None:
    values = _release(prod_recording, "network-operator").inputs["values"]
    controller = {
        "tolerations": values.get("operator", {}).get("tolerations", NETWORK_OPERATOR_DEFAULT_OPERATOR_TOLERATIONS)
    }
    gpu_nodes, cpu_nodes = _nodes(prod_recording, "gpu"), _nodes(prod_recording, "cpu")
    assert gpu_nodes and cpu_nodes
    for name, labels, taints in gpu_nodes:
        assert not pod_fits_node(controller, labels, taints), (
            f"operator.tolerations reaches the operator Deployment, not the RDMA DaemonSet: with the GPU "
            f"taint the controller can sit on {name} and keep a GPU node from scaling down"
        )
    assert any(pod_fits_node(controller, labels, taints) for _, labels, taints in cpu_nodes), "it runs on the CPU pool"


@pytest.mark.parametrize("mode", ["devicePlugin", "gpuOperator"])
def test_a_feature_discovery_worker_labels_every_infiniband_node(
    prod_recording: Recording, operator_recording: Recording, mode: str
) -> None:
    # The RDMA plugin DaemonSet selects feature.node.kubernetes.io/pci-15b3.present=true (network-operator
    # 26.4.1 manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml): only an NFD
    # worker running on the node writes that label, so no worker there means no rdma/ib.
    recording = prod_recording if mode == "devicePlugin" else operator_recording
    network = _release(recording, "network-operator").inputs["values"]
    if network["nfd"]["enabled"]:
        nfd_values, default = network, NETWORK_OPERATOR_DEFAULT_NFD_WORKER_TOLERATIONS
    else:
        nfd_values, default = (
            _release(recording, "gpu-operator").inputs["values"],
            GPU_OPERATOR_DEFAULT_NFD_WORKER_TOLERATIONS,
        )
    worker = {"tolerations": nfd_values.get("node-feature-discovery", {}).get("worker", {}).get("tolerations", default)}
    nodes = _infiniband_nodes(recording)
    assert nodes, "the recording has InfiniBand pools"
    for name, labels, taints in nodes:
        assert pod_fits_node(worker, labels, taints), f"no NFD worker on {name}: its RDMA plugin never starts"


def test_network_operator_waits_for_the_node_feature_rule_crd(
    prod_recording: Recording, operator_recording: Recording
) -> None:
    # network-operator 26.4.1 templates/nodefeaturerules.yaml renders a NodeFeatureRule (nfd.k8s-sigs.io)
    # by default; its CRD comes from an NFD chart's crds/: the release's own subchart, or else the
    # GPU Operator's (gpu-operator v26.7.0 charts/node-feature-discovery/crds/nfd-api-crds.yaml).
    for recording in (prod_recording, operator_recording):
        network = _release(recording, "network-operator")
        if network.inputs["values"]["nfd"]["enabled"]:
            continue
        gpu_operator = _release(recording, "gpu-operator")
        assert gpu_operator.inputs["values"].get("nfd", {}).get("enabled", True), "the CRD must come from somewhere"
        assert gpu_operator.urn in network.depends_on, (
            "without its own NFD the network operator's NodeFeatureRule needs the GPU Operator's CRD installed first"
        )
    assert not _release(operator_recording, "network-operator").inputs["values"]["nfd"]["enabled"], "one NFD only"


def test_nic_cluster_policy_uses_the_release_matched_rdma_plugin(prod_recording: Recording) -> None:
    policy = prod_recording.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
    plugin = policy.inputs["spec"]["rdmaSharedDevicePlugin"]
    version = _release(prod_recording, "network-operator").inputs["version"]
    # The operator joins repository/image:version; the nodes pull it through the platform's registry cache.
    pulled = cached_upstream(f"{plugin['repository']}/{plugin['image']}:{plugin['version']}", prod_recording)
    assert pulled == f"nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin:network-operator-v{version}", (
        f"the operator is tested with the plugin image of its own release (hack/release.yaml), not {pulled}"
    )


# ---------------------------------------------------------------- GPU Operator


def test_gpu_operator_mig_manager_keeps_each_pools_mig_profile(operator_recording: Recording) -> None:
    # gpu-operator v26.7.0: migManager.enabled and migManager.config.default "all-disabled" by default;
    # controllers/nodelabeling_controller.go labels every MIG-capable node that has no
    # nvidia.com/mig.config label "all-disabled", and the MIG manager then turns MIG off.
    pool = operator_recording.one(AGENT_POOL, "a100")
    assert pool.inputs["gpuInstanceProfile"] == "MIG3g"
    assert pool.inputs["nodeLabels"].get("nvidia.com/mig.config") == "all-3g.40gb", (
        "without the label the operator disables MIG on the pool that asked for MIG3g on an A100 80GB"
    )
    values = _release(operator_recording, "gpu-operator").inputs["values"]
    assert values["mig"]["strategy"] == "single"
    assert {"name": "WITH_REBOOT", "value": "true"} in values["migManager"]["env"], "A100 MIG mode needs a reboot"
    plain = operator_recording.one(AGENT_POOL, "h100")
    assert "nvidia.com/mig.config" not in plain.inputs["nodeLabels"], "no MIG profile: the operator's default holds"


def test_every_mig_profile_in_the_catalog_names_a_mig_parted_config() -> None:
    checked = 0
    for size, sku in GPU_SKUS.items():
        for profile in (s.profile for s in sku.mig):
            name = MIG_PARTED_CONFIGS.get(sku.gpu_model, {}).get(profile)
            assert name, f"{size} {profile}: the GPU Operator would reset this pool to all-disabled"
            slices = profile.removeprefix("MIG")
            assert re.fullmatch(rf"all-{slices}\.\d+gb", name), f"{size} {profile}: {name} is another slice size"
            checked += 1
    assert checked


def test_the_operator_partitions_each_mig_pool_into_the_slices_its_quota_counts() -> None:
    # Kueue quotas, the autoscaler template and cost count `per_gpu` instances of the NVIDIA profile per GPU; the
    # MIG manager makes what the mig-parted configuration names. A config of another GPU's slice size (a 2g.20gb
    # of the 80 GB parts on an H100 NVL) matches none of the node's devices, and the pool's GPUs stay whole.
    for size, sku in GPU_SKUS.items():
        for mig in sku.mig:
            name = MIG_PARTED_CONFIGS[sku.gpu_model][mig.profile]
            assert name == f"all-{mig.nvidia_profile}", (
                f"{size} {mig.profile}: the MIG manager would apply {name}, the platform counts "
                f"{mig.per_gpu} x {mig.nvidia_profile} per GPU"
            )


def test_device_plugin_mode_leaves_mig_to_aks(dev_recording: Recording) -> None:
    pools = _nodes(dev_recording, "gpu")
    assert pools
    for name, labels, _ in pools:
        assert "nvidia.com/mig.config" not in labels, f"{name}: AKS partitions MIG when it installs the driver"


def test_gpu_operator_creates_no_servicemonitor(operator_recording: Recording) -> None:
    # gpu-operator v26.7.0 values.yaml turned dcgmExporter.serviceMonitor.enabled on (false in v25.3.x);
    # a monitoring.coreos.com ServiceMonitor is ignored by managed Prometheus and doubles any other scrape.
    values = _release(operator_recording, "gpu-operator").inputs["values"]
    assert values["dcgmExporter"].get("serviceMonitor", {}).get("enabled", True) is False


# ---------------------------------------------------------------- DCGM exporter


def test_dcgm_image_must_come_from_the_charts_release(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    # The earlier pins paired chart 4.1.1 (exporter 4.1.1) with the exporter 4.0.4 image.
    settings["monitoring"]["dcgmExporter"].update({"chartVersion": "4.1.1", "imageTag": "4.1.1-4.0.4-ubuntu22.04"})
    assert_rejected(settings, "a chart with another release's image", "monitoring.dcgmExporter.imageTag", "4.1.1")


def test_dcgm_exporter_waits_for_the_image_cache_and_the_pull_grant(dev_recording: Recording) -> None:
    release = dev_recording.one(RELEASE, "dcgm")
    image = release.inputs["values"]["image"]
    served = serving_rule(f"{image['repository']}:{image['tag']}", dev_recording)
    assert served is not None, f"no cache rule serves the exporter's image {image}"
    cache, _ = served
    grant = dev_recording.one("azure-native:authorization:RoleAssignment", "acr-pull")
    assert {cache.urn, grant.urn} <= set(release.depends_on), (
        "pods started before the cache rule and AcrPull exist sit in ImagePullBackOff until Helm times out"
    )


# ---------------------------------------------------------------- the docs table


def test_docs_table_lists_the_pinned_chart_versions(prod_recording: Recording, operator_recording: Recording) -> None:
    text = DOCS.read_text()
    releases = [*prod_recording.of_type(RELEASE), *operator_recording.of_type(RELEASE)]
    assert releases
    for release in releases:
        chart = release.inputs["chart"].rsplit("/", 1)[-1]
        row = re.search(rf"^\| `{re.escape(chart)}` \| `([^`]+)`", text, re.MULTILINE)
        assert row, f"docs/charts.md has no row for {chart}"
        assert row[1] == release.inputs["version"], f"docs/charts.md records {chart} {row[1]}, the code pins another"
