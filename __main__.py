"""aks-gpu-platform: load and validate the stack's config, build the platform, export its outputs."""

import pulumi

from aks_gpu_platform.components.platform import AksGpuPlatform
from aks_gpu_platform.config import load_deployment_config


def main() -> None:
    # A bad value or a placeholder stops here with one ConfigError, before any resource exists.
    config = load_deployment_config()
    platform = AksGpuPlatform("platform", config)
    for name, value in platform.stack_outputs().items():
        pulumi.export(name, value)


main()
