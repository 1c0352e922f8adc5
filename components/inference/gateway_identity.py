"""Who calls the gateway: each team authenticates with a Kubernetes service account token of its own namespace,
is let through only on its own listener and only to the models that list it, and is rate-limited per team.

Why service account tokens and not mesh mTLS: team pods are not in the mesh (istiod only, no sidecars), so they
hold no mesh certificate; every pod can have a projected service account token. A team pod mounts one with the
audience TOKEN_AUDIENCE (docs/for-ml-teams.md, "Call a model") and sends it as `Authorization: Bearer`. The
audience keeps the token useless against the API server, and the API server's own tokens useless here.

Istio 1.30.3 (istio/api at tag 1.30.3):
- RequestAuthentication (security/v1beta1/request_authentication.proto): a JWT whose `iss` is not the cluster's
  OIDC issuer, or whose `aud` is not TOKEN_AUDIENCE, is rejected (401); the keys come from the issuer's OpenID
  discovery (no jwksUri). A request without a token passes with no identity, so the policies below require one.
  forwardOriginalToken is left false: the token is removed before the request reaches the model server.
- AuthorizationPolicy (security/v1beta1/authorization_policy.proto): DENY policies are evaluated before ALLOW and
  any match denies; a `*` at the end of a string is a prefix match; a request principal is `<iss>/<sub>`, and a
  service account token's `sub` is `system:serviceaccount:<namespace>:<name>`. Each team's listener gets one DENY
  policy with two rules (Istio's "DENY with negative match" pattern: what is not named is refused):
  #0 a caller that is not a service account of the team's namespace (no token included);
  #1 a path that is not one of the team's models.
- EnvoyFilter (networking/v1alpha3/envoy_filter.proto): targetRefs to the Gateway; on the team's listener port an
  `envoy.filters.http.local_ratelimit` token bucket before the router, so the team's requests share one bucket
  per gateway pod. Authorization runs first: refused requests spend no team's tokens.

vLLM's prefix cache: vLLM 0.34.0 isolates cached prefixes only by the request body's `cache_salt`
(vllm/entrypoints/openai/chat_completion/protocol.py and completion/protocol.py; no header is read). Setting a
JSON body field at the gateway needs a body-rewriting filter (ext_proc, Lua or Wasm) which this gateway does not
run, so a model of several teams runs with the prefix cache off (`--no-enable-prefix-caching`) unless its config
opts to share it (`sharedPrefixCache`), which the plan then warns of (`shared_prefix_cache_warnings`).
"""

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

TOKEN_AUDIENCE = "inference-gateway"
"""The `aud` a team's projected service account token must carry."""
SECURITY_API = "security.istio.io/v1"
NETWORKING_API = "networking.istio.io/v1alpha3"
RATE_LIMIT_FILTER = "envoy.filters.http.local_ratelimit"
RATE_LIMIT_TYPE = "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"


def gateway_target(gateway: str) -> list[dict[str, str]]:
    return [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway}]


def team_principal(issuer: str, namespace: str) -> str:
    """Every service account of the namespace, as Istio names a JWT's caller (`<iss>/<sub>`, prefix match)."""
    return f"{issuer}/system:serviceaccount:{namespace}:*"


def model_paths(models: Sequence[str]) -> list[str]:
    """The gateway paths of the models: `/<model>` and below it (the routes' PathPrefix), not `/<model>x`."""
    return [path for model in models for path in (f"/{model}", f"/{model}/*")]


def request_authentication(gateway: str, issuer: str) -> dict[str, object]:
    return {
        "targetRefs": gateway_target(gateway),
        "jwtRules": [{"issuer": issuer, "audiences": [TOKEN_AUDIENCE]}],
    }


# What `vllm serve --enable-scale-out` adds beside the OpenAI API (vLLM 0.34.0 vllm/entrypoints/scale_out/factories.py):
# the picker tokenises through render in the cluster; no caller reaches them, abort least of all. Istio matches a
# path by suffix when the pattern starts with `*`.
SCALE_OUT_PATH_SUFFIXES = ("*/render", "*/derender", "*/inference/v1/generate", "*/inference/v1/abort_requests")


