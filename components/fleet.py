"""AksGpuFleet: member GPU platforms per region, a CPU-only MultiKueue manager, and Azure Kubernetes Fleet Manager.

- Members are whole `AksGpuPlatform`s, each with its Kueue, team namespaces, LocalQueues, ClusterQueues and
  ResourceFlavors from the shared `training` section: exactly the mirror MultiKueue needs.
- The manager is a small AKS cluster (system and CPU pools only) running Kueue with MultiKueue: the same team
  namespaces and LocalQueues, ClusterQueues whose quota is the members' sum and which wait for the MultiKueue
  admission check (components/fleet_multikueue.py).
- Fleet Manager (azure-native containerservice, REST API 2024-05-02-preview) joins every member, in its own
  update group; one update strategy runs the canary members first, waits, then the rest; two auto-upgrade
  profiles use it, one for Kubernetes versions and one for node images. Update runs start only inside each
  member's own planned maintenance windows (components/upgrade_policy.py still creates them per member): "All
  update runs (manual or automated) honor member cluster maintenance windows" (Microsoft Learn,
  kubernetes-fleet/concepts-update-orchestration, read 2026-12-03).
"""

from typing import Any

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_azure_native.network as network

from aks_gpu_platform.config.fleet import FleetPlan, fleet_gpu_pools, manager_training

from .aks_cluster import AksCluster
from .context import ClusterHandle
from .cpu_node_pool import CpuNodePool
from .fleet_multikueue import MULTIKUEUE_CHECK, FleetDispatch, MemberAccess, multikueue_configuration
from .platform import AksGpuPlatform
from .resource_group import platform_resource_group
from .training_queues import TrainingQueues

CANARY_STAGE = "canary"
REST_STAGE = "rest"


def update_stages(plan: FleetPlan) -> list[containerservice.UpdateStageArgsDict]:
    """Canary members' groups in parallel, a wait, then every other member's group."""
    updates = plan.fleet.updates
    rest = [m.name for m in plan.fleet.members if m.name not in updates.canary_members]
    return [
        {
            "name": CANARY_STAGE,
            "groups": [{"name": member} for member in updates.canary_members],
            "after_stage_wait_in_seconds": updates.wait_after_canary_hours * 3600,
        },
        {"name": REST_STAGE, "groups": [{"name": member} for member in rest]},
    ]


class AksGpuFleet(pulumi.ComponentResource):
    """GPU platforms in several regions behind one MultiKueue manager, upgraded in stages by Fleet Manager."""

    members: dict[str, AksGpuPlatform]
    """Member name -> its platform."""
    manager: AksCluster
    """The MultiKueue manager cluster."""
    fleet_name: pulumi.Output[str]
    """Azure name of the Fleet Manager resource."""

    def __init__(self, name: str, plan: FleetPlan, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:AksGpuFleet", name, None, opts)
        fleet, mgr = plan.fleet, plan.manager
        child = pulumi.ResourceOptions(parent=self)
        self.members = {member: AksGpuPlatform(f"{name}-{member}", cfg, child) for member, cfg in plan.members.items()}
        shared = plan.training
        tags = {"environment": shared.environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **shared.tags}

        rg = platform_resource_group(
            f"{name}-manager-rg", fleet.manager.resource_group, fleet.manager.location, tags, opts=child
        )
        vnet = network.VirtualNetwork(
            f"{name}-manager-vnet",
            resource_group_name=rg,
            location=fleet.manager.location,
            address_space={"address_prefixes": [fleet.manager.address_space]},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subnets"]),  # subnets are their own resources
        )
        subnet = network.Subnet(
            f"{name}-manager-nodes",
            resource_group_name=rg,
            virtual_network_name=vnet.name,
            address_prefix=fleet.manager.nodes_subnet,
            opts=child,
        )
        self.manager = AksCluster(
            f"{name}-manager",
            {
                "resource_group_name": rg,
                "location": fleet.manager.location,
                "nodes_subnet_id": subnet.id,
                "cluster": mgr.cluster,
                "system_pool": mgr.system_pool,
                "upgrade": mgr.upgrade,
                "tags": tags,
            },
            child,
        )
        handle = ClusterHandle(
            resource_group_name=rg,
            location=fleet.manager.location,
            tags=tags,
            cluster=self.manager.cluster,
            cluster_name=self.manager.cluster_name,
            cluster_id=self.manager.cluster_id,
            provider=self.manager.provider,
            oidc_issuer_url=self.manager.oidc_issuer_url,
            protect=False,
        )
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
        queues = TrainingQueues(
            f"{name}-manager-queues",
            {
                "settings": manager_training(plan),
                "gpu_pools": fleet_gpu_pools(plan),
                "cluster": handle,
                "admission_checks": [MULTIKUEUE_CHECK],
                "kueue_configuration": multikueue_configuration(fleet.multi_kueue.dispatcher),
            },
            child,
        )
        access = {
            member: MemberAccess(
                f"{name}-{member}-multikueue",
                {
                    "member": platform.handle,
                    "server": platform.handle.cluster.fqdn,
                    "generation": fleet.multi_kueue.credential_generation,
                    "depends_on": [platform.training.kueue_release] if platform.training is not None else [],
                },
                child,
            )
            for member, platform in self.members.items()
        }
        FleetDispatch(
            f"{name}-dispatch",
            {
                "manager": handle,
                "kueue_release": queues.kueue_release,
                "member_kubeconfigs": {member: a.kubeconfig for member, a in access.items()},
            },
            child,
        )

        hub = containerservice.Fleet(
            f"{name}-fleet",
            resource_group_name=rg,
            fleet_name=fleet.name,
            location=fleet.manager.location,
            tags=tags,
            opts=child,
        )
        self.fleet_name = hub.name
        for member, platform in self.members.items():
            containerservice.FleetMember(
                f"{name}-{member}-member",
                resource_group_name=rg,
                fleet_name=hub.name,
                fleet_member_name=member,
                cluster_resource_id=platform.cluster_id,
                group=member,  # one update group per member: stages list them by name
                opts=child,
            )
        strategy = containerservice.FleetUpdateStrategy(
            f"{name}-staged",
            resource_group_name=rg,
            fleet_name=hub.name,
            update_strategy_name="staged",
            strategy={"stages": update_stages(plan)},
            opts=child,
        )
        updates = fleet.updates
        # The REST spec's fleet channel is Stable|Rapid|NodeImage; the SDK's UpgradeChannel enum is the managed
        # cluster's (stable|rapid|node-image), so the spec's spelling is sent as text.
        profiles: dict[str, dict[str, Any]] = {
            "kubernetes": {"channel": updates.kubernetes_channel},
            "node-image": {"channel": "NodeImage", "node_image_selection": {"type": updates.node_image_selection}},
        }
        for role, profile in profiles.items():
            containerservice.AutoUpgradeProfile(
                f"{name}-auto-upgrade-{role}",
                resource_group_name=rg,
                fleet_name=hub.name,
                auto_upgrade_profile_name=role,
                update_strategy_id=strategy.id,
                opts=child,
                **profile,
            )
        self.register_outputs({"fleet_name": self.fleet_name})

    def stack_outputs(self) -> dict[str, Any]:
        """Per member its platform's outputs, and the fleet's own."""
        outputs: dict[str, Any] = {"fleetName": self.fleet_name, "managerClusterName": self.manager.cluster_name}
        outputs["members"] = {m: p.stack_outputs() for m, p in self.members.items()}
        return outputs
