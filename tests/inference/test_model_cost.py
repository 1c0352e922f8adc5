"""Cost per served model in the plan: floor and ceiling from the GPUs it holds, price per million output tokens only
where a benchmark measured that model on that GPU, figures computed by hand."""

from __future__ import annotations

import copy
import dataclasses
import functools
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog import serving_benchmarks
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.plan.cost import PoolCapacity, pool_capacities
from aks_gpu_platform.plan.mock_values import MockValueMarker
from aks_gpu_platform.plan.model_cost import ModelCost, model_cost_line, model_costs
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.report import build_report
from aks_gpu_platform.plan.screen import render_text
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT

MONTH = 730
# Standard_ND96isr_H100_v5 at 98.32 USD/hour (eastus, config/catalog/prices.py) over its 8 GPUs.
H100_NODE_HOUR = 98.32
H100_GPU_HOUR = H100_NODE_HOUR / 8  # 12.29
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"


def _prod(**llama: Any) -> PlatformConfig:
    settings = settings_of(copy.deepcopy(load_stack_file("prod", REPO_ROOT)))
    settings["inference"]["models"][0].update(llama)
    return load_platform_config(settings)


@functools.cache
def _prod_pools() -> list[PoolCapacity]:
    """prod's recorded pools: the variants below change its models only."""
    return pool_capacities(run_stack("prod"))


def _costs(cfg: PlatformConfig) -> dict[str, ModelCost]:
    return {c.model: c for c in model_costs(cfg.inference.models, _prod_pools(), cfg.location)}


def test_floor_and_ceiling_hold_the_model_gpus_at_the_pool_gpu_hour() -> None:
    llama = _costs(_prod(minReplicas=2, maxReplicas=8, tensorParallel=1))["llama-3-1-8b"]
    assert llama.floor == pytest.approx(2 * 1 * 12.29 * MONTH), "minReplicas stay up all month: 2 GPUs x 730 h"
    assert llama.floor == pytest.approx(17_943.40)
    assert llama.ceiling == pytest.approx(8 * 12.29 * MONTH) == pytest.approx(71_773.60)
    wide = _costs(_prod(minReplicas=1, maxReplicas=4, tensorParallel=4))["llama-3-1-8b"]
    assert wide.floor == pytest.approx(4 * 12.29 * MONTH), "a TP 4 replica holds 4 GPUs"
    assert wide.ceiling == pytest.approx(16 * 12.29 * MONTH) == pytest.approx(143_547.20)


def test_the_price_per_million_output_tokens_comes_from_the_matching_benchmark() -> None:
    llama = _costs(_prod())["llama-3-1-8b"]
    # One replica on its own node keeps the whole VM billed: 98.32 USD / (5,103.99 tokens/s x 3,600 s) x 10^6.
    assert llama.per_million_output_tokens == pytest.approx(H100_NODE_HOUR / (5103.99 * 3600) * 1e6)
    assert llama.per_million_output_tokens == pytest.approx(5.35093, abs=1e-5)
    # Eight busy replicas share the node: 12.29 USD per GPU-hour, 0.66887 USD.
    assert llama.per_million_full_node == pytest.approx(0.66887, abs=1e-5)
    line = model_cost_line(llama)
    assert "5.1-0083" in line and "github.com/mlcommons/inference_results_v5.1" in line, line


def test_the_plan_prints_the_token_price_of_whole_nodes_and_how_the_benchmark_differs(
    prod_recording: Recording, tmp_path: Path
) -> None:
    cfg = load_platform_config(settings_of(load_stack_file("prod", REPO_ROOT)))
    report = build_report("prod", cfg, prod_recording, [], [], MockValueMarker(prod_recording.mock_values), tmp_path)
    (line,) = [line for line in report.model_lines if line.startswith("Model llama-3-1-8b ")]
    assert "$5.35 per million output tokens from one replica" in line, f"the pool bills the whole node: {line}"
    assert "1 x Standard_ND96isr_H100_v5 node ($98.32/hour" in line, f"names the node-level unit: {line}"
    assert "$0.67 with 8 busy replicas filling the node" in line, line
    for difference in ("calibration", "vLLM 0.10.0", "vLLM 0.34.0", "at most 128 output tokens"):
        assert difference in line, f"the measurement's difference {difference!r} must be named: {line}"
    assert "as it was measured" not in line and "measured exactly" not in line, line


@pytest.mark.parametrize(
    ("change", "gpu"),
    [
        ({"dtype": "bfloat16"}, "H100-80GB"),  # measured in fp8
        ({"tensorParallel": 2, "maxReplicas": 4}, "H100-80GB"),  # measured on one GPU
        (
            {"pool": "gpua100", "minReplicas": 0, "scaleToZero": True, "slo": {"timeToFirstTokenP90Seconds": 45}},
            "A100-80GB",
        ),
    ],
)
def test_no_figure_is_carried_to_another_gpu_size_or_precision(change: dict[str, Any], gpu: str) -> None:
    llama = _costs(_prod(**change))["llama-3-1-8b"]
    assert llama.per_million_output_tokens is None, "a benchmark of another setup must never price these tokens"
    line = model_cost_line(llama)
    assert f"no sourced benchmark for {LLAMA} on {gpu}" in line, line
    assert "per million" not in line, line


def test_the_plan_prints_each_model_beside_the_team_chargeback(prod_recording: Recording, tmp_path: Path) -> None:
    cfg = load_platform_config(settings_of(load_stack_file("prod", REPO_ROOT)))
    report = build_report("prod", cfg, prod_recording, [], [], MockValueMarker(prod_recording.mock_values), tmp_path)
    text = render_text(report)
    teams = [text.index(f"Team {team}: ") for team in ("llm", "vision")]
    models = [text.index(f"Model {model.name}: ") for model in cfg.inference.models]
    assert teams and len(models) == len(cfg.inference.models), f"one line per model: {report.model_headlines}"
    assert max(teams) < min(models), "model lines follow the team chargeback lines on the first screen"
    qwen = report.model_headlines[1]
    assert "no sourced benchmark for Qwen/Qwen2.5-1.5B-Instruct on H100-80GB" in qwen, qwen


def test_a_replica_of_several_gpus_pays_for_all_of_them_per_token(monkeypatch: pytest.MonkeyPatch) -> None:
    # A row measured on 2 GPUs (as a future sourced row would be): its tokens/s is the replica's. Alone on its node
    # it pays the whole node, 98.32 / (6,000 x 3,600) x 10^6 = 4.55185 USD; four such replicas fill the node, each
    # paying 2 GPU-hours, 2 x 12.29 / (6,000 x 3,600) x 10^6 = 1.13796 USD.
    two = dataclasses.replace(serving_benchmarks.BENCHMARKS[0], gpus=2, output_tokens_per_second=6000.0)
    monkeypatch.setattr(serving_benchmarks, "BENCHMARKS", (two,))
    llama = _costs(_prod(tensorParallel=2, maxReplicas=4))["llama-3-1-8b"]
    assert llama.per_million_output_tokens == pytest.approx(H100_NODE_HOUR / (6000 * 3600) * 1e6)
    assert llama.per_million_full_node == pytest.approx(2 * 12.29 / (6000 * 3600) * 1e6), (
        "a replica holds tensorParallel GPUs: its hour costs all of them"
    )
