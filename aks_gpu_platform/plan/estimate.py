"""What a planned stack costs a month, from the recorded resources: a floor and a ceiling in the cluster's region,
and everything left out with why.

Read from what the program registers (node pools, the Lustre filesystem, registries, private endpoints,
Kubernetes workloads), not from the config, so the figures follow what would be deployed. A floor (minimum node
counts, GPU nodes that workloads keep up, always-on resources) and a ceiling (maximum node counts), per month,
from the price table in config/catalog/prices.py; nodes at aks_gpu_platform/plan/cost.py's `node_price`.
Anything without a price is named, never counted as zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from aks_gpu_platform.config.catalog.prices import (
    AKS_TIER_HOURLY,
    AMLFS_TIB_MONTHLY,
    DEFENDER_CONTAINERS_VCORE_HOURLY,
    GRAFANA_INSTANCE_HOURLY,
    HOURS_PER_MONTH,
    NETAPP_POOL_GIB_HOURLY,
    OUTBOUND_LOAD_BALANCER_HOURLY,
    PRIVATE_DNS_ZONE_MONTHLY,
    PRIVATE_ENDPOINT_HOURLY,
    REGISTRY_DAILY,
    Price,
    RegionalTable,
    region_note,
    regional_price,
)
from aks_gpu_platform.testing import RecordedResource, Recording

from .cost import (
    AGENT_POOL,
    GENERIC_RESOURCE,
    MANAGED_CLUSTER,
    HeldGpuNodes,
    PoolCapacity,
    QuotaNeed,
    held_gpu_nodes,
    node_price,
    pool_capacities,
    quota_needs,
    stack_region,
)

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


def _pool_type(pool: PoolCapacity, recording: Recording) -> str:
    inline = {
        str(p.get("name")) for c in recording.of_type(MANAGED_CLUSTER) for p in c.inputs.get("agentPoolProfiles") or []
    }
    return MANAGED_CLUSTER if pool.pool in inline else AGENT_POOL


def _nodes(
    estimate: CostEstimate, recording: Recording, pools: Sequence[PoolCapacity], held: Sequence[HeldGpuNodes]
) -> None:
    for pool in pools:
        price = node_price(pool, estimate.region)
        type_token = _pool_type(pool, recording)
        if isinstance(price, str):
            estimate.unpriced.append(f"pool {pool.name}: {price}")
            estimate.costed_types.add(type_token)
            continue
        spot = (" Spot (at most on-demand, estimate)" if price.vm.estimate else " Spot") if pool.spot else ""
        item = f"pool {pool.name}: {pool.min_count}-{pool.max_count} x {pool.vm_size}{spot}"
        estimate.add(type_token, item, pool.min_count * price.monthly, pool.max_count * price.monthly, price.prices)
    if any(r.inputs.get("resourceType") == "agentPools" for r in recording.of_type(GENERIC_RESOURCE)):
        estimate.costed_types.add(GENERIC_RESOURCE)
    for hold in held:
        price = node_price(hold.pool, estimate.region)
        if not isinstance(price, str):
            item = (
                f"pool {hold.pool.name}: +{hold.nodes} node{'s' if hold.nodes > 1 else ''} kept up by {hold.workload}"
            )
            estimate.add(_pool_type(hold.pool, recording), item, hold.nodes * price.monthly, 0.0, price.prices)


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
