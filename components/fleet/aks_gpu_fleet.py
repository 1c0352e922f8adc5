"""AksGpuFleet: member GPU platforms per region, a CPU-only MultiKueue manager, and Azure Kubernetes Fleet Manager.

- Members are whole `AksGpuPlatform`s, each with its Kueue, team namespaces, LocalQueues, ClusterQueues and
  ResourceFlavors from the shared `training` section: exactly the mirror MultiKueue needs. Teams only read there.
- The manager is a small AKS cluster (system and CPU pools only) running Kueue with MultiKueue: the same team
  namespaces and LocalQueues, ClusterQueues whose quota is the sum over the members that have each pool and which
  wait for the MultiKueue admission check (components/fleet/multikueue.py). Teams submit there. It leaves through
  one static public IP (its load balancer's outbound IP, created before it), which every member's API server
  admits: the manager's only way in to the members.
- Fleet Manager joins every member, in its own update group; one update strategy runs the canary members first,
  waits, then the rest; two auto-upgrade profiles use it, one for Kubernetes versions and one for node images.
  Members' own AKS channels are off (config/upgrade/section.py, owner fleet); update runs start only inside
  each member's
  maintenance windows, which members keep: "All update runs (manual or automated) honor member cluster maintenance
  windows" (Microsoft Learn, kubernetes-fleet/concepts-update-orchestration, azure-aks-docs fb060abe6).

The Fleet resources are sent at the GA REST API 2026-06-01 as generic resources (tests/fixtures/arm_specs holds the
excerpts they are checked against): azure-native 3.29's typed Fleet resources send 2024-05-02-preview, whose
retirement Microsoft announced, and the SDK has no versioned submodules for another version. Each generic resource
takes over the typed one it replaces (an alias), replaced delete-first: the same Azure resource ID cannot be
created beside itself.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native.network as network
import pulumi_azure_native.resources as resources

from aks_gpu_platform.config.fleet.section import FleetPlan, fleet_gpu_pools, largest_job, manager_training
from aks_gpu_platform.config.gpu.scheduling import gpu_resource

from ..cluster.aks_cluster import AksCluster
from ..cluster.cpu_node_pool import CpuNodePool
from ..cluster.resource_group import platform_resource_group
from ..platform import AksGpuPlatform
from ..shared.context import ClusterHandle
from ..training.queues import TrainingQueues
from ..training.team_tenancy import TeamTenancy
from ..upgrade.policy import UpgradePolicy
from .admission import LargestJobPolicy
from .multikueue import MULTIKUEUE_CHECK, FleetDispatch, MemberAccess, TokenRotation, multikueue_configuration

CANARY_STAGE = "canary"
REST_STAGE = "rest"
FLEET_PROVIDER = "Microsoft.ContainerService"
# The GA Fleet REST API (azure-rest-api-specs specification/containerservice/resource-manager/
# Microsoft.ContainerService/fleet/stable/2026-06-01/fleets.json).
FLEET_API_VERSION = "2026-06-01"
FLEET_TYPES = {
    "fleets": "azure-native:containerservice:Fleet",
    "members": "azure-native:containerservice:FleetMember",
    "updateStrategies": "azure-native:containerservice:FleetUpdateStrategy",
    "autoUpgradeProfiles": "azure-native:containerservice:AutoUpgradeProfile",
}


def update_stages(plan: FleetPlan) -> list[dict[str, Any]]:
    """Canary members' groups in parallel, a wait, then every other member's group (UpdateRunStrategy.stages)."""
    updates = plan.fleet.updates
    rest = [m.name for m in plan.fleet.members if m.name not in updates.canary_members]
    return [
        {
            "name": CANARY_STAGE,
            "groups": [{"name": member} for member in updates.canary_members],
            "afterStageWaitInSeconds": updates.wait_after_canary_hours * 3600,
        },
        {"name": REST_STAGE, "groups": [{"name": member} for member in rest]},
    ]


def auto_upgrade_profiles(plan: FleetPlan) -> dict[str, dict[str, Any]]:
    """Profile name -> properties besides the strategy: Kubernetes versions, and node images.

    The node image selection goes on the Kubernetes profile: "If you select either the Stable, Rapid, or Target
    Kubernetes version channel, you can choose how node image updates are applied", while "The Node image channel
    always uses consistent image" (MicrosoftDocs/azure-aks-docs 02d016f03, articles/kubernetes-fleet/
    update-automation.md). The 2026-06-01 spec accepts the field on any channel (AutoUpgradeProfileProperties
    .nodeImageSelection, no rule per channel), so on NodeImage it would be sent and ignored.
    """
    updates = plan.fleet.updates
    return {
        "kubernetes": {
            "channel": updates.kubernetes_channel,
            "nodeImageSelection": {"type": updates.node_image_selection},
        },
        "node-image": {"channel": "NodeImage"},
    }


@dataclass(frozen=True)
class _FleetResources:
    """The Fleet's resources, sent at the GA API as generic resources under `parent`, named `<name>-<role>`."""

    name: str
    resource_group_name: pulumi.Input[str]
    fleet_name: str
    parent: pulumi.Resource

    def create(
        self,
        role: str,
        resource_type: str,
        resource_name: pulumi.Input[str],
        properties: pulumi.Input[dict[str, Any]],
        depends_on: Sequence[pulumi.Resource],
        create_only: Sequence[str] = (),
        **envelope: Any,
    ) -> resources.Resource:
        return resources.Resource(
            f"{self.name}-{role}",
            resource_group_name=self.resource_group_name,
            resource_provider_namespace=FLEET_PROVIDER,
            parent_resource_path="" if resource_type == "fleets" else f"fleets/{self.fleet_name}",
            resource_type=resource_type,
            resource_name_=resource_name,
            api_version=FLEET_API_VERSION,
            properties=properties,
            # Takes over the typed 2024-05-02-preview resource of the same name; same Azure ID, so the
            # replacement deletes first (creating it beside itself would be a no-op the old delete then undoes).
            opts=pulumi.ResourceOptions(
                parent=self.parent,
                depends_on=list(depends_on),
                aliases=[pulumi.Alias(type_=FLEET_TYPES[resource_type])],
                delete_before_replace=True,
                # The spec's create-only properties (x-ms-mutability read, create): an in-place PUT changing
                # one is refused or ignored, and a generic resource has no schema to tell Pulumi so.
                replace_on_changes=[f"properties.{path}" for path in create_only],
            ),
            **envelope,
        )


