"""What a planned stack needs in vCPU quota and roughly costs a month, from the recorded resources.

Read from what the program registers (AgentPools, the ManagedCluster's inline system pool, the
Lustre filesystem, registries, private endpoints, Kubernetes workloads), not from the config, so
the figures follow what would be deployed.

Quota: Azure limits vCPUs per region and VM family (e.g. `StandardNCADSA100v4Family`) and in total
("Total Regional vCPUs"); Spot VMs count against the regional low-priority quota instead. At peak a
pool runs maxCount nodes plus the surge nodes an upgrade adds (maxSurge of maxCount, rounded up).

Cost: a floor (minimum node counts, GPU nodes that workloads keep up, always-on resources) and a
ceiling (maximum node counts), per month, from the price table in config/catalog/prices.py. Anything without
a price is named, never counted as zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aks_gpu_platform.config.catalog.gpu_sizes import gpu_sku
from aks_gpu_platform.config.catalog.models import serving_dtype
from aks_gpu_platform.config.catalog.prices import (
    AKS_TIER_HOURLY,
    AMLFS_TIB_MONTHLY,
    DEFENDER_CONTAINERS_VCORE_HOURLY,
    GRAFANA_INSTANCE_HOURLY,
    HOURS_PER_MONTH,
    MANAGED_OS_DISK_MONTHLY,
    MANAGED_OS_DISK_TIERS,
    NETAPP_POOL_GIB_HOURLY,
    OUTBOUND_LOAD_BALANCER_HOURLY,
    PRIVATE_DNS_ZONE_MONTHLY,
    PRIVATE_ENDPOINT_HOURLY,
    REGISTRY_DAILY,
    SPOT_HOURLY_BY_REGION,
    VM_HOURLY_BY_REGION,
    Price,
    RegionalTable,
    gpu_hour_price,
    region_note,
    regional_price,
)
from aks_gpu_platform.config.catalog.serving_benchmarks import ServingBenchmark, matching_benchmark, rows_for
from aks_gpu_platform.config.catalog.vm_sizes import vcpus_and_quota_family
from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCES, autoscaler_resource_tag
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.config.upgrade.section import surge_node_count
from aks_gpu_platform.testing import RecordedResource, Recording

AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC_RESOURCE = "azure-native:resources:Resource"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AML_FILESYSTEM = "azure-native:storagecache:AmlFilesystem"
REGISTRY = "azure-native:containerregistry:Registry"
PRIVATE_ENDPOINT = "azure-native:network:PrivateEndpoint"
GRAFANA = "azure-native:dashboard:Grafana"
NETAPP_POOL = "azure-native:netapp:CapacityPool"
PRIVATE_DNS_ZONE = "azure-native:privatedns:PrivateZone"
LOG_WORKSPACE = "azure-native:operationalinsights:Workspace"
MONITOR_WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DCGM_COUNTERS_KEY = "platform-counters.csv"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
WORKLOAD_TYPES = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet")
# Every vendor's whole-GPU resource (config/gpu/scheduling.py GPU_RESOURCES): an AMD pod's GPUs cost the same way.
GPU_RESOURCE_NAMES = frozenset(GPU_RESOURCES.values())
# A MIG, shared or AMD pool tells the cluster autoscaler how many GPU devices a node advertises (MIG slices,
# time-sliced or MPS replicas, amd.com/gpu) through these scale-set tags; without one a node advertises its SKU's
# GPUs. An AMD pool also tags nvidia.com/gpu as 0, so the largest tag is the node's devices.
GPU_DEVICES_TAGS = tuple(autoscaler_resource_tag(name) for name in GPU_RESOURCES.values())

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


def _capacity(profile: Mapping[str, Any], pool: str) -> PoolCapacity:
    disk = None if profile.get("osDiskType") == "Ephemeral" else int(profile.get("osDiskSizeGB") or 128)
    tags = profile.get("tags") or {}
    tagged = [int(tags[tag]) for tag in GPU_DEVICES_TAGS if tag in tags]
    advertised = max(tagged) if tagged else None
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
        advertised_gpus=advertised,
    )


def agent_pool_capacity(inputs: Mapping[str, Any]) -> PoolCapacity:
    """One AgentPool's capacity from its inputs, as a recording or a plan.json entry holds them."""
    return _capacity(inputs, str(inputs.get("agentPoolName") or ""))


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
        nodes = math.ceil(replicas * gpus / cheapest.gpu_devices_per_vm)
        if cheapest.min_count >= nodes:
            continue  # the pool's own minimum already keeps these nodes up
        meta = workload.inputs.get("metadata") or {}
        name = f"{meta.get('namespace', 'default')}/{meta.get('name', workload.name)}"
        why = f"{source} {replicas} x {gpus} GPU on a pool with minCount {cheapest.min_count}"
        held.append(HeldGpuNodes(name, cheapest, nodes - cheapest.min_count, replicas, why))
    return held


