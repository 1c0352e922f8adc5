"""A private GPU platform in an existing spoke VNet, and this project's own component beside it.

The platform comes whole from the `aks-gpu-platform:*` keys of the stack file; the GPU autoscaling
of one inference Deployment is this project's own, built on the platform's cluster handle and
workspace outputs, from a validated model, as any consumer component would be.
"""

import pulumi

from aks_gpu_platform.components.inference.autoscaling import GpuAutoscaling
from aks_gpu_platform.components.platform import AksGpuPlatform
from aks_gpu_platform.config import load_deployment_config, validate_section
from aks_gpu_platform.config.inference.section import ScalingTargetConfig

platform = AksGpuPlatform("gpu", load_deployment_config())

own = pulumi.Config()
serving = validate_section(
    ScalingTargetConfig,
    {
        "namespace": own.require("servingNamespace"),
        "deployment": own.require("servingDeployment"),
        "minReplicas": 1,  # GPU utilisation is reported by running pods only: never scale to zero on it
        "maxReplicas": 4,
        "targetUtilizationPercent": 70,
    },
    source="hub-spoke-private config",
)
scaling = GpuAutoscaling(
    f"scale-{serving.namespace}-{serving.deployment}",
    {
        "cluster": platform.handle,
        "monitor_workspace_id": platform.monitor_workspace_id,
        "prometheus_query_endpoint": platform.prometheus_query_endpoint,
        "settings": serving,
    },
)

pulumi.export("kubeconfig", platform.kubeconfig)
pulumi.export("clusterName", platform.cluster_name)
pulumi.export("servingScaledObject", scaling.scaled_object_name)
pulumi.export("servingKedaIdentityClientId", scaling.identity_client_id)
