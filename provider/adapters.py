"""The hosted components as other languages call them: YAML-shaped settings and flat wiring.

The components take validated config models and a ClusterHandle dataclass; the component provider
host infers its schema from `__init__` annotations (pulumi/provider/experimental/analyzer.py) and can
represent neither. Each class here subclasses one component under the same name, so the type token
stays `aks-gpu-platform:index:<Name>`, and takes what a TypeScript, Go, C# or YAML stack can pass:

- `settings` in the stack YAML's shape, validated once with the component's config model, so a bad
  value fails with the program's ConfigError naming the field;
- the cluster as flat keys (`resource_group_name`, `location`, `cluster`, `provider`, `tags`,
  `protect`): the same in every adapter built on the cluster, so other languages can spread one
  object into each. Name, ID and OIDC issuer are read from the ManagedCluster, as AksCluster reads them.

GPU pools are typed (GpuPoolSettings): the analyzer camelCases Python keys into the schema
(`vm_size` -> `vmSize`, the YAML key), the host maps them back to Python names before calling an
adapter, and `yaml_shape` restores the YAML keys for validation.

Each adapter carries its component's docstring and re-declares its outputs with theirs: the analyzer
documents only what the hosted class's own source declares (a test keeps the copies equal). No
`from __future__ import annotations`: the analyzer reads annotations as objects.
"""

import typing
from collections.abc import Mapping, Sequence
from enum import Enum, StrEnum
from typing import Any, NotRequired, TypedDict, cast

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s
from pulumi.provider.experimental.util import camel_case

from aks_gpu_platform.components import (
    blob_storage_classes,
    cpu_node_pool,
    gpu_autoscaling,
    gpu_monitoring,
    gpu_node_pool,
    gpu_stack,
    grafana_dashboards,
    log_workspace,
    lustre_storage,
    netapp_files,
    network,
    registry,
    storage_classes,
    team_tenancy,
    training_queues,
    upgrade_policy,
)
from aks_gpu_platform.components.context import ClusterHandle
from aks_gpu_platform.components.training_queues import LustreClaimArgs
from aks_gpu_platform.config import gpu as gpu_config
from aks_gpu_platform.config.autoscaling import ScalingTargetConfig
from aks_gpu_platform.config.errors import ConfigError
from aks_gpu_platform.config.gpu import GpuPoolConfig, GpuStackConfig
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.monitoring import LogsConfig, MonitoringConfig, RegistryConfig
from aks_gpu_platform.config.netapp import NetAppFilesConfig
from aks_gpu_platform.config.network import NetworkConfig
from aks_gpu_platform.config.node_pools import CpuPoolConfig
from aks_gpu_platform.config.storage import BlobClassesConfig, DiskClassesConfig, LustreConfig
from aks_gpu_platform.config.training import TrainingConfig
from aks_gpu_platform.config.upgrade import (
    DisruptionBudgetConfig,
    GpuPoolUpgradeConfig,
    PoolUpgradeConfig,
    UpgradeConfig,
)

# The analyzer cannot represent config's Literals; these string enums carry the same values (a test
# compares them), so other languages get schema enums their compilers check.


class GpuStackMode(StrEnum):
    """`gpuStack.mode`: devicePlugin keeps the AKS-installed driver, gpuOperator brings its own."""

    DEVICE_PLUGIN = "devicePlugin"
    """AKS installs the NVIDIA driver; the NVIDIA device plugin exposes the GPUs."""
    GPU_OPERATOR = "gpuOperator"
    """The pools skip the AKS driver; NVIDIA's GPU Operator manages the stack."""
    AKS_MANAGED = "aksManaged"
    """AKS installs and runs driver, device plugin and DCGM exporter (ManagedGpuNodePool; not hosted yet)."""


class OsSku(StrEnum):
    """Node OS image."""

    UBUNTU = "Ubuntu"
    UBUNTU2204 = "Ubuntu2204"
    AZURE_LINUX = "AzureLinux"


class OsDiskType(StrEnum):
    """Where a node's OS disk lives."""

    EPHEMERAL = "Ephemeral"
    """On the VM's local temp disk: faster, free, gone on reimage; osDiskSizeGb must fit on it."""
    MANAGED = "Managed"
    """An Azure managed disk."""


class GpuPoolPriority(StrEnum):
    """On-demand or Spot VMs."""

    REGULAR = "Regular"
    SPOT = "Spot"
    """Up to ~90% cheaper, evicted when Azure needs the capacity back."""


class SpotEvictionPolicy(StrEnum):
    """What happens to an evicted Spot VM."""

    DELETE = "Delete"
    """Frees the quota."""
    DEALLOCATE = "Deallocate"
    """Keeps the disks, still holds the quota."""


