"""The served models against the rest of the platform (`check_models`, run by PlatformConfig once every section is
valid): the catalog's sourced shape, Hub access, each model's GPU layout and memory fit on its pool, the pool's
capacity beside the teams' quotas, and a scale-to-zero wake against the SLO.

The memory rule follows config/catalog/models.py: weights plus the KV cache of one maxModelLen sequence, plus the LoRA
slots vLLM preallocates for the model's adapters (adapters.py), must fit vLLM's own budget of tensorParallel x nodes
GPUs (engine_memory_budget).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..catalog.cold_start import AUTOSCALER_GPU_DELAY, node_provisioning
from ..catalog.gpu_sizes import GPU_SKUS
from ..catalog.models import (
    ACTIVATION_AND_GRAPHS_GIB,
    GPU_MEMORY_UTILIZATION,
    MIB,
    MODELS,
    ModelShape,
    computes_bfloat16,
    device_memory_mib,
    model_shape,
    serving_dtype,
)
from ..errors import field_error
from ..gpu.section import GpuPoolConfig
from ..training.section import TrainingConfig, gpu_capacity, gpus_per_node
from .adapters import adapter_memory_bytes, lora_slots, max_lora_rank
from .models import GIB, HUB_COMMIT, InferenceConfig, ServedModelConfig


def engine_memory_budget(model: ServedModelConfig, pool: GpuPoolConfig) -> float:
    """Bytes vLLM 0.34.0 leaves for the weights and the KV cache over a replica's GPUs: per GPU,
    ceil(CUDA-reported total x --gpu-memory-utilization) (vllm/v1/worker/utils.py request_memory) less the activation
    peak, CUDA graphs and context (vllm/v1/worker/gpu_worker.py determine_available_memory; a stated margin)."""
    reported, _ = device_memory_mib(pool.sku.gpu_model, pool.sku.gpu_memory_gib)
    per_gpu = math.ceil(reported * MIB * GPU_MEMORY_UTILIZATION) - ACTIVATION_AND_GRAPHS_GIB * GIB
    return model.gpus_per_replica * per_gpu


def _memory_fit(model: ServedModelConfig, pool: GpuPoolConfig) -> str | None:
    """Why the model does not fit its GPUs, or None."""
    shape = model.shape
    dtype = serving_dtype(model.dtype, pool.sku.gpu_model)
    weights = shape.weight_bytes(dtype)
    kv = shape.kv_bytes_per_token * model.max_model_len
    gpus = model.gpus_per_replica
    usable = engine_memory_budget(model, pool)
    lora = adapter_memory_bytes(model)
    if weights + kv + lora <= usable:
        return None
    reported, _ = device_memory_mib(pool.sku.gpu_model, pool.sku.gpu_memory_gib)
    slots = (
        f" + {lora / GIB:.2f} GiB for {lora_slots(model)} LoRA slot(s) at rank {max_lora_rank(model.adapters)}"
        if lora
        else ""
    )
    return (
        f"{shape.hub_id} in {dtype} needs {weights / GIB:.1f} GiB of weights + {kv / GIB:.1f} GiB of KV cache for "
        f"maxModelLen {model.max_model_len} ({shape.kv_bytes_per_token} B/token){slots} = "
        f"{(weights + kv + lora) / GIB:.1f} GiB, "
        f"but vLLM's budget on {gpus} x {pool.sku.gpu_model} ({reported:,} MiB each as CUDA reports it, "
        f"--gpu-memory-utilization {GPU_MEMORY_UTILIZATION}, less {ACTIVATION_AND_GRAPHS_GIB:g} GiB per GPU for "
        f"activations and CUDA graphs) is {usable / GIB:.1f} GiB: lower maxModelLen, raise tensorParallel/nodes, "
        f"use fp8 or a larger GPU{', or fewer LoRA slots (maxLoras) or a lower adapter rank' if lora else ''}"
    )


PICKER_HOLD_CEILING_SECONDS = 60.0
"""The last finite bucket of the picker's inference_extension_flow_control_request_queue_duration_seconds
(gateway-api-inference-extension v1.5.0 pkg/epp/metrics/metrics.go l.395): histogram_quantile reads a longer hold as
this."""


def _wake_floor_seconds(pool: GpuPoolConfig) -> float:
    """The least a request that wakes a model from zero replicas waits for a GPU node: the autoscaler's delay plus
    the lowest published provisioning time of the pool's size family (0 where none is published)."""
    provisioning = node_provisioning(pool.sku.family)
    return (AUTOSCALER_GPU_DELAY.low_s or 0) + (provisioning.low_s or 0)


