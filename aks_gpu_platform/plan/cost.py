"""What a planned stack's node pools need in vCPU quota and what one of their nodes costs, from the recorded
resources; the monthly estimate of everything else is aks_gpu_platform/plan/estimate.py.

Read from what the program registers (AgentPools, the ManagedCluster's inline system pool, the aksManaged
pools' generic resources), not from the config, so the figures follow what would be deployed.

Quota: Azure limits vCPUs per region and VM family (e.g. `StandardNCADSA100v4Family`) and in total
("Total Regional vCPUs"); Spot VMs count against the regional low-priority quota instead. At peak a
pool runs maxCount nodes plus the surge nodes an upgrade adds (maxSurge of maxCount, rounded up).

Price: one function, `node_price`, prices a node of a pool (its VM, Spot or on-demand, and its managed OS
disk); every figure the plan shows for nodes, held GPU nodes, warm standby, served-model replicas and team
quota is that node price times a count or a share, so one thing has one price.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aks_gpu_platform.config.catalog.gpu_sizes import gpu_sku
from aks_gpu_platform.config.catalog.prices import (
    HOURS_PER_MONTH,
    MANAGED_OS_DISK_MONTHLY,
    MANAGED_OS_DISK_TIERS,
    SPOT_HOURLY_BY_REGION,
    VM_HOURLY_BY_REGION,
    Price,
    regional_price,
)
from aks_gpu_platform.config.catalog.vm_sizes import vcpus_and_quota_family
from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCES, autoscaler_resource_tag
from aks_gpu_platform.config.upgrade.section import surge_node_count
from aks_gpu_platform.testing import RecordedResource, Recording

AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC_RESOURCE = "azure-native:resources:Resource"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
WORKLOAD_TYPES = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet")
# Every vendor's whole-GPU resource (config/gpu/scheduling.py GPU_RESOURCES): an AMD pod's GPUs cost the same way.
GPU_RESOURCE_NAMES = frozenset(GPU_RESOURCES.values())
# A MIG, shared or AMD pool tells the cluster autoscaler how many GPU devices a node advertises (MIG slices,
# time-sliced or MPS replicas, amd.com/gpu) through these scale-set tags; without one a node advertises its SKU's
# GPUs. An AMD pool also tags nvidia.com/gpu as 0, so the largest tag is the node's devices.
GPU_DEVICES_TAGS = tuple(autoscaler_resource_tag(name) for name in GPU_RESOURCES.values())
# The node label a GPU pool's nodes carry with the pool's config name (config/gpu/scheduling.py).
GPU_POOL_LABEL = "gpu-pool"
# AgentPools are named `<config name>` + 4 hex characters of their immutable fields
# (components/cluster/agent_pools.py hashed_pool_name); inline cluster pools keep the config name.
HASH_SUFFIX = 4

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
    name: str
    """The pool's name in the stack config (`gput4` for the Azure pool `gput42aa3`)."""
    vm_size: str
    zones: tuple[str, ...]
    min_count: int
    max_count: int
    max_surge: str
    spot: bool
    labels: Mapping[str, str]
    managed_os_disk_gib: int | None
    """OS disk size when it is a managed disk (billed per node); None for an ephemeral one."""
    advertised_gpus: int | None = None
    """`nvidia.com/gpu` a node advertises when it is not the SKU's GPU count (MIG slices, shared replicas)."""

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

    @property
    def gpu_devices_per_vm(self) -> int:
        """What the scheduler and Kueue count on one node: MIG slices or shared replicas, else whole GPUs."""
        return self.advertised_gpus if self.advertised_gpus is not None else self.gpus_per_vm


def _surge(profile: Mapping[str, Any]) -> str:
    upgrade = profile.get("upgradeSettings") or {}
    return str(upgrade.get("maxSurge") or AKS_DEFAULT_MAX_SURGE)


def _capacity(profile: Mapping[str, Any], pool: str, hashed: bool) -> PoolCapacity:
    disk = None if profile.get("osDiskType") == "Ephemeral" else int(profile.get("osDiskSizeGB") or 128)
    tags = profile.get("tags") or {}
    tagged = [int(tags[tag]) for tag in GPU_DEVICES_TAGS if tag in tags]
    labels = dict(profile.get("nodeLabels") or {})
    return PoolCapacity(
        pool=pool,
        name=labels.get(GPU_POOL_LABEL) or (pool[:-HASH_SUFFIX] if hashed else pool),
        vm_size=str(profile.get("vmSize")),
        zones=tuple(str(z) for z in profile.get("availabilityZones") or ()),
        min_count=int(profile["minCount"] if "minCount" in profile else profile.get("count") or 0),
        max_count=int(profile["maxCount"] if "maxCount" in profile else profile.get("count") or 0),
        max_surge=_surge(profile),
        spot=profile.get("scaleSetPriority") == "Spot",
        labels=labels,
        managed_os_disk_gib=disk,
        advertised_gpus=max(tagged) if tagged else None,
    )


