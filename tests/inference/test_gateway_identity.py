"""Contract: a team calls the models that list it with a service account token of its namespace, audience
`inference-gateway` (docs/for-ml-teams.md, "Call a model"); nothing else gets through the gateway, and each rule
of the callers policies stops an attack on its own (tests/upstream/gateway_auth.py, Istio 1.30.3 semantics).
Per-team rate limits sit on each team's listener; a model shared by teams is flagged in the plan."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.plan.mock_values import MockValueMarker
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.report import build_report
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.training.test_team_access import raw_teams
from tests.upstream import engine_semantics as engine
from tests.upstream.engine_semantics import SCALE_OUT_PATHS
from tests.upstream.gateway_auth import (
    GatewayWorld,
    Request,
    Token,
    decide,
    deciding_rules,
    gateway_world,
    without_rule,
)
from tools import REPO_ROOT

AUDIENCE = "inference-gateway"
"""What docs/for-ml-teams.md tells a team to put in its projected token."""
GATEWAY = "inference-gateway"
STACKS = ("dev", "prod")


def issuer_of(recording: Recording) -> str:
    """The cluster's OIDC issuer: the `iss` of every service account token the cluster signs."""
    cluster = recording.one("azure-native:containerservice:ManagedCluster")
    return str(cluster.outputs["oidcIssuerProfile"]["issuerURL"])


def team_token(recording: Recording, namespace: str, account: str = "default", aud: str = AUDIENCE) -> Token:
    return Token(issuer_of(recording), (aud,), f"system:serviceaccount:{namespace}:{account}")


def team_ports(objects: list[dict[str, Any]], namespaces: dict[str, str]) -> dict[str, int]:
    """The gateway port each team's pods may reach (its namespace's egress policy to the gateway pods)."""
    ports: dict[str, int] = {}
    for team, namespace in namespaces.items():
        for policy in objects:
            if policy.get("kind") != "NetworkPolicy" or policy["metadata"].get("namespace") != namespace:
                continue
            for rule in policy["spec"].get("egress") or []:
                to_gateway = any(
                    (peer.get("namespaceSelector") or {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
                    == "inference-gateway"
                    for peer in rule.get("to") or []
                )
                if to_gateway:
                    ports[team] = int(rule["ports"][0]["port"])
    return ports


class Stack:
    def __init__(self, name: str, recording: Recording) -> None:
        self.name = name
        self.recording = recording
        config = load_stack_file(name, REPO_ROOT)
        self.models: dict[str, list[str]] = {
            m["name"]: list(m["teams"]) for m in config["aks-gpu-platform:inference"]["models"]
        }
        self.namespaces = {team: ns for team, (ns, _) in raw_teams(config).items()}
        self.objects = [kubernetes_object(r) for r in self.recording.kubernetes_objects()]
        self.world = gateway_world(self.objects, GATEWAY)
        self.ports = team_ports(self.objects, self.namespaces)

    def token(self, team: str, **kwargs: Any) -> Token:
        return team_token(self.recording, self.namespaces[team], **kwargs)

    def calls(self) -> Iterator[tuple[str, str]]:
        """(team, model) for each model and each team its config lists."""
        for model, teams in self.models.items():
            for team in teams:
                yield team, model


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording]) -> dict[str, Stack]:
    return {name: Stack(name, recordings[name]) for name in STACKS}


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    return stacks[request.param]


def test_each_team_calls_each_model_that_lists_it_with_its_token(stack: Stack) -> None:
    """The positive control: every (team, model) the config allows is served, by the model's own pool."""
    assert list(stack.calls())
    for team, model in stack.calls():
        for path in (f"/{model}/v1/chat/completions", f"/{model}/v1/models"):
            verdict = decide(stack.world, Request(stack.ports[team], path, stack.token(team, account="trainer")))
            assert (verdict.status, verdict.model) == (200, model), f"{team} -> {path}: {verdict}"


