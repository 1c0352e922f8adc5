"""The server side of precise prefix-cache routing (config/inference/routing.py): the `vllm serve` flags and
environment with which a model's servers publish their KV-cache events to its endpoint picker, and the label that
marks the pods publishing them (only the model's picker may connect to them: routing.py).

What it follows:
- vLLM 0.34.0 (PyPI sdist sha256 fcad848b...): `--kv-events-config` is JSON (vllm/engine/arg_utils.py l.1914) for
  vllm/config/kv_events.py KVEventsConfig: `enable_kv_cache_events`, `publisher` "zmq", `endpoint` (a `tcp://*`
  endpoint is bound, vllm/distributed/kv_events.py ZmqEventPublisher; its port is offset by the data-parallel rank,
  `offset_endpoint_port`), `topic`, sent as the first frame of each (topic, seq, msgpack batch) message. The
  scheduler publishes (vllm/v1/core/sched/scheduler.py), so a multi-node group's leader does and its headless
  workers, which run only a MultiprocExecutor built from their own flags (vllm/entrypoints/cli/serve.py
  run_headless), do not; the block size goes to every rank all the same. A BlockStored event carries the block's
  `token_ids` and `block_size`. `--block-size`: 64 unless set (vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE);
  `--prefix-caching-hash-algo`: sha256 by default; xxhash* seed their first block hash at random per process unless
  PYTHONHASHSEED is set (vllm/v1/core/kv_cache_utils.py resolve_none_hash_seed).
- llm-d/llm-d-router v0.10.0 (commit 71f4f099), what the picker expects of them: it dials `tcp://<endpoint IP>:
  <socketPort + rank>` (pkg/epp/framework/plugins/requestcontrol/dataproducer/preciseprefixcache/extractor.go),
  subscribes to topics starting `kv@` (pkg/kvevents/pool.go DefaultConfig) and splits `kv@<pod>@<model>` at `@`
  (pkg/kvevents/engineadapter/common.go parseTopic, vllm_adapter.go "Expected topic format"). The model segment
  keys the blocks it indexes (pool.go processEventBatch) and lookups key on the request's target model
  (preciseprefixcache/blockkeys.go computeBlockKeys): it must be the served name, or no lookup ever matches. It
  recomputes block keys from the events' token ids in blocks of its own `blockSizeTokens` (default 16,
  pkg/kvcache/kvblock/token_processor.go), so vLLM's hash algorithm and seed need not match it
  (preciseprefixcache/README.md "Engine compatibility"); its block size must match vLLM's for a matched block to be
  one vLLM can reuse (vLLM reuses whole blocks only, so a 16-token match inside a 64-token block is no hit).
"""

from __future__ import annotations

import json
from typing import Any

from aks_gpu_platform.config.inference.models import ServedModelConfig

KV_EVENTS_PORT = 5557
"""Where each publishing server binds its ZMQ PUB socket, and the port the picker dials (its default socketPort)."""
KV_BLOCK_SIZE_TOKENS = 64
"""vLLM's KV block, set explicitly on both sides: vLLM 0.34.0's default, which the picker's default (16) is not."""
PREFIX_CACHING_HASH_ALGO = "sha256"
"""vLLM's default, set explicitly: deterministic block hashes across processes, unlike xxhash without a seed."""
KV_TOPIC_PREFIX = "kv"
POD_IP_ENV = "POD_IP"
KV_EVENTS_LABEL = "aks-gpu-platform/kv-events"
"""Marks the pods that publish KV-cache events: they hold prompt token ids, and only the model's picker may read
them (components/inference/routing.py)."""
KV_EVENTS_LABELS = {KV_EVENTS_LABEL: "zmq"}


def publishes_kv_events(model: ServedModelConfig, multi_node: str | None = None) -> bool:
    """The pod runs the model's scheduler (a single server, or a group's leader) and its routing is precise."""
    return model.routing.precise and multi_node != "worker"


def kv_events_topic(model: ServedModelConfig) -> str:
    """`kv@<pod IP>@<served name>`, the pod's address filled in by Kubernetes from POD_IP at container start."""
    return f"{KV_TOPIC_PREFIX}@$({POD_IP_ENV})@{model.name}"


def kv_events_config(model: ServedModelConfig) -> dict[str, Any]:
    """vLLM's KVEventsConfig: a ZMQ publisher bound on every address at KV_EVENTS_PORT."""
    return {
        "enable_kv_cache_events": True,
        "publisher": "zmq",
        "endpoint": f"tcp://*:{KV_EVENTS_PORT}",
        "topic": kv_events_topic(model),
    }


def kv_cache_args(model: ServedModelConfig, multi_node: str | None = None) -> list[str]:
    """The flags precise routing adds to `vllm serve`: the block size and hash the picker's index is built for
    (every rank of a group, so they agree), and the event publisher (where the scheduler runs)."""
    if not model.routing.precise:
        return []
    args = [
        "--block-size",
        str(KV_BLOCK_SIZE_TOKENS),
        "--prefix-caching-hash-algo",
        PREFIX_CACHING_HASH_ALGO,
    ]
    if publishes_kv_events(model, multi_node):
        args += ["--kv-events-config", json.dumps(kv_events_config(model), separators=(",", ":"))]
        # The picker tokenises through /v1/*/render, which vLLM 0.34.0 answers only with scale-out on
        # (vllm/entrypoints/scale_out/factories.py); the gateway denies those paths to callers (gateway_identity.py).
        args.append("--enable-scale-out")
    return args


def kv_events_env(model: ServedModelConfig, multi_node: str | None = None) -> list[dict[str, Any]]:
    """POD_IP from the downward API, which the topic in the flags refers to."""
    if not publishes_kv_events(model, multi_node):
        return []
    return [{"name": POD_IP_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]


def kv_events_pod_labels(model: ServedModelConfig, multi_node: str | None = None) -> dict[str, str]:
    """The publishing pods' label, which the models namespace's ingress policies select on."""
    return dict(KV_EVENTS_LABELS) if publishes_kv_events(model, multi_node) else {}
