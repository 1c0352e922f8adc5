"""Reduced JSON Schemas of the Kueue objects the platform renders, and the CEL rules they rely on.

No registry package ships Kueue's CRDs (PyPI and npm were checked), and the CRD files may not be
copied here, so each schema below restates, for exactly the fields we set, the types, required
fields, enums, bounds and patterns of the v1beta2 `openAPIV3Schema` in

    kubernetes-sigs/kueue @ v0.19.2, config/components/crd/bases/kueue.x-k8s.io_<plural>.yaml
    (identical to charts/kueue/templates/crd/ at the same tag)

`additionalProperties: false` at every level we write: a misspelt field would otherwise be pruned
by the API server without an error. CEL rules (`x-kubernetes-validations`) are checked by
`cel_violations`, one function per rule, citing the CRD path of each.
"""

from __future__ import annotations

from typing import Any

import jsonschema

API_VERSION = "kueue.x-k8s.io/v1beta2"
# metadata.name of cluster-scoped objects and most spec name references (DNS-1123 subdomain).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# resourceGroups[].flavors[].resources[].nominalQuota/borrowingLimit/lendingLimit: int-or-string.
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
INT_OR_QUANTITY: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": QUANTITY}]}
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _object(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        schema["required"] = required
    return schema


def _metadata(namespaced: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"name": {"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN}}
    if namespaced:
        props["namespace"] = {"type": "string", "maxLength": 63, "pattern": DNS_LABEL}
    return _object(props, ["name", "namespace"] if namespaced else ["name"])


def _kind(kind: str, spec: dict[str, Any], namespaced: bool = False) -> dict[str, Any]:
    return _object(
        {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": kind},
            "metadata": _metadata(namespaced),
            "spec": spec,
        },
        ["apiVersion", "kind", "metadata", "spec"],
    )


# kueue.x-k8s.io_resourceflavors.yaml, v1beta2 spec.
RESOURCE_FLAVOR = _kind(
    "ResourceFlavor",
    _object(
        {
            "nodeLabels": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string"}},
            "nodeTaints": {
                "type": "array",
                "maxItems": 8,
                "items": _object(
                    {
                        "key": {"type": "string"},
                        "value": {"type": "string"},
                        # enum: the CEL rule "supported taint effect values" on nodeTaints.
                        "effect": {"type": "string", "enum": TAINT_EFFECTS},
                    },
                    ["effect", "key"],
                ),
            },
            "tolerations": {
                "type": "array",
                "maxItems": 8,
                "items": _object(
                    {
                        "key": {"type": "string"},
                        # enum: the CEL rule "supported toleration values: 'Equal'(default), 'Exists'".
                        "operator": {"type": "string", "enum": ["Equal", "Exists"]},
                        "value": {"type": "string"},
                        "effect": {"type": "string", "enum": TAINT_EFFECTS},
                    }
                ),
            },
        }
    ),
)

# kueue.x-k8s.io_clusterqueues.yaml, v1beta2 spec.
CLUSTER_QUEUE = _kind(
    "ClusterQueue",
    _object(
        {
            "admissionChecksStrategy": _object(
                {
                    "admissionChecks": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 64,
                        "items": _object({"name": {"type": "string", "minLength": 1, "maxLength": 316}}, ["name"]),
                    }
                },
                ["admissionChecks"],
            ),
            "cohortName": {"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN},
            "namespaceSelector": _object(
                {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}
            ),
            "preemption": _object(
                {
                    "withinClusterQueue": {
                        "type": "string",
                        "enum": ["Never", "LowerPriority", "LowerOrNewerEqualPriority"],
                    },
                    "reclaimWithinCohort": {"type": "string", "enum": ["Never", "LowerPriority", "Any"]},
                    "borrowWithinCohort": _object({"policy": {"type": "string", "enum": ["Never", "LowerPriority"]}}),
                }
            ),
            "queueingStrategy": {"type": "string", "enum": ["StrictFIFO", "BestEffortFIFO"]},
            "resourceGroups": {
                "type": "array",
                "maxItems": 16,
                "items": _object(
                    {
                        "coveredResources": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 64,
                            "items": {"type": "string"},
                        },
                        "flavors": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 64,
                            "items": _object(
                                {
                                    "name": {"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN},
                                    "resources": {
                                        "type": "array",
                                        "minItems": 1,
                                        "maxItems": 64,
                                        "items": _object(
                                            {
                                                "name": {"type": "string"},
                                                "nominalQuota": INT_OR_QUANTITY,
                                                "borrowingLimit": INT_OR_QUANTITY,
                                                "lendingLimit": INT_OR_QUANTITY,
                                            },
                                            ["name", "nominalQuota"],
                                        ),
                                    },
                                },
                                ["name", "resources"],
                            ),
                        },
                    },
                    ["coveredResources", "flavors"],
                ),
            },
        }
    ),
)

# kueue.x-k8s.io_localqueues.yaml, v1beta2 spec.
LOCAL_QUEUE = _kind(
    "LocalQueue",
    _object({"clusterQueue": {"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN}}),
    namespaced=True,
)

# kueue.x-k8s.io_admissionchecks.yaml, v1beta2 spec.
ADMISSION_CHECK = _kind(
    "AdmissionCheck",
    _object(
        {
            "controllerName": {"type": "string", "minLength": 1, "maxLength": 253},
            "parameters": _object(
                {
                    "apiGroup": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": DNS_SUBDOMAIN},
                    # The CRD writes ^(?i)...; Python's re needs the inline flag first.
                    "kind": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 63,
                        "pattern": r"(?i)^[a-z]([-a-z0-9]*[a-z0-9])?$",
                    },
                    "name": {"type": "string", "minLength": 1, "maxLength": 63, "pattern": DNS_LABEL},
                },
                ["apiGroup", "kind", "name"],
            ),
        },
        ["controllerName"],
    ),
)

# kueue.x-k8s.io_provisioningrequestconfigs.yaml, v1beta2 spec.
PROVISIONING_REQUEST_CONFIG = _kind(
    "ProvisioningRequestConfig",
    _object(
        {
            "provisioningClassName": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": DNS_SUBDOMAIN},
            # x-kubernetes-list-type: set
            "managedResources": {"type": "array", "maxItems": 100, "items": {"type": "string"}, "uniqueItems": True},
            "podSetMergePolicy": {
                "type": "string",
                "enum": ["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"],
            },
        },
        ["provisioningClassName"],
    ),
)

# kueue.x-k8s.io_cohorts.yaml, v1beta2 spec: we set no field (an explicit, visible cohort).
COHORT = _kind("Cohort", _object({}))

# kueue.x-k8s.io_multikueueclusters.yaml, v1beta2 spec (clusterSource: exactly one of kubeConfig, clusterProfileRef).
MULTIKUEUE_CLUSTER = _kind(
    "MultiKueueCluster",
    _object(
        {
            "clusterSource": _object(
                {
                    "kubeConfig": _object(
                        {
                            "location": {"type": "string", "minLength": 1, "maxLength": 256},
                            "locationType": {"type": "string", "enum": ["Secret", "Path"]},
                        },
                        ["location"],
                    ),
                    "clusterProfileRef": _object(
                        {"name": {"type": "string", "minLength": 1, "maxLength": 256}}, ["name"]
                    ),
                }
            )
        },
        ["clusterSource"],
    ),
)

# kueue.x-k8s.io_multikueueconfigs.yaml, v1beta2 spec.
MULTIKUEUE_CONFIG = _kind(
    "MultiKueueConfig",
    _object(
        {
            "clusters": {
                "type": "array",
                "minItems": 1,
                "maxItems": 20,
                "items": {"type": "string", "maxLength": 256},
            },
            "quotaManagement": {"type": "string", "enum": ["Manual", "Automated"]},
        },
        ["clusters"],
    ),
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "MultiKueueCluster": MULTIKUEUE_CLUSTER,
    "MultiKueueConfig": MULTIKUEUE_CONFIG,
    "ResourceFlavor": RESOURCE_FLAVOR,
    "ClusterQueue": CLUSTER_QUEUE,
    "LocalQueue": LOCAL_QUEUE,
    "AdmissionCheck": ADMISSION_CHECK,
    "ProvisioningRequestConfig": PROVISIONING_REQUEST_CONFIG,
    "Cohort": COHORT,
}


def schema_errors(manifest: dict[str, Any]) -> list[str]:
    """Every schema violation of one rendered Kueue object, as `path: message`."""
    schema = SCHEMAS[manifest["kind"]]
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(manifest)]


def cel_violations(manifest: dict[str, Any]) -> list[str]:
    """The CRDs' CEL rules (x-kubernetes-validations) that apply to the fields we set."""
    spec = manifest.get("spec") or {}
    problems: list[str] = []
    if manifest["kind"] == "ClusterQueue":
        for g, group in enumerate(spec.get("resourceGroups") or []):
            covered = group["coveredResources"]
            for flavor in group["flavors"]:
                # resourceGroups[]: "flavors must have the same number of resources as the coveredResources";
                # Kueue's webhook further requires the same names in the same order.
                names = [r["name"] for r in flavor["resources"]]
                if names != covered:
                    problems.append(f"resourceGroups[{g}] flavor {flavor['name']}: resources {names} != {covered}")
        # spec: "borrowingLimit must be nil when cohort is empty".
        if "cohortName" not in spec:
            for group in spec.get("resourceGroups") or []:
                for flavor in group["flavors"]:
                    if any("borrowingLimit" in r for r in flavor["resources"]):
                        problems.append(f"flavor {flavor['name']}: borrowingLimit without cohortName")
        # preemption: "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never".
        preemption = spec.get("preemption") or {}
        if preemption.get("reclaimWithinCohort", "Never") == "Never" and (
            (preemption.get("borrowWithinCohort") or {}).get("policy", "Never") != "Never"
        ):
            problems.append("preemption: borrowWithinCohort needs reclaimWithinCohort")
    if manifest["kind"] == "MultiKueueCluster":
        # spec.clusterSource: "exactly one of the fields in [kubeConfig clusterProfileRef]".
        source = spec.get("clusterSource") or {}
        if ("kubeConfig" in source) == ("clusterProfileRef" in source):
            problems.append("clusterSource: exactly one of kubeConfig, clusterProfileRef")
    if manifest["kind"] == "MultiKueueConfig":
        # spec.clusters: "must be unique".
        clusters = spec.get("clusters") or []
        if len(set(clusters)) != len(clusters):
            problems.append(f"clusters: {clusters} must be unique")
    if manifest["kind"] == "ResourceFlavor":
        for t, toleration in enumerate(spec.get("tolerations") or []):
            # tolerations: operator Exists when key is empty; no value with Exists; tolerationSeconds only NoExecute.
            if not toleration.get("key") and toleration.get("operator") != "Exists":
                problems.append(f"tolerations[{t}]: empty key needs operator Exists")
            if toleration.get("operator") == "Exists" and "value" in toleration:
                problems.append(f"tolerations[{t}]: a value must be empty when operator is Exists")
    return problems
