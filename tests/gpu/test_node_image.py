"""The node image contract: every GPU pool the platform creates boots a node image that, together with what the
platform installs on the cluster, gives it one NVIDIA driver, a container runtime that uses it, one GPU device
plugin and a containerd that still starts; and the config refuses exactly the pools the image cannot serve.

The image is modelled from Azure/AgentBaker in tests/upstream/node_image.py. Stacks: dev, prod, the fleet's members
and the variants (tests/gpu/test_scheduling.py, AMD, AKS-managed GPU).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS, gpu_sku
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, settings_of, without_models
from tests.gpu.test_aks_managed import managed_config
from tests.gpu.test_amd_gpu import amd_variant
from tests.gpu.test_scheduling import VARIANTS, variant_config
from tests.upstream.node_image import (
    HOST_DRIVER_ROOT,
    OPERATOR_DRIVER_ROOT,
    NodeImage,
    containerd_starts,
    driver_reachable,
    node_image,
    operator_driver_installs,
    toolkit_drop_in_version,
)
from tools import REPO_ROOT

AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC = "azure-native:resources:Resource"
CLUSTER = "azure-native:containerservice:ManagedCluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
DEVICE_PLUGIN_CHART, GPU_OPERATOR_CHART = "nvidia-device-plugin", "gpu-operator"
DRA_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
PREFIX = "aks-gpu-platform:"
# Agents on every NVIDIA GPU node that read the driver without asking for a GPU: chart, where its values set the
# pod's RuntimeClass, and the chart's default there. NVIDIA/dcgm-exporter 4.5.3-4.8.2 deployment/values.yaml
# (`runtimeClassName: ""`); NVIDIA/NVSentinel (lalitadithya/NVSentinel e002c5dc) charts/metadata-collector
# values.yaml (`runtimeClassName: nvidia`).
DRIVER_AGENTS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "dcgm-exporter": ("the DCGM exporter", ("runtimeClassName",), ""),
    "oci://ghcr.io/nvidia/nvsentinel": (
        "NVSentinel's metadata collector",
        ("metadata-collector", "runtimeClassName"),
        "nvidia",
    ),
}


@dataclass(frozen=True)
class GpuPool:
    name: str
    cluster: str
    vm_size: str
    node: NodeImage | None
    driver: str
    managed: bool


def _cluster_of(provider_urn: str, recording: Recording) -> str:
    provider = recording.by_urn(provider_urn.rsplit("::", 1)[0])
    (cluster,) = [c for c in recording.of_type(CLUSTER) if c.parent == provider.parent]
    return str(cluster.inputs["resourceName"])


def _releases(recording: Recording) -> dict[str, dict[str, RecordedResource]]:
    """Per cluster name: the releases installed in it, by chart."""
    found: dict[str, dict[str, RecordedResource]] = {}
    for release in recording.of_type(RELEASE):
        found.setdefault(_cluster_of(str(release.provider), recording), {})[str(release.inputs["chart"])] = release
    return found


def _versions(recording: Recording) -> dict[str, str]:
    return {str(c.inputs["resourceName"]): str(c.inputs["kubernetesVersion"]) for c in recording.of_type(CLUSTER)}


def gpu_pools(recording: Recording) -> list[GpuPool]:
    """The GPU pools as sent to Azure (typed AgentPools and the generic ones of aksManaged) with their node image."""
    versions = _versions(recording)
    found: list[GpuPool] = []
    for resource in [*recording.of_type(AGENT_POOL), *recording.of_type(GENERIC)]:
        if resource.type == GENERIC and resource.inputs.get("resourceType") != "agentPools":
            continue
        body: dict[str, Any] = (
            resource.inputs.get("properties") if resource.type == GENERIC else resource.inputs
        ) or {}
        sku = gpu_sku(str(body["vmSize"]))
        if sku is None:
            continue
        cluster = (
            str(resource.inputs["parentResourcePath"]).rsplit("/", 1)[-1]
            if resource.type == GENERIC
            else str(resource.inputs["resourceName"])
        )
        profile = body.get("gpuProfile") or {}
        minor = ".".join(str(body.get("orchestratorVersion") or versions[cluster]).split(".")[:2])
        managed = (profile.get("nvidia") or {}).get("managementMode") == "Managed"
        driver = str(profile.get("driver", "Install"))
        node = node_image(str(body.get("osSKU", "Ubuntu")), minor, sku.arch, sku.vendor == "nvidia", driver, managed)
        found.append(GpuPool(body["nodeLabels"]["gpu-pool"], cluster, str(body["vmSize"]), node, driver, managed))
    return found


def _value_at(values: dict[str, Any], path: tuple[str, ...], default: str) -> str:
    for key in path[:-1]:
        values = values.get(key) or {}
    return str(values.get(path[-1], default) or "")


def _toolkit_sources(operator: RecordedResource) -> list[str]:
    env = {e["name"]: e["value"] for e in (operator.inputs["values"].get("toolkit") or {}).get("env") or []}
    sources = env.get("RUNTIME_CONFIG_SOURCES") or env.get("RUNTIME_CONFIG_SOURCE")
    return sources.split(",") if sources else ["command", "file"]


def node_image_problems(recording: Recording) -> list[str]:
    """What leaves a GPU pool without a working GPU on the node image it boots."""
    problems: list[str] = []
    releases = _releases(recording)
    operator_os: dict[str, set[str]] = {}
    for pool in gpu_pools(recording):
        where = f"{pool.cluster}/{pool.name} ({pool.vm_size})"
        sku = GPU_SKUS[pool.vm_size]
        node = pool.node
        if node is None:
            problems.append(f"{where}: AKS has no node image for the pool's OS SKU at this Kubernetes minor")
            continue
        charts = releases.get(pool.cluster, {})
        if sku.vendor != "nvidia":
            if node.nvidia_driver or pool.driver != "None":
                problems.append(f"{where}: an AMD pool must skip the AKS driver (gpuProfile.driver None)")
            continue
        operator = charts.get(GPU_OPERATOR_CHART)
        values = operator.inputs["values"] if operator else {}
        operator_driver = bool(operator) and (values.get("driver") or {}).get("enabled", True) and pool.driver == "None"
        if operator_driver and not operator_driver_installs(pool.vm_size, node.os, node.arch):
            problems.append(
                f"{where}: NVIDIA publishes no driver container that installs here ({node.os} on {node.arch}; GRID "
                "sizes take AKS's converged driver, not the passthrough one)"
            )
        if not node.nvidia_driver and not operator_driver:
            problems.append(
                f"{where}: no NVIDIA driver: the image installs none ({node.os}, {node.arch}, driver "
                f"{pool.driver}) and no GPU Operator driver serves the pool"
            )
        if operator_driver:
            operator_os.setdefault(pool.cluster, set()).add(node.os)
        toolkit = bool(operator) and (values.get("toolkit") or {}).get("enabled", True)
        if not node.nvidia_runtime_default and not toolkit:
            problems.append(f"{where}: containerd has no NVIDIA runtime (AKS's GPU config or the operator's toolkit)")
        if toolkit and operator is not None:
            version = toolkit_drop_in_version(node, _toolkit_sources(operator))
            if not containerd_starts(node, version):
                problems.append(
                    f"{where}: the toolkit writes a version-{version} containerd drop-in over the version-"
                    f"{node.root_config_version} root config of containerd {node.containerd}: containerd refuses it "
                    "and stops, the node goes NotReady"
                )
        plugins = [*node.host_gpu_services[:1]]
        plugins += [DEVICE_PLUGIN_CHART] if DEVICE_PLUGIN_CHART in charts else []
        if operator and (values.get("devicePlugin") or {}).get("enabled", True):
            plugins.append("GPU Operator device plugin")
        if len(plugins) != 1:
            problems.append(f"{where}: nvidia.com/gpu must be advertised by exactly one device plugin, got {plugins}")
        for chart, (agent, path, default) in DRIVER_AGENTS.items():
            if chart not in charts:
                continue
            runtime_class = _value_at(charts[chart].inputs["values"], path, default)
            if not driver_reachable(node, runtime_class, values if operator else None):
                problems.append(
                    f"{where}: {agent} asks for no GPU and runs with RuntimeClass {runtime_class!r}, which gives it no "
                    "NVIDIA driver on this node (containerd's default runtime there is not NVIDIA's)"
                )
        if sku.multi_node_nvlink:
            if not node.grace_blackwell_ready:
                problems.append(f"{where}: AgentBaker supports NVIDIA GB on arm64 Ubuntu 24.04 only, not {node.os}")
            dra = charts.get(DRA_CHART)
            root = OPERATOR_DRIVER_ROOT if operator_driver else HOST_DRIVER_ROOT
            given = dra.inputs["values"].get("nvidiaDriverRoot", HOST_DRIVER_ROOT) if dra else None
            if given != root:
                problems.append(
                    f"{where}: the DRA driver must find the driver at {root}, its nvidiaDriverRoot is {given}"
                )
    for cluster, releases_os in operator_os.items():
        if len(releases_os) > 1:
            problems.append(f"{cluster}: the GPU Operator's one driver container cannot serve {sorted(releases_os)}")
    return problems


STACK_CONFIGS = {
    **{name: (lambda name=name: variant_config(name)) for name in VARIANTS},
    "amd": amd_variant,
    "aks-managed": managed_config,
}


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording]) -> dict[str, Recording]:
    built = {name: run_stack("dev", make()) for name, make in STACK_CONFIGS.items()}
    return {**recordings, "fleet": run_stack("fleet"), **built}


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet", *STACK_CONFIGS])
def test_every_gpu_pool_boots_an_image_that_with_the_platform_gives_it_a_working_gpu(
    stacks: dict[str, Recording], stack: str
) -> None:
    pools = gpu_pools(stacks[stack])
    assert pools, f"{stack}: the contract checks the GPU pools; none were found"
    problems = node_image_problems(stacks[stack])
    assert not problems, (
        f"{stack}: a pool the node image cannot serve fails on the node, after a green `pulumi up`:\n"
        + ("\n".join(problems))
    )


def test_the_contract_sees_every_fleet_member(stacks: dict[str, Recording]) -> None:
    clusters = {p.cluster for p in gpu_pools(stacks["fleet"])}
    assert len(clusters) >= 2, f"the fleet's member clusters must all be checked, saw {clusters}"


def _with_release_values(recording: Recording, chart: str, change: Any) -> Recording:
    copied = copy.deepcopy(recording)
    for release in copied.of_type(RELEASE):
        if release.inputs["chart"] == chart:
            change(release.inputs["values"])
    return copied


def test_the_contract_brings_back_the_grace_blackwell_pool_without_a_driver(stacks: dict[str, Recording]) -> None:
    # The motivating defect: a GB pool with AKS's driver (devicePlugin mode) boots with none on Arm64.
    copied = copy.deepcopy(stacks["grace-blackwell"])
    for resource in copied.of_type(AGENT_POOL):
        if resource.inputs.get("gpuProfile"):
            resource.inputs["gpuProfile"] = {"driver": "Install"}
    for release in copied.of_type(RELEASE):
        if release.inputs["chart"] == GPU_OPERATOR_CHART:
            release.inputs["chart"] = DEVICE_PLUGIN_CHART
    problems = node_image_problems(copied)
    assert any("no NVIDIA driver" in p for p in problems), problems


def test_the_contract_brings_back_the_toolkit_drop_in_that_stops_containerd(stacks: dict[str, Recording]) -> None:
    reverted = _with_release_values(stacks["gpu-operator-mig"], GPU_OPERATOR_CHART, lambda v: v["toolkit"].pop("env"))
    problems = node_image_problems(reverted)
    assert any("containerd refuses it" in p for p in problems), problems


def test_the_contract_brings_back_the_dra_driver_looking_for_the_driver_on_the_host(
    stacks: dict[str, Recording],
) -> None:
    reverted = _with_release_values(stacks["grace-blackwell"], DRA_CHART, lambda v: v.update(nvidiaDriverRoot="/"))
    problems = node_image_problems(reverted)
    assert any("/run/nvidia/driver" in p for p in problems), problems


def test_the_contract_brings_back_the_dcgm_exporter_without_the_operator_s_runtime(
    stacks: dict[str, Recording],
) -> None:
    # The motivating defect: under the GPU Operator (CDI, runc containerd's default) the exporter ran without a
    # RuntimeClass, found no driver, and every GPU of the Grace-Blackwell pool went unmonitored.
    reverted = _with_release_values(stacks["grace-blackwell"], "dcgm-exporter", lambda v: v.pop("runtimeClassName"))
    problems = node_image_problems(reverted)
    assert any("the DCGM exporter asks for no GPU" in p for p in problems), problems


def test_the_contract_refuses_a_runtime_class_nothing_creates(stacks: dict[str, Recording]) -> None:
    # devicePlugin: AKS creates no RuntimeClass, so a pod naming `nvidia` is refused at admission.
    named = _with_release_values(stacks["dev"], "dcgm-exporter", lambda v: v.update(runtimeClassName="nvidia"))
    problems = node_image_problems(named)
    assert any("RuntimeClass 'nvidia'" in p for p in problems), problems


# ------------------------------------------------------------ the config refuses exactly what the image cannot serve

MINORS = ("1.32", "1.33", "1.34", "1.35", "1.36", "1.37")
OS_SKUS = ("Ubuntu", "Ubuntu2204", "AzureLinux")
MODES = ("devicePlugin", "gpuOperator", "aksManaged")


@cache
def _dev_config() -> dict[str, Any]:
    """dev's stack file, parsed once: the product below builds ~1,000 pools on it (each test takes a deep copy)."""
    return load_stack_file("dev", REPO_ROOT)


