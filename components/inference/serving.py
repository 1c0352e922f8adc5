"""One served model: vLLM replicas on its GPU pool, its InferencePool and endpoint picker, its route through the
gateway, the scrape of its metrics and KEDA scaling on what its users wait for.

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
- The `inferencepool` chart of gateway-api-inference-extension v1.5.0 (commit df9f8909, config/charts/inferencepool
  and config/charts/epplib): the InferencePool is named after the release, the picker `<release>-epp`; the chart
  has no nodeSelector key (affinity only) and renders no securityContext for the picker (epplib
  templates/_deployment.yaml), so the models namespace enforces `baseline` and warns at `restricted`: the model
  servers themselves meet `restricted`.
"""

import math
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, cast

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement
import pulumi_kubernetes as k8s
import yaml

from aks_gpu_platform.config.catalog.cold_start import AUTOSCALER_GPU_DELAY, NODE_PROVISIONING, node_provisioning
from aks_gpu_platform.config.catalog.images import mirrored, mirrored_parts, mirrored_repository_and_tag
from aks_gpu_platform.config.catalog.models import GPU_MEMORY_UTILIZATION, serving_dtype
from aks_gpu_platform.config.errors import ConfigError
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_NAME_LABEL_KEY,
    GPU_RESOURCE,
    RDMA_RESOURCE,
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    cpu_node_affinity,
    cpu_node_selector,
    gpu_pod_scheduling,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import (
    GIB,
    STAGING_JOB_PREFIX,
    InferenceConfig,
    ServedModelConfig,
)
from aks_gpu_platform.config.inference.runtime import (
    DRAIN_SECONDS,
    ENDPOINT_REMOVAL_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    STARTUP_PERIOD_SECONDS,
    TERMINATION_GRACE_SECONDS,
    staging_seconds,
    startup_budget_seconds,
    startup_failures,
)

from ..monitoring.alerts import alert_rules
from ..monitoring.dcgm_exporter import SCRAPE_LABEL_LIMITS
from ..network.policies import NAMESPACE_NAME_LABEL, platform_ingress
from ..shared.workloads import MEMORY_LOCKING_POD_SECURITY, platform_namespace
from .autoscaling import (
    KEDA_API_VERSION,
    KedaWiringArgs,
    keda_metadata,
    keda_object_options,
    keda_trigger_authentication,
)
from .egress import SERVER_LABELS, USAGE_STATS_OFF, WEIGHTS_STAGE_LABELS, ModelPods, models_egress
from .gateway import (
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    GATEWAY_POD_LABEL,
    GATEWAY_SERVICE,
    InferenceGateway,
    team_listener,
    team_ports,
)
from .model_dashboards import picker_name, slo_alert

VLLM_IMAGE = "vllm/vllm-openai:v0.34.0"
VLLM_PORT = 8000
VLLM_UID, VLLM_GID = 2000, 0
INFERENCE_POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
INFERENCE_POOL_CHART_VERSION = "v1.5.0"
# The endpoint picker the chart runs by default (config/charts/inferencepool/values.yaml at v1.5.0).
PICKER_IMAGE = f"registry.k8s.io/gateway-api-inference-extension/epp:{INFERENCE_POOL_CHART_VERSION}"
EPP_GRPC_PORT = 9002
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
LWS_CHART = "oci://registry.k8s.io/lws/charts/lws"
LWS_VERSION = "0.10.0"
LWS_IMAGE_TAG = "v0.10.0"
LWS_IMAGE = f"registry.k8s.io/lws/lws:{LWS_IMAGE_TAG}"
LWS_NAMESPACE = "lws-system"
CACHE_MOUNT = "/cache"
COMPILE_CACHE = "/tmp/vllm-cache"
"""VLLM_CACHE_ROOT, on the pod's own /tmp emptyDir: each replica compiles for itself (a restart recompiles)."""
SERVER_TMP_SIZE = "20Gi"
"""The server's /tmp: HOME, Triton's kernels and the torch.compile cache of one model. No published size: a stated
allowance (the kubelet evicts a pod whose emptyDir outgrows it)."""
IMAGE_PULL_ALLOWANCE_SECONDS = 900
"""A first pull of vllm/vllm-openai (12 to 28.6 GB, config/catalog/cold_start.py VLLM_IMAGE; no published pull rate)."""
REQUEST_TIMEOUT = f"{REQUEST_TIMEOUT_SECONDS}s"
"""The route's request timeout, which bounds a streamed response too (config/inference/runtime.py)."""
# KEDA triggers. The queue: vLLM's waiting requests (a replica only queues once its batch is full), as a target
# average per replica. The KV cache: the EPP's own saturation point for it (kvCacheUtilThreshold 0.8, GAIE v1.5.0
# site-src/guides/flow-control.md), as a Value the HPA compares to the fleet's average.
WAITING_PER_REPLICA = 2
KV_CACHE_TARGET = 0.8
POLLING_SECONDS = 15
COOLDOWN_SECONDS = 300
# vLLM's --dtype names (vllm/config/model.py ModelDType); fp8 is a quantisation of bf16/fp16 weights, not a dtype.
VLLM_DTYPE = {"bfloat16": "bfloat16", "float16": "half", "fp8": "auto"}
HUB_DOWNLOAD_EXCLUDES = ("original/*", "*.pth")
"""What the staging Job leaves on the Hub: Meta's repositories also carry the original PyTorch checkpoint
(original/consolidated.*.pth), as large again as the safetensors, which vLLM 0.34.0 loads whenever they are there
(vllm/model_executor/model_loader/default_loader.py: the first pattern with files wins, *.safetensors first).
`hf download` without patterns fetches the whole repository (huggingface_hub 2.x cli/download.py, --exclude a
repeatable option)."""
HUGGING_FACE_SECRET = "hugging-face-token"
HUGGING_FACE_SECRET_KEY = "token"
# checkov skips, each with its reason (the scan in tests/platform/test_checkov.py reads them from the object).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=vllm/vllm-openai:v0.34.0: no upstream file records its digest (images.py UNPINNED)",
    "checkov.io/skip2": "CKV_K8S_15=IfNotPresent: a pinned multi-GB image; Always ties every replica to Docker Hub",
    "checkov.io/skip3": "CKV_K8S_40=runs as the image's own non-root user vllm (UID 2000, GID 0)",
    "checkov.io/skip4": "CKV_K8S_11=no CPU limit: CFS throttling stalls the engine's scheduler; requests reserve it",
}
# The inferencepool chart's picker has no securityContext (epplib templates/_deployment.yaml at v1.5.0): baseline
# admits it; restricted is what single-node model servers meet, so warn and audit at it.
MODELS_NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}
# A multi-node model's servers add IPC_LOCK for NCCL over RDMA, which `baseline` refuses and no level short of
# `privileged` allows: that namespace is then enforced like an InfiniBand team's, by Azure Policy's baseline with
# IPC_LOCK allowed, always Deny (components/cluster/azure_policy.py; config/rules.py keeps that policy on).
MEMORY_LOCKING_MODELS_NAMESPACE_LABELS = {**MODELS_NAMESPACE_LABELS, **MEMORY_LOCKING_POD_SECURITY}
# NCCL between a group's nodes (the GPU checks' all-reduce sets the same, components/gpu/validation.py): relaxed PCI
# ordering for the Azure ND sizes' HCAs; NCCL's bootstrap and fallback socket on the pod's eth0.
MULTI_NODE_NCCL_ENV = {"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN"}


