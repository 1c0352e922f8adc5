"""A sample GPU inference server (Triton) on the GPU pools, scaled by KEDA on its GPU utilisation."""

from collections.abc import Sequence
from typing import NotRequired, cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.gpu.scheduling import (
    GPU_RESOURCE,
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    gpu_pod_scheduling_on,
    restricted_pod_security_context,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.section import SampleInferenceConfig, ScalingTargetConfig

from ..shared.workloads import pod_security_labels
from .autoscaling import GpuAutoscaling, KedaWiringArgs

HTTP_PORT = 8000
RUN_AS_USER = 1000  # the image's triton-server user
# checkov skips, each with its reason (the scan in tests/platform/test_checkov.py reads them from the object).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=the Triton tag is pinned by version and multi-arch; a digest would pin one arch",
    "checkov.io/skip2": "CKV_K8S_15=IfNotPresent: a pinned multi-GB image; Always ties every pod start to nvcr.io",
    "checkov.io/skip3": "CKV_K8S_40=runs as the image's own non-root triton-server user (UID 1000)",
}


class GpuInferenceSampleArgs(KedaWiringArgs):
    settings: SampleInferenceConfig
    """The `autoscaling.sampleInference` config section."""
    gpu_pools: NotRequired[Sequence[GpuPoolConfig]]
    """The GPU pools: the server tolerates all their taints (a Spot-only platform included)."""
    pools: NotRequired[Sequence[str] | None]
    """The GPU pools its replicas may run on (`PlatformConfig.sample_inference_pools`: those whose team quotas
    leave room for them); None or absent: any GPU pool."""
    identity_name: NotRequired[str]
    """Azure name of the KEDA identity (default `id-<component name>-scaling-keda`)."""


def _container(cfg: SampleInferenceConfig) -> k8s.core.v1.ContainerArgsDict:
    live: k8s.core.v1.ProbeArgsDict = {"http_get": {"path": "/v2/health/live", "port": "http"}, "period_seconds": 10}
    gpus = str(cfg.gpus_per_pod)
    return {
        "name": "triton",
        "image": cfg.image,
        "image_pull_policy": "IfNotPresent",
        "args": ["tritonserver", "--model-repository=/models", "--model-control-mode=explicit"],
        "ports": [{"name": "http", "container_port": HTTP_PORT, "protocol": "TCP"}],
        "startup_probe": {**live, "failure_threshold": 30},
        "liveness_probe": {**live, "failure_threshold": 3},
        "readiness_probe": {"http_get": {"path": "/v2/health/ready", "port": "http"}, "period_seconds": 5},
        "resources": {
            "requests": {"cpu": cfg.cpu_request, "memory": cfg.memory_request, GPU_RESOURCE: gpus},
            # Limits equal to requests: Guaranteed QoS, so a busy neighbour cannot starve the GPU feeder.
            "limits": {"cpu": cfg.cpu_request, "memory": cfg.memory_request, GPU_RESOURCE: gpus},
        },
        "security_context": cast(k8s.core.v1.SecurityContextArgsDict, RESTRICTED_CONTAINER_SECURITY_CONTEXT),
        "volume_mounts": [{"name": "models", "mount_path": "/models"}, {"name": "tmp", "mount_path": "/tmp"}],
    }


def _labels(cfg: SampleInferenceConfig) -> dict[str, str]:
    return {"app.kubernetes.io/name": cfg.name}


def deployment_spec(
    cfg: SampleInferenceConfig, gpu_pools: Sequence[GpuPoolConfig] = (), pools: Sequence[str] | None = None
) -> k8s.apps.v1.DeploymentSpecArgsDict:
    """Deployment spec without `replicas`: KEDA owns the replica count."""
    labels = _labels(cfg)
    scheduling = gpu_pod_scheduling_on(gpu_pools, pools)
    pod: k8s.core.v1.PodSpecArgsDict = {
        "node_selector": scheduling["nodeSelector"],
        "tolerations": scheduling["tolerations"],
        "automount_service_account_token": False,
        "termination_grace_period_seconds": 60,
        "security_context": cast(
            k8s.core.v1.PodSecurityContextArgsDict, restricted_pod_security_context(RUN_AS_USER, fs_group=True)
        ),
        "containers": [_container(cfg)],
        "volumes": [{"name": "models", "empty_dir": {}}, {"name": "tmp", "empty_dir": {"size_limit": "1Gi"}}],
    }
    if "affinity" in scheduling:  # kept to the pools with room beside the team quotas
        pod["affinity"] = cast(k8s.core.v1.AffinityArgsDict, scheduling["affinity"])
    return {
        "selector": {"match_labels": labels},
        # No surge: a surge pod would need a spare GPU, often a whole new node.
        "strategy": {"type": "RollingUpdate", "rolling_update": {"max_surge": 0, "max_unavailable": 1}},
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }


