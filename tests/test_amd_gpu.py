"""AMD MI300X pools: a dev variant with one next to the T4 pool, checked against the scheduling, scale-from-zero,
release and metrics models; and the NVIDIA-only features refused on AMD pools by name."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components import metrics_labels as labels
from aks_gpu_platform.components.amd_gpu import EXPORTER_PORT, EXPORTER_PORT_NAME
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.autoscaler_template import scale_from_zero_problems, zero_node_templates
from tests.conftest import assert_rejected, set_path, settings_of
from tests.promql_model import Evaluator
from tests.release_contract import release_problems
from tests.scheduling import AGENT_POOL, RELEASE, scheduling_check
from tests.scrape_model import Container, Pod, Port, pod_monitor_scrape_configs, scrape, targets
from tools import REPO_ROOT, plan
from tools.offline import run_stack
from tools.plan import docker_hub_warnings

MI300X = {"name": "mi300x", "vmSize": "Standard_ND96isr_MI300X_v5", "zones": ["1"], "infiniband": True}
AMD_CHART = "gpu-operator-charts"
POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def amd_variant() -> dict[str, Any]:
    config = load_stack_file("dev", REPO_ROOT)
    pools = config["aks-gpu-platform:gpuPools"]
    config["aks-gpu-platform:gpuPools"] = [*pools, {**MI300X, "minCount": 0, "maxCount": 2}]
    training = config["aks-gpu-platform:training"]
    team = training["teams"][0]
    team["quotas"] = [*team["quotas"], {"pool": "mi300x", "gpus": 8}]
    return config


@pytest.fixture(scope="module")
def amd() -> Recording:
    return run_stack("dev", config=amd_variant())


def _amd_pool(recording: Recording) -> dict[str, Any]:
    return next(
        p.inputs
        for p in recording.of_type(AGENT_POOL)
        if (p.inputs.get("nodeLabels") or {}).get("gpu-pool") == "mi300x"
    )


def test_amd_pool_skips_the_aks_driver_and_carries_the_operators_label(amd: Recording) -> None:
    pool = _amd_pool(amd)
    assert pool["gpuProfile"]["driver"] == "None", "AKS requires gpuProfile.driver None on AMD sizes"
    assert pool["nodeLabels"].get("gpu-vendor") == "amd", "AMD's operator selects the pool's nodes by this label"


def test_amd_variant_schedules_every_pod_and_keeps_nvidia_agents_off_amd_nodes(amd: Recording) -> None:
    problems = scheduling_check(amd, {"mi300x"}).problems()
    assert not problems, "every pod fits where it must run, no NVIDIA agent lands on AMD GPUs:\n" + "\n".join(problems)


def test_amd_pool_scales_from_zero_for_amd_ranks_and_not_for_nvidia_pods(amd: Recording) -> None:
    problems = scale_from_zero_problems(amd, {"mi300x"})
    assert not problems, "a pending AMD rank must make the autoscaler add an MI300X node:\n" + "\n".join(problems)
    node = next(n for n in zero_node_templates(amd) if n.labels.get("gpu-pool") == "mi300x")
    assert node.allocatable.get("amd.com/gpu") == 8, "the template node offers the 8 MI300X as amd.com/gpu"
    assert node.allocatable.get("nvidia.com/gpu") == 0, (
        "the autoscaler's template counts every size's GPUs as nvidia.com/gpu; left at 8, a pending NVIDIA pod "
        "would scale up an MI300X node it can never use"
    )


def test_amd_operator_release_can_finish_and_the_plan_names_its_docker_hub_images(amd: Recording) -> None:
    plan = "\n".join(docker_hub_warnings(amd))
    problems = release_problems(amd, plan)
    assert not problems, "the AMD operator release must finish and its anonymous pulls be named:\n" + "\n".join(
        problems
    )
    release = next(r for r in amd.of_type(RELEASE) if r.inputs["chart"] == AMD_CHART)
    assert "latest" not in str(release.inputs["values"]), "every AMD operand runs at a release tag, never latest"


def test_team_quota_on_an_amd_pool_meters_amd_gpus(amd: Recording) -> None:
    queue = next(iter(amd.of_type(CLUSTER_QUEUE)))
    group = queue.inputs["spec"]["resourceGroups"][0]
    assert {"nvidia.com/gpu", "amd.com/gpu"} <= set(group["coveredResources"]), (
        "with quotaCheckStrategy IgnoreUndeclared, an undeclared amd.com/gpu would be admitted without quota"
    )
    flavors = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert flavors["mi300x"]["amd.com/gpu"] == 8 and flavors["mi300x"]["nvidia.com/gpu"] == 0, flavors
    for flavor in group["flavors"]:
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"], (
            "Kueue wants every flavor to list the covered resources in order"
        )


# The AMD exporter's /metrics for two GPUs, one held by a training pod, in the names and labels of
# ROCm/device-metrics-exporter v1.5.1 (pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go; labels lower-cased enum names).
HELD = {"namespace": "team-ml", "pod": "llm-0", "container": "trainer"}
FREE = {"namespace": "", "pod": "", "container": ""}


def _amd_sample(metric: str, gpu: str, holder: dict[str, str], value: float) -> str:
    gpu_labels = {"card_model": "MI300X", "gpu_id": gpu, "hostname": "aks-mi300x-0", "serial_number": f"S{gpu}"}
    body = ",".join(f'{k}="{v}"' for k, v in sorted({**gpu_labels, **holder}.items()))
    return f"{metric}{{{body}}} {value}"


AMD_EXPOSITION = "\n".join(
    [
        _amd_sample("gpu_gfx_activity", "0", HELD, 87),
        _amd_sample("gpu_gfx_activity", "1", FREE, 0),
        _amd_sample("gpu_used_vram", "0", HELD, 150000),
        _amd_sample("gpu_free_vram", "0", HELD, 46000),
    ]
)


def test_amd_utilisation_and_memory_reach_the_dashboard_queries(amd: Recording) -> None:
    monitor = next(m for m in amd.of_type(POD_MONITOR) if m.inputs["metadata"]["name"] == "amd-device-metrics-exporter")
    (config,) = pod_monitor_scrape_configs(monitor.inputs)
    # The operator's exporter pod (internal/metricsexporter/metricsexporter.go at v1.5.1).
    pod = Pod(
        namespace="kube-amd-gpu",
        name="default-metrics-exporter-abcde",
        labels={"daemonset-name": "default", "app.kubernetes.io/name": "metrics-exporter"},
        node="aks-mi300x-0",
        ip="10.0.0.9",
        containers=(Container("metrics-exporter-container", (Port(EXPORTER_PORT_NAME, EXPORTER_PORT),)),),
    )
    (target,) = targets(config, [pod])
    world = scrape(target, config, AMD_EXPOSITION, {"cluster": "aks"}).series
    evaluator = Evaluator(world)
    held = f'DCGM_FI_DEV_GPU_UTIL{{{labels.WORKLOAD_POD}!=""}}'
    per_pod = evaluator.vector(f"avg by ({labels.WORKLOAD_NAMESPACE}, {labels.WORKLOAD_POD}) ({held})")
    assert [(s.labels, s.value) for s in per_pod] == [
        ({labels.WORKLOAD_NAMESPACE: "team-ml", labels.WORKLOAD_POD: "llm-0"}, 87.0)
    ], "per-workload utilisation (dashboards, KEDA, idle alert) names the pod holding the AMD GPU"
    memory = evaluator.vector("DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) * 100")
    assert len(memory) == 1 and round(memory[0].value) == 77, "memory panels and alert read AMD VRAM in use"
    gpus = evaluator.vector(f"count by ({labels.NODE}) (DCGM_FI_DEV_GPU_UTIL)")
    assert [(s.labels, s.value) for s in gpus] == [({labels.NODE: "aks-mi300x-0"}, 2.0)], (
        "GPU counts per node use the contract's node label, also for AMD GPUs"
    )


# ---------------------------------------------------------------- NVIDIA-only features refused by name


def _settings() -> dict[str, Any]:
    return settings_of(amd_variant())


@pytest.mark.parametrize(
    ("path", "value", "field", "hint"),
    [
        ("gpuPools.1.migProfile", "MIG1g", "gpuPools[1].migProfile", "MIG is NVIDIA's"),
        ("gpuPools.1.validation.dcgmDiag", True, "gpuPools[1].validation.dcgmDiag", "DCGM"),
        ("gpuPools.1.validation.ncclAllReduce", True, "gpuPools[1].validation.ncclAllReduce", "nccl-tests"),
        ("gpuPools.1.sharing", {"mode": "timeSlicing", "replicas": 2}, "gpuPools[1].sharing", "NVIDIA device plugin"),
        ("gpuStack.mode", "aksManaged", "gpuStack.mode", "AKS installs nothing on AMD sizes"),
        ("gpuHealth.remediation.enabled", True, "gpuHealth.remediation.enabled", "NVSentinel"),
    ],
)
def test_nvidia_only_feature_on_an_amd_pool_is_refused_by_name(path: str, value: Any, field: str, hint: str) -> None:
    settings = _settings()
    set_path(settings, path, value)
    assert_rejected(settings, "an NVIDIA-only feature cannot work on AMD GPUs", field, hint)


def test_nvidia_smoke_test_is_refused_when_no_pool_has_nvidia_gpus() -> None:
    settings = _settings()
    settings["gpuPools"] = [settings["gpuPools"][1]]
    settings["training"]["teams"][0]["quotas"] = [{"pool": "mi300x", "gpus": 8}]
    assert_rejected(settings, "nvidia-smi on nvidia.com/gpu never schedules", "gpuStack.smokeTest", "nvidia-smi")


def test_the_plan_warns_that_no_amd_driver_is_installed(tmp_path: Path) -> None:
    # AKS installs no AMD driver (use-amd-gpus.md) and the operator's driver build is off: the plan must not read
    # as if an MI300X pool will advertise GPUs on its own.
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump({"config": amd_variant()}))
    out = io.StringIO()
    with redirect_stdout(out):
        status = plan.main(["--stack", "dev", "--config-file", str(stack_file), "--out", str(tmp_path / "out")])
    text = " ".join(out.getvalue().split())
    assert status == 0 and "AKS installs no AMD driver" in text and "driver.enable false" in text, text[:3000]
