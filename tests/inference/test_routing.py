"""Cache-aware routing (`inference.models[].routing`): a precise model's servers publish KV-cache events the llm-d
router's picker (v0.10.0, tests/upstream/llm_d_router.py) subscribes to and scores on; only that picker reads
them; its config starts the picker and rolls it when it changes; the hit rate is watched. Checked against vLLM
0.34.0 (the flags' own parsing), the llm-d router v0.10.0 model, the inferencepool chart v1.5.0 model
(tests/upstream/serving.py), Cilium's NetworkPolicy semantics (tests/upstream/tenancy.py) and PromQL over the
scraped series (tests/upstream/promql.py).

Stacks: prod as written (qwen-1-5b precise, llama-3-1-8b shared by two teams, approximate), and prod with a
precise multi-node model (tests/inference/test_serving.py's models)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.inference.inference_pool import inference_pool_values
from aks_gpu_platform.components.inference.model_dashboards import (
    HIT_RATE_PANEL,
    KV_EVENTS_PANEL,
    panel_queries,
    prefix_cache_alert,
    slo_alert,
)
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.inference.test_serving import (
    PREFIX,
    PROD_MODELS,
    UPSTREAM,
    _prod_with_models,  # pyright: ignore[reportPrivateUsage]
    _ttft_histories,  # pyright: ignore[reportPrivateUsage]
)
from tests.inference.test_serving_egress import DNS, GATEWAY, SCRAPER, picker, pod_of, server_pods, staging_pods
from tests.training.test_team_access import raw_teams
from tests.upstream.engine_semantics import vllm_serves_scale_out
from tests.upstream.llm_d_router import ROUTER, config_problems, parse_topic, precise_picker
from tests.upstream.promql import Evaluator, History, selectors
from tests.upstream.scrape import Container, Pod, Port, pod_monitor_scrape_configs, scrape, targets
from tests.upstream.serving import picker_container, picker_flags
from tests.upstream.tenancy import (
    Endpoint,
    World,
    build_world,
    connection_refusals,
    team_pod,
)
from tools import REPO_ROOT

POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
PRECISE, SHARED = "qwen-1-5b", "llama-3-1-8b"
"""prod's models: qwen-1-5b (one team) routes precisely; llama-3-1-8b (two teams, no shared cache) cannot."""
# vLLM 0.34.0 vllm/config/kv_events.py KVEventsConfig, a pydantic dataclass with extra="forbid"
# (vllm/config/utils.py config): any other key in --kv-events-config fails `vllm serve` at start.
VLLM_KV_EVENTS_FIELDS = {
    "enable_kv_cache_events",
    "publisher",
    "endpoint",
    "replay_endpoint",
    "buffer_steps",
    "hwm",
    "max_queue_size",
    "topic",
}
# vLLM 0.34.0 vllm/config/cache.py: the default block when --block-size is not given, and the hash algorithms whose
# first block hash is random per process unless PYTHONHASHSEED is set (vllm/v1/core/kv_cache_utils.py).
VLLM_DEFAULT_BLOCK_SIZE = 64
VLLM_RANDOM_SEEDED_HASHES = {"xxhash", "xxhash_cbor"}


# --- config -----------------------------------------------------------------------------------------------------


def _prod_settings(*models: dict[str, Any]) -> dict[str, Any]:
    settings = copy.deepcopy(settings_of(load_stack_file("prod", REPO_ROOT)))
    settings["inference"] = {"models": list(models)}
    return settings


def _qwen(**overrides: Any) -> dict[str, Any]:
    """test_serving's one-team Qwen on h100z2, renamed."""
    return {**copy.deepcopy(PROD_MODELS[1]), "name": "qwen", **overrides}


PRECISE_ROUTING = {"prefixCache": "precise"}


