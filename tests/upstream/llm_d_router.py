"""The llm-d router's endpoint picker at v0.10.0, as far as precise prefix-cache routing goes: whether it starts
with a config file, and what the started picker then does (which tokens it scores on, which servers' events it
subscribes to, on which port and topic, at which block size). Facts and their files:
tests/fixtures/serving/llm-d-router-v0.10.0.json (llm-d/llm-d-router commit 71f4f099).

Start (pkg/epp/config/loader/configloader.go LoadRawConfig, InstantiateAndConfigure; validation.go): the YAML is
decoded strictly into EndpointPickerConfig (an unknown key anywhere fails), plugin types must be registered and,
if Alpha, allowed; each plugin's parameters are decoded strictly into its struct; plugin names (the type when
unnamed) are unique; scheduling profiles and data-layer sources and extractors name defined plugins. A scorer that
requires PrefixCacheMatchInfo from a named producer fails the start when no plugin of that name is configured
(pkg/epp/datalayer/data_graph.go ErrNoDefaultProducer: only unnamed keys have default producers).

Silent degradations, modelled as what the picker then does rather than as errors:
- no `token-producer` with the vllm backend: the framework adds the `estimate` producer (tokenizer/README.md),
  whose token ids are not the engine's, so no precise lookup matches;
- the precise producer not an extractor of an `endpoint-notification-source`: no subscriber is ever created
  (preciseprefixcache/extractor.go runs only on endpoint events; RELEASE-NOTES.md v0.9.0, PR 1121);
- the `prefix-cache-scorer` without `prefixMatchInfoProducerName`: it reads the auto-spawned approximate producer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]

ROUTER = json.loads((REPO_ROOT / "tests" / "fixtures" / "serving" / "llm-d-router-v0.10.0.json").read_text())
PRECISE_PRODUCER = "precise-prefix-cache-producer"


def _unknown_keys(value: Any, schema: Any, path: str) -> list[str]:
    """Keys Go's DisallowUnknownFields refuses under `schema` (a dict of key -> sub-schema; None a scalar; "any" an
    object this model does not descend into)."""
    if schema == "any" or schema is None or not isinstance(value, dict):
        return []
    found: list[str] = []
    for key, item in value.items():
        if key not in schema:
            found.append(f"{path}.{key}: unknown field (allowed: {sorted(schema)})")
        else:
            found += _unknown_keys(item, schema[key], f"{path}.{key}")
    return found


def _strict(obj: Any, allowed: list[str], path: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{path}: not an object"]
    return [f"{path}.{key}: unknown field" for key in obj if key not in allowed]


def _names(config: dict[str, Any]) -> dict[str, str]:
    """Plugin name -> type (the name defaults to the type, loader/defaults.go applyStaticDefaults)."""
    return {p.get("name") or p["type"]: p["type"] for p in config.get("plugins") or []}


def config_problems(text: str) -> list[str]:
    """Why the picker would refuse to start with this config file (empty: it starts)."""
    config = yaml.safe_load(text)
    schema = ROUTER["config"]
    problems = _strict(config, schema["top_level"], "config")
    if config.get("apiVersion") not in schema["api_versions"] or config.get("kind") != schema["kind"]:
        problems.append(f"config: {config.get('apiVersion')}/{config.get('kind')} is not an EndpointPickerConfig")
    seen: set[str] = set()
    for i, plugin in enumerate(config.get("plugins") or []):
        path = f"plugins[{i}]"
        problems += _strict(plugin, schema["plugin"], path)
        name, kind = plugin.get("name") or plugin.get("type"), plugin.get("type")
        if name in seen:
            problems.append(f"{path}: duplicate plugin name {name!r}")
        seen.add(str(name))
        known = ROUTER["plugins"].get(kind)
        if known is None:
            problems.append(f"{path}: plugin type {kind!r} is not registered")
            continue
        if known["stability"] == "alpha":
            problems.append(f"{path}: {kind} is Alpha and needs --allow-experimental-plugins")
        if known["parameters"] != "ignored":
            problems += _unknown_keys(plugin.get("parameters") or {}, known["parameters"], f"{path}.parameters")
    names = _names(config)
    for profile in config.get("schedulingProfiles") or []:
        path = f"schedulingProfiles[{profile.get('name')}]"
        problems += _strict(profile, schema["profile"], path)
        for ref in profile.get("plugins") or []:
            problems += _strict(ref, schema["profile_plugin"], f"{path}.plugins")
            if ref.get("pluginRef") not in names:
                problems.append(f"{path} references undefined {ref.get('pluginRef')}")
    layer = config.get("dataLayer") or {}
    problems += _strict(layer, schema["data_layer"], "dataLayer")
    for source in layer.get("sources") or []:
        problems += _strict(source, schema["data_source"], "dataLayer.sources")
        refs = [source.get("pluginRef"), *(e.get("pluginRef") for e in source.get("extractors") or [])]
        problems += [f"dataLayer references undefined {ref}" for ref in refs if ref not in names]
    for plugin in config.get("plugins") or []:
        if plugin.get("type") != "prefix-cache-scorer":
            continue
        wanted = (plugin.get("parameters") or {}).get("prefixMatchInfoProducerName")
        if wanted and names.get(wanted) != PRECISE_PRODUCER:
            problems.append(f"prefix-cache-scorer reads PrefixCacheMatchInfo from {wanted!r}, which no plugin produces")
    return problems


@dataclass(frozen=True)
class PrecisePicker:
    """What a started picker does for precise prefix-cache routing."""

    scores_server_caches: bool
    """A prefix-cache scorer in the default profile reads the precise producer's match info."""
    token_backend: str
    """`vllm` (the engine's tokenizer, through render) or `estimate` (guessed token ids)."""
    render_url: str | None
    render_model: str | None
    subscribes: bool
    """The producer gets endpoint events, so it dials each server."""
    socket_port: int
    topic_filter: str
    block_size_tokens: int


