"""A distributed training Job on an aks-gpu-platform stack, wired through a StackReference.

Reads the platform's `kubeconfig`, `lustrePvcName`, `lustreNamespace`, `gpuPoolNames` and
`gpuTolerations` outputs; schedules with the platform's own GPU rules (`components.gpu_scheduling`,
installed with `pip install` from the platform repository).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, model_validator

from components.gpu_scheduling import GPU_POOL_NAME_LABEL_KEY, GPU_RESOURCE, gpu_pod_scheduling, gpu_tolerations
from config.base import ConfigModel
from config.errors import field_error
from config.loader import read_stack_settings, validate_section

PROJECT = "training-job"
LUSTRE_MOUNT = "/mnt/lustre"
MASTER_PORT = 29500


class TrainingJobConfig(ConfigModel):
    platform_stack: str = Field(pattern=r"^[\w.-]+/[\w.-]+/[\w.-]+$")
    job_name: str = Field(default="train", pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
    completions: int = Field(default=2, ge=1, le=64)
    parallelism: int = Field(default=2, ge=1, le=64)
    gpu_pool: str | None = None
    image: str = Field(default="nvcr.io/nvidia/pytorch:25.01-py3", pattern=r"^[^:@\s]+(:[\w.-]+|@sha256:[0-9a-f]{64})$")
    steps: int = Field(default=1000, ge=1)
    cpu: str = "8"
    memory: str = "48Gi"
    backoff_limit: int = Field(default=2, ge=0, le=10)

    @model_validator(mode="after")
    def _every_rank_at_once(self) -> TrainingJobConfig:
        if self.parallelism != self.completions:
            raise field_error(
                "parallelism",
                self.parallelism,
                f"equal to completions ({self.completions}): ranks rendezvous all at once",
            )
        return self


def node_selector(pool_names: list[str], wanted: str | None) -> dict[str, str]:
    """Any GPU node, or one named pool, which must be one the platform exports."""
    selector: dict[str, str] = dict(gpu_pod_scheduling()["nodeSelector"])
    if wanted is None:
        return selector
    if wanted not in pool_names:
        raise pulumi.RunError(f"gpuPool: {wanted!r} is not a GPU pool of the platform stack (has {pool_names})")
    return {**selector, GPU_POOL_NAME_LABEL_KEY: wanted}


def main() -> None:
    cfg = validate_section(TrainingJobConfig, read_stack_settings(PROJECT), source="training-job config")
    platform = pulumi.StackReference(cfg.platform_stack)
    namespace = platform.require_output("lustreNamespace")
    pvc_name = platform.require_output("lustrePvcName")
    pool_names = platform.require_output("gpuPoolNames")
    # Every taint of the platform's GPU pools (Spot's and extra ones); a platform stack from before this
    # output exports none: then only the GPU taint that every GPU pool carries.
    tolerations = platform.get_output("gpuTolerations").apply(lambda exported: exported or gpu_tolerations())
    provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))
    opts = pulumi.ResourceOptions(provider=provider)

    name = cfg.job_name
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": PROJECT}

    def meta(object_name: str = name) -> dict[str, Any]:
        return {"name": object_name, "namespace": namespace, "labels": labels}

    script = k8s.core.v1.ConfigMap(
        f"{name}-script",
        metadata=meta(f"{name}-script"),
        data={"train.py": (Path(__file__).parent / "train.py").read_text()},
        opts=opts,
    )
    # Headless: gives every rank a stable DNS name (<job>-<index>.<job>) for the rendezvous.
    service = k8s.core.v1.Service(
        f"{name}-ranks",
        metadata=meta(),
        spec={
            "clusterIP": "None",
            "selector": labels,
            "publishNotReadyAddresses": True,
            "ports": [{"name": "rendezvous", "port": MASTER_PORT}],
        },
        opts=opts,
    )
    checkpoint_dir = f"{LUSTRE_MOUNT}/checkpoints/{name}"
    container: dict[str, Any] = {
        "name": "trainer",
        "image": cfg.image,
        "command": ["python", "/opt/train/train.py"],
        "env": [
            {"name": "MASTER_ADDR", "value": f"{name}-0.{name}"},
            {"name": "MASTER_PORT", "value": str(MASTER_PORT)},
            {"name": "WORLD_SIZE", "value": str(cfg.completions)},
            {"name": "CHECKPOINT_DIR", "value": checkpoint_dir},
            {"name": "STEPS", "value": str(cfg.steps)},
        ],
        "ports": [{"name": "rendezvous", "containerPort": MASTER_PORT}],
        "resources": {
            "requests": {"cpu": cfg.cpu, "memory": cfg.memory, GPU_RESOURCE: "1"},
            "limits": {"cpu": cfg.cpu, "memory": cfg.memory, GPU_RESOURCE: "1"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "lustre", "mountPath": LUSTRE_MOUNT},
            {"name": "script", "mountPath": "/opt/train", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }
    job = k8s.batch.v1.Job(
        name,
        metadata=meta(),
        spec={
            "completionMode": "Indexed",
            "completions": cfg.completions,
            "parallelism": cfg.parallelism,
            "backoffLimit": cfg.backoff_limit,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "subdomain": name,
                    "restartPolicy": "Never",
                    "nodeSelector": pool_names.apply(lambda pools: node_selector(pools, cfg.gpu_pool)),
                    "tolerations": tolerations,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 1000,
                        "runAsGroup": 1000,
                        "fsGroup": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "lustre", "persistentVolumeClaim": {"claimName": pvc_name}},
                        {"name": "script", "configMap": {"name": script.metadata["name"]}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
                    ],
                },
            },
        },
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[service]),
    )
    # Blocks voluntary evictions (node drains, upgrades) of running ranks: losing one stalls them all.
    k8s.policy.v1.PodDisruptionBudget(
        f"{name}-ranks",
        metadata=meta(),
        spec={"minAvailable": cfg.parallelism, "selector": {"matchLabels": labels}},
        opts=opts,
    )

    pulumi.export("jobName", job.metadata["name"])
    pulumi.export("namespace", namespace)
    pulumi.export("checkpointDir", checkpoint_dir)


main()