def models_namespace_labels(models: Sequence[ServedModelConfig]) -> dict[str, str]:
    """Pod Security of the models namespace: `privileged` under Azure Policy's RDMA baseline once a model spans
    nodes (its servers add IPC_LOCK), else `baseline`."""
    locks_memory = any(model.nodes > 1 for model in models)
    return MEMORY_LOCKING_MODELS_NAMESPACE_LABELS if locks_memory else MODELS_NAMESPACE_LABELS


def model_labels(model: str) -> dict[str, str]:
    """Labels of a model's serving pods: the InferencePool, PodMonitor and Deployment select them."""
    return {**SERVER_LABELS, "app.kubernetes.io/instance": model}


def pool_selector(model: ServedModelConfig) -> dict[str, str]:
    """What the InferencePool selects: for a multi-node group only the leader, which serves the API."""
    return {**model_labels(model.name), **({"role": "leader"} if model.nodes > 1 else {})}


def waiting_query(namespace: str, model: str) -> str:
    """PromQL: requests waiting in the model's servers, all replicas together (one series)."""
    return f'sum(vllm:num_requests_waiting{{namespace="{namespace}",model_name="{model}"}})'


def kv_cache_query(namespace: str, model: str) -> str:
    """PromQL: the replicas' average KV-cache use, 0..1 (one series)."""
    return f'avg(vllm:kv_cache_usage_perc{{namespace="{namespace}",model_name="{model}"}})'


