"""Each recorded resource on one line with its decisive settings, and the component tree of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aks_gpu_platform.components.shared.roles import ROLE_NAMES
from aks_gpu_platform.config.catalog.lustre_skus import AMLFS_SKUS
from aks_gpu_platform.testing import RecordedResource, Recording

from .layout import wrap
from .mock_values import MockValueMarker


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)  # pyright: ignore[reportUnknownMemberType]
    return d


def _compact(value: Any) -> str:
    """A value without spaces where possible, so wrapping breaks between settings, not inside one."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_compact(v)}" for k, v in sorted(value.items())) + "}"  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if isinstance(value, list):
        return "[" + ",".join(_compact(v) for v in value) + "]"  # pyright: ignore[reportUnknownVariableType]
    if value is None:
        return "-"
    return str(value)


def _pool(i: dict[str, Any]) -> str:
    u = i.get("upgradeSettings") or {}
    upgrade = (
        f" upgrade=surge:{u.get('maxSurge')}/unavailable:{u.get('maxUnavailable', '-')}"
        f"/drain:{u.get('drainTimeoutInMinutes')}m/soak:{u.get('nodeSoakDurationInMinutes')}m"
        f"/{u.get('undrainableNodeBehavior')}"
        if u
        else ""
    )
    return (
        f"{i.get('agentPoolName') or i.get('name')} {i.get('vmSize')} x{i.get('minCount')}-{i.get('maxCount')} "
        f"zones={_compact(i.get('availabilityZones'))} mode={i.get('mode')} taints={_compact(i.get('nodeTaints', []))} "
        f"labels={_compact(i.get('nodeLabels', {}))}{upgrade}"
        f" osDisk={i.get('osDiskType')}/{i.get('osDiskSizeGB')}G encryptionAtHost={i.get('enableEncryptionAtHost')}"
        + (f" driver={_get(i, 'gpuProfile', 'driver')}" if i.get("gpuProfile") else "")
        + (f" mig={i.get('gpuInstanceProfile')}" if i.get("gpuInstanceProfile") else "")
        + (f" priority={i.get('scaleSetPriority')}" if i.get("scaleSetPriority") else "")
    )


def _maintenance(i: dict[str, Any]) -> str:
    w = i.get("maintenanceWindow") or {}
    schedule = w.get("schedule") or {}
    when = (
        f"weekly:{schedule['weekly'].get('dayOfWeek')}"
        if "weekly" in schedule
        else f"every:{_get(schedule, 'daily', 'intervalDays')}d"
    )
    frozen = [f"{d.get('start')}..{d.get('end')}" for d in w.get("notAllowedDates") or []]
    return (
        f"{i.get('configName')} {when} {w.get('startTime')} UTC{w.get('utcOffset')} for {w.get('durationHours')}h"
        f" frozen={_compact(frozen)}"
    )


def _cluster(i: dict[str, Any]) -> str:
    system = (i.get("agentPoolProfiles") or [{}])[0]
    upgrade = i.get("autoUpgradeProfile") or {}
    return (
        f"k8s {i.get('kubernetesVersion')} tier={_get(i, 'sku', 'tier')} plan={i.get('supportPlan')} "
        f"channel={upgrade.get('upgradeChannel')}/{upgrade.get('nodeOSUpgradeChannel')} "
        f"cni={_get(i, 'networkProfile', 'networkPluginMode')}+{_get(i, 'networkProfile', 'networkDataplane')} "
        f"localAccountsDisabled={i.get('disableLocalAccounts')} system=[{_pool(system)}]"
    )


def _lustre(i: dict[str, Any]) -> str:
    sku = str(_get(i, "sku", "name"))
    capacity = int(i.get("storageCapacityTiB", 0))
    rules = AMLFS_SKUS.get(sku)
    throughput = f"{rules.throughput_mbps(capacity)} MB/s" if rules else "unknown"
    return (
        f"{capacity} TiB {sku} throughput={throughput} zones={_compact(i.get('zones'))} "
        f"maintenance={_get(i, 'maintenanceWindow', 'dayOfWeek')}/{_get(i, 'maintenanceWindow', 'timeOfDayUTC')} "
        "(resize = new filesystem + copy)"
    )


def _scaled_object(i: dict[str, Any]) -> str:
    spec = i.get("spec") or {}
    trigger = (spec.get("triggers") or [{}])[0]
    meta = trigger.get("metadata") or {}
    return (
        f"target={_get(spec, 'scaleTargetRef', 'name')} replicas={spec.get('minReplicaCount')}-"
        f"{spec.get('maxReplicaCount')} threshold={meta.get('threshold')} activation={meta.get('activationThreshold')} "
        f"query={meta.get('query')}"
    )


def _role(i: dict[str, Any]) -> str:
    guid = str(i.get("roleDefinitionId", "")).rsplit("/", 1)[-1]
    return f"role={ROLE_NAMES.get(guid, guid)!r} principalType={i.get('principalType')}"


def _namespaced(i: dict[str, Any]) -> str:
    return f"{_get(i, 'metadata', 'namespace')}/{_get(i, 'metadata', 'name')}"


