"""The stack's ValidatingAdmissionPolicies evaluated on one object, offline, as the API server evaluates them.

Follows kubernetes v1.36 staging/src/k8s.io/apiserver/pkg/admission/plugin/policy: a binding's namespaceSelector
and the policy's matchConstraints decide whether a CREATE is evaluated (matching/matching.go, webhook/predicates/
rules/rules.go); `variables` are evaluated in order and each validation's `expression` must hold, else the request
is refused with its `messageExpression` or `message` (validating/validator.go). CEL runs on cel-python (the `plan`
extra), with the Kubernetes list library's `sum()`, `min()` and `max()` (apiserver pkg/cel/library/lists.go), the
only Kubernetes CEL extensions the platform's policies use; a policy that calls another fails its check with the
error rather than passing silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

# cel-python comes with the `plan` extra: imported where CEL runs, so a deploy-only install imports this module.

# The resource each kind is served as: core and batch (Kubernetes v1.36), JobSet v0.12.0 (plural jobsets).
RESOURCES = {
    ("", "Pod"): "pods",
    ("batch", "Job"): "jobs",
    ("jobset.x-k8s.io", "JobSet"): "jobsets",
    ("apps", "Deployment"): "deployments",
}
# Whoever submits: a person, no service account (the policies that exempt platform controllers then apply).
REQUESTER = "researcher"


def _sum(values: Any) -> Any:
    from celpy import celtypes

    total: Any = celtypes.IntType(0)
    for value in values:
        total = total + value
    return total


def _extreme(pick: Any, name: str) -> Any:
    def apply(values: Any) -> Any:
        if not values:
            raise ValueError(f"{name} called on an empty list")
        return pick(values)

    return apply


@cache
def _program(expression: str) -> Any:
    import celpy

    environment = celpy.Environment()
    functions = {"sum": _sum, "min": _extreme(min, "min"), "max": _extreme(max, "max")}
    return environment.program(environment.compile(expression), functions=functions)


def _matches_labels(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector (apimachinery pkg/apis/meta/v1 helpers.go LabelSelectorAsSelector)."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _named(values: Sequence[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def matches(policy: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """The policy's matchConstraints select a CREATE of `obj` (any version: matchPolicy Equivalent, each kind here is
    served in one)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    resource = RESOURCES.get((group, str(obj.get("kind"))))
    if resource is None:
        return False
    constraints = policy.get("spec", {}).get("matchConstraints") or {}
    return any(
        _named(rule.get("operations") or [], "CREATE")
        and _named(rule.get("apiGroups") or [], group)
        and _named(rule.get("resources") or [], resource)
        for rule in constraints.get("resourceRules") or []
    )


@dataclass(frozen=True)
class BoundPolicy:
    """A ValidatingAdmissionPolicy and the namespace selector of the binding that enforces it (Deny)."""

    name: str
    policy: Mapping[str, Any]
    namespace_selector: Mapping[str, Any]

    def applies(self, obj: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> bool:
        constraints = self.policy.get("spec", {}).get("matchConstraints") or {}
        return (
            _matches_labels(self.namespace_selector, namespace_labels)
            and _matches_labels(constraints.get("namespaceSelector") or {}, namespace_labels)
            and matches(self.policy, obj)
        )

    def refusal(self, obj: Mapping[str, Any]) -> str | None:
        """None when every validation holds on a CREATE of `obj`, else the message the API server returns."""
        from celpy import celtypes
        from celpy.adapter import json_to_cel

        request = {"operation": "CREATE", "userInfo": {"username": REQUESTER}}
        activation: dict[str, Any] = {
            "object": json_to_cel(dict(obj)),
            "oldObject": json_to_cel(None),
            "request": json_to_cel(request),
        }
        spec = self.policy.get("spec", {})
        values: dict[str, Any] = {}
        try:
            for variable in spec.get("variables") or []:
                activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})
                values[variable["name"]] = _program(variable["expression"]).evaluate(activation)
            activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})
            for validation in spec.get("validations") or []:
                result = _program(validation["expression"]).evaluate(activation)
                if isinstance(result, Exception) or not bool(result):
                    message = validation.get("messageExpression")
                    if message:
                        return str(_program(message).evaluate(activation))
                    return str(validation.get("message") or f"refused by {self.name}")
        except Exception as error:  # an expression that cannot be evaluated refuses (failurePolicy Fail)
            return f"{self.name}: could not evaluate the policy offline ({error})"
        return None


def bound_policies(policies: Sequence[Mapping[str, Any]], bindings: Sequence[Mapping[str, Any]]) -> list[BoundPolicy]:
    """Each policy with each binding that denies through it (a binding with only Warn or Audit refuses nothing)."""
    by_name = {str(p["metadata"]["name"]): p for p in policies}
    bound: list[BoundPolicy] = []
    for binding in bindings:
        spec = binding.get("spec") or {}
        policy = by_name.get(str(spec.get("policyName")))
        if policy is None or "Deny" not in (spec.get("validationActions") or ["Deny"]):
            continue
        selector = (spec.get("matchResources") or {}).get("namespaceSelector") or {}
        bound.append(BoundPolicy(str(policy["metadata"]["name"]), policy, selector))
    return bound
