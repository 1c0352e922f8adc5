"""Network: a VNet with node, Lustre, private-endpoint and (optional) NetApp subnets, or existing subnets."""

from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native.network as network

from aks_gpu_platform.config.network.section import NETAPP_DELEGATION, ExistingSubnets, NetworkConfig, SubnetCidrs


class NetworkArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group that holds the VNet."""
    location: pulumi.Input[str]
    """Azure region."""
    settings: NetworkConfig
    """The `network` config section (camelCase keys, as in the stack YAML)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags for every resource."""


class Network(pulumi.ComponentResource):
    """The platform's network; creates nothing when existing subnets are handed in."""

    vnet_id: pulumi.Output[str]
    """VNet resource ID; private DNS zones link to it."""
    nodes_subnet_id: pulumi.Output[str]
    """Subnet for every node pool (CNI overlay: one address per node)."""
    lustre_subnet_id: pulumi.Output[str]
    """Dedicated subnet for Azure Managed Lustre."""
    private_endpoints_subnet_id: pulumi.Output[str]
    """Subnet for private endpoints (registry, storage)."""
    netapp_subnet_id: pulumi.Output[str] | None
    """Subnet delegated to Microsoft.Netapp/volumes, when one is configured."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:Network", name, None, opts)
        existing = args["settings"].existing_subnets
        if existing is not None:
            self._use_existing(existing)
        else:
            self._create(name, args)
        self.register_outputs(
            {
                "vnet_id": self.vnet_id,
                "nodes_subnet_id": self.nodes_subnet_id,
                "lustre_subnet_id": self.lustre_subnet_id,
                "private_endpoints_subnet_id": self.private_endpoints_subnet_id,
                "netapp_subnet_id": self.netapp_subnet_id,
            }
        )

    def _use_existing(self, existing: ExistingSubnets) -> None:
        self.vnet_id = pulumi.Output.from_input(existing.vnet_id)
        self.nodes_subnet_id = pulumi.Output.from_input(existing.nodes_subnet_id)
        self.lustre_subnet_id = pulumi.Output.from_input(existing.lustre_subnet_id)
        self.private_endpoints_subnet_id = pulumi.Output.from_input(existing.private_endpoints_subnet_id)
        self.netapp_subnet_id = (
            pulumi.Output.from_input(existing.netapp_subnet_id) if existing.netapp_subnet_id else None
        )

    def _create(self, name: str, args: NetworkArgs) -> None:
        settings = args["settings"]
        assert settings.address_space is not None and settings.subnets is not None  # checked by NetworkConfig
        vnet = network.VirtualNetwork(
            f"{name}-vnet",
            resource_group_name=args["resource_group_name"],
            location=args["location"],
            virtual_network_name=settings.vnet_name,
            address_space={"address_prefixes": [settings.address_space]},
            tags=dict(args.get("tags", {})),
            # Subnets are separate resources; inline subnets on the VNet would fight them.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subnets"]),
        )
        created = _subnets(name, args, settings.subnets, vnet)
        self.vnet_id = vnet.id
        self.nodes_subnet_id = created["nodes"].id
        self.lustre_subnet_id = created["lustre"].id
        self.private_endpoints_subnet_id = created["private-endpoints"].id
        self.netapp_subnet_id = created["netapp"].id if "netapp" in created else None


def _subnets(
    name: str, args: NetworkArgs, subnets: SubnetCidrs, vnet: network.VirtualNetwork
) -> dict[str, network.Subnet]:
    """Role -> subnet, created one after the other."""
    layout = [
        ("nodes", subnets.nodes, "snet-nodes"),
        ("lustre", subnets.lustre, "snet-lustre"),
        ("private-endpoints", subnets.private_endpoints, "snet-private-endpoints"),
    ]
    if subnets.netapp is not None:
        layout.append(("netapp", subnets.netapp, "snet-netapp"))
    created: dict[str, network.Subnet] = {}
    previous: network.Subnet | None = None
    for role, cidr, subnet_name in layout:
        created[role] = network.Subnet(
            f"{name}-{role}",
            resource_group_name=args["resource_group_name"],
            virtual_network_name=vnet.name,
            subnet_name=subnet_name,
            address_prefix=cidr,
            private_endpoint_network_policies=network.VirtualNetworkPrivateEndpointNetworkPolicies.DISABLED,
            # NetApp Files places volumes only in the VNet's one subnet delegated to it.
            delegations=[{"name": "netapp", "service_name": NETAPP_DELEGATION}] if role == "netapp" else None,
            # Azure serialises subnet writes on one VNet; chaining avoids AnotherOperationInProgress.
            opts=pulumi.ResourceOptions(parent=vnet, depends_on=[previous] if previous else []),
        )
        previous = created[role]
    return created
