"""Serving contracts: the gateway, model servers, pools, routes, scrape, KEDA, dashboards and team-scoped access,
checked against models of the pinned upstreams (tests/upstream), on a dev stack with one small model and a prod stack
with a single-node model per team and a multi-node (LeaderWorkerSet) model."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.inference.gateway import (
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    GATEWAY_POD_LABEL,
    GATEWAY_SERVICE,
)
from aks_gpu_platform.components.inference.model_dashboards import panel_queries, slo_alert, ttft_quantile
from aks_gpu_platform.config.catalog.cold_start import node_provisioning
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS
from aks_gpu_platform.config.gpu.scheduling import RDMA_RESOURCE
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.upstream.autoscaler_template import scale_from_zero_problems
from tests.upstream.crd_schema import crd_problems
from tests.upstream.pod_security_policy import admission, assignments
from tests.upstream.pod_security_standard import enforced_level, violations
from tests.upstream.promql import Evaluator, History, matches, selectors
from tests.upstream.release_contract import release_problems
from tests.upstream.scheduling import scheduling_check
from tests.upstream.scrape import Container, Pod, Port, pod_monitor_scrape_configs, scrape, targets
from tests.upstream.serving import desired_replicas, picker_flags, rendered_inference_pool
from tests.upstream.tenancy import Endpoint, build_world, connection_refusals, team_pod
from tools import REPO_ROOT

RELEASE = "kubernetes:helm.sh/v3:Release"
POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
UPSTREAM = json.loads((REPO_ROOT / "tests" / "fixtures" / "serving" / "upstream-names.json").read_text())
PREFIX = "aks-gpu-platform:"

DEV_MODELS = [
    {
        "name": "qwen-small",
        "weights": {"huggingFace": "Qwen/Qwen2.5-0.5B-Instruct"},
        "pool": "gput4",
        "dtype": "float16",
        "maxModelLen": 8192,
        "minReplicas": 1,
        "maxReplicas": 2,
        "teams": ["ml"],
        "slo": {"timeToFirstTokenP90Seconds": 2},
    }
]
REVISION = "0123456789abcdef0123456789abcdef01234567"
PROD_MODELS = [
    {
        "name": "llama-8b",
        "weights": {"huggingFace": "meta-llama/Llama-3.1-8B-Instruct", "revision": REVISION, "tokenSecret": True},
        "pool": "h100z1",
        "maxModelLen": 16384,
        "minReplicas": 1,
        "maxReplicas": 4,
        "teams": ["llm"],
        "slo": {"timeToFirstTokenP90Seconds": 1.5},
    },
    {
        "name": "qwen-1-5b",
        "weights": {"huggingFace": "Qwen/Qwen2.5-1.5B-Instruct", "revision": REVISION},
        "pool": "h100z2",
        "maxModelLen": 8192,
        "minReplicas": 1,
        "maxReplicas": 2,
        "teams": ["vision"],
        "slo": {"timeToFirstTokenP90Seconds": 1},
    },
    {
        "name": "llama-70b",
        "weights": {"huggingFace": "meta-llama/Llama-3.1-70B-Instruct", "revision": REVISION, "tokenSecret": True},
        "pool": "h100z3",
        "tensorParallel": 8,
        "nodes": 2,
        "maxModelLen": 32768,
        "minReplicas": 1,
        "maxReplicas": 2,
        "teams": ["llm"],
        "slo": {"timeToFirstTokenP90Seconds": 5},
    },
]


def _with_models(stack: str, models: list[dict[str, Any]]) -> dict[str, Any]:
    config = copy.deepcopy(load_stack_file(stack, REPO_ROOT))
    config[PREFIX + "inference"] = {"models": models}
    if any(m["weights"].get("tokenSecret") for m in models):
        config[PREFIX + "huggingFaceToken"] = {"secure": "placeholder"}
    return config


ZERO_MODEL = {**DEV_MODELS[0], "minReplicas": 0, "scaleToZero": True, "slo": {"timeToFirstTokenP90Seconds": 45}}


def _prod_with_models() -> dict[str, Any]:
    config = _with_models("prod", PROD_MODELS)
    # Room on h100z3 for the multi-node model's kept-up group (16 GPUs) beside the teams' quotas there.
    for pool in config[PREFIX + "gpuPools"]:
        if pool["name"] == "h100z3":
            pool["maxCount"] = 6
    return config


@pytest.fixture(scope="module")
def served() -> dict[str, Recording]:
    return {
        "dev": run_stack("dev", _with_models("dev", DEV_MODELS)),
        "prod": run_stack("prod", _prod_with_models()),
    }


@pytest.fixture(scope="module")
def zero() -> Recording:
    return run_stack("dev", _with_models("dev", [ZERO_MODEL]))


def _objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


def _pool_releases(recording: Recording) -> list[Any]:
    return [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == POOL_CHART]


def _infiniband(stack: str) -> set[str]:
    pools = load_stack_file(stack, REPO_ROOT)[PREFIX + "gpuPools"]
    return {p["name"] for p in pools if p.get("infiniband")}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_gateway_routes_and_groups_validate_against_the_pinned_crds(served: dict[str, Recording], stack: str) -> None:
    recording = served[stack]
    checked = {
        "Gateway": "gateways-v1.5.1.json",
        "HTTPRoute": "httproutes-v1.5.1.json",
        "LeaderWorkerSet": "leaderworkersets-v0.10.0.json",
    }
    seen = 0
    for kind, crd in checked.items():
        for obj in _objects(recording, kind):
            seen += 1
            assert crd_problems(obj, crd) == [], (
                f"{kind} {obj['metadata']['name']} breaks the pinned CRD {crd}: the API server refuses or prunes it"
            )
    assert seen >= 2, "the gateway and at least one route must exist for the checks to mean anything"
    if stack == "prod":
        (group,) = _objects(recording, "LeaderWorkerSet")
        assert group["spec"]["leaderWorkerTemplate"]["size"] == 2, "llama-70b spans two nodes: one group of two pods"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_chart_renders_inference_pools_the_crd_admits(served: dict[str, Recording], stack: str) -> None:
    releases = _pool_releases(served[stack])
    assert releases, "each model gets an inferencepool release"
    for release in releases:
        pool = rendered_inference_pool(
            str(release.inputs["name"]), str(release.inputs["namespace"]), release.inputs.get("values") or {}
        )
        assert crd_problems(pool, "inferencepools-v1.6.0.yaml") == [], (
            f"{release.name}: the InferencePool the chart renders from our values fails the v1.6.0 CRD (CEL "
            "included): the release fails and the model gets no routing"
        )


def test_the_crd_check_refuses_what_the_api_server_refuses() -> None:
    pool = rendered_inference_pool("m", "models", {"inferencePool": {"modelServers": {"matchLabels": {"a": "b"}}}})
    pool["spec"]["targetPorts"] = [{"number": 8000}, {"number": 8000}]
    assert any("port number must be unique" in p for p in crd_problems(pool, "inferencepools-v1.6.0.yaml")), (
        "the InferencePool CEL rule on targetPorts must be evaluated, or a CEL-breaking pool would pass the check"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_route_reaches_its_pool_on_its_teams_listeners_only(served: dict[str, Recording], stack: str) -> None:
    recording = served[stack]
    (gateway,) = _objects(recording, "Gateway")
    listeners = {lst["name"]: lst for lst in gateway["spec"]["listeners"]}
    pools = {(str(r.inputs["namespace"]), str(r.inputs["name"])) for r in _pool_releases(recording)}
    models = {m["name"]: m for m in (DEV_MODELS if stack == "dev" else PROD_MODELS)}
    for route in _objects(recording, "HTTPRoute"):
        ns, name = route["metadata"]["namespace"], route["metadata"]["name"]
        backends = [b for rule in route["spec"]["rules"] for b in rule["backendRefs"]]
        assert all(b["kind"] == "InferencePool" and (ns, b["name"]) in pools for b in backends), (
            f"route {name} must send to an InferencePool a release renders in its own namespace (no ReferenceGrant)"
        )
        sections = {p["sectionName"] for p in route["spec"]["parentRefs"]}
        assert sections == {f"team-{t}" for t in models[name]["teams"]}, (
            f"route {name} attaches to {sections}: only its teams' listeners may carry it (team-scoped access)"
        )
        for section in sections:
            allowed = listeners[section]["allowedRoutes"]["namespaces"]["selector"]["matchLabels"]
            assert allowed == {"kubernetes.io/metadata.name": ns}, (
                f"listener {section} must admit routes from {ns}, or the route is never attached"
            )
    internal = gateway["spec"]["infrastructure"]["annotations"]
    assert internal == {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}, (
        "gatewayInternal defaults to true: istiod copies this onto the Service so Azure gives it a private address"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_picker_flags_and_the_metrics_it_reads_exist_at_the_pinned_versions(
    served: dict[str, Recording], stack: str
) -> None:
    epp = UPSTREAM["epp"]
    for release in _pool_releases(served[stack]):
        flags = picker_flags(release.inputs.get("values") or {})
        unknown = [f for f in flags if f not in epp["flags"]]
        assert unknown == [], f"{release.name}: the picker v1.5.0 has no flag {unknown}: it exits at start"
        refused = [f for f in flags if f in epp["deprecated_errors"]]
        assert refused == [], f"{release.name}: {refused} make the v1.5.0 picker's Validate() fail"
    exposed = UPSTREAM["vllm"]["metrics"]
    missing = [m for m in epp["vllm_engine_metrics"] if m not in exposed]
    assert missing == [], f"the picker reads {missing}, which vLLM 0.34.0 does not expose: it would route blind"


def _stored_names() -> set[str]:
    names: set[str] = set()
    for name, fact in UPSTREAM["vllm"]["metrics"].items():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"], "gauge": [""]}[fact["type"]]
        names |= {name + s for s in suffixes}
    return names


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_serving_query_reads_series_vllm_exposes(served: dict[str, Recording], stack: str) -> None:
    stored = _stored_names()
    queries = [
        trigger["metadata"]["query"]
        for obj in _objects(served[stack], "ScaledObject")
        if obj["metadata"]["namespace"] == "models"
        for trigger in obj["spec"]["triggers"]
    ]
    queries += [q for q, _ in panel_queries("models", "m").values()]
    queries.append(slo_alert("models", "m", 1.0)[1])
    for query in queries:
        for selector in selectors(query):
            if selector.metric and selector.metric.startswith("vllm:"):
                assert selector.metric in stored, f"{query}: vLLM 0.34.0 stores no {selector.metric}"


EXPOSITION = """\
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="{model}"}} {waiting}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="{model}"}} {kv}
"""


def _scraped(recording: Recording, model: str, replicas: list[tuple[float, float]]) -> list[Any]:
    (monitor,) = [m for m in _objects(recording, "PodMonitor") if m["metadata"]["name"] == f"vllm-{model}"]
    (deployment,) = [d for d in _objects(recording, "Deployment") if d["metadata"]["name"] == model]
    template = deployment["spec"]["template"]
    ports = tuple(Port(p["name"], p["containerPort"]) for p in template["spec"]["containers"][0]["ports"])
    series = []
    for i, (waiting, kv) in enumerate(replicas):
        pod = Pod(
            "models",
            f"{model}-7d9f-{i}",
            template["metadata"]["labels"],
            f"node{i}",
            f"10.0.0.{i + 10}",
            (Container("vllm", ports),),
        )
        (config,) = pod_monitor_scrape_configs(monitor)
        (target,) = targets(config, [pod])
        text = EXPOSITION.format(model=model, waiting=waiting, kv=kv)
        series += scrape(target, config, text, {"cluster": "aks"}).series
    return series


@pytest.mark.parametrize(
    ("stack", "model", "replicas", "expected", "why"),
    [
        ("dev", "qwen-small", [(1, 0.4), (2, 0.5)], 2, "3 waiting on 2 replicas: 1.5 each, under the target of 2"),
        ("dev", "qwen-small", [(4, 0.5), (5, 0.6)], 2, "9 waiting wants 5 replicas, capped at maxReplicas 2"),
        ("dev", "qwen-small", [(0, 0.1), (0, 0.1)], 1, "nothing waiting, a cold KV cache: back to minReplicas 1"),
        ("prod", "llama-8b", [(2, 0.5), (3, 0.5)], 3, "5 waiting at 2 per replica wants 3 replicas, not 5"),
        ("prod", "llama-8b", [(0, 0.9), (0, 1.0)], 3, "no queue but the KV cache at 95 % of 80 % target: 3"),
    ],
)
def test_keda_queries_match_the_scraped_series_and_give_the_right_replicas(
    served: dict[str, Recording], stack: str, model: str, replicas: list[tuple[float, float]], expected: int, why: str
) -> None:
    recording = served[stack]
    series = _scraped(recording, model, replicas)
    (scaled,) = [s for s in _objects(recording, "ScaledObject") if s["metadata"]["name"] == f"{model}-serving"]
    triggers = []
    for trigger in scaled["spec"]["triggers"]:
        result = Evaluator(series).vector(trigger["metadata"]["query"])
        assert len(result) == 1, (
            f"{trigger['metadata']['query']} must return exactly one series from the scraped vLLM pods (KEDA errors "
            f"on several and reads none as 0): got {result}"
        )
        triggers.append((trigger["metricType"], result[0].value, float(trigger["metadata"]["threshold"])))
    spec = scaled["spec"]
    got = desired_replicas(triggers, len(replicas), spec["minReplicaCount"], spec["maxReplicaCount"])
    assert got == expected, f"{why}; the HPA would set {got}"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_serving_pods_fit_pass_pod_security_and_their_pools_scale_from_zero(
    served: dict[str, Recording], stack: str
) -> None:
    recording = served[stack]
    check = scheduling_check(recording, _infiniband(stack))
    ours = [p for p in check.problems() if any(k in p for k in ("serving", "models", "istio", "lws", "epp"))]
    assert ours == [], f"serving pods that never run where they must: {ours}"
    zero = [p for p in scale_from_zero_problems(recording, _infiniband(stack)) if "serving" in p]
    assert zero == [], f"a model's pool at zero never scales up for its servers: {zero}"
    namespaces = {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in _objects(recording, "Namespace")}
    level = enforced_level(namespaces["models"])
    pods = [
        p for p in check.pods if "serving" in p.source and ("Deployment" in p.source or "LeaderWorkerSet" in p.source)
    ]
    assert pods, "the model servers' pod templates must be seen"
    for pod in pods:
        assert violations(level, pod.spec) == [], f"{pod.source}: refused at the models namespace's level {level}"
        if "Deployment" in pod.source:
            assert violations("restricted", pod.spec) == [], f"{pod.source}: single-node servers meet restricted"
    epp = [p for p in check.pods if "endpoint picker" in p.source]
    assert epp and all(violations(level, {"containers": [{"name": "epp"}], **p.spec}) == [] for p in epp), (
        "the picker the chart renders has no securityContext: the models namespace must admit it"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_serving_releases_can_finish(served: dict[str, Recording], stack: str) -> None:
    ours = [p for p in release_problems(served[stack], "") if "serving" in p]
    assert ours == [], f"a serving release would fail its first `pulumi up`: {ours}"


def _group_becomes_ready(group: dict[str, Any]) -> bool:
    """Start one LeaderWorkerSet group as LWS v0.10.0 does (pkg/controllers/pod_controller.go: with startupPolicy
    LeaderReady the workers' StatefulSet is created only once the leader pod is Ready; LeaderCreated, the CRD's
    default, creates it at once) with vLLM 0.34.0's multi-node start (vllm/v1/executor/multiproc_executor.py: the
    node-rank-0 engine waits for every remote worker's queue before the API server, hence /health, comes up)."""
    template = group["spec"]["leaderWorkerTemplate"]
    leader_args = [a for c in template["leaderTemplate"]["spec"]["containers"] for a in c.get("args", [])]
    waits_for_workers = "--nnodes" in leader_args and template["size"] > 1
    leader_ready, workers_exist = False, False
    for _ in range(3):  # until nothing changes
        workers_exist = (
            workers_exist or group["spec"].get("startupPolicy", "LeaderCreated") != "LeaderReady" or leader_ready
        )
        leader_ready = workers_exist or not waits_for_workers
    return leader_ready