class MigProfile(StrEnum):
    """The AKS gpuInstanceProfile: MIG slices per GPU (A100, H100 and H200 sizes only)."""

    MIG1G = "MIG1g"
    MIG2G = "MIG2g"
    MIG3G = "MIG3g"
    MIG4G = "MIG4g"
    MIG7G = "MIG7g"


class GpuSharingMode(StrEnum):
    """How pods share a GPU through NVIDIA's device plugin."""

    TIME_SLICING = "timeSlicing"
    """CUDA time-slicing: no memory or fault isolation between pods."""
    MPS = "mps"
    """CUDA MPS: each pod limited to 1/replicas of the GPU's memory and compute (not on MIG pools)."""


class GpuSharingSettings(TypedDict):
    """`gpuPools[].sharing`: several pods per GPU (devicePlugin and gpuOperator modes)."""

    mode: GpuSharingMode
    """timeSlicing or mps."""
    replicas: int
    """nvidia.com/gpu advertised per physical GPU (or MIG slice); 2 to 48."""


class SpotSettings(TypedDict):
    """Spot VM settings of a GPU pool (only with priority Spot)."""

    eviction_policy: NotRequired[SpotEvictionPolicy]
    """Delete (default) frees quota on eviction; Deallocate keeps disks but still holds quota."""
    max_price: NotRequired[float]
    """USD per hour per VM; -1 (default) caps at the on-demand price (evicted only for capacity)."""


class PoolValidationSettings(TypedDict):
    """`gpuPools[].validation`: checks run by `pulumi up` once the pool exists."""

    dcgm_diag: NotRequired[bool]
    """Run DCGM diagnostics level 1 on one node of the pool, holding all its GPUs."""
    nccl_all_reduce: NotRequired[bool]
    """InfiniBand pools only: an NCCL all-reduce across two nodes against the size's bus bandwidth floor."""
    min_bus_bandwidth_g_bps: NotRequired[float]
    """Bus bandwidth floor in GB/s (`minBusBandwidthGBps`), instead of the size's default."""
    timeout_minutes: NotRequired[int]
    """How long `pulumi up` waits for a check, node scale-up from zero included; 5 to 240 minutes."""


class GpuPoolSettings(TypedDict):
    """One entry of the `gpuPools` config section."""

    name: str
    """Pool name: lowercase letter first, then lowercase letters or digits, 1-8 long (AKS adds a 4-char hash)."""
    vm_size: str
    """GPU VM size from the platform's catalog, e.g. Standard_NC24ads_A100_v4."""
    max_count: int
    """Most nodes the autoscaler may run."""
    min_count: NotRequired[int]
    """Fewest nodes (default 0: the autoscaler scales the pool from zero)."""
    # Text, not an enum: the host's input mapping turns a list of enum values into empty objects.
    zones: NotRequired[Sequence[str]]
    """Availability zones, each "1", "2" or "3" (default all three; an InfiniBand pool takes exactly one)."""
    os_sku: NotRequired[OsSku]
    """Node OS image (default Ubuntu)."""
    os_disk_size_gb: NotRequired[int]
    """OS disk size in GiB (default 128)."""
    os_disk_type: NotRequired[OsDiskType]
    """Managed (default) or Ephemeral."""
    max_pods: NotRequired[int]
    """Pods per node (default 110)."""
    labels: NotRequired[Mapping[str, str]]
    """Extra Kubernetes node labels."""
    priority: NotRequired[GpuPoolPriority]
    """Regular (default) or Spot."""
    spot: NotRequired[SpotSettings]
    """Spot settings; only with priority Spot."""
    mig_profile: NotRequired[MigProfile]
    """MIG instance profile applied to every GPU."""
    validation: NotRequired[PoolValidationSettings]
    """Post-provision checks `pulumi up` runs on the pool (DCGM diagnostics, NCCL all-reduce)."""
    infiniband: NotRequired[bool]
    """Use the size's InfiniBand fabric (RDMA); single zone only."""
    taints: NotRequired[Sequence[str]]
    """Extra taints, key=value:Effect."""
    sharing: NotRequired[GpuSharingSettings]
    """Share each GPU between pods (time-slicing or MPS); quotas and autoscaler templates count the shares."""