def _refusal(*models: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_platform_config(_prod_settings(*models))
    (problem,) = caught.value.problems
    return problem


def test_routing_is_approximate_unless_a_model_asks() -> None:
    cfg = load_platform_config(_prod_settings(_qwen(), _qwen(name="qwen-precise", routing=PRECISE_ROUTING)))
    assert [m.routing.prefix_cache for m in cfg.inference.models] == ["approximate", "precise"]


def test_precise_routing_is_refused_where_vllm_keeps_no_prefix_cache() -> None:
    """Two teams without sharedPrefixCache: vLLM runs --no-enable-prefix-caching and publishes nothing to score."""
    shared = _qwen(teams=["llm", "vision"], routing=PRECISE_ROUTING)
    problem = _refusal(shared)
    assert problem.startswith("inference.models[0].routing.prefixCache: got 'precise'"), problem
    assert "sharedPrefixCache" in problem and "--no-enable-prefix-caching" in problem, problem
    load_platform_config(_prod_settings({**shared, "sharedPrefixCache": True}))


def test_precise_routing_is_refused_for_a_model_that_may_be_at_zero() -> None:
    """The picker tokenises on the model's own servers (no Hub download): at zero replicas there is none."""
    zero = _qwen(minReplicas=0, scaleToZero=True, slo={"timeToFirstTokenP90Seconds": 50}, routing=PRECISE_ROUTING)
    problem = _refusal(zero)
    assert problem.startswith("inference.models[0].routing.prefixCache: got 'precise'"), problem
    assert "tokenises" in problem and "minReplicas >= 1" in problem, problem
    load_platform_config(_prod_settings({**zero, "routing": {"prefixCache": "approximate"}}))


def test_one_bad_model_among_good_ones_is_named_and_only_it() -> None:
    good_precise = _qwen(name="qwen-a", routing=PRECISE_ROUTING)
    bad = _qwen(name="qwen-b", teams=["llm", "vision"], routing=PRECISE_ROUTING)
    good_approximate = _qwen(name="qwen-c", teams=["llm", "vision"])
    problem = _refusal(good_precise, bad, good_approximate)
    assert problem.startswith("inference.models[1].routing.prefixCache"), problem
    cfg = load_platform_config(_prod_settings(good_precise, good_approximate))
    assert [m.routing.precise for m in cfg.inference.models] == [True, False]


# --- the servers and their picker ------------------------------------------------------------------------------


def _objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


def _release(recording: Recording, model: str) -> Any:
    (release,) = [
        r
        for r in recording.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs.get("chart") == POOL_CHART and r.inputs["name"] == model
    ]
    return release


def _picker_config(recording: Recording, model: str) -> str:
    picker_values = _release(recording, model).inputs["values"]["inferenceExtension"]
    return picker_values["pluginsCustomConfig"][picker_values["pluginsConfigFile"]]


def _server(recording: Recording, model: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's single-node pod template and its vLLM container."""
    (deployment,) = [d for d in _objects(recording, "Deployment") if d["metadata"]["name"] == model]
    template = deployment["spec"]["template"]
    (container,) = template["spec"]["containers"]
    return template, container


def _flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def _expanded(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of a container argument (pkg/kubelet/container expansion: a defined variable
    is replaced, an undefined reference is left as written)."""
    for name, value in env.items():
        arg = arg.replace(f"$({name})", value)
    return arg


def _runtime_env(container: dict[str, Any], pod_ip: str) -> dict[str, str]:
    """The container's variables as the kubelet sets them, the downward API's status.podIP included."""
    found: dict[str, str] = {}
    for entry in container.get("env") or []:
        field = ((entry.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if "value" in entry:
            found[entry["name"]] = entry["value"]
        elif field == "status.podIP":
            found[entry["name"]] = pod_ip
    return found


def test_a_precise_models_servers_publish_what_its_picker_subscribes_to(prod_recording: Recording) -> None:
    """The event port, topic, model segment and block size the llm-d picker expects, from vLLM's own parsing."""
    pod_ip = "10.244.3.17"
    template, container = _server(prod_recording, PRECISE)
    args = container["args"]
    raw = _flag(args, "--kv-events-config")
    assert raw is not None, f"{PRECISE}: vLLM publishes no KV-cache events without --kv-events-config"
    events = json.loads(_expanded(raw, _runtime_env(container, pod_ip)))
    assert set(events) <= VLLM_KV_EVENTS_FIELDS, f"vLLM 0.34.0 refuses {set(events) - VLLM_KV_EVENTS_FIELDS}"
    assert events.get("enable_kv_cache_events") is True and events.get("publisher", "zmq") == "zmq", events
    picker_side = precise_picker(_picker_config(prod_recording, PRECISE))
    host, _, port = events["endpoint"].removeprefix("tcp://").rpartition(":")
    assert host == "*", "a wildcard endpoint is bound, so the picker can dial the pod's address"
    assert int(port) == picker_side.socket_port, f"vLLM binds {port}, the picker dials {picker_side.socket_port}"
    topic = events["topic"]
    assert "$(" not in topic, f"{topic}: a variable the container does not define stays unexpanded"
    assert topic.startswith(picker_side.topic_filter), f"{topic}: the picker subscribes to {picker_side.topic_filter}"
    pod, model = parse_topic(topic)
    assert pod == pod_ip and model == _flag(args, "--served-model-name") == PRECISE, (
        f"{topic}: the picker keys blocks on the topic's model and looks them up by the request's model, the served "
        "name: any other name never matches"
    )
    block = int(_flag(args, "--block-size") or VLLM_DEFAULT_BLOCK_SIZE)
    assert block == picker_side.block_size_tokens, (
        f"vLLM caches {block}-token blocks, the picker matches {picker_side.block_size_tokens}-token ones: it credits "
        "servers with partial blocks vLLM cannot reuse"
    )
    assert _flag(args, "--block-size") is not None, "set on both sides, not left to two defaults that differ"
    hash_algo = _flag(args, "--prefix-caching-hash-algo") or "sha256"
    seeded = any(e["name"] == "PYTHONHASHSEED" for e in container.get("env") or [])
    assert hash_algo not in VLLM_RANDOM_SEEDED_HASHES or seeded, f"{hash_algo} without a seed: hashes differ per run"
    assert template["metadata"]["labels"].get("aks-gpu-platform/kv-events"), "the ingress policy selects publishers"


def test_the_precise_picker_starts_tokenises_on_the_servers_and_scores_their_caches(prod_recording: Recording) -> None:
    text = _picker_config(prod_recording, PRECISE)
    assert config_problems(text) == [], "the llm-d picker v0.10.0 refuses this config and never starts"
    picker_side = precise_picker(text)
    assert picker_side.scores_server_caches, "the prefix-cache scorer must read the precise producer's matches"
    assert picker_side.subscribes, "without endpoint notifications the producer never dials a server"
    assert picker_side.token_backend == "vllm", "estimated tokens match no block the servers publish"
    assert picker_side.render_model == PRECISE, "vLLM renders only for its served name"
    template, container = _server(prod_recording, PRECISE)
    url = picker_side.render_url or ""
    host, _, port = url.removeprefix("http://").partition(":")
    services = {s["metadata"]["name"]: s for s in _objects(prod_recording, "Service")}
    assert host in services, f"{url}: no Service {host} in the picker's namespace"
    (service_port,) = [p for p in services[host]["spec"]["ports"] if p["port"] == int(port)]
    selector = services[host]["spec"]["selector"]
    assert selector.items() <= template["metadata"]["labels"].items(), "the render Service selects the model's servers"
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container_ports.get(service_port["targetPort"]) == 8000, "its target is vLLM's API port"
    assert vllm_serves_scale_out(container["args"]), (
        "vLLM 0.34.0 answers /v1/*/render with 403 unless --enable-scale-out: the picker gets no tokens and scores "
        "no cache"
    )


def test_the_precise_picker_is_llm_ds_and_runs_with_the_flags_the_chart_renders(prod_recording: Recording) -> None:
    values = _release(prod_recording, PRECISE).inputs["values"]
    image = picker_container(values)["image"]
    assert image.endswith(ROUTER["image"]), f"{image}: the precise producer exists only in llm-d's picker"
    flags = picker_flags(values)
    assert [f for f in flags if f not in ROUTER["flags"]] == [], "llm-d's picker v0.10.0 exits on an unknown flag"
    assert [f for f in flags if f in ROUTER["deprecated_errors"]] == []


def test_approximate_models_keep_the_chart_picker_and_publish_nothing(prod_recording: Recording) -> None:
    values = _release(prod_recording, SHARED).inputs["values"]
    assert picker_container(values)["image"].endswith("registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0")
    _, container = _server(prod_recording, SHARED)
    assert "--kv-events-config" not in container["args"] and "--block-size" not in container["args"]
    services = [s["metadata"]["name"] for s in _objects(prod_recording, "Service")]
    assert f"{SHARED}-render" not in services


def _model(**overrides: Any) -> ServedModelConfig:
    base = _qwen(routing=PRECISE_ROUTING)
    return ServedModelConfig.model_validate({**base, **overrides})


def test_a_changed_picker_config_rolls_the_picker() -> None:
    """The picker reads its config at start only and the chart adds no checksum: the config's hash goes into the
    pod template (the chart renders inferenceExtension.env into the picker container), so a different config is
    a different pod template and the Deployment rolls."""
    models = [
        _model(),
        _model(routing={"prefixCache": "approximate"}, teams=["llm", "vision"]),
        _model(name="other", routing=PRECISE_ROUTING),
        _model(minReplicas=0, scaleToZero=True, routing={"prefixCache": "approximate"}),
    ]
    seen: dict[str, str] = {}
    for model in models:
        values = inference_pool_values(model)
        picker_values = values["inferenceExtension"]
        config = picker_values["pluginsCustomConfig"][picker_values["pluginsConfigFile"]]
        container = json.dumps(picker_container(values), sort_keys=True)
        assert seen.get(container, config) == config, "two configs, one pod template: the second config never loads"
        seen[container] = config
        assert hashlib.sha256(config.encode()).hexdigest() in container, "the hash of the config it mounts"


def test_the_picker_model_refuses_what_llm_d_refuses() -> None:
    """The contract's model of llm-d v0.10.0 can fail: each mutation below breaks the start or the pipeline."""
    picker_values = inference_pool_values(_model())["inferenceExtension"]
    base = yaml.safe_load(picker_values["pluginsCustomConfig"][picker_values["pluginsConfigFile"]])

    def mutated(change: Any) -> str:
        config = copy.deepcopy(base)
        change(config)
        return yaml.safe_dump(config)

    def producer(config: dict[str, Any]) -> dict[str, Any]:
        return next(p for p in config["plugins"] if p["type"] == "precise-prefix-cache-producer")

    assert config_problems(mutated(lambda c: producer(c)["parameters"].update(blockSizeToken=64)))
    assert config_problems(mutated(lambda c: c.update(dataLayers={})))
    assert config_problems(mutated(lambda c: producer(c).update(type="precise-prefix-cache")))
    unwired = mutated(lambda c: c["dataLayer"]["sources"].pop())
    assert config_problems(unwired) == [] and not precise_picker(unwired).subscribes
    untokenised = mutated(lambda c: c.update(plugins=[p for p in c["plugins"] if p["type"] != "token-producer"]))
    assert config_problems(untokenised) == [] and precise_picker(untokenised).token_backend == "estimate"


# --- who reaches the events --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def multi_node_precise() -> dict[str, Any]:
    config = copy.deepcopy(_prod_with_models())  # its models are test_serving's own dicts
    for model in config[PREFIX + "inference"]["models"]:
        if model["name"] in ("llama-70b", "qwen-1-5b"):
            model["routing"] = PRECISE_ROUTING
    return config


@pytest.fixture(scope="module")
def worlds(prod_recording: Recording, multi_node_precise: dict[str, Any]) -> dict[str, World]:
    prod = load_stack_file("prod", REPO_ROOT)
    return {
        "prod": build_world(prod_recording, raw_teams(prod)),
        "prod-multi-node": build_world(run_stack("prod", multi_node_precise), raw_teams(multi_node_precise)),
    }


@pytest.fixture(params=["prod", "prod-multi-node"])
def w(request: pytest.FixtureRequest, worlds: dict[str, World]) -> World:
    return worlds[request.param]


def test_only_a_groups_leader_publishes_its_kv_events(worlds: dict[str, World]) -> None:
    """The picker dials the scheduler's pod (vLLM's leader in a group); a worker that bound the port and wore the
    label would be opened to the picker and left out of the namespace's ingress for nothing."""
    (leader, worker) = server_pods(worlds["prod-multi-node"])["llama-70b"]
    for template, publishes in ((leader, True), (worker, False)):
        (container,) = template["spec"]["containers"]
        env = {e["name"] for e in container.get("env") or []}
        shows = (
            "--kv-events-config" in container["args"],
            "POD_IP" in env,
            bool(template["metadata"]["labels"].get("aks-gpu-platform/kv-events")),
        )
        assert shows == (publishes, publishes, publishes), f"leader publishes, worker not: {shows}"


def _publishers(w: World) -> dict[str, dict[str, Any]]:
    """Model -> the template of its pods that publish KV-cache events (a single server, a group's leader)."""
    return {
        model: template
        for model, templates in server_pods(w).items()
        for template in templates
        if template["metadata"]["labels"].get("aks-gpu-platform/kv-events")
    }


def test_only_the_models_picker_reaches_its_servers_kv_events(w: World) -> None:
    publishers = _publishers(w)
    assert PRECISE in publishers, "the precise model's servers publish"
    port = ROUTER["defaults"]["socketPort"]
    for model, template in publishers.items():
        events, api = pod_of(template, port), pod_of(template, 8000)
        assert not connection_refusals(w, picker(model), events), f"{model}: its picker subscribes"
        assert not connection_refusals(w, picker(model), api), f"{model}: its picker reads metrics and tokenises"
        assert not connection_refusals(w, SCRAPER, api), f"{model}: managed Prometheus scrapes the API port"
        assert not connection_refusals(w, GATEWAY, api), f"{model}: the gateway sends requests"
        konnectivity = Endpoint("pod", 0, namespace="kube-system", labels=(("app", "konnectivity-agent"),))
        refused_from = [
            ("the gateway", GATEWAY),
            ("managed Prometheus", SCRAPER),
            ("the API server's proxy (konnectivity)", konnectivity),
            ("a team's pod", team_pod(next(iter(w.teams.values()))[0])),
            ("DNS", Endpoint("pod", 0, namespace=DNS.namespace, labels=DNS.labels)),
            *((f"{other}'s picker", picker(other)) for other in server_pods(w) if other != model),
            *((f"{other}'s server", pod_of(ts[0])) for other, ts in server_pods(w).items() if other != model),
            *((f"staging Job {job}", pod_of(t)) for job, t in staging_pods(w).items()),
        ]
        for who, source in refused_from:
            assert connection_refusals(w, source, events), f"{who} reads {model}'s prompt tokens on port {port}"


def test_an_approximate_models_picker_opens_no_event_port(w: World) -> None:
    port = ROUTER["defaults"]["socketPort"]
    for model, templates in server_pods(w).items():
        if model in _publishers(w):
            continue
        assert connection_refusals(w, picker(model), pod_of(templates[0], port)), f"{model}: nothing to read there"


def test_a_precise_group_still_reaches_its_own_pods(w: World) -> None:
    """The publishing leader leaves the namespace's platform ingress for its own policy: its workers still reach
    it (the rendezvous, NCCL) and it them."""
    for model, templates in server_pods(w).items():
        if len(templates) < 2:
            continue
        leader, worker = templates
        for a, b in ((leader, worker), (worker, leader), (worker, worker)):
            assert not connection_refusals(w, pod_of(a, 29500), pod_of(b, 29500)), f"{model}: rendezvous"


# --- what the owners watch --------------------------------------------------------------------------------------

DAY = 86_400
STEP = 60


def _server_histories(recording: Recording, model: str, rates: list[tuple[int, float, float]]) -> list[History]:
    """vLLM's prefix cache counters of one replica scraped through the model's PodMonitor: (until, queried tokens
    per second, hit share) in order, as counters."""
    (monitor,) = [m for m in _objects(recording, "PodMonitor") if m["metadata"]["name"] == f"vllm-{model}"]
    template, container = _server(recording, model)
    ports = tuple(Port(p["name"], p["containerPort"]) for p in container["ports"])
    labels = template["metadata"]["labels"]
    pod = Pod("models", f"{model}-7d9f-0", labels, "node0", "10.0.0.10", (Container("vllm", ports),))
    (config,) = pod_monitor_scrape_configs(monitor)
    (target,) = targets(config, [pod])
    text = "".join(
        f"# TYPE vllm:prefix_cache_{kind} counter\n"
        f'vllm:prefix_cache_{kind}_total{{engine="0",model_name="{model}"}} 0\n'
        for kind in ("queries", "hits")
    )
    histories = []
    for sample in scrape(target, config, text, {}).series:
        hits = "hits" in sample.labels["__name__"]
        history, total, at = History(sample.labels), 0.0, 0
        for until, queried, share in rates:
            while at <= until:
                history.extend(at, STEP, 1, total)
                total += STEP * queried * (share if hits else 1.0)
                at += STEP
        histories.append(history)
    return histories


def _alert(recording: Recording, model: str, name: str) -> dict[str, Any] | None:
    (group,) = [
        g
        for g in recording.of_type("azure-native:alertsmanagement:PrometheusRuleGroup")
        if g.name.endswith(f"-{model}-slo")
    ]
    return next((r for r in group.inputs["rules"] if r["alert"].startswith(name)), None)


@pytest.mark.parametrize(
    ("rates", "fires", "why"),
    [
        ([(DAY, 500.0, 0.6), (DAY + 3600, 500.0, 0.15)], True, "the hit rate fell to a quarter of the day's"),
        ([(DAY + 3600, 500.0, 0.6)], False, "steady at 60 %"),
        ([(DAY + 3600, 500.0, 0.05)], False, "low but the model's usual: its prompts repeat little"),
        ([(DAY, 500.0, 0.6), (DAY + 3600, 0.0, 0.0)], False, "no traffic: nothing to judge"),
    ],
)
def test_the_hit_rate_alert_fires_when_a_precise_models_hit_rate_falls(
    prod_recording: Recording, rates: list[tuple[int, float, float]], fires: bool, why: str
) -> None:
    rule = _alert(prod_recording, PRECISE, "ModelPrefixCacheHitRateFell")
    assert rule is not None, f"{PRECISE} routes precisely: its hit rate is what the routing is for"
    assert rule["for"] == "PT30M"
    evaluator = Evaluator(_server_histories(prod_recording, PRECISE, rates), at=DAY + 3600)
    fired = evaluator.vector(rule["expression"])
    assert evaluator.problems == [], f"the alert matches labels the series lack: {evaluator.problems}"
    assert bool(fired) is fires, f"{why}: fired={fired}"


def test_only_precise_models_have_the_hit_rate_alert(prod_recording: Recording) -> None:
    assert _alert(prod_recording, SHARED, "ModelPrefixCacheHitRateFell") is None


def _stored_vllm_names() -> set[str]:
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"], "gauge": [""]}
    return {name + s for name, fact in UPSTREAM["vllm"]["metrics"].items() for s in suffixes[fact["type"]]}


def _stored_picker_names() -> dict[str, list[str]]:
    """llm-d v0.10.0's series as stored (Go's client adds no suffix to a counter; a histogram's are
    _bucket/_sum/_count)."""
    names: dict[str, list[str]] = {}
    for name, fact in ROUTER["metrics"].items():
        for suffix in ["_bucket", "_sum", "_count"] if fact["type"] == "histogram" else [""]:
            names[name + suffix] = [*fact["labels"], *(["le"] if suffix == "_bucket" else [])]
    return names


def test_every_routing_query_reads_series_that_exist_at_the_pinned_versions(prod_recording: Recording) -> None:
    """The hit rate and a precise model's KEDA triggers read vLLM 0.34.0's series; its SLO and events panel read llm-d
    v0.10.0's picker series with labels it registers (or the scrape adds), not the deprecated GAIE names it may
    drop."""
    scrape_labels = {"namespace", "pod", "container", "job", "endpoint", "instance"}
    (scaled,) = [s for s in _objects(prod_recording, "ScaledObject") if s["metadata"]["name"] == f"{PRECISE}-serving"]
    queries = [trigger["metadata"]["query"] for trigger in scaled["spec"]["triggers"]]
    queries += [q for q, _ in panel_queries("models", "m", prefix_cache=True, precise=True).values()]
    queries += [prefix_cache_alert("models", "m")[1], slo_alert("models", "m", 1.0, precise=True)[1]]
    panels = panel_queries("models", "m", prefix_cache=True, precise=True)
    assert HIT_RATE_PANEL in panels and KV_EVENTS_PANEL in panels
    vllm, picker_series = _stored_vllm_names(), _stored_picker_names()
    read_from_picker = set()
    for query in queries:
        for selector in selectors(query):
            metric = selector.metric or ""
            if metric.startswith("vllm:"):
                assert metric in vllm, f"{query}: vLLM 0.34.0 stores no {metric}"
            elif not metric.startswith("DCGM_"):
                assert metric in picker_series, f"{query}: llm-d's picker v0.10.0 registers no {metric}"
                unknown = {m for m, _, _ in selector.matchers} - set(picker_series[metric]) - scrape_labels
                assert unknown == set(), f"{metric} has no label {unknown}"
                assert not ROUTER["metrics"].get(metric.removesuffix("_bucket"), {}).get("deprecated"), (
                    f"{metric}: deprecated at llm-d v0.10.0, a later release drops it and the query reads nothing"
                )
                read_from_picker.add(metric)
    assert read_from_picker, "the SLO of a precise model reads its picker's time"


def test_a_precise_models_slo_and_events_panel_read_its_scraped_picker(prod_recording: Recording) -> None:
    """llm-d's picker series, scraped through the model's picker PodMonitor as managed Prometheus stores them: the
    SLO's scheduling time and the events panel each find their series."""
    (monitor,) = [m for m in _objects(prod_recording, "PodMonitor") if m["metadata"]["name"] == f"epp-{PRECISE}"]
    pod = Pod(
        "models",
        f"{PRECISE}-epp-5c6d8f-x2x9q",
        {"inferencepool": f"{PRECISE}-epp"},
        "cpu0",
        "10.0.1.5",
        (Container("epp", (Port("grpc", 9002), Port("grpc-health", 9003), Port("metrics", 9090))),),
    )
    scheduling = "llm_d_epp_scheduler_e2e_duration_seconds"
    buckets = ROUTER["metrics"][scheduling]["buckets"]
    text = f"# TYPE {scheduling} histogram\n" + "".join(
        f'{scheduling}_bucket{{le="{le}"}} 0\n' for le in [*map(str, buckets), "+Inf"]
    )
    received = "llm_d_router_epp_kv_cache_events_messages_received_total"
    text += f'# TYPE {received} counter\n{received}{{pod_identifier="10.0.0.10:8000"}} 0\n'
    (config,) = pod_monitor_scrape_configs(monitor)
    (target,) = targets(config, [pod])
    histories = []
    for sample in scrape(target, config, text, {}).series:
        history = History(sample.labels)
        for at in range(0, 615, 15):
            history.extend(at, 15, 1, 10.0 * at)  # every request scheduled in the first bucket; 10 messages a second
        histories.append(history)
    histories += _ttft_histories(prod_recording, PRECISE, {0.25: 1.0, 0.5: 1.0, 1.0: 1.0, 2.5: 1.0, 5.0: 1.0})
    evaluator = Evaluator(histories, at=600)
    (events,) = evaluator.vector(panel_queries("models", PRECISE, prefix_cache=True, precise=True)[KV_EVENTS_PANEL][0])
    assert events.value > 0, "the picker's received messages reach the panel"
    rule = _alert(prod_recording, PRECISE, "ModelTimeToFirstTokenSlo")
    assert rule is not None
    bound, _, _ = rule["expression"].rpartition(" > ")
    assert len(evaluator.vector(bound)) == 1, "the SLO's bound finds the picker's and the servers' series"
    assert evaluator.problems == [], evaluator.problems
