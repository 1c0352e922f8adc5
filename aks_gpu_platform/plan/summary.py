"""The plan's summary, computed once for the first screen, the detail and plan.json: the node pools with the price
of one node, the vCPU quota at peak, the monthly estimate, each team's quota ceiling and each model's cost, and the
cold-start path of each GPU pool and served model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aks_gpu_platform.config import PlatformConfig
from aks_gpu_platform.config.catalog.prices import HOURS_PER_MONTH
from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.testing import Recording

from . import cold_start
from .cost import (
    HeldGpuNodes,
    PoolCapacity,
    QuotaNeed,
    TeamCeiling,
    held_gpu_nodes,
    monthly_usd,
    node_price,
    pool_capacities,
    quota_needs,
    stack_region,
    team_quota_ceilings,
    usd,
)
from .estimate import CostEstimate, CostLine, estimate_cost
from .model_cost import ModelCost, model_costs


@dataclass(frozen=True)
class Costs:
    """What the stack's pools need and cost, each figure computed once."""

    region: str
    pools: list[PoolCapacity]
    held: list[HeldGpuNodes]
    quota: list[QuotaNeed]
    unknown: list[PoolCapacity]
    """Pools whose size the catalogs lack: their vCPUs are not counted."""
    estimate: CostEstimate
    teams: list[TeamCeiling]
    models: list[ModelCost]


def stack_costs(recording: Recording, cfg: PlatformConfig | None = None) -> Costs:
    """The recorded stack's quota and costs; with `cfg`, its served models' too."""
    pools = pool_capacities(recording)
    held = held_gpu_nodes(recording, pools)
    region = stack_region(recording)
    needs, unknown = quota_needs(pools)
    models = model_costs(cfg.inference.models, pools, region) if cfg is not None else []
    teams = team_quota_ceilings(recording, pools)
    return Costs(region, pools, held, needs, unknown, estimate_cost(recording, pools, held), teams, models)


POOL_HEADER = [
    "pool (Azure name)",
    "VM size",
    "zones",
    "nodes",
    "GPUs",
    "vCPUs",
    "surge",
    "VM/month",
    "OS disk",
    "node/month",
]
QUOTA_HEADER = ["vCPU quota", "needed at peak", "pools"]
COST_HEADER = ["item", "floor/month", "ceiling/month", "price"]


def pool_name(pool: PoolCapacity) -> str:
    """The pool's config name, with its Azure agent-pool name beside it where they differ."""
    return pool.name if pool.name == pool.pool else f"{pool.name} ({pool.pool})"


def _gpus(pool: PoolCapacity) -> str:
    devices = f" ({pool.gpu_devices_per_vm} devices)" if pool.gpu_devices_per_vm != pool.gpus_per_vm else ""
    return str(pool.gpus_per_vm or "-") + devices


def _node_cells(pool: PoolCapacity, region: str) -> list[str]:
    """One node a month: its VM (the Spot price on a Spot pool), its managed OS disk, and the two together."""
    price = node_price(pool, region)
    if isinstance(price, str):
        return ["no price", "-", "no price"]
    disk = usd(price.disk_monthly) if price.disk else "-"
    return [usd(price.vm_monthly), disk, usd(price.monthly)]


def pool_rows(costs: Costs) -> list[list[str]]:
    return [
        [
            pool_name(p),
            p.vm_size + (" (Spot)" if p.spot else ""),
            ",".join(p.zones) or "-",
            f"{p.min_count}-{p.max_count}",
            _gpus(p),
            str(p.vcpus or "?"),
            f"+{p.surge_nodes} ({p.max_surge})",
            *_node_cells(p, costs.region),
        ]
        for p in costs.pools
    ]


def quota_rows(costs: Costs) -> list[list[str]]:
    return [[n.quota, f"{n.vcpus:,}", ", ".join(n.pools)] for n in costs.quota]