def _catalogued_shape(path: str, model: ServedModelConfig) -> ModelShape:
    """The model's sourced shape from the catalog: no guessed shapes."""
    shape = model_shape(model.weights.model_id)
    if shape is None:
        key = "weights.huggingFace" if model.weights.hugging_face else "weights.catalogId"
        raise field_error(
            f"{path}.{key}",
            model.weights.model_id,
            f"not in the model catalog (config/catalog/models.py), which sizes GPUs from sourced shapes: "
            f"{sorted(MODELS)}; add a row with its config.json source to serve another",
        )
    return shape


def _check_hub_access(path: str, model: ServedModelConfig, shape: ModelShape, environment: str) -> None:
    """Hub weights: a commit in prod (reproducible), and the token a gated model needs."""
    weights = model.weights
    if weights.hugging_face and environment == "prod" and not (weights.revision and HUB_COMMIT.match(weights.revision)):
        raise field_error(
            f"{path}.weights.revision",
            weights.revision,
            "prod serves reproducible weights: a Hub commit (40 lowercase hex) from the model's 'Files and versions'",
        )
    if shape.gated and weights.hugging_face and not weights.token_secret:
        raise field_error(
            f"{path}.weights.tokenSecret",
            False,
            f"{shape.hub_id} is gated ({shape.license}): the Hub serves it only with a token of an account that "
            "accepted the licence; set tokenSecret: true and `pulumi config set --secret huggingFaceToken <token>`",
        )


def _check_context_length(path: str, model: ServedModelConfig, shape: ModelShape) -> None:
    if model.max_model_len > shape.max_position_embeddings:
        raise field_error(
            f"{path}.maxModelLen",
            model.max_model_len,
            f"{shape.hub_id} is built for at most {shape.max_position_embeddings} tokens (max_position_embeddings)",
        )


def _check_gpu_layout(path: str, model: ServedModelConfig, pool: GpuPoolConfig) -> None:
    """Whole GPUs, tensor parallel within a node's GPUs, InfiniBand between a replica's nodes."""
    per_node = gpus_per_node(pool)
    if pool.mig_profile is not None or pool.sharing is not None:
        raise field_error(
            f"{path}.pool",
            model.pool,
            "a model server needs whole GPUs: pool "
            f"{pool.name} is {'cut into MIG slices' if pool.mig_profile else 'shared between pods'}",
        )
    if model.tensor_parallel > per_node or per_node % model.tensor_parallel:
        divisors = [d for d in range(1, per_node + 1) if per_node % d == 0]
        raise field_error(
            f"{path}.tensorParallel",
            model.tensor_parallel,
            f"must divide the {per_node} GPUs of a {pool.vm_size} node: one of {divisors}",
        )
    if model.nodes > 1 and not pool.infiniband:
        raise field_error(
            f"{path}.nodes",
            model.nodes,
            f"a model across nodes talks over InfiniBand; pool {pool.name} has infiniband off "
            f"(IB sizes: {sorted(s for s, sku in GPU_SKUS.items() if sku.infiniband)})",
        )


def _check_dtype(path: str, model: ServedModelConfig, pool: GpuPoolConfig) -> None:
    if model.dtype == "bfloat16" and not computes_bfloat16(pool.sku.gpu_model):
        raise field_error(
            f"{path}.dtype",
            "bfloat16",
            f"{pool.sku.gpu_model} has compute capability below 8.0 and vLLM refuses bfloat16 there: use float16 "
            "(or auto)",
        )


def _check_memory(path: str, model: ServedModelConfig, pool: GpuPoolConfig) -> None:
    problem = _memory_fit(model, pool)
    if problem is not None:
        raise field_error(f"{path}.maxModelLen", model.max_model_len, problem)


def _check_pool_capacity(path: str, model: ServedModelConfig, pool: GpuPoolConfig) -> None:
    """maxReplicas of the model fit the pool at its maxCount."""
    needed = model.max_replicas * model.gpus_per_replica
    if needed > gpu_capacity(pool):
        raise field_error(
            f"{path}.maxReplicas",
            model.max_replicas,
            f"{model.max_replicas} replicas x {model.gpus_per_replica} GPUs = {needed}, but pool {pool.name} holds "
            f"{gpu_capacity(pool)} (maxCount {pool.max_count} x {gpus_per_node(pool)})",
        )


