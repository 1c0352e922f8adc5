"""`make plan-diff BASE=<ref>`: what a change does to a stack, before any cloud call.

    aks-gpu-platform plan-diff --stack dev                      # the working tree against the default branch
    aks-gpu-platform plan-diff --stack dev --base v1.2.0        # ... against any commit, branch or tag
    aks-gpu-platform plan-diff --base-plan a.json --head-plan b.json

The offline counterpart of `pulumi preview` on a pull request. It plans the working tree and the
BASE ref (checked out with `git worktree add` into a temporary folder and planned there with this
virtualenv), then compares the two `plan.json` files URN by URN: what the change creates, deletes,
updates (which inputs, before and after) and replaces, and in which order Pulumi would replace.

How a replacement is recognised, per provider (the versions this project pins):
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
An in-place update Azure refuses (a node pool moved to another subnet) is marked refused, and the
command exits 1: `pulumi up` would stop halfway. Changes under a path in ignoreChanges are not
changes. Values only the mocks know are compared as their `<computed: origin>` placeholders, so
they never show up as changes by themselves.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from aks_gpu_platform.config.catalog.vm_sizes import vcpus_and_quota_family
from aks_gpu_platform.testing.arm_paths import AZURE_PATH_PARAMETERS

from . import cost
from .document import PLAN_FILE, PlanFileError, read_plan
from .offline import find_project

# The module that writes plan.json, where the platform's own repository keeps it (before and after it moved into
# the package): a base of that repository without it cannot be compared, and is refused before it is checked out.
PLAN_WRITERS = {"aks_gpu_platform/plan/__main__.py": "aks_gpu_platform.plan", "tools/plan_document.py": "tools.plan"}
PREDATES = "it predates machine-readable plans"

Op = Literal["create", "update", "replace", "delete"]
Order = Literal["create-before-delete", "delete-before-replace"]
ABSENT = "<absent>"

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
    return POOL_MOVE_HINT if _covered(path, fields) else None


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


@dataclass(frozen=True)
class PropertyChange:
    path: str
    before: Any
    after: Any
    replaces: str | None
    """Why this change forces a replacement; None when Pulumi updates in place."""
    refused: str | None = None
    """Why Azure refuses this in-place update (the deploy would fail halfway); None when it accepts it."""


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    name: str
    op: Op
    changes: tuple[PropertyChange, ...] = ()
    order: Order | None = None
    order_why: str = ""
    notes: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()
    """The stack-config keys whose change this resource's change follows from, where the plans tell."""


@dataclass(frozen=True)
class FigureChange:
    """A summary figure of the plan (a vCPU quota, the monthly floor or ceiling) before and after."""

    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float:
        return (self.after or 0) - (self.before or 0)


@dataclass(frozen=True)
class EntityChange:
    """A team's (GPUs of nominal quota, monthly ceiling) or a model's (monthly floor and ceiling) figures, before and
    after; None on the side that lacks the team or model."""

    name: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None


@dataclass(frozen=True)
class PlanDiff:
    changes: list[ResourceChange]
    unchanged: int
    outputs_changed: list[str]
    quota: list[FigureChange] = field(default_factory=lambda: list[FigureChange]())
    monthly: list[FigureChange] = field(default_factory=lambda: list[FigureChange]())
    summary_missing: bool = False
    """The base plan predates summaries: quota and cost deltas cannot be shown."""
    unpriced_added: list[str] = field(default_factory=lambda: list[str]())
    """Items the head plan bills but cannot price that the base did not have: not in the cost figures."""
    verdicts_added: list[str] = field(default_factory=lambda: list[str]())
    """Errors and warnings of the head plan the base did not have (`error: ...`, `warning: ...`)."""
    verdicts_removed: list[str] = field(default_factory=lambda: list[str]())
    teams: list[EntityChange] = field(default_factory=lambda: list[EntityChange]())
    models: list[EntityChange] = field(default_factory=lambda: list[EntityChange]())
    config_changes: list[PropertyChange] = field(default_factory=lambda: list[PropertyChange]())
    """What differs between the stack configs the two plans ran with (empty when a plan predates carrying it)."""
    summary_parts_missing: tuple[str, ...] = ()
    """Parts of the summary the base plan predates (verdicts, models, teams, config): not compared."""

    def of(self, op: Op) -> list[ResourceChange]:
        return [c for c in self.changes if c.op == op]

    @property
    def refused(self) -> list[ResourceChange]:
        """Changes Azure would refuse: the plan must not be applied as it is."""
        return [c for c in self.changes if any(p.refused for p in c.changes)]


