"""AKS control plane with the tainted system pool inline, identities and a non-interactive kubeconfig."""

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_azure_native.managedidentity as managedidentity
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.cluster.node_pools import SystemPoolConfig
from aks_gpu_platform.config.cluster.section import ClusterConfig
from aks_gpu_platform.config.upgrade.section import UpgradeConfig

from ..shared import roles
from ..shared.scan_exceptions import arm_scan_exception
from .agent_pools import autoscaled_pool_args, pool_upgrade_settings
from .kubeconfig import non_interactive_kubeconfig

MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
arm_scan_exception(
    MANAGED_CLUSTER,
    "CKV_AZURE_8",
    "AKS retired the kube-dashboard add-on (no cluster on Kubernetes 1.19+ runs it); the check reads only the "
    "retired addonProfiles.kubeDashboard key, so there is nothing to disable",
)
arm_scan_exception(
    MANAGED_CLUSTER,
    "CKV_AZURE_172",
    "secret rotation is on: addonProfiles.azureKeyvaultSecretsProvider.config.enableSecretRotation is the string "
    "'true' the AKS API takes (add-on config is string-valued); the check compares it with a JSON boolean",
    when=lambda inputs: _addon_config(inputs, "azureKeyvaultSecretsProvider").get("enableSecretRotation") == "true",
)
arm_scan_exception(
    MANAGED_CLUSTER,
    "CKV_AZURE_226",
    "the system pool's OS disk follows systemPool.osDiskType; this stack keeps the Managed default (prod sets "
    "Ephemeral, which the config checks against the VM size's temp disk)",
    when=lambda inputs: _system_pool(inputs).get("osDiskType") != "Ephemeral",
)
arm_scan_exception(
    MANAGED_CLUSTER,
    "CKV_AZURE_227",
    "security.encryptionAtHost is off in this stack (dev: it needs the EncryptionAtHost feature registered on the "
    "subscription first); prod turns it on for every pool",
    when=lambda inputs: not _system_pool(inputs).get("enableEncryptionAtHost"),
)