def _check_model(i: int, model: ServedModelConfig, pool: GpuPoolConfig, environment: str) -> None:
    """One model against its pool and the catalog; the first rule it breaks raises."""
    path = f"inference.models[{i}]"
    shape = _catalogued_shape(path, model)
    _check_hub_access(path, model, shape, environment)
    _check_context_length(path, model, shape)
    _check_gpu_layout(path, model, pool)
    _check_dtype(path, model, pool)
    _check_memory(path, model, pool)
    _check_pool_capacity(path, model, pool)
    if model.scale_to_zero:
        _check_wake_against_slo(path, model, pool)


def _check_wake_against_slo(path: str, model: ServedModelConfig, pool: GpuPoolConfig) -> None:
    """The SLO alert reads the caller's time to first token as the time held in the endpoint picker plus vLLM's own
    (components/inference/model_dashboards.py). A request that wakes the model is held in the picker for the whole
    wake, so on that same quantity a wake is at least the wake floor, and the picker's histogram reads any hold
    longer than its last finite bucket as that bucket."""
    slo = model.slo.time_to_first_token_p90_seconds
    floor = _wake_floor_seconds(pool)
    if slo < floor:
        raise field_error(
            f"{path}.scaleToZero",
            True,
            f"a request that wakes the model is held in the endpoint picker at least {floor:.0f} s for a "
            f"{pool.sku.family} node (autoscaler delay + published provisioning, config/catalog/cold_start.py), so "
            f"its time to first token as the SLO alert reads it (time held in the picker + vLLM's) is above the "
            f"SLO's {slo:g} s on every wake: keep minReplicas >= 1",
        )
    if slo >= PICKER_HOLD_CEILING_SECONDS:
        raise field_error(
            f"{path}.scaleToZero",
            True,
            f"the SLO alert reads the time a request is held in the endpoint picker from a histogram whose last "
            f"bucket is {PICKER_HOLD_CEILING_SECONDS:g} s, so a wake longer than that reads as "
            f"{PICKER_HOLD_CEILING_SECONDS:g} s and an SLO of {slo:g} s is never seen missed by a wake: keep "
            f"minReplicas >= 1, or set slo.timeToFirstTokenP90Seconds below {PICKER_HOLD_CEILING_SECONDS:g}",
        )


def check_models(
    inference: InferenceConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    training: TrainingConfig,
    environment: str,
) -> None:
    """Each model against the pools, the teams and the catalog, before any resource exists."""
    pools = {p.name: p for p in gpu_pools}
    teams = [t.name for t in training.teams] if training.enabled else []
    for i, model in enumerate(inference.models):
        path = f"inference.models[{i}]"
        pool = pools.get(model.pool)
        if pool is None:
            raise field_error(f"{path}.pool", model.pool, f"must name a GPU pool in gpuPools: {sorted(pools)}")
        if pool.sku.vendor != "nvidia":
            raise field_error(
                f"{path}.pool", model.pool, f"vLLM is served on NVIDIA pools; {pool.vm_size} has {pool.sku.gpu_model}"
            )
        for j, team in enumerate(model.teams):
            if team not in teams:
                raise field_error(
                    f"{path}.teams[{j}]",
                    team,
                    f"must name a team of training.teams (with training on): {teams}",
                )
        _check_model(i, model, pool, environment)
    _check_kept_up_beside_quotas(inference, pools, training)


def _check_kept_up_beside_quotas(
    inference: InferenceConfig, pools: dict[str, GpuPoolConfig], training: TrainingConfig
) -> None:
    """Nominal quota is a guarantee: a job using all of it must find the GPUs free. Replicas a model keeps up
    (minReplicas) hold GPUs whenever it is idle, so they must fit beside the teams' nominal quotas on their pool."""
    nominal: dict[str, int] = {}
    for team in training.teams if training.enabled else []:
        for quota in team.quotas:
            nominal[quota.pool] = nominal.get(quota.pool, 0) + quota.gpus
    kept: dict[str, int] = {}
    for i, model in enumerate(inference.models):
        kept[model.pool] = kept.get(model.pool, 0) + model.min_replicas * model.gpus_per_replica
        pool = pools[model.pool]
        if nominal.get(pool.name, 0) + kept[pool.name] > gpu_capacity(pool):
            raise field_error(
                f"inference.models[{i}].minReplicas",
                model.min_replicas,
                f"pool {pool.name} holds {gpu_capacity(pool)} GPUs; the teams' nominal quotas there take "
                f"{nominal.get(pool.name, 0)} and the models' kept-up replicas {kept[pool.name]}: a job using its "
                "whole quota would be admitted and never placed. Lower minReplicas or a quota, or raise maxCount",
            )
