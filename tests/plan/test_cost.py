"""The plan's quota and cost summary: read from the recorded resources, arithmetic pinned by hand."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog.prices import PRICE_TABLES
from aks_gpu_platform.config.upgrade.section import surge_node_count
from aks_gpu_platform.plan import cost
from aks_gpu_platform.plan.estimate import CostEstimate, billing_class, estimate_cost
from aks_gpu_platform.plan.mock_values import MockValueMarker
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.report import build_report
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT

MONTH = 730  # hours, Azure's pricing calculator month
P10_DISK = 19.71  # USD a month, managed OS disk up to 128 GiB
ACR_PREMIUM = 1.667 * MONTH / 24  # USD a day
DDSV5_PER_VCPU = 0.0565  # USD per vCPU-hour, eastus Ddsv5
PROMETHEUS_RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"


def _needs(recording: Recording) -> dict[str, int]:
    needs, unknown = cost.quota_needs(cost.pool_capacities(recording))
    assert unknown == [], "every pool size of the stack files is catalogued"
    return {n.quota: n.vcpus for n in needs}


def _variant(stack: str, change: Callable[[dict[str, Any]], None]) -> Recording:
    config = load_stack_file(stack, REPO_ROOT)
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
    assert needs[cost.LOW_PRIORITY] == 4 * 4, "4 NC4as T4 v3 x 4 vCPUs, surge 0"
    assert needs[cost.TOTAL_REGIONAL] == (3 + 1) * 4 + (2 + 1) * 4, "only the CPU and system pools stay Regular"


@pytest.mark.parametrize(
    ("max_surge", "pool_size", "nodes"), [("33%", 20, 7), ("33%", 6, 2), ("10%", 3, 1), ("0", 12, 0), ("2", 4, 2)]
)
def test_percentage_surges_round_fractional_nodes_up(max_surge: str, pool_size: int, nodes: int) -> None:
    assert surge_node_count(max_surge, pool_size) == nodes


def test_dev_floor_and_ceiling(dev_recording: Recording) -> None:
    pools = cost.pool_capacities(dev_recording)
    held = cost.held_gpu_nodes(dev_recording, pools)
    estimate = estimate_cost(dev_recording, pools, held)
    d4 = DDSV5_PER_VCPU * 4 * MONTH + P10_DISK  # a D4ds_v5 node with its managed OS disk
    t4 = 0.526 * MONTH + P10_DISK
    aks_standard = 0.10 * MONTH
    # Floor: 1 CPU node, 1 system node, the T4 nodes the Triton sample and the served model (minReplicas 1, one
    # GPU each) keep up, AKS Standard, ACR Premium.
    assert estimate.floor == pytest.approx(d4 + d4 + 2 * t4 + aks_standard + ACR_PREMIUM)
    # Ceiling: 3 CPU, 4 T4, 2 system nodes (the held node is within the T4 pool's max).
    assert estimate.ceiling == pytest.approx(3 * d4 + 4 * t4 + 2 * d4 + aks_standard + ACR_PREMIUM)
    assert all("no price for koreacentral" in item for item in estimate.unpriced), (
        "what bills from creation without a price is named per line with the region it lacks a price for"
    )


def test_prod_floor_and_ceiling(prod_recording: Recording) -> None:
    pools = cost.pool_capacities(prod_recording)
    estimate = estimate_cost(prod_recording, pools, cost.held_gpu_nodes(prod_recording, pools))
    d16, d8 = DDSV5_PER_VCPU * 16 * MONTH, DDSV5_PER_VCPU * 8 * MONTH  # ephemeral OS disks cost nothing
    a100 = 3.673 * MONTH + P10_DISK
    h100 = 98.32 * MONTH  # ephemeral OS disk
    fixed = 0.60 * MONTH + ACR_PREMIUM + 2 * 0.01 * MONTH  # AKS Premium, ACR Premium, two private endpoints
    # GPU pools scale from zero, but for the served models' kept-up replicas: llama-3-1-8b's 2 one-GPU replicas
    # share one 8-GPU node of h100z1, qwen-1-5b's 1 replica holds one node of h100z2.
    assert estimate.floor == pytest.approx(3 * d16 + 3 * d8 + 2 * h100 + fixed), "only the models' floor holds GPUs"
    assert estimate.ceiling == pytest.approx(20 * d16 + 12 * a100 + 3 * 4 * h100 + 6 * d8 + fixed)
    assert any("Lustre 64 TiB AMLFS-Durable-Premium-250: no price for koreacentral" in i for i in estimate.unpriced), (
        "Lustre bills its whole capacity by tier from creation: without a price it is named, not counted as zero"
    )


def test_a_gpu_workload_that_never_scales_to_zero_holds_a_node(dev_recording: Recording) -> None:
    pools = cost.pool_capacities(dev_recording)
    held = cost.held_gpu_nodes(dev_recording, pools)
    assert sorted((h.workload, h.pool.vm_size, h.nodes) for h in held) == [
        ("gpu-inference-sample/triton", "Standard_NC4as_T4_v3", 1),
        ("models/qwen-0-5b", "Standard_NC4as_T4_v3", 1),
    ], "KEDA minReplicaCount 1 keeps one T4 node of a minCount 0 pool running, for the sample and for the model"

    def park(config: dict[str, Any]) -> None:
        config["aks-gpu-platform:autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0
        config.pop("aks-gpu-platform:inference")  # dev's model has an SLO no cold start meets: it stays up

    parked = _variant("dev", park)
    assert cost.held_gpu_nodes(parked, cost.pool_capacities(parked)) == [], (
        "minReplicas 0 and no kept-up model let the pool reach zero"
    )


def test_a_gpu_pool_with_a_minimum_is_warned_about(tmp_path: Path) -> None:
    config = load_stack_file("dev", REPO_ROOT)
    config["aks-gpu-platform:gpuPools"][0]["minCount"] = 1
    config["aks-gpu-platform:autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0
    recording = run_stack("dev", config)
    cfg = load_platform_config(settings_of(config))
    report = build_report("dev", cfg, recording, [], [], MockValueMarker(recording.mock_values), tmp_path)
    warnings = [w for w in report.warnings if "around the clock" in w]
    monthly = f"${0.526 * MONTH + P10_DISK:,.0f}"
    assert warnings == [
        f"GPU pool gput4 keeps 1 x Standard_NC4as_T4_v3 running around the clock (minCount 1): {monthly}/month"
    ], "a GPU pool's minimum is paid around the clock (its VM and OS disk) and must be visible before the detail"


def test_a_size_without_a_price_is_named_and_left_out() -> None:
    recording = _variant(
        "dev", lambda config: config["aks-gpu-platform:gpuPools"][0].update(vmSize="Standard_ND96isr_H200_v5")
    )
    pools = cost.pool_capacities(recording)
    estimate = estimate_cost(recording, pools, cost.held_gpu_nodes(recording, pools))
    assert any("Standard_ND96isr_H200_v5 has no price" in item for item in estimate.unpriced), estimate.unpriced
    assert not any("H200" in line.item for line in estimate.lines), "an unknown price is never counted as zero"
    assert _needs(recording)["standardNDISRH200V5Family"] == 4 * 96, "its quota is still counted"


def _estimate(recording: Recording) -> CostEstimate:
    pools = cost.pool_capacities(recording)
    return estimate_cost(recording, pools, cost.held_gpu_nodes(recording, pools))


@pytest.fixture(scope="module")
def prod_with_netapp_and_defender_off() -> Recording:
    """Prod with a 1 TiB Premium NetApp pool (the fixed price a NetApp pool bills) and Defender off."""

    def change(config: dict[str, Any]) -> None:
        config["aks-gpu-platform:storage"]["netappFiles"] = {"enabled": True, "serviceLevel": "Premium"}
        config["aks-gpu-platform:network"]["subnets"]["netapp"] = "10.50.18.0/28"
        config["aks-gpu-platform:security"]["defender"]["enabled"] = False

    return _variant("prod", change)


def _billed_at_creation_gaps(recording: Recording) -> list[str]:
    estimate = _estimate(recording)
    azure = sorted({r.type for r in recording.resources if r.custom and r.type.startswith("azure-native:")})
    gaps = [f"{t}: billing not classified (creation, use or free)" for t in azure if billing_class(t) is None]
    gaps += [
        f"{t}: bills from creation but gave no cost line"
        for t in azure
        if billing_class(t) == "creation" and t not in estimate.costed_types
    ]
    return gaps


def test_every_resource_billed_from_creation_has_a_cost_line(
    recordings: dict[str, Recording], prod_with_netapp_and_defender_off: Recording
) -> None:
    for name, recording in {**recordings, "prod+netapp": prod_with_netapp_and_defender_off}.items():
        assert _billed_at_creation_gaps(recording) == [], (
            f"{name}: the floor must include everything that bills from creation, priced or named as unpriced"
        )


def test_a_resource_type_nobody_classified_fails_the_bill(dev_recording: Recording) -> None:
    cluster = dev_recording.of_type(cost.MANAGED_CLUSTER)[0]
    disk = replace(cluster, type="azure-native:compute:Disk", name="data-disk", urn=cluster.urn + "-disk")
    recording = Recording(resources=[*dev_recording.resources, disk])
    assert _billed_at_creation_gaps(recording) == [
        "azure-native:compute:Disk: billing not classified (creation, use or free)"
    ], "a new Azure resource type may bill from creation: it must be classified before the bill can be trusted"
    assert _estimate(recording).unclassified == ["azure-native:compute:Disk"], "and the plan names it"


def test_every_price_row_has_its_region_source_and_date() -> None:
    for table_name, table in PRICE_TABLES.items():
        for region, rows in table.items():
            for item, price in rows.items():
                where = f"{table_name} {region} {item}"
                assert price.region == region, f"{where}: a row filed under a region must be that region's price"
                assert price.source.startswith("https://"), f"{where}: every price names where it was read"
                assert price.read_on <= datetime.date.today(), f"{where}: every price says when it was read"
                assert price.usd >= 0 and math.isfinite(price.usd), f"{where}: a list price is a finite amount"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_korea_central_stack_prices_in_korea_central_or_says_why_not_per_line(
    recordings: dict[str, Recording], stack: str
) -> None:
    estimate = _estimate(recordings[stack])
    assert estimate.region == "koreacentral", "the dev and prod stacks are created in Korea Central"
    for line in estimate.lines:
        for price in line.prices:
            if price.region not in ("koreacentral", "global"):
                assert f"{price.region} price, no koreacentral source" in line.note or (
                    price.region == "unstated" and "no koreacentral source" in line.note
                ), f"{line.item}: a price from another region must say so on its own line, got {line.note!r}"


def test_an_east_us_stack_uses_the_east_us_rows_without_a_stand_in_note() -> None:
    def east(config: dict[str, Any]) -> None:
        config["aks-gpu-platform:location"] = "eastus"
        config["azure-native:location"] = "eastus"

    estimate = _estimate(_variant("dev", east))
    vm_lines = [line for line in estimate.lines if line.item.startswith("pool ")]
    assert vm_lines and all("eastus price" not in line.note for line in vm_lines), (
        "a stack in the rows' own region is priced without a stand-in mark"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_floor_and_ceiling_are_the_sums_of_their_lines(recordings: dict[str, Recording], stack: str) -> None:
    estimate = _estimate(recordings[stack])
    assert estimate.floor == pytest.approx(sum(line.floor for line in estimate.lines)), "the floor is its lines"
    assert estimate.ceiling == pytest.approx(sum(line.ceiling for line in estimate.lines)), "the ceiling is its lines"
    assert all(line.floor >= 0 and line.ceiling >= 0 for line in estimate.lines), "no line pays back"


def test_a_netapp_pool_bills_its_whole_size_from_creation(prod_with_netapp_and_defender_off: Recording) -> None:
    estimate = _estimate(prod_with_netapp_and_defender_off)
    [line] = [line for line in estimate.lines if line.item.startswith("NetApp Files pool")]
    pool_gib = 1024  # the smallest pool, 1 TiB, fits the default volume (tests/storage/test_netapp.py)
    assert line.item == "NetApp Files pool 1 TiB Premium", line.item
    assert line.floor == pytest.approx(pool_gib * 0.000403 * MONTH), "a pool bills per provisioned GiB-hour"
    assert line.floor == line.ceiling, "a pool's size does not follow load"
    assert not any("Defender" in item for item in estimate.unpriced), "Defender off bills nothing"


def test_defender_names_the_vcores_it_bills(prod_recording: Recording) -> None:
    pools = cost.pool_capacities(prod_recording)
    low = sum(p.min_count * (p.vcpus or 0) for p in pools)
    high = sum(p.max_count * (p.vcpus or 0) for p in pools)
    assert f"Defender for Containers: {low}-{high} node vCores: no price for koreacentral" in " ".join(
        _estimate(prod_recording).unpriced
    ), "Defender for Containers bills every node vCore-hour: its size is stated even without a price"


def test_metrics_ingestion_is_a_stated_estimate(prod_recording: Recording) -> None:
    [samples] = [v for v in _estimate(prod_recording).volumes if v.startswith("Managed Prometheus")]
    gpus = 12 * 1 + 3 * 4 * 8  # A100 pool 12 x 1 GPU, three H100 pools 4 x 8 GPUs
    kept_up = 2 * 8  # the two H100 nodes the served models keep up
    assert f"x {kept_up}-{gpus} GPUs x 87,600 scrapes a month (30s)" in samples, (
        "the sample volume follows the GPUs at floor and ceiling and prod's 30 s DCGM scrape"
    )


def test_the_plan_prints_each_lines_price_basis(recordings: dict[str, Recording], tmp_path: Path) -> None:
    recording = recordings["dev"]
    cfg = load_platform_config(settings_of(load_stack_file("dev", REPO_ROOT)))
    report = build_report("dev", cfg, recording, [], [], MockValueMarker(recording.mock_values), tmp_path)
    for item, _, _, basis in report.cost_rows[:-1]:
        regions = basis.split("+")
        assert regions and all(r in ("koreacentral", "global") or r.endswith("*") for r in regions), (
            f"{item}: every cost row says whose price it is and marks another region's, got {basis!r}"
        )
    assert any("no price for koreacentral" in line for line in report.cost_lines), "unpriced lines are printed"


def _chargeback_price(recording: Recording, pool: str) -> str:
    """The `gpu_pool:gpu_hour_price_usd:info` term the chargeback rules record for `pool`: value and estimate."""
    (group,) = [g for g in recording.of_type(PROMETHEUS_RULE_GROUP) if "chargeback" in g.name]
    (rule,) = [r for r in group.inputs["rules"] if r.get("record") == "gpu_pool:gpu_hour_price_usd:info"]
    (term,) = [t for t in rule["expression"].split(" or ") if f'"gpu_pool", "{pool}"' in t]
    return term


def test_a_spot_pool_is_billed_and_charged_back_at_the_sourced_spot_price() -> None:
    recording = _variant("dev", lambda config: config["aks-gpu-platform:gpuPools"][0].update(priority="Spot"))
    pools = cost.pool_capacities(recording)
    estimate = estimate_cost(recording, pools, cost.held_gpu_nodes(recording, pools))
    (line,) = [c for c in estimate.lines if c.item.startswith("pool gput4") and "kept up" not in c.item]
    assert line.item.endswith("x Standard_NC4as_T4_v3 Spot"), line.item
    assert line.ceiling == pytest.approx(4 * (0.062699 * MONTH + P10_DISK)), (
        "4 Spot T4 nodes at the catalog's East US Spot price (0.062699 USD/h), not the 0.526 on-demand rate"
    )
    assert not line.prices[0].estimate, "a sourced Spot price is no estimate"
    term = _chargeback_price(recording, "gput4")
    assert "vector(0.0627)" in term and '"estimate", "false"' in term, (
        f"teams are charged back the Spot GPU-hour their pods run on: {term}"
    )


def test_a_spot_pool_without_a_sourced_spot_price_is_an_estimate_in_the_plan_and_in_chargeback() -> None:
    def spot_h100(config: dict[str, Any]) -> None:
        config["aks-gpu-platform:gpuPools"][0].update(priority="Spot", vmSize="Standard_NC40ads_H100_v5")

    recording = _variant("dev", spot_h100)
    pools = cost.pool_capacities(recording)
    estimate = estimate_cost(recording, pools, cost.held_gpu_nodes(recording, pools))
    (line,) = [c for c in estimate.lines if c.item.startswith("pool gput4") and "kept up" not in c.item]
    assert "Spot (at most on-demand, estimate)" in line.item and line.prices[0].estimate, line.item
    term = _chargeback_price(recording, "gput4")
    assert "vector(6.98)" in term and '"estimate", "true"' in term, (
        f"no Spot price is sourced for H100: charged back at on-demand, labelled an estimate: {term}"
    )