class AksGpuFleet(pulumi.ComponentResource):
    """GPU platforms in several regions behind one MultiKueue manager, upgraded in stages by Fleet Manager."""

    members: dict[str, AksGpuPlatform]
    """Member name -> its platform."""
    manager: AksCluster
    """The MultiKueue manager cluster."""
    manager_egress_address: pulumi.Output[str]
    """The one public address the manager's traffic leaves from (every member's API server admits it)."""
    manager_resource_group_name: pulumi.Output[str]
    """The manager's resource group: with its cluster name, what a team's `az aks get-credentials` needs."""
    fleet_name: pulumi.Output[str]
    """Azure name of the Fleet Manager resource."""

    def __init__(self, name: str, plan: FleetPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:AksGpuFleet", name, None, opts)
        manager, shared, child = plan.fleet.manager, plan.training, pulumi.ResourceOptions(parent=self)
        tags = {"environment": shared.environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **shared.tags}
        rg = platform_resource_group(f"{name}-manager-rg", manager.resource_group, manager.location, tags, opts=child)
        self.manager_resource_group_name = rg
        subnet = self._manager_subnet(name, plan, rg, tags)
        egress = self._manager_egress(name, plan, rg, tags)
        self.manager_egress_address = egress.ip_address.apply(lambda ip: ip or "")
        handle = self._manager_cluster(name, plan, rg, subnet, egress, tags)
        self._manager_pool_and_upgrades(name, plan, handle, subnet)
        queues = self._manager_queues(name, plan, handle)
        address = self.manager_egress_address.apply(lambda ip: f"{ip}/32")
        self.members = {
            member: AksGpuPlatform(
                f"{name}-{member}", cfg, child, api_server_sources=[address], teams_submit_here=False
            )
            for member, cfg in plan.members.items()
        }
        self._multikueue(name, plan, handle, queues)
        self.fleet_name = self._fleet_manager(name, plan, rg, tags)
        self.register_outputs({"fleet_name": self.fleet_name, "manager_egress_address": self.manager_egress_address})

    def _manager_subnet(
        self, name: str, plan: FleetPlan, rg: pulumi.Input[str], tags: dict[str, str]
    ) -> network.Subnet:
        """The manager's VNet and the subnet its nodes join."""
        manager = plan.fleet.manager
        vnet = network.VirtualNetwork(
            f"{name}-manager-vnet",
            resource_group_name=rg,
            location=manager.location,
            address_space={"address_prefixes": [manager.address_space]},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subnets"]),  # subnets are their own resources
        )
        return network.Subnet(
            f"{name}-manager-nodes",
            resource_group_name=rg,
            virtual_network_name=vnet.name,
            address_prefix=manager.nodes_subnet,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _manager_egress(
        self, name: str, plan: FleetPlan, rg: pulumi.Input[str], tags: dict[str, str]
    ) -> network.PublicIPAddress:
        """The manager's egress, fixed before the cluster exists, so members can admit it from their first deploy.

        The load balancer's outbound IP rather than a NAT gateway: the cluster keeps outboundType loadBalancer
        (an in-place change on an existing manager), and a Standard static IP costs a fraction of a NAT gateway.
        """
        return network.PublicIPAddress(
            f"{name}-manager-egress",
            resource_group_name=rg,
            location=plan.fleet.manager.location,
            public_ip_address_name=f"pip-{plan.manager.cluster.name}-egress",
            sku={"name": network.PublicIPAddressSkuName.STANDARD, "tier": network.PublicIPAddressSkuTier.REGIONAL},
            public_ip_allocation_method=network.IPAllocationMethod.STATIC,
            public_ip_address_version=network.IPVersion.I_PV4,
            tags=tags,
            # Members admit exactly this address: losing it locks the manager out of every member.
            opts=pulumi.ResourceOptions(parent=self, protect=plan.training.protect_stateful),
        )

    def _manager_cluster(
        self,
        name: str,
        plan: FleetPlan,
        rg: pulumi.Input[str],
        subnet: network.Subnet,
        egress: network.PublicIPAddress,
        tags: dict[str, str],
    ) -> ClusterHandle:
        """The manager's cluster, and the handle its pools and workloads take."""
        mgr, location, child = plan.manager, plan.fleet.manager.location, pulumi.ResourceOptions(parent=self)
        self.manager = AksCluster(
            f"{name}-manager",
            {
                "resource_group_name": rg,
                "location": location,
                "nodes_subnet_id": subnet.id,
                "cluster": mgr.cluster,
                "system_pool": mgr.system_pool,
                "upgrade": mgr.upgrade,
                "tags": tags,
                "outbound_ip_id": egress.id,
            },
            child,
        )
        handle = ClusterHandle(
            resource_group_name=rg,
            location=location,
            tags=tags,
            cluster=self.manager.cluster,
            cluster_name=self.manager.cluster_name,
            cluster_id=self.manager.cluster_id,
            provider=self.manager.provider,
            oidc_issuer_url=self.manager.oidc_issuer_url,
            protect=False,
        )
        return handle

    def _manager_pool_and_upgrades(
        self, name: str, plan: FleetPlan, handle: ClusterHandle, subnet: network.Subnet
    ) -> None:
        """The manager's CPU pool and its upgrade policy."""
        mgr, child = plan.manager, pulumi.ResourceOptions(parent=self)
        CpuNodePool(
            f"{name}-manager-cpu",
            {
                "cluster": handle,
                "nodes_subnet_id": subnet.id,
                "kubernetes_version": mgr.cluster.kubernetes_version,
                "tracks_versions": mgr.upgrade.tracks_versions,
                "settings": mgr.cpu_pool,
                "upgrade": mgr.upgrade.cpu_pool,
            },
            child,
        )
        UpgradePolicy(f"{name}-manager-upgrade", {"settings": mgr.upgrade, "cluster": handle}, child)

    def _manager_queues(self, name: str, plan: FleetPlan, handle: ClusterHandle) -> TrainingQueues:
        """The teams' queues on the manager, waiting for MultiKueue; the teams' access; the largest-job check."""
        child, teams = pulumi.ResourceOptions(parent=self), manager_training(plan)
        queues = TrainingQueues(
            f"{name}-manager-queues",
            {
                "settings": teams,
                "gpu_pools": fleet_gpu_pools(plan),
                "cluster": handle,
                "admission_checks": [MULTIKUEUE_CHECK],
                "kueue_configuration": multikueue_configuration(plan.fleet.multi_kueue.dispatcher),
            },
            child,
        )
        # Teams submit here: the same Role, binding and cluster credentials as on a single platform.
        TeamTenancy(
            f"{name}-manager-teams",
            {
                "settings": teams,
                "namespaces": queues.namespaces,
                "cluster": handle,
                "gpu_pools": fleet_gpu_pools(plan),
            },
            child,
        )
        LargestJobPolicy(
            f"{name}-manager-largest-job",
            {
                "manager": handle,
                "limits": {t.name: (t.namespace_name, largest_job(plan, t.name)) for t in teams.teams},
                "gpu_resources": sorted({gpu_resource(p) for p in fleet_gpu_pools(plan)}),
            },
            child,
        )
        return queues

    def _multikueue(self, name: str, plan: FleetPlan, handle: ClusterHandle, queues: TrainingQueues) -> None:
        """The manager's rotating tokens on every member, each member's access for them, and the dispatcher."""
        child = pulumi.ResourceOptions(parent=self)
        rotation = TokenRotation(
            f"{name}-multikueue-tokens",
            {
                "manager": handle,
                "kueue_release": queues.kueue_release,
                "members": {m: (p.handle.cluster.fqdn, p.kubeconfig) for m, p in self.members.items()},
            },
            child,
        )
        for member, platform in self.members.items():
            MemberAccess(
                f"{name}-{member}-multikueue",
                {
                    "member": platform.handle,
                    "team_namespaces": [t.namespace_name for t in plan.members[member].training.teams],
                    "rotator_principal_id": rotation.principal_id,
                    "depends_on": [platform.training] if platform.training is not None else [],
                    "credential_generation": plan.fleet.multi_kueue.credential_generation,
                },
                child,
            )
        FleetDispatch(
            f"{name}-dispatch",
            {"manager": handle, "kueue_release": queues.kueue_release, "members": list(self.members)},
            child,
        )

    def _fleet_manager(
        self, name: str, plan: FleetPlan, rg: pulumi.Input[str], tags: dict[str, str]
    ) -> pulumi.Output[str]:
        """The Fleet, its members (one update group each), the staged strategy and the auto-upgrade profiles."""
        fleet = plan.fleet
        fleet_resource = _FleetResources(name, rg, fleet.name, self).create
        hub = fleet_resource("fleet", "fleets", fleet.name, {}, [], location=fleet.manager.location, tags=tags)
        joined = [
            fleet_resource(
                f"{member}-member",
                "members",
                member,
                # One update group per member: the strategy's stages name them.
                {"clusterResourceId": platform.cluster_id, "group": member},
                [hub],
                create_only=["clusterResourceId"],
            )
            for member, platform in self.members.items()
        ]
        # A group "must match a group name of an existing fleet member" (UpdateGroup.name): wait for the members.
        strategy = fleet_resource(
            "staged", "updateStrategies", "staged", {"strategy": {"stages": update_stages(plan)}}, joined
        )
        for role, profile in auto_upgrade_profiles(plan).items():
            fleet_resource(
                f"auto-upgrade-{role}",
                "autoUpgradeProfiles",
                role,
                strategy.id.apply(lambda strategy_id, p=profile: {**p, "updateStrategyId": strategy_id}),
                [strategy],
                create_only=["updateStrategyId", "nodeImageSelection.type"],
            )
        return pulumi.Output.from_input(fleet.name)

    def stack_outputs(self) -> dict[str, Any]:
        """Per member its platform's outputs, and the fleet's own."""
        outputs: dict[str, Any] = {
            "fleetName": self.fleet_name,
            "managerClusterName": self.manager.cluster_name,
            # Teams submit on the manager: these two are their `az aks get-credentials` (docs/for-ml-teams.md).
            "managerResourceGroupName": self.manager_resource_group_name,
            "managerEgressAddress": self.manager_egress_address,
        }
        outputs["members"] = {m: p.stack_outputs() for m, p in self.members.items()}
        return outputs