def test_a_multi_node_group_starts(served: dict[str, Recording]) -> None:
    (group,) = _objects(served["prod"], "LeaderWorkerSet")
    assert _group_becomes_ready(group), (
        f"{group['metadata']['name']}: the leader waits for its workers and the workers wait for the leader to be "
        "Ready: the group never serves"
    )


def _group_pods(recording: Recording) -> dict[str, dict[str, Any]]:
    (group,) = _objects(recording, "LeaderWorkerSet")
    template = group["spec"]["leaderWorkerTemplate"]
    return {"leader": template["leaderTemplate"]["spec"], "worker": template["workerTemplate"]["spec"]}


def _runs_as(spec: dict[str, Any], container: dict[str, Any]) -> int | None:
    return (container.get("securityContext") or {}).get(
        "runAsUser", (spec.get("securityContext") or {}).get("runAsUser")
    )


def test_a_multi_node_group_talks_over_infiniband(served: dict[str, Recording]) -> None:
    """Every pod of a group holds the RDMA device, may pin memory for the verbs (IPC_LOCK, which only a root process
    holds: Kubernetes sets no ambient capabilities) and gives NCCL the settings the GPU checks' all-reduce uses."""
    for role, spec in _group_pods(served["prod"]).items():
        (vllm,) = spec["containers"]
        resources = vllm["resources"]
        assert resources["requests"].get(RDMA_RESOURCE) == resources["limits"].get(RDMA_RESOURCE) == "1", (
            f"{role}: without {RDMA_RESOURCE} the pod gets no InfiniBand device and NCCL falls back to TCP"
        )
        added = vllm["securityContext"].get("capabilities", {}).get("add", [])
        assert added == ["IPC_LOCK"], f"{role}: NCCL pins memory for RDMA; IPC_LOCK must be its one capability"
        assert _runs_as(spec, vllm) == 0, f"{role}: a non-root process gets no effective IPC_LOCK"
        env = {e["name"]: e.get("value") for e in vllm["env"]}
        assert env.get("NCCL_SOCKET_IFNAME") == "eth0" and env.get("NCCL_IB_PCI_RELAXED_ORDERING") == "1", (
            f"{role}: NCCL's bootstrap interface and the ND sizes' relaxed ordering: {env}"
        )
    single = [d for d in _objects(served["prod"], "Deployment") if d["metadata"]["namespace"] == "models"]
    assert single and all(
        RDMA_RESOURCE not in d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] for d in single
    ), "a single-node model needs no fabric and keeps its non-root, capability-free pods"


