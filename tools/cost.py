"""What a planned stack needs in vCPU quota and roughly costs a month, from the recorded resources.

Read from what the program registers (AgentPools, the ManagedCluster's inline system pool, the
Lustre filesystem, registries, private endpoints, Kubernetes workloads), not from the config, so
the figures follow what would be deployed.

Quota: Azure limits vCPUs per region and VM family (e.g. `StandardNCADSA100v4Family`) and in total
("Total Regional vCPUs"); Spot VMs count against the regional low-priority quota instead. At peak a
pool runs maxCount nodes plus the surge nodes an upgrade adds (maxSurge of maxCount, rounded up).

Cost: a floor (minimum node counts, GPU nodes that workloads keep up, always-on resources) and a
ceiling (maximum node counts), per month, from the price table in config/prices.py. Anything without
a price is named, never counted as zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_platform.config.gpu_catalog import gpu_sku
from aks_gpu_platform.config.prices import (
    AKS_TIER_HOURLY,
    AMLFS_TIB_MONTHLY,
    MANAGED_OS_DISK_MONTHLY,
    PRIVATE_ENDPOINT_HOURLY,
    REGISTRY_DAILY,
    USAGE_PRICED,
    VM_HOURLY,
    Price,
    gpu_hour_price,
)
from aks_gpu_platform.config.upgrade import surge_node_count
from aks_gpu_platform.config.vm_catalog import vcpus_and_quota_family

from .offline import RecordedResource, Recording

AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC_RESOURCE = "azure-native:resources:Resource"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AML_FILESYSTEM = "azure-native:storagecache:AmlFilesystem"
REGISTRY = "azure-native:containerregistry:Registry"
PRIVATE_ENDPOINT = "azure-native:network:PrivateEndpoint"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
WORKLOAD_TYPES = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet")
GPU_RESOURCE = "nvidia.com/gpu"

TOTAL_REGIONAL = "Total Regional vCPUs"
LOW_PRIORITY = "Total Regional Low-priority vCPUs"
# AKS's default when a pool sends no maxSurge: "If not specified, the default is 10%"
# (AgentPoolUpgradeSettings.maxSurge, AKS REST API reference, read 2026-12-02).
AKS_DEFAULT_MAX_SURGE = "10%"


@dataclass(frozen=True)
class PoolCapacity:
    """One node pool as the program registers it, with what it takes at peak."""

    pool: str
    """Azure pool name."""
    vm_size: str
    zones: tuple[str, ...]
    min_count: int
    max_count: int
    max_surge: str
    spot: bool
    labels: Mapping[str, str]
    managed_os_disk_gib: int | None
    """OS disk size when it is a managed disk (billed per node); None for an ephemeral one."""

    @property
    def surge_nodes(self) -> int:
        """Nodes an upgrade adds at once when the pool runs at maxCount."""
        return surge_node_count(self.max_surge, self.max_count)

    @property
    def peak_nodes(self) -> int:
        return self.max_count + self.surge_nodes

    @property
    def vcpus(self) -> int | None:
        found = vcpus_and_quota_family(self.vm_size)
        return found[0] if found else None

    @property
    def quota_family(self) -> str | None:
        found = vcpus_and_quota_family(self.vm_size)
        return found[1] if found else None

    @property
    def gpus_per_vm(self) -> int:
        sku = gpu_sku(self.vm_size)
        return sku.gpus_per_vm if sku else 0


def _surge(profile: Mapping[str, Any]) -> str:
    upgrade = profile.get("upgradeSettings") or {}
    return str(upgrade.get("maxSurge") or AKS_DEFAULT_MAX_SURGE)


def _capacity(profile: Mapping[str, Any], pool: str) -> PoolCapacity:
    disk = None if profile.get("osDiskType") == "Ephemeral" else int(profile.get("osDiskSizeGB") or 128)
    return PoolCapacity(
        pool=pool,
        vm_size=str(profile.get("vmSize")),
        zones=tuple(str(z) for z in profile.get("availabilityZones") or ()),
        min_count=int(profile["minCount"] if "minCount" in profile else profile.get("count") or 0),
        max_count=int(profile["maxCount"] if "maxCount" in profile else profile.get("count") or 0),
        max_surge=_surge(profile),
        spot=profile.get("scaleSetPriority") == "Spot",
        labels=dict(profile.get("nodeLabels") or {}),
        managed_os_disk_gib=disk,
    )


def pool_capacities(recording: Recording) -> list[PoolCapacity]:
    """Every node pool: the cluster's inline pools and each AgentPool, by pool name."""
    pools: list[PoolCapacity] = []
    for cluster in recording.of_type(MANAGED_CLUSTER):
        for profile in cluster.inputs.get("agentPoolProfiles") or []:
            pools.append(_capacity(profile, str(profile.get("name"))))
    for agent_pool in recording.of_type(AGENT_POOL):
        pools.append(_capacity(agent_pool.inputs, str(agent_pool.inputs.get("agentPoolName") or agent_pool.name)))
    # aksManaged pools: the same body through the generic ARM resource (fixed size: count only).
    for resource in recording.of_type(GENERIC_RESOURCE):
        if resource.inputs.get("resourceType") == "agentPools":
            pools.append(_capacity(resource.inputs.get("properties") or {}, str(resource.inputs.get("resourceName"))))
    return sorted(pools, key=lambda p: p.pool)


