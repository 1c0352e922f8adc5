"""Every pod we render, or shape through a chart's values, fits the nodes of every pool it must run on.

Node templates are built from the recorded AgentPools the way AKS builds nodes (tests/upstream/scheduling.py),
Spot's taint included; pods are read from our objects and, per chart, from our Helm values. The stacks:
dev and prod as written, and variants that must plan cleanly too (a Spot-only GPU pool with Lustre, an
extra-tainted InfiniBand pool, the GPU Operator with a MIG pool).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.render import render_and_validate
from aks_gpu_platform.testing import RecordedResource, Recording, policy_verdicts
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of, without_models
from tests.training import test_example_training_job as example_job
from tests.upstream.autoscaler_template import (
    NIC_CLUSTER_POLICY,
    advertised_rdma_resources,
    pods_that_bring_up_nodes,
    resources_from_tags,
    scale_from_zero_problems,
    template_node,
    why_not_template,
    zero_node_templates,
)
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import (
    AGENT_POOL,
    AKS_SPOT_TAINT,
    NodeTemplate,
    PodTemplate,
    SchedulingCheck,
    node_template,
    node_templates,
    parse_quantity,
    pod_requests,
    scheduling_check,
    unmet_requests,
)

PREFIX = "aks-gpu-platform:"
RELEASE = "kubernetes:helm.sh/v3:Release"
REPO_ROOT = Path(__file__).resolve().parents[2]

# The design notes' `gpu-test` toleration, spelled out literally.
GPU_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def _spot_only(config: dict[str, Any]) -> None:
    """dev's one GPU pool on Spot VMs, and Lustre on, so its CSI node plugin must reach Spot nodes."""
    pool = config[PREFIX + "gpuPools"][0]
    pool.update({"priority": "Spot", "spot": {"evictionPolicy": "Delete", "maxPrice": -1}})
    config[PREFIX + "storage"]["lustre"]["enabled"] = True


def _infiniband(config: dict[str, Any]) -> None:
    """dev plus an H100 InfiniBand pool that a team reserves with an extra taint."""
    config[PREFIX + "gpuPools"].append(
        {
            "name": "h100ib",
            "vmSize": "Standard_ND96isr_H100_v5",
            "zones": ["1"],
            "minCount": 0,
            "maxCount": 2,
            "infiniband": True,
            "taints": ["workload=training:NoSchedule"],
            "validation": {"dcgmDiag": True, "ncclAllReduce": True},
        }
    )