class GpuInferenceSample(pulumi.ComponentResource):
    """Namespace, Triton Deployment on GPU nodes, PodDisruptionBudget, NetworkPolicy, and its GpuAutoscaling."""

    namespace: pulumi.Output[str]
    """Namespace of the sample."""
    autoscaling: GpuAutoscaling
    """The KEDA scaling of the sample."""

    def __init__(self, name: str, args: GpuInferenceSampleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuInferenceSample", name, None, opts)
        cfg = args["settings"]
        in_cluster = args["cluster"].k8s_options(self)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": cfg.namespace, "labels": pod_security_labels("restricted")},
            opts=in_cluster,
        )
        self.namespace = namespace.metadata.name
        deployment = self._server(name, args, in_cluster)
        self._disruption_budget(name, cfg, in_cluster)
        self._network_policy(name, cfg, in_cluster)
        self.autoscaling = self._scaling(name, args, deployment)
        self.register_outputs({"namespace": self.namespace})

    def _server(
        self, name: str, args: GpuInferenceSampleArgs, in_cluster: pulumi.ResourceOptions
    ) -> k8s.apps.v1.Deployment:
        """The Triton Deployment on the GPU pools it may use."""
        cfg = args["settings"]
        return k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={
                "name": cfg.name,
                "namespace": self.namespace,
                "labels": _labels(cfg),
                "annotations": CHECKOV_SKIPS,
            },
            spec=deployment_spec(cfg, list(args.get("gpu_pools", [])), args.get("pools")),
            opts=pulumi.ResourceOptions.merge(
                in_cluster,
                # KEDA sets spec.replicas; re-applying a value would undo its scaling on every update.
                pulumi.ResourceOptions(ignore_changes=["spec.replicas"]),
            ),
        )

    def _disruption_budget(self, name: str, cfg: SampleInferenceConfig, in_cluster: pulumi.ResourceOptions) -> None:
        labels = _labels(cfg)
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata={"name": cfg.name, "namespace": self.namespace, "labels": labels},
            # maxUnavailable, not minAvailable: a floor equal to the replica count would block every node drain.
            spec={"max_unavailable": 1, "selector": {"match_labels": labels}},
            opts=in_cluster,
        )

    def _network_policy(self, name: str, cfg: SampleInferenceConfig, in_cluster: pulumi.ResourceOptions) -> None:
        labels = _labels(cfg)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata={"name": cfg.name, "namespace": self.namespace, "labels": labels},
            # Inference clients in the namespace may reach the HTTP port; the server itself calls nothing.
            spec={
                "pod_selector": {"match_labels": labels},
                "policy_types": ["Ingress", "Egress"],
                "ingress": [
                    {
                        "from_": [{"pod_selector": {}}],
                        "ports": [{"protocol": "TCP", "port": HTTP_PORT}],
                    }
                ],
                "egress": [],
            },
            opts=in_cluster,
        )

    def _scaling(self, name: str, args: GpuInferenceSampleArgs, deployment: k8s.apps.v1.Deployment) -> GpuAutoscaling:
        """KEDA scaling of the Deployment on its GPU utilisation, once it exists."""
        cfg = args["settings"]
        return GpuAutoscaling(
            f"{name}-scaling",
            {
                "cluster": args["cluster"],
                "monitor_workspace_id": args["monitor_workspace_id"],
                "prometheus_query_endpoint": args["prometheus_query_endpoint"],
                "identity_name": args.get("identity_name", f"id-{name}-scaling-keda"),
                "settings": ScalingTargetConfig(
                    **cfg.scaling.model_dump(), namespace=cfg.namespace, deployment=cfg.name
                ),
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[deployment]),
        )
