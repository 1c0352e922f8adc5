"""The whole platform from this stack's `aks-gpu-platform:*` keys: the five-line import."""

import pulumi

from aks_gpu_platform import AksGpuPlatform, load_deployment_config

platform = AksGpuPlatform("gpu", load_deployment_config())
pulumi.export("kubeconfig", platform.kubeconfig)
