"""Validate a hand-written ARM request body against an OpenAPI 2.0 excerpt of azure-rest-api-specs.

Excerpts live in tests/fixtures/arm_specs/, one per (provider, resource type, API version), each naming the spec
file and commit it was read from. Checked: types, enums (case as the spec spells it), bounds, required fields,
keys the definition does not have (ARM drops them silently, so they are errors here), readOnly properties sent,
and the rules the spec states only in descriptions, each a named function below.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SPECS = Path(__file__).parent.parent / "fixtures" / "arm_specs"
TIB = 1024**4
# Top-level keys of the generic resource that are not part of the body (path parameters and the API version).
ADDRESS_KEYS = {
    "resourceGroupName",
    "resourceProviderNamespace",
    "parentResourcePath",
    "resourceType",
    "resourceName",
    "apiVersion",
}
# common-types v6 types.json: TrackedResource writes `location` (required) and `tags`; ProxyResource neither.
ENVELOPES: dict[str, tuple[set[str], set[str]]] = {
    "TrackedResource": ({"location"}, {"location", "tags", "properties"}),
    "ProxyResource": (set(), {"properties"}),
}


def load_specs() -> dict[tuple[str, str, str], dict[str, Any]]:
    """Every excerpt, keyed by (provider, resourceType, apiVersion) as the generic resource spells them."""
    specs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in sorted(SPECS.glob("*.json")):
        spec = json.loads(path.read_text())
        specs[(spec["provider"], spec["resourceType"], spec["apiVersion"])] = spec
    return specs


def _resolve(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = definitions[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"string": str, "boolean": bool, "array": list, "object": dict}[kind]
    return isinstance(value, expected)


def schema_problems(value: Any, schema: Mapping[str, Any], definitions: Mapping[str, Any], path: str) -> list[str]:
    """What the spec refuses in `value` at `path`."""
    schema = _resolve(schema, definitions)
    if not schema.keys() - {"description"}:
        return []  # a schema that constrains nothing (e.g. ParameterValuesValue.value) takes any JSON value
    problems: list[str] = []
    kind = schema.get("type")
    if kind is not None and not _type_ok(kind, value):
        return [f"{path}: {value!r} is not of type {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        for i, item in enumerate(value):
            problems += schema_problems(item, schema.get("items", {}), definitions, f"{path}[{i}]")
    if isinstance(value, dict):
        problems += _object_problems(value, schema, definitions, path)
    return problems


def _object_problems(
    value: Mapping[str, Any], schema: Mapping[str, Any], definitions: Mapping[str, Any], path: str
) -> list[str]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    problems = [
        f"{path}.{key}: required by the spec, not sent" for key in schema.get("required", []) if key not in value
    ]
    for key, item in value.items():
        if key in properties:
            if _resolve(properties[key], definitions).get("readOnly") or properties[key].get("readOnly"):
                problems.append(f"{path}.{key}: read-only, the service sets it")
            problems += schema_problems(item, properties[key], definitions, f"{path}.{key}")
        elif isinstance(extra, dict):
            problems += schema_problems(item, extra, definitions, f"{path}.{key}")
        else:
            problems.append(f"{path}.{key}: not in the spec (ARM drops it silently)")
    return problems


# --- rules the spec states only in descriptions -------------------------------------------------------------------


def pool_size_in_whole_tib(body: Mapping[str, Any]) -> list[str]:
    """PoolProperties.size: "Allowed values are in 1TiB chunks (value must be multiple of 1099511627776)"."""
    size = body.get("size")
    return [] if not isinstance(size, int) or size % TIB == 0 else [f"properties.size: {size} is not whole TiB"]


def custom_throughput_only_manual_flexible(body: Mapping[str, Any]) -> list[str]:
    """customThroughputMibps "will be accepted as input only for manual qosType pool with Flexible service level"."""
    if "customThroughputMibps" not in body:
        return []
    if (body.get("qosType"), body.get("serviceLevel")) != ("Manual", "Flexible"):
        return ["properties.customThroughputMibps: accepted only with qosType Manual and serviceLevel Flexible"]
    return []


def mig_profiles_exclude_gpu_instance_profile(body: Mapping[str, Any]) -> list[str]:
    """NvidiaGPUProfile.migProfiles: "mutually exclusive with the top-level `gpuInstanceProfile` property"."""
    nvidia = (body.get("gpuProfile") or {}).get("nvidia") or {}
    if "migProfiles" in nvidia and "gpuInstanceProfile" in body:
        return ["properties.gpuInstanceProfile: mutually exclusive with gpuProfile.nvidia.migProfiles"]
    return []


def single_mig_strategy_takes_one_profile(body: Mapping[str, Any]) -> list[str]:
    """MigStrategy Single: "The uniform partition size is controlled by `nvidia.migProfiles` (exactly one element
    required)"."""
    nvidia = (body.get("gpuProfile") or {}).get("nvidia") or {}
    if nvidia.get("migStrategy") == "Single" and len(nvidia.get("migProfiles") or []) != 1:
        return ["properties.gpuProfile.nvidia.migProfiles: migStrategy Single needs exactly one profile"]
    return []


