"""The inference stage of AksGpuPlatform: KEDA scaling of the configured workloads and the sample server."""

from __future__ import annotations

from aks_gpu_platform.config.platform import PlatformConfig

from ..monitoring.gpu_monitoring import GpuMonitoring
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .autoscaling import GpuAutoscaling, KedaWiringArgs
from .triton_sample import GpuInferenceSample


def build_inference(cfg: PlatformConfig, place: Placement, handle: ClusterHandle, monitoring: GpuMonitoring) -> None:
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
