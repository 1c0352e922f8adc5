"""What a team member's storage attempts meet in a rendered stack: the API server's ResourceQuota admission of a
claim, the StorageClass (and AKS's built-in ones) the claim is provisioned by, where the driver keeps the account
key, and the ValidatingAdmissionPolicies bound to the namespace, their CEL evaluated (tests/upstream/admission_cel.py).

Models, each from its source:
- ResourceQuota admission of a PersistentVolumeClaim (kubernetes v1.36 pkg/quota/v1/evaluator/core/
  persistent_volume_claims.go): the claim counts against `requests.storage`, `persistentvolumeclaims`,
  `<class>.storageclass.storage.k8s.io/requests.storage` and `.../persistentvolumeclaims`; any quota of the
  namespace whose hard limit the claim would exceed refuses it.
- The key Secret's namespace: `secretNamespace` of the class, else the claim's namespace (azurefile-csi-driver and
  blob-csi-driver docs/driver-parameters.md).
- AKS's built-in classes, which the stack does not render: their parameters as AKS creates them (no
  `secretNamespace`).

Rows a tenancy model can reuse: `claim_refusal`, `key_reachable_by_team`, `pod_refusal`.
"""

from __future__ import annotations

import re
from typing import Any

from aks_gpu_platform.testing import Recording
from tests.upstream.admission_cel import verdict

QUOTA = "kubernetes:core/v1:ResourceQuota"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
KEY_DRIVERS = ("file.csi.azure.com", "blob.csi.azure.com")
AKS_BUILT_IN_CLASSES: dict[str, dict[str, Any]] = {
    "azurefile": {"provisioner": "file.csi.azure.com", "parameters": {"skuName": "Standard_LRS"}},
    "azurefile-premium": {"provisioner": "file.csi.azure.com", "parameters": {"skuName": "Premium_LRS"}},
    "azurefile-csi": {"provisioner": "file.csi.azure.com", "parameters": {"skuName": "Standard_LRS"}},
    "azurefile-csi-premium": {"provisioner": "file.csi.azure.com", "parameters": {"skuName": "Premium_LRS"}},
    "azureblob-fuse-premium": {"provisioner": "blob.csi.azure.com", "parameters": {"skuName": "Premium_LRS"}},
    "azureblob-nfs-premium": {
        "provisioner": "blob.csi.azure.com",
        "parameters": {"skuName": "Premium_LRS", "protocol": "nfs"},
    },
    "managed-csi": {"provisioner": "disk.csi.azure.com", "parameters": {"skuname": "StandardSSD_LRS"}},
}
_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "k": 10**3, "M": 10**6, "G": 10**9}


def quantity(value: str | int) -> int:
    """A storage quantity in bytes (binary and decimal suffixes; what claims and quotas here use)."""
    match = re.fullmatch(r"(\d+)([KMGTP]i|[kMG])?", str(value))
    assert match, f"unmodelled quantity {value!r}"
    return int(match.group(1)) * _UNITS[match.group(2) or ""]


def classes(recording: Recording) -> dict[str, dict[str, Any]]:
    """Every StorageClass a claim could name on the stack's cluster: AKS's built-ins and the rendered ones."""
    rendered = {r.inputs["metadata"]["name"]: r.inputs for r in recording.of_type(STORAGE_CLASS)}
    return {**AKS_BUILT_IN_CLASSES, **rendered}


def claim_refusal(recording: Recording, namespace: str, storage_class: str, size: str = "1Gi") -> str | None:
    """Why the API server refuses a claim of `size` on `storage_class` in an empty `namespace`, or None."""
    requested = {
        "requests.storage": quantity(size),
        "persistentvolumeclaims": 1,
        f"{storage_class}.storageclass.storage.k8s.io/requests.storage": quantity(size),
        f"{storage_class}.storageclass.storage.k8s.io/persistentvolumeclaims": 1,
    }
    for quota in recording.of_type(QUOTA):
        if quota.inputs["metadata"].get("namespace") != namespace:
            continue
        for resource, hard in quota.inputs["spec"]["hard"].items():
            if resource in requested and requested[resource] > quantity(hard):
                return f"exceeded quota: {quota.inputs['metadata']['name']}, requested: {resource}, limited: {hard}"
    return None