def precise_picker(text: str) -> PrecisePicker:
    """The precise pipeline of a config the picker starts with (check config_problems first)."""
    config = yaml.safe_load(text)
    defaults = ROUTER["defaults"]
    by_name = {p.get("name") or p["type"]: p for p in config.get("plugins") or []}
    producers = [n for n, p in by_name.items() if p["type"] == PRECISE_PRODUCER]
    profiles = config.get("schedulingProfiles") or []
    profile_refs = {ref["pluginRef"] for profile in profiles for ref in profile["plugins"]}
    scores = any(
        by_name[ref]["type"] == "prefix-cache-scorer"
        and (by_name[ref].get("parameters") or {}).get("prefixMatchInfoProducerName") in producers
        for ref in profile_refs
        if ref in by_name
    )
    tokenizers = [p.get("parameters") or {} for p in by_name.values() if p["type"] == "token-producer"]
    vllm = next((t for t in tokenizers if t.get("vllm") is not None or t.get("modelName")), None)
    notified = {
        extractor["pluginRef"]
        for source in (config.get("dataLayer") or {}).get("sources") or []
        if by_name.get(source["pluginRef"], {}).get("type") == "endpoint-notification-source"
        for extractor in source.get("extractors") or []
    }
    params = (by_name[producers[0]].get("parameters") or {}) if producers else {}
    events = params.get("kvEventsConfig") or {}
    discovery = events.get("podDiscoveryConfig") or {}
    processor = params.get("tokenProcessorConfig") or {}
    return PrecisePicker(
        scores_server_caches=scores,
        token_backend="vllm" if vllm is not None else defaults["tokenBackend"],
        render_url=((vllm or {}).get("vllm") or {}).get("url", "http://localhost:8000") if vllm is not None else None,
        render_model=(vllm or {}).get("modelName"),
        subscribes=bool(producers)
        and any(p in notified for p in producers)
        and events.get("discoverPods", defaults["discoverPods"]),
        socket_port=int(discovery.get("socketPort", defaults["socketPort"])),
        topic_filter=str(events.get("topicFilter", defaults["topicFilter"])),
        block_size_tokens=int(
            processor.get("blockSizeTokens") or processor.get("blockSize") or defaults["blockSizeTokens"]
        ),
    )


def parse_topic(topic: str) -> tuple[str, str]:
    """(pod, model) as the vLLM adapter reads a topic: split at `@`, three parts or no model at all."""
    parts = topic.split("@")
    return (parts[1], parts[2]) if len(parts) == 3 else (topic, "")
