"""Model ready: the pool's node stages, the vLLM image, the weights read from the cache, the engine start and the
first token, per model, each with its source; unknown stays unknown."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.plan import cold_start
from aks_gpu_platform.plan.mock_values import MockValueMarker
from aks_gpu_platform.plan.report import build_report
from aks_gpu_platform.plan.screen import render_text
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT


def _prod(**llama: Any) -> PlatformConfig:
    settings = settings_of(copy.deepcopy(load_stack_file("prod", REPO_ROOT)))
    settings["inference"]["models"][0].update(llama)
    return load_platform_config(settings)


def _stage(budget: cold_start.PoolBudget, name: str) -> cold_start.Stage:
    return budget.stage(name)


@pytest.mark.parametrize("dtype", ["fp8", "bfloat16"])
def test_weights_load_is_the_checkpoint_over_the_weights_cache_throughput(dtype: str) -> None:
    # A replica reads the Hub checkpoint (16-bit: 8,030,261,248 params x 2 B = 16,061 MB) from its Blob weights cache
    # (the claim the Deployment mounts), not from Lustre; fp8 is quantised after loading. Blob: 25,000 MB/s.
    cfg = _prod(dtype=dtype)
    budget = cold_start.model_ready(cfg, cfg.inference.models[0])
    weights = _stage(budget, cold_start.WEIGHTS).figure
    assert weights.low_s == 0.6, f"{dtype}: 16,061 MB of checkpoint over 25,000 MB/s take 0.6 s at best"
    assert weights.high_s is None, "one node reads at most its NIC's bandwidth: the figure is a floor"
    assert "Blob" in weights.note and "Lustre" not in weights.note, f"the cache is a Blob claim: {weights.note}"


def test_a_replica_over_several_gpus_still_reads_the_whole_checkpoint() -> None:
    # Tensor parallel splits the weights between the ranks, not the bytes read: the eight ranks of a TP-8 replica
    # read the 16,061 MB of 16-bit weights between them, from the same weights cache at the same rate.
    one = _prod(dtype="bfloat16")
    eight = _prod(dtype="bfloat16", tensorParallel=8, minReplicas=1, maxReplicas=1)
    assert eight.inference.models[0].gpus_per_replica == 8, "the replica spans a whole node"
    single = _stage(cold_start.model_ready(one, one.inference.models[0]), cold_start.WEIGHTS).figure
    sharded = _stage(cold_start.model_ready(eight, eight.inference.models[0]), cold_start.WEIGHTS).figure
    assert sharded.low_s == single.low_s and (single.low_s or 0) > 0, (
        f"a TP-8 replica waits {sharded.low_s} s for its weights, as long as one GPU's ({single.low_s} s): the "
        "budget must not promise a faster start for a model spread over more GPUs"
    )


def test_the_node_stages_are_the_pool_budget() -> None:
    cfg = _prod()
    model = cfg.inference.models[0]
    pool = next(p for p in cfg.gpu_pools if p.name == model.pool)
    ready = cold_start.model_ready(cfg, model)
    pool_budget = cold_start.pool_budget(cfg, pool, None)
    for name in (cold_start.AUTOSCALER, cold_start.PROVISIONING, cold_start.DRIVER, cold_start.PLATFORM_IMAGES):
        assert _stage(ready, name).figure == _stage(pool_budget, name).figure, f"{name}: the model waits for the node"


def test_unsourced_stages_stay_unknown_and_the_first_token_is_the_slo() -> None:
    cfg = _prod(slo={"timeToFirstTokenP90Seconds": 1.5})
    ready = cold_start.model_ready(cfg, cfg.inference.models[0])
    for name in (cold_start.WORKLOAD_IMAGE, cold_start.ENGINE_START):
        figure = _stage(ready, name).figure
        assert (figure.low_s, figure.high_s) == (None, None), f"{name}: no published figure, so no guess"
        assert figure.source, f"{name}: says what was looked for"
    first = _stage(ready, cold_start.FIRST_TOKEN).figure
    assert first.high_s == 1.5, "the first token is budgeted at the SLO the alert holds the model to"
    assert ready.high_s is None, "a total with unknown stages is only a lower bound"
    total = cold_start.total(ready)
    unknown = total.split(" + unknown (", 1)[1] if " + unknown (" in total else ""
    assert all(name in unknown for name in (cold_start.WORKLOAD_IMAGE, cold_start.ENGINE_START)), (
        f"the total names each stage it cannot bound: {total}"
    )


def test_the_plan_prints_model_ready_per_model(prod_recording: Recording, tmp_path: Path) -> None:
    cfg = load_platform_config(settings_of(load_stack_file("prod", REPO_ROOT)))
    report = build_report("prod", cfg, prod_recording, [], [], MockValueMarker(prod_recording.mock_values), tmp_path)
    assert [b.pool for b in report.model_ready] == [m.name for m in cfg.inference.models], "one budget per model"
    screen, text = render_text(report), render_text(report, detail=True)
    for model in cfg.inference.models:
        assert f"model {model.name} on {model.pool}, new replica on a new node to first token: " in screen, (
            f"{model.name}'s whole path is on the first screen"
        )
        assert f"Model ready for {model.name}" in text, f"{model.name}'s budget, stage by stage, is in the detail"
    assert "vllm/vllm-openai" in text and "github.com/vllm-project/vllm/issues/27154" in text, "image source shown"


def test_the_weights_stage_reads_every_byte_of_the_checkpoint_at_the_stated_rate() -> None:
    # 70,553,706,496 params x 2 B = 141,107 MB (10^6 B) of checkpoint over 25,000 MB/s = 5.64 s. The checkpoint is
    # 131.4 GiB: counting a GiB as 1,000 MB would promise 5.26 s, a start the cache cannot give.
    cfg = _prod(
        weights={"huggingFace": "meta-llama/Llama-3.1-70B-Instruct", "revision": "0" * 40, "tokenSecret": True},
        dtype="bfloat16",
        tensorParallel=8,
        maxModelLen=8192,
        minReplicas=1,
        maxReplicas=1,
    )
    model = cfg.inference.models[0]
    weights = _stage(cold_start.model_ready(cfg, model), cold_start.WEIGHTS).figure
    megabytes = model.shape.params * 2 / 10**6
    assert weights.low_s is not None and abs(weights.low_s - megabytes / 25_000) < 0.05, (
        f"{megabytes:,.0f} MB at 25,000 MB/s take {megabytes / 25_000:.2f} s, the budget says {weights.low_s} s"
    )


def test_the_plan_warns_of_what_the_serving_budgets_assume_without_a_source() -> None:
    cfg = _prod()
    (stated,) = [w for w in cold_start.unsourced_serving_facts(cfg) if w.startswith("served models:")]
    assert "MB/s" in stated and "GiB per GPU" in stated, f"names the stated rates and margin: {stated}"
    assert "to exit after its drain" in stated, f"names the stated teardown the grace period allows: {stated}"
    settings = settings_of(copy.deepcopy(load_stack_file("prod", REPO_ROOT)))
    h200 = {**settings["gpuPools"][0], "name": "h200", "vmSize": "Standard_ND96isr_H200_v5"}
    settings["gpuPools"].append(h200)
    settings["inference"]["models"][0].update(
        pool="h200", minReplicas=0, scaleToZero=True, slo={"timeToFirstTokenP90Seconds": 45}
    )
    h200_cfg = load_platform_config(settings)
    warned = [w for w in cold_start.unsourced_serving_facts(h200_cfg) if "H200" in w]
    assert warned and cfg.inference.models[0].name in warned[0], "a GPU whose reported memory is unknown is named"
