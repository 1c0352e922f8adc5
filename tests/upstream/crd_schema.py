"""Custom resources checked against the CRD excerpts in tests/fixtures/crds/ as the API server would.

A structural CRD schema prunes every field it does not declare (unless a node says
`x-kubernetes-preserve-unknown-fields`): a misspelt key is silently dropped, so the object the controller sees
is not the one the program meant. Here such a key is an error instead.

Fixtures are JSON excerpts (`source` names the upstream file and commit) or an upstream CRD copied byte for byte as
YAML (`<plural>-<tag>.yaml`, its sha256 in tests/fixtures/crds/SOURCES.md). CEL rules (`x-kubernetes-validations`)
are evaluated as kubernetes/kubernetes v1.36 staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel
does on create: after defaulting (structural defaults of the schema, pkg/apiserver/schema/defaulting), with `self`
the value at the rule's node, on every node present in the object; transition rules (those reading `oldSelf`) run
on updates only.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel

CRDS = Path(__file__).parent.parent / "fixtures" / "crds"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with unknown fields refused wherever the API server would prune them."""
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if "properties" in schema:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
        if not schema.get(PRESERVE_UNKNOWN):
            out["additionalProperties"] = False
    if "items" in schema:
        out["items"] = strict(schema["items"])
    return out


@cache
def crd_excerpt(file_name: str) -> dict[str, Any]:
    text = (CRDS / file_name).read_text()
    if not file_name.endswith(".yaml"):
        return json.loads(text)
    crd = yaml.safe_load(text)
    served = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return {
        "group": crd["spec"]["group"],
        "kind": crd["spec"]["names"]["kind"],
        "version": served[0]["name"],
        "openAPIV3Schema": served[0]["schema"]["openAPIV3Schema"],
    }


def defaulted(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with the schema's defaults filled in where a field is absent (objects only, as the API server)."""
    if isinstance(value, dict):
        out = dict(value)
        for key, sub in (schema.get("properties") or {}).items():
            if key not in out and "default" in sub:
                out[key] = sub["default"]
            if key in out:
                out[key] = defaulted(out[key], sub)
        return out
    if isinstance(value, list) and "items" in schema:
        return [defaulted(item, schema["items"]) for item in value]
    return value


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(part) for part in str(text).split(str(separator))])


# Kubernetes adds cel-go's strings extension (apiserver pkg/cel/environment/base.go, ext.Strings); the pinned CRDs'
# rules use `split` from it.
KUBERNETES_FUNCTIONS: dict[str, Any] = {"split": _split}


def _cel_failures(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    found: list[str] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if "oldSelf" in rule["rule"]:
            continue  # a transition rule: evaluated on updates only, never on create
        env = celpy.Environment()
        program = env.program(env.compile(rule["rule"]), functions=KUBERNETES_FUNCTIONS)
        result = program.evaluate({"self": json_to_cel(value)})
        if not isinstance(result, celtypes.BoolType) or not bool(result):
            found.append(f"{path or '<root>'}: {rule.get('message') or rule['rule']}")
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                found += _cel_failures(value[key], sub, f"{path}.{key}" if path else key)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += _cel_failures(item, schema["items"], f"{path}[{i}]")
    return found


def crd_problems(manifest: dict[str, Any], file_name: str) -> list[str]:
    """Why the API server would refuse or prune `manifest` under the CRD excerpt `file_name`; empty when fine."""
    crd = crd_excerpt(file_name)
    expected = f"{crd['group']}/{crd['version']}"
    if manifest.get("apiVersion") != expected or manifest.get("kind") != crd["kind"]:
        return [f"{manifest.get('apiVersion')} {manifest.get('kind')} is not {expected} {crd['kind']}"]
    schema = crd["openAPIV3Schema"]
    validator = jsonschema.Draft7Validator(strict(schema))
    found = [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(manifest)]
    return found or _cel_failures(defaulted(manifest, schema), schema, "")
