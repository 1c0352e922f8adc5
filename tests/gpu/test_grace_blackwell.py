"""Grace-Blackwell pools: Arm64 hosts get only images built for arm64, ComputeDomains through NVIDIA's DRA driver,
and the rules a pool the autoscaler cannot bring up from zero needs.

The stack is the grace-blackwell variant of tests/gpu/test_scheduling.py (one GB200 pool); its scheduling,
scale-from-zero,
schema and policy checks run there. Here: what only an Arm64, multi-node NVLink pool needs.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.gpu.node_images import check_arm64_images, gpu_pool_images
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.image_platforms import require_arm64, runs_on_arm64
from aks_gpu_platform.config.catalog.images import qualified
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from tests.conftest import assert_rejected, set_path, settings_of
from tests.gpu.test_scheduling import variant_config
from tests.upstream.artifact_cache import cached_upstream
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.node_image import node_image
from tests.upstream.release_contract import RELEASE_READERS, release_problems
from tests.upstream.scheduling import RELEASE, chart_name, node_templates, object_pod_templates, release_pod_templates

VARIANT = "grace-blackwell"
DRA_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
AGENT_POOL = "azure-native:containerservice:AgentPool"


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_stack("dev", variant_config(VARIANT))


def _settings() -> dict[str, Any]:
    return settings_of(variant_config(VARIANT))


def test_grace_blackwell_nodes_are_arm64(recording: Recording) -> None:
    (node,) = [n for n in node_templates(recording) if n.gpu]
    assert node.labels["kubernetes.io/arch"] == "arm64", (
        "GB200 VMs run on Grace (Arm64) CPUs: a node template claiming amd64 would let x86-only pods through the check"
    )


def _upstream(image: str, recording: Recording) -> str:
    """An image pulled through the platform's registry cache, as the upstream reference the cache rule pulls."""
    return cached_upstream(image, recording) or image


def _images_on_the_grace_node(recording: Recording) -> dict[str, str]:
    """Where -> upstream image of every container the recorded platform can place on the Grace node."""
    (node,) = [n for n in node_templates(recording) if n.gpu]
    images: dict[str, str] = {}
    for pod in object_pod_templates(recording):
        if pod_fits_node(pod.spec, node.labels, node.taints):
            for container in [*(pod.spec.get("containers") or []), *(pod.spec.get("initContainers") or [])]:
                images[f"{pod.source} {container['name']}"] = _upstream(str(container["image"]), recording)
    pods, unread = release_pod_templates(recording)
    assert not unread, f"every release's pods must be read: {unread}"
    on_node = {pod.source.split(":", 1)[0] for pod in pods if pod_fits_node(pod.spec, node.labels, node.taints)}
    for release in recording.of_type(RELEASE):
        if release.name in on_node:
            model = RELEASE_READERS[chart_name(release)].read(release.inputs.get("values") or {})
            for chart_pod in model.pods:
                for i, image in enumerate(chart_pod.images):  # a pod source may run several images
                    images[f"{release.name}: {chart_pod.source} #{i}"] = _upstream(image, recording)
    return images


def test_every_pod_that_can_land_on_the_arm64_pool_has_an_arm64_image(recording: Recording) -> None:
    images = _images_on_the_grace_node(recording)
    assert len(images) >= 3, f"device plugin, DCGM exporter and DRA driver must be among them, saw {images}"
    x86_only = {where: image for where, image in images.items() if not runs_on_arm64(image)}
    assert not x86_only, f"these pods crash with `exec format error` on the Grace (Arm64) node: {x86_only}"


def test_the_plan_checks_every_image_the_platform_places_on_the_arm64_pool(recording: Recording) -> None:
    # The plan refuses an x86-only image before anything deploys only if gpu_pool_images names it; an image it
    # misses reaches the node and crash-loops there when its tag changes.
    cfg = load_platform_config(_settings())
    # Docker Hub's `nvidia/cuda` is `docker.io/nvidia/cuda` (the cache rule's spelling); the check reads the tag.
    checked = {qualified(image.split("@", 1)[0]) for image in gpu_pool_images(cfg, cfg.gpu_pools[0]).values()}
    placed = {w: qualified(image.split("@", 1)[0]) for w, image in _images_on_the_grace_node(recording).items()}
    unchecked = {where: image for where, image in placed.items() if image not in checked}
    assert not unchecked, f"images on the Grace node the plan's arm64 check never sees: {unchecked}"