def test_the_models_namespace_admits_a_multi_node_group_and_nothing_more(served: dict[str, Recording]) -> None:
    """Kubernetes' baseline refuses IPC_LOCK: the namespace enforces `privileged` and Azure Policy's baseline with
    IPC_LOCK allowed (Deny) covers it, as it does an InfiniBand team's namespace."""
    recording = served["prod"]
    namespaces = {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in _objects(recording, "Namespace")}
    level = enforced_level(namespaces["models"])
    found = assignments(recording)
    for role, spec in _group_pods(recording).items():
        assert violations(level, spec) == [], f"{role}: Pod Security {level} refuses the group's pod"
        verdict = admission(found, "models", spec)
        assert verdict.denied == [], f"{role}: Azure Policy refuses the group's pod: {verdict.denied}"
        (vllm,) = spec["containers"]
        privileged = {
            **spec,
            "containers": [{**vllm, "securityContext": {**vllm["securityContext"], "privileged": True}}],
        }
        assert admission(found, "models", privileged).denied, (
            "the models namespace must stay under the RDMA baseline: a privileged container there must be denied"
        )
        other = {
            **spec,
            "containers": [
                {**vllm, "securityContext": {**vllm["securityContext"], "capabilities": {"add": ["SYS_ADMIN"]}}}
            ],
        }
        assert admission(found, "models", other).denied, "IPC_LOCK is the one capability beyond the baseline"