def vllm_args(model: ServedModelConfig, gpu_model: str, multi_node: str | None = None) -> list[str]:
    """`vllm serve` arguments; `multi_node` is "leader" or "worker" in a LeaderWorkerSet group. The dtype is
    resolved for the pool's GPU (float16 below compute capability 8.0), so vLLM never picks bfloat16 on a T4."""
    weights = model.weights
    dtype = serving_dtype(model.dtype, gpu_model)
    source = weights.hugging_face
    assert source is not None, "Blob weights are refused by check_servable"
    args = [
        str(source),
        "--served-model-name",
        model.name,
        "--port",
        str(VLLM_PORT),
        # The budget the memory check sized the model against (config/inference/models.py engine_memory_budget).
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
    if multi_node:
        args += [
            "--pipeline-parallel-size",
            "$(LWS_GROUP_SIZE)",
            "--nnodes",
            "$(LWS_GROUP_SIZE)",
            "--node-rank",
            "$(LWS_WORKER_INDEX)",
            "--master-addr",
            "$(LWS_LEADER_ADDRESS)",
        ]
        if multi_node == "worker":
            args.append("--headless")
    return args


def pod_resources(pool: GpuPoolConfig, gpus: int) -> dict[str, str]:
    """CPU and memory for `gpus` of the pool's GPUs: half their share of the VM, so the node's reserve and its
    daemons fit beside a full node of model servers."""
    sku = pool.sku
    share = gpus / sku.gpus_per_vm
    cpu = max(1, math.floor(sku.vcpus * share / 2))
    memory = max(4, math.floor(sku.memory_gib * share / 2))
    return {"cpu": str(cpu), "memory": f"{memory}Gi"}


def vllm_pod_spec(
    model: ServedModelConfig,
    pool: GpuPoolConfig,
    cache_claim: str | None,
    multi_node: str | None = None,
) -> dict[str, Any]:
    """The model server's pod: restricted-compatible, on its pool, weights and caches on persistent storage. The
    weights are staged into the cache before it starts (staging_job_spec): it reads the Hub cache offline, so no
    replica downloads, and the Hub token stays with the staging Job."""
    resources = pod_resources(pool, model.tensor_parallel)
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
    health = {"httpGet": {"path": "/health", "port": "http"}}
    mounts: list[dict[str, Any]] = [{"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {"sizeLimit": SERVER_TMP_SIZE}}]
    if cache_claim:
        mounts.append({"name": "cache", "mountPath": CACHE_MOUNT})
        volumes.append({"name": "cache", "persistentVolumeClaim": {"claimName": cache_claim}})
    else:
        volumes.append({"name": "cache", "emptyDir": {}})
        mounts.append({"name": "cache", "mountPath": CACHE_MOUNT})
    if model.tensor_parallel > 1 or model.nodes > 1:
        # NCCL's shared memory between the ranks; the container runtime's default /dev/shm is 64 MiB.
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}})
    gpus = str(model.tensor_parallel)
    requests: dict[str, str] = {**resources, GPU_RESOURCE: gpus}
    limits: dict[str, str] = {"memory": resources["memory"], GPU_RESOURCE: gpus}
    security: dict[str, Any] = {
        **RESTRICTED_CONTAINER_SECURITY_CONTEXT,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    pod_security: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": VLLM_UID,
        "runAsGroup": VLLM_GID,
        "fsGroup": VLLM_GID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if multi_node:
        # NCCL between the group's nodes over InfiniBand: the RDMA device, and memory it may pin for the verbs.
        # AKS's containerd sets no memlock limit of its own (components/training/team_storage.py), so NCCL needs
        # IPC_LOCK, and a capability reaches only a root process (Kubernetes sets no ambient capabilities): root
        # with IPC_LOCK as its only capability, group 0 as the image's own user has.
        requests[RDMA_RESOURCE] = limits[RDMA_RESOURCE] = "1"
        env += [{"name": key, "value": value} for key, value in MULTI_NODE_NCCL_ENV.items()]
        security = {
            **security,
            "runAsNonRoot": False,
            "runAsUser": 0,
            "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
        }
        pod_security = {**pod_security, "runAsNonRoot": False, "runAsUser": 0}
    container: dict[str, Any] = {
        "name": "vllm",
        "image": mirrored(VLLM_IMAGE),
        "imagePullPolicy": "IfNotPresent",
        "command": ["vllm", "serve"],
        "args": vllm_args(model, pool.sku.gpu_model, multi_node),
        "env": env,
        "resources": {"requests": requests, "limits": limits},
        "securityContext": security,
        "volumeMounts": mounts,
        # The picker stops choosing a pod once it is deleted; the pause lets requests it chose just before arrive
        # while the server still accepts them (vLLM refuses new requests once it drains).
        "lifecycle": {"preStop": {"sleep": {"seconds": ENDPOINT_REMOVAL_SECONDS}}},
    }
    if multi_node != "worker":
        container["ports"] = [{"name": "http", "containerPort": VLLM_PORT, "protocol": "TCP"}]
        container["startupProbe"] = {
            **health,
            "periodSeconds": STARTUP_PERIOD_SECONDS,
            "failureThreshold": startup_failures(model.shape),
        }
        container["readinessProbe"] = {**health, "periodSeconds": 5}
        container["livenessProbe"] = {**health, "periodSeconds": 10, "failureThreshold": 3}
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
    pull, then the startup probe's own budget, which grows with the checkpoint. The weights are staged before."""
    node = node_provisioning(pool.sku.family).high_s or slowest_published_node()
    startup = STARTUP_PERIOD_SECONDS * startup_failures(model.shape)
    return math.ceil((AUTOSCALER_GPU_DELAY.high_s or 0) + node + IMAGE_PULL_ALLOWANCE_SECONDS + startup)


def cpu_node_seconds() -> int:
    """A new CPU-pool node, from the autoscaler's reaction to Ready. AKS publishes no CPU figures: bounded by the
    GPU ones (config/catalog/cold_start.py), the autoscaler's delay for GPU pods (CPU pods are reported quicker)
    and the slowest published GPU node provisioning, which also installs a driver."""
    return math.ceil((AUTOSCALER_GPU_DELAY.high_s or 0) + slowest_published_node())


def staging_deadline_seconds(model: ServedModelConfig, cpu_pool_scales: bool) -> int:
    """The staging Job's activeDeadlineSeconds. Kubernetes counts it from the Job's start, with its pod still
    Pending (pkg/controller/job/job_controller.go pastActiveDeadline, from status.startTime): a new CPU node when the
    pool must scale for it, the vLLM image's first pull on that node, then the download."""
    node = cpu_node_seconds() if cpu_pool_scales else 0
    return node + IMAGE_PULL_ALLOWANCE_SECONDS + staging_seconds(model.shape)


STAGING_WAIT_MARGIN_SECONDS = 60
"""`pulumi up` waits this much past the staging Job's deadline, so it reports the Job's own failure."""


def staging_job_spec(
    model: ServedModelConfig, cache_claim: str, token_secret: str | None, cpu_pool_scales: bool = True
) -> dict[str, Any]:
    """The Job that downloads a model's checkpoint into its weights cache once, before any server starts: one
    writer, so replicas never race on the Hub library's per-node file locks or its renames (a copy and a delete on
    a flat Blob namespace), and a large download is not restarted by a server's startup probe. On the CPU pool,
    with the vLLM image's own Hub client (`hf download`, huggingface_hub >= 2.0 at vLLM 0.34.0); a retried pod
    resumes the files already there."""
    source = model.weights.hugging_face
    assert source is not None, "Blob weights are refused by check_servable"
    args = ["download", source]
    for pattern in HUB_DOWNLOAD_EXCLUDES:
        # One pattern per flag: a repeatable option; a second bare pattern would be read as a file to download.
        args += ["--exclude", pattern]
    if model.weights.revision:
        args += ["--revision", model.weights.revision]
    env: list[dict[str, Any]] = [
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "HF_HOME", "value": f"{CACHE_MOUNT}/huggingface"},
    ]
    if token_secret:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": token_secret, "key": HUGGING_FACE_SECRET_KEY}},
            }
        )
    container: dict[str, Any] = {
        "name": "stage-weights",
        "image": mirrored(VLLM_IMAGE),
        "imagePullPolicy": "IfNotPresent",
        "command": ["hf"],
        "args": args,
        "env": env,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "securityContext": {
            **RESTRICTED_CONTAINER_SECURITY_CONTEXT,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "cache", "mountPath": CACHE_MOUNT}, {"name": "tmp", "mountPath": "/tmp"}],
    }
    return {
        "backoffLimit": 3,
        "activeDeadlineSeconds": staging_deadline_seconds(model, cpu_pool_scales),
        "template": {
            # Not the servers' labels: the Deployment, InferencePool and PodMonitor select those, and the picker would
            # count this pod among the model's endpoints.
            "metadata": {"labels": {**WEIGHTS_STAGE_LABELS, "app.kubernetes.io/instance": model.name}},
            "spec": {
                "restartPolicy": "OnFailure",
                "nodeSelector": cpu_node_selector(),
                "automountServiceAccountToken": False,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": VLLM_UID,
                    "runAsGroup": VLLM_GID,
                    "fsGroup": VLLM_GID,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [container],
                "volumes": [
                    {"name": "cache", "persistentVolumeClaim": {"claimName": cache_claim}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "5Gi"}},
                ],
            },
        },
    }


