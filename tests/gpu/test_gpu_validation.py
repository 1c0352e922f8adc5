"""Post-provision validation: the DCGM diagnostic and two-node NCCL Jobs render, pass the Kubernetes schema, land on
the pool they check (its taints tolerated, whole nodes' GPUs requested) and fail `pulumi up` with their verdict.

Upstream facts spelled out here:
- pulumi-kubernetes awaits a batch/v1 Job until condition Complete and fails on Failed; `pulumi.com/replaceUnready`
  replaces an unready (failed) Job on the next update (pulumi/pulumi-kubernetes provider/pkg/await/job.go,
  provider/pkg/provider/provider.go, snapshot 2026-07-01).
- An Indexed Job's pods get the hostname `<job>-<index>` and, with `subdomain`, the DNS name
  `<job>-<index>.<subdomain>` through a headless Service of that name; the Job controller labels its pods
  `job-name=<job>` (kubernetes.io/docs/concepts/workloads/controllers/job, "Completion mode").
- nccl-tests' all-reduce bus bandwidth is algbw x 2(n-1)/n (NVIDIA/nccl-tests doc/PERFORMANCE.md).
"""

from __future__ import annotations

import copy
import json
import py_compile
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.components.gpu.nccl_probe import bus_bandwidth_gbps, verdict
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, cluster_handle, settings_of
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import node_templates, scheduling_check
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
JOB = "kubernetes:batch/v1:Job"
SERVICE = "kubernetes:core/v1:Service"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
GIB = 1 << 30


def validated_config() -> dict[str, Any]:
    """prod with DCGM diagnostics on the A100 pool and on one H100 InfiniBand pool, and NCCL on that pool."""
    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    pools = config[PREFIX + "gpuPools"]
    pools[0]["validation"] = {"dcgmDiag": True}
    pools[1]["validation"] = {"dcgmDiag": True, "ncclAllReduce": True}
    return config


@pytest.fixture(scope="module")
def validated() -> Recording:
    return run_stack("prod", validated_config())


def _jobs(recording: Recording, kind: str) -> list[Any]:
    jobs = [j for j in recording.of_type(JOB) if j.inputs["metadata"]["name"].startswith(kind)]
    assert jobs, f"the stack renders {kind} Jobs"
    return jobs


def _pool_nodes(recording: Recording, pool: str) -> tuple[Any, list[Any]]:
    nodes = [n for n in node_templates(recording) if n.gpu]
    (mine,) = [n for n in nodes if n.labels.get("gpu-pool") == pool]
    return mine, [n for n in nodes if n is not mine]


