"""What a served model's owners watch: a Grafana dashboard per model and an alert on its time-to-first-token SLO.

The SLO is the caller's time to first token, and no single series holds it: vLLM's clock starts when the engine
receives the request, so the time the endpoint picker holds it (flow control while a model wakes from zero or the
pool is saturated) is not in vllm:time_to_first_token_seconds. The alert reads an upper bound instead: the p95 of
the time held in the picker plus the p95 of vLLM's time to first token. For any two delays, P(A + B > a95 + b95) <=
P(A > a95) + P(B > b95) = 10 %, so their sum bounds the caller's p90 from above (it can fire while the true p90 is
still within the SLO, never stay silent while it is above). Left out: the gateway's own proxying and the network
hops, milliseconds. Not used (GAIE v1.5.0 pkg/epp/metrics/metrics.go): inference_objective_request_ttft_seconds is
recorded only by the predicted-latency plugins, which need the latency predictor sidecar (their hooks return early
without it); inference_objective_request_duration_seconds runs to the response's end, so a long answer reads as a
slow first token; Istio's standard metrics have istio_request_duration_milliseconds (to the response's end) and no
response-start series.

Picker series (GAIE v1.5.0 pkg/epp/metrics/metrics.go, tests/fixtures/serving/upstream-names.json): a model whose
picker runs flow control (scale to zero) holds every request in it, timed by
inference_extension_flow_control_request_queue_duration_seconds (l.395, labels fairness_id, priority, outcome,
inference_pool, model_name, target_model_name; buckets up to 60 s, so a longer hold reads as 60 s); without flow
control the picker holds no request (pkg/epp/requestcontrol/admission.go LegacyAdmissionController admits or
refuses at once) and its time is the scheduler's, inference_extension_scheduler_e2e_duration_seconds (l.319, no
labels of its own: the scrape's `pod` names the model's picker).

A model whose picker scores the servers' own prefix caches (precise routing, routing.py) runs llm-d/llm-d-router
v0.10.0's picker, which records the scheduling time as llm_d_epp_scheduler_e2e_duration_seconds (pkg/epp/metrics/
llm_d_router_metrics.go l.250, same buckets, no labels; the GAIE name above is kept there only as a deprecated twin,
metrics.go l.249) and counts the KV-cache event messages it receives in
llm_d_router_epp_kv_cache_events_messages_received_total (pkg/kvcache/metrics/collector.go, label pod_identifier,
registered whenever the precise producer runs, pkg/kvevents/pool.go NewPool).

Series (vLLM 0.34.0 vllm/v1/metrics/loggers.py, PrometheusStatLogger; counters carry `_total`, histograms
`_bucket/_sum/_count`): vllm:request_success_total, vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
vllm:generation_tokens_total, vllm:num_requests_waiting, vllm:num_requests_running, vllm:kv_cache_usage_perc,
vllm:prefix_cache_queries_total and vllm:prefix_cache_hits_total (prompt tokens looked up in and found in the prefix
cache, l.662 and l.673: their rates' ratio is the hit rate); each
labelled `model_name` (the served name) and, from the scrape, `namespace` and `pod` of the server. The model's GPUs
join through the label contract (components/monitoring/metrics_labels.py): DCGM stores the pod holding a GPU as
`exported_namespace`/`exported_pod`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from aks_gpu_platform.config.inference.models import PICKER_NAME_PREFIX

from ..monitoring import metrics_labels as labels
from ..monitoring.alerts import AlertSpec

SLO_WINDOW = "5m"
BOUND_QUANTILE = 0.95
"""Each of the two delays at p95: their sum bounds the caller's p90 (the module's docstring)."""
HOLD_METRIC = "inference_extension_flow_control_request_queue_duration_seconds"
SCHEDULING_METRIC = "inference_extension_scheduler_e2e_duration_seconds"
PRECISE_SCHEDULING_METRIC = "llm_d_epp_scheduler_e2e_duration_seconds"
KV_EVENTS_RECEIVED_METRIC = "llm_d_router_epp_kv_cache_events_messages_received_total"
PREFIX_HIT_WINDOW = "30m"
PREFIX_HIT_BASELINE = "1d"
PREFIX_HIT_FALL = 0.5
"""The prefix cache hit rate alert fires below this share of the model's own hit rate over the last day: what
counts as a good rate depends on how much the model's prompts repeat, the fall does not."""
PREFIX_HIT_FOR = "PT30M"
SLO_FOR = "PT10M"
DASHBOARD_UID_PREFIX = "model-"
DASHBOARD_UID_MAX = 40
"""Grafana refuses a longer dashboard uid (pkg/util/shortid_generator.go IsValidShortUID)."""
UID_HASH_CHARS = 8


def dashboard_uid(model: str) -> str:
    """`model-<name>`, or, past Grafana's 40 characters, its head and a hash of the whole name: two long names sharing
    their first 34 characters keep distinct dashboards."""
    uid = f"{DASHBOARD_UID_PREFIX}{model}"
    if len(uid) <= DASHBOARD_UID_MAX:
        return uid
    digest = hashlib.sha256(model.encode()).hexdigest()[:UID_HASH_CHARS]
    return f"{uid[: DASHBOARD_UID_MAX - UID_HASH_CHARS - 1]}-{digest}"


