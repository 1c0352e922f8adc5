"""A multi-node training platform; exports what training stacks read (examples/training-job)."""

import pulumi

from aks_gpu_platform.components.platform import AksGpuPlatform
from aks_gpu_platform.config import load_deployment_config

platform = AksGpuPlatform("gpu", load_deployment_config())
for name, value in platform.stack_outputs().items():  # kubeconfig, trainingTeams, lustrePvcName, ...
    pulumi.export(name, value)