def agent_pool_capacity(inputs: Mapping[str, Any]) -> PoolCapacity:
    """One AgentPool's capacity from its inputs, as a recording or a plan.json entry holds them."""
    return _capacity(inputs, str(inputs.get("agentPoolName") or ""), hashed=True)


def pool_capacities(recording: Recording) -> list[PoolCapacity]:
    """Every node pool: the cluster's inline pools and each AgentPool, by pool name."""
    pools: list[PoolCapacity] = []
    for cluster in recording.of_type(MANAGED_CLUSTER):
        for profile in cluster.inputs.get("agentPoolProfiles") or []:
            pools.append(_capacity(profile, str(profile.get("name")), hashed=False))
    for agent_pool in recording.of_type(AGENT_POOL):
        name = str(agent_pool.inputs.get("agentPoolName") or agent_pool.name)
        pools.append(_capacity(agent_pool.inputs, name, hashed=True))
    # aksManaged pools: the same body through the generic ARM resource (fixed size: count only).
    for resource in recording.of_type(GENERIC_RESOURCE):
        if resource.inputs.get("resourceType") == "agentPools":
            name = str(resource.inputs.get("resourceName"))
            pools.append(_capacity(resource.inputs.get("properties") or {}, name, hashed=True))
    return sorted(pools, key=lambda p: p.pool)


@dataclass(frozen=True)
class QuotaNeed:
    """vCPUs one quota must allow for every pool at peak at once."""

    quota: str
    vcpus: int
    pools: tuple[str, ...]
    """The pools' config names."""


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
        return QuotaNeed(quota, sum(p.peak_nodes * (p.vcpus or 0) for p in members), tuple(p.name for p in members))

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
class NodePrice:
    """What one node of a pool costs: its VM-hour (the Spot price on a Spot pool) and its managed OS disk."""

    vm: Price
    disk: Price | None
    """Monthly; None for an ephemeral OS disk (part of the VM's price)."""
    spot: bool = False

    @property
    def vm_monthly(self) -> float:
        return self.vm.monthly

    @property
    def disk_monthly(self) -> float:
        return self.disk.monthly if self.disk else 0.0

    @property
    def monthly(self) -> float:
        return self.vm_monthly + self.disk_monthly

    @property
    def hourly(self) -> float:
        return self.monthly / HOURS_PER_MONTH

    @property
    def prices(self) -> tuple[Price, ...]:
        return (self.vm, self.disk) if self.disk else (self.vm,)

    @property
    def estimate(self) -> bool:
        return any(p.estimate for p in self.prices)

    def parts(self, share: float = 1.0) -> str:
        """`share` of a node a month, as its total and its parts: `$403.72 ($383.98 VM + $19.74 OS disk)`."""
        vm = "Spot VM" if self.spot else "VM"
        if self.disk is None:
            return usd(share * self.monthly) + (f" ({vm})" if self.spot else "")
        vm_part, disk_part = usd(share * self.vm_monthly), usd(share * self.disk_monthly)
        return f"{usd(share * self.monthly)} ({vm_part} {vm} + {disk_part} OS disk)"


def _os_disk_price(gib: int, region: str) -> Price | None:
    tiers = [limit for limit in sorted(MANAGED_OS_DISK_TIERS) if gib <= limit]
    return regional_price(MANAGED_OS_DISK_MONTHLY, MANAGED_OS_DISK_TIERS[tiers[0]], region) if tiers else None


def node_price(pool: PoolCapacity, region: str) -> NodePrice | str:
    """One node of the pool in `region`, VM and managed OS disk, with the prices used; or why it has no price."""
    price = regional_price(VM_HOURLY_BY_REGION, pool.vm_size, region)
    if price is None:
        return f"{pool.vm_size} has no price in config/catalog/prices.py"
    if pool.spot:
        # A Spot VM bills its Spot price; without a sourced one, on-demand (its most) as an estimate.
        price = regional_price(SPOT_HOURLY_BY_REGION, pool.vm_size, region) or replace(price, estimate=True)
    if pool.managed_os_disk_gib is None:
        return NodePrice(price, None, pool.spot)
    disk = _os_disk_price(pool.managed_os_disk_gib, region)
    if disk is None:
        return f"{pool.managed_os_disk_gib} GiB managed OS disks have no price in config/catalog/prices.py"
    return NodePrice(price, disk, pool.spot)


def monthly_usd(amount: float) -> str:
    return f"${amount:,.0f}"


def usd(amount: float) -> str:
    """A unit price to the cent, so the whole-dollar figures built from it add up for a reader."""
    return f"${amount:,.2f}"


def stack_region(recording: Recording) -> str:
    """The region the cluster is created in (the stack's `location`)."""
    clusters = recording.of_type(MANAGED_CLUSTER)
    return str(clusters[0].inputs.get("location") or "") if clusters else ""


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
        for name in GPU_RESOURCE_NAMES:
            wanted = (resources.get("limits") or {}).get(name) or (resources.get("requests") or {}).get(name)
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


def _monthly_or_unpriced(pool: PoolCapacity, region: str) -> float:
    price = node_price(pool, region)
    return math.inf if isinstance(price, str) else price.monthly


