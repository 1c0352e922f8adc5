"""One owner per upgrade: for each cluster and each upgrade kind, exactly one of an AKS channel and a Fleet
auto-upgrade profile moves it, its maintenance window exists, and the program never re-sends what it moves.

Built from the recorded resources, following:
- AKS, ManagedClusterAutoUpgradeProfile at REST 2025-09-01 (the version azure-native 3.29 sends for
  ManagedCluster): an `upgradeChannel` other than `none` moves the Kubernetes version; `nodeOSUpgradeChannel`
  `NodeImage` or `SecurityPatch` rolls node images, `None` and `Unmanaged` do not (MicrosoftDocs/azure-aks-docs
  fb060abe6, articles/aks/auto-upgrade-node-os-image.md, "Available node OS upgrade channels").
- Fleet, azure-rest-api-specs fleet/stable/2026-06-01/fleets.json at 1dd9b4ac0: an auto-upgrade profile of channel
  Stable, Rapid or TargetKubernetesVersion moves Kubernetes versions, NodeImage node images; it applies to the
  members whose update group its strategy's stages name ("If not specified, the auto upgrade will run on all
  clusters which are members of the fleet", AutoUpgradeProfileProperties.updateStrategyId).
- Race: "If you leave AKS cluster auto-upgrades enabled, either Fleet Manager or AKS cluster auto-upgrade performs
  the update, depending on which one runs first" (articles/kubernetes-fleet/faq.md): two owners is a defect.
- Windows: Fleet runs honour aksManagedAutoUpgradeSchedule for Kubernetes and aksManagedNodeOSUpgradeSchedule for
  node images (articles/kubernetes-fleet/concepts-update-orchestration.md, "Planned maintenance windows"; a member
  without one "is upgraded immediately when the update run reaches the cluster"); AKS's own channels use the same
  two (articles/aks/planned-maintenance.md).
- Node image selection: "If you select either the Stable, Rapid, or Target Kubernetes version channel, you can
  choose how node image updates are applied"; "The Node image channel always uses consistent image"
  (MicrosoftDocs/azure-aks-docs 02d016f03, articles/kubernetes-fleet/update-automation.md). The spec takes
  `nodeImageSelection` on any channel and states no default, so a Kubernetes profile without one is left to Fleet.
- Versions: whoever moves the Kubernetes version, the cluster's `kubernetesVersion` and every pool's
  `orchestratorVersion` must stay out of the program's diff (re-sending the pinned minor is a downgrade).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aks_gpu_platform.testing import RecordedResource, Recording

CLUSTER = "azure-native:containerservice:ManagedCluster"
WINDOW_TYPE = "azure-native:containerservice:MaintenanceConfiguration"
AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC = "azure-native:resources:Resource"
KUBERNETES, NODE_IMAGE = "Kubernetes version", "node image"
WINDOWS = {KUBERNETES: "aksManagedAutoUpgradeSchedule", NODE_IMAGE: "aksManagedNodeOSUpgradeSchedule"}
AKS_NODE_IMAGE_CHANNELS = {"NodeImage", "SecurityPatch"}
FLEET_CHANNELS = {
    "Stable": KUBERNETES,
    "Rapid": KUBERNETES,
    "TargetKubernetesVersion": KUBERNETES,
    "NodeImage": NODE_IMAGE,
}


@dataclass(frozen=True)
class Ownership:
    cluster: str
    kind: str
    owners: tuple[str, ...]
    """Each owner as `aks:<channel>` or `fleet:<profile>`."""


def _generic(recording: Recording, resource_type: str) -> list[RecordedResource]:
    return [r for r in recording.of_type(GENERIC) if r.inputs.get("resourceType") == resource_type]


def _fleet_owners(recording: Recording) -> dict[str, list[tuple[str, str]]]:
    """Cluster resource ID (lower case) -> (kind, profile) of every Fleet profile that covers it."""
    members = {
        str(m.inputs["properties"]["clusterResourceId"]).lower(): m.inputs["properties"].get("group", "")
        for m in _generic(recording, "members")
    }
    strategies = {
        str(s.outputs.get("id", "")): {
            g["name"] for stage in s.inputs["properties"]["strategy"]["stages"] for g in stage.get("groups", [])
        }
        for s in _generic(recording, "updateStrategies")
    }
    covered: dict[str, list[tuple[str, str]]] = {}
    for profile in _generic(recording, "autoUpgradeProfiles"):
        properties = profile.inputs["properties"]
        if properties.get("disabled"):
            continue
        groups = strategies.get(str(properties.get("updateStrategyId", "")))
        for cluster, group in members.items():
            if groups is None or group in groups:
                covered.setdefault(cluster, []).append(
                    (FLEET_CHANNELS[properties["channel"]], profile.inputs["resourceName"])
                )
    return covered


UNSET = "unset (Fleet's choice)"


def run_node_image_selections(recording: Recording) -> dict[str, str]:
    """Enabled Fleet profile name -> the node image selection the update runs it generates use."""
    selections: dict[str, str] = {}
    for profile in _generic(recording, "autoUpgradeProfiles"):
        properties = profile.inputs["properties"]
        if properties.get("disabled"):
            continue
        if properties["channel"] == "NodeImage":
            selection = "Consistent"
        else:
            selection = (properties.get("nodeImageSelection") or {}).get("type", UNSET)
        selections[profile.inputs["resourceName"]] = selection
    return selections


def ownerships(recording: Recording) -> list[Ownership]:
    fleet = _fleet_owners(recording)
    found: list[Ownership] = []
    for cluster in recording.of_type(CLUSTER):
        name = cluster.inputs["resourceName"]
        profile: dict[str, Any] = cluster.inputs.get("autoUpgradeProfile") or {}
        aks = {KUBERNETES: [], NODE_IMAGE: []}  # type: dict[str, list[str]]
        channel = profile.get("upgradeChannel", "none")
        if channel != "none":
            aks[KUBERNETES].append(f"aks:{channel}")
        if profile.get("nodeOSUpgradeChannel") in AKS_NODE_IMAGE_CHANNELS or channel == "node-image":
            aks[NODE_IMAGE].append(f"aks:{profile.get('nodeOSUpgradeChannel')}")
        by_fleet = fleet.get(str(cluster.outputs.get("id", "")).lower(), [])
        for kind in (KUBERNETES, NODE_IMAGE):
            owners = aks[kind] + [f"fleet:{p}" for k, p in by_fleet if k == kind]
            found.append(Ownership(name, kind, tuple(owners)))
    return found


def _owner_kinds(ownership: Ownership) -> set[str]:
    return {owner.split(":", 1)[0] for owner in ownership.owners}


def owner_problems(recording: Recording) -> list[str]:
    """What breaks the contract: no owner or two, a missing window, a version the program would send back."""
    windows = {(w.inputs["resourceName"], w.inputs["configName"]) for w in recording.of_type(WINDOW_TYPE)}
    clusters = {c.inputs["resourceName"]: c for c in recording.of_type(CLUSTER)}
    pools = [p for p in recording.of_type(AGENT_POOL)] + _generic(recording, "agentPools")
    problems: list[str] = []
    for ownership in ownerships(recording):
        cluster, kind = ownership.cluster, ownership.kind
        kinds = _owner_kinds(ownership)
        if len(kinds) != 1:
            said = " and ".join(ownership.owners) or "nobody"
            problems.append(f"{cluster}: {kind} upgrades are driven by {said}; exactly one of AKS and Fleet must")
            if not kinds:
                continue
        if (cluster, WINDOWS[kind]) not in windows:
            problems.append(f"{cluster}: {kind} upgrades have no {WINDOWS[kind]} window: they start at any hour")
        if kind == KUBERNETES and "kubernetesVersion" not in clusters[cluster].ignore_changes:
            problems.append(f"{cluster}: kubernetesVersion is re-sent while {ownership.owners} moves it (downgrade)")
        if kind == KUBERNETES:
            for pool in pools:
                pool_cluster = pool.inputs.get("resourceName") if pool.type == AGENT_POOL else None
                if pool.type == GENERIC:
                    pool_cluster = str(pool.inputs.get("parentResourcePath", "")).rsplit("/", 1)[-1]
                ignored = {f.removeprefix("properties.") for f in pool.ignore_changes}
                if pool_cluster == cluster and "orchestratorVersion" not in ignored:
                    problems.append(f"{cluster}/{pool.name}: orchestratorVersion is re-sent while it is moved")
    return problems
