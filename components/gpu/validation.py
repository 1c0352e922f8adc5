"""Post-provision GPU validation beyond `nvidia-smi`, opt-in per pool (`gpuPools[].validation`).

- DCGM diagnostics level 1 ("quick" deployment checks, `dcgmi diag -r 1`): one Job per pool, holding every GPU of
  one node (the device plugin hands the container all of them, so nothing else runs there meanwhile). The
  container starts its own host engine (`nv-hostengine`) and runs the diagnostic against it. Image: NVIDIA's DCGM
  4.5.2 image on Ubuntu 22.04 (see DCGM_IMAGE for why that one).
- NCCL all-reduce across two nodes of an InfiniBand pool: an Indexed Job of two pods (one per node, required
  anti-affinity on the hostname), each with all GPUs and the RDMA shared device (`RDMA_RESOURCE`), rendezvous at
  pod 0 through a headless Service; `components/gpu/nccl_probe.py` measures the bus bandwidth and fails below the
  size's floor (config/gpu/validation.py). Image: NGC PyTorch 26.03, the base of Azure's own AKS NCCL test image
  (Azure/ai-infrastructure-on-azure infrastructure_validations/aks/NCCL/docker/Dockerfile). NCCL runs with the
  settings the floor was measured with; where those name a topology file, an init container downloads it from its
  pinned commit over HTTPS (the cluster's outbound load balancer gives egress) and refuses it unless its SHA-256
  matches.

Results in `pulumi up`: pulumi-kubernetes awaits a Job until its Complete condition and fails the update on Failed
(pulumi/pulumi-kubernetes provider/pkg/await/job.go); a failed pod's termination message is printed with the error,
so the verdict line is written there. Each Job's name carries a hash of the pool's settings and the check's, so
a changed pool is validated again; `pulumi.com/replaceUnready` re-runs a failed Job on the next `pulumi up`. No TTL
is set: a finished Job that vanished would be created again on every run. The stack output `gpuValidation` lists
each check's Job and its outcome.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_NAME_LABEL_KEY,
    GPU_RESOURCE,
    RDMA_RESOURCE,
    gpu_node_selector,
    gpu_tolerations,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.gpu.validation import TopologyFile, nccl_baseline

from ..shared.context import ClusterHandle
from ..shared.workloads import pod_security_labels

NAMESPACE = "gpu-validation"
# `dcgmi diag` loads its tests from /usr/libexec/datacenter-gpu-manager-4/plugins/cuda<N>, shipped only by the
# datacenter-gpu-manager-4-cuda<N> packages (NVIDIA/DCGM v4.5.2 CMakeLists.txt, install of Diagnostic_12...). This
# image's Dockerfile at that tag (docker/Dockerfile.ubuntu22.04) installs -cuda12 and -cuda13; NVIDIA's GPU Operator
# v26.3.x pins the same tag as its standalone DCGM (values.yaml dcgm.version), so it is published. The operator's
# newer 4.6.0-1-ubuntu24.04 has no published Dockerfile. tests/fixtures/dcgm_image.json holds what was read.
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
PYTORCH_IMAGE = "nvcr.io/nvidia/pytorch:26.03-py3"
NCCL_PORT = 29500
PROBE_SCRIPT = Path(__file__).with_name("nccl_probe.py")
# checkov skips, each with its reason (tests/platform/test_checkov.py reads them from the object).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=NGC images are pinned by release tag; a digest would pin one architecture",
    "checkov.io/skip2": "CKV2_K8S_6=a one-shot validation Job; the NCCL pods talk only to each other on the IB fabric",
    "checkov.io/skip3": "CKV_K8S_23=DCGM's host engine and NCCL's RDMA setup run as root inside the NGC images",
    "checkov.io/skip4": "CKV_K8S_40=the NGC images run as root (uid 0); no high UID exists in them",
    "checkov.io/skip5": "CKV_K8S_22=nv-hostengine and torchrun write state and sockets under /tmp and /var",
    "checkov.io/skip6": "CKV_K8S_37=DCGM diagnostics need SYS_ADMIN, NCCL over RDMA needs IPC_LOCK; all else dropped",
    "checkov.io/skip7": "CKV_K8S_39=SYS_ADMIN is what DCGM's profiling and diagnostics require (NVIDIA's own charts)",
    "checkov.io/skip8": "CKV_K8S_25=the one added capability is the one the check needs (SYS_ADMIN or IPC_LOCK)",
}

TOPOLOGY_DIR = "/etc/topology"
# Fetches the topology file and keeps it only if its digest matches; a mismatch fails the Job with that reason.
TOPOLOGY_FETCH_SCRIPT = """\
import hashlib, os, sys, urllib.request
url, expected, path = os.environ["TOPOLOGY_URL"], os.environ["TOPOLOGY_SHA256"], os.environ["TOPOLOGY_PATH"]
data = urllib.request.urlopen(url, timeout=120).read()
digest = hashlib.sha256(data).hexdigest()
if digest != expected:
    line = f"FAIL NCCL topology file {url}: sha256 {digest}, expected {expected}"
    print(line, flush=True)
    with open(os.environ.get("TERMINATION_LOG", "/dev/termination-log"), "w", encoding="utf-8") as log:
        log.write(line)
    sys.exit(1)
