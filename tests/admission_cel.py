"""A ValidatingAdmissionPolicy evaluated as the API server evaluates it, with a real CEL interpreter (cel-python).

Follows kubernetes/kubernetes v1.36, staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating
(validator.go): `variables` are evaluated in order and reachable as `variables.<name>`; each validation's
`expression` must be true, else the request is refused with its `messageExpression` (or `message`). The object
is the request's object as JSON (quantities as the strings the API server serializes). Kubernetes adds libraries
to standard CEL; the policies here use one, `<list>.sum()` (apiserver pkg/cel/library/lists.go), defined below.
"""

from __future__ import annotations

from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel


def _sum(values: celtypes.ListType) -> celtypes.Value:
    total: celtypes.Value = celtypes.IntType(0)
    for value in values:
        total = total + value  # type: ignore[operator]
    return total


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    environment = celpy.Environment()
    program = environment.program(environment.compile(expression), functions={"sum": _sum})
    return program.evaluate(activation)


def variables(policy: dict[str, Any], obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    activation: dict[str, Any] = {"object": json_to_cel(obj), "request": json_to_cel({"operation": operation})}
    values: dict[str, Any] = {}
    for variable in policy["spec"].get("variables", []):
        activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})
        values[variable["name"]] = _evaluate(variable["expression"], activation)
    activation["variables"] = celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})
    return {"activation": activation, "values": values}


def verdict(policy: dict[str, Any], obj: dict[str, Any], operation: str = "CREATE") -> str | None:
    """None when every validation holds, else the message the API server returns (`request.operation` is
    `operation`; the request's other fields are not modelled)."""
    activation = variables(policy, obj, operation)["activation"]
    for validation in policy["spec"]["validations"]:
        if not bool(_evaluate(validation["expression"], activation)):
            message = validation.get("messageExpression")
            return str(_evaluate(message, activation)) if message else str(validation.get("message", "refused"))
    return None


def job_gpus(policy: dict[str, Any], obj: dict[str, Any]) -> int:
    return int(variables(policy, obj)["values"]["gpus"])


def _pod(gpus: int) -> dict[str, Any]:
    return {
        "containers": [
            {"name": "train", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}},
            {"name": "sidecar", "image": "logger"},
        ]
    }


def job(parallelism: int, gpus_per_pod: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "spec": {"parallelism": parallelism, "template": {"spec": _pod(gpus_per_pod)}},
    }


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
