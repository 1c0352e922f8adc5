"""Rules across sections, in the order PlatformConfig (config/platform.py) runs them: where the pools fit (regions,
names, the nodes subnet, the cluster's own ranges and version), what NVIDIA-only features need on AMD pools, what
aksManaged pools cannot do yet, which pools can run which validation, the Lustre startup taint no AKS pool can carry,
team namespaces under the pod security policy, the subnets Lustre and NetApp Files need, team quotas beside the
pools and the sample server, and what served models need of storage and the autoscaler.

PlatformConfig runs them before any resource is registered, handing each the sections it reads; each raises a field
error that names the setting to change. Only the platform model imports this module, and it imports sections only,
so no section depends back on the whole model.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence

from .catalog.aks_versions import why_not_creatable
from .catalog.lustre_skus import LUSTRE_STARTUP_TAINT_KEY, required_subnet_prefix
from .catalog.regions import region
from .cluster.node_pools import AutoscaledPoolConfig, CpuPoolConfig, SystemPoolConfig
from .cluster.section import AutoscalerProfileConfig, ClusterConfig
from .cluster.security import SecurityConfig
from .errors import field_error
from .gpu.health import GpuHealthConfig
from .gpu.section import GpuPoolConfig, GpuStackConfig
from .gpu.validation import nccl_baseline
from .inference.models import InferenceConfig
from .inference.runtime import (
    ENDPOINT_REMOVAL_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    TEARDOWN_SECONDS,
    TERMINATION_GRACE_SECONDS,
)
from .inference.section import AutoscalingConfig
from .network.section import NETAPP_DELEGATION, NetworkConfig, usable_addresses
from .storage.section import LUSTRE_CLIENT_OS_SKUS, BlobClassesConfig, StorageConfig, nid_list_covers, nid_list_for
from .training.section import FLAVOR_MAX_TAINTS, TrainingConfig, gpu_capacity, gpus_per_node
from .upgrade.section import UpgradeConfig

# A pool with the config path that names it in errors (systemPool, cpuPool, gpuPools[i]).
NamedPool = tuple[str, AutoscaledPoolConfig]


def check_zones_exist(location: str, pools: Sequence[NamedPool]) -> None:
    """Every pool's zones exist in the region (some regions have none)."""
    found = region(location)
    assert found is not None, "checked by PlatformConfig._check_region"
    for path, pool in pools:
        beyond = [zone for zone in pool.zones if int(zone) > found.zones]
        if beyond:
            offered = f"zones 1-{found.zones}" if found.zones else "no availability zones: set zones: []"
            raise field_error(f"{path}.zones", pool.zones, f"{location} offers {offered}")


def check_pool_names_unique(pools: Sequence[NamedPool]) -> None:
    """System, CPU and GPU pools share one namespace of AKS agent pool names."""
    seen: dict[str, str] = {}
    for path, pool in pools:
        if pool.name in seen:
            raise field_error(f"{path}.name", pool.name, f"pool names must be unique; {seen[pool.name]} has it")
        seen[pool.name] = path


def check_nodes_subnet_fits(
    network: NetworkConfig,
    upgrade: UpgradeConfig,
    system_pool: SystemPoolConfig,
    cpu_pool: CpuPoolConfig,
    gpu_pools: Sequence[GpuPoolConfig],
) -> None:
    """CNI overlay: one subnet address per node, plus the surge nodes each pool adds while upgrading."""
    sized: list[tuple[AutoscaledPoolConfig, int]] = [
        (system_pool, upgrade.system_pool.surge_nodes(system_pool.max_count)),
        (cpu_pool, upgrade.cpu_pool.surge_nodes(cpu_pool.max_count)),
        *((pool, upgrade.gpu_pools.surge_nodes(pool.max_count)) for pool in gpu_pools),
    ]
    needed = sum(pool.max_count + surge for pool, surge in sized)
    nodes = network.nodes_cidr
    if needed > usable_addresses(nodes):
        where = "existingSubnets.nodesSubnetCidr" if network.uses_existing_subnets else "subnets.nodes"
        raise field_error(
            f"network.{where}",
            str(nodes),
            f"holds {usable_addresses(nodes)} nodes but the pools' maxCount plus their upgrade surge need {needed}",
        )


