"""aks-gpu-platform: Pulumi components and typed config for a production GPU platform on AKS.

    from aks_gpu_platform import AksGpuPlatform, load_deployment_config

    platform = AksGpuPlatform("platform", load_deployment_config())

Everything lives under this one name. In the repository, `components/` and `config/` stay at the
top (the project's layout) and pyproject.toml's package-dir maps them here: into the wheel, and in a
checkout through its editable install (`make venvs`; docs/architecture.md, "Packaging"). The public
names load on first use, so `aks_gpu_platform.config.gpu.scheduling` still imports without the
Pulumi SDKs.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .moved_modules import install as install_moved_modules

if TYPE_CHECKING:
    from aks_gpu_platform.components.gpu.node_pool import GpuNodePool
    from aks_gpu_platform.components.platform import AksGpuPlatform
    from aks_gpu_platform.components.shared.context import ClusterHandle
    from aks_gpu_platform.config import (
        ConfigError,
        PlatformConfig,
        __version__,
        load_deployment_config,
        load_platform_config,
    )
    from aks_gpu_platform.config.gpu.section import GpuPoolConfig

# The 0.2 module paths (`aks_gpu_platform.components.gpu_autoscaling`, ...) resolve to their new homes.
install_moved_modules(__name__)

_HOMES = {
    "AksGpuPlatform": ".components.platform",
    "ClusterHandle": ".components.shared.context",
    "GpuNodePool": ".components.gpu.node_pool",
    "ConfigError": ".config",
    "PlatformConfig": ".config",
    "GpuPoolConfig": ".config.gpu.section",
    "load_deployment_config": ".config",
    "load_platform_config": ".config",
    "__version__": ".config",
}

__all__ = [
    "AksGpuPlatform",
    "ClusterHandle",
    "ConfigError",
    "GpuNodePool",
    "GpuPoolConfig",
    "PlatformConfig",
    "__version__",
    "load_deployment_config",
    "load_platform_config",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