def test_no_caller_reaches_the_servers_scale_out_endpoints(stack: Stack) -> None:
    """A precisely routed model's servers answer render, generate and abort (the picker tokenises through render):
    the team's own token on its own model's listener reaches none of them, while its API stays served."""
    for team, model in stack.calls():
        token = stack.token(team, account="trainer")
        for path in SCALE_OUT_PATHS:
            verdict = decide(stack.world, Request(stack.ports[team], f"/{model}{path}", token))
            assert verdict.status == 403, f"{team} reaches {model}'s {path}: {verdict}"
        served = decide(stack.world, Request(stack.ports[team], f"/{model}/v1/completions", token))
        assert served.status == 200, f"{team} -> {model}: {served}"


def test_a_request_without_a_token_is_denied_on_every_listener(stack: Stack) -> None:
    for team, model in stack.calls():
        verdict = decide(stack.world, Request(stack.ports[team], f"/{model}/v1/completions"))
        assert verdict.status == 403, f"{team}'s listener serves {model} to a caller with no token: {verdict}"


def test_another_teams_token_on_a_teams_listener_is_denied(stack: Stack) -> None:
    """Whoever reaches a team's listener (its network policy aside) needs that team's identity."""
    teams = list(stack.namespaces)
    outsiders = [*teams, "kube-system"]
    for team, model in stack.calls():
        for other in outsiders:
            if other == team:
                continue
            namespace = stack.namespaces.get(other, other)
            token = team_token(stack.recording, namespace)
            verdict = decide(stack.world, Request(stack.ports[team], f"/{model}/v1/completions", token))
            assert verdict.status == 403, f"{namespace}'s token on {team}'s listener reached {model}: {verdict}"


def test_a_namespace_whose_name_extends_a_teams_is_not_that_team(stack: Stack) -> None:
    """`team-llm-x` is a namespace anyone with namespace rights may create: its service accounts' names start with
    team-llm's, so the team's identity must end at the namespace's colon."""
    for team, model in stack.calls():
        for suffix in ("-x", "x", "-system"):
            namespace = f"{stack.namespaces[team]}{suffix}"
            token = team_token(stack.recording, namespace)
            verdict = decide(stack.world, Request(stack.ports[team], f"/{model}/v1/completions", token))
            assert verdict.status == 403, f"{namespace}'s token passes as {team}'s and reaches {model}: {verdict}"


def test_a_team_cannot_call_a_model_whose_config_does_not_list_it(stacks: dict[str, Stack]) -> None:
    """prod: qwen-1-5b lists vision only; llm's own token on its own listener is refused, by the policy and the
    route each on its own."""
    prod = stacks["prod"]
    assert "llm" not in prod.models["qwen-1-5b"]
    request = Request(prod.ports["llm"], "/qwen-1-5b/v1/completions", prod.token("llm"))
    assert decide(prod.world, request).status in (403, 404)
    assert deciding_rules(prod.world, request) == ["AuthorizationPolicy inference-gateway/team-llm-callers #1"]
    # A route attached to every listener (a parentRef too many) leaves the policy alone to refuse it.
    widened = attach_routes_everywhere(prod.world)
    assert decide(widened, request).status == 403
    assert (
        decide(without_rule(widened, "AuthorizationPolicy inference-gateway/team-llm-callers #1"), request).status
        == 200
    )
    # A look-alike path is not the model the policy lets through.
    for path in ("/llama-3-1-8b-evil/v1/completions", "/llama-3-1-8bx", "/qwen-1-5b"):
        assert decide(widened, Request(prod.ports["llm"], path, prod.token("llm"))).status == 403, path


def attach_routes_everywhere(world: GatewayWorld) -> GatewayWorld:
    changed = world.copy()
    for route in changed.routes:
        for ref in route["spec"]["parentRefs"]:
            ref.pop("sectionName", None)
    return changed


def test_tokens_for_another_audience_or_from_another_issuer_are_rejected(stack: Stack) -> None:
    team, model = next(stack.calls())
    port, path = stack.ports[team], f"/{model}/v1/completions"
    namespace = stack.namespaces[team]
    for why, token in (
        (
            "the API server's audience (a default mounted token)",
            stack.token(team, aud="https://kubernetes.default.svc"),
        ),
        (
            "another cluster's issuer",
            Token("https://eastus.oic.prod-aks.azure.com/x/y/", (AUDIENCE,), f"system:serviceaccount:{namespace}:a"),
        ),
    ):
        assert decide(stack.world, Request(port, path, token)).status == 401, why