PICKER_CONFIG_FILE = "serving-plugins.yaml"
FLOW_CONTROL_METRIC = "inference_extension_flow_control_queue_size"
"""The picker's gauge of requests it holds (pkg/epp/metrics/metrics.go l.428 at v1.5.0; labels fairness_id,
priority, inference_pool, model_name, target_model_name)."""


def picker_config(flow_control: bool, prefix_cache: bool = True) -> str:
    """The picker's EndpointPickerConfig: the chart's default (epplib templates/_config.yaml at v1.5.0, vLLM over
    HTTP, no latency predictor) plus, for a model that may scale to zero, the `flowControl` feature gate
    (pkg/epp/config/loader/configloader.go): requests wait in the picker while no server is ready instead of
    getting 503 at once (site-src/guides/flow-control.md, "Autoscaling: KEDA and Scale-to-Zero"). Without vLLM's
    prefix cache, no prefix-cache scorer: it would steer requests towards a cache that is not kept."""
    scorers = [("queue-scorer", 2), ("kv-cache-utilization-scorer", 2)]
    if prefix_cache:
        scorers.append(("prefix-cache-scorer", 3))
    config: dict[str, Any] = {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            *({"type": scorer} for scorer, _ in scorers),
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [{"pluginRef": scorer, "weight": weight} for scorer, weight in scorers],
            }
        ],
    }
    if flow_control:
        config["featureGates"] = ["flowControl"]
    return yaml.safe_dump(config, sort_keys=False)


def picker_labels(model: str) -> dict[str, str]:
    """The picker pod's selector labels (epplib templates/_helpers.tpl, InferencePool mode)."""
    return {"inferencepool": picker_name(model)}


def picker_holds_requests(model: ServedModelConfig) -> bool:
    """The picker runs flow control, which holds requests while no server is ready: a model that may be at zero."""
    return model.min_replicas == 0


def held_requests_query(namespace: str, model: str) -> str:
    """PromQL: requests the picker holds for the model's pool (one series; the only signal while at zero)."""
    return f'sum({FLOW_CONTROL_METRIC}{{namespace="{namespace}",inference_pool="{model}"}})'