def _one_pool_settings(vm_size: str, os_sku: str, mode: str, minor: str) -> dict[str, Any]:
    settings = settings_of(without_models(copy.deepcopy(_dev_config())))
    settings["cluster"]["kubernetesVersion"] = minor
    # LTS creates every catalogued minor on the catalogue's date, so only the node image decides.
    settings["upgrade"].update(tier="Premium", supportPlan="AKSLongTermSupport", autoUpgradeChannel="patch")
    settings["gpuPools"] = [
        {"name": "gput4", "vmSize": vm_size, "zones": ["1"], "minCount": 1, "maxCount": 1, "osSku": os_sku}
    ]
    settings["gpuStack"] = {"mode": mode, "smokeTest": False}
    settings["autoscaling"]["sampleInference"]["enabled"] = False
    settings["training"]["admission"] = {"provisioningClass": "check-capacity.autoscaling.x-k8s.io"}
    settings["training"]["teams"][0]["quotas"] = [{"pool": "gput4", "gpus": 1}]
    return settings


def _image_serves(vm_size: str, os_sku: str, mode: str, minor: str) -> bool:
    sku = GPU_SKUS[vm_size]
    driver = "None" if mode == "gpuOperator" else "Install"
    node = node_image(os_sku, minor, sku.arch, True, driver, mode == "aksManaged")
    if node is None:
        return False
    if not node.nvidia_driver and not (mode == "gpuOperator" and operator_driver_installs(vm_size, node.os, node.arch)):
        return False
    return not sku.multi_node_nvlink or (node.grace_blackwell_ready and int(minor.split(".")[1]) >= 34)


