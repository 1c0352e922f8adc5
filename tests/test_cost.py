"""The plan's quota and cost summary: read from the recorded resources, arithmetic pinned by hand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.upgrade import surge_node_count
from tests.conftest import settings_of
from tools import cost
from tools.mock_values import MockValueMarker
from tools.offline import Recording, run_stack
from tools.plan import build_report
from tools.stack_files import load_stack_file

MONTH = 730  # hours, Azure's pricing calculator month
P10_DISK = 19.71  # USD a month, managed OS disk up to 128 GiB
ACR_PREMIUM = 1.667 * MONTH / 24  # USD a day
DDSV5_PER_VCPU = 0.0565  # USD per vCPU-hour, eastus Ddsv5


def _needs(recording: Recording) -> dict[str, int]:
    needs, unknown = cost.quota_needs(cost.pool_capacities(recording))
    assert unknown == [], "every pool size of the stack files is catalogued"
    return {n.quota: n.vcpus for n in needs}


def _variant(stack: str, change: Callable[[dict[str, Any]], None]) -> Recording:
    config = load_stack_file(stack)
    change(config)
    return run_stack(stack, config)


def test_prod_quota_covers_every_gpu_pool_at_max_scale(prod_recording: Recording) -> None:
    needs = _needs(prod_recording)
    assert needs["StandardNCADSA100v4Family"] == 12 * 24, "12 NC24ads A100 v4 nodes x 24 vCPUs (GPU pools surge 0)"
    assert needs["standardNDSH100v5Family"] == 3 * 4 * 96, "three IB pools of 4 ND96isr H100 v5 x 96 vCPUs"
    # CPU pool: 20 nodes + ceil(33% of 20) = 7 surge, x 16 vCPUs; system: 6 + ceil(1.98) = 2, x 8 vCPUs.
    assert needs["standardDDSv5Family"] == (20 + 7) * 16 + (6 + 2) * 8
    assert needs[cost.TOTAL_REGIONAL] == 288 + 1152 + 496, "the regional total counts every Regular pool"
    assert cost.LOW_PRIORITY not in needs, "prod has no Spot pool"


def test_upgrade_surge_adds_to_the_quota_a_gpu_family_needs() -> None:
    def surge_one(config: dict[str, Any]) -> None:
        gpu_upgrade = config["aks-gpu-platform:upgrade"]["gpuPools"]
        gpu_upgrade["maxSurge"] = "1"
        del gpu_upgrade["maxUnavailable"]

    needs = _needs(_variant("prod", surge_one))
    assert needs["StandardNCADSA100v4Family"] == (12 + 1) * 24, "one surge node per pool while it upgrades"
    assert needs["standardNDSH100v5Family"] == 3 * (4 + 1) * 96


def test_a_spot_gpu_pool_counts_against_the_low_priority_quota() -> None:
    recording = _variant("dev", lambda config: config["aks-gpu-platform:gpuPools"][0].update(priority="Spot"))
    needs = _needs(recording)
    assert "standardNCASv3_T4Family" not in needs, "Spot VMs do not use the family's Regular quota"
    assert needs[cost.LOW_PRIORITY] == 2 * 4, "2 NC4as T4 v3 x 4 vCPUs, surge 0"
    assert needs[cost.TOTAL_REGIONAL] == (3 + 1) * 4 + (2 + 1) * 4, "only the CPU and system pools stay Regular"


@pytest.mark.parametrize(
    ("max_surge", "pool_size", "nodes"), [("33%", 20, 7), ("33%", 6, 2), ("10%", 3, 1), ("0", 12, 0), ("2", 4, 2)]
)
def test_percentage_surges_round_fractional_nodes_up(max_surge: str, pool_size: int, nodes: int) -> None:
    assert surge_node_count(max_surge, pool_size) == nodes


def test_dev_floor_and_ceiling(dev_recording: Recording) -> None:
    pools = cost.pool_capacities(dev_recording)
    held = cost.held_gpu_nodes(dev_recording, pools)
    estimate = cost.estimate_cost(dev_recording, pools, held)
    d4 = DDSV5_PER_VCPU * 4 * MONTH + P10_DISK  # a D4ds_v5 node with its managed OS disk
    t4 = 0.526 * MONTH + P10_DISK
    aks_standard = 0.10 * MONTH
    # Floor: 1 CPU node, 1 system node, the T4 node the Triton sample keeps up, AKS Standard, ACR Premium.
    assert estimate.floor == pytest.approx(d4 + d4 + t4 + aks_standard + ACR_PREMIUM)
    # Ceiling: 3 CPU, 2 T4, 2 system nodes (the held node is within the T4 pool's max).
    assert estimate.ceiling == pytest.approx(3 * d4 + 2 * t4 + 2 * d4 + aks_standard + ACR_PREMIUM)
    assert estimate.unpriced == [], "every dev resource with a fixed price is in the table"


def test_prod_floor_and_ceiling(prod_recording: Recording) -> None:
    pools = cost.pool_capacities(prod_recording)
    estimate = cost.estimate_cost(prod_recording, pools, cost.held_gpu_nodes(prod_recording, pools))
    d16, d8 = DDSV5_PER_VCPU * 16 * MONTH, DDSV5_PER_VCPU * 8 * MONTH  # ephemeral OS disks cost nothing
    a100 = 3.673 * MONTH + P10_DISK
    h100 = 98.32 * MONTH  # ephemeral OS disk
    fixed = 0.60 * MONTH + ACR_PREMIUM + 2 * 0.01 * MONTH  # AKS Premium, ACR Premium, two private endpoints
    assert estimate.floor == pytest.approx(3 * d16 + 3 * d8 + fixed), "GPU pools scale from zero in prod"
    assert estimate.ceiling == pytest.approx(20 * d16 + 12 * a100 + 3 * 4 * h100 + 6 * d8 + fixed)
    assert any("Lustre 64 TiB AMLFS-Durable-Premium-250" in item for item in estimate.unpriced), (
        "Lustre has no price in the table: it is named, not counted as zero"
    )


def test_a_gpu_workload_that_never_scales_to_zero_holds_a_node(dev_recording: Recording) -> None:
    pools = cost.pool_capacities(dev_recording)
    held = cost.held_gpu_nodes(dev_recording, pools)
    assert [(h.workload, h.pool.vm_size, h.nodes) for h in held] == [
        ("gpu-inference-sample/triton", "Standard_NC4as_T4_v3", 1)
    ], "KEDA minReplicaCount 1 keeps one T4 node of a minCount 0 pool running"

    def park(config: dict[str, Any]) -> None:
        config["aks-gpu-platform:autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0

    parked = _variant("dev", park)
    assert cost.held_gpu_nodes(parked, cost.pool_capacities(parked)) == [], "minReplicas 0 lets the pool reach zero"


def test_a_gpu_pool_with_a_minimum_is_warned_about(tmp_path: Path) -> None:
    config = load_stack_file("dev")
    config["aks-gpu-platform:gpuPools"][0]["minCount"] = 1
    config["aks-gpu-platform:autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0
    recording = run_stack("dev", config)
    cfg = load_platform_config(settings_of(config))
    report = build_report("dev", cfg, recording, [], [], MockValueMarker(recording.mock_values), tmp_path)
    warnings = [w for w in report.warnings if "around the clock" in w]
    monthly = f"${0.526 * MONTH + P10_DISK:,.0f}"
    assert warnings == [
        f"GPU pool gput42aa3 keeps 1 x Standard_NC4as_T4_v3 running around the clock (minCount 1) (~{monthly}/month)"
    ], "a GPU pool's minimum is paid around the clock and must be visible before the detail"


def test_a_size_without_a_price_is_named_and_left_out() -> None:
    recording = _variant(
        "dev", lambda config: config["aks-gpu-platform:gpuPools"][0].update(vmSize="Standard_ND96isr_H200_v5")
    )
    pools = cost.pool_capacities(recording)
    estimate = cost.estimate_cost(recording, pools, cost.held_gpu_nodes(recording, pools))
    assert any("Standard_ND96isr_H200_v5 has no price" in item for item in estimate.unpriced), estimate.unpriced
    assert not any("H200" in line.item for line in estimate.lines), "an unknown price is never counted as zero"
    assert _needs(recording)["standardNDISRH200V5Family"] == 2 * 96, "its quota is still counted"