def _hourly(vm_size: str) -> float:
    price = regional_price(VM_HOURLY_BY_REGION, vm_size, "")
    return price.usd if price else math.inf


BILLED_FROM_CREATION: dict[str, str] = {
    AGENT_POOL: "its nodes (VM and managed OS disk) from minCount",
    MANAGED_CLUSTER: "the AKS tier fee, the inline system pool, the outbound load balancer and Defender",
    GENERIC_RESOURCE: "an aksManaged agent pool or a Flexible NetApp capacity pool, by resourceType",
    REGISTRY: "the registry SKU's daily fee",
    PRIVATE_ENDPOINT: "each endpoint per hour",
    AML_FILESYSTEM: "the whole capacity by throughput tier",
    NETAPP_POOL: "the whole pool size by service level",
    GRAFANA: "the Standard instance per hour",
    PRIVATE_DNS_ZONE: "each zone per month",
}
"""Resource types that bill from the moment they exist: each must give a cost line, priced or named unpriced."""

BILLED_BY_USE: dict[str, str] = {
    LOG_WORKSPACE: "Log Analytics: per GB ingested and retained beyond the free days",
    MONITOR_WORKSPACE: "Managed Prometheus: per sample ingested and per sample queried",
    "azure-native:storage:StorageAccount": "Blob storage: per GB stored and per transaction",
    "azure-native:storagecache:AutoExportJob": "Lustre export: the blob account's transactions and capacity",
    "azure-native:alertsmanagement:PrometheusRuleGroup": "rule evaluations: queries against the Prometheus workspace",
    "azure-native:monitor:ActionGroup": "per notification sent (email, SMS, webhook)",
}
"""Resource types that cost nothing until used; never part of the floor or ceiling."""

FREE: frozenset[str] = frozenset(
    {
        "azure-native:resources:ResourceGroup",
        "azure-native:network:VirtualNetwork",
        "azure-native:network:Subnet",
        "azure-native:network:PrivateDnsZoneGroup",
        "azure-native:privatedns:VirtualNetworkLink",  # included in the zone's price (non-auto-registration links)
        "azure-native:authorization:RoleAssignment",
        "azure-native:authorization:PolicyAssignment",  # Azure Policy is free on AKS (Arc-enabled clusters bill)
        "azure-native:managedidentity:UserAssignedIdentity",
        "azure-native:managedidentity:FederatedIdentityCredential",
        "azure-native:containerservice:MaintenanceConfiguration",
        "azure-native:containerregistry:CacheRule",  # pulls are billed as the registry's storage
        "azure-native:containerregistry:ScopeMap",  # tokens and scope maps are part of the registry's tier
        "azure-native:containerregistry:Token",
        "azure-native:monitor:DataCollectionEndpoint",
        "azure-native:monitor:DataCollectionRule",  # the data it routes bills at the workspace
        "azure-native:monitor:DataCollectionRuleAssociation",
        "azure-native:storage:BlobContainer",
        "azure-native:storage:BlobServiceProperties",
        "azure-native:netapp:Account",
        "azure-native:netapp:CapacityPoolVolume",  # volumes draw on the pool, which is what bills
    }
)
"""Azure resource types with no charge of their own."""