def inference_pool_values(model: ServedModelConfig) -> dict[str, Any]:
    """inferencepool chart values: the pool over the model's serving pods, the picker on the CPU pool."""
    # Managed Prometheus scrapes every picker's :9090 (the SLO reads it) without a bearer token
    # (--metrics-endpoint-auth=false).
    picker: dict[str, Any] = {"monitoring": {"prometheus": {"auth": {"enabled": False}}}}
    holds = picker_holds_requests(model)
    # The chart's own config unless the picker holds requests or the model keeps no prefix cache to score on.
    if holds or not model.prefix_caching:
        picker |= {
            "pluginsConfigFile": PICKER_CONFIG_FILE,
            "pluginsCustomConfig": {
                PICKER_CONFIG_FILE: picker_config(flow_control=holds, prefix_cache=model.prefix_caching)
            },
        }
    return {
        "inferencePool": {
            "targetPorts": [{"number": VLLM_PORT}],
            "modelServerType": "vllm",
            "modelServers": {"matchLabels": pool_selector(model)},
        },
        # Istio: a DestinationRule so the gateway speaks TLS to the picker's self-signed gRPC (templates/istio.yaml).
        "provider": {"name": "istio"},
        "inferenceExtension": {
            "replicas": 1,
            "image": {**mirrored_parts(PICKER_IMAGE), "pullPolicy": "IfNotPresent"},
            "affinity": cpu_node_affinity(),
            # The chart's 4 CPU / 8 GiB is sized for high-QPS scale tests (values.yaml); one model's picker on the
            # small CPU pool needs a fraction of it. Memory limit kept well above the request.
            "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
            **picker,
        },
    }


def http_route(model: ServedModelConfig, namespace: str) -> dict[str, Any]:
    """The model's route: `/<name>/...` on each of its teams' listeners, to its InferencePool."""
    return {
        "parentRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "name": GATEWAY_NAME,
                "namespace": GATEWAY_NAMESPACE,
                "sectionName": team_listener(team),
            }
            for team in model.teams
        ],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": f"/{model.name}"}}],
                # Clients use `http://<gateway>:<port>/<model>/v1` as the OpenAI base URL.
                "filters": [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
                    }
                ],
                "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": model.name}],
                "timeouts": {"request": REQUEST_TIMEOUT},
            }
        ],
    }


def pod_monitor(model: ServedModelConfig, namespace: str) -> dict[str, Any]:
    """Managed Prometheus scrapes each serving pod's /metrics (the leader's in a group)."""
    return {
        **SCRAPE_LABEL_LIMITS,
        "selector": {"matchLabels": pool_selector(model)},
        "namespaceSelector": {"matchNames": [namespace]},
        "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
    }


def scaled_object_spec(
    model: ServedModelConfig, namespace: str, server_address: pulumi.Input[str], auth: str
) -> dict[str, Any]:
    """KEDA: replicas on the queue (per replica) and the KV cache (fleet average), within the configured range."""
    kind = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") if model.nodes > 1 else ("apps/v1", "Deployment")
    ref = {"name": auth, "kind": "TriggerAuthentication"}
    return {
        "scaleTargetRef": {"apiVersion": kind[0], "kind": kind[1], "name": model.name},
        "minReplicaCount": model.min_replicas,
        "maxReplicaCount": model.max_replicas,
        "pollingInterval": POLLING_SECONDS,
        "cooldownPeriod": COOLDOWN_SECONDS,
        "triggers": [
            {
                "type": "prometheus",
                "name": "waiting-requests",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": server_address,
                    "query": waiting_query(namespace, model.name),
                    "threshold": str(WAITING_PER_REPLICA),
                },
                "authenticationRef": ref,
            },
            {
                "type": "prometheus",
                "name": "kv-cache",
                "metricType": "Value",
                "metadata": {
                    "serverAddress": server_address,
                    "query": kv_cache_query(namespace, model.name),
                    "threshold": str(KV_CACHE_TARGET),
                },
                "authenticationRef": ref,
            },
            *(
                [
                    {
                        "type": "prometheus",
                        "name": "held-requests",
                        "metricType": "AverageValue",
                        "metadata": {
                            "serverAddress": server_address,
                            "query": held_requests_query(namespace, model.name),
                            "threshold": "1",
                            # Any held request wakes the model from zero.
                            "activationThreshold": "0",
                        },
                        "authenticationRef": ref,
                    }
                ]
                if picker_holds_requests(model)
                else []
            ),
        ],
    }


class ServedModelArgs(KedaWiringArgs):
    settings: ServedModelConfig
    pool: GpuPoolConfig
    """The model's GPU pool."""
    namespace: str
    cache_storage_class: str
    """ReadWriteMany class of the per-model weights cache (Hub weights)."""
    cache_gib: int
    """Size of that cache."""
    token_secret: NotRequired[k8s.core.v1.Secret | None]
    """The Secret (key HUGGING_FACE_SECRET_KEY) holding the Hub token, for gated models: its readers wait for it."""
    depends_on: NotRequired[Sequence[pulumi.Resource]]
    """The gateway's CRDs and the namespace."""
    scrape_dependencies: NotRequired[Sequence[pulumi.Resource]]
    """What the PodMonitor waits for besides the cluster (the managed Prometheus add-on)."""
    cpu_pool_scales: NotRequired[bool]
    """The CPU pool may add a node (minCount < maxCount): the staging Job's deadline allows for one."""


