"""LoRA adapters of a served model (`inference.models[].adapters[]`): each is served by the base model's vLLM
replicas, callable by its own name, and takes GPU memory from the base's KV cache.

What it follows (vLLM 0.34.0, PyPI sdist sha256 fcad848b...; paths inside it):
- vllm/config/lora.py LoRAConfig: `--max-loras` (adapters one batch may mix, the GPU slots, >= 1), `--max-lora-rank`
  (one of MaxLoRARanks: 1, 8, 16, 32, 64, 128, 256, 320, 512), `--max-cpu-loras` (adapters kept in host memory, >=
  max_loras); vllm/lora/peft_helper.py validate_legal refuses an adapter whose rank (the largest of `r` and
  `rank_pattern` in its adapter_config.json) exceeds `--max-lora-rank`, and a static adapter that fails to load
  fails the server's start (vllm/entrypoints/openai/models/serving.py init_static_loras).
- Memory: the LoRA layers are created inside the weights' memory profile, so vLLM takes them out of the KV cache
  (vllm/v1/worker/gpu/model_runner.py load_lora_model after load_model). They are preallocated for max_loras slots
  at max_lora_rank whatever is loaded, in the base's dtype (LoRAConfig.lora_dtype auto): per layer, the stacked
  tensors of vllm/lora/layers/column_parallel_linear.py (qkv: A [r, h] per slice, B [q|kv|kv / tp, r]; gate_up:
  A [r, h] x 2, B [I / tp, r] x 2) and row_parallel_linear.py (o: A [r, q / tp], B [h, r]; down: A [r, I / tp],
  B [h, r]), and, for architectures with LoRA embeddings, vocab_parallel_embedding.py (A [V, r], B [h, r]) and
  logits_processor.py (A [r, h], B [V, r]) on every tensor-parallel rank. Over a replica's GPUs that is
  slots x rank x 2 bytes x (layers x (tp x 7h + 2q + 2kv + 3I) + tp x 2 (V + h)) (`lora_slot_bytes`). Not counted:
  the CUDA graphs vLLM also captures with LoRA (vllm/config/compilation.py cudagraph_specialize_lora, "slightly
  higher memory usage", no figure), inside the catalog's activation margin.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Protocol

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..catalog.models import ModelShape
from ..errors import field_error
from .runtime import HUB_DOWNLOAD_MBPS
from .section import KubernetesName

HUB_ADAPTER_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
HUB_COMMIT = re.compile(r"^[0-9a-f]{40}$")
TEAM_BLOB_PATH = r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"
MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""`--max-lora-rank` takes only these (vllm/config/lora.py MaxLoRARanks, an argparse choice)."""
LORA_BYTES = 2
"""Bytes per LoRA weight: the base's 16-bit dtype (fp8 online quantisation keeps the model dtype 16-bit)."""
ADAPTER_CONTAINER_PREFIX = "adapter-"
"""The staging Job downloads each adapter in an init container `adapter-<name>`."""
CONTAINER_NAME_MAX = 63
"""A container name is a DNS label (kubernetes v1.36 pkg/apis/core/validation/validation.go validateContainerCommon,
IsDNS1123Label)."""
ADAPTER_NAME_MAX = CONTAINER_NAME_MAX - len(ADAPTER_CONTAINER_PREFIX)
ROUTE_RULES_MAX = 16
"""An HTTPRoute holds at most 16 rules (gateway-api v1.5.1 standard CRD, spec.rules maxItems), and a rule with the
prefix rewrite exactly one PathPrefix match (the same CRD's CEL rule): the base's own rule and one per adapter."""
ADAPTERS_MAX = ROUTE_RULES_MAX - 1