with open(path, "wb") as out:
    out.write(data)
"""

# The diagnostic's verdict: a non-zero exit or any failed test in its JSON report fails the Job.
DCGM_DIAG_SCRIPT = """\
set -u
nv-hostengine
sleep 2
dcgmi diag -r 1 -j > /tmp/diag.json
status=$?
if [ "$status" -ne 0 ] || grep -Eqi '"status"[[:space:]]*:[[:space:]]*"fail' /tmp/diag.json; then
  failed=$(grep -Eio '"name"[[:space:]]*:[[:space:]]*"[^"]+"' /tmp/diag.json | head -n 20 | tr '\\n' ' ')
  echo "FAIL DCGM diag level 1 on ${NODE_NAME} (pool ${POOL}, exit ${status}): ${failed}" | tee /dev/termination-log
  cat /tmp/diag.json
  exit 1
fi
echo "PASS DCGM diag level 1 on ${NODE_NAME} (pool ${POOL})" | tee /dev/termination-log
"""


def check_name(kind: str, pool: GpuPoolConfig, extra: Any = None) -> str:
    """`<kind>-<pool>-<hash of the pool's settings and the check>`: a changed pool is validated again."""
    fingerprint = json.dumps({"pool": pool.as_settings(), "extra": extra}, sort_keys=True, default=str)
    return f"{kind}-{pool.name}-{hashlib.sha256(fingerprint.encode()).hexdigest()[:8]}"


def _pool_scheduling(pool: GpuPoolConfig) -> dict[str, Any]:
    """Nodes of this pool only (`pool=gpu` and its `gpu-pool` label), tolerating exactly its taints."""
    return {
        "nodeSelector": {**gpu_node_selector(), GPU_POOL_NAME_LABEL_KEY: pool.name},
        "tolerations": gpu_tolerations([pool]),
    }


def dcgm_diag_pod_spec(pool: GpuPoolConfig) -> dict[str, Any]:
    """One node of the pool, all its GPUs, a private host engine, diagnostics level 1."""
    gpus = str(pool.sku.gpus_per_vm)
    return {
        **_pool_scheduling(pool),
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 10,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "dcgm-diag",
                "image": mirrored(DCGM_IMAGE),
                "imagePullPolicy": "Always",
                "command": ["bash", "-c", DCGM_DIAG_SCRIPT],
                "env": [
                    {"name": "POOL", "value": pool.name},
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                ],
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "resources": {
                    "requests": {"cpu": "1", "memory": "2Gi", GPU_RESOURCE: gpus},
                    "limits": {"cpu": "4", "memory": "8Gi", GPU_RESOURCE: gpus},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            }
        ],
    }


def nccl_service_name(job_name: str) -> str:
    return job_name  # the headless Service shares the Job's name: pod 0 is <job>-0.<job>


_RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def topology_init_container(topology: TopologyFile) -> dict[str, Any]:
    """Puts the topology file into the shared `topology` volume, checked by its digest."""
    env = {
        "TOPOLOGY_URL": topology.url,
        "TOPOLOGY_SHA256": topology.sha256,
        "TOPOLOGY_PATH": f"{TOPOLOGY_DIR}/{topology.file_name}",
    }
    return {
        "name": "topology",
        "image": mirrored(PYTORCH_IMAGE),  # already pulled for the probe; python3 and its TLS roots are in it
        "imagePullPolicy": "Always",
        "command": ["python3", "-c", TOPOLOGY_FETCH_SCRIPT],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "securityContext": _RESTRICTED,
        "volumeMounts": [{"name": "topology", "mountPath": TOPOLOGY_DIR}],
    }


def nccl_pod_spec(
    pool: GpuPoolConfig,
    job_name: str,
    floor_gbps: float,
    message_bytes: int,
    nccl_env: Mapping[str, str],
    topology: TopologyFile | None,
) -> dict[str, Any]:
    """One pod per node (two nodes), every GPU and the RDMA device, torchrun rendezvous at pod 0.

    `nccl_env` and `topology` are the settings the floor was measured with (config/gpu/validation.py).
    """
    env = _nccl_env(pool, floor_gbps, message_bytes, nccl_env)
    mounts = [
        {"name": "probe", "mountPath": "/probe", "readOnly": True},
        {"name": "shm", "mountPath": "/dev/shm"},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "probe", "configMap": {"name": job_name}},
        # NCCL's intra-node transport needs more shared memory than the container default of 64 MiB.
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}},
    ]
    init_containers: list[dict[str, Any]] = []
    if topology is not None:
        env["NCCL_TOPO_FILE"] = f"{TOPOLOGY_DIR}/{topology.file_name}"
        mounts.append({"name": "topology", "mountPath": TOPOLOGY_DIR, "readOnly": True})
        volumes.append({"name": "topology", "emptyDir": {"sizeLimit": "16Mi"}})
        init_containers.append(topology_init_container(topology))
    return {
        **_pool_scheduling(pool),
        "subdomain": nccl_service_name(job_name),
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 10,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": _one_pod_per_node(job_name),
        "initContainers": init_containers,
        "containers": [_nccl_container(pool, job_name, env, mounts)],
        "volumes": volumes,
    }


def _nccl_env(
    pool: GpuPoolConfig, floor_gbps: float, message_bytes: int, nccl_env: Mapping[str, str]
) -> dict[str, str]:
    """What the probe reads (its pool, floor and message size) and NCCL's settings."""
    return {
        "POOL": pool.name,
        "VM_SIZE": pool.vm_size,
        "MIN_BUS_BANDWIDTH_GBPS": f"{floor_gbps:g}",
        "MESSAGE_BYTES": str(message_bytes),
        # Azure ND sizes: relaxed PCI ordering for IB (Azure/ai-infrastructure-on-azure NCCL values.yaml).
        "NCCL_IB_PCI_RELAXED_ORDERING": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_DEBUG": "WARN",
        **nccl_env,
    }


