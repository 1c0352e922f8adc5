"""What each served model costs a month, and its price per million output tokens where a benchmark measured the
same model, GPU, GPUs per replica and precision (config/catalog/serving_benchmarks.py).

A replica holds `tensorParallel x nodes` GPUs of its pool, so it costs that share of the pool's node price
(aks_gpu_platform/plan/cost.py `node_price`: VM and managed OS disk), the figure every other line of the
plan uses for those nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from aks_gpu_platform.config.catalog.gpu_sizes import gpu_sku
from aks_gpu_platform.config.catalog.models import serving_dtype
from aks_gpu_platform.config.catalog.serving_benchmarks import ServingBenchmark, matching_benchmark, rows_for
from aks_gpu_platform.config.inference.models import ServedModelConfig

from .cost import GPU_POOL_LABEL, NodePrice, PoolCapacity, monthly_usd, node_price


@dataclass(frozen=True)
class ModelCost:
    """What a served model's GPUs cost a month, and its price per million output tokens where a benchmark
    measured the same model, GPU, GPUs per replica and precision."""

    model: str
    pool: str
    """The pool's config name."""
    gpus_per_replica: int
    gpu_model: str
    min_replicas: int
    max_replicas: int
    node: NodePrice | None
    """One node of the pool (None when the size has no price)."""
    benchmark: ServingBenchmark | None
    no_benchmark: str
    """Why no price per token is given ('' when one is)."""
    vm_size: str = ""
    gpus_per_vm: int = 1
    nodes_per_replica: int = 1
    """Whole nodes one replica spans (`nodes`); a single-node replica still keeps its node billed."""

    @property
    def node_share(self) -> Fraction:
        """The part of the pool's nodes one replica holds: its GPUs over a node's."""
        return Fraction(self.gpus_per_replica, max(self.gpus_per_vm, 1))

    @property
    def replica_monthly(self) -> float | None:
        return None if self.node is None else float(self.node_share) * self.node.monthly

    def _monthly(self, replicas: int) -> float | None:
        return None if self.replica_monthly is None else replicas * self.replica_monthly

    @property
    def floor(self) -> float | None:
        """minReplicas held all month: they stay up when idle."""
        return self._monthly(self.min_replicas)

    @property
    def ceiling(self) -> float | None:
        return self._monthly(self.max_replicas)

    @property
    def estimate(self) -> bool:
        return self.node is not None and self.node.estimate

    @property
    def node_hour(self) -> float | None:
        """USD for one of the pool's nodes an hour: the pool bills whole VMs, however few GPUs are busy."""
        return None if self.node is None else self.node.hourly

    @property
    def replicas_per_node(self) -> int:
        """Replicas that fill a node (one for a multi-node replica)."""
        return 1 if self.nodes_per_replica > 1 else max(1, self.gpus_per_vm // self.gpus_per_replica)

    def _per_million(self, replicas: int) -> float | None:
        if self.node_hour is None or self.benchmark is None:
            return None
        tokens_per_hour = replicas * self.benchmark.output_tokens_per_second * 3600
        return self.node_hour * self.nodes_per_replica / tokens_per_hour * 1_000_000

    @property
    def per_million_output_tokens(self) -> float | None:
        """USD for a million output tokens from one replica kept busy at the benchmark's rate, paying for the whole
        nodes it runs on (the pool's bill while it is the only replica there)."""
        return self._per_million(1)

    @property
    def per_million_full_node(self) -> float | None:
        """The same with its nodes full of busy replicas: the least a token can cost."""
        return self._per_million(self.replicas_per_node)


def _no_benchmark(model: ServedModelConfig, gpu: str, dtype: str) -> str:
    why = f"no sourced benchmark for {model.weights.model_id} on {gpu}"
    near = rows_for(model.weights.model_id, gpu)
    if near:
        measured = "; ".join(f"{b.name} measured {b.gpus} GPU(s) in {b.dtype}" for b in near)
        why += f" served as {model.gpus_per_replica} GPU(s) in {dtype} ({measured})"
    return why


def model_costs(models: Sequence[ServedModelConfig], pools: Sequence[PoolCapacity], region: str) -> list[ModelCost]:
    """Per served model: the share of its pool's nodes a replica holds (tensorParallel x nodes GPUs) at the pool's
    node price in `region`, and the benchmark that prices its tokens, if one was measured so. `pools`: the
    recorded pools (aks_gpu_platform/plan/cost.py `pool_capacities`), found by the model's pool name."""
    by_name = {p.name: p for p in pools if p.labels.get(GPU_POOL_LABEL)}
    costs: list[ModelCost] = []
    for model in models:
        pool = by_name[model.pool]
        sku = gpu_sku(pool.vm_size)
        gpu = sku.gpu_model if sku else pool.vm_size
        dtype = serving_dtype(model.dtype, gpu)
        found = matching_benchmark(model.weights.model_id, gpu, model.gpus_per_replica, dtype)
        price = node_price(pool, region)
        costs.append(
            ModelCost(
                model.name,
                pool.name,
                model.gpus_per_replica,
                gpu,
                model.min_replicas,
                model.max_replicas,
                None if isinstance(price, str) else price,
                found,
                "" if found else _no_benchmark(model, gpu, dtype),
                pool.vm_size,
                pool.gpus_per_vm,
                model.nodes,
            )
        )
    return costs


def _nodes(share: Fraction) -> str:
    return f"{share} node{'s' if share > 1 else ''}"


def _replicas(count: int) -> str:
    return f"{count} replica{'' if count == 1 else 's'}"


def model_cost_headline(cost: ModelCost) -> str:
    """The model's line on the plan's first screen: what its replicas hold and cost; tokens in a few words."""
    head = (
        f"Model {cost.model}: {cost.min_replicas}-{cost.max_replicas} replicas of {cost.gpus_per_replica} x "
        f"{cost.gpu_model} on {cost.pool}"
    )
    if cost.node is None or cost.floor is None or cost.ceiling is None:
        return f"{head}: no price for {cost.vm_size} (not counted)"
    marker = " (estimate)" if cost.estimate else ""
    line = (
        f"{head} ({_nodes(cost.node_share)} each): {monthly_usd(cost.floor)}-{monthly_usd(cost.ceiling)}/month{marker}"
    )
    per_million, full = cost.per_million_output_tokens, cost.per_million_full_node
    if per_million is None or full is None or cost.benchmark is None:
        return f"{line}; {cost.no_benchmark}"
    filled = f", ${full:,.2f} with {cost.replicas_per_node} filling it" if cost.replicas_per_node > 1 else ""
    return (
        f"{line}; ${per_million:,.2f} per million output tokens from one busy replica alone on its "
        f"{_nodes(Fraction(cost.nodes_per_replica))}{filled} (as {cost.benchmark.name} measured, not as served here)"
    )


def model_cost_line(cost: ModelCost) -> str:
    """The model's line in the plan's detail: the share of nodes a replica holds with the node price's parts, floor
    and ceiling, the token price and how its benchmark was measured differently."""
    head = f"Model {cost.model} ({cost.gpus_per_replica} x {cost.gpu_model} per replica on pool {cost.pool}"
    if cost.node is None or cost.floor is None or cost.ceiling is None:
        return f"{head}): no price for {cost.vm_size} (not counted); {cost.no_benchmark or 'priced tokens'}"
    marker = " (estimate)" if cost.estimate else ""
    line = (
        f"{head}, {_nodes(cost.node_share)} each: {cost.node.parts(float(cost.node_share))}): floor "
        f"{monthly_usd(cost.floor)}/month ({_replicas(cost.min_replicas)}), ceiling "
        f"{monthly_usd(cost.ceiling)}/month ({cost.max_replicas}){marker}; "
    )
    per_million, full = cost.per_million_output_tokens, cost.per_million_full_node
    if per_million is None or full is None or cost.node_hour is None or cost.benchmark is None:
        return line + cost.no_benchmark
    bench = cost.benchmark
    nodes = cost.nodes_per_replica
    price = (
        f"${per_million:,.2f} per million output tokens from one replica busy at {bench.output_tokens_per_second:,.2f} "
        f"tokens/s on its {nodes} x {cost.vm_size} node{'s' if nodes > 1 else ''} "
        f"(${cost.node_hour * nodes:,.2f}/hour, billed whole)"
    )
    if cost.replicas_per_node > 1:
        price += f", ${full:,.2f} with {cost.replicas_per_node} busy replicas filling the node"
    differences = "; ".join(bench.differences) or "no difference recorded"
    return line + f"{price}; as measured by {bench.name} ({bench.source}), not as served here: {differences}"