def check_kubernetes_version(cluster: ClusterConfig, upgrade: UpgradeConfig, on: datetime.date) -> None:
    """AKS creates the cluster's minor under its support plan on `on` (config/catalog/aks_versions.py)."""
    problem = why_not_creatable(cluster.kubernetes_version, upgrade.support_plan, on)
    if problem is not None:
        raise field_error("cluster.kubernetesVersion", cluster.kubernetes_version, problem)


def check_cluster_ranges_outside_vnet(network: NetworkConfig, cluster: ClusterConfig) -> None:
    """The overlay's pod and service ranges must not shadow addresses of the VNet the nodes live in."""
    if network.address_space is None:
        return
    vnet = ipaddress.IPv4Network(network.address_space)
    for key, value in (("podCidr", cluster.pod_cidr), ("serviceCidr", cluster.service_cidr)):
        if ipaddress.IPv4Network(value).overlaps(vnet):
            raise field_error(f"cluster.{key}", value, f"must not overlap network.addressSpace ({vnet})")


def check_amd_pools(
    gpu_stack: GpuStackConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    gpu_health: GpuHealthConfig,
    autoscaling: AutoscalingConfig,
) -> None:
    """Cluster-wide features that only NVIDIA GPUs have, refused while any GPU pool is AMD, naming the setting."""
    amd = [(i, p) for i, p in enumerate(gpu_pools) if p.vendor == "amd"]
    if not amd:
        return
    i, pool = amd[0]
    why = f"gpuPools[{i}] ({pool.name}) is an AMD {pool.sku.gpu_model} pool"
    if gpu_stack.mode == "aksManaged":
        raise field_error(
            "gpuStack.mode",
            "aksManaged",
            f"{why}: AKS-managed GPU installs NVIDIA's driver, device plugin and DCGM exporter and AKS installs "
            "nothing on AMD sizes (gpuProfile.driver None); use devicePlugin or gpuOperator (they serve the NVIDIA "
            "pools; AMD's GPU Operator serves the AMD ones)",
        )
    if gpu_health.remediation.enabled:
        raise field_error(
            "gpuHealth.remediation.enabled",
            True,
            f"{why}: NVSentinel remediation reads NVIDIA's DCGM and XID events only; set it false",
        )
    if not any(p.vendor == "nvidia" for p in gpu_pools):
        if gpu_stack.smoke_test:
            raise field_error(
                "gpuStack.smokeTest",
                True,
                f"{why} and no pool has NVIDIA GPUs: the smoke test runs nvidia-smi on one nvidia.com/gpu; set it "
                "false",
            )
        if autoscaling.sample_inference.enabled:
            raise field_error(
                "autoscaling.sampleInference.enabled",
                True,
                f"{why} and no pool has NVIDIA GPUs: the sample serves Triton on nvidia.com/gpu; set it false",
            )


# The check-capacity class only books nodes that exist; best-effort-atomic-scale-up waits for the autoscaler.
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"