class ServedModel(pulumi.ComponentResource):
    """A model's servers, InferencePool + picker, HTTPRoute, PodMonitor and ScaledObject."""

    waiting_query: str
    kv_cache_query: str

    def __init__(self, name: str, args: ServedModelArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:ServedModel", name, None, opts)
        model, pool, ns, handle = args["settings"], args["pool"], args["namespace"], args["cluster"]
        in_cluster = pulumi.ResourceOptions.merge(
            handle.k8s_options(self), pulumi.ResourceOptions(depends_on=list(args.get("depends_on", [])))
        )

        def after(*resources: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=list(resources)))

        labels = model_labels(model.name)
        cache_claim = None
        waits: list[pulumi.Resource] = []
        if model.weights.hugging_face:
            cache_claim = f"weights-cache-{model.name}"
            waits.append(
                k8s.core.v1.PersistentVolumeClaim(
                    f"{name}-weights-cache",
                    metadata={"name": cache_claim, "namespace": ns, "labels": labels},
                    spec={
                        "access_modes": ["ReadWriteMany"],
                        "storage_class_name": args["cache_storage_class"],
                        "resources": {"requests": {"storage": f"{args['cache_gib']}Gi"}},
                    },
                    # The downloaded weights outlive every replica: a new one loads them instead of the Hub's.
                    opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(protect=handle.protect)),
                )
            )
        secret = args.get("token_secret") if model.weights.token_secret else None
        cpu_pool_scales = args.get("cpu_pool_scales", True)
        if cache_claim:
            # The servers wait for the checkpoint in the cache; the download waits for the token it reads.
            waits.append(
                k8s.batch.v1.Job(
                    f"{name}-weights-stage",
                    metadata={
                        "name": f"{STAGING_JOB_PREFIX}{model.name}",
                        "namespace": ns,
                        "labels": labels,
                        "annotations": {
                            **CHECKOV_SKIPS,
                            "pulumi.com/timeoutSeconds": str(
                                staging_deadline_seconds(model, cpu_pool_scales) + STAGING_WAIT_MARGIN_SECONDS
                            ),
                        },
                    },
                    spec=cast(
                        k8s.batch.v1.JobSpecArgsDict,
                        staging_job_spec(model, cache_claim, HUGGING_FACE_SECRET if secret else None, cpu_pool_scales),
                    ),
                    opts=pulumi.ResourceOptions.merge(
                        after(*waits, *([secret] if secret else [])),
                        # A Job's pod template is immutable: a new revision replaces it under the same name.
                        pulumi.ResourceOptions(delete_before_replace=True),
                    ),
                )
            )

        def pod(multi_node: str | None = None, role: str | None = None) -> dict[str, Any]:
            pod_labels = {**labels, **({"role": role} if role else {})}
            spec = vllm_pod_spec(model, pool, cache_claim, multi_node)
            return {"metadata": {"labels": pod_labels}, "spec": spec}

        if model.nodes > 1:
            server: pulumi.Resource = k8s.apiextensions.CustomResource(
                f"{name}-servers",
                api_version=LWS_API_VERSION,
                kind="LeaderWorkerSet",
                metadata={"name": model.name, "namespace": ns, "labels": labels},
                spec={
                    "replicas": model.min_replicas,
                    # The leader's vLLM answers /health only once every worker has joined (--nnodes): its
                    # workers must start beside it, not after it is Ready (lws pkg/controllers/pod_controller.go).
                    "startupPolicy": "LeaderCreated",
                    "leaderWorkerTemplate": {
                        "size": model.nodes,
                        "restartPolicy": "RecreateGroupOnPodRestart",
                        "leaderTemplate": pod("leader", "leader"),
                        "workerTemplate": pod("worker", "worker"),
                    },
                },
                opts=pulumi.ResourceOptions.merge(
                    after(*waits), pulumi.ResourceOptions(ignore_changes=["spec.replicas"])
                ),
            )
        else:
            server = k8s.apps.v1.Deployment(
                f"{name}-servers",
                metadata={
                    "name": model.name,
                    "namespace": ns,
                    "labels": labels,
                    "annotations": {
                        **CHECKOV_SKIPS,
                        "pulumi.com/timeoutSeconds": str(ready_timeout_seconds(pool, model)),
                    },
                },
                spec=cast(
                    k8s.apps.v1.DeploymentSpecArgsDict,
                    {
                        "replicas": model.min_replicas,
                        "selector": {"matchLabels": labels},
                        # No surge: a surge pod would need spare GPUs, often a new node.
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                        "template": pod(),
                    },
                ),
                # KEDA owns the replica count once the ScaledObject exists.
                opts=pulumi.ResourceOptions.merge(
                    after(*waits), pulumi.ResourceOptions(ignore_changes=["spec.replicas"])
                ),
            )
        picker = k8s.helm.v3.Release(
            f"{name}-pool",
            name=model.name,
            chart=INFERENCE_POOL_CHART,
            version=INFERENCE_POOL_CHART_VERSION,
            namespace=ns,
            values=inference_pool_values(model),
            opts=in_cluster,
        )
        k8s.apiextensions.CustomResource(
            f"{name}-route",
            api_version="gateway.networking.k8s.io/v1",
            kind="HTTPRoute",
            metadata={"name": model.name, "namespace": ns, "labels": labels},
            spec=http_route(model, ns),
            opts=after(picker),
        )
        k8s.apiextensions.CustomResource(
            f"{name}-pod-monitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": f"vllm-{model.name}", "namespace": ns, "labels": labels},
            spec=pod_monitor(model, ns),
            opts=pulumi.ResourceOptions.merge(
                in_cluster,
                pulumi.ResourceOptions(depends_on=[handle.cluster, *args.get("scrape_dependencies", [])]),
            ),
        )
        # Every model's SLO reads its picker (model_dashboards.py caller_ttft_bound).
        k8s.apiextensions.CustomResource(
            f"{name}-picker-monitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": f"epp-{model.name}", "namespace": ns, "labels": labels},
            spec={
                **SCRAPE_LABEL_LIMITS,
                "selector": {"matchLabels": picker_labels(model.name)},
                "namespaceSelector": {"matchNames": [ns]},
                "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s"}],
            },
            opts=pulumi.ResourceOptions.merge(
                in_cluster,
                pulumi.ResourceOptions(depends_on=[handle.cluster, picker, *args.get("scrape_dependencies", [])]),
            ),
        )
        object_name = f"{model.name}-serving"
        auth, _ = keda_trigger_authentication(self, name, args, f"id-model-{model.name}-keda", object_name, ns)
        self.waiting_query = waiting_query(ns, model.name)
        self.kv_cache_query = kv_cache_query(ns, model.name)
        k8s.apiextensions.CustomResource(
            f"{name}-scaled-object",
            api_version=KEDA_API_VERSION,
            kind="ScaledObject",
            metadata=keda_metadata(object_name, ns),
            spec=scaled_object_spec(model, ns, args["prometheus_query_endpoint"], object_name),
            opts=pulumi.ResourceOptions.merge(
                keda_object_options(self, handle), pulumi.ResourceOptions(depends_on=[auth, server])
            ),
        )
        self.register_outputs({"waiting_query": self.waiting_query, "kv_cache_query": self.kv_cache_query})