def _gpu_operator_mig(config: dict[str, Any]) -> None:
    """dev on the GPU Operator (driver, plugin and DCGM from the operator) with an A100 pool cut into MIG slices."""
    config[PREFIX + "gpuPools"] = [
        {
            "name": "a100mig",
            "vmSize": "Standard_NC24ads_A100_v4",
            "zones": ["1"],
            "minCount": 0,
            "maxCount": 2,
            "migProfile": "MIG3g",
        }
    ]
    config[PREFIX + "gpuStack"] = {"mode": "gpuOperator", "operatorDcgm": True, "smokeTest": True}
    # Team quotas follow the pool (2 nodes x 2 MIG3g slices of one A100 80GB); the sample scales from zero beside it.
    config[PREFIX + "autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0
    for team in config[PREFIX + "training"]["teams"]:
        team["quotas"] = [{**quota, "pool": "a100mig", "gpus": 4} for quota in team["quotas"]]


def _grace_blackwell(config: dict[str, Any]) -> None:
    """dev on one GB200 pool (Arm64 hosts, NVLink across the rack): the GPU Operator's driver (AKS installs none on
    Arm64), the DRA driver for ComputeDomains, one node kept (the autoscaler cannot scale it from zero), and only
    platform workloads with arm64 builds."""
    config[PREFIX + "gpuPools"] = [
        {
            "name": "gb200",
            "vmSize": "Standard_ND128isr_NDR_GB200_v6",
            "zones": ["1"],
            "minCount": 1,
            "maxCount": 2,
        }
    ]
    # The smoke test's CUDA base image is built for arm64; the Triton sample's tag has no verified arm64 build.
    config[PREFIX + "gpuStack"] = {"mode": "gpuOperator", "smokeTest": True}
    config[PREFIX + "autoscaling"]["sampleInference"]["enabled"] = False
    for team in config[PREFIX + "training"]["teams"]:
        team["quotas"] = [{**quota, "pool": "gb200", "gpus": 8} for quota in team["quotas"]]


def _shared_gpus(config: dict[str, Any]) -> None:
    """dev's T4 pool time-sliced 4 ways plus an A100 pool shared through MPS, each held whole by the team's
    quota in shared devices (2 nodes x 1 T4 x 4; 1 node x 1 A100 x 2)."""
    pools = config[PREFIX + "gpuPools"]
    pools[0].update(maxCount=2, sharing={"mode": "timeSlicing", "replicas": 4})
    config[PREFIX + "autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0  # the team holds both pools
    pools.append(
        {
            "name": "a100mps",
            "vmSize": "Standard_NC24ads_A100_v4",
            "zones": ["1"],
            "minCount": 0,
            "maxCount": 1,
            "sharing": {"mode": "mps", "replicas": 2},
        }
    )
    for team in config[PREFIX + "training"]["teams"]:
        team["quotas"] = [{"pool": "gput4", "gpus": 8}, {"pool": "a100mps", "gpus": 2}]


VARIANTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "spot-only": _spot_only,
    "infiniband": _infiniband,
    "gpu-operator-mig": _gpu_operator_mig,
    "grace-blackwell": _grace_blackwell,
    "shared-gpus": _shared_gpus,
}
STACKS = ("dev", "prod", *VARIANTS)


def variant_config(name: str) -> dict[str, Any]:
    config = without_models(copy.deepcopy(load_stack_file("dev", REPO_ROOT)))
    VARIANTS[name](config)
    return config


@pytest.fixture(scope="module")
def variant_recordings() -> dict[str, Recording]:
    return {name: run_stack("dev", variant_config(name)) for name in VARIANTS}


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording], variant_recordings: dict[str, Recording]) -> dict[str, Recording]:
    return {**recordings, **variant_recordings}


def platform_config(stack: str) -> PlatformConfig:
    config = variant_config(stack) if stack in VARIANTS else load_stack_file(stack, REPO_ROOT)
    return load_platform_config(settings_of(config))


def check_of(stack: str, recording: Recording) -> SchedulingCheck:
    cfg = platform_config(stack)
    return scheduling_check(recording, {p.name for p in cfg.gpu_pools if p.infiniband})


# What each stack must run on its GPU nodes: the check below is only as good as the pods it sees.
EXPECTED_GPU_PODS: dict[str, set[str]] = {
    "dev": {"device plugin DaemonSet", "exporter DaemonSet", "gpu-smoke-test-job", "inference-sample-deployment"},
    "prod": {"device plugin DaemonSet", "exporter DaemonSet", "RDMA shared device plugin", "CSI node DaemonSets"},
    "spot-only": {"device plugin DaemonSet", "exporter DaemonSet", "CSI node DaemonSets", "gpu-smoke-test-job"},
    "infiniband": {
        "device plugin DaemonSet",
        "RDMA shared device plugin",
        "node-feature-discovery worker",
        "nccl-h100ib",
    },
    "gpu-operator-mig": {"operand DaemonSets", "node-feature-discovery worker", "gpu-smoke-test-job"},
    "grace-blackwell": {
        "operand DaemonSets",
        "node-feature-discovery worker",
        "exporter DaemonSet",
        "kubelet plugin DaemonSet",
    },
    "shared-gpus": {"device plugin DaemonSet", "exporter DaemonSet", "gpu-smoke-test-job"},
}