def _price_regions(line: CostLine, region: str) -> str:
    """Whose prices a row uses, short enough for the table: a `*` marks a stand-in for `region`'s own."""
    regions = dict.fromkeys(p.region if p.region in (region, "global") else f"{p.region}*" for p in line.prices)
    return "+".join(regions)


def cost_rows(estimate: CostEstimate) -> list[list[str]]:
    rows = [
        [
            line.item,
            monthly_usd(line.floor),
            monthly_usd(line.ceiling) if line.ceiling else "-",
            _price_regions(line, estimate.region),
        ]
        for line in estimate.lines
    ]
    return [*rows, ["total", monthly_usd(estimate.floor), monthly_usd(estimate.ceiling), ""]]


def price_basis(estimate: CostEstimate) -> str:
    prices = estimate.prices
    dates = sorted({p.read_on.isoformat() for p in prices})
    own = sum(p.region == estimate.region for p in prices)
    return (
        f"USD list prices for {estimate.region}, {HOURS_PER_MONTH} h a month, pay-as-you-go: {own} of {len(prices)} "
        f"figures are {estimate.region}'s own (* marks another region's standing in; `unstated`: the source names "
        f"none), {sum(p.estimate for p in prices)} are estimates; read {', '.join(dates)} (config/catalog/prices.py)."
    )


def left_out(estimate: CostEstimate) -> str:
    """What the floor and ceiling leave out, in one sentence: the items without a price, and how many more."""
    unpriced = [item.split(": ", 1)[0] for item in estimate.unpriced]
    parts = [f"no {estimate.region} price for {', '.join(unpriced)}"] if unpriced else []
    parts += [f"{len(estimate.usage_priced)} services billed by use"] if estimate.usage_priced else []
    parts += [f"{len(estimate.unclassified)} resource types not classified"] if estimate.unclassified else []
    return "Not in the total: " + "; ".join(parts) + "." if parts else "The total leaves nothing out."


def left_out_lines(estimate: CostEstimate) -> list[str]:
    """Each item left out of the floor and ceiling, with why, and the usage the plan can state."""
    lines = [f"Not included (no price): {item}" for item in estimate.unpriced]
    lines += [f"Not classified (its bill is unknown): {t}" for t in estimate.unclassified]
    if estimate.usage_priced:
        lines.append("Not included (billed by use): " + "; ".join(estimate.usage_priced))
    return lines + [f"Usage estimate: {volume}" for volume in estimate.volumes]


def team_line(team: TeamCeiling) -> str:
    """A team's quota held all month: the GPU-hours chargeback bills (the quota ceiling), then the OS disks of those
    nodes, which it does not bill, and the two together."""
    line = (
        f"Team {team.team}: quota ceiling {monthly_usd(team.monthly)}/month{' (estimate)' if team.estimate else ''} "
        f"for {team.gpus} GPUs held all month, the GPU-hours chargeback bills"
    )
    if team.disks:
        estimate = " (estimate)" if team.disks_estimate else ""
        line += f"; their nodes' OS disks add {monthly_usd(team.disks)}{estimate}: {monthly_usd(team.total)} in all"
    return line + (f"; no price for {', '.join(team.unpriced)} (not counted)" if team.unpriced else "")


def cold_start_lines(
    pools: Sequence[cold_start.PoolBudget], models: Sequence[ServedModelConfig], ready: Sequence[cold_start.PoolBudget]
) -> list[str]:
    """One line per GPU pool (pools with the same path share it) and per served model (`ready`: its budget): the
    whole path, total first."""
    paths: dict[str, list[str]] = {}
    for budget in pools:
        paths.setdefault(cold_start.whole_path(budget), []).append(budget.pool)
    lines = [
        f"pool{'s' if len(names) > 1 else ''} {', '.join(names)}, pending GPU pod to running job: {path}"
        for path, names in paths.items()
    ]
    lines += [
        f"model {model.name} on {model.pool}, new replica on a new node to first token: {cold_start.whole_path(budget)}"
        for model, budget in zip(models, ready, strict=True)
    ]
    return lines