def team_namespaces_of(models: Sequence[ServedModelConfig], namespaces: Mapping[str, str]) -> dict[str, str]:
    return {team: namespaces[team] for model in models for team in model.teams}


class ModelServingArgs(KedaWiringArgs):
    settings: InferenceConfig
    gpu_pools: Sequence[GpuPoolConfig]
    teams: Sequence[str]
    """`training.teams[].name` in config order: a team's listener port follows its place."""
    team_namespaces: Mapping[str, str]
    """Namespace of every training team."""
    created_namespaces: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Team -> namespace name output of the resource creating it (the training stage's)."""
    cache_storage_class: str
    action_group_id: pulumi.Input[str]
    """Where the SLO alerts notify."""
    alerts_enabled: bool
    """`monitoring.alerts.enabled`: false keeps the SLO rules but stops them from firing."""
    rule_scopes: Sequence[pulumi.Input[str]]
    """The Azure Monitor workspace and the cluster (scopes of a Prometheus rule group)."""
    hugging_face_token: NotRequired[pulumi.Input[str] | None]
    """The stack secret `huggingFaceToken`, for models with tokenSecret."""
    scrape_dependencies: Sequence[pulumi.Resource]
    """What a PodMonitor waits for: the cluster and the managed Prometheus add-on that installs its CRD."""
    cpu_pool_scales: NotRequired[bool]
    """`cpuPool.minCount < maxCount`: a staging Job may wait for a new CPU node. Default true."""


class ModelServing(pulumi.ComponentResource):
    """The models namespace, the gateway, and every configured model with its SLO alert (its dashboard: addons.py)."""

    endpoints: dict[str, dict[str, str]]
    """Model -> team -> base URL of the OpenAI-compatible API for that team."""

    def __init__(self, name: str, args: ModelServingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:ModelServing", name, None, opts)
        cfg, handle = args["settings"], args["cluster"]
        ns = cfg.namespace
        in_cluster = handle.k8s_options(self)
        calling = [team for model in cfg.models for team in model.teams]
        ports = team_ports(list(args["teams"]), calling)
        gateway = InferenceGateway(
            f"{name}-gateway",
            {
                "cluster": handle,
                "models_namespace": ns,
                "team_ports": ports,
                "team_namespaces": {team: args["team_namespaces"][team] for team in ports},
                "internal": cfg.gateway_internal,
                "created_namespaces": args.get("created_namespaces", {}),
                "team_models": {team: [m.name for m in cfg.models if team in m.teams] for team in ports},
                "backend_ports": [VLLM_PORT, EPP_GRPC_PORT],
                "requests_per_minute": cfg.team_requests_per_minute,
            },
            pulumi.ResourceOptions(parent=self),
        )
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": ns, "labels": models_namespace_labels(cfg.models)},
            opts=in_cluster,
        )
        after_namespace = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace]))
        platform_ingress(f"{name}-{ns}", ns, after_namespace)
        pods = {m.name: ModelPods(model_labels(m.name), picker_labels(m.name), m.nodes > 1) for m in cfg.models}
        models_egress(f"{name}-{ns}", ns, pods, VLLM_PORT, after_namespace)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-from-gateway",
            metadata={"name": "from-inference-gateway", "namespace": ns},
            spec=models_ingress(),
            opts=after_namespace,
        )
        token_secret = None
        token = args.get("hugging_face_token")
        if token is not None and any(m.weights.token_secret for m in cfg.models):
            token_secret = k8s.core.v1.Secret(
                f"{name}-hugging-face-token",
                metadata={"name": HUGGING_FACE_SECRET, "namespace": ns},
                string_data={HUGGING_FACE_SECRET_KEY: pulumi.Output.secret(token)},
                opts=after_namespace,
            )
        pools = {pool.name: pool for pool in args["gpu_pools"]}
        base = handle.cluster_name
        crds: list[pulumi.Resource] = [namespace, *gateway.crds]
        if any(model.nodes > 1 for model in cfg.models):
            lws_namespace = platform_namespace(f"{name}-lws-namespace", LWS_NAMESPACE, "baseline", in_cluster)
            crds.append(
                k8s.helm.v3.Release(
                    f"{name}-lws",
                    name="lws",
                    chart=LWS_CHART,
                    version=LWS_VERSION,
                    namespace=LWS_NAMESPACE,
                    values=lws_values(),
                    opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[lws_namespace])),
                )
            )
        self.endpoints = {}
        for model in cfg.models:
            pool = pools[model.pool]
            ServedModel(
                f"{name}-{model.name}",
                {
                    "cluster": handle,
                    "monitor_workspace_id": args["monitor_workspace_id"],
                    "prometheus_query_endpoint": args["prometheus_query_endpoint"],
                    "settings": model,
                    "pool": pool,
                    "namespace": ns,
                    "cache_storage_class": args["cache_storage_class"],
                    "cache_gib": cache_gib(model),
                    "token_secret": token_secret,
                    "depends_on": crds,
                    "scrape_dependencies": list(args["scrape_dependencies"]),
                    "cpu_pool_scales": args.get("cpu_pool_scales", True),
                },
                pulumi.ResourceOptions(parent=self),
            )
            holds = picker_holds_requests(model)
            spec = slo_alert(ns, model.name, model.slo.time_to_first_token_p90_seconds, holds)
            alertsmanagement.PrometheusRuleGroup(
                f"{name}-{model.name}-slo",
                resource_group_name=handle.resource_group_name,
                location=handle.location,
                rule_group_name=base.apply(lambda cluster, m=model.name: f"ModelSlo-{m}-{cluster}"[:260]),
                cluster_name=base,
                scopes=list(args["rule_scopes"]),
                interval="PT1M",
                enabled=True,
                description=f"Time-to-first-token SLO of model {model.name}",
                rules=alert_rules([spec], args["action_group_id"], args["alerts_enabled"], {"model": model.name}),
                tags=dict(handle.tags),
                opts=pulumi.ResourceOptions(parent=self),
            )
            service = f"http://{GATEWAY_SERVICE}.{GATEWAY_NAMESPACE}.svc.cluster.local"
            self.endpoints[model.name] = {team: f"{service}:{ports[team]}/{model.name}/v1" for team in model.teams}
        self.register_outputs({"endpoints": self.endpoints})