@pytest.mark.parametrize("stack", STACKS)
def test_every_pod_fits_every_pool_it_must_run_on(stacks: dict[str, Recording], stack: str) -> None:
    check = check_of(stack, stacks[stack])
    gpu_nodes = [n for n in check.user_nodes if n.gpu]
    assert len(gpu_nodes) == len(platform_config(stack).gpu_pools), "one node template per configured GPU pool"
    assert check.pods, "the stack renders pods; a check over none proves nothing"
    missing = [p for p in EXPECTED_GPU_PODS[stack] if not any(p in pod.source for pod in check.pods)]
    assert not missing, f"{stack}: the check must see {missing}"
    problems = check.problems()
    assert not problems, (
        f"{stack}: a pod that misses a pool's taint or labels never runs there (no nvidia.com/gpu, no metrics, "
        "no Lustre mount, a smoke test that never finishes):\n" + "\n".join(problems)
    )


def test_spot_nodes_carry_the_aks_spot_taint_and_label(variant_recordings: dict[str, Recording]) -> None:
    (spot,) = [n for n in node_templates(variant_recordings["spot-only"]) if n.gpu]
    assert spot.spot and AKS_SPOT_TAINT in spot.taints, "AKS taints and labels every Spot node"
    assert "sku=gpu:NoSchedule" in spot.taints, "the GPU taint stays"
    no_gpu_pod = {"nodeSelector": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION]}
    assert not pod_fits_node(no_gpu_pod, spot.labels, spot.taints), "the guide's pod alone cannot use Spot GPUs"


def test_spot_only_platform_runs_its_gpu_agents_and_smoke_test_on_spot(
    variant_recordings: dict[str, Recording],
) -> None:
    """The defect this guards: Spot pools never advertised GPUs nor reported metrics, and the smoke test hung."""
    check = check_of("spot-only", variant_recordings["spot-only"])
    (spot,) = [n for n in check.user_nodes if n.gpu]
    agents = [p for p in check.pods if p.runs_on == "gpu"]
    assert len(agents) >= 4, "device plugin, DCGM exporter, smoke test and sample at least"
    for pod in agents:
        assert pod_fits_node(pod.spec, spot.labels, spot.taints), f"{pod.source} must run on the Spot GPU pool"


def test_the_check_fails_a_pod_that_misses_a_pool_taint(variant_recordings: dict[str, Recording]) -> None:
    check = check_of("spot-only", variant_recordings["spot-only"])
    plugin = next(p for p in check.pods if "device plugin" in p.source)
    only_gpu_taint = PodTemplate(plugin.source, {**plugin.spec, "tolerations": [GPU_TOLERATION]}, "gpu", daemon=True)
    broken = SchedulingCheck(check.nodes, [only_gpu_taint], check.infiniband_pools)
    problems = broken.problems()
    assert any("does not tolerate" in p and "scalesetpriority=spot" in p for p in problems), (
        f"the GPU taint alone must fail on a Spot pool: {problems}"
    )


def test_the_check_names_releases_it_cannot_read(dev_recording: Recording) -> None:
    release = copy.deepcopy(dev_recording.one(RELEASE, "device-plugin"))
    release.inputs["version"] = "0.99.0"
    recording = Recording(resources=[release])
    assert "no reader" in " ".join(scheduling_check(recording, set()).problems()), (
        "a chart version whose templates nobody read must fail the check, not pass it silently"
    )


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_plans_with_schema_valid_objects_and_no_policy_violation(
    variant_recordings: dict[str, Recording], variant: str, tmp_path: Path
) -> None:
    recording = variant_recordings[variant]
    cfg = platform_config(variant)
    verdicts = render_and_validate(recording, tmp_path, cfg.cluster.schema_version)
    assert verdicts, "the variant renders Kubernetes objects"
    invalid = [f"{v.kind} {v.name}: {v.detail}" for v in verdicts if v.status == "invalid"]
    assert not invalid, f"{variant}: the API server would reject these objects:\n" + "\n".join(invalid)
    mandatory = [
        f"{policy.name}: {v.resource}: {v.message}"
        for policy, vs in policy_verdicts(recording, cfg.environment)
        for v in vs
        if policy.mandatory
    ]
    assert not mandatory, f"{variant}: `make plan` would fail on:\n" + "\n".join(mandatory)


