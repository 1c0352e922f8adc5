"""Cluster section: control plane identity, access, networking, autoscaler profile."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, model_validator

from .aks_versions import DEFAULT_KUBERNETES_MINOR
from .base import ConfigModel
from .errors import field_error
from .types import Cidr, Guid, IPv4

KubeconfigLogin = Literal["azurecli", "workloadidentity", "spn"]
Expander = Literal["least-waste", "priority", "most-pods", "random"]


class EntraIdConfig(ConfigModel):
    admin_group_object_ids: list[Guid] = Field(
        min_length=1, description="Entra ID groups granted cluster admin through Azure RBAC"
    )
    tenant_id: Guid | None = Field(default=None, description="Defaults to the deploying identity's tenant")


class ApiServerAccessConfig(ConfigModel):
    private_cluster: bool = Field(default=False, description="API server only on a private endpoint")
    authorized_ip_ranges: list[Cidr] = Field(
        default_factory=list, description="Public API server reachable only from these ranges"
    )

    @model_validator(mode="after")
    def _check_exposure(self) -> ApiServerAccessConfig:
        if self.private_cluster and self.authorized_ip_ranges:
            raise field_error("authorizedIpRanges", self.authorized_ip_ranges, "must be empty for a private cluster")
        if not self.private_cluster and not self.authorized_ip_ranges:
            raise field_error(
                "authorizedIpRanges",
                [],
                "a public API server needs at least one authorized range (or set privateCluster: true)",
            )
        return self


class AutoscalerProfileConfig(ConfigModel):
    """Cluster autoscaler tuned for expensive GPU nodes: quick to add, slow and deliberate to remove.

    GPU pools scale from zero (their minCount is 0); these values decide how fast a pending GPU
    pod gets a node and how long an idle GPU node is kept before it is removed.
    """

    expander: Expander = Field(default="least-waste", description="least-waste picks the cheapest fitting pool")
    scan_interval_seconds: int = Field(default=10, ge=5, le=60, description="How often pending pods are checked")
    new_pod_scale_up_delay_seconds: int = Field(
        default=0, ge=0, le=600, description="Age a pending pod must reach before it triggers a scale-up"
    )
    scale_down_delay_after_add_minutes: int = Field(
        default=15,
        ge=1,
        le=120,
        description="No scale-down this long after a scale-up (a GPU node takes minutes to boot)",
    )
    scale_down_delay_after_failure_minutes: int = Field(default=3, ge=1, le=60)
    scale_down_unneeded_minutes: int = Field(
        default=15, ge=1, le=240, description="An idle node is kept this long, so bursty load does not thrash nodes"
    )
    scale_down_unready_minutes: int = Field(default=20, ge=1, le=240)
    scale_down_utilization_threshold: float = Field(default=0.5, ge=0.1, le=0.9)
    ignore_daemonsets_utilization: bool = Field(
        default=True, description="DCGM exporter and device plugin pods do not keep an idle GPU node alive"
    )
    max_empty_bulk_delete: int = Field(default=10, ge=1, le=100, description="Empty nodes removed at once")
    max_graceful_termination_seconds: int = Field(
        default=900, ge=30, le=3600, description="Time an inference pod gets to drain before its node goes"
    )
    max_node_provision_minutes: int = Field(
        default=20, ge=5, le=60, description="GPU VMs with driver install boot slowly; give up on a node after this"
    )
    balance_similar_node_groups: bool = Field(default=True, description="Spread zonal GPU pools of the same size")
    skip_nodes_with_local_storage: bool = False
    skip_nodes_with_system_pods: bool = True

    @model_validator(mode="after")
    def _check_gpu_friendly(self) -> AutoscalerProfileConfig:
        if self.scale_down_unneeded_minutes * 60 < self.scan_interval_seconds * 3:
            raise field_error(
                "scaleDownUnneededMinutes",
                self.scale_down_unneeded_minutes,
                "must cover at least three scan intervals, or nodes are removed on one idle reading",
            )
        if self.max_node_provision_minutes < self.scale_down_delay_after_failure_minutes:
            raise field_error(
                "maxNodeProvisionMinutes",
                self.max_node_provision_minutes,
                f"must not be below scaleDownDelayAfterFailureMinutes ({self.scale_down_delay_after_failure_minutes})",
            )
        return self


class ClusterConfig(ConfigModel):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
    dns_prefix: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,52}[A-Za-z0-9]$")
    kubernetes_version: str = Field(
        default=DEFAULT_KUBERNETES_MINOR,
        pattern=r"^1\.[0-9]{2}$",
        description="Minor version, e.g. 1.36; AKS picks the latest patch. It must be a minor AKS creates "
        "clusters on under upgrade.supportPlan (config/aks_versions.py)",
    )
    entra_id: EntraIdConfig
    local_accounts_disabled: bool = Field(default=True, description="Only Entra ID identities can authenticate")
    api_server: ApiServerAccessConfig
    pod_cidr: Cidr = "192.168.0.0/16"
    service_cidr: Cidr = "172.16.0.0/16"
    dns_service_ip: IPv4 = "172.16.0.10"
    kubeconfig_login: KubeconfigLogin = Field(
        default="azurecli", description="kubelogin mode of the exported kubeconfig; workloadidentity or spn for CI"
    )
    image_cleaner_interval_hours: int = Field(default=168, ge=24, le=2160)
    autoscaler_profile: AutoscalerProfileConfig = Field(default_factory=AutoscalerProfileConfig)
    role_assignment_propagation_seconds: int = Field(
        default=600,
        ge=0,
        le=1800,
        description="Wait after the control plane identity's grants are first created, before the cluster: AKS "
        "rejects a cluster whose grant over the kubelet identity has not taken effect, and Azure RBAC changes take "
        "up to 10 minutes to do so; 0 skips the wait; at most 30 minutes",
    )

    @model_validator(mode="after")
    def _check_cidrs(self) -> ClusterConfig:
        pods = ipaddress.IPv4Network(self.pod_cidr)
        services = ipaddress.IPv4Network(self.service_cidr)
        if pods.overlaps(services):
            raise field_error("serviceCidr", self.service_cidr, f"must not overlap podCidr ({pods})")
        if ipaddress.IPv4Address(self.dns_service_ip) not in services:
            raise field_error("dnsServiceIp", self.dns_service_ip, f"must lie inside serviceCidr ({services})")
        return self

    @property
    def schema_version(self) -> str:
        """The Kubernetes OpenAPI schema version rendered objects are validated against."""
        return f"{self.kubernetes_version}.0"