# vLLM 0.34.0 for a checkpoint without a quantization config (vllm/model_executor/model_loader/weight_utils.py
# get_quant_config): the online shorthands (vllm/config/quantization.py _ONLINE_SHORTHANDS, listed in
# vllm/model_executor/layers/quantization/__init__.py) quantise at load; bare `fp8` still does, with a deprecation
# warning naming fp8_per_tensor, and any other method looks for a quantization config the Hub checkpoint lacks.
VLLM_ONLINE_QUANTIZATION = {"fp8_per_tensor", "fp8_per_block", "fp8_per_channel", "mxfp8"}


def test_fp8_models_ask_vllm_for_a_supported_online_quantisation() -> None:
    config = _prod_with_models()
    config[PREFIX + "inference"]["models"][0]["dtype"] = "fp8"
    servers = [d for d in _objects(run_stack("prod", config), "Deployment") if d["metadata"]["name"] == "llama-8b"]
    (args,) = [c["args"] for d in servers for c in d["spec"]["template"]["spec"]["containers"]]
    method = args[args.index("--quantization") + 1]
    assert method in VLLM_ONLINE_QUANTIZATION, (
        f"--quantization {method}: the 16-bit Hub checkpoint needs one of vLLM 0.34.0's online schemes "
        f"{sorted(VLLM_ONLINE_QUANTIZATION)}; a deprecated alias disappears on the next vLLM"
    )


