"""The endpoint picker (gateway-api-inference-extension v1.5.0, commit df9f8909) reading our plugin config, scoring
a request's candidate servers, and recording the token counts of a response.

- Config: pkg/epp/config/loader/configloader.go instantiatePlugins (a plugin type must be registered, its name
  defaults to its type, defaults.go l.110, and may not repeat), validation.go validateSchedulingProfiles (each
  pluginRef names a declared plugin), buildSchedulerConfig (a scorer's weight defaults to DefaultScorerWeight 1,
  defaults.go). The registered types and the scorers that take no parameters: tests/fixtures/serving/
  upstream-names.json `epp_plugins`.
- Scoring: the profile's scorers add weight x score per candidate and the max-score picker takes the highest.
  queue-scorer (scorer/queuedepth/queue.go): (max queue - queue) / (max - min), 1 when all are equal;
  kv-cache-utilization-scorer (kvcache_utilization.go): 1 - KV-cache use; lora-affinity-scorer
  (loraaffinity/lora_affinity.go): 1.0 where the target adapter is active, else 0.8 while active + waiting adapters
  are below the server's max, else 0.6 where it is waiting, else 0; prefix-cache-scorer: 0 for a prompt no server
  has seen (the only case modelled). The LoRA state comes from vLLM's vllm:lora_requests_info labels max_lora,
  running_lora_adapters, waiting_lora_adapters (extractor/metrics/loraspec.go).
- Token counts: pkg/epp/handlers/response.go HandleResponseBody parses each response body chunk and, whenever the
  parsed usage is not empty, observes inference_objective_input_tokens and _output_tokens (labels model_name,
  target_model_name) with that usage; parsers/openai/openai.go extractUsageStreaming takes the first `usage` of a
  streamed chunk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

DEFAULT_SCORER_WEIGHT = 1.0


def config_problems(text: str, registered: Sequence[str], without_parameters: Sequence[str]) -> list[str]:
    """Why the picker refuses this EndpointPickerConfig at start (or, for parameters a scorer ignores, would
    silently not apply them)."""
    config = yaml.safe_load(text)
    problems: list[str] = []
    if (
        config.get("kind") != "EndpointPickerConfig"
        or config.get("apiVersion") != "inference.networking.x-k8s.io/v1alpha1"
    ):
        problems.append("not an inference.networking.x-k8s.io/v1alpha1 EndpointPickerConfig")
    names: set[str] = set()
    for spec in config.get("plugins") or []:
        kind = spec.get("type", "")
        name = spec.get("name") or kind
        if not kind:
            problems.append(f"plugin '{name}' is missing a type")
        elif kind not in registered:
            problems.append(f"plugin type '{kind}' is not registered")
        if name in names:
            problems.append(f"duplicate plugin name '{name}'")
        names.add(name)
        if kind in without_parameters and spec.get("parameters"):
            problems.append(f"plugin '{name}' ({kind}) takes no parameters: they are ignored")
    for profile in config.get("schedulingProfiles") or []:
        for ref in profile.get("plugins") or []:
            if ref.get("pluginRef") not in names:
                problems.append(
                    f"schedulingProfiles[{profile.get('name')}] references undefined plugin '{ref.get('pluginRef')}'"
                )
    return problems


@dataclass(frozen=True)
class Server:
    """A candidate's metrics as the picker last read them."""

    name: str
    waiting: int = 0
    kv_usage: float = 0.0
    max_lora: int = 0
    running_adapters: tuple[str, ...] = ()
    waiting_adapters: tuple[str, ...] = ()


def _lora_affinity(target: str, server: Server) -> float:
    if target in server.running_adapters:
        return 1.0
    if len(server.running_adapters) + len(server.waiting_adapters) < server.max_lora:
        return 0.8
    if target in server.waiting_adapters:
        return 0.6
    return 0.0


def _scores(scorer: str, target: str, servers: Sequence[Server]) -> dict[str, float]:
    if scorer == "queue-scorer":
        low, high = min(s.waiting for s in servers), max(s.waiting for s in servers)
        return {s.name: 1.0 if high == low else (high - s.waiting) / (high - low) for s in servers}
    if scorer == "kv-cache-utilization-scorer":
        return {s.name: 1 - s.kv_usage for s in servers}
    if scorer == "lora-affinity-scorer":
        return {s.name: _lora_affinity(target, s) for s in servers}
    if scorer == "prefix-cache-scorer":
        return {s.name: 0.0 for s in servers}
    raise NotImplementedError(scorer)


def picked(text: str, target: str, servers: Sequence[Server], profile: str = "default") -> list[str]:
    """The servers with the highest total score for a request whose target model is `target` (several on a tie)."""
    config = yaml.safe_load(text)
    types = {(p.get("name") or p["type"]): p["type"] for p in config["plugins"]}
    (chosen,) = [p for p in config["schedulingProfiles"] if p["name"] == profile]
    totals = {s.name: 0.0 for s in servers}
    for ref in chosen["plugins"]:
        weight = float(ref.get("weight", DEFAULT_SCORER_WEIGHT))
        for name, score in _scores(types[ref["pluginRef"]], target, servers).items():
            totals[name] += weight * score
    best = max(totals.values())
    return sorted(name for name, total in totals.items() if total == best)


CHART_DEFAULT_CONFIG = """\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
- type: metrics-data-source
- type: core-metrics-extractor
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
"""
"""The inferencepool chart's default-plugins.yaml at v1.5.0 (config/charts/epplib/templates/_config.yaml, vLLM over
HTTP, no latency predictor)."""


def effective_config(values: Mapping[str, Any]) -> str:
    """The config the picker loads from a release's values: the custom file when pluginsConfigFile names one, else
    the chart's default."""
    extension = values.get("inferenceExtension") or {}
    chosen = extension.get("pluginsConfigFile")
    return str(extension["pluginsCustomConfig"][chosen]) if chosen else CHART_DEFAULT_CONFIG


@dataclass
class TokenCounts:
    """What the picker's histograms hold for one target model: observations and their sums."""

    observations: int = 0
    input_sum: int = 0
    output_sum: int = 0
    by_chunk: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])


def record_response(counts: TokenCounts, chunks: Sequence[tuple[int, int] | None]) -> None:
    """One response's body chunks as the picker parses them, each (prompt tokens, completion tokens) of its usage or
    None; every chunk with usage is observed."""
    for usage in chunks:
        if usage is None:
            continue
        counts.observations += 1
        counts.input_sum += usage[0]
        counts.output_sum += usage[1]
        counts.by_chunk.append(usage)


def streamed_chunks(
    prompt: int, completion: int, usage_in_every_chunk: bool, final_usage: bool
) -> list[tuple[int, int] | None]:
    """vLLM's streamed chunks of one answer, one token each: the cumulative usage on each (forced, or continuous
    stats asked), or only on a final usage chunk (stream_options.include_usage), or nowhere."""
    chunks: list[tuple[int, int] | None] = []
    chunks.append((prompt, 0) if usage_in_every_chunk else None)
    for done in range(1, completion + 1):
        chunks.append((prompt, done) if usage_in_every_chunk else None)
    if usage_in_every_chunk or final_usage:
        chunks.append((prompt, completion))
    return chunks
