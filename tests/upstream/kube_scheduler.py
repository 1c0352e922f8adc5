"""The two kube-scheduler filters that decide which nodes a pod may land on, by its labels and taints.

Written from kubernetes/kubernetes, never from the platform's own scheduling helpers:

- NodeAffinity: staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go (at 1ca8f84e),
  GetRequiredNodeAffinity and RequiredNodeAffinity.Match: the pod's `nodeSelector` (every key with its value) and
  its required node affinity both match. The affinity's terms are ORed; a term without expressions or fields is
  dropped (so none left selects no node); a term's expressions are ANDed, each a labels.Requirement
  (staging/src/k8s.io/apimachinery/pkg/labels/selector.go, Requirement.Matches and NewRequirement): In and NotIn
  on a non-empty value set (NotIn also holds without the label), Exists and DoesNotExist without values, Gt and Lt
  on exactly one base-10 integer, compared with the label's value read as one. A requirement that breaks those
  rules makes its term a parse error, which matches no node.
- TaintToleration: pkg/scheduler/framework/plugins/tainttoleration, Filter: every taint with effect NoSchedule or
  NoExecute has a toleration that tolerates it (PreferNoSchedule only scores); staging/src/k8s.io/api/core/v1/
  toleration.go (at 19c6083b) ToleratesTaint: an empty effect matches every effect, an empty key every key;
  operator Equal (or empty) compares the values, Exists matches any value, Lt and Gt compare the taint's value
  with the toleration's as base-10 integers.

Node templates carry no node name, so `matchFields` (which selects by name) is not modelled and refused.
Taints are written as the AgentPool's `nodeTaints` spell them (AKS docs, articles/aks/use-node-taints.md):
`key=value:Effect`, or `key:Effect` without a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def taint(text: str) -> dict[str, str]:
    """`key=value:Effect` (or `key:Effect`) as a Kubernetes taint."""
    key_value, effect = text.rsplit(":", 1)
    key, _, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect}


def _int64(text: str) -> int | None:
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None


def _requirement_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool | None:
    """Whether the node's labels meet one node selector requirement; None for one NewRequirement refuses."""
    key, operator = expression["key"], expression["operator"]
    values: Sequence[str] = expression.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            return None
        found = key in labels and labels[key] in values
        return found if operator == "In" else not found
    if operator in ("Exists", "DoesNotExist"):
        return None if values else (key in labels) == (operator == "Exists")
    if operator in ("Gt", "Lt"):
        bound = _int64(values[0]) if len(values) == 1 else None
        if bound is None:
            return None
        have = _int64(labels[key]) if key in labels else None
        if have is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return None


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if term.get("matchFields"):
        raise ValueError("matchFields selects a node by name: a node template has none")
    results = [_requirement_matches(e, labels) for e in term.get("matchExpressions") or []]
    return all(result is True for result in results)  # a parse error (None) matches nothing


def selects_node(pod_spec: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """The NodeAffinity filter: `nodeSelector` and the required node affinity both match the node's labels."""
    selector: Mapping[str, str] = pod_spec.get("nodeSelector") or {}
    if any(node_labels.get(key) != value for key, value in selector.items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    terms = [t for t in required.get("nodeSelectorTerms") or [] if t.get("matchExpressions") or t.get("matchFields")]
    return any(_term_matches(term, node_labels) for term in terms)


def tolerates(toleration: Mapping[str, Any], node_taint: Mapping[str, str]) -> bool:
    """Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != node_taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != node_taint["key"]:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == node_taint["value"]
    if operator == "Exists":
        return True
    if operator in ("Lt", "Gt"):
        bound, have = _int64(toleration.get("value") or ""), _int64(node_taint["value"])
        if bound is None or have is None:
            return False
        return have < bound if operator == "Lt" else have > bound
    return False


def tolerates_taints(pod_spec: Mapping[str, Any], node_taints: Iterable[str]) -> bool:
    """The TaintToleration filter: every NoSchedule and NoExecute taint of the node is tolerated."""
    tolerations: Sequence[Mapping[str, Any]] = pod_spec.get("tolerations") or []
    filtered = [t for t in map(taint, node_taints) if t["effect"] in FILTERED_EFFECTS]
    return all(any(tolerates(toleration, t) for toleration in tolerations) for t in filtered)


def pod_fits_node(pod_spec: Mapping[str, Any], node_labels: Mapping[str, str], node_taints: Iterable[str]) -> bool:
    """Both filters pass: the pod may be scheduled on the node as far as its labels and taints go."""
    return selects_node(pod_spec, node_labels) and tolerates_taints(pod_spec, node_taints)