def test_the_config_refuses_exactly_the_pools_the_node_image_cannot_serve() -> None:
    nvidia = sorted(size for size, sku in GPU_SKUS.items() if sku.vendor == "nvidia")
    disagreements: list[str] = []
    for vm_size, os_sku, mode, minor in itertools.product(nvidia, OS_SKUS, MODES, MINORS):
        try:
            load_platform_config(_one_pool_settings(vm_size, os_sku, mode, minor))
            accepted, why = True, ""
        except ConfigError as error:
            accepted, why = False, str(error).splitlines()[-1].strip()[:200]
        serves = _image_serves(vm_size, os_sku, mode, minor)
        if accepted != serves:
            verdict = "accepted" if accepted else f"refused ({why})"
            disagreements.append(f"{vm_size} {os_sku} {mode} {minor}: config {verdict}, image serves: {serves}")
    assert not disagreements, (
        f"{len(disagreements)} pools where the config and the node image disagree (an accepted pool the image cannot "
        "serve fails on the node; a refused one it serves is a false refusal):\n" + "\n".join(disagreements[:40])
    )


def test_an_azure_linux_pool_under_the_gpu_operator_is_refused_naming_its_os_sku() -> None:
    settings = _one_pool_settings("Standard_NC4as_T4_v3", "AzureLinux", "gpuOperator", "1.36")
    assert_rejected(settings, "NVIDIA builds no driver container for Azure Linux", "gpuPools[0].osSku", "use Ubuntu")


