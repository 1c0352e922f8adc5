"""Contract: the serving namespaces reach only what they need (tests/upstream/tenancy.py evaluates NetworkPolicy
with Cilium's semantics, egress and ingress). A model server resolves names and downloads its weights and reaches
nothing else: not IMDS, not the WireServer, not another namespace's pods, not the VNet (a server streaming its
weights from Blob also reaches Entra ID and the account: tests/inference/test_blob_weights.py). Its picker and the
gateway reach their backends; the Hugging Face token is readable by no team and reaches only the vLLM container;
vLLM's usage statistics are off in every server container.

Stacks: dev and prod as written, and prod with a multi-node model that reads a gated checkpoint
(tests/inference/test_serving.py)."""

from __future__ import annotations

from typing import Any

import pytest

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.inference.test_serving import _prod_with_models  # pyright: ignore[reportPrivateUsage]
from tests.training.test_team_access import raw_teams
from tests.upstream.rbac import Request
from tests.upstream.tenancy import Endpoint, World, api_refusals, build_world, connection_refusals, team_pod
from tools import REPO_ROOT

MODELS = "models"
IMDS, WIRESERVER = "169.254.169.254", "168.63.129.16"
HUB = "3.163.189.10"
"""A public address, as huggingface.co and its CDN resolve to (CloudFront)."""
DNS = Endpoint("pod", 53, "UDP", "kube-system", (("k8s-app", "kube-dns"),))
DNS_OVER_TCP = Endpoint("pod", 53, "TCP", "kube-system", (("k8s-app", "kube-dns"),))
"""A truncated answer (over 512 bytes: many A records, DNSSEC) is asked again over TCP (RFC 7766)."""
SCRAPER = Endpoint("pod", 0, namespace="kube-system", labels=(("rsName", "ama-metrics"),))
# Istio 1.30.3 files/kube-gateway.yaml: the label on the gateway pods; istiod's chart labels its pods app=istiod.
GATEWAY = Endpoint(
    "pod", 0, namespace="inference-gateway", labels=(("gateway.networking.k8s.io/gateway-name", "inference-gateway"),)
)
ISTIOD = Endpoint("pod", 15012, namespace="istio-system", labels=(("app", "istiod"),))
STACKS = ("dev", "prod", "prod-multi-node")


def _config(name: str) -> dict[str, Any]:
    return _prod_with_models() if name == "prod-multi-node" else load_stack_file(name, REPO_ROOT)


@pytest.fixture(scope="module")
def worlds(recordings: dict[str, Recording]) -> dict[str, World]:
    found = {name: build_world(recordings[name], raw_teams(_config(name))) for name in ("dev", "prod")}
    multi = _config("prod-multi-node")
    return {**found, "prod-multi-node": build_world(run_stack("prod", multi), raw_teams(multi))}


@pytest.fixture(params=STACKS)
def w(request: pytest.FixtureRequest, worlds: dict[str, World]) -> World:
    return worlds[request.param]


def server_pods(w: World) -> dict[str, list[dict[str, Any]]]:
    """Model -> the pod templates of its servers (a Deployment's, or a LeaderWorkerSet's leader and worker)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for obj in w.objects:
        if obj["metadata"].get("namespace") != MODELS:
            continue
        if obj.get("kind") == "Deployment":
            found[obj["metadata"]["name"]] = [obj["spec"]["template"]]
        elif obj.get("kind") == "LeaderWorkerSet":
            template = obj["spec"]["leaderWorkerTemplate"]
            found[obj["metadata"]["name"]] = [template["leaderTemplate"], template["workerTemplate"]]
    return found


def pod_of(template: dict[str, Any], port: int = 0) -> Endpoint:
    return Endpoint("pod", port, namespace=MODELS, labels=tuple(sorted(template["metadata"]["labels"].items())))


def picker(model: str, port: int = 0) -> Endpoint:
    """The inferencepool chart's picker pod (epplib templates/_helpers.tpl at v1.5.0, InferencePool mode)."""
    return Endpoint("pod", port, namespace=MODELS, labels=(("inferencepool", f"{model[:40]}-epp"),))


