"""Typed, validated configuration of the AKS GPU platform.

The package's names load on first use, so modules without dependencies (the scheduling contract
in `scheduling.py`) import without pydantic or the Pulumi SDK: the CrossGuard policy pack reads
them from a virtualenv that has neither.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import ConfigError
    from .loader import PROJECT, load_deployment_config, load_platform_config, read_stack_settings, validate_section
    from .platform import PlatformConfig
    from .version import __version__

_HOMES = {
    "ConfigError": ".errors",
    "PROJECT": ".loader",
    "load_deployment_config": ".loader",
    "load_platform_config": ".loader",
    "read_stack_settings": ".loader",
    "validate_section": ".loader",
    "PlatformConfig": ".platform",
    "__version__": ".version",
}

__all__ = [
    "PROJECT",
    "ConfigError",
    "PlatformConfig",
    "__version__",
    "load_deployment_config",
    "load_platform_config",
    "read_stack_settings",
    "validate_section",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
