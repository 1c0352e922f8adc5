"""Read the stack's settings from the Pulumi runtime and validate them as one model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pulumi.runtime import config as runtime_config
from pydantic import BaseModel, ValidationError

from .errors import ConfigError, problems_from
from .placeholders import deploying_for_real, refuse_placeholders
from .platform import PlatformConfig

PROJECT = "aks-gpu-platform"

Model = TypeVar("Model", bound=BaseModel)


def read_stack_settings(project: str = PROJECT) -> dict[str, Any]:
    """The project's config keys as YAML-shaped values (objects and lists decoded from JSON)."""
    merged: dict[str, Any] = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return settings_from_runtime_config(merged, project)


def decode_setting(raw: Any) -> Any:
    # Pulumi hands structured values over as JSON text; scalars stay strings so pydantic coerces them.
    if isinstance(raw, str) and raw[:1] in "{[":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def validate_section(model: type[Model], value: Any, source: str) -> Model:
    """Validate one section (or a component's plain args) with the stack's error format."""
    try:
        return model.model_validate(value)
    except ValidationError as err:
        raise ConfigError(problems_from(err), source=source) from None


def settings_from_runtime_config(config: Mapping[str, str], project: str = PROJECT) -> dict[str, Any]:
    """The project's settings out of a CLI-style config map (`project:key` -> text)."""
    prefix = f"{project}:"
    return {k[len(prefix) :]: decode_setting(v) for k, v in config.items() if k.startswith(prefix)}


def load_platform_config(settings: Mapping[str, Any] | None = None) -> PlatformConfig:
    """Validate the whole stack config; raises ConfigError listing every problem."""
    values = dict(read_stack_settings() if settings is None else settings)
    return validate_section(PlatformConfig, values, source="stack config")


def load_deployment_config() -> PlatformConfig:
    """The stack's config as the program deploys it: validated, and free of placeholders unless under mocks.

    Under `pulumi preview` / `pulumi up` a placeholder object ID, documentation IP range or example
    address stops the program with one ConfigError; the offline plan and the tests (Pulumi mocks) go on.
    """
    cfg = load_platform_config()
    if deploying_for_real():
        refuse_placeholders(cfg)
    return cfg