def held_gpu_nodes(recording: Recording, pools: Sequence[PoolCapacity]) -> list[HeldGpuNodes]:
    """GPU workloads whose minimum replicas keep a scale-from-zero GPU pool from ever reaching zero."""
    scalers = recording.of_type(SCALED_OBJECT)
    region = stack_region(recording)
    held: list[HeldGpuNodes] = []
    free: dict[str, list[int]] = {}  # pool -> free GPUs on each node that is up (its minCount, then held ones)
    for workload in sorted((r for t in WORKLOAD_TYPES for r in recording.of_type(t)), key=lambda r: r.urn):
        spec = _pod_spec(workload)
        gpus = _gpus_per_pod(spec)
        if gpus == 0:
            continue
        replicas, source = _min_replicas(workload, scalers)
        candidates = [p for p in pools if p.gpus_per_vm > 0 and _pool_fits(p, spec)]
        if replicas == 0 or not candidates:
            continue
        cheapest = min(candidates, key=lambda p: (_monthly_or_unpriced(p, region), p.pool))
        nodes_up = free.setdefault(cheapest.pool, [cheapest.gpu_devices_per_vm] * cheapest.min_count)
        nodes = _nodes_added(nodes_up, replicas, gpus, cheapest.gpu_devices_per_vm)
        if nodes == 0:
            continue  # the pool's own minimum, or nodes another workload holds, already have room for these
        meta = workload.inputs.get("metadata") or {}
        name = f"{meta.get('namespace', 'default')}/{meta.get('name', workload.name)}"
        why = f"{source} {replicas} x {gpus} GPU on a pool with minCount {cheapest.min_count}"
        held.append(HeldGpuNodes(name, cheapest, nodes, replicas, why))
    return held


def _nodes_added(nodes_up: list[int], replicas: int, gpus: int, per_node: int) -> int:
    """Nodes `replicas` pods of `gpus` GPUs add to a pool whose nodes up have `nodes_up` free GPUs, placed first
    fit as the scheduler packs pending pods onto a node with room (updates `nodes_up`)."""
    added = 0
    for _ in range(replicas):
        room = next((i for i, left in enumerate(nodes_up) if left >= gpus), None)
        if room is None:
            nodes_up.append(per_node)
            room, added = len(nodes_up) - 1, added + 1
        nodes_up[room] -= min(gpus, nodes_up[room])
    return added


@dataclass(frozen=True)
class TeamCeiling:
    """What a team's nominal GPU quota costs a month if it holds all of it around the clock."""

    team: str
    gpus: int
    monthly: float
    """The GPU-hours: quota devices x the VM's hour shared by the devices a node advertises x 730 h, the figure the
    chargeback rules bill (components/monitoring/recording_rules.py)."""
    estimate: bool
    """True when any VM price behind the GPU-hours is an estimate."""
    unpriced: tuple[str, ...]
    """Pools the team has quota on whose GPU-hour has no price (not counted)."""
    disks: float = 0.0
    """The managed OS disks of the nodes that quota holds (the same share per device), which chargeback leaves out."""
    disks_estimate: bool = False

    @property
    def total(self) -> float:
        return self.monthly + self.disks


def _flavor_gpus(flavor: Mapping[str, Any]) -> int:
    return sum(int(r["nominalQuota"]) for r in flavor["resources"] if r["name"] in GPU_RESOURCE_NAMES)


def team_quota_ceilings(recording: Recording, pools: Sequence[PoolCapacity]) -> list[TeamCeiling]:
    """Per recorded ClusterQueue: nominal GPU devices per flavor (pool) x that pool's node price shared by the
    devices a node advertises (whole GPUs, MIG slices or shared replicas), VM and OS disk apart."""
    by_label = {p.labels.get(GPU_POOL_LABEL): p for p in pools if p.labels.get(GPU_POOL_LABEL)}
    region = stack_region(recording)
    ceilings: list[TeamCeiling] = []
    for queue in recording.of_type(CLUSTER_QUEUE):
        vm = disks = 0.0
        gpus, estimate, disks_estimate, unpriced = 0, False, False, list[str]()
        for flavor in (f for group in queue.inputs["spec"]["resourceGroups"] for f in group["flavors"]):
            quota = _flavor_gpus(flavor)
            if quota == 0:
                continue  # the CPU pool's flavor, or a pool the team only borrows on: no GPU-hour to price
            pool = by_label.get(flavor["name"])
            price = node_price(pool, region) if pool and pool.gpu_devices_per_vm else "no GPU pool"
            gpus += quota
            if isinstance(price, str) or pool is None:
                unpriced.append(flavor["name"])
                continue
            share = quota / pool.gpu_devices_per_vm
            vm, disks = vm + share * price.vm_monthly, disks + share * price.disk_monthly
            estimate = estimate or price.vm.estimate
            disks_estimate = disks_estimate or (price.disk is not None and price.disk.estimate)
        name = queue.inputs["metadata"]["name"]
        ceilings.append(TeamCeiling(name, gpus, vm, estimate, tuple(unpriced), disks, disks_estimate))
    return sorted(ceilings, key=lambda c: c.team)
