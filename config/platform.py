"""The whole platform's config: one field per section, validated as a whole by the rules across sections
(config/rules.py)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Literal, cast

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from .base import ConfigModel
from .catalog.aks_versions import CATALOG_CHECKED_ON
from .catalog.regions import CATALOG_SOURCE, closest_regions, region
from .cluster.node_pools import AutoscaledPoolConfig, CpuPoolConfig, SystemPoolConfig
from .cluster.section import ClusterConfig
from .cluster.security import SecurityConfig
from .gpu.health import GpuHealthConfig
from .gpu.node_image import check_node_images
from .gpu.section import GpuPoolConfig, GpuStackConfig
from .inference.model_checks import check_models
from .inference.models import InferenceConfig
from .inference.section import AutoscalingConfig
from .inference.streamed_weights import check_streamed_weights
from .monitoring.section import MonitoringConfig
from .network.section import NetworkConfig
from .rules import (
    check_aks_managed,
    check_amd_pools,
    check_cluster_ranges_outside_vnet,
    check_flavor_taints,
    check_kubernetes_version,
    check_lustre_client_os,
    check_lustre_root_squash,
    check_lustre_startup_taint,
    check_lustre_subnet_size,
    check_model_drain,
    check_netapp_files_subnet,
    check_nodes_subnet_fits,
    check_pod_security_exclusions,
    check_pool_names_unique,
    check_pool_validation,
    check_quotas_beside_sample_inference,
    check_quotas_fit_pools,
    check_rdma_pod_security,
    check_team_namespaces_beside_lustre,
    check_weights_cache_class,
    check_zones_exist,
    models_kept_gpus,
)
from .storage.section import StorageConfig
from .training.section import TrainingConfig, gpu_capacity
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

    @property
    def lustre_client_pools(self) -> list[tuple[str, AutoscaledPoolConfig]]:
        """Pools that mount Lustre: the CPU pool (preprocessing) and every GPU pool (training)."""
        return [p for p in self.all_pools if p[0] != "systemPool"]

    def sample_inference_pools(self) -> list[str] | None:
        """The GPU pools the sample inference server's kept-up replicas may run on, or None for any GPU pool.

        Nominal quota is a guarantee: a job using all of it must find the GPUs free. The scheduler and the
        autoscaler may put every kept-up replica on any pool the sample's nodeSelector reaches, so only pools
        with no team quota, or with room for all of them beside the quotas and the served models' kept-up replicas,
        may take them."""
        sample = self.autoscaling.sample_inference
        if not sample.enabled or sample.scaling.min_replicas == 0:
            return None
        nominal, models = self.training.nominal_gpus(), models_kept_gpus(self.inference)
        kept_up = sample.scaling.min_replicas

        def takes_it(pool: GpuPoolConfig) -> bool:
            free = gpu_capacity(pool) - nominal.get(pool.name, 0) - models.get(pool.name, 0)
            room = max(0, free) // sample.gpus_per_pod
            return not nominal.get(pool.name) or room >= kept_up

        allowed = [p.name for p in self.gpu_pools if takes_it(p)]
        return None if len(allowed) == len(self.gpu_pools) else allowed

    @model_validator(mode="after")
    def _check_across_sections(self, info: ValidationInfo) -> PlatformConfig:
        """The rules across sections (config/rules.py), each handed the sections it reads. Validation stops at
        the first rule broken, so this order is the order problems are reported in."""
        pools = self.all_pools
        check_zones_exist(self.location, pools)
        check_pool_names_unique(pools)
        check_nodes_subnet_fits(self.network, self.upgrade, self.system_pool, self.cpu_pool, self.gpu_pools)
        # On an AMD pool the NVIDIA-only feature is the error, not its details.
        check_amd_pools(self.gpu_stack, self.gpu_pools, self.gpu_health, self.autoscaling)
        check_aks_managed(self.gpu_stack, self.gpu_pools, self.autoscaling, self.training)
        check_pool_validation(self.gpu_pools)
        check_lustre_startup_taint(self.gpu_pools)
        check_pod_security_exclusions(self.security, self.training)
        check_rdma_pod_security(self.security, self.training, self.gpu_pools, self.inference)
        check_kubernetes_version(self.cluster, self.upgrade, _version_date(info))
        # After the minor is known to exist: which OS each pool runs follows from it (config/gpu/node_image.py).
        check_node_images(self.cluster.kubernetes_version, self.gpu_stack.mode, pools, self.gpu_pools)
        check_cluster_ranges_outside_vnet(self.network, self.cluster)
        check_lustre_subnet_size(self.storage, self.network)
        check_lustre_root_squash(self.storage, self.network, self.training)
        check_lustre_client_os(self.storage, self.lustre_client_pools)
        check_netapp_files_subnet(self.storage, self.network)
        check_quotas_fit_pools(self.training, self.gpu_pools)
        sample_pools = self.sample_inference_pools()
        check_quotas_beside_sample_inference(
            self.autoscaling, self.training, self.inference, self.gpu_pools, sample_pools
        )
        check_flavor_taints(self.training, self.gpu_pools)
        check_team_namespaces_beside_lustre(self.training, self.storage)
        # Last: a model names pools and teams, so their own problems are the ones to report first.
        check_models(self.inference, self.gpu_pools, self.training, self.environment)
        check_streamed_weights(self.inference, self.storage, self.network)
        check_weights_cache_class(self.inference, self.storage.blob_classes)
        check_model_drain(self.cluster.autoscaler_profile, self.inference)
        return self


def _version_date(info: ValidationInfo) -> datetime.date:
    """The date the Kubernetes minor is checked on: the catalog's unless the loader passes another (today's, on a
    real run; config/catalog/aks_versions.py)."""
    context = cast(Mapping[str, object], info.context or {})
    on = context.get(VERSION_DATE_CONTEXT, CATALOG_CHECKED_ON)
    if not isinstance(on, datetime.date):
        raise TypeError(f"validation context {VERSION_DATE_CONTEXT} must be a date, got {on!r}")
    return on