@pytest.mark.parametrize("vm_size", sorted(s for s in GPU_SKUS if "A10_v5" in s))
def test_an_a10_v5_pool_under_the_gpu_operator_is_refused_naming_its_size(vm_size: str) -> None:
    # NVads A10 v5 takes the GRID driver only AKS installs; the operator's passthrough driver fails on it.
    settings = _one_pool_settings(vm_size, "Ubuntu", "gpuOperator", "1.36")
    assert_rejected(
        settings, "the pool would boot without a driver", "gpuPools[0].vmSize", "use gpuStack.mode devicePlugin"
    )


def test_gpu_pools_of_two_ubuntu_releases_under_the_gpu_operator_are_refused() -> None:
    settings = _one_pool_settings("Standard_NC4as_T4_v3", "Ubuntu", "gpuOperator", "1.36")
    settings["gpuPools"].append({**settings["gpuPools"][0], "name": "a100", "osSku": "Ubuntu2204"})
    settings["gpuPools"][1]["vmSize"] = "Standard_NC24ads_A100_v4"
    assert_rejected(
        settings,
        "the operator picks one driver container for the cluster from the first GPU node's OS",
        "gpuPools[1].osSku",
        "give every NVIDIA GPU pool the same OS SKU",
    )


def test_an_ubuntu2204_pool_on_a_minor_aks_has_no_image_for_is_refused() -> None:
    settings = _one_pool_settings("Standard_NC4as_T4_v3", "Ubuntu", "devicePlugin", "1.37")
    settings["cpuPool"]["osSku"] = "Ubuntu2204"
    assert_rejected(settings, "Ubuntu2204 exists on 1.25-1.36 only", "cpuPool.osSku", "Ubuntu2204 exists on 1.25-1.36")
