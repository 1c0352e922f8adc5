"""What vLLM 0.34.0 does with LoRA adapters: the flags it parses, what its start loads and refuses, which request
`model` it serves with which adapter, the GPU memory it reserves, and the usage it streams. Plus where the Hub's CLI
leaves a download.

- vLLM 0.34.0, PyPI sdist vllm-0.34.0.tar.gz (sha256 fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113):
  vllm/engine/arg_utils.py add_cli_args, LoRAConfig group: `--enable-lora` (BooleanOptionalAction), `--max-loras`,
  `--max-lora-rank` (choices of vllm/config/lora.py MaxLoRARanks), `--max-cpu-loras`; LoRAConfig._validate_lora_config
  (max_cpu_loras None -> max_loras; below max_loras: error). vllm/entrypoints/common/cli_args.py: `--lora-modules`
  is a list field (nargs "+") whose LoRAParserAction sets the whole list on each occurrence (the last one wins);
  an item with "=" and no "," is `name=path`, else JSON of LoRAModulePath (name, path, base_model_name,
  is_3d_lora_weight; another key is a parser error). vllm/lora/utils.py get_adapter_absolute_path: an absolute path
  is used as it is (no Hub call). vllm/entrypoints/openai/models/serving.py init_static_loras ("Raises if any fail
  to load"), _check_load_lora_adapter_request (a name equal to a served base model, or one already loaded, is
  refused); vllm/v1/worker/lora_model_runner_mixin.py add_lora ("LoRA is not enabled. Use --enable-lora");
  vllm/lora/peft_helper.py validate_legal (rank above max_lora_rank, bias other than none).
  vllm/entrypoints/serve/engine/serving.py _check_model and _maybe_get_adapters: the body's `model` is a served
  base name (no adapter), a loaded adapter's name (that adapter), else 404 unless VLLM_ALLOW_RUNTIME_LORA_UPDATING
  ("1"/"true", vllm/envs.py) lets a resolver try; serve/lora/api_router.py opens /v1/load_lora_adapter and
  /v1/unload_lora_adapter only with that variable.
  Memory: the stacked tensors each LoRA layer preallocates for max_loras slots at max_lora_rank in the model dtype
  (vllm/lora/layers/column_parallel_linear.py MergedColumnParallelLinearWithLoRA and MergedQKVParallelLinearWithLoRA
  create_lora_weights; row_parallel_linear.py via base_linear.py; vocab_parallel_embedding.py; logits_processor.py),
  on every tensor-parallel rank, for the modules the architecture exposes (llama.py embedding_modules: embed_tokens,
  lm_head; qwen2.py: none).
  Usage: vllm/entrypoints/serve/utils/api_utils.py should_include_usage: with `--enable-force-include-usage`, or
  `stream_options.include_usage` and `continuous_usage_stats`, every streamed chunk carries the usage so far;
  with include_usage alone only the final chunk does (openai/chat_completion/serving.py).
- huggingface_hub at ee0a4510 (the Hub client the vLLM image's `hf` CLI is): constants.py HF_HUB_CACHE =
  $HF_HOME/hub; file_download.py repo_folder_name `models--<org>--<repo>`, one `snapshots/<commit>` folder per commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
DEFAULT_MAX_LORAS = 1
DEFAULT_MAX_LORA_RANK = 16
LORA_MODULE_KEYS = {"name", "path", "base_model_name", "is_3d_lora_weight"}
RUNTIME_UPDATING = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


class VllmStartError(Exception):
    """The server exits at start: argparse, LoRAConfig or a static adapter refused."""


@dataclass(frozen=True)
class LoraModule:
    name: str
    path: str
    base_model_name: str | None = None


@dataclass(frozen=True)
class Adapter:
    """A staged adapter's adapter_config.json as vLLM reads it."""

    rank: int
    bias: str = "none"