def test_variants_build_what_they_configure(variant_recordings: dict[str, Recording]) -> None:
    charts = {
        name: {r.inputs["chart"] for r in recording.of_type(RELEASE)} for name, recording in variant_recordings.items()
    }
    assert "network-operator" in charts["infiniband"], "an InfiniBand pool brings the Network Operator"
    assert "gpu-operator" in charts["gpu-operator-mig"] and "nvidia-device-plugin" not in charts["gpu-operator-mig"]
    assert "dcgm-exporter" not in charts["gpu-operator-mig"], "operatorDcgm: the operator runs the only exporter"
    assert any("azurelustre" in c for c in charts["spot-only"]), "the Spot variant mounts Lustre"
    mig_pool = next(
        p
        for p in variant_recordings["gpu-operator-mig"].of_type("azure-native:containerservice:AgentPool")
        if p.inputs.get("gpuInstanceProfile")
    )
    assert mig_pool.inputs["gpuInstanceProfile"] == "MIG3g" and mig_pool.inputs["gpuProfile"] == {"driver": "None"}
    operator = variant_recordings["gpu-operator-mig"].one(RELEASE, "gpu-operator").inputs["values"]
    assert operator["mig"]["strategy"] == "single", "MIG slices are advertised as nvidia.com/gpu"


def test_a_queued_training_job_is_admitted_onto_spot_gpus(variant_recordings: dict[str, Recording]) -> None:
    """The example JobSet goes through the team's queue; Kueue injects the Spot pool's flavor: it must schedule."""
    platform = variant_recordings["spot-only"]
    (spot,) = [n for n in node_templates(platform) if n.gpu]
    assert spot.spot, "the variant's only GPU pool runs on Spot VMs"
    teams = platform.stack_outputs["trainingTeams"]
    assert teams, "dev has a training team"
    team = next(iter(teams))
    outputs = {"kubeconfig": example_job.KUBECONFIG, "trainingTeams": teams}
    example = example_job.run_example(outputs, team=team, nodes=1)
    pod, count = example_job.the_pod_set(example)
    meta = example_job.jobset(example)["metadata"]
    flavor = example_job.admit(platform, meta["labels"]["kueue.x-k8s.io/queue-name"], meta["namespace"], pod, count)
    assert flavor is not None, "the team's quota on the Spot pool admits a one-node job"
    admitted = example_job.admitted_pod(platform, pod, flavor)
    assert pod_fits_node(admitted, spot.labels, spot.taints), "the training ranks must land on the platform's Spot GPUs"


# ---------------------------------------------------------------- scale from zero

# Pods each stack must be able to bring a GPU node up for, from zero: the contract is only as good as what it sees.
EXPECTED_SCALE_UP_PODS: dict[str, set[str]] = {
    "dev": {"gpu-smoke-test-job", "inference-sample-deployment", "flavor-gput4"},
    "prod": {"gpu-smoke-test-job", "flavor-gpua100", "flavor-h100z1", "flavor-h100z2", "flavor-h100z3"},
    "spot-only": {"gpu-smoke-test-job", "flavor-gput4"},
    "infiniband": {"gpu-smoke-test-job", "dcgm-diag-h100ib", "nccl-h100ib", "flavor-h100ib"},
    "gpu-operator-mig": {"gpu-smoke-test-job", "flavor-a100mig"},
    "grace-blackwell": {"flavor-gb200"},
    "shared-gpus": {"gpu-smoke-test-job", "flavor-gput4", "flavor-a100mps"},
}


