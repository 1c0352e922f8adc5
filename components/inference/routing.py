"""The picker side of cache-aware routing (config/inference/routing.py): for a model with precise prefix-cache
scoring, the llm-d router's endpoint picker on the same inferencepool chart, its plugin config, the Service through
which it tokenises prompts on the model's own servers, and the ingress policy that lets only that picker read the
servers' KV-cache events (which carry prompt token ids). The servers' flags are kv_events.py's.

Why llm-d's picker: gateway-api-inference-extension v1.5.0 (the pinned chart and picker) has no scorer that reads
a server's cache (no KV-event plugin in its sources; its `prefix-cache-scorer` indexes the picker's own routing
decisions by prompt characters). llm-d/llm-d-router v0.10.0 (commit 71f4f099, 2026-08-17; the project the picker
moved to after GAIE v1.5.0) builds on the same GAIE v1.5.0 API (go.mod), accepts every flag the v1.5.0 chart renders
(pkg/epp/server/options.go, zap and --v from pkg/common/observability/logging/options.go), serves the chart's gRPC
health probes without leader election for any service name (cmd/epp/runner/health.go) and reads the config file the
chart mounts, so only `inferenceExtension.image` and the config change (docs/charts.md, "Serving").

Its config (llm-d v0.10.0; parsed strictly: unknown fields fail the picker's start, pkg/epp/config/loader/
configloader.go decodeRawConfig with EnableStrict, plugin parameters through plugin.StrictDecoder):
- `token-producer` with the `vllm` backend (pkg/epp/framework/plugins/requestcontrol/dataproducer/tokenizer/
  README.md): POST /v1/completions/render and /v1/chat/completions/render with `modelName`, which `vllm serve`
  0.34.0 answers itself (vllm/entrypoints/scale_out/render/api_router.py). Pointed at a Service over the model's own
  servers: the served tokenizer, offline, no Hub token in the picker. Without it the picker estimates tokens
  (~4 bytes each), which "silently degrades precise cache correlation".
- `precise-prefix-cache-producer` (dataproducer/preciseprefixcache/producer.go PluginConfig): block size
  (kv_events.py), KV-events `topicFilter` "kv@", `engineType` vllm, `discoverPods` with `socketPort`; fed by an
  `endpoint-notification-source` wired under `dataLayer.sources[].extractors` (extractor.go: a subscriber per
  pool endpoint; RELEASE-NOTES.md v0.9.0, PR 1121: without it, no subscriber). `indexerConfig.kvBlockIndexConfig.
  enableMetrics` counts index admissions and lookups (pkg/kvcache/kvblock/index.go).
- the `prefix-cache-scorer` reads that producer's match info through `prefixMatchInfoProducerName`
  (pkg/epp/framework/plugins/scheduling/scorer/prefix/plugin.go); without it, the approximate producer again.
- `apiVersion: llm-d.ai/v1alpha1` (the GAIE group is accepted with a deprecation, configloader.go).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from aks_gpu_platform.config.inference.models import ServedModelConfig

from ..network.policies import NAMESPACE_NAME_LABEL, PLATFORM_CALLERS_NAMESPACE
from .egress import ModelPods
from .kv_events import KV_BLOCK_SIZE_TOKENS, KV_EVENTS_LABEL, KV_EVENTS_LABELS, KV_EVENTS_PORT, KV_TOPIC_PREFIX
from .vllm_server import VLLM_PORT, ModelPlacement, pool_selector

LLM_D_ROUTER_VERSION = "v0.10.0"
PRECISE_PICKER_IMAGE = f"ghcr.io/llm-d/llm-d-router-endpoint-picker:{LLM_D_ROUTER_VERSION}"
"""llm-d/llm-d-router's picker image, published per release tag (.github/ISSUE_TEMPLATE/new-release.md l.143)."""
PRECISE_CONFIG_API_VERSION = "llm-d.ai/v1alpha1"
PRECISE_PRODUCER = "precise-prefix-cache-producer"
TOKEN_PRODUCER = "token-producer"
ENDPOINT_NOTIFICATIONS = "endpoint-notification-source"
PREFIX_CACHE_SCORER = "prefix-cache-scorer"
METRICS_SOURCE = "metrics-data-source"
METRICS_EXTRACTOR = "core-metrics-extractor"
RENDER_SERVICE_SUFFIX = "-render"


def render_service_name(model: str) -> str:
    """The Service over the model's serving pods the picker tokenises through (a DNS-1035 label: a model name
    starts with a letter and has at most 53 characters)."""
    return f"{model}{RENDER_SERVICE_SUFFIX}"


def render_url(model: str) -> str:
    """The render Service's base URL, resolved in the picker's own namespace."""
    return f"http://{render_service_name(model)}:{VLLM_PORT}"


def _precise_plugins(model: ServedModelConfig) -> list[dict[str, Any]]:
    return [
        {"type": TOKEN_PRODUCER, "parameters": {"modelName": model.name, "vllm": {"url": render_url(model.name)}}},
        {
            "type": PRECISE_PRODUCER,
            "parameters": {
                "tokenProcessorConfig": {"blockSizeTokens": KV_BLOCK_SIZE_TOKENS},
                "indexerConfig": {"kvBlockIndexConfig": {"enableMetrics": True}},
                "kvEventsConfig": {
                    "topicFilter": f"{KV_TOPIC_PREFIX}@",
                    "engineType": "vllm",
                    "discoverPods": True,
                    "podDiscoveryConfig": {"socketPort": KV_EVENTS_PORT},
                },
            },
        },
        {"type": ENDPOINT_NOTIFICATIONS},
    ]