def check_aks_managed(
    gpu_stack: GpuStackConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    autoscaling: AutoscalingConfig,
    training: TrainingConfig,
) -> None:
    """aksManaged: what the AKS-managed GPU preview does not support, refused with the setting to change.

    "Cluster autoscaler isn't supported on managed GPU node pools during preview. Scale these pools manually."
    (MicrosoftDocs/azure-aks-docs articles/aks/aks-managed-gpu-nodes.md, Limitations, doc date 2026-07-02.)
    AKS's exporter runs without Kubernetes pod mapping (AgentBaker cse_config.sh: `dcgm-exporter -f
    /etc/dcgm-exporter/default-counters.csv --address ":19400"`, no `-k`), so no series names the pod holding a
    GPU: KEDA's per-workload utilisation query can never match.
    """
    if gpu_stack.mode != "aksManaged":
        return
    for i, pool in enumerate(gpu_pools):
        if pool.min_count != pool.max_count:
            raise field_error(
                f"gpuPools[{i}].maxCount",
                pool.max_count,
                f"gpuStack.mode aksManaged pools are fixed-size while AKS-managed GPU is in preview (no cluster "
                f"autoscaler): set minCount equal to maxCount (minCount is {pool.min_count}), or use mode "
                "devicePlugin for an autoscaled pool",
            )
        if pool.sharing is not None:
            # The AgentPool API's gpuProfile.nvidia has managementMode and MIG settings only (2026-08-01 and
            # 2026-08-02-preview NvidiaGPUProfile): AKS configures its managed device plugin itself.
            raise field_error(
                f"gpuPools[{i}].sharing",
                pool.sharing.mode,
                "gpuStack.mode aksManaged: AKS runs and configures the device plugin and offers no GPU sharing "
                "setting; use mode devicePlugin or gpuOperator for time-slicing or MPS",
            )
    no_pod_labels = (
        "gpuStack.mode aksManaged: AKS's DCGM exporter has no pod mapping, so no series names the pods KEDA would "
        "scale on; use mode devicePlugin or gpuOperator for GPU-utilisation autoscaling"
    )
    if autoscaling.targets:
        raise field_error("autoscaling.targets", [t.deployment for t in autoscaling.targets], no_pod_labels)
    if autoscaling.sample_inference.enabled:
        raise field_error("autoscaling.sampleInference.enabled", True, no_pod_labels)
    admission = training.admission
    if training.enabled and admission.provisioning_request and admission.provisioning_class != CHECK_CAPACITY:
        raise field_error(
            "training.admission.provisioningClass",
            admission.provisioning_class,
            "gpuStack.mode aksManaged pools do not autoscale, so a scale-up ProvisioningRequest never completes: "
            f"use {CHECK_CAPACITY} (books existing nodes) or provisioningRequest false",
        )


def check_pool_validation(gpu_pools: Sequence[GpuPoolConfig]) -> None:
    """Validation checks only where they can run: DCGM diagnostics on whole GPUs, NCCL across two IB nodes."""
    for i, pool in enumerate(gpu_pools):
        checks = pool.validation
        path = f"gpuPools[{i}].validation"
        if checks.dcgm_diag and pool.mig_profile is not None:
            raise field_error(
                f"{path}.dcgmDiag",
                True,
                f"DCGM diagnostics need whole GPUs; pool {pool.name} is cut into {pool.mig_profile} MIG slices",
            )
        if not checks.nccl_all_reduce:
            continue
        if not pool.infiniband:
            raise field_error(
                f"{path}.ncclAllReduce", True, f"needs an InfiniBand pool; set gpuPools[{i}].infiniband (IB sizes)"
            )
        if pool.mig_profile is not None:
            raise field_error(f"{path}.ncclAllReduce", True, "needs whole GPUs; the pool uses MIG slices")
        if pool.max_count < 2:
            raise field_error(
                f"{path}.ncclAllReduce", True, f"runs across two nodes; pool {pool.name} has maxCount {pool.max_count}"
            )
        if checks.min_bus_bandwidth_gbps is None and nccl_baseline(pool.vm_size) is None:
            raise field_error(
                f"{path}.minBusBandwidthGBps",
                None,
                f"no published two-node baseline for {pool.vm_size}: set the floor in GB/s",
            )


def check_lustre_startup_taint(gpu_pools: Sequence[GpuPoolConfig]) -> None:
    """Refuse the Lustre CSI startup taint as a pool taint: Kubernetes can never remove it there.

    "Node taints ... can only be added, updated, or removed completely using the AKS API" (MicrosoftDocs/
    azure-aks-docs articles/aks/use-node-taints.md, snapshot 2026-08-21): the driver's removal of
    `azurelustre.csi.azure.com/agent-not-ready` would never stick, and every pod without a toleration would
    stay Pending on that pool.
    """
    for i, pool in enumerate(gpu_pools):
        for j, taint in enumerate(pool.taints):
            if taint.split("=", 1)[0].split(":", 1)[0] == LUSTRE_STARTUP_TAINT_KEY:
                raise field_error(
                    f"gpuPools[{i}].taints[{j}]",
                    taint,
                    f"{LUSTRE_STARTUP_TAINT_KEY} must be a node initialization taint the CSI driver lifts, not a pool "
                    "taint (AKS keeps pool taints; Kubernetes cannot remove them, so pods would never schedule). "
                    "The platform's Lustre node plugin tolerates it; see docs/gpu-operations.md",
                )


