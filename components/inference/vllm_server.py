"""A served model's vLLM servers: the `vllm serve` flags, the server pod, and the Deployment (one node) or
LeaderWorkerSet (a group of nodes) that runs its replicas.

What it follows (docs/charts.md, "Serving"):
- vLLM 0.34.0 (PyPI sdist sha256 fcad848b...; paths inside it): `vllm serve` flags in vllm/engine/arg_utils.py
  (--served-model-name, --tensor-parallel-size, --pipeline-parallel-size, --max-model-len, --dtype, --revision,
  --quantization, --gpu-memory-utilization, --shutdown-timeout), port 8000 (vllm/entrypoints/common/cli_args.py),
  GET /health and /metrics on it; the image's non-root user `vllm` is UID 2000, GID 0 (docs/deployment/docker.md
  "Run as a non-root user"); HF_HOME moves the weights onto the shared cache, VLLM_CACHE_ROOT the compile cache into
  the pod's own /tmp.
  Metrics: vllm/v1/metrics/loggers.py PrometheusStatLogger, every engine series labelled `model_name` (the served
  name) and `engine`.
- Multi-node (nodes > 1): LeaderWorkerSet v0.10.0 (kubernetes-sigs/lws commit 2161f38f) and vLLM's own
  docs/deployment/frameworks/lws.md: TP inside a node, PP across the group, `--nnodes/--node-rank/--master-addr`
  from LWS_GROUP_SIZE / LWS_WORKER_INDEX / LWS_LEADER_ADDRESS, workers `--headless`.
"""

import math
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.cold_start import AUTOSCALER_GPU_DELAY, NODE_PROVISIONING, node_provisioning
from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.catalog.models import GPU_MEMORY_UTILIZATION, serving_dtype
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_NAME_LABEL_KEY,
    GPU_RESOURCE,
    RDMA_RESOURCE,
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    gpu_pod_scheduling,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.config.inference.runtime import (
    DRAIN_SECONDS,
    ENDPOINT_REMOVAL_SECONDS,
    STARTUP_PERIOD_SECONDS,
    TERMINATION_GRACE_SECONDS,
    startup_budget_seconds,
    startup_failures,
)

from .adapters import adapter_args
from .blob_weights import streaming_pod, weights_uri
from .egress import SERVER_LABELS, USAGE_STATS_OFF
from .kv_events import kv_cache_args, kv_events_env, kv_events_pod_labels

VLLM_IMAGE = "vllm/vllm-openai:v0.34.0"
VLLM_PORT = 8000
VLLM_UID, VLLM_GID = 2000, 0
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
CACHE_MOUNT = "/cache"
COMPILE_CACHE = "/tmp/vllm-cache"
"""VLLM_CACHE_ROOT, on the pod's own /tmp emptyDir: each replica compiles for itself (a restart recompiles)."""
SERVER_TMP_SIZE = "20Gi"
"""The server's /tmp: HOME, Triton's kernels and the torch.compile cache of one model. No published size: a stated
allowance (the kubelet evicts a pod whose emptyDir outgrows it)."""
IMAGE_PULL_ALLOWANCE_SECONDS = 900
"""A first pull of vllm/vllm-openai (12 to 28.6 GB, config/catalog/cold_start.py VLLM_IMAGE; no published pull rate)."""
# vLLM's --dtype names (vllm/config/model.py ModelDType); fp8 is a quantisation of bf16/fp16 weights, not a dtype.
VLLM_DTYPE = {"bfloat16": "bfloat16", "float16": "half", "fp8": "auto"}
# checkov skips, each with its reason (the scan in tests/platform/test_checkov.py reads them from the object).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=vllm/vllm-openai:v0.34.0: no upstream file records its digest (images.py UNPINNED)",
    "checkov.io/skip2": "CKV_K8S_15=IfNotPresent: a pinned multi-GB image; Always ties every replica to Docker Hub",
    "checkov.io/skip3": "CKV_K8S_40=runs as the image's own non-root user vllm (UID 2000, GID 0)",
    "checkov.io/skip4": "CKV_K8S_11=no CPU limit: CFS throttling stalls the engine's scheduler; requests reserve it",
}
# NCCL between a group's nodes (the GPU checks' all-reduce sets the same, components/gpu/validation.py): relaxed PCI
# ordering for the Azure ND sizes' HCAs; NCCL's bootstrap and fallback socket on the pod's eth0.
MULTI_NODE_NCCL_ENV = {"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN"}