def _system_pool(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The inline system pool of recorded ManagedCluster inputs."""
    pools: list[Mapping[str, Any]] = inputs.get("agentPoolProfiles") or [{}]
    return pools[0]


def _addon_config(inputs: Mapping[str, Any], addon: str) -> Mapping[str, Any]:
    """One add-on's config of recorded ManagedCluster inputs."""
    addons: Mapping[str, Mapping[str, Any]] = inputs.get("addonProfiles") or {}
    config: Mapping[str, Any] = (addons.get(addon) or {}).get("config") or {}
    return config


SYSTEM_POOL_TAINT = "CriticalAddonsOnly=true:NoSchedule"


class AksClusterArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster and its identities."""
    location: pulumi.Input[str]
    """Azure region."""
    nodes_subnet_id: pulumi.Input[str]
    """Subnet every node pool joins."""
    cluster: ClusterConfig
    """The `cluster` config section."""
    system_pool: SystemPoolConfig
    """The `systemPool` config section."""
    upgrade: UpgradeConfig
    """The `upgrade` config section (tier, support plan, channels, the system pool's surge)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete or replace the cluster (prod)."""
    encryption_at_host: NotRequired[bool]
    """`security.encryptionAtHost` for the system pool: encrypt temp disks and disk caches on the VM host."""
    addon_profiles: NotRequired[Mapping[str, containerservice.ManagedClusterAddonProfileArgsDict]]
    """AKS add-ons (e.g. omsagent for Container Insights, azurepolicy, azureKeyvaultSecretsProvider)."""
    azure_monitor_profile: NotRequired[containerservice.ManagedClusterAzureMonitorProfileArgsDict]
    """Managed Prometheus metrics switch."""
    workload_auto_scaler_profile: NotRequired[containerservice.ManagedClusterWorkloadAutoScalerProfileArgsDict]
    """KEDA add-on switch."""
    defender_log_analytics_workspace_id: NotRequired[pulumi.Input[str]]
    """Enables Microsoft Defender for Containers, reporting to this workspace."""
    outbound_ip_id: NotRequired[pulumi.Input[str]]
    """A Standard public IP the cluster's load balancer sends all egress from (a static address other API servers
    can admit); the control plane identity gets Network Contributor on it before the cluster is created."""
    extra_authorized_ranges: NotRequired[Sequence[pulumi.Input[str]]]
    """Ranges admitted to the API server besides `cluster.apiServer.authorizedIpRanges`, known only at deploy time
    (e.g. a fleet manager's egress /32)."""


def autoscaler_profile(cfg: ClusterConfig) -> containerservice.ManagedClusterPropertiesAutoScalerProfileArgsDict:
    p = cfg.autoscaler_profile
    return {
        "expander": p.expander,
        "scan_interval": f"{p.scan_interval_seconds}s",
        "new_pod_scale_up_delay": f"{p.new_pod_scale_up_delay_seconds}s",
        "scale_down_delay_after_add": f"{p.scale_down_delay_after_add_minutes}m",
        "scale_down_delay_after_failure": f"{p.scale_down_delay_after_failure_minutes}m",
        "scale_down_unneeded_time": f"{p.scale_down_unneeded_minutes}m",
        "scale_down_unready_time": f"{p.scale_down_unready_minutes}m",
        "scale_down_utilization_threshold": str(p.scale_down_utilization_threshold),
        "ignore_daemonsets_utilization": p.ignore_daemonsets_utilization,
        "max_empty_bulk_delete": str(p.max_empty_bulk_delete),
        "max_graceful_termination_sec": str(p.max_graceful_termination_seconds),
        "max_node_provision_time": f"{p.max_node_provision_minutes}m",
        "balance_similar_node_groups": str(p.balance_similar_node_groups).lower(),
        "skip_nodes_with_local_storage": str(p.skip_nodes_with_local_storage).lower(),
        "skip_nodes_with_system_pods": str(p.skip_nodes_with_system_pods).lower(),
    }


def _user_identity(
    name: str, azure_name: str, args: AksClusterArgs, child: pulumi.ResourceOptions
) -> managedidentity.UserAssignedIdentity:
    return managedidentity.UserAssignedIdentity(
        name,
        resource_group_name=args["resource_group_name"],
        location=args["location"],
        resource_name_=azure_name,
        tags=dict(args.get("tags", {})),
        opts=child,
    )


def _control_plane_grants(
    name: str,
    args: AksClusterArgs,
    control_plane: managedidentity.UserAssignedIdentity,
    kubelet: managedidentity.UserAssignedIdentity,
    child: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """What the control plane identity needs on the kubelet identity, the nodes subnet and the outbound IP.

    AKS needs these grants before it can create nodes with a bring-your-own kubelet identity and subnet (and
    egress through a brought outbound IP, "Provide your own outbound public IPs", articles/aks/
    configure-load-balancer-standard.md, azure-aks-docs fb060abe6), and rejects the cluster
    (CustomKubeletIdentityMissingPermissionError) while a new grant has not taken effect yet: the cluster waits
    for the grants, which hold it after their creation (first deploy only).
    """
    propagation = roles.propagation_wait(f"{name}-control-plane", args["cluster"].role_assignment_propagation_seconds)
    needed: dict[str, tuple[str, pulumi.Input[str]]] = {
        "kubelet-operator": (roles.MANAGED_IDENTITY_OPERATOR, kubelet.id),
        "subnet": (roles.NETWORK_CONTRIBUTOR, args["nodes_subnet_id"]),
    }
    if "outbound_ip_id" in args:
        needed["outbound-ip"] = (roles.NETWORK_CONTRIBUTOR, args["outbound_ip_id"])
    return [
        roles.assign_role(
            f"{name}-control-plane-{role}",
            role_guid=guid,
            principal_id=control_plane.principal_id,
            scope=scope,
            wait=propagation,
            opts=child,
        )
        for role, (guid, scope) in needed.items()
    ]


def _network_profile(args: AksClusterArgs) -> containerservice.ContainerServiceNetworkProfileArgsDict:
    """Azure CNI overlay with Cilium, egress through the load balancer (from the brought outbound IP, if any)."""
    cfg = args["cluster"]
    network_profile: containerservice.ContainerServiceNetworkProfileArgsDict = {
        "network_plugin": containerservice.NetworkPlugin.AZURE,
        "network_plugin_mode": containerservice.NetworkPluginMode.OVERLAY,
        "network_dataplane": containerservice.NetworkDataplane.CILIUM,
        "network_policy": containerservice.NetworkPolicy.CILIUM,
        "pod_cidr": cfg.pod_cidr,
        "service_cidr": cfg.service_cidr,
        "dns_service_ip": cfg.dns_service_ip,
        "load_balancer_sku": containerservice.LoadBalancerSku.STANDARD,
        "outbound_type": containerservice.OutboundType.LOAD_BALANCER,
    }
    if "outbound_ip_id" in args:
        network_profile["load_balancer_profile"] = {"outbound_ips": {"public_ips": [{"id": args["outbound_ip_id"]}]}}
    return network_profile


def _api_server_profile(args: AksClusterArgs) -> containerservice.ManagedClusterAPIServerAccessProfileArgsDict:
    cfg = args["cluster"]
    authorized_ranges: list[pulumi.Input[str]] = [
        *cfg.api_server.authorized_ip_ranges,
        *args.get("extra_authorized_ranges", []),
    ]
    return {"enable_private_cluster": cfg.api_server.private_cluster, "authorized_ip_ranges": authorized_ranges}


def _system_pool_profile(args: AksClusterArgs) -> containerservice.ManagedClusterAgentPoolProfileArgsDict:
    """The system pool, inline in the cluster: tainted for critical add-ons only."""
    system = args["system_pool"]
    system_pool: containerservice.ManagedClusterAgentPoolProfileArgsDict = {
        **autoscaled_pool_args(system, args.get("encryption_at_host", False)),  # type: ignore[typeddict-item]
        "name": system.name,
        "mode": containerservice.AgentPoolMode.SYSTEM,
        "node_taints": [SYSTEM_POOL_TAINT],
        "node_labels": {"pool": "system"},
        "vnet_subnet_id": args["nodes_subnet_id"],
    }
    system_pool.pop("agent_pool_name", None)  # type: ignore[misc]
    system_pool["upgrade_settings"] = pool_upgrade_settings(args["upgrade"].system_pool)
    return system_pool


def _security_profile(args: AksClusterArgs) -> containerservice.ManagedClusterSecurityProfileArgsDict:
    """Workload identity, image cleaner, and Defender for Containers when it has a workspace to report to."""
    security_profile: containerservice.ManagedClusterSecurityProfileArgsDict = {
        "workload_identity": {"enabled": True},
        "image_cleaner": {"enabled": True, "interval_hours": args["cluster"].image_cleaner_interval_hours},
    }
    if "defender_log_analytics_workspace_id" in args:
        security_profile["defender"] = {
            "log_analytics_workspace_resource_id": args["defender_log_analytics_workspace_id"],
            "security_monitoring": {"enabled": True},
        }
    return security_profile


def _ignored_changes(upgrade: UpgradeConfig) -> list[str]:
    # Only the system pool lives inline; other pools are AgentPool resources that this list would fight.
    ignored = ["agentPoolProfiles"]
    if upgrade.tracks_versions:
        # An AKS channel or Fleet moves the version; re-sending the pinned one would be a downgrade.
        ignored += ["kubernetesVersion"]
    return ignored


def _kubelet_identity_profile(
    kubelet: managedidentity.UserAssignedIdentity,
) -> dict[str, containerservice.UserAssignedIdentityArgsDict]:
    """The nodes run as the brought kubelet identity."""
    return {
        "kubeletidentity": {
            "resource_id": kubelet.id,
            "client_id": kubelet.client_id,
            "object_id": kubelet.principal_id,
        }
    }


def _entra_id_profile(cfg: ClusterConfig) -> containerservice.ManagedClusterAADProfileArgsDict:
    """Entra ID sign-in with Azure RBAC for Kubernetes authorization."""
    return {
        "managed": True,
        "enable_azure_rbac": True,
        "admin_group_object_ids": list(cfg.entra_id.admin_group_object_ids),
        "tenant_id": cfg.entra_id.tenant_id,
    }


def _csi_drivers() -> containerservice.ManagedClusterStorageProfileArgsDict:
    return {
        "blob_csi_driver": {"enabled": True},
        "disk_csi_driver": {"enabled": True},
        "file_csi_driver": {"enabled": True},
        "snapshot_controller": {"enabled": True},
    }


def _managed_cluster(
    name: str,
    args: AksClusterArgs,
    control_plane: managedidentity.UserAssignedIdentity,
    kubelet: managedidentity.UserAssignedIdentity,
    grants: list[pulumi.Resource],
    parent: pulumi.Resource,
) -> containerservice.ManagedCluster:
    cfg, upgrade = args["cluster"], args["upgrade"]
    return containerservice.ManagedCluster(
        f"{name}-cluster",
        resource_group_name=args["resource_group_name"],
        location=args["location"],
        resource_name_=cfg.name,
        dns_prefix=cfg.dns_prefix,
        kubernetes_version=cfg.kubernetes_version,
        sku={"name": containerservice.ManagedClusterSKUName.BASE, "tier": upgrade.tier},
        support_plan=upgrade.support_plan,
        auto_upgrade_profile={
            "upgrade_channel": upgrade.auto_upgrade_channel,
            "node_os_upgrade_channel": upgrade.node_os_upgrade_channel,
        },
        identity={
            "type": containerservice.ResourceIdentityType.USER_ASSIGNED,
            "user_assigned_identities": [control_plane.id],
        },
        identity_profile=_kubelet_identity_profile(kubelet),
        agent_pool_profiles=[_system_pool_profile(args)],
        enable_rbac=True,
        aad_profile=_entra_id_profile(cfg),
        disable_local_accounts=cfg.local_accounts_disabled,
        api_server_access_profile=_api_server_profile(args),
        network_profile=_network_profile(args),
        oidc_issuer_profile={"enabled": True},
        security_profile=_security_profile(args),
        storage_profile=_csi_drivers(),
        auto_scaler_profile=autoscaler_profile(cfg),
        addon_profiles=args.get("addon_profiles"),
        azure_monitor_profile=args.get("azure_monitor_profile"),
        workload_auto_scaler_profile=args.get("workload_auto_scaler_profile"),
        tags=dict(args.get("tags", {})),
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=grants,
            ignore_changes=_ignored_changes(upgrade),
            # Replacing or deleting the cluster drops every workload on it; prod refuses both.
            protect=args.get("protect", False),
        ),
    )


class AksCluster(pulumi.ComponentResource):
    """The AKS cluster: system pool inline, Entra ID + Azure RBAC, CNI overlay + Cilium, workload identity."""

    cluster: containerservice.ManagedCluster
    """The ManagedCluster resource (for `depends_on` and `deleted_with`)."""
    cluster_name: pulumi.Output[str]
    """Azure name of the cluster."""
    cluster_id: pulumi.Output[str]
    """Azure resource ID of the cluster."""
    oidc_issuer_url: pulumi.Output[str]
    """OIDC issuer that federated identity credentials trust."""
    kubelet_identity_object_id: pulumi.Output[str]
    """Principal the nodes pull images as (AcrPull goes here)."""
    kubelet_identity_client_id: pulumi.Output[str]
    """Client ID of the kubelet identity."""
    kubeconfig: pulumi.Output[str]
    """Secret kubeconfig using kubelogin, no interactive login."""
    provider: k8s.Provider
    """Kubernetes provider for every in-cluster component."""

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:AksCluster", name, None, opts)
        cfg = args["cluster"]
        child = pulumi.ResourceOptions(parent=self)
        control_plane = _user_identity(f"{name}-control-plane", f"id-{cfg.name}-control-plane", args, child)
        kubelet = _user_identity(f"{name}-kubelet", f"id-{cfg.name}-kubelet", args, child)
        grants = _control_plane_grants(name, args, control_plane, kubelet, child)
        self.cluster = _managed_cluster(name, args, control_plane, kubelet, grants, self)
        self.cluster_name = self.cluster.name
        self.cluster_id = self.cluster.id
        self.oidc_issuer_url = self.cluster.oidc_issuer_profile.apply(lambda p: (p.issuer_url if p else None) or "")
        self.kubelet_identity_object_id = kubelet.principal_id
        self.kubelet_identity_client_id = kubelet.client_id
        self._connect(name, args)
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "cluster_id": self.cluster_id,
                "oidc_issuer_url": self.oidc_issuer_url,
                "kubelet_identity_object_id": self.kubelet_identity_object_id,
                "kubelet_identity_client_id": self.kubelet_identity_client_id,
                "kubeconfig": self.kubeconfig,
            }
        )

    def _connect(self, name: str, args: AksClusterArgs) -> None:
        """The cluster's non-interactive kubeconfig (kubelogin), and the provider built on it."""
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=args["resource_group_name"], resource_name=self.cluster.name
        )
        login = args["cluster"].kubeconfig_login
        self.kubeconfig = pulumi.Output.secret(
            credentials.kubeconfigs.apply(lambda configs: non_interactive_kubeconfig(configs[0].value, login))
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self),
        )
