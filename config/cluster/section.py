"""Cluster section: control plane identity, access, networking, autoscaler profile."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..catalog.aks_versions import DEFAULT_KUBERNETES_MINOR
from ..errors import field_error
from ..types import Cidr, Guid, IPv4, KubernetesMinor

KubeconfigLogin = Literal["azurecli", "workloadidentity", "spn"]
Expander = Literal["least-waste", "priority", "most-pods", "random"]


class EntraIdConfig(ConfigModel):
    """Entra ID integration: who administers the cluster through Azure RBAC."""

    admin_group_object_ids: list[Guid] = Field(
        min_length=1, description="Entra ID groups granted cluster admin through Azure RBAC"
    )
    tenant_id: Guid | None = Field(default=None, description="Defaults to the deploying identity's tenant")


class ApiServerAccessConfig(ConfigModel):
    """Who can reach the Kubernetes API server: a private endpoint, or a public one limited to ranges."""

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

    expander: Expander = Field(
        default="least-waste", description="Which pool grows when several fit: least-waste picks the cheapest fit"
    )
    scan_interval_seconds: int = Field(
        default=10,
        ge=5,
        le=60,
        description="How often the autoscaler looks for pending pods; 5-60 s, a slower scan delays every scale-up",
    )
    new_pod_scale_up_delay_seconds: int = Field(
        default=0,
        ge=0,
        le=600,
        description="Age a pending pod must reach before it triggers a scale-up; at most 10 min, or jobs wait idle",
    )
    scale_down_delay_after_add_minutes: int = Field(
        default=15,
        ge=1,
        le=120,
        description="No scale-down this long after a scale-up (a GPU node takes minutes to boot); 1-120 min",
    )
    scale_down_delay_after_failure_minutes: int = Field(
        default=3, ge=1, le=60, description="Wait after a failed scale-down before the next attempt; 1-60 min"
    )
    scale_down_unneeded_minutes: int = Field(
        default=15,
        ge=1,
        le=240,
        description="An idle node is kept this long, so bursty load does not thrash nodes; 1-240 min (idle GPU "
        "nodes cost money)",
    )
    scale_down_unready_minutes: int = Field(
        default=20, ge=1, le=240, description="A NotReady node is removed after this long; 1-240 min"
    )
    scale_down_utilization_threshold: float = Field(
        default=0.5,
        ge=0.1,
        le=0.9,
        description="A node whose requested CPU and memory fall below this share is a scale-down candidate; "
        "0.1-0.9 (0 or 1 would never or always remove nodes)",
    )
    ignore_daemonsets_utilization: bool = Field(
        default=True, description="DCGM exporter and device plugin pods do not keep an idle GPU node alive"
    )
    max_empty_bulk_delete: int = Field(default=10, ge=1, le=100, description="Empty nodes removed at once; 1-100")
    max_graceful_termination_seconds: int = Field(
        default=900,
        ge=30,
        le=3600,
        description="Time a pod gets to terminate when its node is scaled down; 30 s to 1 h",
    )
    max_node_provision_minutes: int = Field(
        default=20,
        ge=5,
        le=60,
        description="GPU VMs with driver install boot slowly; give up on a node after this; 5-60 min",
    )
    balance_similar_node_groups: bool = Field(default=True, description="Spread zonal GPU pools of the same size")
    skip_nodes_with_local_storage: bool = Field(
        default=False, description="true: never remove a node running a pod with emptyDir or hostPath storage"
    )
    skip_nodes_with_system_pods: bool = Field(
        default=True, description="Never remove a node running kube-system pods (other than DaemonSets)"
    )

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
    """The AKS control plane."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$",
        description="Cluster name: 1-63 letters, digits, '_' or '-', starting with a letter or digit; the "
        "registry, workspace and Grafana names derive from it unless set",
    )
    dns_prefix: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,52}[A-Za-z0-9]$",
        description="DNS prefix of the API server's FQDN: 2-54 letters, digits or '-', alphanumeric at both ends; "
        "fixed at creation",
    )
    kubernetes_version: KubernetesMinor = Field(
        default=DEFAULT_KUBERNETES_MINOR,
        description="Minor version, e.g. 1.36; AKS picks the latest patch. It must be a minor AKS creates "
        "clusters on under upgrade.supportPlan (config/catalog/aks_versions.py)",
    )
    entra_id: EntraIdConfig = Field(description="Entra ID admin groups and tenant")
    local_accounts_disabled: bool = Field(default=True, description="Only Entra ID identities can authenticate")
    api_server: ApiServerAccessConfig = Field(description="API server exposure: private, or authorized ranges")
    pod_cidr: Cidr = Field(
        default="192.168.0.0/16",
        description="Overlay range pods get addresses from (CNI overlay; not routable in the VNet); fixed at creation",
    )
    service_cidr: Cidr = Field(
        default="172.16.0.0/16", description="Range of Kubernetes service IPs; must not overlap the VNet or podCidr"
    )
    dns_service_ip: IPv4 = Field(default="172.16.0.10", description="CoreDNS service address, inside serviceCidr")
    kubeconfig_login: KubeconfigLogin = Field(
        default="azurecli", description="kubelogin mode of the exported kubeconfig; workloadidentity or spn for CI"
    )
    image_cleaner_interval_hours: int = Field(
        default=168,
        ge=24,
        le=2160,
        description="How often Image Cleaner removes unused images from nodes (AKS allows 24 hours to 3 months)",
    )
    autoscaler_profile: AutoscalerProfileConfig = Field(
        default_factory=AutoscalerProfileConfig, description="Cluster autoscaler, tuned for GPU nodes"
    )
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