def check_pod_security_exclusions(security: SecurityConfig, training: TrainingConfig) -> None:
    """A team namespace left out of the pod security policy would admit privileged pods next to other teams."""
    if not security.pod_security.enabled or not training.enabled:
        return
    teams = {team.namespace_name for team in training.teams}
    for i, namespace in enumerate(security.pod_security.excluded_namespaces):
        if namespace in teams:
            raise field_error(
                f"security.podSecurity.excludedNamespaces[{i}]",
                namespace,
                "a team namespace stays under the pod security policy (teams needing IPC_LOCK for RDMA get it "
                "from their InfiniBand quota); exclude only namespaces of your own node agents",
            )


def check_rdma_pod_security(
    security: SecurityConfig,
    training: TrainingConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    inference: InferenceConfig,
) -> None:
    """A team with InfiniBand quota, and a served model across nodes, run NCCL pods that add IPC_LOCK, which
    Kubernetes' Pod Security `baseline` refuses; their namespace is enforced by the Azure Policy baseline with
    IPC_LOCK allowed instead, so that policy must be assigned (components/cluster/azure_policy.py,
    components/shared/workloads.py, components/inference/serving.py)."""
    if security.pod_security.enabled:
        return
    if training.enabled:
        infiniband = {pool.name for pool in gpu_pools if pool.infiniband}
        teams = [team.name for team in training.teams if any(q.pool in infiniband for q in team.quotas)]
        if teams:
            raise field_error(
                "security.podSecurity.enabled",
                False,
                f"teams {teams} have quota on InfiniBand pools: their NCCL pods add IPC_LOCK, which Kubernetes' "
                "baseline refuses, so their namespaces' pod security comes from the Azure Policy baseline with "
                "IPC_LOCK allowed; keep it enabled (with azurePolicy)",
            )
    spanning = [m.name for m in inference.models if m.nodes > 1]
    if spanning:
        raise field_error(
            "security.podSecurity.enabled",
            False,
            f"inference.models {spanning} span nodes: their servers add IPC_LOCK for NCCL over InfiniBand, which "
            "Kubernetes' baseline refuses, so the models namespace's pod security comes from the Azure Policy "
            "baseline with IPC_LOCK allowed; keep it enabled (with azurePolicy)",
        )


def check_lustre_subnet_size(storage: StorageConfig, network: NetworkConfig) -> None:
    """The Lustre subnet holds the addresses the filesystem's size needs (config/catalog/lustre_skus.py)."""
    lustre = storage.lustre
    if lustre is None or not lustre.enabled:
        return
    prefix = required_subnet_prefix(lustre.capacity_tib)
    subnet = network.lustre_cidr
    if subnet.prefixlen > prefix:
        where = "existingSubnets.lustreSubnetCidr" if network.uses_existing_subnets else "subnets.lustre"
        raise field_error(
            f"network.{where}",
            str(subnet),
            f"storage.lustre.capacityTiB {lustre.capacity_tib} needs a /{prefix} or larger subnet",
        )


def check_lustre_root_squash(storage: StorageConfig, network: NetworkConfig, training: TrainingConfig) -> None:
    """Each team's directory is created as root from a node (components/training/team_storage.py); squashed, it
    fails: with teams, root squash must exempt the nodes subnet."""
    lustre = storage.lustre
    if lustre is None or not lustre.enabled:
        return
    squash = lustre.root_squash
    nodes = network.nodes_cidr
    teams = training.enabled and bool(training.teams)
    if teams and squash.mode != "None" and not nid_list_covers(squash.no_squash_nid_lists, nodes):
        raise field_error(
            "storage.lustre.rootSquash.noSquashNidLists",
            squash.no_squash_nid_lists,
            f"must cover the nodes subnet {nodes} (e.g. {nid_list_for(nodes)!r}): the platform creates each "
            "team's directory as root from a node, which root squash would refuse; team pods never run as "
            "root (docs/security.md)",
        )