def test_the_driver_container_the_operator_picks_for_the_grace_node_has_an_arm64_build(recording: Recording) -> None:
    (pool,) = [p for p in recording.of_type(AGENT_POOL) if (p.inputs.get("gpuProfile") or {}).get("driver")]
    assert pool.inputs["gpuProfile"]["driver"] == "None", "the operator installs the driver only where AKS did not"
    node = node_image(pool.inputs["osSKU"], pool.inputs["orchestratorVersion"], "arm64", True, "None", False)
    assert node is not None and not node.nvidia_driver, "AKS's Arm64 image brings no driver"
    operator = recording.one(RELEASE, "gpu-operator")
    assert operator.inputs["values"]["driver"]["enabled"] is True
    # gpu-operator v26.7.0: driver.repository/image:version (values.yaml) + "-" + the node's OS tag.
    version = operator.inputs["values"]["driver"].get("version", "595.91.07")
    image = f"nvcr.io/nvidia/driver:{version}-{node.os}"
    assert runs_on_arm64(image), f"{image} must have a verified arm64 build, or the Grace node never gets a driver"


def test_an_image_without_a_verified_arm64_build_is_refused_naming_pool_image_setting_and_fix() -> None:
    settings = _settings()
    settings["autoscaling"]["sampleInference"]["enabled"] = True  # tritonserver:25.01-py3: no arm64 source
    settings["autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0  # the team's quota holds the whole pool
    with pytest.raises(ConfigError) as caught:
        check_arm64_images(load_platform_config(settings))
    message = str(caught.value)
    assert "gpuPools[0]" in message and "'gb200'" in message, f"the message must name the pool: {message}"
    assert "nvcr.io/nvidia/tritonserver:25.01-py3" in message, f"the message must name the image: {message}"
    assert "autoscaling.sampleInference" in message, f"the message must name the setting to change: {message}"
    assert "turn that setting off" in message, f"the message must say how to fix it: {message}"


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/pytorch:24.01-py3",  # the repository is listed at 26.03-py3 only
        "nvcr.io/nvidia/driver/extra:595.91.07-ubuntu24.04",  # a repository under a listed one is another image
    ],
)
def test_an_image_whose_tag_or_repository_was_not_read_is_refused_on_arm64(image: str) -> None:
    settings = _settings()
    settings["autoscaling"]["sampleInference"].update(enabled=True, image=image)
    settings["autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0  # the team's quota holds the whole pool
    with pytest.raises(ConfigError) as caught:
        check_arm64_images(load_platform_config(settings))
    assert image in str(caught.value) and "no verified arm64 build" in str(caught.value), (
        "a build source read at one tag says nothing of another: NVIDIA has published x86-only tags in multi-arch "
        f"repositories, and such a pod dies with `exec format error` on the Grace node. Got: {caught.value}"
    )


def test_the_smoke_test_runs_nvidia_smi_on_the_grace_blackwell_pool(recording: Recording) -> None:
    (node,) = [n for n in node_templates(recording) if n.gpu]
    (job,) = [j for j in recording.of_type("kubernetes:batch/v1:Job") if "gpu-smoke-test" in j.name]
    spec = job.inputs["spec"]["template"]["spec"]
    assert pod_fits_node(spec, node.labels, node.taints), "the smoke test must be able to land on the GB200 node"
    (container,) = spec["containers"]
    assert runs_on_arm64(_upstream(str(container["image"]), recording)), (
        f"{container['image']} must have a verified arm64 build, or nvidia-smi dies with `exec format error`"
    )


def test_an_infiniband_grace_blackwell_pool_gets_only_arm64_images_with_the_gpu_operator_s_nfd() -> None:
    settings = _settings()
    settings["gpuPools"][0].update(infiniband=True, validation={"ncclAllReduce": True, "minBusBandwidthGBps": 400})
    cfg = load_platform_config(settings)
    images = gpu_pool_images(cfg, cfg.gpu_pools[0])
    assert any("ncclAllReduce" in role for role in images), "the NCCL check must be among the pool's workloads"
    assert any("RDMA" in role for role in images), "an InfiniBand pool runs the RDMA shared device plugin"
    nfd = [image for role, image in images.items() if "node-feature-discovery" in role]
    # The RDMA plugin selects nodes an NFD worker labelled; under the GPU Operator its NFD (arm64) serves, and the
    # Network Operator's own worker, which has no verified arm64 build, is not installed.
    assert nfd == ["registry.k8s.io/nfd/node-feature-discovery:v0.19.0"], nfd
    require_arm64("gpuPools[0]", "gb200", images)


def test_lustre_on_an_arm64_pool_is_refused_because_its_csi_node_is_amd64_only() -> None:
    settings = _settings()
    settings["storage"]["lustre"]["enabled"] = True
    with pytest.raises(ConfigError, match=r"azurelustre-csi.*amd64"):
        check_arm64_images(load_platform_config(settings))


def test_the_variant_passes_the_arm64_check() -> None:
    check_arm64_images(load_platform_config(_settings()))


def test_a_grace_blackwell_pool_at_zero_is_refused() -> None:
    settings = _settings()
    settings["gpuPools"][0]["minCount"] = 0
    assert_rejected(
        settings,
        "the autoscaler has no template for GB sizes and none with DRA devices: a pool at zero never comes up",
        "minCount",
        "minCount must be 1 or more",
    )


def test_the_dra_driver_release_installs_with_values_its_chart_accepts(recording: Recording) -> None:
    release = recording.one(RELEASE, "dra-driver")
    assert chart_name(release) == DRA_CHART
    values = release.inputs["values"]
    # templates/validation.yaml at v0.4.0 fails the install when gpus are on without gpuResourcesEnabledOverride,
    # and two GPU allocators on one node would hand out the same GPU twice.
    assert values["resources"]["gpus"]["enabled"] is False, "GPUs stay with the device plugin"
    assert values["resources"]["computeDomains"]["enabled"] is True, "ComputeDomains are what the driver is for"
    assert values["resourceApiVersion"] == "resource.k8s.io/v1", "DRA is GA (v1) on the stacks' Kubernetes"
    # v0.4.0 docs/install.md: `/run/nvidia/driver` under the GPU Operator's driver container, `/` for a host driver.
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver", (
        "AKS installs no driver on Arm64: the GPU Operator's driver container holds it, and a plugin looking at / "
        "finds no libnvidia-ml and never starts"
    )