PULUMI_DEPLOYMENT_AWAIT_DEFAULT = 600
"""pulumi-kubernetes waits 10 minutes for a Deployment unless `pulumi.com/timeoutSeconds` says otherwise
(provider/pkg/await/deployment.go DefaultDeploymentTimeoutMins, provider/pkg/metadata/overrides.go)."""


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_pulumi_waits_as_long_as_a_new_replica_may_take_to_be_ready(served: dict[str, Recording], stack: str) -> None:
    pools = {p["name"]: p for p in load_stack_file(stack, REPO_ROOT)[PREFIX + "gpuPools"]}
    servers = [d for d in _objects(served[stack], "Deployment") if d["metadata"]["namespace"] == "models"]
    assert servers, "the single-node models' Deployments must be seen"
    for deployment in servers:
        pod = deployment["spec"]["template"]["spec"]
        pool = pools[pod["nodeSelector"]["gpu-pool"]]
        (server,) = [c for c in pod["containers"] if c.get("startupProbe")]
        probe = server["startupProbe"]
        # The pod's own allowance after it starts, plus a node of its pool from zero (the slowest published figure).
        node = node_provisioning(GPU_SKUS[pool["vmSize"]].family).high_s or 0
        needed = probe["periodSeconds"] * probe["failureThreshold"] + node
        waits = int(
            (deployment["metadata"].get("annotations") or {}).get(
                "pulumi.com/timeoutSeconds", PULUMI_DEPLOYMENT_AWAIT_DEFAULT
            )
        )
        assert waits >= needed, (
            f"{deployment['metadata']['name']}: pulumi up gives up after {waits} s, but a replica on a new "
            f"{pool['vmSize']} node may take {needed:.0f} s (node + startup probe) to be ready: the first deploy fails"
        )


def test_a_team_reaches_only_the_models_it_may_call(served: dict[str, Recording]) -> None:
    recording = served["prod"]
    world = build_world(recording, {"llm": ("team-llm", {"g-llm"}), "vision": ("team-vision", {"g-vision"})})
    (gateway,) = _objects(recording, "Gateway")
    ports = {lst["name"]: lst["port"] for lst in gateway["spec"]["listeners"]}

    def listener(team: str) -> Endpoint:
        return Endpoint(
            "pod", ports[f"team-{team}"], namespace=GATEWAY_NAMESPACE, labels=((GATEWAY_POD_LABEL, GATEWAY_NAME),)
        )

    for team, namespace in (("llm", "team-llm"), ("vision", "team-vision")):
        assert connection_refusals(world, team_pod(namespace), listener(team)) == [], (
            f"a pod of team {team} must reach its own listener, or it cannot call the models it is allowed"
        )
    refused = connection_refusals(world, team_pod("team-vision"), listener("llm"))
    assert f"NetworkPolicy {GATEWAY_NAMESPACE}/team-listeners" in refused, (
        f"the gateway's own policy must refuse team vision on the llm listener (got {refused}): a team's egress "
        "policy is the team's to keep, the gateway must not rely on it"
    )
    server = Endpoint("pod", 8000, namespace="models", labels=(("app.kubernetes.io/name", "vllm"),))
    direct = connection_refusals(world, team_pod("team-vision"), server)
    assert any(r.startswith("NetworkPolicy models/") for r in direct), (
        f"the models namespace's own policies must refuse a team pod calling a model server directly, bypassing "
        f"the gateway's per-team listeners (got {direct})"
    )


PICKER_EXPOSITION = """\
# TYPE inference_extension_flow_control_queue_size gauge
inference_extension_flow_control_queue_size{{fairness_id="",inference_pool="{pool}",model_name="{pool}",\
priority="0",target_model_name="{pool}"}} {held}
"""


