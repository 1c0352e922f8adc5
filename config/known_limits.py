"""Known limitations: what the platform does not do for a valid config, said by the plan instead of left silent.

A config the platform cannot serve is refused (ConfigError); a config it serves with a known gap is accepted and
the plan prints one warning per gap it hits (`known limit <name>: <sentence>`). Each entry is a predicate over the
validated config and a sentence that names the gap and what to do. To add one: append a `KnownLimit` to
`PLATFORM_LIMITS` (over `PlatformConfig`) or `FLEET_LIMITS` (over `FleetPlan`, the fleet stack), with a unique
`name`, and a test that a config hits it and one that does not (tests/plan/test_known_limits.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .fleet.section import FleetPlan
from .platform import PlatformConfig

Config = TypeVar("Config")


@dataclass(frozen=True)
class KnownLimit(Generic[Config]):
    name: str
    """Short, unique, kebab-case: what the warning starts with."""
    applies: Callable[[Config], bool]
    """True when the validated config hits the limitation."""
    sentence: str
    """What does not work, and what to do about it."""


PLATFORM_LIMITS: list[KnownLimit[PlatformConfig]] = [
    KnownLimit(
        "aks-managed-idle-unseen",
        lambda cfg: cfg.gpu_stack.mode == "aksManaged" and bool(cfg.gpu_pools),
        "gpuStack.mode aksManaged: AKS's DCGM exporter maps no GPU to its pod, so the idle-GPU alert never fires "
        "and chargeback records no idle device-hours (docs/monitoring.md); use devicePlugin or gpuOperator where "
        "idle GPUs must be seen",
    ),
    KnownLimit(
        "served-model-slo-upper-bound",
        lambda cfg: bool(cfg.inference.models),
        "inference.models: no series holds a caller's time to first token, so the SLO alert reads an upper bound of "
        "its p90 (p95 of the time held in the endpoint picker + p95 of vLLM's time to first token) and may page "
        "while the true p90 is still within the SLO; the gateway's own proxying is not in it, and while a picker's "
        "metrics do not arrive the sum is empty and the alert stays silent. Read the dashboard's picker and vLLM "
        "panels before acting (docs/autoscaling.md)",
    ),
    KnownLimit(
        "team-images-unrestricted",
        lambda cfg: bool(cfg.training.teams),
        "team pods may run any image, and the platform registry's wildcard cache rules pull any public image of "
        "docker.io, nvcr.io, registry.k8s.io, mcr.microsoft.com, quay.io, ghcr.io and gcr.io on a team's first "
        "use: a team can fill the registry's storage and spend the shared anonymous Docker Hub pull limit the "
        'platform\'s own images need (docs/security.md, "Images team pods pull"); review what teams pull in '
        "the registry's repositories",
    ),
    KnownLimit(
        "streamed-weights-version-unpinned",
        lambda cfg: any(model.weights.blob is not None for model in cfg.inference.models),
        "inference.models[].weights.blob: the Run:ai Model Streamer and its Azure backend come inside "
        "vllm/vllm-openai:v0.34.0, whose docker/Dockerfile installs runai-model-streamer[s3,gcs,azure]>=0.17.1 "
        "unpinned and whose digest no upstream file records: a server runs whatever version that build resolved, "
        "not necessarily the 0.17.1 (Azure backend 0.17.0) its loader flags and memory bound were checked against; "
        "run `pip show runai-model-streamer runai-model-streamer-azure` in the image a node pulled before relying on "
        "it (docs/charts.md, Serving)",
    ),
]

FLEET_LIMITS: list[KnownLimit[FleetPlan]] = [
    KnownLimit(
        "fleet-node-image-channel-consistent",
        lambda plan: plan.fleet.updates.node_image_selection == "Latest",
        "fleet.updates.nodeImageSelection Latest applies to the Kubernetes upgrade runs only: Fleet's NodeImage "
        "channel always uses Consistent, so node-image-only runs give every region the newest image all of them "
        "have (docs/fleet.md)",
    ),
]


def hit(limits: Sequence[KnownLimit[Config]], config: Config) -> list[str]:
    """The plan's warning for every limitation `config` hits, in registry order."""
    return [f"known limit {limit.name}: {limit.sentence}" for limit in limits if limit.applies(config)]
