"""What the inference gateway does with one HTTP request: authenticate its JWT, authorize it, route it to a model.

Follows Istio 1.30.3 (istio/api at tag 1.30.3) and Gateway API v1.5.1:
- RequestAuthentication (security/v1beta1/request_authentication.proto): a request carrying a JWT that no jwtRule
  of a policy on the workload accepts (its `iss` differs from the rule's issuer, or none of its `aud` is among the
  rule's audiences) is rejected with 401; a request without a JWT passes with no identity. The request principal
  of an accepted JWT is `<iss>/<sub>`. Signatures are not modelled: a token here is one the issuer signed.
- AuthorizationPolicy (security/v1beta1/authorization_policy.proto): CUSTOM, then DENY, then ALLOW. Any matching
  DENY policy denies; with no ALLOW policy the request is allowed; else one ALLOW policy must match. A policy
  matches when one of its rules does; a rule when one `from` source, one `to` operation and every `when` match
  (an empty list matches). Inside a source or operation every set field must match; a string matches exactly,
  by prefix (`abc*`), by suffix (`*abc`) or by presence (`*`, a non-empty value). A `not` field matches when the
  value matches none of its strings; a request with no principal therefore matches `notRequestPrincipals` and
  never `requestPrincipals`. Policies apply to the gateway through `targetRefs` naming it.
- Gateway API HTTPRoute (gateway.networking.k8s.io/v1, PathPrefix): a route attached (parentRefs sectionName) to
  the listener on the request's port matches when its prefix equals the path or the path continues it with `/`.
  No matching route: 404.

Verdicts name the rule that decided (`<Kind> <namespace>/<name>` and, for a rule of a policy, `#<index>`), so a
test can drop one rule and see which request it let through.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

GATEWAY_KIND = "Gateway"


@dataclass(frozen=True)
class Token:
    """A signed JWT's claims."""

    iss: str
    aud: tuple[str, ...]
    sub: str


@dataclass(frozen=True)
class Request:
    port: int
    path: str
    token: Token | None = None


@dataclass(frozen=True)
class Verdict:
    status: int
    """200 when a model serves it, 401 rejected token, 403 denied, 404 no route."""
    decided_by: str
    """The rule that refused it, or the route that served it."""
    model: str = ""


@dataclass
class GatewayWorld:
    """One gateway's objects: its listeners, the policies that target it, the routes attached to it."""

    gateway: dict[str, Any]
    authentications: list[dict[str, Any]]
    authorizations: list[dict[str, Any]]
    routes: list[dict[str, Any]]

    def copy(self) -> GatewayWorld:
        return copy.deepcopy(self)


def _targets(obj: dict[str, Any], gateway: dict[str, Any]) -> bool:
    same_namespace = obj["metadata"].get("namespace") == gateway["metadata"]["namespace"]
    refs = (obj.get("spec") or {}).get("targetRefs") or []
    return same_namespace and any(
        r.get("kind") == GATEWAY_KIND
        and r.get("group") == "gateway.networking.k8s.io"
        and r.get("name") == gateway["metadata"]["name"]
        for r in refs
    )


def gateway_world(objects: Iterable[dict[str, Any]], name: str) -> GatewayWorld:
    objects = list(objects)
    (gateway,) = [o for o in objects if o.get("kind") == GATEWAY_KIND and o["metadata"]["name"] == name]
    routes = [
        o
        for o in objects
        if o.get("kind") == "HTTPRoute"
        and any(
            p.get("name") == name
            and p.get("namespace", o["metadata"].get("namespace")) == gateway["metadata"]["namespace"]
            for p in o["spec"].get("parentRefs") or []
        )
    ]
    return GatewayWorld(
        gateway=gateway,
        authentications=[o for o in objects if o.get("kind") == "RequestAuthentication" and _targets(o, gateway)],
        authorizations=[o for o in objects if o.get("kind") == "AuthorizationPolicy" and _targets(o, gateway)],
        routes=routes,
    )


def _name(obj: dict[str, Any]) -> str:
    return f"{obj['kind']} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


def string_matches(pattern: str, value: str | None) -> bool:
    if not value:
        return False
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    return value == pattern


