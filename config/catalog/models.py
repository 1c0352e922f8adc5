"""Model shapes the serving rules size GPUs from, keyed by Hugging Face Hub id, and the GPUs' compute capability.

Weights take params x bytes per parameter of the serving dtype; the KV cache takes, per token,
2 (K and V) x layers x KV heads x head dim x bytes (16-bit: fp8 weights keep a 16-bit KV cache unless
vLLM's --kv-cache-dtype says otherwise, which the platform does not set). A model must hold its weights
plus the KV cache of one sequence of maxModelLen within vLLM's own budget of its GPUs (GPU_MEMORY_UTILIZATION of the
memory the CUDA runtime reports for each device, less ACTIVATION_AND_GRAPHS_GIB).

Architecture fields are the models' `config.json` (num_hidden_layers, num_attention_heads,
num_key_value_heads, hidden_size, head_dim), read 2026-12-04 from Hugging Face repositories that
re-publish the official configs (the official pages could not be read offline): Qwen2.5-0.5B-Instruct
huggingface.co/unsloth/Qwen2.5-0.5B-Instruct config.json (`_name_or_path: Qwen/Qwen2.5-0.5B-Instruct`),
Qwen2.5-1.5B-Instruct huggingface.co/onnx-community/Qwen2.5-1.5B-Instruct at 94677ac9 config.json,
Llama-3.1-8B huggingface.co/NbAiLab/nb-llama-3.1-8B config.json (`_name_or_path: meta-llama/Llama-3.1-8B`),
Llama-3.1-70B: the Llama-3-70B shape (huggingface.co/nvidia/Llama3-ChatQA-1.5-70B config.json; 3.1 changes only
rope scaling and context). Parameter counts are the safetensors totals the model pages show (0.49 B, 1.54 B,
8.03 B, 70.6 B), which the fields above reproduce for the Llama/Qwen2 layout. Re-read the official config.json
at the revision a stack pins before adding a row.

The LoRA sizes (hidden_size, intermediate_size, vocab_size; what config/inference/adapters.py sizes an adapter slot
from), read 2026-12 from the same kind of re-published config.json: Qwen2.5-0.5B-Instruct
huggingface.co/mjm4dl/data_caption_price64_e4_cosine_sched config.json (`_name_or_path:
unsloth/Qwen2.5-0.5B-Instruct`), Qwen2.5-1.5B-Instruct huggingface.co/CMLL/ZhongJing-3-1_5b_V2 config.json at b94d8c0
(`_name_or_path: qwen/Qwen2.5-1.5B-Instruct`), Llama-3.1-8B huggingface.co/NbAiLab/nb-llama-3.1-8B config.json at
fe1be85, Llama-3.1-70B huggingface.co/nvidia/Llama3-ChatQA-1.5-70B config.json at 0f20cba. Whether vLLM also gives
the token embeddings and the LM head LoRA slots is the architecture's own (`embedding_modules`, vLLM 0.34.0
vllm/model_executor/models/llama.py LlamaForCausalLM: embed_tokens and lm_head; qwen2.py Qwen2ForCausalLM: none).
With the fields above they reproduce each row's parameter count exactly (tests/inference/test_adapters.py).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

ServingDtype = Literal["bfloat16", "float16", "fp8"]

MODEL_CATALOG_READ_ON = datetime.date(2026, 12, 4)

GPU_MEMORY_UTILIZATION = 0.90
"""`--gpu-memory-utilization` every server is started with: vLLM 0.34.0 budgets ceil(total x this) of each GPU
(vllm/v1/worker/utils.py request_memory, total = the memory the device reports), and gives the KV cache what is left
after the weights, the profiled activation peak and its CUDA-graph estimate (vllm/v1/worker/gpu_worker.py
determine_available_memory). Set explicitly: its own default is 0.92, or 1.0 with the extensible KV cache
(vllm/config/cache.py CacheConfig.resolved_gpu_memory_utilization), which leaves nothing for a second process."""

ACTIVATION_AND_GRAPHS_GIB = 2.0
"""Per GPU, the activation peak of vLLM's profile run, its CUDA-graph capture and the CUDA/NCCL context, all inside
the budget above. No upstream figure: vLLM measures them at start (it logs "Available KV cache memory"); a stated
margin, which the plan reports as unsourced."""

MIB = 1024**2

DEVICE_MEMORY_MIB: dict[str, int] = {
    "T4": 15_360,
    "A10": 23_028,
    "A100-40GB": 40_960,
    "A100-80GB": 81_920,
    "H100-80GB": 81_559,
    "H100-NVL": 95_830,
}
"""What `nvidia-smi` reports as a GPU's total memory (what CUDA and vLLM see), not the marketed GB: a T4 sold as
16 GB reports 15,360 MiB (its GDDR6 ECC reserve is 1/16 of it). Sources: modal-labs/modal-client pull request 2797
(nvidia-smi totals of T4, A10, A100 40GB and 80GB, H100 80GB; read 2026-12-06), google/gvisor issue 10413 (H100
80GB HBM3, 81559MiB), NVIDIA/gpu-admin-tools issue 4 (H100 NVL, 95830MiB). H200, GB200 and GB300 have no figure
here: `device_memory_mib` falls back to the catalog's nominal GiB less the same 1/16, and the plan says so."""

ECC_RESERVE = 1 / 16

