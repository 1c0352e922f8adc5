"""Typed, validated configuration of the AKS GPU platform."""

from .errors import ConfigError
from .loader import PROJECT, load_deployment_config, load_platform_config, read_stack_settings, validate_section
from .platform import PlatformConfig

__all__ = [
    "PROJECT",
    "ConfigError",
    "PlatformConfig",
    "load_deployment_config",
    "load_platform_config",
    "read_stack_settings",
    "validate_section",
]