def check_lustre_client_os(storage: StorageConfig, client_pools: Sequence[NamedPool]) -> None:
    """Pools that mount Lustre run an OS the Lustre CSI client supports."""
    lustre = storage.lustre
    if lustre is None or not lustre.enabled:
        return
    for path, pool in client_pools:
        if pool.os_sku not in LUSTRE_CLIENT_OS_SKUS:
            raise field_error(
                f"{path}.osSku",
                pool.os_sku,
                f"pools that mount Lustre must run {' or '.join(LUSTRE_CLIENT_OS_SKUS)} (Lustre CSI client)",
            )


def check_netapp_files_subnet(storage: StorageConfig, network: NetworkConfig) -> None:
    """NetApp Files volumes live in a subnet delegated to it."""
    if not storage.netapp_files.enabled or network.netapp_cidr is not None:
        return
    if network.uses_existing_subnets:
        where, hint = "existingSubnets.netappSubnetId", "an existing subnet and its netappSubnetCidr"
    else:
        where, hint = "subnets.netapp", "a CIDR inside addressSpace, /28 or larger"
    raise field_error(
        f"network.{where}",
        None,
        f"storage.netappFiles.enabled needs a subnet delegated to {NETAPP_DELEGATION}: {hint}",
    )


def check_quotas_fit_pools(training: TrainingConfig, gpu_pools: Sequence[GpuPoolConfig]) -> None:
    """Each quota names a GPU pool, and the nominal quotas on a pool (guaranteed shares) fit its GPUs."""
    pools = {p.name: p for p in gpu_pools}
    nominal: dict[str, int] = {}
    holders: dict[str, list[str]] = {}
    for i, team in enumerate(training.teams):
        for j, quota in enumerate(team.quotas):
            path = f"training.teams[{i}].quotas[{j}]"
            pool = pools.get(quota.pool)
            if pool is None:
                raise field_error(f"{path}.pool", quota.pool, f"must name a GPU pool in gpuPools: {sorted(pools)}")
            capacity = gpu_capacity(pool)
            nominal[pool.name] = nominal.get(pool.name, 0) + quota.gpus
            holders.setdefault(pool.name, []).append(team.name)
            if nominal[pool.name] > capacity:
                raise field_error(
                    f"{path}.gpus",
                    quota.gpus,
                    f"pool {pool.name} holds at most {capacity} GPUs (maxCount {pool.max_count} x "
                    f"{gpus_per_node(pool)} per node); teams {holders[pool.name]} ask {nominal[pool.name]} "
                    "in nominal quota (guaranteed shares must fit; idle ones are lent through the cohort)",
                )


def models_kept_gpus(inference: InferenceConfig) -> dict[str, int]:
    """Pool name -> the GPUs the served models' kept-up replicas (minReplicas) hold there."""
    kept: dict[str, int] = {}
    for model in inference.models:
        kept[model.pool] = kept.get(model.pool, 0) + model.min_replicas * model.gpus_per_replica
    return kept