def billing_class(type_token: str) -> str | None:
    """`creation`, `use` or `free` for an Azure resource type; None when it has not been classified."""
    if type_token in BILLED_FROM_CREATION:
        return "creation"
    if type_token in BILLED_BY_USE:
        return "use"
    if type_token in FREE:
        return "free"
    return None


@dataclass(frozen=True)
class CostLine:
    item: str
    floor: float
    ceiling: float
    prices: tuple[Price, ...]
    note: str = ""
    """Why a price is not the stack region's own (empty when every price is)."""


@dataclass
class CostEstimate:
    """Monthly USD in one region: priced lines, and everything left out with why."""

    region: str = ""
    lines: list[CostLine] = field(default_factory=list[CostLine])
    unpriced: list[str] = field(default_factory=list[str])
    usage_priced: list[str] = field(default_factory=list[str])
    volumes: list[str] = field(default_factory=list[str])
    """Stated estimates of what usage-priced services will ingest, with how each is estimated."""
    costed_types: set[str] = field(default_factory=set[str])
    """Creation-billed resource types that gave a line (priced or unpriced)."""
    unclassified: list[str] = field(default_factory=list[str])
    """Azure resource types whose billing is not classified: the bill may miss them."""

    @property
    def floor(self) -> float:
        return sum(line.floor for line in self.lines)

    @property
    def ceiling(self) -> float:
        return sum(line.ceiling for line in self.lines)

    @property
    def prices(self) -> list[Price]:
        return [price for line in self.lines for price in line.prices]

    def add(self, type_token: str, item: str, floor: float, ceiling: float, prices: tuple[Price, ...]) -> None:
        notes = dict.fromkeys(n for p in prices if (n := region_note(p, self.region)))
        self.lines.append(CostLine(item, floor, ceiling, prices, "; ".join(notes)))
        self.costed_types.add(type_token)

    def leave_out(self, type_token: str, item: str, why: str = "") -> None:
        self.unpriced.append(f"{item}: no price for {self.region}{f' ({why})' if why else ''}")
        self.costed_types.add(type_token)

    def fixed(self, type_token: str, table: RegionalTable, key: str, item: str, units: float, why: str = "") -> None:
        """A line billed whole from creation: `units` x the row's monthly price, in floor and ceiling alike."""
        price = regional_price(table, key, self.region)
        if price is None:
            self.leave_out(type_token, item, why)
        else:
            self.add(type_token, item, units * price.monthly, units * price.monthly, (price,))


def _os_disk_price(gib: int, region: str) -> Price | None:
    tiers = [limit for limit in sorted(MANAGED_OS_DISK_TIERS) if gib <= limit]
    return regional_price(MANAGED_OS_DISK_MONTHLY, MANAGED_OS_DISK_TIERS[tiers[0]], region) if tiers else None


def node_monthly(pool: PoolCapacity, region: str = "") -> tuple[float, tuple[Price, ...]] | str:
    """USD a month for one node of the pool (VM and managed OS disk) and the prices used, or why unknown."""
    price = regional_price(VM_HOURLY_BY_REGION, pool.vm_size, region)
    if price is None:
        return f"{pool.vm_size} has no price in config/catalog/prices.py"
    if pool.spot:
        # A Spot VM bills its Spot price; without a sourced one, on-demand (its most) as an estimate.
        price = regional_price(SPOT_HOURLY_BY_REGION, pool.vm_size, region) or replace(price, estimate=True)
    if pool.managed_os_disk_gib is None:
        return price.monthly, (price,)
    disk = _os_disk_price(pool.managed_os_disk_gib, region)
    if disk is None:
        return f"{pool.managed_os_disk_gib} GiB managed OS disks have no price in config/catalog/prices.py"
    return price.monthly + disk.monthly, (price, disk)


def stack_region(recording: Recording) -> str:
    """The region the cluster is created in (the stack's `location`)."""
    clusters = recording.of_type(MANAGED_CLUSTER)
    return str(clusters[0].inputs.get("location") or "") if clusters else ""