@pytest.mark.parametrize(("held", "wakes"), [(0, False), (1, True)])
def test_a_model_at_zero_wakes_on_the_first_request_the_picker_holds(zero: Recording, held: int, wakes: bool) -> None:
    (release,) = _pool_releases(zero)
    values = release.inputs["values"]
    picker = values["inferenceExtension"]
    config = yaml.safe_load(picker["pluginsCustomConfig"][picker["pluginsConfigFile"]])
    assert "flowControl" in config.get("featureGates", []), (
        "without the picker's flow control a request to a model at zero gets 503 at once instead of waiting"
    )
    assert "metrics-endpoint-auth" in picker_flags(values), (
        "managed Prometheus presents no token: the picker's metrics must be open to the scrape"
    )
    (monitor,) = [m for m in _objects(zero, "PodMonitor") if m["metadata"]["name"] == "epp-qwen-small"]
    pod = Pod(
        "models",
        "qwen-small-epp-5c6d-x",
        {"inferencepool": "qwen-small-epp"},
        "cpu0",
        "10.0.1.5",
        (Container("epp", (Port("grpc", 9002), Port("grpc-health", 9003), Port("metrics", 9090))),),
    )
    (scrape_config,) = pod_monitor_scrape_configs(monitor)
    (target,) = targets(scrape_config, [pod])
    series = scrape(target, scrape_config, PICKER_EXPOSITION.format(pool="qwen-small", held=held), {}).series
    (scaled,) = [s for s in _objects(zero, "ScaledObject") if s["metadata"]["name"] == "qwen-small-serving"]
    assert scaled["spec"]["minReplicaCount"] == 0, "scaleToZero with minReplicas 0 lets KEDA park the model at zero"
    (trigger,) = [t for t in scaled["spec"]["triggers"] if t["name"] == "held-requests"]
    (value,) = Evaluator(series).vector(trigger["metadata"]["query"])
    # KEDA activates a ScaledObject at zero when a trigger's value exceeds its activationThreshold.
    active = value.value > float(trigger["metadata"].get("activationThreshold", "0"))
    assert active is wakes, f"{held} held request(s): the model must {'wake' if wakes else 'stay at zero'}"