def check_quotas_beside_sample_inference(
    autoscaling: AutoscalingConfig,
    training: TrainingConfig,
    inference: InferenceConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    sample_pools: Sequence[str] | None,
) -> None:
    """Where no pool the sample can run on (`sample_pools`, PlatformConfig.sample_inference_pools) has room for its
    kept-up replicas beside the team quotas, a job asking for its team's whole quota would be admitted by Kueue and
    never placed (the atomic scale-up cannot add a node past maxCount): refuse the quota."""
    sample = autoscaling.sample_inference
    reachable = [p for p in gpu_pools if p.sku.vendor == "nvidia" and gpus_per_node(p) >= sample.gpus_per_pod]
    if sample_pools is None or any(p.name in sample_pools for p in reachable) or not reachable:
        return
    nominal = training.nominal_gpus()
    pool = next(p for p in reachable if nominal.get(p.name))
    holders = [team.name for team in training.teams for quota in team.quotas if quota.pool == pool.name]
    i, j = next(
        (i, j)
        for i, team in enumerate(training.teams)
        for j, quota in enumerate(team.quotas)
        if quota.pool == pool.name
    )
    pinned = sample.scaling.min_replicas * sample.gpus_per_pod
    raise field_error(
        f"training.teams[{i}].quotas[{j}].gpus",
        training.teams[i].quotas[j].gpus,
        f"pool {pool.name} holds {gpu_capacity(pool)} GPUs (maxCount {pool.max_count} x {gpus_per_node(pool)}); "
        f"teams {holders} ask {nominal[pool.name]} in nominal quota while "
        f"autoscaling.sampleInference keeps {pinned} GPU(s) up (minReplicas {sample.scaling.min_replicas} x "
        f"gpusPerPod {sample.gpus_per_pod}) and no GPU pool has room for them beside the team quotas and the "
        f"served models' kept-up replicas ({models_kept_gpus(inference).get(pool.name, 0)} GPU(s) here): a job "
        "using the whole quota would be admitted and never placed. "
        "Lower the quota, raise the pool's maxCount, or set the sample's minReplicas to 0",
    )


def check_flavor_taints(training: TrainingConfig, gpu_pools: Sequence[GpuPoolConfig]) -> None:
    """With training on, each pool's ResourceFlavor lists its taints, and Kueue caps how many."""
    if not training.enabled:
        return
    for i, pool in enumerate(gpu_pools):
        taints = 1 + len(pool.taints) + (1 if pool.priority == "Spot" else 0)
        if taints > FLAVOR_MAX_TAINTS:
            raise field_error(
                f"gpuPools[{i}].taints",
                pool.taints,
                f"with training on, a pool's ResourceFlavor lists its taints: at most {FLAVOR_MAX_TAINTS} "
                "counting the GPU taint (and Spot's)",
            )


def check_team_namespaces_beside_lustre(training: TrainingConfig, storage: StorageConfig) -> None:
    """The Lustre component owns its training namespace; each team namespace gets its own claim instead."""
    lustre = storage.lustre
    if lustre is None or not lustre.enabled:
        return
    for i, team in enumerate(training.teams):
        if team.namespace_name == lustre.training.namespace:
            where = f"training.teams[{i}].namespace" if team.namespace else f"training.teams[{i}].name"
            raise field_error(
                where,
                team.namespace_name,
                "must differ from storage.lustre.training.namespace (the Lustre component owns it; "
                "each team namespace gets its own claim on the filesystem)",
            )


def check_weights_cache_class(inference: InferenceConfig, blob_classes: BlobClassesConfig) -> None:
    """A claim naming a class nobody creates never binds: the model's pods stay Pending and `pulumi up` waits out
    its timeout. Served models with Hub weights need one Blob class the stack creates (streamed ones cache none)."""
    cached = [m.name for m in inference.models if m.weights.hugging_face]
    if cached and blob_classes.read_write_many_class is None:
        raise field_error(
            "storage.blobClasses.premium.enabled",
            False,
            f"inference.models {cached} cache their weights on a ReadWriteMany Blob "
            "claim, and both storage.blobClasses.premium and .standard are disabled: enable one of them",
        )


def check_model_drain(autoscaler: AutoscalerProfileConfig, inference: InferenceConfig) -> None:
    """A node the cluster autoscaler removes gives its pods at most maxGracefulTerminationSeconds: a model server
    there must still drain every request the route allows (config/inference/runtime.py), or scale-down cuts them."""
    if inference.models and autoscaler.max_graceful_termination_seconds < TERMINATION_GRACE_SECONDS:
        raise field_error(
            "cluster.autoscalerProfile.maxGracefulTerminationSeconds",
            autoscaler.max_graceful_termination_seconds,
            f"served models drain for up to {TERMINATION_GRACE_SECONDS} s (a {ENDPOINT_REMOVAL_SECONDS} s pause, the "
            f"route's {REQUEST_TIMEOUT_SECONDS} s request timeout, {TEARDOWN_SECONDS} s teardown): a scale-down "
            f"would cut their streams; set at least {TERMINATION_GRACE_SECONDS}",
        )