def model_labels(model: str) -> dict[str, str]:
    """Labels of a model's serving pods: the InferencePool, PodMonitor and Deployment select them."""
    return {**SERVER_LABELS, "app.kubernetes.io/instance": model}


def pool_selector(model: ServedModelConfig) -> dict[str, str]:
    """What the InferencePool selects: for a multi-node group only the leader, which serves the API."""
    return {**model_labels(model.name), **({"role": "leader"} if model.nodes > 1 else {})}


def restricted_container_security() -> dict[str, Any]:
    """A container of the vLLM image at the `restricted` level."""
    return {**RESTRICTED_CONTAINER_SECURITY_CONTEXT, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def vllm_user_pod_security() -> dict[str, Any]:
    """A pod of the vLLM image as its own non-root user `vllm`."""
    return {
        "runAsNonRoot": True,
        "runAsUser": VLLM_UID,
        "runAsGroup": VLLM_GID,
        "fsGroup": VLLM_GID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _multi_node_args(multi_node: str) -> list[str]:
    """Pipeline parallel across the LeaderWorkerSet group, from the variables LWS sets in each pod."""
    args = [
        "--pipeline-parallel-size",
        "$(LWS_GROUP_SIZE)",
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
        "--master-addr",
        "$(LWS_LEADER_ADDRESS)",
    ]
    return [*args, "--headless"] if multi_node == "worker" else args


def vllm_args(model: ServedModelConfig, gpu_model: str, multi_node: str | None = None) -> list[str]:
    """`vllm serve` arguments; `multi_node` is "leader" or "worker" in a LeaderWorkerSet group. The dtype is
    resolved for the pool's GPU (float16 below compute capability 8.0), so vLLM never picks bfloat16 on a T4."""
    weights = model.weights
    dtype = serving_dtype(model.dtype, gpu_model)
    args = [
        weights.hugging_face or weights_uri(model),
        "--served-model-name",
        model.name,
        "--port",
        str(VLLM_PORT),
        # The budget the memory check sized the model against (config/inference/model_checks.py
        # engine_memory_budget).
        "--gpu-memory-utilization",
        str(GPU_MEMORY_UTILIZATION),
        # Drain on SIGTERM: 0, the default, aborts every in-flight request (vllm/v1/engine/core.py _handle_shutdown).
        "--shutdown-timeout",
        str(DRAIN_SECONDS),
        "--tensor-parallel-size",
        str(model.tensor_parallel),
        "--max-model-len",
        str(model.max_model_len),
        "--dtype",
        VLLM_DTYPE[dtype],
    ]
    if weights.hugging_face and weights.revision:
        args += ["--revision", weights.revision]
    if not model.prefix_caching:
        # Several teams: a shared prefix cache lets each time the others' prompts (docs/security.md).
        args.append("--no-enable-prefix-caching")
    if dtype == "fp8":
        # Online fp8 of the 16-bit checkpoint; the bare `fp8` alias for it is deprecated at 0.34.0
        # (vllm/model_executor/model_loader/weight_utils.py get_quant_config).
        args += ["--quantization", "fp8_per_tensor"]
    # Every node of a group too: each builds its own engine config from its flags.
    args += adapter_args(model, CACHE_MOUNT)
    args += kv_cache_args(model, multi_node)
    return [*args, *_multi_node_args(multi_node)] if multi_node else args


def pod_resources(pool: GpuPoolConfig, gpus: int) -> dict[str, str]:
    """CPU and memory for `gpus` of the pool's GPUs: half their share of the VM, so the node's reserve and its
    daemons fit beside a full node of model servers."""
    sku = pool.sku
    share = gpus / sku.gpus_per_vm
    cpu = max(1, math.floor(sku.vcpus * share / 2))
    memory = max(4, math.floor(sku.memory_gib * share / 2))
    return {"cpu": str(cpu), "memory": f"{memory}Gi"}


def _server_env(model: ServedModelConfig, cache_claim: str | None, multi_node: str | None) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        # Everything vLLM, torch and Triton write besides the caches goes under HOME, an emptyDir: the image's
        # root filesystem stays read-only.
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "HF_HOME", "value": f"{CACHE_MOUNT}/huggingface"},
        # The torch.compile cache stays in the pod: on the shared claim, replicas on different nodes would write
        # the same files through blobfuse, which keeps no coherence between nodes.
        {"name": "VLLM_CACHE_ROOT", "value": COMPILE_CACHE},
        # vLLM gives up on its engine after VLLM_ENGINE_READY_TIMEOUT_S (600 s, vllm/envs.py), weights included:
        # the startup budget, so a large checkpoint read from the cache is not cut short by the engine itself.
        {"name": "VLLM_ENGINE_READY_TIMEOUT_S", "value": str(startup_budget_seconds(model.shape))},
        *USAGE_STATS_OFF,
    ]
    if cache_claim:
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    if multi_node:
        env += [{"name": key, "value": value} for key, value in MULTI_NODE_NCCL_ENV.items()]
    return env + kv_events_env(model, multi_node)