def infiniband_pools(stack: str) -> set[str]:
    return {p.name for p in platform_config(stack).gpu_pools if p.infiniband}


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_at_zero_scales_up_for_the_pods_that_need_it(stacks: dict[str, Recording], stack: str) -> None:
    """The cluster autoscaler adds a node to a pool at zero only if the pending pod fits the pool's template
    (SKU resources, labels, taints, resource tags): the smoke test, the validation Jobs, the inference sample and
    every rank Kueue admits on a flavor must fit, extended resources included."""
    recording = stacks[stack]
    zero = zero_node_templates(recording)
    gpu_pools = platform_config(stack).gpu_pools
    assert len(zero) == sum(p.min_count == 0 for p in gpu_pools), "every GPU pool with minCount 0 has a template"
    sources = [pod.source for pod in pods_that_bring_up_nodes(recording, infiniband_pools(stack))]
    missing = [p for p in EXPECTED_SCALE_UP_PODS[stack] if not any(p in source for source in sources)]
    assert not missing, f"{stack}: the contract must see {missing} (saw {sources})"
    problems = scale_from_zero_problems(recording, infiniband_pools(stack))
    assert not problems, (
        f"{stack}: these pods stay Pending forever (a ProvisioningRequest never succeeds, a Job hits its deadline):\n"
        + "\n".join(problems)
    )


def _with_rdma_name(recording: Recording, resource: str) -> Recording:
    """The infiniband variant as it would be with another RDMA resource name: the plugin advertises it, the
    validation Jobs request it and the IB pool's resource tag is written the only way a tag can name it."""
    old_prefix, old_name = next(iter(advertised_rdma_resources(recording))).split("/")
    prefix, name = resource.split("/")
    tag_prefix = "k8s.io_cluster-autoscaler_node-template_resources_"
    changed: list[RecordedResource] = []
    for original in recording.resources:
        r = copy.deepcopy(original)
        if r.type == AGENT_POOL and r.inputs.get("tags"):
            r.inputs["tags"] = {
                (f"{tag_prefix}{prefix}_{name}" if k == f"{tag_prefix}{old_prefix}_{old_name}" else k): v
                for k, v in r.inputs["tags"].items()
            }
        elif r.type == NIC_CLUSTER_POLICY:
            plugin = r.inputs["spec"]["rdmaSharedDevicePlugin"]
            config = plugin["config"].replace(f'"{old_name}"', f'"{name}"').replace(f'"{old_prefix}"', f'"{prefix}"')
            plugin["config"] = config
        elif r.type == "kubernetes:batch/v1:Job":
            for container in r.inputs["spec"]["template"]["spec"]["containers"]:
                for bound in container.get("resources", {}).values():
                    if f"{old_prefix}/{old_name}" in bound:
                        bound[resource] = bound.pop(f"{old_prefix}/{old_name}")
        changed.append(r)
    return Recording(resources=changed)


def test_the_contract_fails_the_old_rdma_name_no_tag_can_express(variant_recordings: dict[str, Recording]) -> None:
    """The defect: `rdma/shared_ib` is written `..._rdma_shared_ib` and read back as `rdma/shared/ib`, so the IB
    pool's template never offers what the NCCL Job and the admitted ranks request, and the pool stays at zero."""
    old = _with_rdma_name(variant_recordings["infiniband"], "rdma/shared_ib")
    (ib_pool,) = [p for p in old.of_type(AGENT_POOL) if (p.inputs.get("nodeLabels") or {}).get("gpu-pool") == "h100ib"]
    assert "rdma/shared/ib" in template_node(ib_pool.inputs).allocatable, "the autoscaler reads every `_` as `/`"
    problems = scale_from_zero_problems(old, {"h100ib"})
    for pod in ("nccl-h100ib", "flavor-h100ib"):
        assert any(pod in p and "lacks rdma/shared_ib" in p for p in problems), (
            f"the contract must fail {pod} on the old name: {problems}"
        )


def test_the_contract_fails_an_infiniband_pool_without_its_resource_tag(
    variant_recordings: dict[str, Recording],
) -> None:
    recording = variant_recordings["infiniband"]
    untagged: list[RecordedResource] = []
    for original in recording.resources:
        r = copy.deepcopy(original)
        if r.type == AGENT_POOL:
            r.inputs["tags"] = {k: v for k, v in (r.inputs.get("tags") or {}).items() if "node-template" not in k}
        untagged.append(r)
    problems = scale_from_zero_problems(Recording(resources=untagged), {"h100ib"})
    assert any("nccl-h100ib" in p and "lacks rdma/ib" in p for p in problems), (
        f"the SKU alone never offers the RDMA device: {problems}"
    )