def _selector(namespace: str, model: str) -> str:
    return f'namespace="{namespace}",model_name="{model}"'


def ttft_quantile(namespace: str, model: str, quantile: float, window: str = SLO_WINDOW) -> str:
    """PromQL: the model's time to first token at `quantile` over `window`, all replicas together."""
    buckets = f"vllm:time_to_first_token_seconds_bucket{{{_selector(namespace, model)}}}"
    return f"histogram_quantile({quantile}, sum by (le) (rate({buckets}[{window}])))"


def picker_name(model: str) -> str:
    """The model's picker Deployment and its pods' `inferencepool` label (epplib templates/_helpers.tpl)."""
    return f"{model.lower().strip()[:PICKER_NAME_PREFIX]}-epp"


def picker_pods(model: str) -> str:
    """Regex of the model's picker pod names (`<Deployment>-<hash>-<id>`)."""
    return f"{picker_name(model)}-[a-z0-9]+-[a-z0-9]+"


def picker_quantile(
    namespace: str, model: str, flow_control: bool, quantile: float, window: str = SLO_WINDOW, precise: bool = False
) -> str:
    """PromQL: the time the model's picker holds a request at `quantile`: flow control's queue time where it runs
    (every outcome: a request held and then refused waited too), else the scheduler's own time (under the llm-d
    picker's name for a `precise` model)."""
    if flow_control:
        buckets = f'{HOLD_METRIC}_bucket{{namespace="{namespace}",inference_pool="{model}"}}'
    else:
        scheduling = PRECISE_SCHEDULING_METRIC if precise else SCHEDULING_METRIC
        buckets = f'{scheduling}_bucket{{namespace="{namespace}",pod=~"{picker_pods(model)}"}}'
    return f"histogram_quantile({quantile}, sum by (le) (rate({buckets}[{window}])))"


def caller_ttft_bound(namespace: str, model: str, flow_control: bool, precise: bool = False) -> str:
    """PromQL: the upper bound of the caller's p90 time to first token (the module's docstring), seconds."""
    held = picker_quantile(namespace, model, flow_control, BOUND_QUANTILE, precise=precise)
    return f"{held} + {ttft_quantile(namespace, model, BOUND_QUANTILE)}"


def prefix_cache_hit_rate(namespace: str, model: str, window: str = SLO_WINDOW) -> str:
    """PromQL: the share of prompt tokens the model's servers found in their prefix cache over `window`, 0..1 (no
    series while nothing was asked)."""
    sel = _selector(namespace, model)
    hits = f"sum(rate(vllm:prefix_cache_hits_total{{{sel}}}[{window}]))"
    return f"{hits} / sum(rate(vllm:prefix_cache_queries_total{{{sel}}}[{window}]))"


def kv_events_received(namespace: str, model: str) -> str:
    """PromQL: KV-cache event messages the model's (llm-d) picker receives per second, from all its servers."""
    return f'sum(rate({KV_EVENTS_RECEIVED_METRIC}{{namespace="{namespace}",pod=~"{picker_pods(model)}"}}[5m]))'


def server_pods(model: str, multi_node: bool) -> str:
    """Regex of the model's server pod names: a Deployment's `<name>-<hash>-<id>`, a LeaderWorkerSet's
    `<name>-<group>` (leader) and `<name>-<group>-<index>` (workers)."""
    return f"{model}-[0-9]+(-[0-9]+)?" if multi_node else f"{model}-[a-z0-9]+-[a-z0-9]+"


def gpu_utilization(namespace: str, model: str, multi_node: bool) -> str:
    """PromQL: GPU utilisation per server pod of the model, from DCGM under the label contract."""
    matchers = f'{labels.WORKLOAD_NAMESPACE}="{namespace}",{labels.WORKLOAD_POD}=~"{server_pods(model, multi_node)}"'
    return f"avg by ({labels.WORKLOAD_POD}) (DCGM_FI_DEV_GPU_UTIL{{{matchers}}})"


BOUND_PANEL = "Caller time to first token p90, upper bound"
HIT_RATE_PANEL = "Prefix cache hit rate"
KV_EVENTS_PANEL = "KV-cache event messages the picker receives per second"