def _one_pod_per_node(job_name: str) -> dict[str, Any]:
    """Required anti-affinity between the Job's pods on the hostname: the all-reduce crosses two nodes."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"job-name": job_name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def _nccl_container(
    pool: GpuPoolConfig, job_name: str, env: Mapping[str, str], mounts: list[dict[str, Any]]
) -> dict[str, Any]:
    """torchrun of the probe on every GPU of the node and the RDMA device, with IPC_LOCK to pin memory for RDMA."""
    gpus = pool.sku.gpus_per_vm
    master = f"{job_name}-0.{nccl_service_name(job_name)}"
    torchrun = (
        f"torchrun --nnodes=2 --nproc-per-node={gpus} --node-rank=${{JOB_COMPLETION_INDEX}} "
        f"--master-addr={master} --master-port={NCCL_PORT} /probe/nccl_probe.py"
    )
    return {
        "name": "nccl",
        "image": mirrored(PYTORCH_IMAGE),
        "imagePullPolicy": "Always",
        "command": ["bash", "-c", f"set -eu; exec {torchrun}"],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"name": "rendezvous", "containerPort": NCCL_PORT}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "resources": {
            "requests": {"cpu": "8", "memory": "64Gi", GPU_RESOURCE: str(gpus), RDMA_RESOURCE: "1"},
            "limits": {"cpu": "48", "memory": "256Gi", GPU_RESOURCE: str(gpus), RDMA_RESOURCE: "1"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": mounts,
    }


class GpuValidationArgs(TypedDict):
    gpu_pools: Sequence[GpuPoolConfig]
    """Every GPU pool; those with `validation` checks get their Jobs."""
    cluster: ClusterHandle
    """The cluster."""
    depends_on: NotRequired[Sequence[pulumi.Resource]]
    """The pools and the releases that advertise GPUs and RDMA."""


class GpuValidation(pulumi.ComponentResource):
    """DCGM diagnostics and NCCL all-reduce Jobs that `pulumi up` waits for; a failed check fails the update."""

    results: pulumi.Output[dict[str, dict[str, str]]]
    """Per pool, per check: `<job name>: Complete` once the Job finished (a failed Job fails the update)."""

    def __init__(self, name: str, args: GpuValidationArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuValidation", name, None, opts)
        handle = args["cluster"]
        in_cluster = handle.k8s_options(self)
        pools = [p for p in args["gpu_pools"] if p.validation.any]
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # DCGM diagnostics need SYS_ADMIN and NCCL over RDMA IPC_LOCK: beyond the baseline profile.
            metadata={"name": NAMESPACE, "labels": pod_security_labels("privileged")},
            opts=in_cluster,
        )
        after = pulumi.ResourceOptions(depends_on=[namespace, *args.get("depends_on", [])])
        results: dict[str, dict[str, pulumi.Output[str]]] = {}
        for pool in pools:
            timeout = pool.validation.timeout_minutes
            job_opts = pulumi.ResourceOptions.merge(
                in_cluster,
                pulumi.ResourceOptions.merge(
                    after, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=f"{timeout}m"))
                ),
            )
            checks: dict[str, pulumi.Output[str]] = {}
            if pool.validation.dcgm_diag:
                job_name = check_name("dcgm-diag", pool, DCGM_IMAGE)
                job = self._job(name, job_name, pool, dcgm_diag_pod_spec(pool), 1, timeout, job_opts)
                checks["dcgmDiag"] = _outcome(job_name, job)
            if pool.validation.nccl_all_reduce:
                checks["ncclAllReduce"] = self._nccl_check(name, pool, job_opts, namespace, in_cluster)
            results[pool.name] = checks
        self.results = cast(pulumi.Output[dict[str, dict[str, str]]], pulumi.Output.from_input(results))
        self.register_outputs({"results": self.results})

    def _nccl_check(
        self,
        name: str,
        pool: GpuPoolConfig,
        job_opts: pulumi.ResourceOptions,
        namespace: k8s.core.v1.Namespace,
        in_cluster: pulumi.ResourceOptions,
    ) -> pulumi.Output[str]:
        """The NCCL all-reduce Job across two of the pool's nodes, its probe script and rendezvous Service; its
        outcome."""
        baseline = nccl_baseline(pool.vm_size)
        floor = pool.validation.min_bus_bandwidth_gbps or (baseline.min_bus_bandwidth_gbps if baseline else 0)
        message_bytes = baseline.message_bytes if baseline else 8 << 30
        nccl_env = dict(baseline.nccl_env) if baseline else {}
        topology = baseline.topology if baseline else None
        job_name = check_name("nccl", pool, [PYTORCH_IMAGE, floor, message_bytes, nccl_env, topology])
        after_namespace = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace]))
        probe = k8s.core.v1.ConfigMap(
            f"{name}-{pool.name}-nccl-probe",
            metadata={"name": job_name, "namespace": NAMESPACE},
            data={"nccl_probe.py": PROBE_SCRIPT.read_text()},
            opts=after_namespace,
        )
        service = k8s.core.v1.Service(
            f"{name}-{pool.name}-nccl-service",
            metadata={"name": nccl_service_name(job_name), "namespace": NAMESPACE},
            spec={
                "cluster_ip": "None",
                # Pod 0's name must resolve before it is ready: torchrun's rendezvous starts first.
                "publish_not_ready_addresses": True,
                "selector": {"job-name": job_name},
                "ports": [{"name": "rendezvous", "port": NCCL_PORT, "target_port": NCCL_PORT}],
            },
            opts=after_namespace,
        )
        spec = nccl_pod_spec(pool, job_name, floor, message_bytes, nccl_env, topology)
        nccl_opts = pulumi.ResourceOptions.merge(job_opts, pulumi.ResourceOptions(depends_on=[probe, service]))
        job = self._job(name, job_name, pool, spec, 2, pool.validation.timeout_minutes, nccl_opts)
        return _outcome(job_name, job)

    def _job(
        self,
        name: str,
        job_name: str,
        pool: GpuPoolConfig,
        pod_spec: dict[str, Any],
        pods: int,
        timeout_minutes: int,
        opts: pulumi.ResourceOptions,
    ) -> k8s.batch.v1.Job:
        labels = {"app.kubernetes.io/name": "gpu-validation", GPU_POOL_NAME_LABEL_KEY: pool.name}
        annotations = {
            **CHECKOV_SKIPS,
            # A failed check is replaced (re-run) on the next `pulumi up` instead of staying failed.
            "pulumi.com/replaceUnready": "true",
        }
        spec: k8s.batch.v1.JobSpecArgsDict = {
            "backoff_limit": 0,
            "active_deadline_seconds": timeout_minutes * 60,
            "completions": pods,
            "parallelism": pods,
            "template": {
                "metadata": {"labels": labels, "annotations": CHECKOV_SKIPS},
                "spec": cast(k8s.core.v1.PodSpecArgsDict, pod_spec),
            },
        }
        if pods > 1:
            spec["completion_mode"] = "Indexed"
        return k8s.batch.v1.Job(
            f"{name}-{job_name.rsplit('-', 1)[0]}",
            metadata={"name": job_name, "namespace": NAMESPACE, "labels": labels, "annotations": annotations},
            spec=spec,
            opts=opts,
        )


def _outcome(job_name: str, job: k8s.batch.v1.Job) -> pulumi.Output[str]:
    """`<job>: Complete` once the Job succeeded (Pulumi waits for it; a failure stops the update first)."""

    def describe(status: k8s.batch.v1.outputs.JobStatus | None) -> str:
        conditions = (status.conditions if status is not None else None) or []
        done = [c.type for c in conditions if c.status == "True"]
        return f"{job_name}: {', '.join(done) or 'submitted'}"

    return job.status.apply(describe)
