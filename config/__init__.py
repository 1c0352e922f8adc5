"""Typed, validated configuration of the AKS GPU platform."""

from .errors import ConfigError
from .loader import PROJECT, load_deployment_config, load_platform_config, read_stack_settings, validate_section
from .platform import PlatformConfig
from .version import __version__

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