@pytest.mark.parametrize("stack", ["prod", "infiniband"])
def test_the_rdma_resource_is_one_name_the_plugin_accepts_and_a_tag_can_carry(
    stacks: dict[str, Recording], stack: str
) -> None:
    recording = stacks[stack]
    advertised = advertised_rdma_resources(recording)
    assert len(advertised) == 1, f"one RDMA resource, named in one place: {advertised}"
    (resource,) = advertised
    # Mellanox/k8s-rdma-shared-dev-plugin network-operator-v26.4.0-beta.6 (410b0f32, the newest tag of the 26.4
    # line; 26.4.1 ships its image), pkg/resources/resources_manager.go validResourceName.
    assert re.fullmatch(r"[a-zA-Z0-9_]+", resource.split("/")[1]), "the plugin refuses any other resource name"
    ib_pools = [p for p in recording.of_type(AGENT_POOL) if p.inputs["vmSize"].startswith("Standard_ND")]
    assert ib_pools and all(resource in resources_from_tags(p.inputs["tags"]) for p in ib_pools), (
        "every InfiniBand pool's tags must give its template the resource the plugin advertises"
    )
    requested = {
        name
        for pod in pods_that_bring_up_nodes(recording, infiniband_pools(stack))
        for name in pod_requests(pod.spec)
        if name.startswith("rdma/")
    }
    assert requested <= advertised, f"pods request {requested}, the plugin advertises only {advertised}"


def test_the_training_example_brings_up_an_infiniband_node_from_zero(prod_recording: Recording) -> None:
    """The example as its README runs it (Pulumi.dev.yaml: two nodes, 8 GPUs and the RDMA device each) is admitted
    on an H100 flavor; the autoscaler must then see that a node from zero fits each rank."""
    settings = yaml.safe_load((REPO_ROOT / "examples" / "training-job" / "Pulumi.dev.yaml").read_text())["config"]
    example_settings = {k.removeprefix("training-job:"): v for k, v in settings.items() if k != "training-job:team"}
    example_settings.pop("platformStack")
    outputs = {"kubeconfig": example_job.KUBECONFIG, "trainingTeams": prod_recording.stack_outputs["trainingTeams"]}
    example = example_job.run_example(outputs, **example_settings)
    pod, count = example_job.the_pod_set(example)
    assert "rdma/ib" in pod["spec"]["containers"][0]["resources"]["requests"], "ranks use the InfiniBand fabric"
    meta = example_job.jobset(example)["metadata"]
    flavor = example_job.admit(
        prod_recording, meta["labels"]["kueue.x-k8s.io/queue-name"], meta["namespace"], pod, count
    )
    assert flavor is not None and flavor.startswith("h100"), f"admitted on an H100 pool, got {flavor}"
    admitted = example_job.admitted_pod(prod_recording, pod, flavor)
    (node,) = [n for n in zero_node_templates(prod_recording) if n.labels.get("gpu-pool") == flavor]
    assert not why_not_template(admitted, node), (
        f"a rank must fit the {flavor} template: {why_not_template(admitted, node)}"
    )


def test_template_reads_resource_tags_the_autoscaler_way() -> None:
    tags = {
        "k8s.io_cluster-autoscaler_node-template_resources_rdma_ib": "63",
        "k8s.io_cluster-autoscaler_node-template_resources_nvidia.com_gpu": "2",
        "k8s.io_cluster-autoscaler_node-template_resources_example.com~2dev": "1",
        "environment": "prod",
    }
    found = resources_from_tags(tags)
    assert found == {"rdma/ib": 63, "nvidia.com/gpu": 2, "example.com/dev": 1}, "`_` and `~2` both read as `/`"
    pool = {
        "agentPoolName": "a100",
        "vmSize": "Standard_NC24ads_A100_v4",
        "tags": tags,
        "nodeTaints": ["a=b:NoSchedule"],
    }
    node = template_node(pool)
    assert node.allocatable["nvidia.com/gpu"] == 2, "a tag overrides the SKU's GPU count (MIG slices)"
    assert node.allocatable["cpu"] == 24 and node.allocatable["memory"] == 225280 * 2**20, "SKU facts of the list"
    assert node.taints == ("a=b:NoSchedule",) and node.labels["kubernetes.azure.com/agentpool"] == "a100"