def _pool_type(pool: PoolCapacity, recording: Recording) -> str:
    inline = {
        str(p.get("name")) for c in recording.of_type(MANAGED_CLUSTER) for p in c.inputs.get("agentPoolProfiles") or []
    }
    return MANAGED_CLUSTER if pool.pool in inline else AGENT_POOL


def _nodes(
    estimate: CostEstimate, recording: Recording, pools: Sequence[PoolCapacity], held: Sequence[HeldGpuNodes]
) -> None:
    for pool in pools:
        per_node = node_monthly(pool, estimate.region)
        type_token = _pool_type(pool, recording)
        if isinstance(per_node, str):
            estimate.unpriced.append(f"pool {pool.pool}: {per_node}")
            estimate.costed_types.add(type_token)
            continue
        monthly, prices = per_node
        spot = (" Spot (at most on-demand, estimate)" if prices[0].estimate else " Spot") if pool.spot else ""
        item = f"pool {pool.pool}: {pool.min_count}-{pool.max_count} x {pool.vm_size}{spot}"
        estimate.add(type_token, item, pool.min_count * monthly, pool.max_count * monthly, prices)
    if any(r.inputs.get("resourceType") == "agentPools" for r in recording.of_type(GENERIC_RESOURCE)):
        estimate.costed_types.add(GENERIC_RESOURCE)
    for hold in held:
        per_node = node_monthly(hold.pool, estimate.region)
        if not isinstance(per_node, str):
            item = f"pool {hold.pool.pool}: +{hold.nodes} node(s) kept up by {hold.workload}"
            estimate.add(_pool_type(hold.pool, recording), item, hold.nodes * per_node[0], 0.0, per_node[1])


def _vcores(pools: Sequence[PoolCapacity], counts: Callable[[PoolCapacity], int]) -> int:
    return sum(counts(p) * (p.vcpus or 0) for p in pools)


def _cluster(estimate: CostEstimate, cluster: RecordedResource, pools: Sequence[PoolCapacity]) -> None:
    tier = str((cluster.inputs.get("sku") or {}).get("tier") or "Free")
    estimate.fixed(MANAGED_CLUSTER, AKS_TIER_HOURLY, tier, f"AKS {tier} tier (per cluster)", 1)
    network = cluster.inputs.get("networkProfile") or {}
    if network.get("outboundType", "loadBalancer") == "loadBalancer":
        estimate.fixed(
            MANAGED_CLUSTER,
            OUTBOUND_LOAD_BALANCER_HOURLY,
            "Standard",
            "outbound Standard load balancer and its public IP (AKS-managed)",
            1,
            "per hour and rule, plus data processed",
        )
    if (cluster.inputs.get("securityProfile") or {}).get("defender"):
        low, high = _vcores(pools, lambda p: p.min_count), _vcores(pools, lambda p: p.max_count)
        price = regional_price(DEFENDER_CONTAINERS_VCORE_HOURLY, "vCore", estimate.region)
        item = f"Defender for Containers: {low}-{high} node vCores"
        if price is None:
            estimate.leave_out(MANAGED_CLUSTER, item, "billed per vCore-hour of every node")
        else:
            estimate.add(MANAGED_CLUSTER, item, low * price.monthly, high * price.monthly, (price,))


def _netapp_pools(estimate: CostEstimate, recording: Recording) -> None:
    bodies = [(NETAPP_POOL, p.inputs) for p in recording.of_type(NETAPP_POOL)]
    bodies += [
        (GENERIC_RESOURCE, r.inputs.get("properties") or {})
        for r in recording.of_type(GENERIC_RESOURCE)
        if r.inputs.get("resourceType") == "capacityPools"
    ]
    for type_token, body in bodies:
        level = str(body.get("serviceLevel"))
        gib = float(body.get("size") or 0) / 2**30
        item = f"NetApp Files pool {gib / 1024:g} TiB {level}"
        if level == "Flexible":
            item += f" + {body.get('customThroughputMibps')} MiB/s"
        # The row is per GiB-hour: GiB x 730 h a month.
        estimate.fixed(type_token, NETAPP_POOL_GIB_HOURLY, level, item, gib, "billed for the whole pool from creation")