def lws_values() -> dict[str, Any]:
    """LeaderWorkerSet chart values (charts/lws/values.yaml at v0.10.0): in git the image tag is `main`; the
    published chart is stamped with the release tag (hack/push-chart.sh), set here all the same."""
    return {
        "image": {"manager": {**mirrored_repository_and_tag(LWS_IMAGE), "pullPolicy": "IfNotPresent"}},
        "nodeSelector": cpu_node_selector(),
        # The chart asks 1 CPU / 1 GiB; a controller reconciling a few groups needs a fraction on the small CPU pool.
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
    }


def check_servable(models: Sequence[ServedModelConfig]) -> None:
    """ConfigError, before anything registers, for models this release cannot serve: weights in Blob need a
    read-only Blob CSI volume (account, container, the node identity's read grant) that the platform does not
    create yet, and a server pointed at an empty path never becomes ready."""
    problems = [
        f"inference.models[{i}].weights.blob: got {m.weights.blob!r}; serving weights from Blob is not deployed by "
        "this release (no read-only Blob mount yet): use huggingFace with a revision (weights are cached on a "
        "ReadWriteMany claim and read from there by every replica)"
        for i, m in enumerate(models)
        if m.weights.blob is not None
    ]
    if problems:
        raise ConfigError(problems, source="inference.models")


def cache_gib(model: ServedModelConfig) -> int:
    """Room for the Hub download: the safetensors checkpoint as published (16-bit; HUB_DOWNLOAD_EXCLUDES keeps a
    second, original copy out), with half again for the tokenizer, configs and a revision staged beside it."""
    checkpoint = model.shape.weight_bytes("bfloat16") / GIB
    return max(10, math.ceil(checkpoint * 1.5) + 5)


def models_ingress() -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """The gateway pods reach the model servers' API and the pickers' ext_proc port, nothing else of the namespace."""
    return {
        "pod_selector": {},
        "policy_types": ["Ingress"],
        "ingress": [
            {
                "from_": [
                    {
                        "namespace_selector": {"match_labels": {NAMESPACE_NAME_LABEL: GATEWAY_NAMESPACE}},
                        "pod_selector": {"match_labels": {GATEWAY_POD_LABEL: GATEWAY_NAME}},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": VLLM_PORT}, {"protocol": "TCP", "port": EPP_GRPC_PORT}],
            }
        ],
    }