def test_requests_against_allocatable() -> None:
    assert parse_quantity("500m") == parse_quantity("0.5") and parse_quantity("64Gi") == 64 * 2**30
    spec = {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "8"}}},
            {"name": "b", "resources": {"requests": {"cpu": "2"}}},
        ],
    }
    assert pod_requests(spec) == {"cpu": 4, "memory": 2**30, "nvidia.com/gpu": 8}, "init max, limits as requests"
    node = {"cpu": parse_quantity("96"), "memory": parse_quantity("1Ti"), "nvidia.com/gpu": parse_quantity("8")}
    assert not unmet_requests(spec, node)
    assert unmet_requests(spec, {**node, "nvidia.com/gpu": parse_quantity("1")}) == [
        "nvidia.com/gpu (wants 8, node has 1)"
    ]
    with_rdma = {**spec, "containers": [{"name": "r", "resources": {"limits": {"rdma/ib": "1"}}}]}
    assert unmet_requests(with_rdma, node) == ["rdma/ib (wants 1, node has 0)"], "a resource the node lacks"


# ---------------------------------------------------------------- the scheduler model itself

GPU_NODE = {"pool": "gpu", "gpu-pool": "gpua100"}


def test_node_selector_and_taints() -> None:
    pod = {"nodeSelector": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION]}
    assert pod_fits_node(pod, GPU_NODE, ["sku=gpu:NoSchedule"])
    assert not pod_fits_node(pod, {"pool": "cpu"}, []), "the selector must match"
    assert not pod_fits_node(pod, GPU_NODE, ["sku=gpu:NoSchedule", AKS_SPOT_TAINT]), "Spot needs its own toleration"
    spot_ok = {
        **pod,
        "tolerations": [GPU_TOLERATION, {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Exists"}],
    }
    assert pod_fits_node(spot_ok, GPU_NODE, ["sku=gpu:NoSchedule", AKS_SPOT_TAINT]), "Exists without effect matches"
    assert pod_fits_node(pod, GPU_NODE, ["sku=gpu:NoSchedule", "soft=yes:PreferNoSchedule"]), "preferences don't block"
    assert not pod_fits_node(pod, GPU_NODE, ["sku=gpu:NoSchedule", "evict=now:NoExecute"]), "NoExecute blocks"
    wrong_value = {"tolerations": [{**GPU_TOLERATION, "value": "cpu"}]}
    assert not pod_fits_node(wrong_value, GPU_NODE, ["sku=gpu:NoSchedule"])
    wrong_effect = {"tolerations": [{**GPU_TOLERATION, "effect": "NoExecute"}]}
    assert not pod_fits_node(wrong_effect, GPU_NODE, ["sku=gpu:NoSchedule"])
    assert pod_fits_node({"tolerations": [{"operator": "Exists"}]}, GPU_NODE, ["a=b:NoSchedule", "c=:NoExecute"]), (
        "an empty key with Exists tolerates everything"
    )
    empty_value = {"tolerations": [{"key": "c", "operator": "Equal", "value": "", "effect": "NoExecute"}]}
    assert pod_fits_node(empty_value, GPU_NODE, ["c=:NoExecute"])


def _required(*expressions: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchExpressions": list(expressions)}]
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    }


def test_required_node_affinity_operators() -> None:
    fits = lambda pod: pod_fits_node(pod, GPU_NODE, [])  # noqa: E731
    assert fits(_required({"key": "pool", "operator": "In", "values": ["gpu", "x"]}))
    assert not fits(_required({"key": "pool", "operator": "In", "values": ["cpu"]}))
    assert not fits(_required({"key": "missing", "operator": "In", "values": ["gpu"]}))
    assert fits(_required({"key": "pool", "operator": "NotIn", "values": ["cpu"]}))
    assert fits(_required({"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]})), (
        "absent key passes NotIn"
    )
    assert not fits(_required({"key": "pool", "operator": "NotIn", "values": ["gpu"]}))
    assert fits(_required({"key": "gpu-pool", "operator": "Exists"}))
    assert not fits(_required({"key": "missing", "operator": "Exists"}))
    assert fits(_required({"key": "missing", "operator": "DoesNotExist"}))
    both = _required(
        {"key": "pool", "operator": "In", "values": ["gpu"]}, {"key": "gpu-pool", "operator": "In", "values": ["h100"]}
    )
    assert not fits(both), "expressions of one term are ANDed"
    either = copy.deepcopy(both)
    terms = either["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    terms.append({"matchExpressions": [{"key": "pool", "operator": "Exists"}]})
    assert fits(either), "terms are ORed"
    no_terms = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    }
    assert not fits(no_terms), "no term selects no node"
    preferred = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}}
    assert fits(preferred), "preferences never filter"


def test_requirements_the_api_server_refuses_select_no_node_and_numbers_compare_as_numbers() -> None:
    node = {**GPU_NODE, "gpus": "8"}
    fits = lambda pod: pod_fits_node(pod, node, [])  # noqa: E731
    assert fits(_required({"key": "gpus", "operator": "Gt", "values": ["4"]}))
    assert fits(_required({"key": "gpus", "operator": "Lt", "values": ["10"]})), "8 < 10 as numbers (not as text)"
    assert not fits(_required({"key": "gpus", "operator": "Gt", "values": ["10"]})), "8 is not above 10, as numbers"
    assert not fits(_required({"key": "pool", "operator": "Gt", "values": ["4"]})), "a label that is no integer"
    assert not fits(_required({"key": "gpus", "operator": "Gt", "values": ["4", "5"]})), "Gt takes exactly one value"
    assert not fits(_required({"key": "pool", "operator": "In", "values": []})), "In without values is refused"
    assert not fits(_required({"key": "pool", "operator": "Exists", "values": ["gpu"]})), "Exists takes no values"
    by_name = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                    ]
                }
            }
        }
    }
    with pytest.raises(ValueError, match="matchFields"):
        fits(by_name)
    newer = {"tolerations": [{"key": "gen", "operator": "Gt", "value": "3", "effect": "NoSchedule"}]}
    assert pod_fits_node(newer, node, ["gen=4:NoSchedule"]), "Gt tolerates a taint whose value is above its own"
    assert not pod_fits_node(newer, node, ["gen=3:NoSchedule"]) and not pod_fits_node(newer, node, ["gen=x:NoSchedule"])


def test_node_template_follows_aks_not_the_pool_request() -> None:
    """AKS adds the Spot taint and label itself: a pool whose nodeTaints omit it still gets it."""
    requested = {
        "agentPoolName": "spotab12",
        "vmSize": "Standard_NC24ads_A100_v4",
        "mode": "User",
        "osType": "Linux",
        "scaleSetPriority": "Spot",
        "nodeLabels": {"pool": "gpu"},
        "nodeTaints": ["sku=gpu:NoSchedule"],
    }
    node: NodeTemplate = node_template(requested)
    assert node.taints == ("sku=gpu:NoSchedule", AKS_SPOT_TAINT) and node.spot and node.gpu
    assert node.labels["kubernetes.azure.com/agentpool"] == "spotab12" and node.labels["pool"] == "gpu"
    regular = node_template({**requested, "scaleSetPriority": None, "vmSize": "Standard_D8ds_v5"})
    assert not regular.spot and not regular.gpu and regular.taints == ("sku=gpu:NoSchedule",)