class AdapterSourceConfig(ConfigModel):
    """Where an adapter's files come from: a Hub repository at a commit, or the team's Blob container."""

    hugging_face: str | None = Field(
        default=None,
        pattern=HUB_ADAPTER_ID,
        description="Hub id (<org>/<repo>) of a PEFT LoRA adapter of the base model, staged with the base's weights "
        "(read with the base's Hub token when its weights have tokenSecret)",
    )
    revision: str | None = Field(
        default=None,
        description="With huggingFace: the Hub commit (40 lowercase hex) the adapter is staged at; the servers load "
        "that commit's snapshot folder",
    )
    blob: str | None = Field(
        default=None,
        pattern=TEAM_BLOB_PATH,
        description="Folder of the adapter (adapter_config.json and its weights) in the Blob container of the base "
        "model's team; not served yet: refused",
    )

    @model_validator(mode="after")
    def _check_source(self) -> AdapterSourceConfig:
        if (self.hugging_face is None) == (self.blob is None):
            raise field_error(
                "huggingFace", self.hugging_face, "set exactly one of huggingFace (a Hub id) or blob (a Blob path)"
            )
        if self.blob is not None:
            raise field_error(
                "blob",
                self.blob,
                "adapters from the team's Blob container are not served yet (no Blob reader identity for adapters); "
                "publish the adapter to the Hub and set huggingFace with a revision",
            )
        if self.revision is None or not HUB_COMMIT.match(self.revision):
            raise field_error(
                "revision",
                self.revision,
                "a Hub commit (40 lowercase hex) from the adapter's 'Files and versions': the servers load the "
                "snapshot folder named after it, so a tag or branch cannot be resolved offline",
            )
        return self


class AdapterConfig(ConfigModel):
    """A LoRA adapter served on its base model's replicas and callable by its own name."""

    name: KubernetesName = Field(
        description="Served name (the API's `model`) and route `/<name>`: unique across every model and adapter, "
        f"at most {ADAPTER_NAME_MAX} characters (its staging container `{ADAPTER_CONTAINER_PREFIX}<name>`)"
    )
    source: AdapterSourceConfig = Field(description="Where the adapter's files come from")
    rank: int = Field(
        ge=1,
        le=MAX_LORA_RANKS[-1],
        description="The adapter's LoRA rank: the largest of `r` and `rank_pattern` in its adapter_config.json; the "
        "base's servers reserve GPU memory for it, and vLLM refuses an adapter above the rank reserved",
    )


class AdaptedModel(Protocol):
    """What the adapter rules read of a served model (models.py ServedModelConfig, which holds the adapters)."""

    @property
    def name(self) -> str: ...
    @property
    def adapters(self) -> Sequence[AdapterConfig]: ...
    @property
    def max_loras(self) -> int | None: ...
    @property
    def shape(self) -> ModelShape: ...
    @property
    def tensor_parallel(self) -> int: ...


def max_lora_rank(adapters: Sequence[AdapterConfig]) -> int:
    """`--max-lora-rank`: the smallest value vLLM takes that holds every adapter's rank."""
    highest = max(adapter.rank for adapter in adapters)
    return next(rank for rank in MAX_LORA_RANKS if rank >= highest)


def lora_slots(model: AdaptedModel) -> int:
    """`--max-loras`: the configured slots, else one per adapter (every adapter can be in every batch)."""
    return model.max_loras or len(model.adapters)


def lora_slot_bytes(shape: ModelShape, rank: int, tensor_parallel: int) -> int:
    """GPU bytes one LoRA slot at `rank` takes over a replica's GPUs (the module's docstring)."""
    q = shape.attention_heads * shape.head_dim
    kv = shape.kv_heads * shape.head_dim
    h, inner = shape.hidden_size, shape.intermediate_size
    layers = shape.layers * (tensor_parallel * 7 * h + 2 * q + 2 * kv + 3 * inner)
    embeddings = tensor_parallel * 2 * (shape.vocab_size + h) if shape.lora_embeddings else 0
    return rank * LORA_BYTES * (layers + embeddings)


