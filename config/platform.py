"""The whole platform's config and the rules that span sections."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping
from typing import Literal, cast

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from .base import ConfigModel
from .catalog.aks_versions import CATALOG_CHECKED_ON, why_not_creatable
from .catalog.lustre_skus import required_subnet_prefix
from .catalog.regions import CATALOG_SOURCE, closest_regions, region
from .cluster.node_pools import AutoscaledPoolConfig, CpuPoolConfig, SystemPoolConfig
from .cluster.section import ClusterConfig
from .cluster.security import SecurityConfig
from .errors import field_error
from .gpu.health import GpuHealthConfig
from .gpu.node_image import check_node_images
from .gpu.section import GpuPoolConfig, GpuStackConfig
from .inference.model_checks import check_models
from .inference.models import InferenceConfig
from .inference.section import AutoscalingConfig
from .inference.streamed_weights import check_streamed_weights
from .monitoring.section import MonitoringConfig
from .network.section import NETAPP_DELEGATION, NetworkConfig, usable_addresses
from .rules import (
    check_aks_managed,
    check_amd_pools,
    check_lustre_startup_taint,
    check_model_drain,
    check_pod_security_exclusions,
    check_pool_validation,
    check_rdma_pod_security,
    check_weights_cache_class,
    weights_cache_class,
)
from .storage.section import LUSTRE_CLIENT_OS_SKUS, StorageConfig, nid_list_covers, nid_list_for
from .training.section import FLAVOR_MAX_TAINTS, TrainingConfig, gpu_capacity, gpus_per_node
from .types import AzureName
from .upgrade.section import UpgradeConfig

Environment = Literal["dev", "prod"]

# Validation-context key: the date the Kubernetes minor is checked against (default CATALOG_CHECKED_ON).
VERSION_DATE_CONTEXT = "kubernetesVersionDate"


class ResourceGroupConfig(ConfigModel):
    """The resource group every platform resource lives in."""

    name: AzureName = Field(
        description="Resource group name: 1-63 letters, digits, '_', '-' or '.', starting with a letter or digit"
    )
    existing: bool = Field(
        default=False, description="Adopt an existing group instead of creating one (it is then never deleted)"
    )


class PlatformConfig(ConfigModel):
    """Every setting of one stack, validated as a whole before any resource is registered."""

    environment: Environment = Field(
        description="Environment name; tags every resource, and prod protects stateful resources from deletion"
    )
    location: str = Field(
        description="Azure region of every resource, its programmatic name, e.g. koreacentral "
        "(config/catalog/regions.py)"
    )
    resource_group: ResourceGroupConfig = Field(description="The resource group: name, and whether it already exists")
    tags: dict[str, str] = Field(
        default_factory=dict, description="Extra Azure tags merged onto every resource (environment is added)"
    )
    network: NetworkConfig = Field(
        description="A new VNet (addressSpace + subnets) or existing subnets of a hub-and-spoke network"
    )
    cluster: ClusterConfig = Field(
        description="AKS control plane: identity and access, Kubernetes minor, networking, cluster autoscaler"
    )
    system_pool: SystemPoolConfig = Field(
        default_factory=SystemPoolConfig,
        description="System node pool inside the cluster, tainted CriticalAddonsOnly (settings apply at creation)",
    )
    cpu_pool: CpuPoolConfig = Field(
        default_factory=CpuPoolConfig,
        description="CPU user pool (label pool=cpu) for monitoring, log collection, API servers, preprocessing",
    )
    gpu_pools: list[GpuPoolConfig] = Field(
        min_length=1, description="GPU node pools; a GPU platform needs at least one"
    )
    gpu_stack: GpuStackConfig = Field(
        default_factory=GpuStackConfig,
        description="Cluster-wide GPU software: device plugin or GPU Operator, smoke test",
    )
    monitoring: MonitoringConfig = Field(
        default_factory=MonitoringConfig,
        description="Registry, logs, managed Prometheus, DCGM exporter, Grafana and GPU alerts",
    )
    autoscaling: AutoscalingConfig = Field(
        default_factory=AutoscalingConfig,
        description="KEDA add-on, Deployments scaled on GPU utilisation, the sample inference workload",
    )
    inference: InferenceConfig = Field(
        default_factory=InferenceConfig,
        description="LLM serving: models (vLLM) behind the inference gateway, their pools, callers, replicas and SLO",
    )
    hugging_face_token: SecretStr | None = Field(
        default=None,
        alias="huggingFaceToken",
        description="Hugging Face Hub token for models with weights.tokenSecret; set it only as a secret: "
        "`pulumi config set --secret huggingFaceToken <token>`",
    )
    storage: StorageConfig = Field(
        default_factory=StorageConfig,
        description="Shared storage: Azure Managed Lustre with Blob integration, NetApp Files, Blob and Disk classes",
    )
    upgrade: UpgradeConfig = Field(
        default_factory=UpgradeConfig,
        description="Tier, support plan, upgrade channels, maintenance windows, freezes, per-pool upgrade settings",
    )
    security: SecurityConfig = Field(
        default_factory=SecurityConfig,
        description="Encryption at host, Azure Policy, secrets store CSI driver, Defender for Containers",
    )
    training: TrainingConfig = Field(
        default_factory=TrainingConfig,
        description="Kueue team queues and GPU quotas, JobSet, autoscaler-aware admission",
    )
    gpu_health: GpuHealthConfig = Field(
        default_factory=GpuHealthConfig,
        description="GPU health alerts (node conditions, DCGM counters) and NVSentinel remediation",
    )

    @property
    def all_pools(self) -> list[tuple[str, AutoscaledPoolConfig]]:
        """Every pool with the config path that names it in errors."""
        pools: list[tuple[str, AutoscaledPoolConfig]] = [("systemPool", self.system_pool), ("cpuPool", self.cpu_pool)]
        pools += [(f"gpuPools[{i}]", p) for i, p in enumerate(self.gpu_pools)]
        return pools

    @property
    def protect_stateful(self) -> bool:
        """Prod protects resources that hold data (Lustre, storage accounts, registry)."""
        return self.environment == "prod"

    @field_validator("hugging_face_token", mode="before")
    @classmethod
    def _empty_token_is_unset(cls, token: object) -> object:
        # Pulumi.yaml defaults the key to "" so the CLI does not ask every stack for it.
        return None if token == "" else token

    @field_validator("location")
    @classmethod
    def _check_region(cls, location: str) -> str:
        if region(location) is None:
            close = closest_regions(location)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise ValueError(
                f"not an Azure region of the catalog; {hint}Use the programmatic name (`az account list-locations "
                f"--query [].name`); the catalog (config/catalog/regions.py) is {CATALOG_SOURCE}"
            )
        return location

    @model_validator(mode="after")
    def _check_zones_exist(self) -> PlatformConfig:
        found = region(self.location)
        assert found is not None, "checked by _check_region"
        for path, pool in self.all_pools:
            beyond = [zone for zone in pool.zones if int(zone) > found.zones]
            if beyond:
                offered = f"zones 1-{found.zones}" if found.zones else "no availability zones: set zones: []"
                raise field_error(f"{path}.zones", pool.zones, f"{self.location} offers {offered}")
        return self

    @model_validator(mode="after")
    def _check_pools_fit(self) -> PlatformConfig:
        seen: dict[str, str] = {}
        for path, pool in self.all_pools:
            if pool.name in seen:
                raise field_error(f"{path}.name", pool.name, f"pool names must be unique; {seen[pool.name]} has it")
            seen[pool.name] = path
        # CNI overlay: one subnet address per node, plus the surge nodes each pool adds while upgrading.
        surges = [self.upgrade.system_pool, self.upgrade.cpu_pool] + [self.upgrade.gpu_pools] * len(self.gpu_pools)
        needed = sum(
            pool.max_count + surge.surge_nodes(pool.max_count)
            for (_, pool), surge in zip(self.all_pools, surges, strict=True)
        )
        nodes = self.network.nodes_cidr
        if needed > usable_addresses(nodes):
            where = "existingSubnets.nodesSubnetCidr" if self.network.uses_existing_subnets else "subnets.nodes"
            raise field_error(
                f"network.{where}",
                str(nodes),
                f"holds {usable_addresses(nodes)} nodes but the pools' maxCount plus their upgrade surge need {needed}",
            )
        return self

    @model_validator(mode="after")
    def _check_fleet_operations(self) -> PlatformConfig:
        # aksManaged limits, where validation checks can run, the Lustre startup taint (config/rules.py).
        # First: on an AMD pool the NVIDIA-only feature is the error, not its details.
        check_amd_pools(self.gpu_stack, self.gpu_pools, self.gpu_health, self.autoscaling)
        check_aks_managed(self.gpu_stack, self.gpu_pools, self.autoscaling, self.training)
        check_pool_validation(self.gpu_pools)
        check_lustre_startup_taint(self.gpu_pools)
        return self

    @model_validator(mode="after")
    def _check_pod_security(self) -> PlatformConfig:
        check_pod_security_exclusions(self.security, self.training)
        check_rdma_pod_security(self.security, self.training, self.gpu_pools, self.inference)
        return self

    @model_validator(mode="after")
    def _check_kubernetes_version(self, info: ValidationInfo) -> PlatformConfig:
        # The catalog's date unless the loader passes another (today's, on a real run): see aks_versions.
        context = cast(Mapping[str, object], info.context or {})
        on = context.get(VERSION_DATE_CONTEXT, CATALOG_CHECKED_ON)
        if not isinstance(on, datetime.date):
            raise TypeError(f"validation context {VERSION_DATE_CONTEXT} must be a date, got {on!r}")
        problem = why_not_creatable(self.cluster.kubernetes_version, self.upgrade.support_plan, on)
        if problem is not None:
            raise field_error("cluster.kubernetesVersion", self.cluster.kubernetes_version, problem)
        return self

    @model_validator(mode="after")
    def _check_node_images(self) -> PlatformConfig:
        # After the minor is known to exist: which OS each pool runs follows from it (config/gpu/node_image.py).
        check_node_images(self.cluster.kubernetes_version, self.gpu_stack.mode, self.all_pools, self.gpu_pools)
        return self

    @model_validator(mode="after")
    def _check_cluster_ranges(self) -> PlatformConfig:
        if self.network.address_space is None:
            return self
        vnet = ipaddress.IPv4Network(self.network.address_space)
        for key, value in (("podCidr", self.cluster.pod_cidr), ("serviceCidr", self.cluster.service_cidr)):
            if ipaddress.IPv4Network(value).overlaps(vnet):
                raise field_error(f"cluster.{key}", value, f"must not overlap network.addressSpace ({vnet})")
        return self

    @property
    def lustre_client_pools(self) -> list[tuple[str, AutoscaledPoolConfig]]:
        """Pools that mount Lustre: the CPU pool (preprocessing) and every GPU pool (training)."""
        return [p for p in self.all_pools if p[0] != "systemPool"]

    @model_validator(mode="after")
    def _check_lustre_fits(self) -> PlatformConfig:
        lustre = self.storage.lustre
        if lustre is None or not lustre.enabled:
            return self
        prefix = required_subnet_prefix(lustre.capacity_tib)
        subnet = self.network.lustre_cidr
        if subnet.prefixlen > prefix:
            where = "existingSubnets.lustreSubnetCidr" if self.network.uses_existing_subnets else "subnets.lustre"
            raise field_error(
                f"network.{where}",
                str(subnet),
                f"storage.lustre.capacityTiB {lustre.capacity_tib} needs a /{prefix} or larger subnet",
            )
        squash = lustre.root_squash
        nodes = self.network.nodes_cidr
        # Each team's directory is created as root from a node (components/training/team_storage.py);
        # squashed, it fails.
        teams = self.training.enabled and bool(self.training.teams)
        if teams and squash.mode != "None" and not nid_list_covers(squash.no_squash_nid_lists, nodes):
            raise field_error(
                "storage.lustre.rootSquash.noSquashNidLists",
                squash.no_squash_nid_lists,
                f"must cover the nodes subnet {nodes} (e.g. {nid_list_for(nodes)!r}): the platform creates each "
                "team's directory as root from a node, which root squash would refuse; team pods never run as "
                "root (docs/security.md)",
            )
        for path, pool in self.lustre_client_pools:
            if pool.os_sku not in LUSTRE_CLIENT_OS_SKUS:
                raise field_error(
                    f"{path}.osSku",
                    pool.os_sku,
                    f"pools that mount Lustre must run {' or '.join(LUSTRE_CLIENT_OS_SKUS)} (Lustre CSI client)",
                )
        return self

    @model_validator(mode="after")
    def _check_netapp_files_network(self) -> PlatformConfig:
        if not self.storage.netapp_files.enabled or self.network.netapp_cidr is not None:
            return self
        if self.network.uses_existing_subnets:
            where, hint = "existingSubnets.netappSubnetId", "an existing subnet and its netappSubnetCidr"
        else:
            where, hint = "subnets.netapp", "a CIDR inside addressSpace, /28 or larger"
        raise field_error(
            f"network.{where}",
            None,
            f"storage.netappFiles.enabled needs a subnet delegated to {NETAPP_DELEGATION}: {hint}",
        )

    def _team_nominal_gpus(self) -> dict[str, int]:
        """Pool name -> the GPUs the teams' nominal quotas guarantee there, summed over teams."""
        nominal: dict[str, int] = {}
        for team in self.training.teams if self.training.enabled else []:
            for quota in team.quotas:
                nominal[quota.pool] = nominal.get(quota.pool, 0) + quota.gpus
        return nominal

    def _models_kept_gpus(self) -> dict[str, int]:
        """Pool name -> the GPUs the served models' kept-up replicas (minReplicas) hold there."""
        kept: dict[str, int] = {}
        for model in self.inference.models:
            kept[model.pool] = kept.get(model.pool, 0) + model.min_replicas * model.gpus_per_replica
        return kept

    @property
    def weights_cache_class(self) -> str | None:
        """The StorageClass of the served models' weights caches; None when the stack creates no Blob class, and
        then no model caches Hub weights (check_weights_cache_class)."""
        return weights_cache_class(self.storage.blob_classes)

    def sample_inference_pools(self) -> list[str] | None:
        """The GPU pools the sample inference server's kept-up replicas may run on, or None for any GPU pool.

        Nominal quota is a guarantee: a job using all of it must find the GPUs free. The scheduler and the
        autoscaler may put every kept-up replica on any pool the sample's nodeSelector reaches, so only pools
        with no team quota, or with room for all of them beside the quotas and the served models' kept-up replicas,
        may take them."""
        sample = self.autoscaling.sample_inference
        if not sample.enabled or sample.scaling.min_replicas == 0:
            return None
        nominal, models = self._team_nominal_gpus(), self._models_kept_gpus()
        kept_up = sample.scaling.min_replicas

        def takes_it(pool: GpuPoolConfig) -> bool:
            free = gpu_capacity(pool) - nominal.get(pool.name, 0) - models.get(pool.name, 0)
            room = max(0, free) // sample.gpus_per_pod
            return not nominal.get(pool.name) or room >= kept_up

        allowed = [p.name for p in self.gpu_pools if takes_it(p)]
        return None if len(allowed) == len(self.gpu_pools) else allowed

    def _check_quotas_beside_pinned_gpus(self, nominal: Mapping[str, int], holders: Mapping[str, list[str]]) -> None:
        """Where no pool the sample can run on has room for its kept-up replicas beside the team quotas, a job
        asking for its team's whole quota would be admitted by Kueue and never placed (the atomic scale-up
        cannot add a node past maxCount): refuse the quota."""
        sample = self.autoscaling.sample_inference
        reachable = [p for p in self.gpu_pools if p.sku.vendor == "nvidia" and gpus_per_node(p) >= sample.gpus_per_pod]
        allowed = self.sample_inference_pools()
        if allowed is None or any(p.name in allowed for p in reachable) or not reachable:
            return
        pool = next(p for p in reachable if nominal.get(p.name))
        i, j = next(
            (i, j)
            for i, team in enumerate(self.training.teams)
            for j, quota in enumerate(team.quotas)
            if quota.pool == pool.name
        )
        pinned = sample.scaling.min_replicas * sample.gpus_per_pod
        raise field_error(
            f"training.teams[{i}].quotas[{j}].gpus",
            self.training.teams[i].quotas[j].gpus,
            f"pool {pool.name} holds {gpu_capacity(pool)} GPUs (maxCount {pool.max_count} x {gpus_per_node(pool)}); "
            f"teams {holders[pool.name]} ask {nominal[pool.name]} in nominal quota while "
            f"autoscaling.sampleInference keeps {pinned} GPU(s) up (minReplicas {sample.scaling.min_replicas} x "
            f"gpusPerPod {sample.gpus_per_pod}) and no GPU pool has room for them beside the team quotas and the "
            f"served models' kept-up replicas ({self._models_kept_gpus().get(pool.name, 0)} GPU(s) here): a job "
            "using the whole quota would be admitted and never placed. "
            "Lower the quota, raise the pool's maxCount, or set the sample's minReplicas to 0",
        )

    @model_validator(mode="after")
    def _check_training_quotas(self) -> PlatformConfig:
        pools = {p.name: p for p in self.gpu_pools}
        nominal: dict[str, int] = {}
        holders: dict[str, list[str]] = {}
        for i, team in enumerate(self.training.teams):
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
        self._check_quotas_beside_pinned_gpus(nominal, holders)
        if self.training.enabled:
            for i, pool in enumerate(self.gpu_pools):
                taints = 1 + len(pool.taints) + (1 if pool.priority == "Spot" else 0)
                if taints > FLAVOR_MAX_TAINTS:
                    raise field_error(
                        f"gpuPools[{i}].taints",
                        pool.taints,
                        f"with training on, a pool's ResourceFlavor lists its taints: at most {FLAVOR_MAX_TAINTS} "
                        "counting the GPU taint (and Spot's)",
                    )
        lustre = self.storage.lustre
        if lustre is not None and lustre.enabled:
            for i, team in enumerate(self.training.teams):
                if team.namespace_name == lustre.training.namespace:
                    where = f"training.teams[{i}].namespace" if team.namespace else f"training.teams[{i}].name"
                    raise field_error(
                        where,
                        team.namespace_name,
                        "must differ from storage.lustre.training.namespace (the Lustre component owns it; "
                        "each team namespace gets its own claim on the filesystem)",
                    )
        return self

    @model_validator(mode="after")
    def _check_inference(self) -> PlatformConfig:
        # Last: a model names pools and teams, so their own problems are the ones to report first.
        check_models(self.inference, self.gpu_pools, self.training, self.environment)
        check_streamed_weights(self.inference, self.storage, self.network)
        check_weights_cache_class(self.inference, self.storage.blob_classes)
        check_model_drain(self.cluster.autoscaler_profile, self.inference)
        return self
