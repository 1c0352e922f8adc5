"""How fast the Run:ai Model Streamer reads a checkpoint from Azure Blob into a replica's GPUs, as published, for the
plan's model-ready budget of a model streamed from a team's container (config/inference/weights.py).

The one published Azure figure: KAITO's model-mirror proposal (kaito-project/kaito tag v0.12.0, commit 0894eb2b,
docs/proposals/20260520-model-mirror.md, status "provisional"), a proof of concept with qwen2.5-coder-32b-instruct
(61 GiB) on 2 x A100: without distributed streaming "~1.2-1.4 GiB/s aggregate" (load 22-25 s), with it 16 s, "~1.9
GiB/s per GPU, ~3.8 GiB/s aggregate". The account's tier is not stated (the proposal recommends Premium_LRS; the
platform's HSM account is Standard). The streamer's own benchmarks (run-ai/runai-model-streamer docs/src/
benchmarks.md) measure S3 and local disks, not Azure. A layout the proposal did not measure stays unknown.
"""

from __future__ import annotations

import datetime

from .cold_start import Figure

MODEL_MIRROR_PROPOSAL = (
    "kaito-project/kaito v0.12.0 docs/proposals/20260520-model-mirror.md (proof of concept, 2 x A100, 61 GiB)"
)
MODEL_MIRROR_PUBLISHED = datetime.date(2026, 5, 20)
SINGLE_READER_GIB_S = (1.2, 1.4)
"""Without distributed streaming, the proposal's own throughput figure (its 22-25 s for 61 GiB would be about twice
that: the slower reading is kept)."""
DISTRIBUTED_RANKS = 2
DISTRIBUTED_GIB_S = 3.8
"""Two ranks with distributed streaming, each reading half and broadcasting it: the aggregate."""


def streamed_read(checkpoint_gib: float, tensor_parallel: int) -> Figure:
    """A replica of `tensor_parallel` GPUs reading `checkpoint_gib` from Blob, as the platform streams it
    (distributed across ranks when tensor_parallel > 1): the published rate for that layout, else unknown."""
    where = f"{checkpoint_gib:.1f} GiB streamed from the team's Blob container"
    if tensor_parallel == 1:
        slow, fast = SINGLE_READER_GIB_S
        return Figure(
            round(checkpoint_gib / fast, 1),
            round(checkpoint_gib / slow, 1),
            MODEL_MIRROR_PROPOSAL,
            MODEL_MIRROR_PUBLISHED,
            f"{where} by one reader at {slow:g}-{fast:g} GiB/s (measured without distributed streaming, account "
            "tier not stated)",
        )
    if tensor_parallel == DISTRIBUTED_RANKS:
        seconds = round(checkpoint_gib / DISTRIBUTED_GIB_S, 1)
        return Figure(
            seconds,
            seconds,
            MODEL_MIRROR_PROPOSAL,
            MODEL_MIRROR_PUBLISHED,
            f"{where} by {DISTRIBUTED_RANKS} ranks with distributed streaming at {DISTRIBUTED_GIB_S:g} GiB/s "
            "aggregate (account tier not stated)",
        )
    return Figure(
        None,
        None,
        MODEL_MIRROR_PROPOSAL,
        MODEL_MIRROR_PUBLISHED,
        f"{where} by {tensor_parallel} ranks with distributed streaming: unknown, the one published Azure figure "
        f"is for {DISTRIBUTED_RANKS} ranks",
    )