def _values(args: Sequence[str], flag: str) -> list[list[str]]:
    """Every occurrence of `--flag v1 v2 ...` (values up to the next `--` option) or `--flag=v`."""
    found: list[list[str]] = []
    for i, arg in enumerate(args):
        if arg == flag:
            values: list[str] = []
            for value in args[i + 1 :]:
                if value.startswith("--"):
                    break
                values.append(value)
            found.append(values)
        elif arg.startswith(flag + "="):
            found.append([arg.split("=", 1)[1]])
    return found


def _last_int(args: Sequence[str], flag: str, default: int | None) -> int | None:
    found = _values(args, flag)
    if not found:
        return default
    if len(found[-1]) != 1:
        raise VllmStartError(f"{flag}: expected one argument")
    return int(found[-1][0])


def _lora_modules(args: Sequence[str]) -> list[LoraModule]:
    found = _values(args, "--lora-modules")
    if not found:
        return []
    modules: list[LoraModule] = []
    for item in found[-1]:  # LoRAParserAction replaces the list on each occurrence
        if "=" in item and "," not in item:
            name, path = item.split("=", 1)
            modules.append(LoraModule(name, path))
            continue
        try:
            spec = json.loads(item)
        except json.JSONDecodeError as error:
            raise VllmStartError(f"Invalid JSON format for --lora-modules: {item}") from error
        unknown = set(spec) - LORA_MODULE_KEYS
        if unknown or "name" not in spec or "path" not in spec:
            raise VllmStartError(f"Invalid fields for --lora-modules: {item}")
        modules.append(LoraModule(spec["name"], spec["path"], spec.get("base_model_name")))
    return modules


@dataclass(frozen=True)
class LoraServer:
    """A started vLLM server's LoRA state."""

    served_names: tuple[str, ...]
    enabled: bool
    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int
    adapters: Mapping[str, LoraModule] = field(default_factory=dict[str, LoraModule])
    runtime_updating: bool = False

    def serves(self, model: str) -> str | None:
        """What a request whose body `model` is `model` is served with: the base (""), an adapter's name, or None
        (404)."""
        if model in self.served_names:
            return ""
        if model in self.adapters:
            return model
        return None


def vllm_lora_server(
    args: Sequence[str], env: Mapping[str, str], files: Mapping[str, Adapter], base_served_name: str
) -> LoraServer:
    """Start a server with `args` and `env` over the staged adapter folders `files` (absolute path -> its
    adapter_config.json); VllmStartError when the start fails."""
    enabled = bool(_values(args, "--enable-lora")) and not _values(args, "--no-enable-lora")
    max_loras = _last_int(args, "--max-loras", DEFAULT_MAX_LORAS)
    rank = _last_int(args, "--max-lora-rank", DEFAULT_MAX_LORA_RANK)
    cpu = _last_int(args, "--max-cpu-loras", None)
    assert max_loras is not None and rank is not None
    if rank not in MAX_LORA_RANKS:
        raise VllmStartError(f"argument --max-lora-rank: invalid choice: {rank} (choose from {MAX_LORA_RANKS})")
    if max_loras < 1:
        raise VllmStartError("max_loras must be >= 1")
    if cpu is None or cpu <= 0:
        cpu = max_loras
    elif cpu < max_loras:
        raise VllmStartError(f"max_cpu_loras ({cpu}) must be >= max_loras ({max_loras}).")
    served = tuple(_values(args, "--served-model-name")[-1]) if _values(args, "--served-model-name") else ()
    names = served or (base_served_name,)
    loaded: dict[str, LoraModule] = {}
    for module in _lora_modules(args):
        if not enabled:
            raise VllmStartError("LoRA is not enabled. Use --enable-lora to enable LoRA.")
        if module.name in names:
            raise VllmStartError(f"The lora adapter '{module.name}' conflicts with a served base model.")
        if module.name in loaded:
            raise VllmStartError(f"The lora adapter '{module.name}' has already been loaded.")
        if not module.path.startswith("/"):
            raise VllmStartError(f"{module.path}: a relative path is looked up on the Hub, which is offline here")
        adapter = files.get(module.path.rstrip("/"))
        if adapter is None:
            raise VllmStartError(f"Loading lora {module.name} failed: No adapter found for {module.path}")
        if adapter.rank > rank:
            raise VllmStartError(f"LoRA rank {adapter.rank} is greater than max_lora_rank {rank}.")
        if adapter.bias != "none":
            raise VllmStartError("Adapter bias is not supported.")
        loaded[module.name] = module
    updating = env.get(RUNTIME_UPDATING, "0").strip().lower() in ("1", "true")
    return LoraServer(names, enabled, max_loras, rank, cpu, loaded, updating)