def precise_picker_config(base: str, model: ServedModelConfig) -> str:
    """The llm-d picker's config from the picker config a model would run (inference_pool.py picker_config): the
    same scorers and weights, its prefix-cache scorer fed by the precise producer, which the servers' KV-cache
    events fill, and the prompts tokenised on the model's servers."""
    config: dict[str, Any] = yaml.safe_load(base)
    plugins: list[dict[str, Any]] = config["plugins"]
    scorers = [plugin for plugin in plugins if plugin["type"] == PREFIX_CACHE_SCORER]
    assert scorers, "precise routing needs the prefix cache, which check_routing requires"
    for scorer in scorers:
        scorer["parameters"] = {"prefixMatchInfoProducerName": PRECISE_PRODUCER}
    plugins += _precise_plugins(model)
    config["apiVersion"] = PRECISE_CONFIG_API_VERSION
    # The picker adds a metrics source of its own unless dataLayer names one (loader/defaults.go ensureDataLayer):
    # name ours beside the notifications.
    config["dataLayer"] = {
        "sources": [
            {"pluginRef": METRICS_SOURCE, "extractors": [{"pluginRef": METRICS_EXTRACTOR}]},
            {"pluginRef": ENDPOINT_NOTIFICATIONS, "extractors": [{"pluginRef": PRECISE_PRODUCER}]},
        ]
    }
    return yaml.safe_dump(config, sort_keys=False)


def render_service(name: str, placement: ModelPlacement, opts: pulumi.ResourceOptions) -> k8s.core.v1.Service:
    """`<model>-render`: the model's serving pods (a group's leader) on the API port, for the picker's tokenisation."""
    model = placement.model
    spec: k8s.core.v1.ServiceSpecArgsDict = {
        "type": "ClusterIP",
        "selector": pool_selector(model),
        "ports": [{"name": "http", "port": VLLM_PORT, "target_port": "http", "protocol": "TCP"}],
    }
    metadata: k8s.meta.v1.ObjectMetaArgsDict = {
        "name": render_service_name(model.name),
        "namespace": placement.namespace,
        "labels": placement.labels,
    }
    return k8s.core.v1.Service(f"{name}-render", metadata=metadata, spec=spec, opts=opts)


def kv_events_ingress(pods: ModelPods) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """A precise model's publishing servers: its picker on the API (metrics, tokenisation) and the event port,
    managed Prometheus on the API, a group's own pods on any port; the gateway keeps its own policy. Nothing else
    of the namespace or kube-system reaches the events."""
    callers_namespace: k8s.meta.v1.LabelSelectorArgsDict = {
        "match_labels": {NAMESPACE_NAME_LABEL: PLATFORM_CALLERS_NAMESPACE}
    }
    ingress: list[k8s.networking.v1.NetworkPolicyIngressRuleArgsDict] = [
        {
            "from_": [{"pod_selector": {"match_labels": dict(pods.picker)}}],
            "ports": [{"protocol": "TCP", "port": VLLM_PORT}, {"protocol": "TCP", "port": KV_EVENTS_PORT}],
        },
        {"from_": [{"namespace_selector": callers_namespace}], "ports": [{"protocol": "TCP", "port": VLLM_PORT}]},
    ]
    if pods.multi_node:
        ingress.append({"from_": [{"pod_selector": {"match_labels": dict(pods.servers)}}]})
    return {
        "pod_selector": {"match_labels": {**pods.servers, **KV_EVENTS_LABELS}},
        "policy_types": ["Ingress"],
        "ingress": ingress,
    }


def platform_ingress_pods(models: Sequence[ServedModelConfig]) -> k8s.meta.v1.LabelSelectorArgsDict | None:
    """The pods the namespace's platform ingress covers: all but the KV-event publishers (kv_events_ingress covers
    them), or None (all) when no model publishes."""
    if not any(model.routing.precise for model in models):
        return None
    return {"match_expressions": [{"key": KV_EVENTS_LABEL, "operator": "DoesNotExist"}]}


def kv_events_policies(
    name: str,
    namespace: str,
    models: Sequence[ServedModelConfig],
    pods: Mapping[str, ModelPods],
    opts: pulumi.ResourceOptions,
) -> None:
    """`kv-events-<model>`, the ingress of each precise model's publishing servers."""
    for model in models:
        if model.routing.precise:
            k8s.networking.v1.NetworkPolicy(
                f"{name}-kv-events-{model.name}",
                metadata={"name": f"kv-events-{model.name}", "namespace": namespace},
                spec=kv_events_ingress(pods[model.name]),
                opts=opts,
            )


def kv_events_port(model: ServedModelConfig) -> int | None:
    """The port the model's picker reads KV-cache events on, or None."""
    return KV_EVENTS_PORT if model.routing.precise else None