def panel_queries(
    namespace: str,
    model: str,
    multi_node: bool = False,
    flow_control: bool = False,
    prefix_cache: bool = False,
    precise: bool = False,
) -> dict[str, tuple[str, str]]:
    """Panel title -> (PromQL, unit). `prefix_cache`: the servers keep one (its hit rate); `precise`: the picker
    scores it from their KV-cache events (how many arrive)."""
    sel = _selector(namespace, model)
    panels = {
        "Requests per second": (f"sum(rate(vllm:request_success_total{{{sel}}}[5m]))", "reqps"),
        BOUND_PANEL: (caller_ttft_bound(namespace, model, flow_control, precise), "s"),
        "Time held in the endpoint picker p95": (
            picker_quantile(namespace, model, flow_control, BOUND_QUANTILE, precise=precise),
            "s",
        ),
        "Time to first token p50": (ttft_quantile(namespace, model, 0.5), "s"),
        "Time to first token p90": (ttft_quantile(namespace, model, 0.9), "s"),
        "Inter-token latency p50": (
            f"histogram_quantile(0.5, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{{{sel}}}[5m])))",
            "s",
        ),
        "Output tokens per second": (f"sum(rate(vllm:generation_tokens_total{{{sel}}}[5m]))", "none"),
        "Requests waiting": (f"sum(vllm:num_requests_waiting{{{sel}}})", "none"),
        "KV cache used": (f"avg(vllm:kv_cache_usage_perc{{{sel}}})", "percentunit"),
        "Serving replicas": (f"count(vllm:num_requests_running{{{sel}}})", "none"),
        "GPU utilisation per server": (gpu_utilization(namespace, model, multi_node), "percent"),
    }
    if prefix_cache:
        panels[HIT_RATE_PANEL] = (prefix_cache_hit_rate(namespace, model, "5m"), "percentunit")
    if precise:
        panels[KV_EVENTS_PANEL] = (kv_events_received(namespace, model), "none")
    return panels


def model_dashboard(
    namespace: str,
    model: str,
    slo_seconds: float,
    multi_node: bool = False,
    flow_control: bool = False,
    prefix_cache: bool = False,
    precise: bool = False,
) -> dict[str, Any]:
    """The Grafana dashboard JSON of one model (datasource picked in Grafana, like the GPU dashboards)."""
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    panels: list[dict[str, Any]] = []
    queries = panel_queries(namespace, model, multi_node, flow_control, prefix_cache, precise)
    for index, (title, (expr, unit)) in enumerate(queries.items()):
        defaults: dict[str, Any] = {"unit": unit}
        if title == BOUND_PANEL:
            steps = [{"color": "green", "value": None}, {"color": "red", "value": slo_seconds}]
            defaults["thresholds"] = {"mode": "absolute", "steps": steps}
        panels.append(
            {
                "id": index + 1,
                "type": "timeseries",
                "title": title,
                "datasource": datasource,
                "gridPos": {"x": (index % 3) * 8, "y": (index // 3) * 8, "w": 8, "h": 8},
                "fieldConfig": {"defaults": defaults, "overrides": []},
                "targets": [{"refId": "A", "datasource": datasource, "expr": expr, "legendFormat": ""}],
            }
        )
    return {
        "title": f"Model {model}",
        "uid": dashboard_uid(model),
        "schemaVersion": 39,
        "version": 1,
        "tags": ["aks-gpu-platform", "inference"],
        "timezone": "utc",
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [{"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}]
        },
        "panels": panels,
    }


def slo_alert(
    namespace: str, model: str, slo_seconds: float, flow_control: bool = False, precise: bool = False
) -> AlertSpec:
    """The caller's time to first token (its p90's upper bound over 5 minutes) above the SLO, for 10 minutes.
    `flow_control`: the model's picker holds requests (inference_pool_values); `precise`: it runs llm-d's picker."""
    return (
        f"ModelTimeToFirstTokenSlo-{model}",
        f"{caller_ttft_bound(namespace, model, flow_control, precise)} > {slo_seconds:g}",
        SLO_FOR,
        2,
        f"Model {model}: time to first token as callers see it (p95 held in the endpoint picker + p95 in vLLM, an "
        f"upper bound of the p90) over {SLO_WINDOW} is {{{{ $value }}}} s, above its SLO of {slo_seconds:g} s; "
        "check the picker's hold, the queue and KV-cache panels and whether replicas are at maxReplicas",
    )


def prefix_cache_alert(namespace: str, model: str) -> AlertSpec:
    """For a model with precise routing: its prefix cache hit rate over PREFIX_HIT_WINDOW below PREFIX_HIT_FALL of
    its rate over PREFIX_HIT_BASELINE, for PREFIX_HIT_FOR. What precise routing is for; it falls when the picker
    stops receiving the servers' KV-cache events (a blocked port, a topic or block size that does not match) and
    routes on load alone, or when the prompts stop repeating."""
    now = prefix_cache_hit_rate(namespace, model, PREFIX_HIT_WINDOW)
    usual = prefix_cache_hit_rate(namespace, model, PREFIX_HIT_BASELINE)
    return (
        f"ModelPrefixCacheHitRateFell-{model}",
        f"({now}) < {PREFIX_HIT_FALL:g} * ({usual})",
        PREFIX_HIT_FOR,
        3,
        f"Model {model}: its prefix cache hit rate over {PREFIX_HIT_WINDOW} is {{{{ $value }}}} (0 to 1), "
        f"below {PREFIX_HIT_FALL:.0%} of its rate over the last {PREFIX_HIT_BASELINE}; check the dashboard's KV-cache "
        "event panel (zero: the picker reads no events, see its log for ZMQ errors) and whether the traffic changed",
    )