def test_removing_each_callers_rule_lets_its_attack_through(stack: Stack) -> None:
    """Rule #0 of a team's policy alone stops callers without the team's identity; with it gone, a request with
    no token is served."""
    for team, model in stack.calls():
        request = Request(stack.ports[team], f"/{model}/v1/completions")
        (rule,) = deciding_rules(stack.world, request)
        assert rule.endswith("#0"), rule
        assert decide(without_rule(stack.world, rule), request).status == 200
        whole_policy = rule.removesuffix(" #0")
        assert decide(without_rule(stack.world, whole_policy), request).status == 200


def test_without_request_authentication_no_team_gets_through(stack: Stack) -> None:
    """Unvalidated tokens carry no identity: the gateway fails closed, never open."""
    (authn,) = stack.world.authentications
    broken = without_rule(
        stack.world, f"RequestAuthentication {authn['metadata']['namespace']}/{authn['metadata']['name']}"
    )
    for team, model in stack.calls():
        assert decide(broken, Request(stack.ports[team], f"/{model}/v1/models", stack.token(team))).status == 403


def rate_limits(objects: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Listener port -> the local rate limit token bucket an EnvoyFilter on the gateway inserts there before the
    router of the HTTP connection manager."""
    found: dict[int, dict[str, Any]] = {}
    for f in objects:
        if f.get("kind") != "EnvoyFilter" or not any(r.get("name") == GATEWAY for r in f["spec"].get("targetRefs", [])):
            continue
        for patch in f["spec"]["configPatches"]:
            match, value = patch["match"], patch["patch"]["value"]
            sub = match["listener"]["filterChain"]["filter"]
            if (
                patch["applyTo"] == "HTTP_FILTER"
                and match["context"] == "GATEWAY"
                and sub["name"] == "envoy.filters.network.http_connection_manager"
                and sub["subFilter"]["name"] == "envoy.filters.http.router"
                and patch["patch"]["operation"] == "INSERT_BEFORE"
                and value["typed_config"]["@type"].endswith("local_ratelimit.v3.LocalRateLimit")
            ):
                found[int(match["listener"]["portNumber"])] = value["typed_config"]
    return found


def per_minute(bucket: dict[str, Any]) -> float:
    token_bucket = bucket["token_bucket"]
    seconds = float(token_bucket["fill_interval"].removesuffix("s"))
    enforced = bucket["filter_enforced"]["default_value"]["numerator"] == 100
    return token_bucket["tokens_per_fill"] * 60 / seconds if enforced else float("inf")


def test_every_team_listener_has_its_own_rate_limit_at_the_configured_rate(stack: Stack) -> None:
    limits = rate_limits(stack.objects)
    config = load_stack_file(stack.name, REPO_ROOT)
    configured = config["aks-gpu-platform:inference"].get("teamRequestsPerMinute", 600)
    for team, port in stack.ports.items():
        assert port in limits, f"{team}'s listener {port} has no rate limit"
        assert per_minute(limits[port]) == configured, team
        assert limits[port]["token_bucket"]["max_tokens"] <= configured, "a burst above a minute's budget"


def test_the_rate_limit_follows_the_configured_budget() -> None:
    config = load_stack_file("dev", REPO_ROOT)
    config["aks-gpu-platform:inference"]["teamRequestsPerMinute"] = 42
    recording = run_stack("dev", config)
    limits = rate_limits([kubernetes_object(r) for r in recording.kubernetes_objects()])
    assert limits and all(per_minute(bucket) == 42 for bucket in limits.values())


def plan_warnings(stack: Stack, tmp_path: Path) -> list[str]:
    config = load_stack_file(stack.name, REPO_ROOT)
    cfg = load_platform_config(settings_of(config))
    marker = MockValueMarker(stack.recording.mock_values)
    return build_report(stack.name, cfg, stack.recording, [], [], marker, tmp_path).warnings


def prefix_caching(recording: Recording) -> dict[str, bool]:
    """Served model -> whether its vLLM servers keep a prefix cache (tests/upstream/engine_semantics.py)."""
    found: dict[str, bool] = {}
    for manifest in (kubernetes_object(r) for r in recording.kubernetes_objects()):
        spec = manifest.get("spec") or {}
        if manifest.get("kind") == "Deployment":
            templates = [spec["template"]]
        elif manifest.get("kind") == "LeaderWorkerSet":
            templates = list(spec["leaderWorkerTemplate"].values())[-2:]
        else:
            continue
        for template in templates:
            for container in template["spec"]["containers"]:
                if container.get("command") == ["vllm", "serve"]:
                    args = container["args"]
                    found[str(engine.flag(args, "served-model-name"))] = engine.vllm_prefix_caching(args)
    return found


def test_no_team_shares_a_prefix_cache_with_another_unless_the_model_says_so(
    stacks: dict[str, Stack], tmp_path: Path
) -> None:
    for stack in stacks.values():
        caching = prefix_caching(stack.recording)
        assert set(caching) == set(stack.models), f"{stack.name}: every model's servers are seen"
        for model, teams in stack.models.items():
            assert caching[model] == (len(teams) == 1), (
                f"{stack.name} {model}: teams {teams}; with several, vLLM's prefix cache lets one time the others"
            )
        assert not [w for w in plan_warnings(stack, tmp_path) if "prefix cache" in w], "nothing shared, no warning"


def test_a_model_whose_teams_opt_to_share_its_prefix_cache_keeps_it_and_is_warned_of(tmp_path: Path) -> None:
    config = load_stack_file("prod", REPO_ROOT)
    models = config["aks-gpu-platform:inference"]["models"]
    (shared,) = [m for m in models if len(m["teams"]) > 1]
    shared["sharedPrefixCache"] = True
    recording = run_stack("prod", config)
    assert prefix_caching(recording)[shared["name"]], "the opt-in keeps vLLM's prefix cache"
    cfg = load_platform_config(settings_of(config))
    marker = MockValueMarker(recording.mock_values)
    warnings = build_report("prod", cfg, recording, [], [], marker, tmp_path).warnings
    warned = [w for w in warnings if "prefix cache" in w]
    assert len(warned) == 1 and shared["name"] in warned[0] and "llm, vision" in warned[0], warned


def test_the_documented_call_carries_a_token_the_gateway_admits(stacks: dict[str, Stack]) -> None:
    """examples/llm-serving/chat-job.yaml: the projected token its curl sends is the job's service account's, with
    the audience of the volume; the gateway serves the model the call names on the port it dials."""
    dev = stacks["dev"]
    job = yaml.safe_load((REPO_ROOT / "examples" / "llm-serving" / "chat-job.yaml").read_text())
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    (mount,) = container["volumeMounts"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    (source,) = volume["projected"]["sources"]
    token_file = f"{mount['mountPath']}/{source['serviceAccountToken']['path']}"
    # curl 8.x: `--variable name@file` reads the file, `--expand-header` puts it (trimmed) in the header.
    variable = args[args.index("--variable") + 1]
    assert variable == f"token@{token_file}"
    assert args[args.index("--expand-header") + 1] == "Authorization: Bearer {{token:trim}}"
    (url,) = [a for a in args if a.startswith("http://")]
    match = re.fullmatch(r"http://[^/:]+:(\d+)(/.*)", url)
    assert match, url
    port, path = match.groups()
    namespace = job["metadata"]["namespace"]
    account = pod.get("serviceAccountName", "default")
    token = Token(
        issuer_of(dev.recording),
        (source["serviceAccountToken"]["audience"],),
        f"system:serviceaccount:{namespace}:{account}",
    )
    verdict = decide(dev.world, Request(int(port), path, token))
    assert verdict.status == 200, verdict
    assert decide(dev.world, Request(int(port), path)).status == 403, "the same call without its token"