def key_namespace(storage_class: dict[str, Any], claim_namespace: str) -> str | None:
    """Where the driver stores the account key of a claim on this class (None: the driver stores no key)."""
    if storage_class["provisioner"] not in KEY_DRIVERS:
        return None
    parameters = storage_class.get("parameters", {})
    if parameters.get("protocol") == "nfs" or parameters.get("storeAccountKey") == "false":
        return None
    return parameters.get("secretNamespace", claim_namespace)


def key_reachable_by_team(recording: Recording, namespace: str, team_namespaces: set[str]) -> list[str]:
    """Classes a claim in `namespace` is admitted on whose account key the driver puts in a team namespace."""
    reachable = []
    for name, storage_class in classes(recording).items():
        if claim_refusal(recording, namespace, name) is not None:
            continue
        where = key_namespace(storage_class, namespace)
        if where in team_namespaces:
            reachable.append(f"{name} (key Secret in {where})")
    return reachable


def bound_policies(recording: Recording, namespace: str) -> list[dict[str, Any]]:
    """ValidatingAdmissionPolicies whose binding selects `namespace` by its name label."""
    names = set()
    for binding in recording.of_type(BINDING):
        spec = binding.inputs["spec"]
        selector = spec.get("matchResources", {}).get("namespaceSelector", {}).get("matchLabels", {})
        if selector.get("kubernetes.io/metadata.name") == namespace and "Deny" in spec["validationActions"]:
            names.add(spec["policyName"])
    return [p.inputs for p in recording.of_type(POLICY) if p.inputs["metadata"]["name"] in names]


def _matches_pods(policy: dict[str, Any]) -> bool:
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    return any("pods" in rule["resources"] and "CREATE" in rule["operations"] for rule in rules)


def pod_refusal(recording: Recording, namespace: str, pod_spec: dict[str, Any]) -> str | None:
    """The message of the first policy bound to `namespace` that refuses a pod with this spec, or None."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace}, "spec": pod_spec}
    for policy in bound_policies(recording, namespace):
        if _matches_pods(policy) and (message := verdict(policy, pod)) is not None:
            return message
    return None


PV = "kubernetes:core/v1:PersistentVolume"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"


def static_bind_refusal(recording: Recording, namespace: str, claim: str, volume_name: str) -> str | None:
    """Why a claim `namespace/claim` naming `volume_name` never binds (the PV controller binds a pre-bound volume
    only to the claim its claimRef names: kubernetes pkg/controller/volume/persistentvolume), or None."""
    for volume in recording.of_type(PV):
        if volume.inputs["metadata"]["name"] != volume_name:
            continue
        ref = volume.inputs["spec"].get("claimRef")
        if ref is not None and (ref.get("namespace"), ref.get("name")) != (namespace, claim):
            return f"{volume_name} is reserved for {ref.get('namespace')}/{ref.get('name')}"
        return None
    return f"no volume {volume_name}"


def identity_token_exchange_refusal(recording: Recording, client_id: str, namespace: str, account: str) -> str | None:
    """Why Entra ID refuses the token of service account `namespace/account` for the identity with `client_id`
    (no federated credential of that identity names the account as its subject), or None."""
    identities = {r.urn: r for r in recording.of_type(IDENTITY) if r.outputs.get("clientId") == client_id}
    if not identities:
        return f"no identity {client_id}"
    names = {r.outputs.get("name") for r in identities.values()}
    subject = f"system:serviceaccount:{namespace}:{account}"
    for credential in recording.of_type(CREDENTIAL):
        if credential.inputs.get("resourceName") in names and credential.inputs.get("subject") == subject:
            return None
    return f"no federated credential of {client_id} trusts {subject}"