def _field(spec: dict[str, Any], key: str, value: str | None) -> bool:
    """A positive field and its `not` twin (notX) of a source or operation."""
    positive = spec.get(key)
    negative = spec.get("not" + key[0].upper() + key[1:])
    if positive is not None and not any(string_matches(p, value) for p in positive):
        return False
    return not (negative is not None and any(string_matches(p, value) for p in negative))


def _principal(world: GatewayWorld, request: Request) -> tuple[str | None, str | None]:
    """(request principal, the RequestAuthentication that rejected the token)."""
    token = request.token
    if token is None:
        return None, None
    for policy in world.authentications:
        for rule in policy["spec"].get("jwtRules") or []:
            audiences = rule.get("audiences") or []
            if rule["issuer"] == token.iss and (not audiences or set(audiences) & set(token.aud)):
                return f"{token.iss}/{token.sub}", None
    if not world.authentications:
        return None, None
    return None, _name(world.authentications[0])


def _rule_matches(rule: dict[str, Any], principal: str | None, request: Request) -> bool:
    sources = [f.get("source") or {} for f in rule.get("from") or []]
    operations = [t.get("operation") or {} for t in rule.get("to") or []]
    if rule.get("when"):
        raise NotImplementedError("`when` conditions are not modelled")
    source_ok = not sources or any(_field(s, "requestPrincipals", principal) for s in sources)
    operation_ok = not operations or any(
        _field(o, "ports", str(request.port)) and _field(o, "paths", request.path) for o in operations
    )
    return source_ok and operation_ok


def _listener_of(world: GatewayWorld, port: int) -> str | None:
    for listener in world.gateway["spec"]["listeners"]:
        if listener["port"] == port:
            return str(listener["name"])
    return None


def _route(world: GatewayWorld, request: Request) -> tuple[str, str] | None:
    """(route rule name, the InferencePool it sends to)."""
    listener = _listener_of(world, request.port)
    for route in world.routes:
        if not any(p.get("sectionName") in (None, listener) for p in route["spec"]["parentRefs"]):
            continue
        for rule in route["spec"]["rules"]:
            for match in rule.get("matches") or []:
                path = match.get("path") or {}
                assert path.get("type") == "PathPrefix", "only PathPrefix is modelled"
                prefix = path["value"].rstrip("/")
                if request.path == prefix or request.path.startswith(prefix + "/"):
                    return _name(route), rule["backendRefs"][0]["name"]
    return None


def decide(world: GatewayWorld, request: Request) -> Verdict:
    if _listener_of(world, request.port) is None:
        return Verdict(0, "no listener")
    principal, rejected_by = _principal(world, request)
    if rejected_by:
        return Verdict(401, rejected_by)
    denying = deciding_rules(world, request)
    if denying:
        return Verdict(403, denying[0])
    allows = [p for p in world.authorizations if p["spec"].get("action", "ALLOW") == "ALLOW"]
    if allows and not any(_rule_matches(r, principal, request) for p in allows for r in p["spec"].get("rules") or []):
        return Verdict(403, "no ALLOW policy matches")
    route = _route(world, request)
    if route is None:
        return Verdict(404, "no route")
    return Verdict(200, route[0], route[1])


def deciding_rules(world: GatewayWorld, request: Request) -> list[str]:
    """Every DENY rule that matches the request (not only the first)."""
    principal, _ = _principal(world, request)
    return [
        f"{_name(p)} #{i}"
        for p in world.authorizations
        if p["spec"].get("action") == "DENY"
        for i, rule in enumerate(p["spec"].get("rules") or [])
        if _rule_matches(rule, principal, request)
    ]


def without_rule(world: GatewayWorld, rule: str) -> GatewayWorld:
    """The world with one policy rule (`<Kind> <ns>/<name> #<i>`) or one whole object (`<Kind> <ns>/<name>`) gone."""
    changed = world.copy()
    name, _, index = rule.partition(" #")
    if index:
        for policy in changed.authorizations:
            if _name(policy) == name:
                del policy["spec"]["rules"][int(index)]
        return changed
    changed.authentications = [p for p in changed.authentications if _name(p) != name]
    changed.authorizations = [p for p in changed.authorizations if _name(p) != name]
    changed.routes = [r for r in changed.routes if _name(r) != name]
    return changed
