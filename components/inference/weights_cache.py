"""A served model's weights from the Hugging Face Hub: the ReadWriteMany claim that caches them, the Job that
stages the checkpoint into it before any server starts, and the Secret holding the Hub token for gated models.

The staging Job runs `hf download` from the vLLM image's own Hub client (huggingface_hub >= 2.0 at vLLM 0.34.0,
cli/download.py); the servers read the cache offline (vllm_server.py).
"""

import math
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.cold_start import AUTOSCALER_GPU_DELAY
from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import cpu_node_selector
from aks_gpu_platform.config.inference.adapters import adapter_download_bytes, adapter_staging_seconds
from aks_gpu_platform.config.inference.models import GIB, STAGING_JOB_PREFIX, ServedModelConfig
from aks_gpu_platform.config.inference.runtime import staging_seconds

from .adapters import adapter_staging
from .egress import WEIGHTS_STAGE_LABELS
from .vllm_server import (
    CACHE_MOUNT,
    CHECKOV_SKIPS,
    IMAGE_PULL_ALLOWANCE_SECONDS,
    VLLM_IMAGE,
    ModelPlacement,
    restricted_container_security,
    slowest_published_node,
    vllm_user_pod_security,
)

HUB_DOWNLOAD_EXCLUDES = ("original/*", "*.pth")
"""What the staging Job leaves on the Hub: Meta's repositories also carry the original PyTorch checkpoint
(original/consolidated.*.pth), as large again as the safetensors, which vLLM 0.34.0 loads whenever they are there
(vllm/model_executor/model_loader/default_loader.py: the first pattern with files wins, *.safetensors first).
`hf download` without patterns fetches the whole repository (huggingface_hub 2.x cli/download.py, --exclude a
repeatable option)."""
HUGGING_FACE_SECRET = "hugging-face-token"
HUGGING_FACE_SECRET_KEY = "token"
STAGING_WAIT_MARGIN_SECONDS = 60
"""`pulumi up` waits this much past the staging Job's deadline, so it reports the Job's own failure."""


def cache_claim_name(model: ServedModelConfig) -> str | None:
    """The weights cache claim the servers read, None for weights that are not from the Hub."""
    return f"weights-cache-{model.name}" if model.weights.hugging_face else None


def cache_gib(model: ServedModelConfig) -> int:
    """Room for the Hub download: the safetensors checkpoint as published (16-bit; HUB_DOWNLOAD_EXCLUDES keeps a
    second, original copy out), with half again for the tokenizer, configs and a revision staged beside it."""
    checkpoint = (model.shape.weight_bytes("bfloat16") + adapter_download_bytes(model)) / GIB
    return max(10, math.ceil(checkpoint * 1.5) + 5)


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
    return node + IMAGE_PULL_ALLOWANCE_SECONDS + staging_seconds(model.shape) + adapter_staging_seconds(model)


def _download_args(model: ServedModelConfig) -> list[str]:
    source = model.weights.hugging_face
    assert source is not None, "only Hub weights are staged (streamed ones: blob_weights.py)"
    args = ["download", source]
    for pattern in HUB_DOWNLOAD_EXCLUDES:
        # One pattern per flag: a repeatable option; a second bare pattern would be read as a file to download.
        args += ["--exclude", pattern]
    if model.weights.revision:
        args += ["--revision", model.weights.revision]
    return args


def _staging_container(model: ServedModelConfig, token_secret: str | None) -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        {"name": "HOME", "value": "/tmp/home"},
        {"name": "HF_HOME", "value": f"{CACHE_MOUNT}/huggingface"},
    ]
    if token_secret:
        token = {"secretKeyRef": {"name": token_secret, "key": HUGGING_FACE_SECRET_KEY}}
        env.append({"name": "HF_TOKEN", "valueFrom": token})
    return {
        "name": "stage-weights",
        "image": mirrored(VLLM_IMAGE),
        "imagePullPolicy": "IfNotPresent",
        "command": ["hf"],
        "args": _download_args(model),
        "env": env,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "securityContext": restricted_container_security(),
        "volumeMounts": [{"name": "cache", "mountPath": CACHE_MOUNT}, {"name": "tmp", "mountPath": "/tmp"}],
    }


def staging_job_spec(
    model: ServedModelConfig, cache_claim: str, token_secret: str | None, cpu_pool_scales: bool = True
) -> dict[str, Any]:
    """The Job that downloads a model's checkpoint into its weights cache once, before any server starts: one
    writer, so replicas never race on the Hub library's per-node file locks or its renames (a copy and a delete on
    a flat Blob namespace), and a large download is not restarted by a server's startup probe. On the CPU pool,
    with the vLLM image's own Hub client (`hf download`, huggingface_hub >= 2.0 at vLLM 0.34.0); a retried pod
    resumes the files already there. A model's adapters are downloaded first, each by an init container."""
    download = _staging_container(model, token_secret)
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
                "securityContext": vllm_user_pod_security(),
                **adapter_staging(model, download),
                "containers": [download],
                "volumes": [
                    {"name": "cache", "persistentVolumeClaim": {"claimName": cache_claim}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "5Gi"}},
                ],
            },
        },
    }


def weights_cache(
    name: str, placement: ModelPlacement, storage_class: str, gib: int, opts: pulumi.ResourceOptions
) -> k8s.core.v1.PersistentVolumeClaim:
    """The model's weights cache claim; `opts` protects it where the stack protects stateful resources."""
    return k8s.core.v1.PersistentVolumeClaim(
        f"{name}-weights-cache",
        metadata={"name": placement.cache_claim, "namespace": placement.namespace, "labels": placement.labels},
        spec={
            "access_modes": ["ReadWriteMany"],
            "storage_class_name": storage_class,
            "resources": {"requests": {"storage": f"{gib}Gi"}},
        },
        opts=opts,
    )


def staging_job(
    name: str, placement: ModelPlacement, reads_token: bool, cpu_pool_scales: bool, opts: pulumi.ResourceOptions
) -> k8s.batch.v1.Job:
    """`weights-stage-<model>`, filling the model's weights cache claim; `reads_token`: it downloads with the Hub
    token Secret."""
    model, cache_claim = placement.model, placement.cache_claim
    assert cache_claim is not None, "only Hub weights are staged, into their cache"
    wait = staging_deadline_seconds(model, cpu_pool_scales) + STAGING_WAIT_MARGIN_SECONDS
    return k8s.batch.v1.Job(
        f"{name}-weights-stage",
        metadata={
            "name": f"{STAGING_JOB_PREFIX}{model.name}",
            "namespace": placement.namespace,
            "labels": placement.labels,
            "annotations": {**CHECKOV_SKIPS, "pulumi.com/timeoutSeconds": str(wait)},
        },
        spec=cast(
            k8s.batch.v1.JobSpecArgsDict,
            staging_job_spec(model, cache_claim, HUGGING_FACE_SECRET if reads_token else None, cpu_pool_scales),
        ),
        opts=pulumi.ResourceOptions.merge(
            opts,
            # A Job's pod template is immutable: a new revision replaces it under the same name.
            pulumi.ResourceOptions(delete_before_replace=True),
        ),
    )


def hugging_face_token_secret(
    name: str, namespace: str, token: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret:
    """The stack's Hub token, which the staging Jobs of models with tokenSecret read."""
    return k8s.core.v1.Secret(
        f"{name}-hugging-face-token",
        metadata={"name": HUGGING_FACE_SECRET, "namespace": namespace},
        string_data={HUGGING_FACE_SECRET_KEY: pulumi.Output.secret(token)},
        opts=opts,
    )