def team_callers(gateway: str, issuer: str, namespace: str, port: int, models: Sequence[str]) -> dict[str, object]:
    """DENY on the team's listener: #0 any caller but the team's service accounts, #1 any path but its models, #2 the
    servers' scale-out paths."""
    on_port = {"operation": {"ports": [str(port)]}}
    return {
        "targetRefs": gateway_target(gateway),
        "action": "DENY",
        "rules": [
            {"from": [{"source": {"notRequestPrincipals": [team_principal(issuer, namespace)]}}], "to": [on_port]},
            {"to": [{"operation": {"ports": [str(port)], "notPaths": model_paths(models)}}]},
            {"to": [{"operation": {"ports": [str(port)], "paths": list(SCALE_OUT_PATH_SUFFIXES)}}]},
        ],
    }


def team_rate_limit(gateway: str, team: str, port: int, requests_per_minute: int) -> dict[str, object]:
    """A token bucket of `requests_per_minute` on the team's listener (each gateway pod holds its own)."""
    always = {"default_value": {"numerator": 100, "denominator": "HUNDRED"}}
    return {
        "targetRefs": gateway_target(gateway),
        "configPatches": [
            {
                "applyTo": "HTTP_FILTER",
                "match": {
                    "context": "GATEWAY",
                    "listener": {
                        "portNumber": port,
                        "filterChain": {
                            "filter": {
                                "name": "envoy.filters.network.http_connection_manager",
                                "subFilter": {"name": "envoy.filters.http.router"},
                            }
                        },
                    },
                },
                "patch": {
                    "operation": "INSERT_BEFORE",
                    "value": {
                        "name": RATE_LIMIT_FILTER,
                        "typed_config": {
                            "@type": RATE_LIMIT_TYPE,
                            "stat_prefix": f"team_{team.replace('-', '_')}_rate_limit",
                            "token_bucket": {
                                "max_tokens": requests_per_minute,
                                "tokens_per_fill": requests_per_minute,
                                "fill_interval": "60s",
                            },
                            "filter_enabled": {**always, "runtime_key": "team_rate_limit_enabled"},
                            "filter_enforced": {**always, "runtime_key": "team_rate_limit_enforced"},
                        },
                    },
                },
            }
        ],
    }


def callers_policy_name(team: str) -> str:
    return f"team-{team}-callers"


def gateway_identity(
    name: str,
    namespace: str,
    gateway: str,
    issuer: pulumi.Input[str],
    teams: Mapping[str, tuple[str, int, Sequence[str]]],
    requests_per_minute: int,
    opts: pulumi.ResourceOptions,
) -> None:
    """RequestAuthentication, then per team (namespace, listener port, models): its callers policy and rate limit."""
    k8s.apiextensions.CustomResource(
        f"{name}-request-authentication",
        api_version=SECURITY_API,
        kind="RequestAuthentication",
        metadata={"name": "team-service-account-tokens", "namespace": namespace},
        spec=pulumi.Output.from_input(issuer).apply(lambda iss: request_authentication(gateway, iss)),
        opts=opts,
    )
    for team, (team_namespace, port, models) in teams.items():
        k8s.apiextensions.CustomResource(
            f"{name}-callers-{team}",
            api_version=SECURITY_API,
            kind="AuthorizationPolicy",
            metadata={"name": callers_policy_name(team), "namespace": namespace},
            spec=pulumi.Output.from_input(issuer).apply(
                lambda iss, ns=team_namespace, p=port, m=models: team_callers(gateway, iss, ns, p, m)
            ),
            opts=opts,
        )
        k8s.apiextensions.CustomResource(
            f"{name}-rate-limit-{team}",
            api_version=NETWORKING_API,
            kind="EnvoyFilter",
            metadata={"name": f"team-{team}-rate-limit", "namespace": namespace},
            spec=team_rate_limit(gateway, team, port, requests_per_minute),
            opts=opts,
        )


def shared_prefix_cache_warnings(models: Sequence[tuple[str, Sequence[str], bool]]) -> list[str]:
    """One plan warning per (model, its teams, sharedPrefixCache) whose teams chose to share its prefix cache; a
    model of several teams without it runs with vLLM's prefix cache off."""
    return [
        f"model {model} is called by teams {', '.join(teams)} and they share its vLLM prefix cache "
        "(sharedPrefixCache: true): the gateway cannot set vLLM's per-request cache_salt (a JSON body field), so one "
        "team can tell from response times whether another sent a prompt starting the same way; drop "
        "sharedPrefixCache, or give a team whose prompts must stay private a model of its own (docs/security.md, "
        '"Served models")'
        for model, teams, shared in models
        if len(teams) > 1 and shared
    ]