@dataclass(frozen=True)
class QuotaNeed:
    """vCPUs one quota must allow for every pool at peak at once."""

    quota: str
    vcpus: int
    pools: tuple[str, ...]


def quota_needs(pools: Sequence[PoolCapacity]) -> tuple[list[QuotaNeed], list[PoolCapacity]]:
    """Per family, then the regional totals; and the pools whose size the catalogs lack (not counted)."""
    by_family: dict[str, list[PoolCapacity]] = defaultdict(list)
    unknown: list[PoolCapacity] = []
    for pool in pools:
        if pool.vcpus is None or pool.quota_family is None:
            unknown.append(pool)
        else:
            by_family[LOW_PRIORITY if pool.spot else pool.quota_family].append(pool)

    def need(quota: str, members: Iterable[PoolCapacity]) -> QuotaNeed:
        members = list(members)
        return QuotaNeed(quota, sum(p.peak_nodes * (p.vcpus or 0) for p in members), tuple(p.pool for p in members))

    needs = [
        need(family, members)
        for family, members in sorted(by_family.items(), key=lambda kv: kv[0].lower())
        if family != LOW_PRIORITY
    ]
    regular = [p for family, members in by_family.items() if family != LOW_PRIORITY for p in members]
    needs.append(need(TOTAL_REGIONAL, sorted(regular, key=lambda p: p.pool)))
    if LOW_PRIORITY in by_family:
        needs.append(need(LOW_PRIORITY, by_family[LOW_PRIORITY]))
    return needs, unknown


@dataclass(frozen=True)
class HeldGpuNodes:
    """GPU nodes a workload keeps running around the clock on a pool that could scale to zero."""

    workload: str
    pool: PoolCapacity
    nodes: int
    min_replicas: int
    why: str


def _pod_spec(resource: RecordedResource) -> Mapping[str, Any]:
    return ((resource.inputs.get("spec") or {}).get("template") or {}).get("spec") or {}


def _gpus_per_pod(spec: Mapping[str, Any]) -> int:
    total = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        wanted = (resources.get("limits") or {}).get(GPU_RESOURCE) or (resources.get("requests") or {}).get(
            GPU_RESOURCE
        )
        total += int(wanted or 0)
    return total