def target_version_only_with_its_channel(body: Mapping[str, Any]) -> list[str]:
    """AutoUpgradeProfileProperties.targetKubernetesVersion: "If upgrade channel is set to TargetKubernetesVersion,
    this field must not be empty. If upgrade channel is not TargetKubernetesVersion, this field must be empty";
    longTermSupport: "If upgrade channel is not TargetKubernetesVersion, this field must be False"."""
    targeted = body.get("channel") == "TargetKubernetesVersion"
    problems: list[str] = []
    if targeted != bool(body.get("targetKubernetesVersion")):
        problems.append("properties.targetKubernetesVersion: set exactly when channel is TargetKubernetesVersion")
    if body.get("longTermSupport") and not targeted:
        problems.append("properties.longTermSupport: only with channel TargetKubernetesVersion")
    return problems


RULES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "targetVersionOnlyWithItsChannel": target_version_only_with_its_channel,
    "poolSizeInWholeTiB": pool_size_in_whole_tib,
    "customThroughputOnlyManualFlexible": custom_throughput_only_manual_flexible,
    "migProfilesExcludeGpuInstanceProfile": mig_profiles_exclude_gpu_instance_profile,
    "singleMigStrategyTakesOneProfile": single_mig_strategy_takes_one_profile,
}


def request_problems(inputs: Mapping[str, Any], specs: Mapping[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    """Everything the REST spec at the resource's exact API version refuses in a generic resource's request."""
    key = (inputs.get("resourceProviderNamespace"), inputs.get("resourceType"), inputs.get("apiVersion"))
    spec = specs.get(key)  # type: ignore[arg-type]
    if spec is None:
        return [f"{'/'.join(map(str, key))}: no spec excerpt in {SPECS.name}/ for this type and API version"]
    required, allowed = ENVELOPES[spec["envelope"]]
    body = {k: v for k, v in inputs.items() if k not in ADDRESS_KEYS}
    problems = [f"{k}: required by {spec['envelope']}, not sent" for k in sorted(required - set(body))]
    problems += [f"{k}: not part of a {spec['envelope']} request" for k in sorted(set(body) - allowed)]
    definitions = spec["definitions"]
    properties = body.get("properties", {})
    problems += schema_problems(properties, definitions[spec["body"]], definitions, "properties")
    for rule in spec["rules"]:
        problems += RULES[rule](properties)
    return problems


def _create_only(value: Any, schema: Mapping[str, Any], definitions: Mapping[str, Any], path: str) -> list[str]:
    schema = _resolve(schema, definitions)
    if not isinstance(value, dict):
        return []
    found: list[str] = []
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key, item in value.items():
        if key not in properties:
            continue
        mutability = properties[key].get("x-ms-mutability") or _resolve(properties[key], definitions).get(
            "x-ms-mutability"
        )
        if mutability is not None and "update" not in mutability:
            found.append(f"{path}.{key}")
        else:
            found += _create_only(item, properties[key], definitions, f"{path}.{key}")
    return found


def create_only_paths(inputs: Mapping[str, Any], specs: Mapping[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    """Input paths of a generic resource's request the spec marks `x-ms-mutability` without "update": the service
    takes them at create only, so a change needs a new resource (e.g. `properties.updateStrategyId`)."""
    key = (inputs.get("resourceProviderNamespace"), inputs.get("resourceType"), inputs.get("apiVersion"))
    spec = specs.get(key)  # type: ignore[arg-type]
    if spec is None:
        return []
    definitions = spec["definitions"]
    return _create_only(inputs.get("properties", {}), definitions[spec["body"]], definitions, "properties")
