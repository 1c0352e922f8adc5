"""The stacks every contract runs over: dev, prod, the fleet, and the variants that change what a contract sees
(an AMD pool beside NVIDIA's, time-sliced and MPS pools). Evaluated once per process, as is each one's modelled day
of stored series with its chargeback rules evaluated (tests/upstream/metrics_day.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from tests.upstream.gpu_metrics_world import kueue_series
from tests.upstream.metrics_day import Day, build_day, group_interval

CONTRACT_STACKS = ("dev", "prod", "fleet", "amd", "shared-gpus")
DAY_STACKS = ("dev", "prod", "fleet-krc", "fleet-jpe", "amd", "shared-gpus")
"""The contract stacks as platforms: each fleet member on its own."""
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"


@cache
def contract_recording(stack: str) -> Recording:
    if stack == "amd":
        from tests.gpu.test_amd_gpu import amd_variant

        return run_stack("dev", amd_variant())
    from tests.gpu.test_scheduling import VARIANTS, variant_config

    if stack in VARIANTS:  # shared-gpus, gpu-operator-mig...
        return run_stack("dev", variant_config(stack))
    return run_stack(stack)


def platform_recording(stack: str) -> Recording:
    """A contract stack's recording; a fleet member's own platform for `fleet-<member>`."""
    if not stack.startswith("fleet-"):
        return contract_recording(stack)
    from tests.fleet.test_fleet import member_recording

    fleet = contract_recording("fleet")
    (platform,) = [p for p in fleet.of_type("aks-gpu-platform:index:AksGpuPlatform") if p.name.endswith(stack[5:])]
    return member_recording(fleet, platform.urn)


def chargeback_group(recording: Recording) -> tuple[list[dict[str, Any]], int]:
    """The recorded chargeback rule group's rules and evaluation interval (seconds)."""
    group = recording.one(RULE_GROUP, "chargeback")
    return group.inputs["rules"], group_interval(group.inputs["interval"])


def day_with(recording: Recording, rules: Sequence[Mapping[str, Any]], interval: int) -> Day:
    """The modelled day with `rules` evaluated, and Kueue's series (as scraped) beside it."""
    day = build_day(recording, rules, interval)
    assert day.evaluator is not None
    for series in kueue_series(recording):
        day.evaluator.add(series)
    return day


@cache
def contract_day(stack: str) -> Day:
    recording = platform_recording(stack)
    return day_with(recording, *chargeback_group(recording))
