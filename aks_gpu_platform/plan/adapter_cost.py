"""The price of a LoRA adapter's tokens, one plan line per adapter beside its base model's.

An adapter holds no GPUs of its own: it runs on its base model's replicas, so its tokens cost what the base's do
and its share of the base's bill is its share of the base's output tokens, which the model's dashboard shows per
adapter (components/inference/adapters.py). The base's price per token comes from a benchmark measured without
LoRA; vLLM with --enable-lora wraps every linear layer with LoRA kernels (vllm/lora/layers), a slowdown no source
here measures, so the adapter's line says the price is the base's as benchmarked, not as served with adapters.
"""

from __future__ import annotations

from collections.abc import Sequence

from aks_gpu_platform.config.inference.models import ServedModelConfig

from .model_cost import ModelCost

SHARE_PANEL = "share of the model's output tokens"


def adapter_cost_lines(models: Sequence[ServedModelConfig], costs: Sequence[ModelCost]) -> list[str]:
    """One line per adapter: what its tokens cost (its base's price, where one is published; `costs`, one per
    model) and how its share of the base's bill is read."""
    lines: list[str] = []
    by_model = {cost.model: cost for cost in costs}
    for model in models:
        if model.name not in by_model:
            continue
        cost = by_model[model.name]
        per_million = cost.per_million_output_tokens
        for adapter in model.adapters:
            head = f"Adapter {adapter.name} (on model {model.name}): no GPUs of its own; "
            if per_million is None or cost.benchmark is None:
                price = f"no price per token, as for its base ({cost.no_benchmark or 'no GPU-hour price'})"
            else:
                price = (
                    f"${per_million:,.2f} per million output tokens, its base's from one busy replica as "
                    f"{cost.benchmark.name} measured it without LoRA (the LoRA kernels' slowdown is not measured)"
                )
            lines.append(
                f"{head}{price}; its part of {model.name}'s bill is its {SHARE_PANEL} (dashboard 'Model "
                f"{model.name}', panel 'Adapter {adapter.name}')"
            )
    return lines