def staging_pods(w: World) -> dict[str, dict[str, Any]]:
    """Model -> the pod template of its weights staging Job."""
    return {
        o["metadata"]["name"]: o["spec"]["template"]
        for o in w.objects
        if o["metadata"].get("namespace") == MODELS and o.get("kind") == "Job"
    }


def _refused_outside(w: World) -> list[tuple[str, Endpoint]]:
    """What no pod of the models namespace may reach, whatever its role."""
    return [
        ("IMDS", Endpoint("external", 80, address=IMDS)),
        ("the WireServer", Endpoint("external", 80, address=WIRESERVER)),
        ("the WireServer's host plugin", Endpoint("external", 32526, address=WIRESERVER)),
        ("plain HTTP on the internet", Endpoint("external", 80, address=HUB)),
        ("a team's pods", team_pod(next(iter(w.teams.values()))[0])),
        ("kube-system beside DNS", SCRAPER),
        ("the gateway", GATEWAY),
        ("istiod", ISTIOD),
        *((f"the private endpoint {name}", Endpoint("external", 443, address=a)) for name, a in w.private_endpoints),
        *((f"the file server {name}", Endpoint("external", 443, address=a)) for name, a in w.storage_servers),
    ]


def streamed(stack: str) -> set[str]:
    """The stack's models whose weights stream from Blob (tests/inference/test_blob_weights.py holds their egress)."""
    return {m["name"] for m in _config(stack)["aks-gpu-platform:inference"]["models"] if "blob" in m["weights"]}


def test_a_model_server_reaches_dns_and_nothing_outside_the_cluster(w: World, request: pytest.FixtureRequest) -> None:
    """The servers load the staged weights with the Hub offline: they hold the prompts and reach no host."""
    assert server_pods(w)
    for model, templates in server_pods(w).items():
        if model in streamed(request.node.callspec.params["w"]):
            continue
        for template in templates:
            source = pod_of(template)
            assert not connection_refusals(w, source, DNS), f"{model}: DNS"
            assert not connection_refusals(w, source, DNS_OVER_TCP), f"{model}: DNS over TCP"
            assert connection_refusals(w, source, Endpoint("external", 443, address=HUB)), f"{model} reaches the Hub"
            for why, to in _refused_outside(w):
                assert connection_refusals(w, source, to), f"{model} server reaches {why}"


def test_a_weights_staging_pod_reaches_dns_and_the_weights_source_and_nothing_else(w: World) -> None:
    assert staging_pods(w), "every Hub model stages its weights"
    for job, template in staging_pods(w).items():
        source = pod_of(template)
        assert not connection_refusals(w, source, DNS), f"{job}: DNS"
        assert not connection_refusals(w, source, DNS_OVER_TCP), f"{job}: DNS over TCP"
        assert not connection_refusals(w, source, Endpoint("external", 443, address=HUB)), f"{job}: the Hub"
        for why, to in _refused_outside(w):
            assert connection_refusals(w, source, to), f"{job} reaches {why}"


def test_a_multi_node_group_reaches_its_own_pods_only(w: World) -> None:
    groups = {m: t for m, t in server_pods(w).items() if len(t) > 1}
    singles = {m: t for m, t in server_pods(w).items() if len(t) == 1}
    for model, (leader, worker) in groups.items():
        for a, b in ((leader, worker), (worker, leader), (worker, worker)):
            assert not connection_refusals(w, pod_of(a, 29500), pod_of(b, 29500)), f"{model}: rendezvous"
        for other, (template,) in singles.items():
            assert connection_refusals(w, pod_of(worker), pod_of(template, 8000)), f"{model} worker -> {other}"


