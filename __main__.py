"""aks-gpu-platform: load and validate the stack's config, build the platform (or a fleet), export its outputs."""

import pulumi

from aks_gpu_platform.components.fleet.aks_gpu_fleet import AksGpuFleet
from aks_gpu_platform.components.platform import AksGpuPlatform
from aks_gpu_platform.config import load_deployment_config, read_stack_settings
from aks_gpu_platform.config.fleet.section import is_fleet_stack, load_fleet_deployment


def main() -> None:
    # A bad value or a placeholder stops here with one ConfigError, before any resource exists.
    settings = read_stack_settings()
    if is_fleet_stack(settings):
        outputs = AksGpuFleet("fleet", load_fleet_deployment(settings)).stack_outputs()
    else:
        outputs = AksGpuPlatform("platform", load_deployment_config()).stack_outputs()
    for name, value in outputs.items():
        pulumi.export(name, value)


main()