def test_the_documented_call_reaches_the_dev_model(dev_recording: Recording) -> None:
    """examples/llm-serving/chat-job.yaml (the call docs/for-ml-teams.md shows) against the dev stack's objects."""
    job = yaml.safe_load((REPO_ROOT / "examples" / "llm-serving" / "chat-job.yaml").read_text())
    (url,) = [a for a in job["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("http://")]
    body = json.loads(job["spec"]["template"]["spec"]["containers"][0]["args"][-1])
    match = re.fullmatch(r"http://([^/:]+):(\d+)(/[^/]+)(/v1/chat/completions)", url)
    assert match, f"{url}: the documented call must name the gateway, a port, the model prefix and the API path"
    host, port, prefix, _ = match.groups()
    assert host == f"{GATEWAY_SERVICE}.{GATEWAY_NAMESPACE}.svc.cluster.local", "the Service istiod creates"
    (gateway,) = _objects(dev_recording, "Gateway")
    listeners = {lst["port"]: lst["name"] for lst in gateway["spec"]["listeners"]}
    namespace = job["metadata"]["namespace"]
    assert int(port) in listeners, f"port {port} is no listener of the gateway: {listeners}"
    routes = [
        r
        for r in _objects(dev_recording, "HTTPRoute")
        if listeners[int(port)] in {p["sectionName"] for p in r["spec"]["parentRefs"]}
        and any(m["path"]["value"] == prefix for rule in r["spec"]["rules"] for m in rule["matches"])
    ]
    assert routes, f"no route on listener {listeners[int(port)]} matches {prefix}: the call gets 404"
    assert body["model"] == routes[0]["metadata"]["name"], "vLLM answers only its --served-model-name"
    world = build_world(dev_recording, {"ml": (namespace, {"g-ml"})})
    gateway_pod = Endpoint("pod", int(port), namespace=GATEWAY_NAMESPACE, labels=((GATEWAY_POD_LABEL, GATEWAY_NAME),))
    assert connection_refusals(world, team_pod(namespace), gateway_pod) == [], (
        f"a pod in {namespace} must reach its team's listener {port}"
    )


TTFT_BUCKETS = (0.25, 0.5, 1.0, 2.5, 5.0)  # a subset of vLLM 0.34.0's TTFT buckets (vllm/v1/metrics/buckets.py)
EPP_METRICS = UPSTREAM["epp_metrics"]["metrics"]
HOLD = "inference_extension_flow_control_request_queue_duration_seconds"
SCHEDULING = "inference_extension_scheduler_e2e_duration_seconds"


def _counting(series: list[Any], share_at_or_below: dict[float, float]) -> list[History]:
    """Bucket counters of 10 requests/s for 10 minutes, the given share at or below each bucket bound."""
    histories = []
    for sample in series:
        le = sample.labels["le"]
        share = 1.0 if le == "+Inf" else share_at_or_below[float(le)]
        history = History(sample.labels)
        for at in range(0, 615, 15):
            history.extend(at, 15, 1, 10.0 * share * at)
        histories.append(history)
    return histories


def _ttft_histories(recording: Recording, model: str, share_at_or_below: dict[float, float]) -> list[History]:
    """vLLM's TTFT buckets of one scraped replica, labels exactly as the scrape stores them."""
    (monitor,) = [m for m in _objects(recording, "PodMonitor") if m["metadata"]["name"] == f"vllm-{model}"]
    (deployment,) = [d for d in _objects(recording, "Deployment") if d["metadata"]["name"] == model]
    template = deployment["spec"]["template"]
    ports = tuple(Port(p["name"], p["containerPort"]) for p in template["spec"]["containers"][0]["ports"])
    pod = Pod(
        "models", f"{model}-7d9f-0", template["metadata"]["labels"], "node0", "10.0.0.10", (Container("vllm", ports),)
    )
    (config,) = pod_monitor_scrape_configs(monitor)
    (target,) = targets(config, [pod])
    text = "".join(
        f'vllm:time_to_first_token_seconds_bucket{{engine="0",le="{le}",model_name="{model}"}} 0\n'
        for le in [*map(str, TTFT_BUCKETS), "+Inf"]
    )
    series = scrape(target, config, "# TYPE vllm:time_to_first_token_seconds histogram\n" + text, {}).series
    return _counting(series, share_at_or_below)


def _picker_histories(
    recording: Recording, model: str, metric: str, share_at_or_below: dict[float, float]
) -> list[Any]:
    """The picker's `metric` buckets (GAIE v1.5.0, labels as registered) scraped through the model's picker
    PodMonitor, as they would be stored; none when no PodMonitor scrapes the picker."""
    pod = Pod(
        "models",
        f"{model}-epp-5c6d8f-x2x9q",
        {"inferencepool": f"{model}-epp"},
        "cpu0",
        "10.0.1.5",
        (Container("epp", (Port("grpc", 9002), Port("grpc-health", 9003), Port("metrics", 9090))),),
    )
    values = {
        "fairness_id": "default-flow",
        "priority": "0",
        "outcome": "Dispatched",
        "inference_pool": model,
        "model_name": model,
        "target_model_name": model,
    }
    names = EPP_METRICS[metric]["labels"]
    labels = ",".join(f'{n}="{values[n]}"' for n in names)
    text = f"# TYPE {metric} histogram\n" + "".join(
        f'{metric}_bucket{{{labels}{"," if labels else ""}le="{le}"}} 0\n'
        for le in [*map(str, sorted(share_at_or_below)), "+Inf"]
    )
    series = []
    for monitor in _objects(recording, "PodMonitor"):
        for config in pod_monitor_scrape_configs(monitor):
            for target in targets(config, [pod]):
                series += scrape(target, config, text, {}).series
    return _counting(series, share_at_or_below)


FAST_SCHEDULING = dict.fromkeys(EPP_METRICS[SCHEDULING]["buckets"], 1.0)


def _slo_rule(recording: Recording, model: str) -> dict[str, Any]:
    (group,) = [
        g
        for g in recording.of_type("azure-native:alertsmanagement:PrometheusRuleGroup")
        if g.name.endswith(f"-{model}-slo")
    ]
    (rule,) = group.inputs["rules"]
    return rule


@pytest.mark.parametrize(
    ("shares", "fires"),
    [
        ({0.25: 0.5, 0.5: 0.7, 1.0: 0.8, 2.5: 1.0, 5.0: 1.0}, True),  # p95 ~2.5 s against the 1 s SLO
        ({0.25: 0.6, 0.5: 0.95, 1.0: 1.0, 2.5: 1.0, 5.0: 1.0}, False),  # p95 under 0.5 s
    ],
)
def test_the_slo_alert_fires_when_p90_time_to_first_token_exceeds_the_objective(
    served: dict[str, Recording], shares: dict[float, float], fires: bool
) -> None:
    recording = served["prod"]
    rule = _slo_rule(recording, "qwen-1-5b")
    assert rule["for"] == "PT10M", "the objective must be missed for 10 minutes before anyone is paged"
    histories = _ttft_histories(recording, "qwen-1-5b", shares)
    histories += _picker_histories(recording, "qwen-1-5b", SCHEDULING, FAST_SCHEDULING)
    evaluator = Evaluator(histories, at=600)
    fired = evaluator.vector(rule["expression"])
    assert evaluator.problems == [], (
        f"the SLO expression groups or matches labels the series lack: {evaluator.problems}"
    )
    assert bool(fired) is fires, f"p90 TTFT {'above' if fires else 'within'} the 1 s objective: fired={fired}"


FAST_TTFT = dict.fromkeys(TTFT_BUCKETS, 1.0)


@pytest.mark.parametrize(
    ("held_over_30s", "fires"),
    [(0.1, True), (0.0, False)],  # a tenth of the requests held over 30 s while the model wakes; none held
)
def test_time_held_in_the_picker_counts_against_the_slo(zero: Recording, held_over_30s: float, fires: bool) -> None:
    """A model at zero: the picker holds requests while it wakes. vLLM's own clock starts after that hold, so
    vLLM's TTFT alone stays within the SLO: the alert must read the hold too."""
    rule = _slo_rule(zero, "qwen-small")
    hold = {b: 1.0 - held_over_30s if b <= 30 else 1.0 for b in EPP_METRICS[HOLD]["buckets"]}
    histories = _ttft_histories(zero, "qwen-small", FAST_TTFT) + _picker_histories(zero, "qwen-small", HOLD, hold)
    evaluator = Evaluator(histories, at=600)
    assert not evaluator.vector(f"{ttft_quantile('models', 'qwen-small', 0.9)} > 45"), "vLLM alone sees no miss"
    fired = evaluator.vector(rule["expression"])
    assert evaluator.problems == [], f"the SLO expression matches labels the picker's series lack: {evaluator.problems}"
    assert bool(fired) is fires, f"{held_over_30s:.0%} of requests held over 30 s against a 45 s SLO: fired={fired}"


@pytest.mark.parametrize("stack", ["dev", "prod", "zero"])
def test_every_slo_reads_picker_series_that_exist_and_are_scraped(
    served: dict[str, Recording], zero: Recording, stack: str
) -> None:
    """Each picker series an SLO alert reads exists at GAIE v1.5.0 with the labels it matches on (or the scrape
    adds), and the model's picker PodMonitor stores it: an unscraped picker would leave the sum empty, silent."""
    recording = zero if stack == "zero" else served[stack]
    scrape_labels = {"namespace", "pod", "container", "job", "endpoint", "instance", "le"}
    models = [r["metadata"]["name"] for r in _objects(recording, "HTTPRoute")]
    assert models
    for model in models:
        expression = _slo_rule(recording, model)["expression"]
        read = [sel for sel in selectors(expression) if sel.metric and sel.metric.startswith("inference_")]
        assert read, f"{model}: the SLO must read the time its picker holds a request"
        for selector in read:
            assert selector.metric
            metric = selector.metric.removesuffix("_bucket")
            assert metric in EPP_METRICS, f"{model}: GAIE v1.5.0 registers no {metric}"
            unknown = {name for name, _, _ in selector.matchers} - set(EPP_METRICS[metric]["labels"]) - scrape_labels
            assert unknown == set(), f"{model}: {metric} has no label {unknown}"
            stored = _picker_histories(recording, model, metric, dict.fromkeys(EPP_METRICS[metric]["buckets"], 1.0))
            assert any(matches(h.labels, selector.matchers) for h in stored), (
                f"{model}: no PodMonitor stores {metric} as the SLO selects it ({selector.matchers})"
            )


def test_model_endpoints_output_names_each_teams_base_url(dev_recording: Recording) -> None:
    (gateway,) = _objects(dev_recording, "Gateway")
    ports = {lst["name"]: lst["port"] for lst in gateway["spec"]["listeners"]}
    endpoints = dev_recording.stack_outputs["modelEndpoints"]
    service = f"http://{GATEWAY_SERVICE}.{GATEWAY_NAMESPACE}.svc.cluster.local"
    assert endpoints == {
        route["metadata"]["name"]: {
            ref["sectionName"].removeprefix(
                "team-"
            ): f"{service}:{ports[ref['sectionName']]}/{route['metadata']['name']}/v1"
            for ref in route["spec"]["parentRefs"]
        }
        for route in _objects(dev_recording, "HTTPRoute")
    }, "each team's base URL must be the listener its route attaches to and the route's prefix"


def _scorers(release: Any) -> set[str]:
    """The scorers the picker's default scheduling profile weighs."""
    picker = release.inputs["values"]["inferenceExtension"]
    config = yaml.safe_load(picker["pluginsCustomConfig"][picker["pluginsConfigFile"]])
    (profile,) = config["schedulingProfiles"]
    return {plugin["pluginRef"] for plugin in profile["plugins"]}


def test_a_picker_scores_prefix_cache_only_where_the_servers_keep_one() -> None:
    shared = {**PROD_MODELS[1], "name": "qwen-shared", "teams": ["llm", "vision"], "minReplicas": 1}
    models = [
        {**shared, "name": "qwen-private"},
        {**shared, "sharedPrefixCache": True},
        {**shared, "name": "qwen-one-team", "teams": ["llm"]},
    ]
    recording = run_stack("prod", _with_models("prod", models))
    scorers = {r.inputs["name"]: _picker_scorers(r) for r in _pool_releases(recording)}
    assert scorers == {
        "qwen-private": {"queue-scorer", "kv-cache-utilization-scorer"},
        "qwen-shared": {"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"},
        "qwen-one-team": {"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"},
    }, "two teams without sharedPrefixCache: vLLM keeps no prefix cache for the picker to steer towards"


# The inferencepool chart's own scheduling profile when no custom config is set (epplib templates/_config.yaml at
# v1.5.0): the queue, KV-cache and prefix-cache scorers.
CHART_DEFAULT_SCORERS = {"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"}


def _picker_scorers(release: Any) -> set[str]:
    """The scorers a model's picker weighs: its custom config's, else the chart's default."""
    custom = release.inputs["values"]["inferenceExtension"].get("pluginsCustomConfig")
    return _scorers(release) if custom else CHART_DEFAULT_SCORERS


def test_a_kept_up_model_that_teams_share_scores_no_prefix_cache_either() -> None:
    """A model at one replica or more renders the chart's default config unless told otherwise: that default scores
    on a prefix cache vLLM no longer keeps for a model two teams share."""
    kept = {**PROD_MODELS[1], "name": "qwen-kept", "teams": ["llm", "vision"], "minReplicas": 1}
    recording = run_stack("prod", _with_models("prod", [kept]))
    (release,) = [r for r in _pool_releases(recording) if r.inputs["name"] == "qwen-kept"]
    scorers = _picker_scorers(release)
    assert "prefix-cache-scorer" not in scorers, f"qwen-kept's picker steers by a cache its servers lack: {scorers}"