def test_dcgm_diag_holds_every_gpu_of_one_node_of_its_pool(validated: Recording) -> None:
    jobs = {j.inputs["metadata"]["labels"]["gpu-pool"]: j for j in _jobs(validated, "dcgm-diag")}
    assert set(jobs) == {"gpua100", "h100z1"}, "one diagnostic per pool that asks for it, none elsewhere"
    for pool, job in jobs.items():
        spec = job.inputs["spec"]
        pod = spec["template"]["spec"]
        mine, others = _pool_nodes(validated, pool)
        assert pod_fits_node(pod, mine.labels, mine.taints), f"the diagnostic must land on {pool}"
        assert not any(pod_fits_node(pod, n.labels, n.taints) for n in others), "and only there"
        (container,) = pod["containers"]
        gpus = GPU_SKUS[mine.labels["node.kubernetes.io/instance-type"]].gpus_per_vm
        assert container["resources"]["limits"]["nvidia.com/gpu"] == str(gpus), (
            "all GPUs of the node: the diagnostic checks every GPU and nothing else runs there meanwhile"
        )
        assert "dcgmi diag -r 1" in container["command"][-1], "level 1: the quick deployment checks"
        assert "/dev/termination-log" in container["command"][-1], "the verdict is what `pulumi up` prints"
        assert spec["backoffLimit"] == 0 and pod["restartPolicy"] == "Never", "a failed check fails once, visibly"
        assert "pulumi.com/skipAwait" not in job.inputs["metadata"]["annotations"], "pulumi must wait for it"
        assert job.inputs["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true", "a failure re-runs"


def test_nccl_runs_across_two_nodes_with_rdma_and_the_sizes_floor(validated: Recording) -> None:
    (job,) = _jobs(validated, "nccl")
    name = job.inputs["metadata"]["name"]
    spec = job.inputs["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 2
    pod = spec["template"]["spec"]
    (anti,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname", "two pods on one node would not cross the fabric"
    assert anti["labelSelector"]["matchLabels"] == {"job-name": name}, "the label the Job controller sets"
    (service,) = [s for s in validated.of_type(SERVICE) if s.inputs["metadata"]["name"] == pod["subdomain"]]
    assert service.inputs["spec"]["clusterIP"] == "None", "a headless Service gives pod 0 its DNS name"
    assert service.inputs["spec"]["selector"] == {"job-name": name}
    (container,) = pod["containers"]
    assert f"--master-addr={name}-0.{pod['subdomain']}" in container["command"][-1], "rendezvous at pod 0"
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "8" and limits["rdma/ib"] == "1", "every GPU and the IB devices"
    assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"], "RDMA pins memory"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert float(env["MIN_BUS_BANDWIDTH_GBPS"]) == 300.0, "ND H100 v5: below 300 GB/s Azure asks for a health report"
    assert int(env["MESSAGE_BYTES"]) == 16 * GIB, "the message size the baseline was measured at"
    mine, others = _pool_nodes(validated, "h100z1")
    assert pod_fits_node(pod, mine.labels, mine.taints) and not any(
        pod_fits_node(pod, n.labels, n.taints) for n in others
    ), "both pods land on the InfiniBand pool under test"
    (probe,) = [c for c in validated.of_type(CONFIG_MAP) if c.inputs["metadata"]["name"] == name]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["probe"]["configMap"]["name"] == name
    assert "def bus_bandwidth_gbps" in probe.inputs["data"]["nccl_probe.py"]
    assert {probe.urn, service.urn} <= set(job.depends_on), "the script and the DNS name exist before the pods"


def test_pod_zero_has_its_dns_name_before_it_is_ready(validated: Recording) -> None:
    # Kubernetes v1.33: an Indexed Job's pod gets the hostname `<job>-<index>` and the labels `job-name` and
    # `batch.kubernetes.io/job-name` (website content/en/docs/concepts/workloads/controllers/job.md, "Completion
    # mode"); `<hostname>.<subdomain>` resolves only through a headless Service named `<subdomain>` in the pod's
    # namespace that selects it (content/en/docs/concepts/services-networking/dns-pod-service.md), and only while the
    # pod is among the Service's endpoints: a not-ready pod is left out unless `publishNotReadyAddresses` is true
    # (staging/src/k8s.io/api/core/v1/types.go ServiceSpec.PublishNotReadyAddresses).
    (job,) = _jobs(validated, "nccl")
    name, namespace = job.inputs["metadata"]["name"], job.inputs["metadata"]["namespace"]
    pod = job.inputs["spec"]["template"]
    controller_labels = {"job-name": name, "batch.kubernetes.io/job-name": name, **pod["metadata"]["labels"]}
    (service,) = [s for s in validated.of_type(SERVICE) if s.inputs["metadata"]["name"] == pod["spec"]["subdomain"]]
    spec = service.inputs["spec"]
    assert service.inputs["metadata"]["namespace"] == namespace, "the DNS name exists only in the pods' namespace"
    assert spec["clusterIP"] == "None", "only a headless Service gives each pod its own DNS name"
    assert spec.get("publishNotReadyAddresses") is True, (
        "torchrun on pod 1 resolves pod 0 while pod 0 is still starting; without publishNotReadyAddresses the name "
        "does not exist yet and the rendezvous fails the check on a healthy fabric"
    )
    assert spec["selector"].items() <= controller_labels.items(), "the Service must select the Job's pods"
    assert job.inputs["spec"]["completionMode"] == "Indexed", "only Indexed Jobs give pods the `<job>-<index>` name"
    (container,) = pod["spec"]["containers"]
    torchrun = container["command"][-1]
    assert f"--master-addr={name}-0.{pod['spec']['subdomain']} " in torchrun, "rendezvous at pod 0's DNS name"
    port = re.search(r"--master-port=(\d+)", torchrun)
    assert port and int(port[1]) in [p["port"] for p in spec["ports"]], "the Service names the rendezvous port"


def test_validation_jobs_pass_the_schema_and_the_scheduling_check(validated: Recording) -> None:
    jobs = [j for j in validated.of_type(JOB) if j.inputs["metadata"]["namespace"] == "gpu-validation"]
    assert len(jobs) == 3
    for job in jobs:
        assert validate_object(kubernetes_object(job), "1.33.0") == ("valid", ""), job.name
    check = scheduling_check(validated, ["h100z1", "h100z2", "h100z3"])
    assert any("nccl" in p.source for p in check.pods)
    assert not check.problems(), "\n".join(check.problems())  # checkov scans them in test_checkov.py


def test_a_changed_pool_is_validated_again_and_an_unchanged_one_is_not(validated: Recording) -> None:
    config = validated_config()
    again = run_stack("prod", config)
    names = lambda r: sorted(j.inputs["metadata"]["name"] for j in r.of_type(JOB))  # noqa: E731
    assert names(again) == names(validated), "an unchanged pool keeps its Jobs: no re-run on every `pulumi up`"
    config[PREFIX + "gpuPools"][1]["maxCount"] = 6
    changed = run_stack("prod", config)
    before = {n for n in names(validated) if "h100z1" in n}
    after = {n for n in names(changed) if "h100z1" in n}
    assert before and not before & after, "a changed pool gets new Job names: Pulumi replaces and re-runs them"
    assert {n for n in names(changed) if "gpua100" in n} == {n for n in names(validated) if "gpua100" in n}


def test_pulumi_waits_as_long_as_the_check_may_take(validated: Recording) -> None:
    cfg = load_platform_config(settings_of(validated_config()))
    for job in [j for j in validated.of_type(JOB) if j.inputs["metadata"]["namespace"] == "gpu-validation"]:
        assert job.inputs["spec"]["activeDeadlineSeconds"] == cfg.gpu_pools[0].validation.timeout_minutes * 60
    assert "gpuValidation" in validated.stack_outputs, "the outcome of each check is a stack output"
    assert set(validated.stack_outputs["gpuValidation"]) == {"gpua100", "h100z1"}


def test_the_probe_computes_nccls_bus_bandwidth_and_fails_below_the_floor() -> None:
    # 16 ranks, 16 GiB in 0.1 s: algbw 171.8 GB/s, busbw = algbw x 30/16.
    assert bus_bandwidth_gbps(16 * GIB, 0.1, 16) == pytest.approx(16 * GIB / 0.1 / 1e9 * 30 / 16)
    passed, line = verdict(280.0, 300.0, "h100z1", "Standard_ND96isr_H100_v5")
    assert not passed and line.startswith("FAIL") and "280.0 GB/s < 300.0 GB/s" in line
    assert verdict(450.0, 300.0, "h100z1", "Standard_ND96isr_H100_v5")[0]
    with pytest.raises(ValueError):
        bus_bandwidth_gbps(GIB, 0.0, 16)
    py_compile.compile(str(REPO_ROOT / "components" / "gpu" / "nccl_probe.py"), doraise=True)


def _settings() -> dict[str, Any]:
    return settings_of(validated_config())


def test_nccl_on_a_pool_without_infiniband_is_rejected() -> None:
    settings = _settings()
    settings["gpuPools"][0]["validation"] = {"ncclAllReduce": True}
    assert_rejected(settings, "NCCL across nodes needs IB", "gpuPools[0].validation.ncclAllReduce", "InfiniBand")


def test_nccl_on_a_one_node_pool_is_rejected() -> None:
    settings = _settings()
    settings["gpuPools"][1]["maxCount"] = 1
    settings["gpuPools"][1]["minCount"] = 0
    assert_rejected(settings, "two nodes needed", "gpuPools[1].validation.ncclAllReduce", "two nodes")


def test_dcgm_diagnostics_on_mig_slices_are_rejected(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings()
    settings["gpuPools"][0]["migProfile"] = "MIG3g"
    settings["training"]["teams"] = []
    assert_rejected(settings, "DCGM diag needs whole GPUs", "gpuPools[0].validation.dcgmDiag", "whole GPUs")


def test_the_component_built_directly_checks_only_the_pools_that_ask(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:
    from aks_gpu_platform.components.gpu.validation import GpuValidation
    from aks_gpu_platform.config.gpu.section import GpuPoolConfig

    pools = [
        GpuPoolConfig.model_validate(
            {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "zones": ["1"], "minCount": 0, "maxCount": 1}
            | {"priority": "Spot", "validation": {"dcgmDiag": True, "timeoutMinutes": 20}}
        ),
        GpuPoolConfig.model_validate({"name": "a10", "vmSize": "Standard_NV36ads_A10_v5", "maxCount": 1}),
    ]
    recording = build(lambda: GpuValidation("checks", {"gpu_pools": pools, "cluster": cluster_handle()}))
    (job,) = recording.of_type(JOB)
    pod = job.inputs["spec"]["template"]["spec"]
    spot_node = (
        {"pool": "gpu", "gpu-pool": "t4", "kubernetes.azure.com/scalesetpriority": "spot"},
        ["sku=gpu:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"],
    )
    assert pod_fits_node(pod, *spot_node), "a Spot pool's own taint is tolerated"
    assert job.inputs["spec"]["activeDeadlineSeconds"] == 20 * 60
    assert job.deleted_with == recording.one("azure-native:containerservice:ManagedCluster").urn
    namespace = recording.one("kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged", (
        "SYS_ADMIN and IPC_LOCK are beyond the baseline profile: a baseline namespace would reject the pods"
    )


FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_nccl_runs_with_the_settings_its_floor_was_measured_with(validated: Recording) -> None:
    source = json.loads((FIXTURES / "nccl_floor_source.json").read_text())
    (job,) = _jobs(validated, "nccl")
    pod = job.inputs["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert float(env["MIN_BUS_BANDWIDTH_GBPS"]) == source["h100_floor_gbps"]
    assert int(env["MESSAGE_BYTES"]) == source["message_bytes"]
    missing = {k: v for k, v in source["env"].items() if env.get(k) != v}
    assert not missing, (
        f"the 300 GB/s floor was measured with these settings; without them a healthy fabric fails: {missing}"
    )
    topology = source["topology"]
    mounted = [m for m in container["volumeMounts"] if env["NCCL_TOPO_FILE"].startswith(m["mountPath"] + "/")]
    assert mounted, "NCCL_TOPO_FILE must name a file inside a volume the container mounts"
    (fetch,) = [
        c
        for c in pod.get("initContainers", [])
        if any(m["name"] == mounted[0]["name"] for m in c.get("volumeMounts", []))
    ]
    fetch_env = {e["name"]: e["value"] for e in fetch["env"]}
    expected_url = f"https://raw.githubusercontent.com/{topology['repo']}/{topology['commit']}/{topology['path']}"
    assert fetch_env["TOPOLOGY_URL"] == expected_url, "the topology file comes from its pinned commit, over HTTPS"
    assert fetch_env["TOPOLOGY_SHA256"] == topology["sha256"], "and is refused unless it is the file that was read"
    assert fetch_env["TOPOLOGY_PATH"] == env["NCCL_TOPO_FILE"], "the init container writes the file NCCL reads"


def _fetch_topology(tmp_path: Path, content: bytes, sha256: str) -> subprocess.CompletedProcess[str]:
    from aks_gpu_platform.components.gpu.validation import TOPOLOGY_FETCH_SCRIPT

    served = tmp_path / "served.xml"
    served.write_bytes(content)
    env = {
        "TOPOLOGY_URL": served.as_uri(),
        "TOPOLOGY_SHA256": sha256,
        "TOPOLOGY_PATH": str(tmp_path / "topo.xml"),
        "TERMINATION_LOG": str(tmp_path / "termination-log"),
    }
    return subprocess.run(["python3", "-c", TOPOLOGY_FETCH_SCRIPT], env=env, capture_output=True, text=True)


def test_the_topology_fetch_keeps_only_the_file_with_the_pinned_digest(tmp_path: Path) -> None:
    import hashlib

    good = b"<system version='1'/>"
    assert _fetch_topology(tmp_path, good, hashlib.sha256(good).hexdigest()).returncode == 0
    assert (tmp_path / "topo.xml").read_bytes() == good, "the checked file is where NCCL_TOPO_FILE points"
    (tmp_path / "topo.xml").unlink()
    bad = _fetch_topology(tmp_path, b"<system tampered/>", hashlib.sha256(good).hexdigest())
    assert bad.returncode != 0 and not (tmp_path / "topo.xml").exists(), "a changed upstream file never reaches NCCL"
    assert "expected" in (tmp_path / "termination-log").read_text(), "`pulumi up` shows why the check failed"


def test_the_dcgm_image_is_the_one_whose_dockerfile_shows_the_diagnostic_plugins() -> None:
    from aks_gpu_platform.components.gpu.validation import DCGM_IMAGE

    read = json.loads((FIXTURES / "dcgm_image.json").read_text())
    assert read["image"] == DCGM_IMAGE, (
        f"{DCGM_IMAGE} is not the image whose Dockerfile was read ({read['source']['dockerfile']} at "
        f"{read['source']['tag']}): read the new tag's Dockerfile before bumping it"
    )
    with_plugins = [
        p for p in read["dockerfile_apt_installs"] if "Diagnostic" in read["diag_plugin_packages"].get(p, [])
    ]
    assert with_plugins, "`dcgmi diag` fails without a datacenter-gpu-manager-4-cuda<N> package and its plugins"