CUDA_TOTAL_MIB: dict[str, int] = {"H100-80GB": 81_008}
"""What the CUDA runtime reports as a GPU's total memory, which is what vLLM 0.34.0 budgets from
(vllm/utils/mem_utils.py device_memory_info: torch.accelerator.get_memory_info, cudaMemGetInfo), below the
nvidia-smi total. Source: vllm-project/vllm issue 27508 (H100 80GB HBM3: "79.11 GiB" total in vLLM's log = 81,008
MiB, against nvidia-smi's 81,559)."""
CUDA_RESERVE_MIB = 1024
"""For a GPU without a CUDA-runtime figure: what the driver keeps from CUDA below the nvidia-smi total, per GPU. A
stated margin, about twice the one measured gap (551 MiB on H100 80GB, CUDA_TOTAL_MIB)."""


def device_memory_mib(gpu_model: str, nominal_gib: int) -> tuple[int, bool]:
    """(MiB the CUDA runtime reports, so vLLM budgets from, whether the nvidia-smi figure it derives from is
    sourced): the CUDA figure where one is published, else the nvidia-smi total less CUDA_RESERVE_MIB."""
    if gpu_model in CUDA_TOTAL_MIB:
        return CUDA_TOTAL_MIB[gpu_model], True
    if gpu_model in DEVICE_MEMORY_MIB:
        return DEVICE_MEMORY_MIB[gpu_model] - CUDA_RESERVE_MIB, True
    return int(nominal_gib * 1024 * (1 - ECC_RESERVE)) - CUDA_RESERVE_MIB, False


BF16_MIN_COMPUTE_CAPABILITY = (8, 0)
"""vLLM refuses bfloat16 below compute capability 8.0: "Bfloat16 is only supported on GPUs with compute
capability of at least 8.0" (vllm 0.34.0 vllm/platforms/cuda.py CudaPlatform.check_if_supports_dtype)."""

# NVIDIA's "CUDA GPUs - Compute Capability" table, https://developer.nvidia.com/cuda-gpus (read 2026-12-04),
# keyed by the GPU catalog's gpu_model (config/catalog/gpu_sizes.py).
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "T4": (7, 5),
    "A10": (8, 6),
    "A100-40GB": (8, 0),
    "A100-80GB": (8, 0),
    "H100-NVL": (9, 0),
    "H100-80GB": (9, 0),
    "H200-141GB": (9, 0),
    "GB200": (10, 0),
    "GB300": (10, 3),
}

# Bytes per weight; fp8 is vLLM's online fp8 quantization (--quantization fp8_per_tensor), 1 byte per weight.
WEIGHT_BYTES: dict[ServingDtype, float] = {"bfloat16": 2, "float16": 2, "fp8": 1}
KV_BYTES = 2
"""Bytes per KV-cache element: the activation dtype (16-bit) for every serving dtype here."""


@dataclass(frozen=True)
class ModelShape:
    """What sizing a model on GPUs needs, from its config.json."""

    hub_id: str
    params: int
    """Parameters (safetensors total)."""
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_position_embeddings: int
    """The longest context the model is built for: maxModelLen may not exceed it."""
    gated: bool
    """The Hub serves the weights only to accounts that accepted the licence: a token is needed."""
    license: str
    hidden_size: int
    intermediate_size: int
    """The MLP's inner width (gate, up and down projections)."""
    vocab_size: int
    lora_embeddings: bool
    """vLLM gives the token embeddings and the LM head LoRA slots too (the architecture's `embedding_modules`)."""

    def weight_bytes(self, dtype: ServingDtype) -> float:
        return self.params * WEIGHT_BYTES[dtype]

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of every layer and KV head for one token."""
        return 2 * self.layers * self.kv_heads * self.head_dim * KV_BYTES


MODELS: dict[str, ModelShape] = {
    m.hub_id: m
    for m in (
        ModelShape(
            "Qwen/Qwen2.5-0.5B-Instruct",
            494_032_768,
            24,
            14,
            2,
            64,
            32768,
            False,
            "Apache-2.0",
            hidden_size=896,
            intermediate_size=4864,
            vocab_size=151936,
            lora_embeddings=False,
        ),
        ModelShape(
            "Qwen/Qwen2.5-1.5B-Instruct",
            1_543_714_304,
            28,
            12,
            2,
            128,
            32768,
            False,
            "Apache-2.0",
            hidden_size=1536,
            intermediate_size=8960,
            vocab_size=151936,
            lora_embeddings=False,
        ),
        ModelShape(
            "meta-llama/Llama-3.1-8B-Instruct",
            8_030_261_248,
            32,
            32,
            8,
            128,
            131072,
            True,
            "Llama 3.1 Community",
            hidden_size=4096,
            intermediate_size=14336,
            vocab_size=128256,
            lora_embeddings=True,
        ),
        ModelShape(
            "meta-llama/Llama-3.1-70B-Instruct",
            70_553_706_496,
            80,
            64,
            8,
            128,
            131072,
            True,
            "Llama 3.1 Community",
            hidden_size=8192,
            intermediate_size=28672,
            vocab_size=128256,
            lora_embeddings=True,
        ),
    )
}


def model_shape(hub_id: str) -> ModelShape | None:
    return MODELS.get(hub_id)


def serving_dtype(dtype: str, gpu_model: str) -> ServingDtype:
    """What `auto` becomes on a GPU: bfloat16 where it computes it (cc >= 8.0), float16 else."""
    explicit: dict[str, ServingDtype] = {"bfloat16": "bfloat16", "float16": "float16", "fp8": "fp8"}
    if dtype in explicit:
        return explicit[dtype]
    return "bfloat16" if computes_bfloat16(gpu_model) else "float16"


def computes_bfloat16(gpu_model: str) -> bool:
    return COMPUTE_CAPABILITY.get(gpu_model, (0, 0)) >= BF16_MIN_COMPUTE_CAPABILITY
