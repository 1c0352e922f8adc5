"""Published serving throughput per model and GPU, for the plan's price per million output tokens.

A row prices only a model of the same model, GPU, number of GPUs per replica and weight precision. No row is
scaled to another GPU, size or precision; where none matches, the plan says so. Even a matching row was not
measured as the platform serves: each row lists how it was measured differently (`differences`), and the plan
prints those beside the price.

What MLPerf's "tokens per second" counts: generated (output) tokens. The LLM reference harness reports each
completed query to LoadGen with `n_tokens = len(pred_output_tokens)`, the token ids vLLM generated
(mlcommons/inference language/llama3.1-8b/SUT_VLLM.py at 64eb7813, SUTServer.stream_output), and LoadGen's
"Completed tokens per second" sums those counts over the run. The llama3.1-8b task is CNN/DailyMail
summarisation with at most 128 output tokens per query (the same file's `max_tokens: 128`): long prompts, short
answers, so a chat workload with longer answers will see a different rate.

What was found, honestly: MLPerf Inference v5.1 (mlcommons/inference_results_v5.1 at 965182b0, 2025-09-09,
summary_results.json) has no A100, A10 or T4 entry and no Qwen2.5 entry; v5.0 could not be read here.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from .models import ServingDtype

_V51 = "https://github.com/mlcommons/inference_results_v5.1/tree/965182b03376a00fcae415c54e560e1c83937932"


@dataclass(frozen=True)
class ServingBenchmark:
    """One published result: output tokens per second of one replica of `gpus` GPUs."""

    result_id: str
    model: str
    """Hub id of the model measured."""
    gpu_model: str
    """The GPU catalog's gpu_model (config/catalog/gpu_sizes.py)."""
    gpus: int
    """GPUs the measured replica used."""
    dtype: ServingDtype
    output_tokens_per_second: float
    scenario: str
    engine: str
    source: str
    published: datetime.date
    note: str = ""
    differences: tuple[str, ...] = ()
    """How the measured replica differed from one the platform serves (weights, engine, workload)."""

    @property
    def name(self) -> str:
        return f"MLPerf Inference v5.1 {self.result_id} ({self.scenario}, {self.engine}, {self.dtype})"


BENCHMARKS: tuple[ServingBenchmark, ...] = (
    # RedHat on a Dell PowerEdge XE8640, 1 of its 4 H100-SXM-80GB, OpenShift VM; fp8 weights; "Completed tokens per
    # second: 5103.99, Result is: VALID" (llama3.1-8b/Server/performance/run_1/mlperf_log_summary.txt), which met
    # the Server scenario's TTFT and TPOT limits. ND H100 v5 carries the same H100 SXM 80 GB.
    ServingBenchmark(
        result_id="5.1-0083",
        model="meta-llama/Llama-3.1-8B-Instruct",
        gpu_model="H100-80GB",
        gpus=1,
        dtype="fp8",
        output_tokens_per_second=5103.99,
        scenario="Server",
        engine="vLLM 0.10.0",
        source=f"{_V51}/closed/RedHat/results/XE8640_4xH100_vLLM/llama3.1-8b/Server",
        published=datetime.date(2025, 9, 9),
        note="Offline (no latency limit) reached 5,777.08",
        # systems/XE8640_4xH100_vLLM.json ("framework": "vLLM 0.10.0", "accelerators_per_node": "1", "hw_notes":
        # "... 4xH100-SXM-80GB system (1 GPU used)": the rate is one GPU's); measurements/.../Server/
        # XE8640_4xH100_vLLM.json ("weight_transformations": "quantization", calibrated per the submission's
        # code/llama3.1-8b/README.md and documentation/calibration.md); SUT_VLLM.py `max_tokens: 128`.
        differences=(
            "weights quantised to fp8 offline with the submitter's calibration (the platform quantises the 16-bit "
            "checkpoint online, fp8_per_tensor, uncalibrated)",
            "vLLM 0.10.0 under the submitter's MLPerf harness and batching settings (the platform runs vLLM 0.34.0 "
            "with its defaults)",
            "CNN/DailyMail summaries of at most 128 output tokens (longer answers change the rate)",
        ),
    ),
)


def matching_benchmark(model: str, gpu_model: str, gpus: int, dtype: ServingDtype) -> ServingBenchmark | None:
    """The row measured exactly as the model is served, or None."""
    return next(
        (b for b in BENCHMARKS if (b.model, b.gpu_model, b.gpus, b.dtype) == (model, gpu_model, gpus, dtype)),
        None,
    )


def rows_for(model: str, gpu_model: str) -> list[ServingBenchmark]:
    """Rows of the same model on the same GPU (to say why none matches exactly)."""
    return [b for b in BENCHMARKS if (b.model, b.gpu_model) == (model, gpu_model)]
