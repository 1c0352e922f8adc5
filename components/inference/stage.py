"""The inference stage of AksGpuPlatform: KEDA scaling of the configured workloads, the sample server, and the
served models behind the inference gateway."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi

from aks_gpu_platform.config.inference.streamed_weights import account_endpoint_range, streams_weights
from aks_gpu_platform.config.platform import PlatformConfig

from ..monitoring.gpu_monitoring import GpuMonitoring
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from ..training.team_storage import TeamContainer
from .autoscaling import GpuAutoscaling, KedaWiringArgs
from .gateway import ISTIO_NAMESPACE
from .serving import LWS_NAMESPACE, ModelServing
from .triton_sample import GpuInferenceSample


def serving_namespaces(cfg: PlatformConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Where served models put the platform's own pods: the controllers' namespaces (Istio, LeaderWorkerSet),
    which a GPU drain leaves alone, and those plus the models namespace, which the pod security policy leaves to
    the namespace's own Pod Security level. A drain does move model servers off a failing GPU node."""
    if not cfg.inference.models:
        return (), ()
    controllers = (ISTIO_NAMESPACE, LWS_NAMESPACE)
    return controllers, (*controllers, cfg.inference.namespace)


def build_inference(
    cfg: PlatformConfig,
    place: Placement,
    handle: ClusterHandle,
    monitoring: GpuMonitoring,
    team_namespaces: Mapping[str, pulumi.Input[str]] | None = None,
    team_containers: Mapping[str, TeamContainer] | None = None,
) -> ModelServing | None:
    """`team_namespaces`: team -> its namespace as the training stage created it (the gateway egress lands there);
    `team_containers`: team -> its Blob container, which models streamed from it read. Returns the model serving,
    None without `inference.models`."""
    keda: KedaWiringArgs = {
        "cluster": handle,
        "monitor_workspace_id": monitoring.monitor_workspace_id,
        "prometheus_query_endpoint": monitoring.prometheus_query_endpoint,
    }
    for target in cfg.autoscaling.targets:
        scaler = f"scale-{target.namespace}-{target.deployment}"
        GpuAutoscaling(
            place.role(scaler),
            # The identity keeps the name it had when the scaler sat at the top of the stack.
            {**keda, "settings": target, "identity_name": f"id-{scaler}-keda"},
            place.child(scaler),
        )
    if cfg.autoscaling.sample_inference.enabled:
        GpuInferenceSample(
            place.role("inference-sample"),
            {
                **keda,
                "settings": cfg.autoscaling.sample_inference,
                "gpu_pools": cfg.gpu_pools,
                # Off the pools whose GPUs the team quotas guarantee in full.
                "pools": cfg.sample_inference_pools(),
                "identity_name": "id-inference-sample-scaling-keda",
            },
            place.child("inference-sample"),
        )
    if not cfg.inference.models:
        return None
    needs_token = any(m.weights.token_secret for m in cfg.inference.models)
    streams = any(streams_weights(m) for m in cfg.inference.models)
    return ModelServing(
        place.role("serving"),
        {
            **keda,
            "settings": cfg.inference,
            "gpu_pools": cfg.gpu_pools,
            "teams": [t.name for t in cfg.training.teams],
            "team_namespaces": {t.name: t.namespace_name for t in cfg.training.teams},
            "created_namespaces": dict(team_namespaces or {}),
            "cache_storage_class": cfg.weights_cache_class,
            "team_containers": dict(team_containers or {}),
            "weights_endpoint_range": account_endpoint_range(cfg.storage, cfg.network) if streams else None,
            "action_group_id": monitoring.action_group_id,
            "alerts_enabled": cfg.monitoring.alerts.enabled,
            "rule_scopes": [monitoring.monitor_workspace_id, handle.cluster_id],
            "hugging_face_token": (
                pulumi.Output.secret(cfg.hugging_face_token.get_secret_value())
                if needs_token and cfg.hugging_face_token is not None
                else None
            ),
            "scrape_dependencies": monitoring.scrape_dependencies,
            "add_dashboard": monitoring.add_dashboard,
            "cpu_pool_scales": cfg.cpu_pool.min_count < cfg.cpu_pool.max_count,
        },
        place.child("serving"),
    )