# What identifies an element of a list of objects, most specific first: a container, a pool, a team, a Prometheus
# rule (record or alert), a Kueue flavor, a toleration (key and effect). A list whose elements all carry one of these,
# each value once, is compared element by element by it, so an insertion reads as one insertion.
LIST_KEYS: tuple[tuple[str, ...], ...] = (
    ("name",),
    ("record",),
    ("alert",),
    ("pool",),
    ("team",),
    ("key", "effect"),
    ("key",),
    ("type",),
)


def _list_key(*lists: Sequence[Any]) -> tuple[str, ...] | None:
    """The fields that tell apart the elements of each of `lists`, or None (matched by position and content)."""
    items = [item for each in lists for item in each]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for fields in LIST_KEYS:
        keyed = [[tuple(item.get(f) for f in fields) for item in each] for each in lists]
        if all(isinstance(v, str) for each in keyed for key in each for v in key) and all(
            len(set(each)) == len(each) for each in keyed
        ):
            return fields
    return None


def _element(path: str, fields: tuple[str, ...], item: Mapping[str, Any]) -> str:
    return f"{path}[{','.join(f'{f}={item[f]}' for f in fields)}]"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _list_leaves(before: Sequence[Any], after: Sequence[Any], path: str) -> Iterator[tuple[str, Any, Any]]:
    """Lists of objects with a stable key are matched by it; other lists by their longest common run of equal
    elements (difflib), so an element inserted or removed anywhere is one change, not a change of every index
    after it."""
    fields = _list_key(before, after)
    if fields is not None:
        old = {tuple(item[f] for f in fields): item for item in before}
        new = {tuple(item[f] for f in fields): item for item in after}
        for key in [*old, *(k for k in new if k not in old)]:
            item = old.get(key) or new[key]
            yield from _leaves(old.get(key, ABSENT), new.get(key, ABSENT), _element(path, fields, item))
        return
    matcher = difflib.SequenceMatcher(None, [_canonical(v) for v in before], [_canonical(v) for v in after], False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                yield from _leaves(before[i1 + offset], after[j1 + offset], f"{path}[{j1 + offset}]")
            continue
        for index in range(i1, i2):
            yield f"{path}[{index}]", before[index], ABSENT
        for index in range(j1, j2):
            yield f"{path}[{index}]", ABSENT, after[index]


def _leaves(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, before, after) of every difference; ABSENT on the side that lacks a key or list element."""
    if isinstance(before, dict) and isinstance(after, dict):
        before_map: Mapping[str, Any] = before
        after_map: Mapping[str, Any] = after
        for key in sorted(set(before_map) | set(after_map)):
            child = f"{path}.{key}" if path else key
            yield from _leaves(before_map.get(key, ABSENT), after_map.get(key, ABSENT), child)
    elif isinstance(before, list) and isinstance(after, list):
        yield from _list_leaves(before, after, path)  # pyright: ignore[reportUnknownArgumentType]
    elif before != after:
        yield path, before, after


def _rule_pattern(rule: str) -> re.Pattern[str]:
    """A Pulumi property path (`spec.template`, `containers[*].image`, `*`) matching it and what is under it."""
    if rule == "*":
        return re.compile(".*")
    body = re.escape(rule).replace(r"\[\*\]", r"\[[^\]]+\]")
    return re.compile(rf"^{body}(?:[.\[]|$)")


def _covered(path: str, rules: Sequence[str]) -> str | None:
    return next((rule for rule in rules if _rule_pattern(rule).match(path)), None)


def _kind(type_token: str) -> str:
    return type_token.rsplit(":", 1)[-1]


def replace_reason(type_token: str, path: str, replace_on_changes: Sequence[str]) -> str | None:
    """Why changing `path` of a resource of this type forces a replacement, or None for an in-place update."""
    if rule := _covered(path, replace_on_changes):
        return f"replaceOnChanges {rule}"
    if type_token.startswith("azure-native:"):
        if _covered(path, AZURE_PATH_PARAMETERS.get(type_token, ())):
            return "part of the Azure resource ID"
        if rule := _covered(path, AZURE_FORCE_NEW.get(type_token, ())):
            return f"azure-native replaces on {rule}"
        if rule := _covered(path, AZURE_CREATE_ONLY.get(type_token, ())):
            return f"Azure sets {rule} only at creation"
        return None
    if type_token == HELM_RELEASE:
        return f"a Helm release is replaced on {rule}" if (rule := _covered(path, HELM_FORCE_NEW)) else None
    if type_token.startswith("kubernetes:"):
        if rule := _covered(path, KUBERNETES_IDENTITY):
            return f"the object's {rule.split('.')[-1]}"
        if rule := _covered(path, KUBERNETES_FORCE_NEW.get(_kind(type_token), ())):
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


def _same_target(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
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


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[PropertyChange]:
    ignored = after["options"].get("ignoreChanges") or []
    replace_on = after["options"].get("replaceOnChanges") or []
    found: list[PropertyChange] = []
    for path, old, new in _leaves(before["inputs"], after["inputs"]):
        if _covered(path, ignored):
            continue
        replaces = replace_reason(after["type"], path, replace_on)
        refused = None if replaces else refused_update(after, path)
        found.append(PropertyChange(path, old, new, replaces, refused))
    for option in ("protect", "retainOnDelete", "deleteBeforeReplace", "ignoreChanges", "replaceOnChanges"):
        old, new = before["options"].get(option), after["options"].get(option)
        if old != new:
            found.append(PropertyChange(f"(option) {option}", old, new, None))
    return found


def _protected_note(entry: Mapping[str, Any]) -> tuple[str, ...]:
    if entry["options"].get("protect"):
        return ("protected: `pulumi up` refuses to delete it until protect is removed",)
    return ()


AGENT_POOL = "azure-native:containerservice:AgentPool"
CAPACITY_PATHS = ("maxCount", "vmSize")


def _pool_vcpus(inputs: Mapping[str, Any]) -> tuple[int, str] | None:
    """(vCPUs at maxCount, quota family) of an AgentPool's inputs; None for a size the catalog lacks."""
    found = vcpus_and_quota_family(str(inputs.get("vmSize", "")))
    if found is None:
        return None
    per_node, family = found
    return per_node * int(inputs.get("maxCount") or inputs.get("count") or 0), family


def _pool_gpus(inputs: Mapping[str, Any]) -> int:
    """GPU devices of an AgentPool at maxCount as Kueue's quotas count them: shared replicas or MIG slices where
    its nodes advertise those, else whole GPUs (0 for a CPU pool)."""
    capacity = cost.agent_pool_capacity(inputs)
    return capacity.gpu_devices_per_vm * capacity.max_count


def _team_quotas(resources: Mapping[str, Any], flavor: str) -> list[str]:
    """`team N GPUs` for each ClusterQueue with nominal GPU quota on the Kueue flavor `flavor`."""
    found: list[str] = []
    for entry in resources.values():
        if not entry["type"].endswith(":ClusterQueue"):
            continue
        spec = entry["inputs"].get("spec") or {}
        for group in spec.get("resourceGroups") or []:
            for each in group.get("flavors") or []:
                if each.get("name") != flavor:
                    continue
                gpus = [r["nominalQuota"] for r in each.get("resources") or [] if r["name"].endswith("/gpu")]
                if gpus:
                    found.append(f"{entry['inputs']['metadata']['name']} {gpus[0]}")
    return found


def _pool_notes(
    before: Mapping[str, Any], after: Mapping[str, Any], change: ResourceChange, head: Mapping[str, Any]
) -> tuple[str, ...]:
    """What a reviewer of an AgentPool change must weigh: the quota held during a replacement, the jobs a GPU
    pool's replacement drains, and the team quotas a change of capacity is measured against."""
    notes: list[str] = []
    old_in, new_in = before["inputs"], after["inputs"]
    old_vcpus, new_vcpus = _pool_vcpus(old_in), _pool_vcpus(new_in)
    if change.op == "replace" and change.order == "create-before-delete" and old_vcpus and new_vcpus:
        families = {old_vcpus[1], new_vcpus[1]}
        notes.append(
            f"quota peak during the replacement: old {old_vcpus[0]} + new {new_vcpus[0]} = "
            f"{old_vcpus[0] + new_vcpus[0]} vCPUs at maxCount ({' and '.join(sorted(families))}) while both pools "
            "exist; the quota summary above counts only the new pool"
        )
    if change.op == "replace" and _pool_gpus(old_in):
        drain = (old_in.get("upgradeSettings") or {}).get("drainTimeoutInMinutes", 30)
        notes.append(
            f"GPU pool replaced: running jobs on {old_in.get('agentPoolName')} are evicted when the old pool is "
            f"deleted; each pod gets its termination grace period to checkpoint, a node's drain waits up to "
            f"{drain} min (upgradeSettings.drainTimeoutInMinutes), and Kueue requeues the jobs for the new pool"
        )
    old_gpus, new_gpus = _pool_gpus(old_in), _pool_gpus(new_in)
    if (any(p.path in CAPACITY_PATHS for p in change.changes) or old_gpus != new_gpus) and (old_gpus or new_gpus):
        flavor = (new_in.get("nodeLabels") or {}).get("gpu-pool")
        quotas = _team_quotas(head["resources"], flavor) if flavor else []
        held = f"team quotas on it: {', '.join(quotas)}" if quotas else "no team quota on it"
        notes.append(f"GPU capacity {old_gpus} -> {new_gpus} (maxCount x GPU devices per node); {held}")
    return tuple(notes)


JOB = "kubernetes:batch/v1:Job"


def _job_notes(after: Mapping[str, Any]) -> tuple[str, ...]:
    """A replaced Job runs again: one whose pods request GPUs brings up a GPU node where none is running."""
    spec = after["inputs"].get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    gpus = sum(
        int(limits.get(resource) or 0)
        for container in pod.get("containers") or []
        for limits in [(container.get("resources") or {}).get("limits") or {}]
        for resource in cost.GPU_RESOURCE_NAMES
        if not isinstance(limits.get(resource), str) or str(limits.get(resource)).isdigit()
    )
    if not gpus:
        return ()
    pods = int(spec.get("parallelism") or 1)
    return (
        f"the replacement Job runs again: {pods} pod(s) of {gpus} GPU each, so the autoscaler starts a GPU node on "
        "a pool scaled to zero and it bills until the Job ends and the node scales down",
    )


def diff_plans(base: Mapping[str, Any], head: Mapping[str, Any]) -> PlanDiff:
    old, new = base["resources"], head["resources"]
    changes: list[ResourceChange] = []
    unchanged = 0
    created = [urn for urn in sorted(new) if urn not in old and new[urn]["custom"]]
    deleted = [urn for urn in sorted(old) if urn not in new and old[urn]["custom"]]
    for urn in sorted(set(old) & set(new)):
        before, after = old[urn], new[urn]
        if not after["custom"]:
            continue
        found = _changes(before, after)
        if not found:
            unchanged += 1
            continue
        if any(c.replaces for c in found):
            order, why = replacement_order(before, after)
            change = ResourceChange(
                urn, after["type"], after["name"], "replace", tuple(found), order, why, _protected_note(before)
            )
        else:
            change = ResourceChange(urn, after["type"], after["name"], "update", tuple(found))
        if after["type"] == AGENT_POOL:
            change = replace(change, notes=change.notes + _pool_notes(before, after, change, head))
        if after["type"] == JOB and change.op == "replace":
            change = replace(change, notes=change.notes + _job_notes(after))
        changes.append(change)
    for urn in created:
        twin = next((d for d in deleted if _same_target(old[d], new[urn])), None)
        notes = (
            (
                f"same cloud object as deleted {old[twin]['name']}: without `aliases` Pulumi creates this URN (which "
                "takes over the existing object) and then deletes the old URN, deleting the object",
            )
            if twin
            else ()
        )
        changes.append(ResourceChange(urn, new[urn]["type"], new[urn]["name"], "create", notes=notes))
    for urn in deleted:
        changes.append(
            ResourceChange(urn, old[urn]["type"], old[urn]["name"], "delete", notes=_protected_note(old[urn]))
        )
    old_out, new_out = base.get("outputs") or {}, head.get("outputs") or {}
    outputs_changed = sorted(k for k in set(old_out) | set(new_out) if old_out.get(k, ABSENT) != new_out.get(k, ABSENT))
    rank = {"replace": 0, "delete": 1, "create": 2, "update": 3}
    changes.sort(key=lambda c: (rank[c.op], c.type, c.urn))
    old_summary, new_summary = base.get("summary") or {}, head.get("summary") or {}
    config_changes = [PropertyChange(p, b, a, None) for p, b, a in _leaves(base.get("config"), head.get("config"))]
    if "config" in base and "config" in head:
        changes = [replace(c, causes=_causes(c, config_changes)) for c in changes]
    else:
        config_changes = []
    old_verdicts, new_verdicts = _verdicts(old_summary), _verdicts(new_summary)
    missing = tuple(
        part for part in ("verdicts", "teams", "models") if part not in old_summary or part not in new_summary
    )
    missing += () if "config" in base and "config" in head else ("config",)
    return PlanDiff(
        changes,
        unchanged,
        outputs_changed,
        quota=_figures(old_summary.get("quota") or {}, new_summary.get("quota") or {}),
        monthly=_figures(old_summary.get("monthly") or {}, new_summary.get("monthly") or {}, keep_equal=True),
        summary_missing=not old_summary or not new_summary,
        unpriced_added=_unpriced_added(old_summary, new_summary),
        verdicts_added=[v for v in new_verdicts if v not in old_verdicts] if "verdicts" in old_summary else [],
        verdicts_removed=[v for v in old_verdicts if v not in new_verdicts] if "verdicts" in new_summary else [],
        teams=_entity_changes(old_summary.get("teams"), new_summary.get("teams")),
        models=_entity_changes(old_summary.get("models"), new_summary.get("models")),
        config_changes=config_changes,
        summary_parts_missing=missing,
    )


def _verdicts(summary: Mapping[str, Any]) -> list[str]:
    found = summary.get("verdicts") or {}
    return [f"error: {v}" for v in found.get("errors") or []] + [f"warning: {v}" for v in found.get("warnings") or []]


def _entity_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[EntityChange]:
    """Per team (model) whose figures differ, before and after; nothing when either plan lacks them."""
    if before is None or after is None:
        return []
    names = sorted(set(before) | set(after))
    return [EntityChange(n, before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)]


_ENTITY = re.compile(r"\[[^\]=]+=([^\],]+)(?:,[^\]]*)?\]")


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


def _causes(change: ResourceChange, config: Sequence[PropertyChange]) -> tuple[str, ...]:
    """The config keys behind a resource change: a changed key whose pool, team or model (the list element it sits
    in) the resource is named after or its changed values name, or whose new value its changed values hold; else
    the one config change, when there is only one."""
    seen = " ".join([change.name, *(f"{_text(p.before)} {_text(p.after)}" for p in change.changes)])
    found: list[str] = []
    for item in config:
        entities = _ENTITY.findall(item.path)
        value = item.after if item.after != ABSENT else item.before
        named = any(_mentions(seen, e) for e in entities)
        # An element added or removed whole (a pool, a team) also shows through its settings: a Spot pool's
        # `priority: Spot` as the Spot toleration it adds to every GPU workload.
        words = [v for v in value.values() if isinstance(v, str)] if isinstance(value, dict) else [_text(value)]
        valued = any(len(w) >= 4 and not w.isdigit() and _mentions(seen.lower(), w.lower()) for w in words)
        if named or valued:
            found.append(f"{item.path} ({_what(item)})")
    if not found and len(config) == 1:
        # Nothing names the resource, but nothing else changed: a name hashed from the config (the GPU smoke test's).
        found.append(f"{config[0].path} ({_what(config[0])}; the only config change)")
    return tuple(found)


def _what(item: PropertyChange) -> str:
    return "added" if item.before == ABSENT else "removed" if item.after == ABSENT else "changed"


def _unpriced_added(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What the head bills without a price that the base did not; nothing when the base's plan predates the list
    (its items cannot be told from new ones)."""
    if "unpriced" not in before:
        return []
    return sorted(set(after.get("unpriced") or []) - set(before["unpriced"]))


def _figures(before: Mapping[str, float], after: Mapping[str, float], keep_equal: bool = False) -> list[FigureChange]:
    names = sorted(set(before) | set(after))
    changes = [FigureChange(n, before.get(n), after.get(n)) for n in names]
    return [c for c in changes if keep_equal or c.before != c.after]


def _signed(amount: float, unit: str = "") -> str:
    sign = "+" if amount >= 0 else "-"
    return f"{sign}${abs(amount):,.0f}{unit}" if unit else f"{sign}{abs(amount):,.0f}"


def _money_delta(figure: FigureChange, diff: PlanDiff) -> str:
    """The change of a monthly figure; where the change adds something unpriced, a known $0 would be false."""
    if not diff.unpriced_added:
        return _signed(figure.delta, "/month")
    return "unpriced" if figure.delta == 0 else f"{_signed(figure.delta, '/month')} + unpriced"


def summary_lines(diff: PlanDiff) -> list[str]:
    """The quota and cost deltas a reviewer reads first."""
    if diff.summary_missing:
        return ["Quota and cost: a plan without a summary (made before plans carried one); compare the plans below."]
    lines: list[str] = []
    money = {c.name: c for c in diff.monthly}
    if money:
        parts = [f"{name} {_money_delta(money[name], diff)}" for name in ("floor", "ceiling") if name in money]
        totals = ", ".join(f"{name} ${money[name].after or 0:,.0f}" for name in ("floor", "ceiling") if name in money)
        lines.append(f"Monthly cost: {', '.join(parts)} (now {totals})")
    if diff.unpriced_added:
        lines.append("Unpriced (no price known, not in the figures): " + "; ".join(diff.unpriced_added))
    if diff.quota:
        lines.append(
            "vCPU quota at peak: "
            + "; ".join(
                f"{c.name} {c.before or 0:,.0f} -> {c.after or 0:,.0f} ({_signed(c.delta)})" for c in diff.quota
            )
        )
    else:
        lines.append("vCPU quota at peak: unchanged")
    lines += [
        f"Team {c.name}: {_team_figure(c.before)} -> {_team_figure(c.after)}{_delta(c, 'monthly')}" for c in diff.teams
    ]
    lines += [f"Model {c.name}: {_model_figure(c.before)} -> {_model_figure(c.after)}" for c in diff.models]
    lines += [f"New {v}" for v in diff.verdicts_added]
    lines += [f"Gone {v}" for v in diff.verdicts_removed]
    if diff.summary_parts_missing:
        lines.append(f"Not compared (a plan made before plans carried them): {', '.join(diff.summary_parts_missing)}")
    return lines


def _estimate(figures: Mapping[str, Any]) -> str:
    return " (estimate)" if figures.get("estimate") else ""


def _team_figure(figures: Mapping[str, Any] | None) -> str:
    if figures is None:
        return "no team"
    return f"quota {figures['gpus']} GPUs, ceiling ${figures['monthly']:,.0f}/month{_estimate(figures)}"


def _model_figure(figures: Mapping[str, Any] | None) -> str:
    if figures is None:
        return "no model"
    if figures.get("floor") is None or figures.get("ceiling") is None:
        return "unpriced"
    return f"floor ${figures['floor']:,.0f}, ceiling ${figures['ceiling']:,.0f}/month{_estimate(figures)}"


def _delta(change: EntityChange, figure: str) -> str:
    before = (change.before or {}).get(figure) or 0
    after = (change.after or {}).get(figure) or 0
    return f" ({_signed(after - before, '/month')})"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


DIFF_CONTEXT = 12
"""Characters kept on each side of the part of a long value that differs."""


def _common_start(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _differing(before: str, after: str, width: int) -> tuple[str, str]:
    """The two texts cut to the part that differs: the common prefix and suffix elided with `...` (keeping
    `DIFF_CONTEXT` characters of each), so the change is what shows, never a shared opening."""
    prefix = _common_start(before, after)
    suffix = _common_start(before[prefix:][::-1], after[prefix:][::-1])
    start = max(prefix - DIFF_CONTEXT, 0)

    def middle(text: str) -> str:
        end = min(len(text) - suffix + DIFF_CONTEXT, len(text))
        body = text[start:end]
        if len(body) > width:
            keep = width // 2
            body = body[:keep] + "..." + body[-keep:]
        return ("..." if start else "") + body + ("..." if end < len(text) else "")

    return middle(before), middle(after)


def show_change(prop: PropertyChange, width: int = 60) -> str:
    """`path: before -> after` as a reviewer reads it: a long value shows the part that differs; an element or
    key present on one side only reads `added` or `removed`."""
    if prop.before == ABSENT:
        return f"{prop.path}: added {_cut(_text(prop.after), 2 * width)}"
    if prop.after == ABSENT:
        return f"{prop.path}: removed {_cut(_text(prop.before), 2 * width)}"
    before, after = _text(prop.before), _text(prop.after)
    if len(before) > width or len(after) > width:
        before, after = _differing(before, after, width)
    return f"{prop.path}: {before} -> {after}"


MAX_CHANGES_SHOWN = 12


def render(diff: PlanDiff, title: str, markdown: bool = False) -> str:
    counts = ", ".join(f"{len(diff.of(op))} to {op}" for op in ("create", "update", "replace", "delete"))
    lines = [f"## {title}" if markdown else title, "", f"{counts}; {diff.unchanged} unchanged", ""]
    lines += [f"- {line}" if markdown else line for line in summary_lines(diff)] + [""]
    if markdown and diff.changes:
        lines.append("```text")
    for change in diff.changes:
        order = f" ({change.order})" if change.order else ""
        lines.append(f"{change.op}{order} {change.type} {change.name}")
        for prop in change.changes[:MAX_CHANGES_SHOWN]:
            forced = f"  [forces replacement: {prop.replaces}]" if prop.replaces else ""
            forced = f"  [refused by Azure: {prop.refused}]" if prop.refused else forced
            lines.append(f"    {show_change(prop)}{forced}")
        if len(change.changes) > MAX_CHANGES_SHOWN:
            lines.append(f"    ... and {len(change.changes) - MAX_CHANGES_SHOWN} more")
        if change.order_why:
            lines.append(f"    order: {change.order_why}")
        lines.extend(f"    note: {note}" for note in change.notes)
        lines.extend(f"    caused by: {cause}" for cause in change.causes)
    if markdown and diff.changes:
        lines.append("```")
    if diff.outputs_changed:
        lines += ["", "Stack outputs that change: " + ", ".join(diff.outputs_changed)]
    if diff.config_changes:
        lines += ["", "Stack config that changes:", *(["```text"] if markdown else [])]
        lines += [f"  {show_change(c)}" for c in diff.config_changes] + (["```"] if markdown else [])
    if diff.refused:
        names = ", ".join(c.name for c in diff.refused)
        lines += ["", f"Refused: Azure rejects the update of {names}; `pulumi up` would stop halfway."]
    if not diff.changes and not diff.outputs_changed:
        lines.append("No changes.")
    return "\n".join(lines) + "\n"


def _git(repository: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repository), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def plan_command(project: Path, stack: str, out_dir: Path) -> list[str]:
    """The command that plans `project` with this interpreter.

    A consumer's project is planned by the installed package; a tree of the platform's own repository by its own
    plan module, wherever that tree keeps it.
    """
    module = "aks_gpu_platform.plan"
    for writer, writer_module in PLAN_WRITERS.items():
        if (project / writer).is_file():
            module = writer_module
            break
    plan = [] if module == "tools.plan" else ["plan"]
    return [sys.executable, "-m", module, *plan, "--stack", stack, "--out", str(out_dir)]


def plan_at(project: Path, stack: str, out_dir: Path) -> Path:
    """Plan the project at `project` with this interpreter; the path of the plan.json it writes."""
    result = subprocess.run(
        plan_command(project, stack, out_dir),
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if result.returncode == 2:
        raise RuntimeError(f"the plan of {project} stopped on a config error:\n{result.stderr.strip()}")
    path = out_dir / PLAN_FILE
    if not path.is_file():
        raise PlanFileError(
            f"the tree at {project} wrote no {PLAN_FILE}: {PREDATES}; "
            f"choose a BASE that has them (exit status {result.returncode}{': ' if result.stderr else ''}"
            f"{result.stderr.strip()[-500:]})"
        )
    return path


NAME_THE_BASE = "name the ref to compare against with --base REF (make plan-diff BASE=REF)"


def _has_commit(repository: Path, ref: str) -> bool:
    found = subprocess.run(
        ["git", "-C", str(repository), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


def _repository(project: Path) -> Path:
    try:
        return Path(_git(project, "rev-parse", "--show-toplevel"))
    except RuntimeError as err:
        raise RuntimeError(
            f"plan-diff compares the working tree with a git ref, and {project} is not in a git repository: "
            "commit your project to git first, or compare two plan files with --base-plan and --head-plan"
        ) from err


def default_base(project: Path) -> str:
    """The branch a change is compared against when --base is not given: the remote's default branch
    (origin/HEAD), else a local main, master or the branch `init.defaultBranch` names, whichever exists first."""
    top = _repository(project)
    remote = subprocess.run(
        ["git", "-C", str(top), "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    configured = subprocess.run(
        ["git", "-C", str(top), "config", "--get", "init.defaultBranch"], capture_output=True, text=True, check=False
    ).stdout.strip()
    for candidate in (remote, "main", "master", configured):
        if candidate and _has_commit(top, candidate):
            return candidate
    raise RuntimeError(
        f"no default branch to compare against in {top} (no origin/HEAD, and no main, master or init.defaultBranch "
        f"branch with a commit): {NAME_THE_BASE}"
    )


def base_plan(ref: str, stack: str, scratch: Path, project: Path) -> tuple[Path, str]:
    """Check `ref` of the repository holding `project` out into a temporary worktree, plan the project there,
    remove the worktree; (plan.json, commit)."""
    top = _repository(project)
    inside = project.resolve().relative_to(top.resolve())
    if not _has_commit(top, ref):
        raise RuntimeError(f"{ref} is no commit, branch or tag of {top}: {NAME_THE_BASE}")
    commit = _git(top, "rev-parse", "--verify", f"{ref}^{{commit}}")
    if inside == Path(".") and (top / "aks_gpu_platform" / "__init__.py").is_file():
        has_writer = [
            subprocess.run(["git", "-C", str(top), "cat-file", "-e", f"{commit}:{w}"], capture_output=True).returncode
            == 0
            for w in PLAN_WRITERS
        ]
        if not any(has_writer):
            raise PlanFileError(f"{ref} ({commit[:12]}) has no plan writer: {PREDATES}; choose a BASE that has them")
    tree = scratch / "base"
    _git(top, "worktree", "add", "--detach", str(tree), commit)
    try:
        return plan_at(tree / inside, stack, scratch / "base-out"), commit
    finally:
        _git(top, "worktree", "remove", "--force", str(tree))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    parser.add_argument(
        "--base",
        default=None,
        help="git ref to compare against (default: origin/HEAD, else main, master or init.defaultBranch)",
    )
    parser.add_argument("--base-plan", type=Path, help="compare this plan.json instead of planning --base")
    parser.add_argument("--head-plan", type=Path, help="compare this plan.json instead of planning the working tree")
    parser.add_argument("--format", choices=("text", "markdown"), default="text")
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the Pulumi project to compare (default: the folder of the nearest Pulumi.yaml at or above this one)",
    )
    options = parser.parse_args(argv)
    try:
        project = options.project_dir or (None if options.base_plan and options.head_plan else find_project())
        with tempfile.TemporaryDirectory(prefix="plan-diff-") as scratch_dir:
            scratch = Path(scratch_dir)
            if options.base_plan:
                base_path, base_name = options.base_plan, str(options.base_plan)
            else:
                where = project or find_project()
                ref = options.base or default_base(where)
                base_path, commit = base_plan(ref, options.stack, scratch, where)
                base_name = f"{ref} ({commit[:12]})"
            if options.head_plan:
                head_path, head_name = options.head_plan, str(options.head_plan)
            else:
                head_path, head_name = (
                    plan_at(project or find_project(), options.stack, scratch / "head-out"),
                    "the working tree",
                )
            diff = diff_plans(read_plan(base_path), read_plan(head_path))
    except (PlanFileError, RuntimeError, FileNotFoundError, subprocess.TimeoutExpired) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    title = f"Plan diff for stack '{options.stack}': {base_name} -> {head_name}"
    sys.stdout.write(render(diff, title, markdown=options.format == "markdown"))
    return 1 if diff.refused else 0


if __name__ == "__main__":
    sys.exit(main())
