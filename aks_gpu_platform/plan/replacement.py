"""Whether Pulumi replaces a resource for a change, in which order, and which in-place updates Azure refuses.

Per provider (the versions this project pins):
- azure-native: a changed path parameter (the names in the resource's ARM ID) or a property in the
  provider's force-new list (pulumi/pulumi-azure-native provider/pkg/provider/diff.go and
  provider/pkg/gen/replacement.go). Properties the Azure API spec marks create-only
  (x-ms-mutability) also force a replacement in `pulumi preview`; that metadata ships inside the
  provider plugin and is not available offline, so `pulumi preview` can show more replacements
  than this diff. The provider asks for delete-before-replace whenever an explicitly named
  resource is replaced (provider.go, Diff), unless the program sets deleteBeforeReplace.
- kubernetes: metadata.name / namespace and the provider's per-kind immutable fields
  (pulumi/pulumi-kubernetes provider/pkg/provider/diff.go); the provider deletes first when the
  object keeps its name. Helm releases replace on name / namespace, create-before-delete
  (provider/pkg/provider/helm_release.go).
- any resource: a changed path listed in its replaceOnChanges option.
An in-place update Azure refuses (a node pool moved to another subnet) is marked refused: `pulumi up` would stop
halfway.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from aks_gpu_platform.testing.arm_paths import AZURE_PATH_PARAMETERS

Order = Literal["create-before-delete", "delete-before-replace"]

# The provider's force-new properties (replacement.go forceNewMap) for the types registered here.
AZURE_FORCE_NEW: dict[str, tuple[str, ...]] = {
    "azure-native:authorization:RoleAssignment": ("principalId", "scope"),
    "azure-native:containerservice:AgentPool": ("gpuInstanceProfile", "vmSize"),
    "azure-native:containerservice:ManagedCluster": (
        "diskEncryptionSetID",
        "dnsPrefix",
        "fqdnSubdomain",
        "linuxProfile",
        "location",
        "nodeResourceGroup",
        "windowsProfile",
        "networkProfile.serviceCidr",
        "networkProfile.serviceCidrs",
        "networkProfile.dnsServiceIP",
        "networkProfile.networkMode",
        "networkProfile.networkPlugin",
        "networkProfile.networkPluginMode",
        "networkProfile.podCidr",
        "networkProfile.networkDataplane",
        "networkProfile.networkPolicy",
        "networkProfile.outboundType",
    ),
    "azure-native:network:PrivateEndpoint": ("subnet",),
    "azure-native:network:VirtualNetwork": ("location",),
    "azure-native:resources:ResourceGroup": ("location",),
    "azure-native:storage:StorageAccount": ("isHnsEnabled", "location"),
}

# Settings Azure fixes when a Managed Lustre filesystem is created (Azure Managed Lustre docs: "can't be
# changed after you create your file system"); whether the provider replaces or Azure rejects the update
# depends on the API spec's metadata, so they are reported as a replacement with that caveat.
AZURE_CREATE_ONLY: dict[str, tuple[str, ...]] = {
    "azure-native:storagecache:AmlFilesystem": (
        "storageCapacityTiB",
        "sku",
        "zones",
        "filesystemSubnet",
        "hsm",
        "encryptionSettings",
    ),
}

# Updates the provider sends in place and Azure refuses (not force-new in azure-native's forceNewMap, fixed by
# the service): AKS cannot move a node pool to another subnet ("You can't change the subnet of an existing node
# pool", MicrosoftDocs/azure-aks-docs articles/aks/node-pool-unique-subnet.md, limitations). Generic agentPools
# bodies carry the same fields under `properties`.
AKS_POOL_SUBNET_FIELDS = ("vnetSubnetID", "podSubnetID")
POOL_MOVE_HINT = (
    "AKS refuses to move a node pool to another subnet: rename the pool in config (a new pool is created in the "
    "new subnet, then the old one is removed) instead of changing its subnet"
)


def refused_update(entry: Mapping[str, Any], path: str) -> str | None:
    """Why Azure refuses an in-place change of `path` on this resource, or None."""
    fields: tuple[str, ...] = ()
    if entry["type"] == "azure-native:containerservice:AgentPool":
        fields = AKS_POOL_SUBNET_FIELDS
    elif entry["type"] == "azure-native:resources:Resource" and entry["inputs"].get("resourceType") == "agentPools":
        fields = tuple(f"properties.{f}" for f in AKS_POOL_SUBNET_FIELDS)
    return POOL_MOVE_HINT if covered(path, fields) else None


_LABEL_SELECTOR = ("matchExpressions", "matchLabels")
_SELECTOR = ("spec.selector", *(f"spec.selector.{k}" for k in _LABEL_SELECTOR))
# pulumi-kubernetes v4 provider/pkg/provider/diff.go forceNew, by kind (apps/v1, batch/v1, core/v1,
# storage.k8s.io/v1, rbac/v1); ConfigMap data and Secret data replace unless the provider enables
# mutability (enableConfigMapMutable / enableSecretMutable default to false; this project sets neither).
KUBERNETES_FORCE_NEW: dict[str, tuple[str, ...]] = {
    "ClusterRoleBinding": ("roleRef",),
    "ConfigMap": ("binaryData", "data"),
    "DaemonSet": _SELECTOR,
    "Deployment": _SELECTOR,
    "Job": ("spec.completions", "spec.parallelism", "spec.template", *_SELECTOR),
    "PersistentVolume": ("spec.csi",),
    "PersistentVolumeClaim": ("spec.accessModes", "spec.storageClassName", "spec.volumeName", *_SELECTOR),
    "RoleBinding": ("roleRef",),
    "Secret": ("type", "data", "stringData"),
    "Service": ("spec.clusterIP",),
    "StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
        *_SELECTOR,
    ),
    "StorageClass": ("parameters", "provisioner"),
}
KUBERNETES_IDENTITY = ("metadata.name", "metadata.namespace")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_FORCE_NEW = ("name", "namespace")


def _rule_pattern(rule: str) -> re.Pattern[str]:
    """A Pulumi property path (`spec.template`, `containers[*].image`, `*`) matching it and what is under it."""
    if rule == "*":
        return re.compile(".*")
    body = re.escape(rule).replace(r"\[\*\]", r"\[[^\]]+\]")
    return re.compile(rf"^{body}(?:[.\[]|$)")


def covered(path: str, rules: Sequence[str]) -> str | None:
    return next((rule for rule in rules if _rule_pattern(rule).match(path)), None)


def _kind(type_token: str) -> str:
    return type_token.rsplit(":", 1)[-1]


def replace_reason(type_token: str, path: str, replace_on_changes: Sequence[str]) -> str | None:
    """Why changing `path` of a resource of this type forces a replacement, or None for an in-place update."""
    if rule := covered(path, replace_on_changes):
        return f"replaceOnChanges {rule}"
    if type_token.startswith("azure-native:"):
        if covered(path, AZURE_PATH_PARAMETERS.get(type_token, ())):
            return "part of the Azure resource ID"
        if rule := covered(path, AZURE_FORCE_NEW.get(type_token, ())):
            return f"azure-native replaces on {rule}"
        if rule := covered(path, AZURE_CREATE_ONLY.get(type_token, ())):
            return f"Azure sets {rule} only at creation"
        return None
    if type_token == HELM_RELEASE:
        return f"a Helm release is replaced on {rule}" if (rule := covered(path, HELM_FORCE_NEW)) else None
    if type_token.startswith("kubernetes:"):
        if rule := covered(path, KUBERNETES_IDENTITY):
            return f"the object's {rule.split('.')[-1]}"
        if rule := covered(path, KUBERNETES_FORCE_NEW.get(_kind(type_token), ())):
            return f"Kubernetes cannot change {_kind(type_token)} {rule}"
    return None


def _own_name(entry: Mapping[str, Any]) -> str | None:
    params = AZURE_PATH_PARAMETERS.get(entry["type"])
    return params[-1] if params else None


def replacement_order(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[Order, str]:
    """Which of delete and create Pulumi runs first, and why (the program's option wins over the provider)."""
    chosen = after["options"].get("deleteBeforeReplace")
    if chosen is not None:
        order: Order = "delete-before-replace" if chosen else "create-before-delete"
        return order, f"the program sets deleteBeforeReplace: {'true' if chosen else 'false'}"
    type_token = after["type"]
    inputs = after["inputs"]
    if type_token.startswith("azure-native:"):
        own = _own_name(after)
        if own is None:
            return "delete-before-replace", "azure-native deletes first unless the name is random (type not tabled)"
        if own in inputs:
            return "delete-before-replace", f"azure-native deletes an explicitly named resource first ({own} is set)"
        return "create-before-delete", f"{own} is generated, so the new resource gets a new random name"
    if type_token.startswith("kubernetes:") and type_token != HELM_RELEASE:
        old_meta, new_meta = before["inputs"].get("metadata") or {}, inputs.get("metadata") or {}
        same = all(old_meta.get(k) == new_meta.get(k) for k in ("name", "namespace"))
        if new_meta.get("name") and same:
            return "delete-before-replace", "the new object keeps the old one's name, which cannot exist twice"
    return "create-before-delete", "Pulumi's default"


def same_target(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two entries address the same cloud object (same Azure ID parts, same Kubernetes kind/namespace/name)."""
    if a["type"] != b["type"]:
        return False
    if a["type"].startswith("azure-native:"):
        params = AZURE_PATH_PARAMETERS.get(a["type"], ())
        return bool(params) and all(
            a["inputs"].get(p) == b["inputs"].get(p) and a["inputs"].get(p) is not None for p in params
        )
    if a["type"].startswith("kubernetes:"):
        meta_a, meta_b = a["inputs"].get("metadata") or {}, b["inputs"].get("metadata") or {}
        return bool(meta_a.get("name")) and all(meta_a.get(k) == meta_b.get(k) for k in ("name", "namespace"))
    return False