def _dcgm_samples(recording: Recording, pools: Sequence[PoolCapacity], held: Sequence[HeldGpuNodes]) -> str | None:
    """Managed Prometheus samples a month from the DCGM exporter: counters x GPUs x scrapes a month."""
    monitors = [
        m for m in recording.of_type(POD_MONITOR) if (m.inputs.get("metadata") or {}).get("name") == "dcgm-exporter"
    ]
    counters = [
        line
        for c in recording.of_type(CONFIG_MAP)
        for line in str((c.inputs.get("data") or {}).get(DCGM_COUNTERS_KEY, "")).splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not monitors or not counters:
        return None
    endpoints = (monitors[0].inputs.get("spec") or {}).get("podMetricsEndpoints") or [{}]
    interval = int(str(endpoints[0].get("interval") or "60s").removesuffix("s"))
    scrapes = HOURS_PER_MONTH * 3600 / interval
    gpu_pools = [p for p in pools if p.gpus_per_vm]
    low = sum(p.min_count * p.gpus_per_vm for p in gpu_pools) + sum(h.nodes * h.pool.gpus_per_vm for h in held)
    high = sum(p.max_count * p.gpus_per_vm for p in gpu_pools)
    return (
        f"Managed Prometheus, DCGM exporter: {len(counters)} series per GPU x {low}-{high} GPUs x "
        f"{scrapes:,.0f} scrapes a month ({interval}s) = {len(counters) * low * scrapes / 1e6:,.1f}-"
        f"{len(counters) * high * scrapes / 1e6:,.1f} million samples a month (the add-on's own node and "
        "kube-state targets come on top; no price for ingestion here)"
    )


def _container_logs(recording: Recording) -> list[str]:
    rules = recording.of_type("azure-native:monitor:DataCollectionRule")
    for rule in rules:
        for extension in (rule.inputs.get("dataSources") or {}).get("extensions") or []:
            if extension.get("extensionName") == "ContainerInsights":
                settings = (extension.get("extensionSettings") or {}).get("dataCollectionSettings") or {}
                interval = settings.get("interval", "1m")
                filtering = settings.get("namespaceFilteringMode", "Off")
                return [
                    f"Log Analytics, Container Insights: every container's stdout/stderr and inventory every "
                    f"{interval} (namespace filtering {filtering}); the volume follows what the workloads log, so "
                    "it is not estimated here"
                ]
    return []


def estimate_cost(recording: Recording, pools: Sequence[PoolCapacity], held: Sequence[HeldGpuNodes]) -> CostEstimate:
    """What the recorded resources cost a month in the cluster's region, and what is left out and why."""
    estimate = CostEstimate(region=stack_region(recording))
    _nodes(estimate, recording, pools, held)
    for cluster in recording.of_type(MANAGED_CLUSTER):
        _cluster(estimate, cluster, pools)
    for registry in recording.of_type(REGISTRY):
        sku = str((registry.inputs.get("sku") or {}).get("name"))
        estimate.fixed(REGISTRY, REGISTRY_DAILY, sku, f"container registry {sku}", 1)
    endpoints = len(recording.of_type(PRIVATE_ENDPOINT))
    if endpoints:
        item = f"{endpoints} private endpoint(s), before data processed"
        estimate.fixed(PRIVATE_ENDPOINT, PRIVATE_ENDPOINT_HOURLY, "endpoint", item, endpoints)
    zones = len(recording.of_type(PRIVATE_DNS_ZONE))
    if zones:
        estimate.fixed(PRIVATE_DNS_ZONE, PRIVATE_DNS_ZONE_MONTHLY, "zone", f"{zones} private DNS zone(s)", zones)
    for lustre in recording.of_type(AML_FILESYSTEM):
        sku = str((lustre.inputs.get("sku") or {}).get("name"))
        tib = int(lustre.inputs.get("storageCapacityTiB") or 0)
        why = "billed for all of it from creation"
        estimate.fixed(AML_FILESYSTEM, AMLFS_TIB_MONTHLY, sku, f"Lustre {tib} TiB {sku}", tib, why)
    _netapp_pools(estimate, recording)
    for grafana in recording.of_type(GRAFANA):
        sku = str((grafana.inputs.get("sku") or {}).get("name"))
        zone_redundant = (grafana.inputs.get("properties") or {}).get("zoneRedundancy") == "Enabled"
        item = f"Managed Grafana {sku} instance{' (zone redundant)' if zone_redundant else ''}"
        estimate.fixed(GRAFANA, GRAFANA_INSTANCE_HOURLY, sku, item, 1, "per instance-hour; active users on top")
    present = {r.type for r in recording.resources if r.custom and r.type.startswith("azure-native:")}
    estimate.usage_priced = [why for type_token, why in sorted(BILLED_BY_USE.items()) if type_token in present]
    estimate.unclassified = sorted(t for t in present if billing_class(t) is None)
    if MONITOR_WORKSPACE in present and (samples := _dcgm_samples(recording, pools, held)):
        estimate.volumes.append(samples)
    if LOG_WORKSPACE in present:
        estimate.volumes += _container_logs(recording)
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
    """Per recorded ClusterQueue: nominal `nvidia.com/gpu` per flavor (pool) x the price of one such device-hour
    (the VM's hour shared by the devices a node advertises: whole GPUs, MIG slices or shared replicas) x 730 h."""
    by_label = {p.labels.get("gpu-pool"): p for p in pools if p.labels.get("gpu-pool")}
    ceilings: list[TeamCeiling] = []
    for queue in recording.of_type(CLUSTER_QUEUE):
        total, gpus, estimate, unpriced = 0.0, 0, False, []
        for group in queue.inputs["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                quota = sum(int(r["nominalQuota"]) for r in flavor["resources"] if r["name"] in GPU_RESOURCE_NAMES)
                if quota == 0:
                    continue  # the CPU pool's flavor, or a pool the team only borrows on: no GPU-hour to price
                pool = by_label.get(flavor["name"])
                price = gpu_hour_price(pool.vm_size, pool.gpu_devices_per_vm, pool.spot) if pool else None
                gpus += quota
                if price is None:
                    unpriced.append(flavor["name"])
                    continue
                total += quota * price.monthly
                estimate = estimate or price.estimate
        ceilings.append(TeamCeiling(queue.inputs["metadata"]["name"], gpus, total, estimate, tuple(unpriced)))
    return sorted(ceilings, key=lambda c: c.team)


@dataclass(frozen=True)
class ModelCost:
    """What a served model's GPUs cost a month, and its price per million output tokens where a benchmark
    measured the same model, GPU, GPUs per replica and precision."""

    model: str
    pool: str
    gpus_per_replica: int
    gpu_model: str
    min_replicas: int
    max_replicas: int
    gpu_hour: Price | None
    """One GPU-hour of the pool: the VM's hour shared by its GPUs (None when the size has no price)."""
    benchmark: ServingBenchmark | None
    no_benchmark: str
    """Why no price per token is given ('' when one is)."""
    vm_size: str = ""
    gpus_per_vm: int = 1
    nodes_per_replica: int = 1
    """Whole nodes one replica spans (`nodes`); a single-node replica still keeps its node billed."""

    def _monthly(self, replicas: int) -> float | None:
        return None if self.gpu_hour is None else replicas * self.gpus_per_replica * self.gpu_hour.monthly

    @property
    def floor(self) -> float | None:
        """minReplicas held all month: they stay up when idle."""
        return self._monthly(self.min_replicas)

    @property
    def ceiling(self) -> float | None:
        return self._monthly(self.max_replicas)

    @property
    def node_hour(self) -> float | None:
        """USD for one of the pool's nodes an hour: the pool bills whole VMs, however few GPUs are busy."""
        return None if self.gpu_hour is None else self.gpu_hour.usd * self.gpus_per_vm

    @property
    def replicas_per_node(self) -> int:
        """Replicas that fill a node (one for a multi-node replica)."""
        return 1 if self.nodes_per_replica > 1 else max(1, self.gpus_per_vm // self.gpus_per_replica)

    def _per_million(self, replicas: int) -> float | None:
        if self.node_hour is None or self.benchmark is None:
            return None
        tokens_per_hour = replicas * self.benchmark.output_tokens_per_second * 3600
        return self.node_hour * self.nodes_per_replica / tokens_per_hour * 1_000_000

    @property
    def per_million_output_tokens(self) -> float | None:
        """USD for a million output tokens from one replica kept busy at the benchmark's rate, paying for the whole
        nodes it runs on (the pool's bill while it is the only replica there)."""
        return self._per_million(1)

    @property
    def per_million_full_node(self) -> float | None:
        """The same with its nodes full of busy replicas: the least a token can cost."""
        return self._per_million(self.replicas_per_node)


def model_costs(models: Sequence[ServedModelConfig], gpu_pools: Sequence[GpuPoolConfig]) -> list[ModelCost]:
    """Per served model: the GPU share it holds (tensorParallel x nodes GPUs per replica) at the pool's GPU-hour
    price, the same price team chargeback uses, and the benchmark that prices its tokens, if one was measured so."""
    pools = {p.name: p for p in gpu_pools}
    costs: list[ModelCost] = []
    for model in models:
        pool = pools[model.pool]
        gpu = pool.sku.gpu_model
        gpus = model.gpus_per_replica
        dtype = serving_dtype(model.dtype, gpu)
        found = matching_benchmark(model.weights.model_id, gpu, gpus, dtype)
        why = ""
        if found is None:
            why = f"no sourced benchmark for {model.weights.model_id} on {gpu}"
            near = rows_for(model.weights.model_id, gpu)
            if near:
                measured = "; ".join(f"{b.name} measured {b.gpus} GPU(s) in {b.dtype}" for b in near)
                why += f" served as {gpus} GPU(s) in {dtype} ({measured})"
        costs.append(
            ModelCost(
                model.name,
                pool.name,
                gpus,
                gpu,
                model.min_replicas,
                model.max_replicas,
                gpu_hour_price(pool.vm_size, pool.sku.gpus_per_vm, pool.priority == "Spot"),
                found,
                why,
                pool.vm_size,
                pool.sku.gpus_per_vm,
                model.nodes,
            )
        )
    return costs


def model_cost_line(cost: ModelCost) -> str:
    """One plan line per model, printed beside the team chargeback lines."""
    head = f"Model {cost.model} ({cost.gpus_per_replica} x {cost.gpu_model} per replica on pool {cost.pool}): "
    if cost.floor is None or cost.ceiling is None:
        return head + f"no GPU-hour price for the pool's size (not counted); {cost.no_benchmark or 'priced tokens'}"
    marker = " (estimate)" if cost.gpu_hour is not None and cost.gpu_hour.estimate else ""
    line = (
        f"{head}floor {monthly_usd(cost.floor)}/month ({cost.min_replicas} replicas), ceiling "
        f"{monthly_usd(cost.ceiling)}/month ({cost.max_replicas}){marker}; "
    )
    per_million, full = cost.per_million_output_tokens, cost.per_million_full_node
    if per_million is None or full is None or cost.node_hour is None or cost.benchmark is None:
        return line + cost.no_benchmark
    bench = cost.benchmark
    nodes = cost.nodes_per_replica
    price = (
        f"${per_million:,.2f} per million output tokens from one replica busy at {bench.output_tokens_per_second:,.2f} "
        f"tokens/s on its {nodes} x {cost.vm_size} node{'s' if nodes > 1 else ''} "
        f"(${cost.node_hour * nodes:,.2f}/hour, billed whole)"
    )
    if cost.replicas_per_node > 1:
        price += f", ${full:,.2f} with {cost.replicas_per_node} busy replicas filling the node"
    differences = "; ".join(bench.differences) or "no difference recorded"
    return line + f"{price}; as measured by {bench.name} ({bench.source}), not as served here: {differences}"


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
