"""The inference stage of AksGpuPlatform: KEDA scaling of the configured workloads, the sample server, and the
served models behind the inference gateway."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
from pydantic import SecretStr

from aks_gpu_platform.config.cluster.node_pools import CpuPoolConfig
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import InferenceConfig
from aks_gpu_platform.config.inference.section import AutoscalingConfig
from aks_gpu_platform.config.monitoring.section import MonitoringConfig
from aks_gpu_platform.config.storage.section import BlobClassesConfig
from aks_gpu_platform.config.training.section import TrainingConfig

from ..monitoring.gpu_monitoring import GpuMonitoring
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from ..training.team_storage import TeamContainer
from .autoscaling import GpuAutoscaling, KedaWiringArgs
from .serving import ModelServing
from .triton_sample import GpuInferenceSample


def build_inference(
    place: Placement,
    handle: ClusterHandle,
    metrics: GpuMonitoring,
    team_namespaces: Mapping[str, pulumi.Input[str]] | None,
    autoscaling: AutoscalingConfig,
    inference: InferenceConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    training: TrainingConfig,
    cpu_pool: CpuPoolConfig,
    monitoring: MonitoringConfig,
    blob_classes: BlobClassesConfig,
    hugging_face_token: SecretStr | None,
    *,
    sample_pools: list[str] | None,
    team_containers: Mapping[str, TeamContainer] | None,
    weights_endpoint_range: str | None,
) -> ModelServing | None:
    """`team_namespaces`: team -> its namespace as the training stage created it (the gateway egress lands there);
    `sample_pools`: the GPU pools the sample may keep replicas on (PlatformConfig.sample_inference_pools);
    `team_containers`: team -> its Blob container, which models streamed from it read; `weights_endpoint_range`:
    the subnet of that account's private endpoint (None: its public one). Returns the model serving, None without
    `inference.models`."""
    keda: KedaWiringArgs = {
        "cluster": handle,
        "monitor_workspace_id": metrics.monitor_workspace_id,
        "prometheus_query_endpoint": metrics.prometheus_query_endpoint,
    }
    _build_gpu_autoscaling(place, keda, autoscaling, gpu_pools, sample_pools)
    if not inference.models:
        return None
    # None only when no model caches Hub weights (check_weights_cache_class, config/rules.py).
    cache_class = blob_classes.read_write_many_class
    needs_token = any(m.weights.token_secret for m in inference.models)
    return ModelServing(
        place.role("serving"),
        {
            **keda,
            "settings": inference,
            "gpu_pools": gpu_pools,
            "teams": [t.name for t in training.teams],
            "team_namespaces": {t.name: t.namespace_name for t in training.teams},
            "created_namespaces": dict(team_namespaces or {}),
            "cache_storage_class": cache_class,
            "team_containers": dict(team_containers or {}),
            "weights_endpoint_range": weights_endpoint_range,
            "action_group_id": metrics.action_group_id,
            "alerts_enabled": monitoring.alerts.enabled,
            "rule_scopes": [metrics.monitor_workspace_id, handle.cluster_id],
            "hugging_face_token": (
                pulumi.Output.secret(hugging_face_token.get_secret_value())
                if needs_token and hugging_face_token is not None
                else None
            ),
            "scrape_dependencies": metrics.scrape_dependencies,
            "cpu_pool_scales": cpu_pool.min_count < cpu_pool.max_count,
        },
        place.child("serving"),
    )


def _build_gpu_autoscaling(
    place: Placement,
    keda: KedaWiringArgs,
    autoscaling: AutoscalingConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    sample_pools: list[str] | None,
) -> None:
    """KEDA scaling of each `autoscaling.targets` Deployment, and the sample server when enabled."""
    for target in autoscaling.targets:
        scaler = f"scale-{target.namespace}-{target.deployment}"
        GpuAutoscaling(
            place.role(scaler),
            # The identity keeps the name it had when the scaler sat at the top of the stack.
            {**keda, "settings": target, "identity_name": f"id-{scaler}-keda"},
            place.child(scaler),
        )
    if autoscaling.sample_inference.enabled:
        GpuInferenceSample(
            place.role("inference-sample"),
            {
                **keda,
                "settings": autoscaling.sample_inference,
                "gpu_pools": gpu_pools,
                # Off the pools whose GPUs the team quotas guarantee in full.
                "pools": sample_pools,
                "identity_name": "id-inference-sample-scaling-keda",
            },
            place.child("inference-sample"),
        )
