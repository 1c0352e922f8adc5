"""The training stage of AksGpuPlatform: Kueue team queues, each team's storage and tenancy, Kueue's metrics."""

from __future__ import annotations

from collections.abc import Sequence

from aks_gpu_platform.config.catalog.vm_sizes import cpu_size
from aks_gpu_platform.config.cluster.node_pools import CpuPoolConfig
from aks_gpu_platform.config.cluster.security import SecurityConfig
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.monitoring.section import MonitoringConfig
from aks_gpu_platform.config.network.section import NetworkConfig
from aks_gpu_platform.config.storage.section import LustreConfig, StorageConfig
from aks_gpu_platform.config.training.section import TrainingConfig

from ..cluster.azure_policy import rdma_team_namespaces
from ..monitoring.gpu_monitoring import GpuMonitoring
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from ..storage.lustre import LustreStorage
from .kueue_metrics import kueue_service_monitor
from .queues import TrainingQueues, TrainingQueuesArgs
from .team_storage import TeamStorage, TeamStorageArgs, team_lustre_class
from .team_tenancy import TeamTenancy


def build_training(
    place: Placement,
    handle: ClusterHandle,
    lustre: LustreStorage | None,
    metrics: GpuMonitoring,
    training: TrainingConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    cpu_pool: CpuPoolConfig,
    security: SecurityConfig,
    storage: StorageConfig,
    network: NetworkConfig,
    monitoring: MonitoringConfig,
    *,
    teams_submit_here: bool,
) -> tuple[TrainingQueues | None, TeamStorage | None]:
    """Nothing unless `training.enabled`; `teams_submit_here` is False on a fleet member (teams only read there).
    Team pods reach the file servers of `network`'s Lustre and NetApp Files subnets; Kueue is scraped as often as
    the DCGM exporter (`monitoring.dcgmExporter`)."""
    if not training.enabled:
        return None, None
    # Only where the pod security policy is assigned (config/rules.py refuses RDMA teams without it).
    memory_locking = rdma_team_namespaces(training, gpu_pools) if security.pod_security.enabled else None
    queue_args = _queue_args(handle, training, gpu_pools, cpu_pool, lustre, storage.lustre, memory_locking)
    queues = TrainingQueues(place.role("queues"), queue_args, place.child("queues"))
    storage_args = _team_storage_args(handle, training, queues, lustre, storage, memory_locking)
    team_storage = TeamStorage(place.role("team-storage"), storage_args, place.child("team-storage"))
    TeamTenancy(
        place.role("teams"),
        {
            "settings": training,
            "namespaces": queues.namespaces,
            "cluster": handle,
            "gpu_pools": gpu_pools,
            "grafana_id": metrics.grafana_id,
            "submits": teams_submit_here,
            "storage_quota": team_storage.storage_quota,
            "file_servers": [str(c) for c in (network.lustre_cidr, network.netapp_cidr) if c is not None],
        },
        place.child("teams"),
    )
    kueue_service_monitor(
        place.role("queues"),
        queues.kueue_release,
        monitoring.dcgm_exporter.scrape_interval_seconds,
        metrics.scrape_dependencies,
        handle.k8s_options(place.owner),
    )
    return queues, team_storage


def _queue_args(
    handle: ClusterHandle,
    training: TrainingConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    cpu_pool: CpuPoolConfig,
    lustre: LustreStorage | None,
    lustre_settings: LustreConfig | None,
    memory_locking: list[str] | None,
) -> TrainingQueuesArgs:
    """The queues meter the CPU pool at its largest; each team namespace claims its own Lustre directory."""
    cpu_nodes = cpu_size(cpu_pool.vm_size)
    assert cpu_nodes is not None  # CpuPoolConfig accepts catalogued sizes only
    args: TrainingQueuesArgs = {
        "settings": training,
        "gpu_pools": gpu_pools,
        "cluster": handle,
        "cpu_metering": {
            "flavor": cpu_pool.name,
            "cpu": str(cpu_pool.max_count * cpu_nodes.vcpus),
            "memory": f"{cpu_pool.max_count * cpu_nodes.memory_gib}Gi",
        },
    }
    if memory_locking is not None:
        args["memory_locking_namespaces"] = memory_locking
    if lustre is not None and lustre_settings is not None:
        claims = lustre_settings.training
        args["lustre"] = {
            "storage_class_name": lustre.storage_class_name,
            # The class exists once the team's directory does (TeamStorage): the claim binds after that.
            "team_storage_classes": {t.name: team_lustre_class(t.name) for t in training.teams},
            "claim_name": claims.pvc_name,
            "size_gi": claims.pvc_size_gi,
        }
    return args


def _team_storage_args(
    handle: ClusterHandle,
    training: TrainingConfig,
    queues: TrainingQueues,
    lustre: LustreStorage | None,
    storage: StorageConfig,
    memory_locking: list[str] | None,
) -> TeamStorageArgs:
    # Shared across teams: one account per Blob class, the whole filesystem through the training class.
    shared_classes = [c.name for c in (storage.blob_classes.standard, storage.blob_classes.premium)]
    args: TeamStorageArgs = {
        "settings": training,
        "namespaces": queues.namespaces,
        "cluster": handle,
        "shared_storage_classes": shared_classes,
    }
    if memory_locking is not None:
        args["memory_locking_namespaces"] = memory_locking
    if lustre is not None and storage.lustre is not None:
        shared_classes.append(storage.lustre.training.storage_class_name)
        args["lustre_mgs_address"] = lustre.mgs_address
        args["lustre_root_namespace"] = lustre.namespace
        args["lustre_root_claim"] = lustre.pvc_name
        args["data_account_name"] = lustre.storage_account_name
    return args