# Decisive settings per resource type; types not listed print their name only.
SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "azure-native:containerservice:ManagedCluster": _cluster,
    "azure-native:containerservice:AgentPool": _pool,
    "azure-native:network:VirtualNetwork": lambda i: (
        f"addressSpace={_compact(_get(i, 'addressSpace', 'addressPrefixes'))}"
    ),
    "azure-native:network:Subnet": lambda i: f"{i.get('subnetName')} {i.get('addressPrefix')}",
    "azure-native:authorization:RoleAssignment": _role,
    "azure-native:storagecache:AmlFilesystem": _lustre,
    "azure-native:storage:StorageAccount": lambda i: (
        f"{i.get('accountName')} {_get(i, 'sku', 'name')} httpsOnly={i.get('enableHttpsTrafficOnly')} "
        f"tls={i.get('minimumTlsVersion')} publicBlob={i.get('allowBlobPublicAccess')} "
        f"publicNetwork={i.get('publicNetworkAccess')}"
    ),
    "kubernetes:storage.k8s.io/v1:StorageClass": lambda i: (
        f"{_get(i, 'metadata', 'name')} {i.get('provisioner')} reclaim={i.get('reclaimPolicy')} "
        f"params={_compact(i.get('parameters'))}"
    ),
    "kubernetes:batch/v1:Job": lambda i: (
        f"{_get(i, 'metadata', 'name')} "
        f"images={_compact([c.get('image') for c in _get(i, 'spec', 'template', 'spec', 'containers') or []])}"
    ),
    "azure-native:containerservice:MaintenanceConfiguration": _maintenance,
    "kubernetes:policy/v1:PodDisruptionBudget": lambda i: (
        f"{_namespaced(i)} "
        + " ".join(f"{k}={v}" for k in ("minAvailable", "maxUnavailable") if (v := _get(i, "spec", k)) is not None)
        + f" selector={_compact(_get(i, 'spec', 'selector', 'matchLabels'))}"
    ),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": lambda i: (
        f"{_namespaced(i)} types={_compact(_get(i, 'spec', 'policyTypes'))} "
        f"ingressRules={len(_get(i, 'spec', 'ingress') or [])} egressRules={len(_get(i, 'spec', 'egress') or [])}"
    ),
    "azure-native:managedidentity:FederatedIdentityCredential": lambda i: f"subject={i.get('subject')}",
    "kubernetes:keda.sh/v1alpha1:ScaledObject": _scaled_object,
    "kubernetes:keda.sh/v1alpha1:TriggerAuthentication": lambda i: (
        f"podIdentity={_get(i, 'spec', 'podIdentity', 'provider')}"
    ),
    "kubernetes:helm.sh/v3:Release": lambda i: f"chart={i.get('chart')}@{i.get('version')} ns={i.get('namespace')}",
    "azure-native:containerregistry:Registry": lambda i: (
        f"{i.get('registryName')} sku={_get(i, 'sku', 'name')} public={i.get('publicNetworkAccess')} "
        f"admin={i.get('adminUserEnabled')} anonymousPull={i.get('anonymousPullEnabled')}"
    ),
    "azure-native:network:PrivateEndpoint": lambda i: " ".join(
        f"{_compact(c.get('groupIds'))}->{str(c.get('privateLinkServiceId', '')).rsplit('/', 1)[-1]}"
        for c in i.get("privateLinkServiceConnections", [])
    ),
    "azure-native:containerregistry:CacheRule": lambda i: f"{i.get('sourceRepository')} -> {i.get('targetRepository')}",
    "azure-native:monitor:DataCollectionRuleAssociation": lambda i: (
        f"{i.get('associationName')} -> {str(i.get('resourceUri', '')).rsplit('/', 1)[-1]}"
    ),
    "azure-native:alertsmanagement:PrometheusRuleGroup": lambda i: (
        f"{i.get('ruleGroupName')} rules={len(i.get('rules', []))} interval={i.get('interval')}"
    ),
    "azure-native:monitor:ActionGroup": lambda i: (
        f"emails={_compact([r.get('emailAddress') for r in i.get('emailReceivers', [])])}"
    ),
    "kubernetes:azmonitoring.coreos.com/v1:PodMonitor": lambda i: (
        f"ns={_get(i, 'metadata', 'namespace')} selects={_compact(_get(i, 'spec', 'selector', 'matchLabels'))}"
    ),
}


def describe(resource: RecordedResource, marker: MockValueMarker | None = None) -> str:
    """One resource on one (unwrapped) line: type, name, decisive settings, [protected/retain/ignores]."""
    summary = SUMMARIES.get(resource.type)
    text = summary(resource.inputs) if summary else ""
    flags = [flag for flag, on in (("protected", resource.protect), ("retain", resource.retain_on_delete)) if on]
    if resource.ignore_changes:
        flags.append(f"ignores {','.join(sorted(resource.ignore_changes))}")
    suffix = f"  [{'; '.join(flags)}]" if flags else ""
    line = f"{resource.type} {resource.name}  {text}{suffix}".rstrip()
    return marker.text(line) if marker else line


def tree_lines(recording: Recording, marker: MockValueMarker, indent: str = "") -> list[str]:
    """The component tree: siblings by name, then type, so the order never depends on registration."""
    resources = sorted(recording.resources, key=lambda r: (r.name, r.type, r.urn))
    children: dict[str, list[RecordedResource]] = {}
    for r in resources:
        children.setdefault(r.parent, []).append(r)
    urns = {r.urn for r in resources}
    lines: list[str] = []

    def walk(node: RecordedResource, depth: int) -> None:
        lines.extend(wrap(describe(node, marker), indent + "  " * depth))
        for kid in children.get(node.urn, []):
            walk(kid, depth + 1)

    for root in (r for r in resources if r.parent not in urns):
        walk(root, 0)
    return lines