def test_the_dra_driver_release_can_finish(recording: Recording) -> None:
    problems = [p for p in release_problems(recording, "") if "dra-driver" in p]
    assert not problems, "the DRA driver release must finish within its timeout:\n" + "\n".join(problems)


def test_kueue_maps_the_compute_domain_channel_class(recording: Recording) -> None:
    kueue = recording.one(RELEASE, "kueue")
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    mappings = config["resources"].get("deviceClassMappings") or []
    classes = {name for m in mappings for name in m["deviceClassNames"]}
    # kueue v0.19.2 pkg/dra/claims.go: an unmapped DeviceClass makes the workload inadmissible.
    assert "compute-domain-default-channel.nvidia.com" in classes, (
        "a JobSet whose pods claim a ComputeDomain channel is never admitted without this mapping"
    )


def test_stacks_without_grace_blackwell_install_no_dra_driver(dev_recording: Recording) -> None:
    charts = {chart_name(r) for r in dev_recording.of_type(RELEASE)}
    assert DRA_CHART not in charts, "the DRA driver only serves multi-node NVLink pools"


@pytest.mark.parametrize(
    ("path", "value", "field", "hint"),
    [
        # AKS installs no driver on Arm64 (AgentBaker ensureGPUDrivers) and the API refuses Install for GB300.
        ("gpuStack", {"mode": "devicePlugin", "smokeTest": True}, "gpuStack.mode", "use gpuOperator"),
        ("gpuStack", {"mode": "aksManaged", "smokeTest": True}, "gpuStack.mode", "use gpuOperator"),
        # AgentBaker supports NVIDIA GB on arm64 Ubuntu 24.04 only.
        ("gpuPools.0.osSku", "Ubuntu2204", "gpuPools[0].osSku", "use Ubuntu on Kubernetes 1.35 or later"),
        ("gpuPools.0.osSku", "AzureLinux", "gpuPools[0].osSku", "use Ubuntu on Kubernetes 1.35 or later"),
        # One NVLink domain is 18 VMs; the platform places nothing by clique.
        ("gpuPools.0.maxCount", 19, "gpuPools[0].maxCount", "at most 18"),
    ],
)
def test_a_grace_blackwell_pool_the_node_image_cannot_serve_is_refused_by_name(
    path: str, value: Any, field: str, hint: str
) -> None:
    settings = _settings()
    # Fixed-size and booking existing nodes, as aksManaged also asks, so only the node image can refuse.
    settings["gpuPools"][0]["maxCount"] = 1
    settings["training"]["admission"] = {"provisioningClass": "check-capacity.autoscaling.x-k8s.io"}
    set_path(settings, path, value)
    assert_rejected(settings, "a GB pool that boots without a driver or off its image fails on the node", field, hint)