def yaml_shape(value: Any, annotation: Any) -> Any:
    """Typed settings as the host hands them over, back in the stack YAML's shape.

    The host maps schema names to the TypedDict's Python keys; the YAML keys are their camelCase
    (the analyzer's own conversion, so this is its inverse), and enum members become their values.
    Only TypedDict keys are renamed: label maps and other free-form mappings keep their keys.
    """
    if isinstance(value, Enum):
        return value.value
    if typing.is_typeddict(annotation) and isinstance(value, Mapping):
        fields = typing.get_type_hints(annotation)
        return {camel_case(str(k)): yaml_shape(v, fields.get(str(k))) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = typing.get_args(annotation)
        return [yaml_shape(v, items[0] if items else None) for v in value]
    return value


def gpu_pool(settings: GpuPoolSettings, source: str) -> GpuPoolConfig:
    return validate_section(GpuPoolConfig, yaml_shape(settings, GpuPoolSettings), source=source)


def gpu_pools(pools: Sequence[GpuPoolSettings], source: str) -> list[GpuPoolConfig]:
    return [gpu_pool(pool, f"{source}[{i}]") for i, pool in enumerate(pools)]


class ClusterWiring(TypedDict):
    """The ClusterHandle's fields as other languages pass them; every adapter built on the cluster has these keys."""

    resource_group_name: pulumi.Input[str]
    location: str
    cluster: containerservice.ManagedCluster
    provider: k8s.Provider
    tags: NotRequired[Mapping[str, str]]
    protect: NotRequired[bool]


def cluster_handle(args: ClusterWiring) -> ClusterHandle:
    cluster = args["cluster"]
    return ClusterHandle(
        resource_group_name=args["resource_group_name"],
        location=args["location"],
        tags=dict(args.get("tags", {})),
        cluster=cluster,
        cluster_name=cluster.name,
        cluster_id=cluster.id,
        provider=args["provider"],
        # As AksCluster reads it, so a component behind an adapter trusts the same issuer.
        oidc_issuer_url=cluster.oidc_issuer_profile.apply(lambda p: (p.issuer_url if p else None) or ""),
        protect=args.get("protect", False),
    )


class NetworkInputs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group that holds the VNet."""
    location: pulumi.Input[str]
    """Azure region."""
    settings: Mapping[str, Any]
    """The `network` config section (camelCase keys, as in the stack YAML)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags for every resource."""


class Network(network.Network):
    __doc__ = network.Network.__doc__

    vnet_id: pulumi.Output[str]
    """VNet resource ID; private DNS zones link to it."""
    nodes_subnet_id: pulumi.Output[str]
    """Subnet for every node pool (CNI overlay: one address per node)."""
    lustre_subnet_id: pulumi.Output[str]
    """Dedicated subnet for Azure Managed Lustre."""
    private_endpoints_subnet_id: pulumi.Output[str]
    """Subnet for private endpoints (registry, storage)."""
    netapp_subnet_id: pulumi.Output[str] | None
    """Subnet delegated to Microsoft.Netapp/volumes, when one is configured."""

    def __init__(self, name: str, args: NetworkInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: network.NetworkArgs = {
            "resource_group_name": args["resource_group_name"],
            "location": args["location"],
            "settings": validate_section(NetworkConfig, args["settings"], source="Network settings"),
        }
        if "tags" in args:
            built["tags"] = args["tags"]
        super().__init__(name, built, opts)


class LogWorkspaceInputs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the workspace."""
    location: pulumi.Input[str]
    """Azure region."""
    base_name: str
    """Name the workspace's default name derives from (the cluster name)."""
    settings: Mapping[str, Any]
    """The `monitoring.logs` config section (camelCase keys)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete the workspace and the logs in it (prod)."""


class LogWorkspace(log_workspace.LogWorkspace):
    __doc__ = log_workspace.LogWorkspace.__doc__

    workspace_id: pulumi.Output[str]
    """Azure resource ID of the workspace."""

    def __init__(self, name: str, args: LogWorkspaceInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: log_workspace.LogWorkspaceArgs = {
            "resource_group_name": args["resource_group_name"],
            "location": args["location"],
            "base_name": args["base_name"],
            "settings": validate_section(LogsConfig, args["settings"], source="LogWorkspace settings"),
        }
        if "tags" in args:
            built["tags"] = args["tags"]
        if "protect" in args:
            built["protect"] = args["protect"]
        super().__init__(name, built, opts)


class CpuNodePoolInputs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The AKS cluster the pool joins."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); a pool has none."""
    nodes_subnet_id: pulumi.Input[str]
    """Subnet of the nodes."""
    kubernetes_version: pulumi.Input[str]
    """Orchestrator version at creation."""
    tracks_versions: bool
    """True when an auto-upgrade channel moves versions (the pool then ignores its version)."""
    settings: Mapping[str, Any]
    """The `cpuPool` config section (camelCase keys, as in the stack YAML)."""
    upgrade: NotRequired[Mapping[str, Any]]
    """The `upgrade.cpuPool` section: surge and drain settings for node upgrades (AKS defaults when absent)."""
    encryption_at_host: NotRequired[bool]
    """`security.encryptionAtHost`: encrypt temp disks and disk caches on the VM host."""


class CpuNodePool(cpu_node_pool.CpuNodePool):
    __doc__ = cpu_node_pool.CpuNodePool.__doc__

    pool_name: pulumi.Output[str]
    """Azure name of the pool: `cpuPool.name` + 4 hex chars of the fields Azure sets only at creation."""

    def __init__(self, name: str, args: CpuNodePoolInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: cpu_node_pool.CpuNodePoolArgs = {
            "cluster": cluster_handle(args),
            "nodes_subnet_id": args["nodes_subnet_id"],
            "kubernetes_version": args["kubernetes_version"],
            "tracks_versions": args["tracks_versions"],
            "settings": validate_section(CpuPoolConfig, args["settings"], source="CpuNodePool settings"),
        }
        if "upgrade" in args:
            built["upgrade"] = validate_section(PoolUpgradeConfig, args["upgrade"], source="CpuNodePool upgrade")
        if "encryption_at_host" in args:
            built["encryption_at_host"] = args["encryption_at_host"]
        super().__init__(name, built, opts)


class GpuNodePoolInputs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The AKS cluster the pool joins."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); a pool has none."""
    nodes_subnet_id: pulumi.Input[str]
    """Subnet of the nodes."""
    kubernetes_version: pulumi.Input[str]
    """Orchestrator version at creation."""
    tracks_versions: bool
    """True when an auto-upgrade channel moves versions (the pool then ignores its version)."""
    settings: GpuPoolSettings
    """One entry of the `gpuPools` config section."""
    stack_mode: GpuStackMode
    """`gpuStack.mode`: devicePlugin keeps the AKS driver, gpuOperator skips it (driver None)."""
    upgrade: NotRequired[Mapping[str, Any]]
    """The `upgrade.gpuPools` section: surge and drain settings for node upgrades (one node at a time by default)."""
    encryption_at_host: NotRequired[bool]
    """`security.encryptionAtHost`: encrypt temp disks and disk caches on the VM host."""


class GpuNodePool(gpu_node_pool.GpuNodePool):
    __doc__ = gpu_node_pool.GpuNodePool.__doc__

    pool_name: pulumi.Output[str]
    """Azure name of the pool (changes when an immutable field changes)."""
    agent_pool: containerservice.AgentPool
    """The AgentPool, for depends_on of workloads that need GPU nodes."""

    def __init__(self, name: str, args: GpuNodePoolInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: gpu_node_pool.GpuNodePoolArgs = {
            "cluster": cluster_handle(args),
            "nodes_subnet_id": args["nodes_subnet_id"],
            "kubernetes_version": args["kubernetes_version"],
            "tracks_versions": args["tracks_versions"],
            "settings": gpu_pool(args["settings"], "GpuNodePool settings"),
            # The enum's values are config's Literal's (tests/test_component_schema.py).
            "stack_mode": cast(gpu_config.GpuStackMode, GpuStackMode(args["stack_mode"]).value),
        }
        if built["stack_mode"] == "aksManaged":
            raise ConfigError(
                [
                    "stack_mode: got 'aksManaged'; AKS-managed pools are ManagedGpuNodePool, which other languages "
                    "cannot build yet (docs/gpu-operations.md): use devicePlugin or gpuOperator"
                ],
                source="GpuNodePool args",
            )
        if "upgrade" in args:
            built["upgrade"] = validate_section(GpuPoolUpgradeConfig, args["upgrade"], source="GpuNodePool upgrade")
        if "encryption_at_host" in args:
            built["encryption_at_host"] = args["encryption_at_host"]
        super().__init__(name, built, opts)


class GpuStackInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `gpuStack` config section (camelCase keys)."""
    pools: Sequence[GpuPoolSettings]
    """The `gpuPools` config section (MIG, InfiniBand and their taints decide what is installed and tolerated)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The ManagedCluster; in-cluster objects are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags (the stack creates only in-cluster objects)."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); the stack has none."""


class GpuStack(gpu_stack.GpuStack):
    __doc__ = gpu_stack.GpuStack.__doc__

    mode: str
    """`devicePlugin` or `gpuOperator`."""
    namespace: pulumi.Output[str]
    """Namespace `gpu-resources` (device plugin, smoke test)."""
    releases: list[k8s.helm.v3.Release]
    """Every Helm release installed here: depend on these for objects that need GPUs or RDMA."""
    gpu_release: k8s.helm.v3.Release | None
    """The release that makes `nvidia.com/gpu` schedulable (device plugin or GPU Operator); None in aksManaged
    mode, where AKS's own device plugin does."""
    dcgm_from_operator: bool
    """True when the GPU Operator runs the DCGM exporter (monitoring must not install another)."""
    mig_strategy: str
    """`single` when any pool uses MIG, else `none`."""
    rdma_resource: str | None
    """Extended resource InfiniBand pods request, or None when no pool uses InfiniBand."""

    def __init__(self, name: str, args: GpuStackInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: gpu_stack.GpuStackArgs = {
            "settings": validate_section(GpuStackConfig, args["settings"], source="GpuStack settings"),
            "pools": gpu_pools(args["pools"], "GpuStack pools"),
            "cluster": cluster_handle(args),
        }
        super().__init__(name, built, opts)


class GpuMonitoringInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `monitoring` config section (camelCase keys, as in the stack YAML)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the monitoring resources."""
    location: str
    """Azure region."""
    cluster: containerservice.ManagedCluster
    """The cluster the pipeline, rules and monitors attach to; in-cluster objects are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete the metrics workspace and the history in it (prod)."""
    base_name: str
    """Name the default resource names derive from (the cluster name)."""
    dcgm_from_operator: bool
    """True when the GPU Operator runs the DCGM exporter: scrape it instead of installing a second one."""
    log_analytics_workspace_id: pulumi.Input[str]
    """Workspace Container Insights writes to (from LogWorkspace)."""
    dcgm_exporter_repository: pulumi.Input[str]
    """`<registry login server>/<repository>` of the DCGM exporter image."""
    gpu_pools: NotRequired[Sequence[GpuPoolSettings]]
    """The GPU pools: the DCGM exporter tolerates all their taints (Spot's and extra ones included) so every
    GPU reports metrics. Without them, only the platform's GPU taint is tolerated."""
    grafana_admin_group_object_ids: NotRequired[Sequence[str]]
    """Grafana Admin groups used when the settings name none (the cluster's admin groups)."""


class GpuMonitoring(gpu_monitoring.GpuMonitoring):
    __doc__ = gpu_monitoring.GpuMonitoring.__doc__

    monitor_workspace_id: pulumi.Output[str]
    """Azure Monitor workspace ID (grant Monitoring Data Reader here to query it)."""
    prometheus_query_endpoint: pulumi.Output[str]
    """PromQL endpoint of the workspace (KEDA's serverAddress)."""
    grafana_endpoint: pulumi.Output[str]
    """URL of the Managed Grafana instance."""
    grafana_id: pulumi.Output[str]
    """Azure resource ID of the Managed Grafana instance (scope for Grafana role assignments)."""
    action_group_id: pulumi.Output[str]
    """Action group every GPU alert notifies."""
    exporter_pod_labels: dict[str, str]
    """Labels of the DCGM exporter pods the PodMonitor selects."""
    dcgm_exporter: k8s.helm.v3.Release | None
    """Our DCGM exporter release; None in GPU Operator mode (the operator runs its own) and in aksManaged mode
    (AKS runs one on every node)."""

    def __init__(self, name: str, args: GpuMonitoringInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: gpu_monitoring.GpuMonitoringArgs = {
            "settings": validate_section(MonitoringConfig, args["settings"], source="GpuMonitoring settings"),
            "cluster": cluster_handle(args),
            "base_name": args["base_name"],
            "dcgm_from_operator": args["dcgm_from_operator"],
            "log_analytics_workspace_id": args["log_analytics_workspace_id"],
            "dcgm_exporter_repository": args["dcgm_exporter_repository"],
        }
        if "gpu_pools" in args:
            built["gpu_pools"] = gpu_pools(args["gpu_pools"], "GpuMonitoring gpuPools")
        if "grafana_admin_group_object_ids" in args:
            built["grafana_admin_group_object_ids"] = args["grafana_admin_group_object_ids"]
        super().__init__(name, built, opts)


class GpuAutoscalingInputs(TypedDict):
    settings: Mapping[str, Any]
    """One scaling target (namespace, deployment, replicas, thresholds), camelCase as in `autoscaling.targets`."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the KEDA identity."""
    location: str
    """Azure region of the KEDA identity."""
    cluster: containerservice.ManagedCluster
    """The cluster: its OIDC issuer is trusted by the federated credential, and its KEDA add-on installs the
    ScaledObject and TriggerAuthentication CRDs."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags of the identity."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); scaling has none."""
    monitor_workspace_id: pulumi.Input[str]
    """Azure Monitor workspace holding the DCGM metrics; the identity may read it and nothing else."""
    prometheus_query_endpoint: pulumi.Input[str]
    """The workspace's Prometheus query endpoint, KEDA's `serverAddress`."""
    identity_name: NotRequired[str]
    """Azure name of the identity KEDA queries as (default `id-<component name>-keda`)."""


class GpuAutoscaling(gpu_autoscaling.GpuAutoscaling):
    __doc__ = gpu_autoscaling.GpuAutoscaling.__doc__

    identity_client_id: pulumi.Output[str]
    """Client ID of the identity KEDA queries Prometheus as."""
    identity_principal_id: pulumi.Output[str]
    """Principal ID of that identity (holder of Monitoring Data Reader on the workspace)."""
    scaled_object_name: str
    """Name of the ScaledObject (same namespace as the Deployment)."""
    query: str
    """The PromQL query KEDA evaluates."""

    def __init__(self, name: str, args: GpuAutoscalingInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: gpu_autoscaling.GpuAutoscalingArgs = {
            "settings": validate_section(
                ScalingTargetConfig, args["settings"], source=f"GpuAutoscaling {name} settings"
            ),
            "cluster": cluster_handle(args),
            "monitor_workspace_id": args["monitor_workspace_id"],
            "prometheus_query_endpoint": args["prometheus_query_endpoint"],
        }
        if "identity_name" in args:
            built["identity_name"] = args["identity_name"]
        super().__init__(name, built, opts)


class LustreStorageInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `storage.lustre` config section (camelCase keys, as in the stack YAML)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the filesystem and its storage account."""
    location: str
    """Azure region."""
    cluster: containerservice.ManagedCluster
    """The ManagedCluster that mounts the filesystem; in-cluster objects are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete or replace the filesystem and the storage account (prod)."""
    lustre_subnet_id: pulumi.Input[str]
    """Dedicated subnet of the filesystem, sized for its capacity."""
    private_endpoints_subnet_id: NotRequired[pulumi.Input[str]]
    """Subnet of the account's blob private endpoint (needed when `blob.publicNetworkAccess` is false)."""
    vnet_id: NotRequired[pulumi.Input[str]]
    """VNet of the Lustre subnet, linked to the blob privatelink DNS zone (needed with the private endpoint)."""
    gpu_pools: NotRequired[Sequence[GpuPoolSettings]]
    """The GPU pools: the CSI node plugin tolerates all their taints (Spot's and extra ones included) so every
    GPU node can mount Lustre. Without them, only the platform's GPU taint is tolerated."""


class LustreStorage(lustre_storage.LustreStorage):
    __doc__ = lustre_storage.LustreStorage.__doc__

    filesystem_id: pulumi.Output[str]
    """Azure resource ID of the filesystem."""
    mgs_address: pulumi.Output[str]
    """IP address of the Lustre management service that clients mount."""
    storage_account_name: pulumi.Output[str]
    """HSM storage account (data and logging containers)."""
    namespace: pulumi.Output[str]
    """Namespace of the training claim."""
    storage_class_name: pulumi.Output[str]
    """StorageClass of the filesystem."""
    pvc_name: pulumi.Output[str]
    """ReadWriteMany claim training pods mount."""

    def __init__(self, name: str, args: LustreStorageInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: lustre_storage.LustreStorageArgs = {
            "settings": validate_section(LustreConfig, args["settings"], source="LustreStorage settings"),
            "cluster": cluster_handle(args),
            "lustre_subnet_id": args["lustre_subnet_id"],
        }
        if "private_endpoints_subnet_id" in args:
            built["private_endpoints_subnet_id"] = args["private_endpoints_subnet_id"]
        if "vnet_id" in args:
            built["vnet_id"] = args["vnet_id"]
        if "gpu_pools" in args:
            built["gpu_pools"] = gpu_pools(args["gpu_pools"], "LustreStorage gpuPools")
        super().__init__(name, built, opts)


class BlobStorageClassesInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `storage.blobClasses` config section (camelCase keys)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The ManagedCluster; the classes are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags (the classes are in-cluster objects)."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); the classes hold no data (claims' containers live in the driver's account)."""


class BlobStorageClasses(blob_storage_classes.BlobStorageClasses):
    __doc__ = blob_storage_classes.BlobStorageClasses.__doc__

    class_names: pulumi.Output[list[str]]
    """Names of the classes created."""

    def __init__(self, name: str, args: BlobStorageClassesInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: blob_storage_classes.BlobStorageClassesArgs = {
            "settings": validate_section(BlobClassesConfig, args["settings"], source="BlobStorageClasses settings"),
            "cluster": cluster_handle(args),
        }
        super().__init__(name, built, opts)


class DiskStorageClassesInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `storage.diskClasses` config section (camelCase keys)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The ManagedCluster; the classes are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags (the classes are in-cluster objects)."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); the classes hold no data."""


class DiskStorageClasses(storage_classes.DiskStorageClasses):
    __doc__ = storage_classes.DiskStorageClasses.__doc__

    class_names: pulumi.Output[list[str]]
    """Names of the classes created."""

    def __init__(self, name: str, args: DiskStorageClassesInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: storage_classes.DiskStorageClassesArgs = {
            "settings": validate_section(DiskClassesConfig, args["settings"], source="DiskStorageClasses settings"),
            "cluster": cluster_handle(args),
        }
        super().__init__(name, built, opts)


class RegistryInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `monitoring.registry` config section (camelCase keys, as in the stack YAML)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the registry and its private endpoint."""
    location: str
    """Azure region."""
    cluster: containerservice.ManagedCluster
    """The cluster whose nodes pull from the registry."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete or replace the registry (prod)."""
    base_name: str
    """Name the registry's default name derives from (the cluster name)."""
    kubelet_identity_object_id: pulumi.Input[str]
    """Principal the nodes pull images as; gets AcrPull on the registry."""
    private_endpoints_subnet_id: pulumi.Input[str]
    """Subnet of the private endpoint (used when public network access is off)."""
    vnet_id: pulumi.Input[str]
    """VNet the private DNS zone is linked to (used when public network access is off)."""


class Registry(registry.Registry):
    __doc__ = registry.Registry.__doc__

    registry_id: pulumi.Output[str]
    """Azure resource ID of the registry."""
    login_server: pulumi.Output[str]
    """`<name>.azurecr.io`: the host of every image the nodes pull from here."""
    dcgm_exporter_repository: pulumi.Output[str]
    """`<login server>/<cache repository>`: the DCGM exporter image repository (tag from config)."""
    private_endpoint_id: pulumi.Output[str] | None
    """Private endpoint of the registry, or None when it is public."""

    def __init__(self, name: str, args: RegistryInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: registry.RegistryArgs = {
            "settings": validate_section(RegistryConfig, args["settings"], source="Registry settings"),
            "cluster": cluster_handle(args),
            "base_name": args["base_name"],
            "kubelet_identity_object_id": args["kubelet_identity_object_id"],
            "private_endpoints_subnet_id": args["private_endpoints_subnet_id"],
            "vnet_id": args["vnet_id"],
        }
        super().__init__(name, built, opts)


class UpgradePolicyInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `upgrade` config section (camelCase keys, as in the stack YAML)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The cluster the maintenance configurations belong to; the budgets are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster (the PodDisruptionBudgets)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); the policy has none."""
    platform_budgets: NotRequired[Sequence[Mapping[str, Any]]]
    """PodDisruptionBudgets for the platform's own multi-replica workloads (same shape as disruptionBudgets)."""


class UpgradePolicy(upgrade_policy.UpgradePolicy):
    __doc__ = upgrade_policy.UpgradePolicy.__doc__

    maintenance_configuration_names: list[str]
    """Names of the maintenance configurations created (one per active channel)."""
    disruption_budget_names: list[str]
    """namespace/name of every PodDisruptionBudget created."""

    def __init__(self, name: str, args: UpgradePolicyInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: upgrade_policy.UpgradePolicyArgs = {
            "settings": validate_section(UpgradeConfig, args["settings"], source="UpgradePolicy settings"),
            "cluster": cluster_handle(args),
        }
        if "platform_budgets" in args:
            built["platform_budgets"] = [
                validate_section(DisruptionBudgetConfig, budget, source=f"UpgradePolicy platformBudgets[{i}]")
                for i, budget in enumerate(args["platform_budgets"])
            ]
        super().__init__(name, built, opts)


class NetAppFilesInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `storage.netappFiles` config section (camelCase keys)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the NetApp account, pool and volumes."""
    location: str
    """Azure region."""
    cluster: containerservice.ManagedCluster
    """The cluster the claims live in; they are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete the account, pool and volumes (prod)."""
    subnet_id: pulumi.Input[str]
    """The VNet's subnet delegated to Microsoft.Netapp/volumes."""
    allowed_clients: Sequence[str]
    """CIDRs the export policy admits: the node subnet (CNI overlay pods reach NFS as their node)."""
    namespace: NotRequired[pulumi.Input[str]]
    """An existing namespace for the claims (Lustre's training namespace); without it one is created."""


class NetAppFiles(netapp_files.NetAppFiles):
    __doc__ = netapp_files.NetAppFiles.__doc__

    account_name: pulumi.Output[str]
    """The NetApp account."""
    pool_id: pulumi.Output[str]
    """Azure ID of the capacity pool."""
    mount_addresses: pulumi.Output[dict[str, str]]
    """Volume name -> `server:/path` that NFS clients mount."""
    namespace: pulumi.Output[str]
    """Namespace of the claims."""
    claim_names: pulumi.Output[list[str]]
    """ReadWriteMany claims, one per volume."""

    def __init__(self, name: str, args: NetAppFilesInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: netapp_files.NetAppFilesArgs = {
            "settings": validate_section(NetAppFilesConfig, args["settings"], source="NetAppFiles settings"),
            "cluster": cluster_handle(args),
            "subnet_id": args["subnet_id"],
            "allowed_clients": args["allowed_clients"],
        }
        if "namespace" in args:
            built["namespace"] = args["namespace"]
        super().__init__(name, built, opts)


class TrainingQueuesInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `training` config section (camelCase keys); each quota must name a pool in gpu_pools."""
    gpu_pools: Sequence[GpuPoolSettings]
    """Every GPU pool: one ResourceFlavor each."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The ManagedCluster the releases and queues go to; they are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags (the queues are in-cluster objects)."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); the queues hold no data."""
    lustre: NotRequired[LustreClaimArgs]
    """When Lustre is on: a claim on it in every team namespace, for datasets and checkpoints."""


class TrainingQueues(training_queues.TrainingQueues):
    __doc__ = training_queues.TrainingQueues.__doc__

    kueue_release: k8s.helm.v3.Release
    """The Kueue release; its CRDs back every queue object here."""
    jobset_release: k8s.helm.v3.Release | None
    """The JobSet release, or None when training.jobset is off."""
    flavor_names: list[str]
    """ResourceFlavor names, one per GPU pool, in pool order."""
    admission_check: str | None
    """The ProvisioningRequest admission check every ClusterQueue waits for, or None."""
    namespaces: dict[str, pulumi.Output[str]]
    """Team name -> its namespace's name, resolved once the namespace exists."""
    teams: pulumi.Output[dict[str, dict[str, Any]]]
    """Per team: namespace, localQueue, clusterQueue, gpuPools (the pools it has quota on, which are the
    `gpu-pool` node label values) and, with Lustre, lustrePvcName."""

    def __init__(self, name: str, args: TrainingQueuesInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: training_queues.TrainingQueuesArgs = {
            "settings": validate_section(TrainingConfig, args["settings"], source="TrainingQueues settings"),
            "gpu_pools": gpu_pools(args["gpu_pools"], "TrainingQueues gpuPools"),
            "cluster": cluster_handle(args),
        }
        if "lustre" in args:
            built["lustre"] = args["lustre"]
        super().__init__(name, built, opts)


class TeamTenancyInputs(TypedDict):
    settings: Mapping[str, Any]
    """The `training` config section (camelCase keys): teams and their member groups."""
    namespaces: Mapping[str, pulumi.Input[str]]
    """Team name -> namespace name (TrainingQueues' `namespaces`, so objects wait for the namespaces)."""
    grafana_id: pulumi.Input[str]
    """Managed Grafana's resource ID (GpuMonitoring's `grafanaId`): team groups get Grafana Viewer there."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The cluster: credentials are granted on it, in-cluster objects are deleted with it."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags (role assignments carry none)."""
    protect: NotRequired[bool]
    """Protect stateful resources (prod); access objects hold no data."""


class TeamTenancy(team_tenancy.TeamTenancy):
    __doc__ = team_tenancy.TeamTenancy.__doc__

    member_groups: list[str]
    """Every distinct member group of every team, each granted cluster credentials and Grafana Viewer."""

    def __init__(self, name: str, args: TeamTenancyInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        built: team_tenancy.TeamTenancyArgs = {
            "settings": validate_section(TrainingConfig, args["settings"], source="TeamTenancy settings"),
            "namespaces": args["namespaces"],
            "cluster": cluster_handle(args),
            "grafana_id": args["grafana_id"],
        }
        super().__init__(name, built, opts)


class GrafanaDashboardsInputs(TypedDict):
    grafana_id: pulumi.Input[str]
    """ARM ID of the Managed Grafana instance (GpuMonitoring's `grafanaId`): the deployer gets Grafana Editor there."""
    grafana_endpoint: pulumi.Input[str]
    """`https://<name>-<hash>.<region>.grafana.azure.com` of the instance (GpuMonitoring's `grafanaEndpoint`)."""
    dashboards: list[str]
    """Which of the platform's dashboards to create: `gpu-overview`, `gpu-teams`."""


class GrafanaDashboards(grafana_dashboards.GrafanaDashboards):
    __doc__ = grafana_dashboards.GrafanaDashboards.__doc__

    dashboard_uids: list[str]
    """UIDs of the dashboards created (their URLs are `<endpoint>/d/<uid>`)."""

    def __init__(self, name: str, args: GrafanaDashboardsInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, {**args}, opts)


ADAPTERS: list[type[pulumi.ComponentResource]] = [
    Network,
    LogWorkspace,
    CpuNodePool,
    GpuNodePool,
    GpuStack,
    GpuMonitoring,
    GpuAutoscaling,
    LustreStorage,
    BlobStorageClasses,
    DiskStorageClasses,
    Registry,
    UpgradePolicy,
    NetAppFiles,
    TrainingQueues,
    TeamTenancy,
    GrafanaDashboards,
]