def streams_usage_in_every_chunk(args: Sequence[str]) -> bool:
    """`--enable-force-include-usage`: every streamed chunk carries the cumulative usage, whatever the request."""
    return bool(_values(args, "--enable-force-include-usage"))


@dataclass(frozen=True)
class Shape:
    """What vLLM's LoRA layers are sized from (the model's config.json)."""

    layers: int
    hidden: int
    q: int
    kv: int
    intermediate: int
    vocab: int
    embedding_modules: bool


def lora_tensor_bytes(shape: Shape, max_loras: int, max_rank: int, tp: int, dtype_bytes: int = 2) -> int:
    """The bytes of every stacked LoRA tensor vLLM allocates over a replica's `tp` ranks (all layers)."""
    r = max_rank
    per_rank: list[tuple[int, ...]] = []
    for _ in range(shape.layers):
        # qkv_proj, MergedQKVParallelLinearWithLoRA: A per slice [slots, 1, r, hidden]; B [slots, 1, slice/tp, r].
        per_rank += [(max_loras, 1, r, shape.hidden)] * 3
        per_rank += [
            (max_loras, 1, shape.q // tp, r),
            (max_loras, 1, shape.kv // tp, r),
            (max_loras, 1, shape.kv // tp, r),
        ]
        # o_proj, RowParallelLinearWithLoRA: A [slots, 1, r, q/tp]; B [slots, 1, hidden, r].
        per_rank += [(max_loras, 1, r, shape.q // tp), (max_loras, 1, shape.hidden, r)]
        # gate_up_proj, MergedColumnParallelLinearWithLoRA: 2 x A [slots, 1, r, hidden]; 2 x B [slots, 1, I/tp, r].
        per_rank += [(max_loras, 1, r, shape.hidden)] * 2 + [(max_loras, 1, shape.intermediate // tp, r)] * 2
        # down_proj, RowParallelLinearWithLoRA: A [slots, 1, r, I/tp]; B [slots, 1, hidden, r].
        per_rank += [(max_loras, 1, r, shape.intermediate // tp), (max_loras, 1, shape.hidden, r)]
    if shape.embedding_modules:
        # embed_tokens: A [slots, vocab, r], B [slots, 1, hidden, r]; lm_head's logits processor: A [slots, 1, r,
        # hidden], B [slots, 1, vocab, r].
        per_rank += [(max_loras, shape.vocab, r), (max_loras, 1, shape.hidden, r)]
        per_rank += [(max_loras, 1, r, shape.hidden), (max_loras, 1, shape.vocab, r)]
    elements = 0
    for dims in per_rank:
        size = 1
        for d in dims:
            size *= d
        elements += size
    return tp * elements * dtype_bytes


def hub_snapshot(hf_home: str, repo: str, revision: str | None) -> str | None:
    """The folder `hf download <repo> --revision <revision>` fills with HF_HOME=`hf_home`; None when the revision is
    not a commit (the folder is named after the commit the Hub resolves it to, unknown offline)."""
    if revision is None or len(revision) != 40 or any(c not in "0123456789abcdef" for c in revision):
        return None
    return f"{hf_home}/hub/{'--'.join(['models', *repo.split('/')])}/snapshots/{revision}"
