"""The cold-start budget of each GPU pool: how long from a pending GPU pod to a node that runs it, and what
each switch of `coldStart` changes, with every figure's source and date (config/catalog/cold_start.py).

Stages run one after another on a node that has to be created: the autoscaler reacts, Azure allocates the
VM and AKS bootstraps it (the AKS-installed driver included), the GPU Operator's driver where the operator
brings it, the platform's node agents start (the device plugin must advertise GPUs before the workload can
be scheduled), the workload image is pulled and started, and the job reads its weights. A warm standby
node skips the first three. Unknown figures stay unknown: a total adds up the known stages and names the ones
nothing bounds from above.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_platform.config import PlatformConfig
from aks_gpu_platform.config.catalog.cold_start import (
    AKS_DRIVER_IN_BOOTSTRAP,
    AMD_OPERATOR_DRIVER,
    ARTIFACT_STREAMING_FIGURES,
    ARTIFACT_STREAMING_MIN_REDUCTION,
    ARTIFACT_STREAMING_READ,
    AUTOSCALER_GPU_DELAY,
    BLOB_ACCOUNT_EGRESS,
    GPU_OPERATOR_DRIVER,
    IMAGE_START_COLD,
    IMAGE_START_PRESENT,
    LUSTRE_SOURCE,
    VLLM_ENGINE_START,
    VLLM_IMAGE,
    Figure,
    local_nvme,
    node_provisioning,
)
from aks_gpu_platform.config.catalog.lustre_skus import AMLFS_SKUS
from aks_gpu_platform.config.catalog.model_streamer import streamed_read
from aks_gpu_platform.config.catalog.models import (
    ACTIVATION_AND_GRAPHS_GIB,
    CUDA_RESERVE_MIB,
    device_memory_mib,
    serving_dtype,
)
from aks_gpu_platform.config.catalog.prices import HOURS_PER_MONTH
from aks_gpu_platform.config.gpu.section import ColdStartConfig, GpuPoolConfig
from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.config.inference.runtime import (
    CACHE_READ_MBPS,
    ENGINE_START_SECONDS,
    HUB_DOWNLOAD_MBPS,
    TEARDOWN_SECONDS,
)

from . import cost

MB_PER_GIB = 1024**3 / 10**6
TODAY = datetime.date(2026, 12, 2)
"""When the platform-derived figures (throughput from the stack's own Lustre size) were computed."""


@dataclass(frozen=True)
class Stage:
    name: str
    figure: Figure


@dataclass(frozen=True)
class SwitchEffect:
    """What turning one switch on does to the budget, and what it costs."""

    switch: str
    on: bool
    stage: str
    before: Figure
    after: Figure
    cost: str


@dataclass
class PoolBudget:
    pool: str
    vm_size: str
    stages: list[Stage]
    effects: list[SwitchEffect] = field(default_factory=list[SwitchEffect])
    warm_standby_monthly: float | None = None
    """USD a month for the pool's warm standby nodes (None: none, or the size has no price)."""
    notes: list[str] = field(default_factory=list[str])

    @property
    def low_s(self) -> float:
        return sum(s.figure.low_s or 0 for s in self.stages)

    @property
    def high_s(self) -> float | None:
        highs = [s.figure.high_s for s in self.stages]
        return None if any(h is None for h in highs) else sum(h or 0 for h in highs)

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


AUTOSCALER, PROVISIONING, DRIVER, PLATFORM_IMAGES, WORKLOAD_IMAGE, WEIGHTS = (
    "autoscaler reacts",
    "VM + node bootstrap",
    "driver",
    "platform node agents",
    "workload image",
    "weights",
)


def _scaled(figure: Figure, factor: float, source: str, published: datetime.date, note: str) -> Figure:
    scale = lambda v: None if v is None else round(v * factor, 1)  # noqa: E731
    return Figure(scale(figure.low_s), scale(figure.high_s), source, published, note)


def _platform_agents(cfg: PlatformConfig, pool: GpuPoolConfig) -> list[str]:
    """What the platform starts on a new node of the pool before or beside the workload."""
    mode = cfg.gpu_stack.mode
    agents = {
        "devicePlugin": ["NVIDIA device plugin"],
        "gpuOperator": ["GPU Operator operands (driver, toolkit, device plugin, validator)"],
        "aksManaged": ["AKS-managed device plugin and DCGM exporter"],
    }[mode]
    if pool.vendor == "amd":
        agents = ["AMD GPU Operator operands (KMM module loader, device plugin, node labeller, metrics exporter)"]
    elif mode != "aksManaged" and not cfg.gpu_stack.operator_dcgm:
        agents.append("DCGM exporter (from the platform registry's cache rule)")
    if pool.infiniband:
        agents.append("RDMA shared device plugin")
    if pool.sku.multi_node_nvlink:
        agents.append("NVIDIA DRA driver kubelet plugin (ComputeDomains; starts once the driver is loaded)")
    if cfg.gpu_health.remediation.enabled:
        agents.append("NVSentinel node agents")
    if cfg.storage.lustre is not None and cfg.storage.lustre.enabled:
        agents.append("Lustre CSI node")
    if pool.cold_start.pre_pull_images:
        agents.append(f"image pre-pull ({len(pool.cold_start.pre_pull_images)} images)")
    return agents


def _workload_image(cold: ColdStartConfig) -> Figure:
    if cold.artifact_streaming and cold.pre_pull_images:
        # The 11 s start was measured with the whole image on the node. A streamed pull by tag resolves to the
        # image's streaming variant and fetches what startup reads; a pull by digest is not streamed (the GA
        # page's limits). So a pre-pull leaves a streamed image partly on the node, or a non-streamed one beside
        # it: no published start bounds that from below.
        streamed = _scaled(
            IMAGE_START_COLD,
            1 - ARTIFACT_STREAMING_MIN_REDUCTION,
            ARTIFACT_STREAMING_FIGURES,
            ARTIFACT_STREAMING_READ,
            "",
        )
        return Figure(
            None,
            streamed.high_s,
            ARTIFACT_STREAMING_FIGURES,
            ARTIFACT_STREAMING_READ,
            "streamed ('over 15%' faster than the 97 s cold start) and pre-pulled: a pre-pull of a streamed image "
            "brings only what its shell reads, so the 11 s of an image already on the node does not apply; no "
            "published lower bound",
        )
    if cold.artifact_streaming:
        return _scaled(
            IMAGE_START_COLD,
            1 - ARTIFACT_STREAMING_MIN_REDUCTION,
            ARTIFACT_STREAMING_FIGURES,
            ARTIFACT_STREAMING_READ,
            "streamed from ACR: 'over 15%' faster to pod readiness than the 97 s cold start (at most 85% of it)",
        )
    if cold.pre_pull_images:
        return Figure(
            IMAGE_START_PRESENT.low_s,
            IMAGE_START_COLD.high_s,
            IMAGE_START_COLD.source,
            IMAGE_START_COLD.published,
            "pulled from node Ready, beside the device plugin: 11 s when done before the pod lands, 97 s at worst",
        )
    return IMAGE_START_COLD


def _weights(cfg: PlatformConfig, cold: ColdStartConfig) -> Figure:
    if cold.weights_gib is None:
        return Figure(None, None, "coldStart.weightsGiB", TODAY, "not set: how much a job reads before it starts")
    megabytes = cold.weights_gib * MB_PER_GIB
    lustre = cfg.storage.lustre
    if lustre is not None and lustre.enabled and lustre.sku in AMLFS_SKUS:
        rate = AMLFS_SKUS[lustre.sku].throughput_mbps(lustre.capacity_tib)
        where = f"Lustre {lustre.capacity_tib} TiB {lustre.sku} at {rate:,} MB/s aggregate"
        source, published = LUSTRE_SOURCE, TODAY
    else:
        rate = BLOB_ACCOUNT_EGRESS.mbps
        where = f"Blob at the account's {rate:,.0f} MB/s egress target"
        source, published = BLOB_ACCOUNT_EGRESS.source, BLOB_ACCOUNT_EGRESS.published
    note = f"{cold.weights_gib:g} GiB from {where}: a floor, one node reads at most its NIC's bandwidth"
    if cold.nvme_cache:
        note += "; a fresh node's NVMe is empty, so the cache serves only later jobs on the same node"
    return Figure(round(megabytes / rate, 1), None, source, published, note)


def stages(cfg: PlatformConfig, pool: GpuPoolConfig, cold: ColdStartConfig) -> list[Stage]:
    """The stages of one pool's cold start with the switches of `cold`."""
    warm = cold.warm_standby > 0
    skipped = Figure(0, 0, "coldStart.warmStandby", TODAY, f"first {cold.warm_standby} node(s) already up")
    driver = GPU_OPERATOR_DRIVER if cfg.gpu_stack.mode == "gpuOperator" else AKS_DRIVER_IN_BOOTSTRAP
    if pool.vendor == "amd":
        driver = AMD_OPERATOR_DRIVER  # AKS installs no AMD driver; AMD's operator does (components/gpu/amd_stack.py)
    agents = _platform_agents(cfg, pool)
    return [
        Stage(AUTOSCALER, skipped if warm else AUTOSCALER_GPU_DELAY),
        Stage(PROVISIONING, skipped if warm else node_provisioning(pool.sku.family)),
        Stage(DRIVER, skipped if warm else driver),
        Stage(
            PLATFORM_IMAGES,
            skipped
            if warm
            else Figure(
                None,
                None,
                "image sizes not readable offline",
                TODAY,
                "pulled in parallel once the node is Ready: " + "; ".join(agents),
            ),
        ),
        Stage(WORKLOAD_IMAGE, _workload_image(cold)),
        Stage(WEIGHTS, _weights(cfg, cold)),
    ]


SWITCH_STAGES = {
    "artifactStreaming": WORKLOAD_IMAGE,
    "prePullImages": WORKLOAD_IMAGE,
    "nvmeCache": WEIGHTS,
    "warmStandby": PROVISIONING,
}


def _switched_on(cold: ColdStartConfig, switch: str, pool: GpuPoolConfig) -> ColdStartConfig | None:
    """`cold` with `switch` turned on, or None where the pool cannot have it (refused by the config rules)."""
    if switch == "artifactStreaming":
        return cold.model_copy(update={"artifact_streaming": True}) if pool.sku.arch == "amd64" else None
    if switch == "prePullImages":
        return cold if cold.pre_pull_images else cold.model_copy(update={"pre_pull_images": ["<workload image>"]})
    if switch == "nvmeCache":
        return cold.model_copy(update={"nvme_cache": True}) if local_nvme(pool.vm_size) else None
    return cold if cold.warm_standby else cold.model_copy(update={"warm_standby": 1})


def _switch_cost(switch: str, pool: GpuPoolConfig, node: cost.NodePrice | str) -> str:
    if switch == "artifactStreaming":
        return (
            "no fee beyond the Premium registry the platform runs; streaming copies add registry storage (billed by "
            "use); AMD64 images pulled by tag only"
        )
    if switch == "prePullImages":
        return "each new node pulls the named images once (egress from their registry); one pause container"
    if switch == "nvmeCache":
        nvme = local_nvme(pool.vm_size)
        return f"none: {nvme.disks} NVMe disks, {nvme.total_tib:g} TiB, come with the size" if nvme else "n/a"
    nodes = max(pool.cold_start.warm_standby, 1)
    if isinstance(node, str):
        return f"{nodes} x {pool.vm_size} around the clock (no price: {node})"
    return f"{nodes} x {pool.vm_size} around the clock: {cost.monthly_usd(nodes * node.monthly)}/month"


def pool_budget(cfg: PlatformConfig, pool: GpuPoolConfig, node: cost.PoolCapacity | None) -> PoolBudget:
    """The budget as configured, and for each switch the targeted stage with it on (or off, if on); a warm standby
    priced at the registered pool's node price in the stack's region."""
    cold = pool.cold_start
    price = cost.node_price(node, cfg.location) if node else "the pool is not registered"
    budget = PoolBudget(pool.name, pool.vm_size, stages(cfg, pool, cold))
    for switch, stage_name in SWITCH_STAGES.items():
        on = {
            "artifactStreaming": cold.artifact_streaming,
            "prePullImages": bool(cold.pre_pull_images),
            "nvmeCache": cold.nvme_cache,
            "warmStandby": cold.warm_standby > 0,
        }[switch]
        other = _switched_off(cold, switch) if on else _switched_on(cold, switch, pool)
        if other is None:
            why = "no local NVMe figure" if switch == "nvmeCache" else "Arm64: AMD64 images only"
            budget.notes.append(f"{switch}: not available on {pool.vm_size} ({why})")
            continue
        before = budget.stage(stage_name).figure
        after = next(s.figure for s in stages(cfg, pool, other) if s.name == stage_name)
        if on:
            before, after = after, before
        budget.effects.append(SwitchEffect(switch, on, stage_name, before, after, _switch_cost(switch, pool, price)))
    if cold.warm_standby and not isinstance(price, str):
        budget.warm_standby_monthly = cold.warm_standby * price.monthly
    return budget


def _switched_off(cold: ColdStartConfig, switch: str) -> ColdStartConfig:
    update: dict[str, Any] = {
        "artifactStreaming": {"artifact_streaming": False},
        "prePullImages": {"pre_pull_images": []},
        "nvmeCache": {"nvme_cache": False},
        "warmStandby": {"warm_standby": 0},
    }[switch]
    return cold.model_copy(update=update)


def budgets(cfg: PlatformConfig, pools: Sequence[cost.PoolCapacity]) -> list[PoolBudget]:
    """One budget per configured GPU pool, priced from the pool the program registers."""
    by_name = {p.labels.get("gpu-pool"): p for p in pools if p.labels.get("gpu-pool")}
    return [pool_budget(cfg, pool, by_name.get(pool.name)) for pool in cfg.gpu_pools]


ENGINE_START, FIRST_TOKEN = "vLLM engine start", "first token"
GIB = 1024**3


def _served_weights(checkpoint_gib: float, dtype: str) -> Figure:
    """A replica reads the checkpoint as the Hub publishes it (16-bit) from its model's weights cache, a Blob claim
    (components/inference/weights_cache.py), whatever Lustre the stack has; vLLM quantises fp8 after loading the 16-bit
    weights (vllm 0.34.0 docs/features/quantization/online.md, vllm/model_executor/model_loader/weight_utils.py)."""
    rate = BLOB_ACCOUNT_EGRESS.mbps
    note = (
        f"{checkpoint_gib:.1f} GiB of 16-bit checkpoint (served as {dtype}) from the model's Blob weights cache at "
        f"the account's {rate:,.0f} MB/s egress target: a floor, one node reads at most its NIC's bandwidth"
    )
    seconds = round(checkpoint_gib * MB_PER_GIB / rate, 1)
    return Figure(seconds, None, BLOB_ACCOUNT_EGRESS.source, BLOB_ACCOUNT_EGRESS.published, note)


def model_ready(cfg: PlatformConfig, model: ServedModelConfig) -> PoolBudget:
    """A replica of `model` on a new node of its pool: the pool's node stages, the vLLM image, the weights read from
    the cache or streamed from Blob (params x bytes of the serving dtype), the engine's start, and the first token
    (the SLO's target)."""
    pool = next(p for p in cfg.gpu_pools if p.name == model.pool)
    dtype = serving_dtype(model.dtype, pool.sku.gpu_model)
    checkpoint_gib = model.shape.weight_bytes("bfloat16") / GIB
    node = stages(cfg, pool, pool.cold_start)
    image = VLLM_IMAGE
    if pool.cold_start.pre_pull_images:
        image = Figure(
            None,
            None,
            VLLM_IMAGE.source,
            VLLM_IMAGE.published,
            VLLM_IMAGE.note + "; pre-pull starts it "
            "at node Ready only if the pool's coldStart.prePullImages lists the vLLM image",
        )
    slo = model.slo.time_to_first_token_p90_seconds
    first = Figure(None, slo, "inference.models[].slo", TODAY, "the SLO's p90 time to first token: a target")
    ready = [s for s in node if s.name not in (WORKLOAD_IMAGE, WEIGHTS)] + [
        Stage(WORKLOAD_IMAGE, image),
        Stage(
            WEIGHTS,
            streamed_read(checkpoint_gib, model.tensor_parallel)
            if model.weights.blob is not None
            else _served_weights(checkpoint_gib, dtype),
        ),
        Stage(ENGINE_START, VLLM_ENGINE_START),
        Stage(FIRST_TOKEN, first),
    ]
    return PoolBudget(
        model.name,
        pool.vm_size,
        ready,
        notes=[
            f"{checkpoint_gib:.1f} GiB checkpoint served as {dtype} "
            f"({model.shape.hub_id}) on {model.gpus_per_replica} GPU(s) of pool {pool.name}"
        ],
    )


def models_ready(cfg: PlatformConfig) -> list[PoolBudget]:
    return [model_ready(cfg, m) for m in cfg.inference.models]


def seconds(figure: Figure) -> str:
    """A range as text: `97 s`, `600-1750 s`, `<= 413 s`, `>= 600 s`, `unknown`."""
    low, high = figure.low_s, figure.high_s
    if low is None and high is None:
        return "unknown"
    if low is None:
        return f"<= {high:g} s"
    if high is None:
        return f">= {low:g} s"
    return f"{low:g} s" if low == high else f"{low:g}-{high:g} s"


def total(budget: PoolBudget) -> str:
    """The whole path's range, the known stages added up, then the stages nothing bounds from above:
    `41-540 s + unknown (platform node agents, weights)`; `97 s` when every stage is known."""
    unknown = [s.name for s in budget.stages if s.figure.high_s is None]
    known = sum(s.figure.high_s or 0 for s in budget.stages)
    span = f"{known:g} s" if budget.low_s == known else f"{budget.low_s:g}-{known:g} s"
    return f"{span} + unknown ({', '.join(unknown)})" if unknown else span


def whole_path(budget: PoolBudget) -> str:
    """The total first (the known stages added up, and how many stages nothing bounds from above), then each stage
    of the path with its figure, in the order they run: `41-540 s + 2 unknown: autoscaler reacts 30 s, ...`."""
    unknown = sum(s.figure.high_s is None for s in budget.stages)
    span = total(budget).split(" + unknown", 1)[0]
    head = f"{span} + {unknown} unknown" if unknown else span
    return f"{head}: " + ", ".join(f"{s.name} {seconds(s.figure)}" for s in budget.stages)


def as_document(budget: PoolBudget) -> dict[str, Any]:
    """The budget in plan.json: every stage with its figure, source and date."""

    def figure(f: Figure) -> dict[str, Any]:
        return {
            "lowSeconds": f.low_s,
            "highSeconds": f.high_s,
            "source": f.source,
            "published": f.published.isoformat(),
            "note": f.note,
        }

    return {
        "pool": budget.pool,
        "vmSize": budget.vm_size,
        "stages": [{"stage": s.name, **figure(s.figure)} for s in budget.stages],
        "switches": [
            {
                "switch": e.switch,
                "on": e.on,
                "stage": e.stage,
                "off": figure(e.before),
                "onFigure": figure(e.after),
                "cost": e.cost,
            }
            for e in budget.effects
        ],
        "warmStandbyMonthlyUsd": budget.warm_standby_monthly,
        "hoursPerMonth": HOURS_PER_MONTH,
    }


def unsourced_serving_facts(cfg: PlatformConfig) -> list[str]:
    """Plan warnings for what the served models' memory fit and startup budgets assume without an upstream figure
    (tests/upstream/engine_semantics.py UNSOURCED_FACTS)."""
    if not cfg.inference.models:
        return []
    warnings = [
        f"served models: stated, not published: the weights cache read at {CACHE_READ_MBPS:g} MB/s per replica and "
        f"{ENGINE_START_SECONDS} s of engine start (startup probe, VLLM_ENGINE_READY_TIMEOUT_S), the Hub download at "
        f"{HUB_DOWNLOAD_MBPS:g} MB/s (staging Job deadline), {ACTIVATION_AND_GRAPHS_GIB:g} GiB per GPU for "
        f"activations and CUDA graphs and {CUDA_RESERVE_MIB:,} MiB per GPU the driver keeps from CUDA where no CUDA "
        f"figure is recorded (memory fit), {TEARDOWN_SECONDS} s for the engine to exit after its drain (grace "
        "period); compare with the staging Job's duration, vLLM's 'Available KV cache memory' log line and how long "
        "a stopping server takes after its last request"
    ]
    pools = {p.name: p for p in cfg.gpu_pools}
    for model in cfg.inference.models:
        sku = pools[model.pool].sku
        reported, sourced = device_memory_mib(sku.gpu_model, sku.gpu_memory_gib)
        if not sourced:
            warnings.append(
                f"model {model.name}: no published figure for the memory a {sku.gpu_model} reports; the fit check "
                f"assumes {reported:,} MiB (the nominal {sku.gpu_memory_gib} GiB less the 1/16 ECC reserve and "
                f"{CUDA_RESERVE_MIB:,} MiB the driver keeps from CUDA)"
            )
    return warnings