def adapter_memory_bytes(model: AdaptedModel) -> int:
    """GPU bytes the model's LoRA slots take from its KV cache over a replica's GPUs; 0 without adapters."""
    if not model.adapters:
        return 0
    rank = max_lora_rank(model.adapters)
    return lora_slots(model) * lora_slot_bytes(model.shape, rank, model.tensor_parallel)


def adapter_file_bytes(shape: ModelShape, rank: int) -> int:
    """An upper bound of the adapter weights staged: LoRA on every layer the base supports, at its rank, 16-bit
    (a 32-bit checkpoint takes twice that; the weights cache keeps half again as much free)."""
    return lora_slot_bytes(shape, rank, 1)


def adapter_download_bytes(model: AdaptedModel) -> int:
    """What staging the model's adapters downloads, at most (`adapter_file_bytes` each)."""
    return sum(adapter_file_bytes(model.shape, adapter.rank) for adapter in model.adapters)


def adapter_staging_seconds(model: AdaptedModel) -> int:
    """The staging Job's time for the adapters, downloaded before the base at the Hub rate the base is allowed."""
    return math.ceil(adapter_download_bytes(model) / 10**6 / HUB_DOWNLOAD_MBPS)


def served_names(model: AdaptedModel) -> list[str]:
    """The names the model's servers answer to: the base, then its adapters."""
    return [model.name, *(adapter.name for adapter in model.adapters)]


def check_model_adapters(model: AdaptedModel) -> None:
    """The model's own adapters: a route rule each, distinct names other than the base's, slots for at most all of
    them."""
    if len(model.adapters) > ADAPTERS_MAX:
        raise field_error(
            "adapters",
            f"{len(model.adapters)} adapters",
            f"at most {ADAPTERS_MAX}: the model's HTTPRoute holds at most {ROUTE_RULES_MAX} rules, the base's and "
            "one per adapter (gateway-api v1.5.1 HTTPRoute spec.rules maxItems)",
        )
    seen: dict[str, int] = {}
    for i, adapter in enumerate(model.adapters):
        if adapter.name == model.name:
            raise field_error(
                f"adapters[{i}].name",
                adapter.name,
                "is the base model's name: vLLM refuses an adapter named like a served base model "
                "(vllm/entrypoints/openai/models/serving.py _check_load_lora_adapter_request)",
            )
        if adapter.name in seen:
            raise field_error(
                f"adapters[{i}].name", adapter.name, f"must be unique; adapters[{seen[adapter.name]}] has it"
            )
        if len(adapter.name) > ADAPTER_NAME_MAX:
            raise field_error(
                f"adapters[{i}].name",
                adapter.name,
                f"{len(adapter.name)} characters; at most {ADAPTER_NAME_MAX}: it names the staging container "
                f"`{ADAPTER_CONTAINER_PREFIX}<name>`, and a container name holds at most {CONTAINER_NAME_MAX}",
            )
        seen[adapter.name] = i
    if model.max_loras is not None:
        if not model.adapters:
            raise field_error("maxLoras", model.max_loras, "only with adapters: it reserves GPU slots for them")
        if model.max_loras > len(model.adapters):
            raise field_error(
                "maxLoras",
                model.max_loras,
                f"at most the {len(model.adapters)} adapters: each slot is reserved GPU memory taken from the KV "
                "cache, and a slot no adapter can fill is waste",
            )


def check_adapter_names(models: Sequence[AdaptedModel]) -> None:
    """Every served name (models and adapters) is one route path and one `model` value: unique across models."""
    owners: dict[str, str] = {}
    for model in models:
        owners[model.name] = f"model {model.name}"
    for i, model in enumerate(models):
        for j, adapter in enumerate(model.adapters):
            owner = owners.get(adapter.name)
            if owner is not None:
                raise field_error(
                    f"models[{i}].adapters[{j}].name",
                    adapter.name,
                    f"{owner} already answers to it: each name is one route `/<name>` and one `model` value",
                )
            owners[adapter.name] = f"an adapter of model {model.name}"
