"""A ValidatingAdmissionPolicy evaluated as the API server evaluates it, with a real CEL interpreter (cel-python).

Follows kubernetes/kubernetes v1.36, staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating
(validator.go): `variables` are evaluated in order and reachable as `variables.<name>`; each validation's
`expression` must be true, else the request is refused with its `messageExpression` (or `message`). The object
is the request's object as JSON (quantities as the strings the API server serializes). Kubernetes adds libraries
to standard CEL; the policies here use its list library's `<list>.sum()`, `.min()` and `.max()` (apiserver
pkg/cel/library/lists.go; min and max refuse an empty list), defined below.

`kubernetes_gpus` is the count the policy must match, written from its sources: per pod Kubernetes' PodRequests
(k8s.io/component-helpers resource/helpers.go: containers plus restartable init containers, or an init container
plus the sidecars started before it, whichever is more), pods per Job as Kueue counts them (kueue v0.19.2
pkg/controller/jobs/job/job_controller.go podsCount, jobset/jobset_controller.go PodsCountPerReplica).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel


def _sum(values: celtypes.ListType) -> celtypes.Value:
    total: celtypes.Value = celtypes.IntType(0)
    for value in values:
        total = total + value  # type: ignore[operator]
    return total


def _extreme(pick: Any, name: str) -> Any:
    def apply(values: celtypes.ListType) -> celtypes.Value:
        if not values:
            raise ValueError(f"{name} called on empty list")
        return pick(values)

    return apply


# Parsing is most of the cost (lark, ~15 ms an expression) and the program depends on nothing but the text: each
# expression is parsed once. The interpreter builds a fresh evaluator and activation per call (celpy 0.5.0
# __init__.py InterpretedRunner.evaluate) and never writes to the tree, so a program is safe to run again.
@cache
def _program(expression: str) -> celpy.Runner:
    environment = celpy.Environment()
    functions = {"sum": _sum, "min": _extreme(min, "min"), "max": _extreme(max, "max")}
    return environment.program(environment.compile(expression), functions=functions)


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    return _program(expression).evaluate(activation)


# Who sends a request unless a test says otherwise: a person (a team member's Entra ID object ID), no service account.
MEMBER = "00000000-0000-0000-0000-00000000a11c"


def variables(
    policy: dict[str, Any],
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    operation: str | None = None,
    user: str = MEMBER,
) -> dict[str, Any]:
    """`old`: the object before an UPDATE (`oldObject`; null on CREATE); `operation` defaults to UPDATE with `old`,
    else CREATE; `user`: the requester's username (the request's other fields are not modelled)."""
    request = {"operation": operation or ("CREATE" if old is None else "UPDATE"), "userInfo": {"username": user}}
    activation: dict[str, Any] = {
        "object": json_to_cel(obj),
        "oldObject": json_to_cel(old),
        "request": json_to_cel(request),
    }
    values: dict[str, Any] = {}
    for variable in policy["spec"].get("variables", []):
        activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})
        values[variable["name"]] = _evaluate(variable["expression"], activation)
    activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})
    return {"activation": activation, "values": values}


def verdict(
    policy: dict[str, Any],
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    operation: str | None = None,
    user: str = MEMBER,
) -> str | None:
    """None when every validation holds, else the message the API server returns (`old`, `operation`, `user`: as
    above)."""
    activation = variables(policy, obj, old, operation, user)["activation"]
    for validation in policy["spec"]["validations"]:
        if not bool(_evaluate(validation["expression"], activation)):
            message = validation.get("messageExpression")
            return str(_evaluate(message, activation)) if message else str(validation.get("message", "refused"))
    return None


# The resource each kind is served as, and in which versions: batch/v1 jobs (Kubernetes v1.36); JobSet v0.12.0's CRD
# (config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml: plural jobsets, served version v1alpha2 only).
RESOURCES = {("batch", "Job"): ("jobs", ("v1",)), ("jobset.x-k8s.io", "JobSet"): ("jobsets", ("v1alpha2",))}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if selector.get("matchExpressions"):
        raise NotImplementedError("matchExpressions: not modelled, so not used by the policies here")
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def policy_applies(
    policy: dict[str, Any], binding: dict[str, Any], obj: dict[str, Any], operation: str, namespace: dict[str, str]
) -> bool:
    """Whether the API server evaluates the policy for this request (apiserver pkg/admission/plugin/policy/matching/
    matching.go, the rules as in pkg/admission/plugin/webhook/predicates/rules/rules.go): one of the constraints'
    resourceRules names the operation, group, version and resource (or `*`), and the binding's namespaceSelector
    selects the namespace's labels. matchPolicy Equivalent (the default) also matches the resource in another served
    version: each kind here is served in one."""
    group, _, version = obj["apiVersion"].rpartition("/")
    resource, served = RESOURCES[(group, obj["kind"])]
    constraints = policy["spec"]["matchConstraints"]
    if not _selects(binding["spec"].get("matchResources", {}).get("namespaceSelector") or {}, namespace):
        return False
    if not _selects(constraints.get("namespaceSelector") or {}, namespace):
        return False
    equivalent = served if constraints.get("matchPolicy", "Equivalent") == "Equivalent" else (version,)

    def named(values: list[str], wanted: tuple[str, ...] | str) -> bool:
        options = (wanted,) if isinstance(wanted, str) else wanted
        return "*" in values or any(v in values for v in options)

    return any(
        named(rule.get("operations", []), operation)
        and named(rule.get("apiGroups", []), group)
        and named(rule.get("apiVersions", []), equivalent)
        and named(rule.get("resources", []), resource)
        for rule in constraints.get("resourceRules", [])
    )


def job_gpus(policy: dict[str, Any], obj: dict[str, Any]) -> int:
    return int(variables(policy, obj)["values"]["gpus"])


GPU = "nvidia.com/gpu"


def _container(name: str, gpus: int, restart_policy: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": name}
    if gpus:
        container["resources"] = {"limits": {GPU: str(gpus)}}
    if restart_policy:
        container["restartPolicy"] = restart_policy
    return container


def _pod(gpus: int, init_gpus: tuple[int, ...] = (), sidecar_gpus: tuple[int, ...] = ()) -> dict[str, Any]:
    """A pod: `init_gpus` are plain init containers, `sidecar_gpus` restartable ones, in that order."""
    spec: dict[str, Any] = {"containers": [_container("train", gpus), _container("logger", 0)]}
    inits = [_container(f"init-{i}", g) for i, g in enumerate(init_gpus)]
    inits += [_container(f"sidecar-{i}", g, "Always") for i, g in enumerate(sidecar_gpus)]
    if inits:
        spec["initContainers"] = inits
    return spec


def job(
    parallelism: int,
    gpus_per_pod: int,
    completions: int | None = None,
    init_gpus: tuple[int, ...] = (),
    sidecar_gpus: tuple[int, ...] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "template": {"spec": _pod(gpus_per_pod, init_gpus, sidecar_gpus)},
    }
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "spec": spec}


def _container_gpus(container: dict[str, Any]) -> int:
    resources = container.get("resources") or {}
    return int((resources.get("limits") or {}).get(GPU, (resources.get("requests") or {}).get(GPU, 0)))


def pod_gpus(pod: dict[str, Any]) -> int:
    """PodRequests for one resource, in the order Kubernetes walks the init containers."""
    total = sum(_container_gpus(c) for c in pod["containers"])
    sidecars = largest_init = 0
    for init in pod.get("initContainers", []):
        gpus = _container_gpus(init)
        if init.get("restartPolicy") == "Always":
            total += gpus
            sidecars += gpus
            largest_init = max(largest_init, sidecars)
        else:
            largest_init = max(largest_init, gpus + sidecars)
    return max(total, largest_init)


def _pods(job_spec: dict[str, Any]) -> int:
    parallelism = int(job_spec.get("parallelism", 1))
    return min(parallelism, int(job_spec.get("completions", parallelism)))


def kubernetes_gpus(obj: dict[str, Any]) -> int:
    """The GPUs Kueue reserves for a Job or JobSet."""
    if obj["kind"] == "JobSet":
        return sum(
            int(r.get("replicas", 1))
            * _pods(r["template"]["spec"])
            * pod_gpus(r["template"]["spec"]["template"]["spec"])
            for r in obj["spec"]["replicatedJobs"]
        )
    return _pods(obj["spec"]) * pod_gpus(obj["spec"]["template"]["spec"])


def jobset(replicas: int, parallelism: int, gpus_per_pod: int) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": replicas,
                    "template": {"spec": {"parallelism": parallelism, "template": {"spec": _pod(gpus_per_pod)}}},
                }
            ]
        },
    }
