"""What a served model's pods allow for at runtime, from what the engine and the gateway do (tests/upstream/
engine_semantics.py holds the upstream facts with their sources): how long a stream may last, how long a stopping
server drains, how long a starting one may take to stage and load its weights.

Stopping: the kubelet runs the preStop hook, then sends SIGTERM; vLLM 0.34.0 drains in-flight requests for
`--shutdown-timeout` seconds (0, its default, aborts them) and refuses new ones meanwhile; the kubelet kills the
container once terminationGracePeriodSeconds (counted from the preStop hook) have passed. So the grace period covers
the preStop pause, the whole drain and the engine's teardown, and the drain covers the longest request the route
lets through.
"""

from __future__ import annotations

import math

from ..catalog.models import ModelShape

REQUEST_TIMEOUT_SECONDS = 600
"""The route's `timeouts.request`. Istio turns it into the Envoy route timeout, which runs from the end of the request
to the last byte of the response (Gateway API GEP-1742, the Envoy mapping): a streamed generation longer than this is
cut. Ten minutes of streaming is 6,000 tokens at 10 tokens/s; the ceiling is what a drain can still wait for inside
the cluster autoscaler's default 900 s maxGracefulTerminationSeconds."""
ENDPOINT_REMOVAL_SECONDS = 5
"""preStop pause before SIGTERM: the endpoint picker drops a pod once it has a deletion timestamp (GAIE v1.5.0
pkg/epp/util/pod/pod.go IsPodReady); requests it picked just before reach a server that still accepts them."""
DRAIN_SECONDS = REQUEST_TIMEOUT_SECONDS
"""vLLM `--shutdown-timeout`: every request the route still allows finishes before the engine stops."""
TEARDOWN_SECONDS = 30
"""After the drain: the engine processes' teardown and the HTTP server's exit (no published figure; stated)."""
TERMINATION_GRACE_SECONDS = ENDPOINT_REMOVAL_SECONDS + DRAIN_SECONDS + TEARDOWN_SECONDS

STARTUP_PERIOD_SECONDS = 10
CACHE_READ_MBPS = 100.0
"""The rate one replica reads the checkpoint from its Blob weights cache (blobfuse2), for the startup budget: a
stated floor (Microsoft publishes the account's 25,000 MB/s egress target, not one node's blobfuse2 rate)."""
HUB_DOWNLOAD_MBPS = 50.0
"""The rate the staging Job downloads from the Hugging Face Hub: stated, no published figure."""
ENGINE_START_SECONDS = 900
"""torch.compile, CUDA-graph capture and the API server's start after the weights are in memory: stated (vLLM's own
wait for its engine, VLLM_ENGINE_READY_TIMEOUT_S, defaults to 600 s including the weights, vllm/envs.py)."""
STAGING_START_SECONDS = 300
"""The staging pod's start beside its download (scheduling, the cache mount, the Hub's metadata calls): stated."""


def checkpoint_megabytes(shape: ModelShape) -> float:
    """The checkpoint as the Hub publishes it (16-bit), in MB (10^6 bytes): what is downloaded and read."""
    return shape.weight_bytes("bfloat16") / 10**6


def startup_budget_seconds(shape: ModelShape) -> int:
    """How long a replica may take from container start to /health: the checkpoint read from the weights cache at
    CACHE_READ_MBPS, then the engine's start."""
    return math.ceil(checkpoint_megabytes(shape) / CACHE_READ_MBPS + ENGINE_START_SECONDS)


def startup_failures(shape: ModelShape) -> int:
    """The startup probe's failureThreshold at STARTUP_PERIOD_SECONDS that covers the startup budget."""
    return math.ceil(startup_budget_seconds(shape) / STARTUP_PERIOD_SECONDS)


def staging_seconds(shape: ModelShape) -> int:
    """How long the staging Job may run: the checkpoint over HUB_DOWNLOAD_MBPS, plus its pod's start."""
    return math.ceil(checkpoint_megabytes(shape) / HUB_DOWNLOAD_MBPS + STAGING_START_SECONDS)
