"""Read the stack's settings from the Pulumi runtime and validate them as one model."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pulumi.runtime import config as runtime_config
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub
from pydantic import BaseModel, ValidationError

from .base import TEXT_SETTINGS_MODEL
from .catalog.aks_versions import CATALOG_CHECKED_ON
from .errors import ConfigError, problems_from
from .inference.models import missing_token
from .placeholders import refuse_placeholders
from .platform import VERSION_DATE_CONTEXT, PlatformConfig

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


def validate_section(model: type[Model], value: Any, source: str, context: Mapping[str, Any] | None = None) -> Model:
    """Validate one section (or a component's plain args) with the stack's error format."""
    try:
        return model.model_validate(value, context={**(context or {}), TEXT_SETTINGS_MODEL: model})
    except ValidationError as err:
        raise ConfigError(problems_from(err, model=model), source=source) from None


def settings_from_runtime_config(config: Mapping[str, str], project: str = PROJECT) -> dict[str, Any]:
    """The project's settings out of a CLI-style config map (`project:key` -> text)."""
    prefix = f"{project}:"
    return {k[len(prefix) :]: decode_setting(v) for k, v in config.items() if k.startswith(prefix)}


def running_under_engine() -> bool:
    """True when a Pulumi CLI (preview or up) runs the program, not test mocks or a plain import.

    The engine talks to the program through a gRPC resource monitor, a ResourceMonitorStub on the address it
    hands over (pulumi/runtime/settings.py); mocks install a monitor of their own. Previews count as real: they
    are where a pull request should fail.
    """
    return isinstance(runtime_settings.get_monitor(), ResourceMonitorStub)


def kubernetes_version_date(real_run: bool, today: datetime.date | None = None) -> datetime.date:
    """The date the configured Kubernetes minor must be creatable on.

    Builds, tests and the offline plan use the catalog's own date, so they are reproducible; a
    real run uses today (never earlier than the catalog), so a deploy never starts on a minor AKS
    has stopped creating since the catalog was read.
    """
    if not real_run:
        return CATALOG_CHECKED_ON
    return max(CATALOG_CHECKED_ON, today or datetime.date.today())


def load_platform_config(
    settings: Mapping[str, Any] | None = None, kubernetes_version_on: datetime.date | None = None
) -> PlatformConfig:
    """Validate the whole stack config; raises ConfigError listing every problem.

    `kubernetes_version_on` is the date `cluster.kubernetesVersion` is checked against; by default
    today when the Pulumi engine runs the program, else the version catalog's date.
    """
    values = dict(read_stack_settings() if settings is None else settings)
    if not values.get("fleet"):
        # Pulumi.yaml defaults `fleet` to {} (one platform), and the CLI hands that default to every stack.
        values.pop("fleet", None)
    on = kubernetes_version_on or kubernetes_version_date(settings is None and running_under_engine())
    return validate_section(PlatformConfig, values, source="stack config", context={VERSION_DATE_CONTEXT: on})


def load_deployment_config() -> PlatformConfig:
    """The stack's config as the program deploys it: validated, and free of placeholders unless under mocks.

    Under `pulumi preview` / `pulumi up` a placeholder object ID, documentation IP range or example
    address stops the program with one ConfigError; the offline plan and the tests (Pulumi mocks) go on.
    """
    cfg = load_platform_config()
    if running_under_engine():
        refuse_placeholders(cfg)
        refuse_missing_secrets(cfg)
    return cfg


def refuse_missing_secrets(cfg: PlatformConfig) -> None:
    """Secrets a real deployment reads: the stack must hold them (`pulumi config set --secret`)."""
    problems = missing_token(cfg.inference, cfg.hugging_face_token)
    if problems:
        raise ConfigError(problems, source="stack config for a real deployment")