def _required_terms(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return list(affinity.get("nodeSelectorTerms") or [])


def _pool_fits(pool: PoolCapacity, spec: Mapping[str, Any]) -> bool:
    """The pool's node labels satisfy the pod's nodeSelector and required node affinity (In / Exists)."""
    labels = pool.labels
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    terms = _required_terms(spec)

    def term_fits(term: Mapping[str, Any]) -> bool:
        for expression in term.get("matchExpressions") or []:
            key, operator = expression.get("key"), expression.get("operator")
            if operator == "In" and labels.get(key) not in (expression.get("values") or []):
                return False
            if operator == "Exists" and key not in labels:
                return False
        return True

    return not terms or any(term_fits(t) for t in terms)


def _min_replicas(workload: RecordedResource, scalers: Sequence[RecordedResource]) -> tuple[int, str]:
    meta = workload.inputs.get("metadata") or {}
    for scaler in scalers:
        spec = scaler.inputs.get("spec") or {}
        target = spec.get("scaleTargetRef") or {}
        same_namespace = (scaler.inputs.get("metadata") or {}).get("namespace") == meta.get("namespace")
        if same_namespace and target.get("name") == meta.get("name"):
            # KEDA scales to zero only when minReplicaCount is 0 (its default).
            return int(spec.get("minReplicaCount") or 0), "KEDA minReplicaCount"
    return int((workload.inputs.get("spec") or {}).get("replicas", 1)), "replicas"


def held_gpu_nodes(recording: Recording, pools: Sequence[PoolCapacity]) -> list[HeldGpuNodes]:
    """GPU workloads whose minimum replicas keep a scale-from-zero GPU pool from ever reaching zero."""
    scalers = recording.of_type(SCALED_OBJECT)
    held: list[HeldGpuNodes] = []
    for workload in sorted((r for t in WORKLOAD_TYPES for r in recording.of_type(t)), key=lambda r: r.urn):
        spec = _pod_spec(workload)
        gpus = _gpus_per_pod(spec)
        if gpus == 0:
            continue
        replicas, source = _min_replicas(workload, scalers)
        candidates = [p for p in pools if p.gpus_per_vm > 0 and _pool_fits(p, spec)]
        if replicas == 0 or not candidates:
            continue
        cheapest = min(candidates, key=lambda p: (_hourly(p.vm_size), p.pool))
        nodes = math.ceil(replicas * gpus / cheapest.gpus_per_vm)
        if cheapest.min_count >= nodes:
            continue  # the pool's own minimum already keeps these nodes up
        meta = workload.inputs.get("metadata") or {}
        name = f"{meta.get('namespace', 'default')}/{meta.get('name', workload.name)}"
        why = f"{source} {replicas} x {gpus} GPU on a pool with minCount {cheapest.min_count}"
        held.append(HeldGpuNodes(name, cheapest, nodes - cheapest.min_count, replicas, why))
    return held


def _hourly(vm_size: str) -> float:
    price = VM_HOURLY.get(vm_size)
    return price.usd if price else math.inf


@dataclass(frozen=True)
class CostLine:
    item: str
    floor: float
    ceiling: float
    prices: tuple[Price, ...]


@dataclass
class CostEstimate:
    """Monthly USD: priced lines, and everything left out with why."""

    lines: list[CostLine] = field(default_factory=list[CostLine])
    unpriced: list[str] = field(default_factory=list[str])
    usage_priced: list[str] = field(default_factory=list[str])

    @property
    def floor(self) -> float:
        return sum(line.floor for line in self.lines)

    @property
    def ceiling(self) -> float:
        return sum(line.ceiling for line in self.lines)

    @property
    def prices(self) -> list[Price]:
        return [price for line in self.lines for price in line.prices]


def _os_disk_price(gib: int) -> Price | None:
    tiers = [limit for limit in sorted(MANAGED_OS_DISK_MONTHLY) if gib <= limit]
    return MANAGED_OS_DISK_MONTHLY[tiers[0]] if tiers else None


def node_monthly(pool: PoolCapacity) -> tuple[float, tuple[Price, ...]] | str:
    """USD a month for one node of the pool (VM and managed OS disk) and the prices used, or why unknown."""
    price = VM_HOURLY.get(pool.vm_size)
    if price is None:
        return f"{pool.vm_size} has no price in config/prices.py"
    if pool.managed_os_disk_gib is None:
        return price.monthly, (price,)
    disk = _os_disk_price(pool.managed_os_disk_gib)
    if disk is None:
        return f"{pool.managed_os_disk_gib} GiB managed OS disks have no price in config/prices.py"
    return price.monthly + disk.monthly, (price, disk)


def estimate_cost(recording: Recording, pools: Sequence[PoolCapacity], held: Sequence[HeldGpuNodes]) -> CostEstimate:
    estimate = CostEstimate()
    for pool in pools:
        per_node = node_monthly(pool)
        if isinstance(per_node, str):
            estimate.unpriced.append(f"pool {pool.pool}: {per_node}")
            continue
        monthly, prices = per_node
        spot = " Spot (at most on-demand)" if pool.spot else ""
        item = f"pool {pool.pool}: {pool.min_count}-{pool.max_count} x {pool.vm_size}{spot}"
        estimate.lines.append(CostLine(item, pool.min_count * monthly, pool.max_count * monthly, prices))
    for hold in held:
        per_node = node_monthly(hold.pool)
        if not isinstance(per_node, str):
            item = f"pool {hold.pool.pool}: +{hold.nodes} node(s) kept up by {hold.workload}"
            estimate.lines.append(CostLine(item, hold.nodes * per_node[0], 0.0, per_node[1]))
    for cluster in recording.of_type(MANAGED_CLUSTER):
        tier = str((cluster.inputs.get("sku") or {}).get("tier") or "Free")
        fee = AKS_TIER_HOURLY.get(tier)
        if fee is None:
            estimate.unpriced.append(f"AKS {tier} tier fee")
        else:
            estimate.lines.append(CostLine(f"AKS {tier} tier (per cluster)", fee.monthly, fee.monthly, (fee,)))
    for registry in recording.of_type(REGISTRY):
        sku = str((registry.inputs.get("sku") or {}).get("name"))
        price = REGISTRY_DAILY.get(sku)
        if price is None:
            estimate.unpriced.append(f"container registry {sku}")
        else:
            estimate.lines.append(CostLine(f"container registry {sku}", price.monthly, price.monthly, (price,)))
    endpoints = len(recording.of_type(PRIVATE_ENDPOINT))
    if endpoints:
        monthly = endpoints * PRIVATE_ENDPOINT_HOURLY.monthly
        line = CostLine(
            f"{endpoints} private endpoint(s), before data processed", monthly, monthly, (PRIVATE_ENDPOINT_HOURLY,)
        )
        estimate.lines.append(line)
    for lustre in recording.of_type(AML_FILESYSTEM):
        sku = str((lustre.inputs.get("sku") or {}).get("name"))
        tib = int(lustre.inputs.get("storageCapacityTiB") or 0)
        price = AMLFS_TIB_MONTHLY.get(sku)
        if price is None:
            estimate.unpriced.append(
                f"Lustre {tib} TiB {sku} (billed for all of it from creation; no price in the table)"
            )
        else:
            estimate.lines.append(
                CostLine(f"Lustre {tib} TiB {sku}", tib * price.monthly, tib * price.monthly, (price,))
            )
    present = {r.type for r in recording.resources}
    estimate.usage_priced = [why for type_token, why in sorted(USAGE_PRICED.items()) if type_token in present]
    return estimate


def monthly_usd(amount: float) -> str:
    return f"${amount:,.0f}"


CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


@dataclass(frozen=True)
class TeamCeiling:
    """What a team's nominal GPU quota costs a month if it holds all of it around the clock."""

    team: str
    gpus: int
    monthly: float
    estimate: bool
    """True when any price behind it is an estimate."""
    unpriced: tuple[str, ...]
    """Pools the team has quota on whose GPU-hour has no price (not counted)."""


def team_quota_ceilings(recording: Recording, pools: Sequence[PoolCapacity]) -> list[TeamCeiling]:
    """Per recorded ClusterQueue: nominal `nvidia.com/gpu` per flavor (pool) x the pool's GPU-hour x 730 h."""
    by_label = {p.labels.get("gpu-pool"): p for p in pools if p.labels.get("gpu-pool")}
    ceilings: list[TeamCeiling] = []
    for queue in recording.of_type(CLUSTER_QUEUE):
        total, gpus, estimate, unpriced = 0.0, 0, False, []
        for group in queue.inputs["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                quota = sum(int(r["nominalQuota"]) for r in flavor["resources"] if r["name"] == GPU_RESOURCE)
                pool = by_label.get(flavor["name"])
                price = gpu_hour_price(pool.vm_size, pool.gpus_per_vm) if pool else None
                gpus += quota
                if price is None:
                    unpriced.append(flavor["name"])
                    continue
                total += quota * price.monthly
                estimate = estimate or price.estimate
        ceilings.append(TeamCeiling(queue.inputs["metadata"]["name"], gpus, total, estimate, tuple(unpriced)))
    return sorted(ceilings, key=lambda c: c.team)


def part_of(recording: Recording, prefix: str) -> Recording:
    """The resources whose names start with `prefix`: one cluster of a fleet (children are `<fleet>-<owner>-...`)."""
    return Recording(resources=[r for r in recording.resources if r.name.startswith(prefix)])


@dataclass(frozen=True)
class FleetPart:
    """One cluster of a fleet: where it runs, the quota its pools need at peak, and what it costs."""

    owner: str
    region: str
    quota: list[QuotaNeed]
    estimate: CostEstimate


def fleet_parts(recording: Recording, fleet: str, owners: Mapping[str, str]) -> list[FleetPart]:
    """Per owner (member name or `manager` -> region): quota needs per family and the cost floor and ceiling."""
    parts: list[FleetPart] = []
    for owner, region in owners.items():
        part = part_of(recording, f"{fleet}-{owner}-")
        pools = pool_capacities(part)
        parts.append(
            FleetPart(owner, region, quota_needs(pools)[0], estimate_cost(part, pools, held_gpu_nodes(part, pools)))
        )
    return parts
