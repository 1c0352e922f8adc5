"""What a served model does not get yet is said in the plan's warnings before anything is deployed: the SLO alert's
clock starts in the engine, and a multi-node model's NCCL runs over TCP."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.plan.mock_values import MockValueMarker
from aks_gpu_platform.plan.report import build_report
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT


def _warnings(recording: Recording, tmp_path: Path, **llama: Any) -> list[str]:
    settings = settings_of(copy.deepcopy(load_stack_file("prod", REPO_ROOT)))
    settings["inference"]["models"][0].update(llama)
    cfg = load_platform_config(settings)
    report = build_report("prod", cfg, recording, [], [], MockValueMarker(recording.mock_values), tmp_path)
    return [w for w in report.warnings if w.startswith("model llama-3-1-8b:")]


def test_a_multi_node_model_is_warned_that_nccl_runs_over_tcp(prod_recording: Recording, tmp_path: Path) -> None:
    warned = _warnings(prod_recording, tmp_path, nodes=2, minReplicas=1, maxReplicas=1)
    assert any("NCCL" in w and "not InfiniBand" in w and "IPC_LOCK" in w for w in warned), warned
    single = _warnings(prod_recording, tmp_path)
    assert not any("NCCL" in w for w in single), f"a single-node model needs no InfiniBand: {single}"


def test_every_model_is_warned_that_its_slo_alert_misses_the_gateway_and_picker_wait(
    prod_recording: Recording, tmp_path: Path
) -> None:
    (warned,) = [w for w in _warnings(prod_recording, tmp_path) if "time-to-first-token" in w]
    assert "vllm:time_to_first_token_seconds" in warned and "gateway" in warned and "picker" in warned, warned
