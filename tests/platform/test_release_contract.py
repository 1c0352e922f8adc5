"""Every Helm release can finish: its timeout covers the chart's worst-case readiness at our values, every
RuntimeClass its pods ask for exists on AKS, and every image it pulls anonymously from a rate-limited registry is
named in the offline plan. The model of each chart is tests/upstream/release_contract.py (read at the pinned versions).

Stacks: dev and prod as written, and the scheduling variants (tests/gpu/test_scheduling.py) with remediation on, so
NVSentinel is planned under the device plugin, on Spot with Lustre, and under the GPU Operator.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.verdicts import docker_hub_warnings
from aks_gpu_platform.testing import Recording
from tests.gpu.test_scheduling import VARIANTS, variant_config
from tests.upstream.release_contract import (
    DEFAULT_TIMEOUT_SECONDS,
    RATE_LIMITED_REGISTRIES,
    release_facts,
    release_problems,
    runtime_classes,
)
from tests.upstream.scheduling import RELEASE

PREFIX = "aks-gpu-platform:"
NVSENTINEL = "oci://ghcr.io/nvidia/nvsentinel"
LUSTRE = "oci://mcr.microsoft.com/microsoft.azuremanagedlustre/azurelustre-csi-driver"
STACKS = ("dev", "prod", *VARIANTS)


def _with_remediation(name: str) -> dict[str, Any]:
    config = variant_config(name)
    config[PREFIX + "gpuHealth"] = {"remediation": {"enabled": True}}
    return config


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording]) -> dict[str, Recording]:
    return {**recordings, **{name: run_stack("dev", _with_remediation(name)) for name in VARIANTS}}


def _plan_text(recording: Recording) -> str:
    return "\n".join(docker_hub_warnings(recording))


def _problems(recording: Recording) -> list[str]:
    return release_problems(recording, _plan_text(recording))


def _reverted(recording: Recording, chart: str, change: Callable[[dict[str, Any]], None]) -> Recording:
    """The recording with one release's inputs changed back to what they were before its fix."""
    copied = copy.deepcopy(recording)
    for release in copied.of_type(RELEASE):
        if release.inputs.get("chart") == chart:
            change(release.inputs)
    return copied


@pytest.mark.parametrize("stack", STACKS)
def test_every_helm_release_can_finish(stacks: dict[str, Recording], stack: str) -> None:
    problems = _problems(stacks[stack])
    assert not problems, (
        f"{stack}: a release that cannot finish fails the first `pulumi up` and stays FAILED:\n" + "\n".join(problems)
    )


def test_the_contract_covers_nvsentinel_in_every_gpu_stack_mode(stacks: dict[str, Recording]) -> None:
    """The check is only as good as the releases it sees: NVSentinel under the device plugin and the GPU Operator."""
    for stack in ("prod", "spot-only", "gpu-operator-mig"):
        charts = {f.chart for f in release_facts(stacks[stack])[0]}
        assert NVSENTINEL in charts, f"{stack}: NVSentinel is not planned, the contract checks nothing for it"


def test_the_contract_catches_nvsentinel_on_the_default_timeout(stacks: dict[str, Recording]) -> None:
    reverted = _reverted(stacks["prod"], NVSENTINEL, lambda inputs: inputs.pop("timeout", None))
    problems = [p for p in _problems(reverted) if "timeout" in p]
    assert any(f"timeout is {DEFAULT_TIMEOUT_SECONDS} s" in p for p in problems), (
        "three OrderedReady MongoDB members with disks and 60 s readiness delays do not fit Pulumi's 300 s default; "
        f"the contract must say so, it found {problems}"
    )


def test_the_contract_catches_the_lustre_loader_on_the_default_timeout(stacks: dict[str, Recording]) -> None:
    reverted = _reverted(stacks["spot-only"], LUSTRE, lambda inputs: inputs.pop("timeout", None))
    assert any("azurelustre" in p or "csi-driver" in p for p in _problems(reverted)), (
        "the Lustre node plugin may take 610 s to load the client before it is ready: 300 s is not enough"
    )


def test_the_contract_catches_the_charts_nvidia_runtime_class(stacks: dict[str, Recording]) -> None:
    def chart_default(inputs: dict[str, Any]) -> None:
        inputs["values"].pop("metadata-collector", None)

    for stack in ("prod", "spot-only"):
        problems = _problems(_reverted(stacks[stack], NVSENTINEL, chart_default))
        assert any("runtimeClassName 'nvidia'" in p for p in problems), (
            f"{stack}: AKS nodes have no RuntimeClass nvidia under the device plugin; the chart default must be "
            f"caught, found {problems}"
        )


def test_the_nvidia_runtime_class_exists_where_the_gpu_operator_runs(stacks: dict[str, Recording]) -> None:
    facts, _ = release_facts(stacks["gpu-operator-mig"])
    assert "nvidia" in runtime_classes(stacks["gpu-operator-mig"], facts), (
        "the GPU Operator creates RuntimeClass nvidia; NVSentinel's metadata-collector keeps the chart's default there"
    )
    assert "nvidia" not in runtime_classes(stacks["prod"], release_facts(stacks["prod"])[0]), (
        "nothing creates RuntimeClass nvidia under the device plugin: AKS configures only the containerd handler"
    )


def test_the_contract_catches_docker_hub_images_the_plan_does_not_name(stacks: dict[str, Recording]) -> None:
    problems = release_problems(stacks["prod"], "")
    hub = [p for p in problems if "anonymously" in p]
    assert len(hub) >= 4 and all(RATE_LIMITED_REGISTRIES["docker.io"] in p for p in hub), (
        "NVSentinel's MongoDB pulls from Docker Hub, limited for anonymous pulls behind shared egress IPs: without the "
        f"plan naming them the contract must fail, found {problems}"
    )


def test_the_plan_names_each_docker_hub_image_once_per_release(stacks: dict[str, Recording]) -> None:
    warnings = docker_hub_warnings(stacks["prod"])
    assert len(warnings) == 1 and "nvsentinel" in warnings[0], (
        f"one warning per release that pulls from Docker Hub, naming the release: {warnings}"
    )
    assert not docker_hub_warnings(stacks["dev"]), "dev installs no NVSentinel: nothing pulls from Docker Hub"