@pytest.mark.parametrize(("os_sku", "release"), [("Ubuntu2204", "ubuntu22.04"), ("AzureLinux", "azurelinux3.0")])
def test_the_refusal_of_a_grace_blackwell_pool_off_ubuntu_24_04_names_the_os_it_would_boot(
    os_sku: str, release: str
) -> None:
    settings = _settings()
    settings["gpuPools"][0]["osSku"] = os_sku
    error = assert_rejected(settings, "a GB pool off Ubuntu 24.04 boots no GB image", "gpuPools[0].osSku", release)
    assert "{" not in str(error), f"the operator reads the refusal: it must name the OS, not a placeholder: {error}"


@pytest.mark.parametrize("minor", ["1.32", "1.33", "1.34"])
def test_a_grace_blackwell_pool_on_an_lts_minor_before_1_35_is_refused(minor: str) -> None:
    settings = _settings()
    settings["cluster"]["kubernetesVersion"] = minor
    settings["upgrade"].update(tier="Premium", supportPlan="AKSLongTermSupport", autoUpgradeChannel="patch")
    assert_rejected(
        settings,
        "LTS still creates these minors, but they run Ubuntu 22.04 (no GB support) and predate the DRA driver's 1.34.2",
        "cluster.kubernetesVersion",
        "use 1.35 or later",
    )


def test_a_grace_blackwell_pool_of_one_full_rack_is_accepted() -> None:
    settings = _settings()
    settings["gpuPools"][0]["maxCount"] = 18
    assert load_platform_config(settings).gpu_pools[0].max_count == 18


def test_the_plan_s_arm64_check_covers_every_image_the_gpu_operator_runs_on_the_pool(recording: Recording) -> None:
    # The plan refuses before anything is deployed only for images gpu_pool_images names: each operand of the
    # release model (tests/upstream/release_contract.py, read from the chart) must be among them.
    (release,) = [r for r in recording.of_type(RELEASE) if chart_name(r) == "gpu-operator"]
    model = RELEASE_READERS["gpu-operator"].read(release.inputs.get("values") or {})
    # Through the registry's cache; the check reads each tag's platforms (a pinned digest is the tag's index).
    on_nodes = {
        _upstream(i, recording).split("@", 1)[0]
        for pod in model.pods
        if pod.source != "operator Deployment"
        for i in pod.images
    }
    cfg = load_platform_config(_settings())
    checked = {i.split("@", 1)[0] for i in gpu_pool_images(cfg, cfg.gpu_pools[0]).values()}
    assert on_nodes <= checked, f"images on the Grace nodes the plan never checks for arm64: {on_nodes - checked}"
