"""The training stage of AksGpuPlatform: Kueue team queues, each team's storage and tenancy, Kueue's metrics."""

from __future__ import annotations

from aks_gpu_platform.config.catalog.vm_sizes import cpu_size
from aks_gpu_platform.config.platform import PlatformConfig

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
    cfg: PlatformConfig,
    place: Placement,
    handle: ClusterHandle,
    lustre: LustreStorage | None,
    monitoring: GpuMonitoring,
    *,
    teams_submit_here: bool,
) -> tuple[TrainingQueues | None, TeamStorage | None]:
    """Nothing unless `training.enabled`; `teams_submit_here` is False on a fleet member (teams only read there)."""
    if not cfg.training.enabled:
        return None, None
    pod_security = cfg.security.pod_security
    lustre_cfg = cfg.storage.lustre
    cpu_nodes = cpu_size(cfg.cpu_pool.vm_size)
    assert cpu_nodes is not None  # CpuPoolConfig accepts catalogued sizes only
    training_args: TrainingQueuesArgs = {
        "settings": cfg.training,
        "gpu_pools": cfg.gpu_pools,
        "cluster": handle,
        "cpu_metering": {
            "flavor": cfg.cpu_pool.name,
            "cpu": str(cfg.cpu_pool.max_count * cpu_nodes.vcpus),
            "memory": f"{cfg.cpu_pool.max_count * cpu_nodes.memory_gib}Gi",
        },
    }
    if pod_security.enabled:  # config/cluster/security.py refuses RDMA teams without it
        training_args["memory_locking_namespaces"] = rdma_team_namespaces(cfg.training, cfg.gpu_pools)
    if lustre is not None and lustre_cfg is not None:
        claims = lustre_cfg.training  # each team namespace gets a claim on its own directory
        training_args["lustre"] = {
            "storage_class_name": lustre.storage_class_name,
            # The class exists once the team's directory does (TeamStorage): the claim binds after that.
            "team_storage_classes": {t.name: team_lustre_class(t.name) for t in cfg.training.teams},
            "claim_name": claims.pvc_name,
            "size_gi": claims.pvc_size_gi,
        }
    queues = TrainingQueues(place.role("queues"), training_args, place.child("queues"))
    # Shared across teams: one account per Blob class, the whole filesystem through the training class.
    shared_classes = [c.name for c in (cfg.storage.blob_classes.standard, cfg.storage.blob_classes.premium)]
    storage_args: TeamStorageArgs = {
        "settings": cfg.training,
        "namespaces": queues.namespaces,
        "cluster": handle,
        "shared_storage_classes": shared_classes,
    }
    if pod_security.enabled:
        storage_args["memory_locking_namespaces"] = rdma_team_namespaces(cfg.training, cfg.gpu_pools)
    if lustre is not None and lustre_cfg is not None:
        shared_classes.append(lustre_cfg.training.storage_class_name)
        storage_args["lustre_mgs_address"] = lustre.mgs_address
        storage_args["lustre_root_namespace"] = lustre.namespace
        storage_args["lustre_root_claim"] = lustre.pvc_name
        storage_args["data_account_name"] = lustre.storage_account_name
    team_storage = TeamStorage(place.role("team-storage"), storage_args, place.child("team-storage"))
    TeamTenancy(
        place.role("teams"),
        {
            "settings": cfg.training,
            "namespaces": queues.namespaces,
            "cluster": handle,
            "gpu_pools": cfg.gpu_pools,
            "grafana_id": monitoring.grafana_id,
            "submits": teams_submit_here,
            "storage_quota": team_storage.storage_quota,
            "file_servers": [str(c) for c in (cfg.network.lustre_cidr, cfg.network.netapp_cidr) if c is not None],
        },
        place.child("teams"),
    )
    kueue_service_monitor(
        place.role("queues"),
        queues.kueue_release,
        cfg.monitoring.dcgm_exporter.scrape_interval_seconds,
        monitoring.scrape_dependencies,
        handle.k8s_options(place.owner),
    )
    return queues, team_storage