def test_pickers_and_the_gateway_reach_their_backends_and_nothing_more(w: World) -> None:
    servers = server_pods(w)
    for model, templates in servers.items():
        leader = pod_of(templates[0], 8000)
        assert not connection_refusals(w, picker(model), leader), f"{model}: its picker reads the server's metrics"
        assert not connection_refusals(w, picker(model), Endpoint("external", 443, address="20.200.0.10")), (
            f"{model}: its picker watches the (public) API server"
        )
        assert connection_refusals(w, picker(model), Endpoint("external", 80, address=IMDS)), f"{model} picker: IMDS"
        for other in servers:
            if other != model:
                assert connection_refusals(w, picker(model), pod_of(servers[other][0], 8000)), f"{model} -> {other}"
        assert not connection_refusals(w, GATEWAY, leader), f"gateway -> {model}"
        assert not connection_refusals(w, GATEWAY, picker(model, 9002)), f"gateway -> {model}'s picker"
        assert not connection_refusals(w, SCRAPER, leader), f"managed Prometheus scrapes {model}"
    assert not connection_refusals(w, GATEWAY, ISTIOD), "the gateway gets its configuration from istiod"
    assert not connection_refusals(w, GATEWAY, DNS)
    for why, to in (
        ("IMDS", Endpoint("external", 80, address=IMDS)),
        ("the WireServer", Endpoint("external", 80, address=WIRESERVER)),
        ("the internet", Endpoint("external", 443, address=HUB)),
        ("a team's pods", team_pod(next(iter(w.teams.values()))[0])),
    ):
        assert connection_refusals(w, GATEWAY, to), f"the gateway reaches {why}"


def test_the_hugging_face_token_is_read_by_no_team_and_only_by_the_weights_stage(w: World) -> None:
    for team, (_, groups) in w.teams.items():
        for verb in ("get", "list", "watch"):
            assert api_refusals(w, groups, Request(verb, "", "secrets", MODELS)), f"{team} may {verb} secrets"
    secrets = {o["metadata"]["name"] for o in w.of_kind("Secret", MODELS)}
    readers: set[str] = set()
    templates = [t for ts in server_pods(w).values() for t in ts] + list(staging_pods(w).values())
    for template in templates:
        spec = template["spec"]
        assert spec.get("automountServiceAccountToken") is False
        for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            for env in container.get("env") or []:
                if ((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") in secrets:
                    readers.add(container["name"])
        assert not [v for v in spec.get("volumes", []) if "secret" in v or "projected" in v]
    assert readers <= {"stage-weights"}, f"only the weights staging container reads the token: {readers}"


def test_vllm_usage_statistics_are_off_in_every_server_container(w: World) -> None:
    """vllm/usage/usage_lib.py at v0.34.0: off when VLLM_NO_USAGE_STATS, VLLM_DO_NOT_TRACK or DO_NOT_TRACK is
    "1" (vllm/envs.py compares the string)."""
    for model, templates in server_pods(w).items():
        for template in templates:
            for container in template["spec"]["containers"]:
                env = {e["name"]: e.get("value") for e in container.get("env") or []}
                assert "1" in (env.get("VLLM_NO_USAGE_STATS"), env.get("VLLM_DO_NOT_TRACK"), env.get("DO_NOT_TRACK")), (
                    f"{model}/{container['name']} reports usage to stats.vllm.ai"
                )


def test_without_the_serving_egress_policies_a_model_server_reaches_imds(worlds: dict[str, World]) -> None:
    """The rule that closes the hole: with the models namespace's egress policies gone, IMDS is reachable."""
    w = worlds["dev"].copy()
    _, (template,) = next(iter(server_pods(w).items()))
    imds = Endpoint("external", 80, address=IMDS)
    assert connection_refusals(w, pod_of(template), imds)
    w.objects = [
        o
        for o in w.objects
        if not (
            o.get("kind") == "NetworkPolicy"
            and o["metadata"].get("namespace") == MODELS
            and "Egress" in o["spec"]["policyTypes"]
        )
    ]
    assert not connection_refusals(w, pod_of(template), imds)