def _server_storage(
    model: ServedModelConfig, cache_claim: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The server's volume mounts and volumes: its /tmp, the weights cache (an emptyDir without a claim) and, for
    NCCL, a larger /dev/shm."""
    mounts: list[dict[str, Any]] = [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "cache", "mountPath": CACHE_MOUNT},
    ]
    cache: dict[str, Any] = (
        {"name": "cache", "persistentVolumeClaim": {"claimName": cache_claim}}
        if cache_claim
        else {"name": "cache", "emptyDir": {}}
    )
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {"sizeLimit": SERVER_TMP_SIZE}}, cache]
    if model.tensor_parallel > 1 or model.nodes > 1:
        # NCCL's shared memory between the ranks; the container runtime's default /dev/shm is 64 MiB.
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}})
    return mounts, volumes


def _server_resources(model: ServedModelConfig, pool: GpuPoolConfig, multi_node: str | None) -> dict[str, Any]:
    resources = pod_resources(pool, model.tensor_parallel)
    gpus = str(model.tensor_parallel)
    requests: dict[str, str] = {**resources, GPU_RESOURCE: gpus}
    limits: dict[str, str] = {"memory": resources["memory"], GPU_RESOURCE: gpus}
    if multi_node:
        # NCCL between the group's nodes over InfiniBand: the RDMA device.
        requests[RDMA_RESOURCE] = limits[RDMA_RESOURCE] = "1"
    return {"requests": requests, "limits": limits}


def _server_security(multi_node: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The container's and the pod's security contexts."""
    container, pod = restricted_container_security(), vllm_user_pod_security()
    if not multi_node:
        return container, pod
    # Memory NCCL may pin for the InfiniBand verbs: AKS's containerd sets no memlock limit of its own
    # (components/training/team_storage.py), so NCCL needs IPC_LOCK, and a capability reaches only a root process
    # (Kubernetes sets no ambient capabilities): root with IPC_LOCK as its only capability, group 0 as the image's
    # own user has.
    root = {"runAsNonRoot": False, "runAsUser": 0}
    return {**container, **root, "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}}, {**pod, **root}


def _server_endpoint(model: ServedModelConfig) -> dict[str, Any]:
    """The API port and the probes on it: a worker of a group serves neither."""
    health = {"httpGet": {"path": "/health", "port": "http"}}
    return {
        "ports": [{"name": "http", "containerPort": VLLM_PORT, "protocol": "TCP"}],
        "startupProbe": {
            **health,
            "periodSeconds": STARTUP_PERIOD_SECONDS,
            "failureThreshold": startup_failures(model.shape),
        },
        "readinessProbe": {**health, "periodSeconds": 5},
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
    }


def vllm_pod_spec(
    model: ServedModelConfig,
    pool: GpuPoolConfig,
    cache_claim: str | None,
    multi_node: str | None = None,
) -> dict[str, Any]:
    """The model server's pod: restricted-compatible, on its pool, weights and caches on persistent storage. Hub
    weights are staged into the cache before it starts (weights_cache.py staging_job_spec): it reads the Hub cache
    offline, so no replica downloads, and the Hub token stays with the staging Job. Weights in Blob are streamed
    instead (ModelPlacement.pod, blob_weights.py)."""
    mounts, volumes = _server_storage(model, cache_claim)
    security, pod_security = _server_security(multi_node)
    container: dict[str, Any] = {
        "name": "vllm",
        "image": mirrored(VLLM_IMAGE),
        "imagePullPolicy": "IfNotPresent",
        "command": ["vllm", "serve"],
        "args": vllm_args(model, pool.sku.gpu_model, multi_node),
        "env": _server_env(model, cache_claim, multi_node),
        "resources": _server_resources(model, pool, multi_node),
        "securityContext": security,
        "volumeMounts": mounts,
        # The picker stops choosing a pod once it is deleted; the pause lets requests it chose just before arrive
        # while the server still accepts them (vLLM refuses new requests once it drains).
        "lifecycle": {"preStop": {"sleep": {"seconds": ENDPOINT_REMOVAL_SECONDS}}},
        **(_server_endpoint(model) if multi_node != "worker" else {}),
    }
    scheduling = gpu_pod_scheduling([pool])
    return {
        # Pinned to the model's pool by its name label; the pool's taints tolerated.
        "nodeSelector": {**scheduling["nodeSelector"], GPU_POOL_NAME_LABEL_KEY: pool.name},
        "tolerations": scheduling["tolerations"],
        "automountServiceAccountToken": False,
        # The preStop pause, the whole drain and the engine's teardown (config/inference/runtime.py).
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "securityContext": pod_security,
        "containers": [container],
        "volumes": volumes,
    }


def slowest_published_node() -> float:
    """The slowest published node provisioning of any size family (config/catalog/cold_start.py)."""
    return max(f.high_s for f in NODE_PROVISIONING.values() if f.high_s is not None)


def ready_timeout_seconds(pool: GpuPoolConfig, model: ServedModelConfig) -> int:
    """How long `pulumi up` waits for a model's replicas (`pulumi.com/timeoutSeconds`; pulumi-kubernetes gives a
    Deployment 10 minutes otherwise, provider/pkg/await/deployment.go): a new node of the pool (the autoscaler's
    delay and the slowest published provisioning, the slowest of any family where the pool's has none), the image
    pull, then the startup probe's own budget, which grows with the checkpoint (Hub weights are staged before,
    streamed ones read within it)."""
    node = node_provisioning(pool.sku.family).high_s or slowest_published_node()
    startup = STARTUP_PERIOD_SECONDS * startup_failures(model.shape)
    return math.ceil((AUTOSCALER_GPU_DELAY.high_s or 0) + node + IMAGE_PULL_ALLOWANCE_SECONDS + startup)


@dataclass(frozen=True)
class ModelPlacement:
    """Where a model's objects go: the model, its GPU pool, its namespace, its weights cache claim (None: no
    cache) and, for weights streamed from Blob, the storage account they are in."""

    model: ServedModelConfig
    pool: GpuPoolConfig
    namespace: str
    cache_claim: str | None
    weights_account: pulumi.Input[str] | None = None

    @property
    def labels(self) -> dict[str, str]:
        return model_labels(self.model.name)

    def pod(self, multi_node: str | None = None, role: str | None = None) -> dict[str, Any]:
        """A pod template; `role` labels a group's leader or workers."""
        pod_labels = {**self.labels, **({"role": role} if role else {}), **kv_events_pod_labels(self.model, multi_node)}
        spec = vllm_pod_spec(self.model, self.pool, self.cache_claim, multi_node)
        pod: dict[str, Any] = {"metadata": {"labels": pod_labels}, "spec": spec}
        if self.model.weights.blob is None:
            return pod
        assert self.weights_account is not None, "a streamed model reads its team's account"
        return streaming_pod(pod, self.model, self.weights_account)


def _leader_worker_set(name: str, servers: ModelPlacement, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    model = servers.model
    return k8s.apiextensions.CustomResource(
        f"{name}-servers",
        api_version=LWS_API_VERSION,
        kind="LeaderWorkerSet",
        metadata={"name": model.name, "namespace": servers.namespace, "labels": servers.labels},
        spec={
            "replicas": model.min_replicas,
            # The leader's vLLM answers /health only once every worker has joined (--nnodes): its
            # workers must start beside it, not after it is Ready (lws pkg/controllers/pod_controller.go).
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": model.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": servers.pod("leader", "leader"),
                "workerTemplate": servers.pod("worker", "worker"),
            },
        },
        opts=opts,
    )


def _deployment(name: str, servers: ModelPlacement, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    model = servers.model
    return k8s.apps.v1.Deployment(
        f"{name}-servers",
        metadata={
            "name": model.name,
            "namespace": servers.namespace,
            "labels": servers.labels,
            "annotations": {
                **CHECKOV_SKIPS,
                "pulumi.com/timeoutSeconds": str(ready_timeout_seconds(servers.pool, model)),
            },
        },
        spec=cast(
            k8s.apps.v1.DeploymentSpecArgsDict,
            {
                "replicas": model.min_replicas,
                "selector": {"matchLabels": servers.labels},
                # No surge: a surge pod would need spare GPUs, often a new node.
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                "template": servers.pod(),
            },
        ),
        opts=opts,
    )


def model_servers(name: str, servers: ModelPlacement, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """The model's replicas: a LeaderWorkerSet when one spans nodes, else a Deployment. KEDA owns the replica count
    once the ScaledObject exists."""
    build = _leader_worker_set if servers.model.nodes > 1 else _deployment
    return build(
        name, servers, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["spec.replicas"]))
    )
