"""Network section: a new VNet with subnets, or existing subnets handed in."""

from __future__ import annotations

import ipaddress

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..errors import field_error
from ..types import AzureName, Cidr, ResourceId

# Smallest subnets Azure accepts for what they host.
MIN_PREFIX = {
    "privateEndpoints": 28,  # a handful of private endpoints plus Azure's 5 reserved addresses
    "lustre": 27,  # Azure Managed Lustre's smallest subnet (4-16 TiB)
    "netapp": 28,  # Microsoft sizes a /28 (11 usable addresses) as enough for most NetApp Files deployments
}
NETAPP_DELEGATION = "Microsoft.Netapp/volumes"
AZURE_RESERVED_ADDRESSES = 5


class SubnetCidrs(ConfigModel):
    """CIDRs of the subnets the platform creates inside network.addressSpace."""

    nodes: Cidr = Field(
        description="Node subnet; with CNI overlay it holds one address per node (and per upgrade surge node), "
        "not per pod"
    )
    lustre: Cidr = Field(
        description="Dedicated subnet for Azure Managed Lustre: /27 or larger, sized by capacity (4-16 TiB /27, "
        "20-40 /26, 44-92 /25, 96-196 /24, 200-400 /23)"
    )
    private_endpoints: Cidr = Field(
        description="Private endpoints of the registry and storage accounts: /28 or larger (Azure keeps 5 addresses)"
    )
    netapp: Cidr | None = Field(
        default=None,
        description="Subnet delegated to Microsoft.Netapp/volumes (one per VNet, /28 or larger); "
        "required with storage.netappFiles",
    )


class ExistingSubnets(ConfigModel):
    """Subnets of an existing (e.g. hub-and-spoke) VNet, handed in by resource ID."""

    vnet_id: ResourceId = Field(description="VNet the subnets live in; private DNS zones link to it")
    nodes_subnet_id: ResourceId = Field(description="Resource ID of the node subnet")
    lustre_subnet_id: ResourceId = Field(
        description="Resource ID of the subnet dedicated to Azure Managed Lustre (nothing else may use it)"
    )
    private_endpoints_subnet_id: ResourceId = Field(
        description="Resource ID of the subnet for the registry's and storage accounts' private endpoints"
    )
    nodes_subnet_cidr: Cidr = Field(description="CIDR of the node subnet, to check it can hold every node")
    lustre_subnet_cidr: Cidr = Field(description="CIDR of the Lustre subnet, to check it fits the capacity")
    netapp_subnet_id: ResourceId | None = Field(
        default=None, description="The VNet's one subnet delegated to Microsoft.Netapp/volumes (NetApp Files)"
    )
    netapp_subnet_cidr: Cidr | None = Field(
        default=None, description="CIDR of the NetApp subnet, to check it overlaps no other subnet"
    )

    @model_validator(mode="after")
    def _check_netapp_subnet(self) -> ExistingSubnets:
        if (self.netapp_subnet_id is None) != (self.netapp_subnet_cidr is None):
            missing = "netappSubnetCidr" if self.netapp_subnet_cidr is None else "netappSubnetId"
            raise field_error(missing, None, "netappSubnetId and netappSubnetCidr go together")
        others = {
            "nodesSubnetId": self.nodes_subnet_id,
            "lustreSubnetId": self.lustre_subnet_id,
            "privateEndpointsSubnetId": self.private_endpoints_subnet_id,
        }
        for key, other in others.items():
            if self.netapp_subnet_id is not None and self.netapp_subnet_id.lower() == other.lower():
                raise field_error(
                    "netappSubnetId",
                    self.netapp_subnet_id,
                    f"must be its own subnet delegated to {NETAPP_DELEGATION}; {key} is not delegated "
                    "(a delegated subnet holds nothing but NetApp volumes)",
                )
        return self


class NetworkConfig(ConfigModel):
    """Either `addressSpace` + `subnets` (a VNet is created) or `existingSubnets`."""

    vnet_name: AzureName | None = Field(
        default=None,
        description="Name of the VNet created for addressSpace; unset: Pulumi names it (network-vnet + random suffix)",
    )
    address_space: Cidr | None = Field(
        default=None, description="Address space of the VNet the platform creates (with subnets)"
    )
    subnets: SubnetCidrs | None = Field(
        default=None, description="Subnets carved from addressSpace (with addressSpace; not with existingSubnets)"
    )
    existing_subnets: ExistingSubnets | None = Field(
        default=None, description="Use these subnets of an existing VNet instead of creating one"
    )

    @model_validator(mode="after")
    def _check_layout(self) -> NetworkConfig:
        if self.existing_subnets is not None:
            if self.address_space is not None or self.subnets is not None:
                raise field_error(
                    "existingSubnets", "set", "use either existingSubnets or addressSpace + subnets, not both"
                )
            self._check_existing_netapp_overlap()
            return self
        if self.address_space is None or self.subnets is None:
            raise field_error(
                "addressSpace", self.address_space, "required with subnets unless existingSubnets is given"
            )
        vnet = ipaddress.IPv4Network(self.address_space)
        named = self.subnet_networks()
        for key, net in named.items():
            if not net.subnet_of(vnet):
                raise field_error(f"subnets.{key}", str(net), f"must lie inside addressSpace {vnet}")
            if key in MIN_PREFIX and net.prefixlen > MIN_PREFIX[key]:
                raise field_error(f"subnets.{key}", str(net), f"must be /{MIN_PREFIX[key]} or larger")
        keys = list(named)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                if named[a].overlaps(named[b]):
                    raise field_error(f"subnets.{b}", str(named[b]), f"must not overlap subnets.{a} ({named[a]})")
        return self

    def subnet_networks(self) -> dict[str, ipaddress.IPv4Network]:
        if self.subnets is not None:
            s = self.subnets
            created = {
                "nodes": ipaddress.IPv4Network(s.nodes),
                "lustre": ipaddress.IPv4Network(s.lustre),
                "privateEndpoints": ipaddress.IPv4Network(s.private_endpoints),
            }
            if s.netapp is not None:
                created["netapp"] = ipaddress.IPv4Network(s.netapp)
            return created
        assert self.existing_subnets is not None
        e = self.existing_subnets
        existing = {
            "nodes": ipaddress.IPv4Network(e.nodes_subnet_cidr),
            "lustre": ipaddress.IPv4Network(e.lustre_subnet_cidr),
        }
        if e.netapp_subnet_cidr is not None:
            existing["netapp"] = ipaddress.IPv4Network(e.netapp_subnet_cidr)
        return existing

    def _check_existing_netapp_overlap(self) -> None:
        named = self.subnet_networks()
        netapp = named.get("netapp")
        if netapp is None:
            return
        if netapp.prefixlen > MIN_PREFIX["netapp"]:
            raise field_error("existingSubnets.netappSubnetCidr", str(netapp), "must be /28 or larger")
        for key in ("nodes", "lustre"):
            if netapp.overlaps(named[key]):
                raise field_error(
                    "existingSubnets.netappSubnetCidr",
                    str(netapp),
                    f"must not overlap existingSubnets.{key}SubnetCidr ({named[key]})",
                )

    @property
    def netapp_cidr(self) -> ipaddress.IPv4Network | None:
        """The NetApp subnet, if one is configured."""
        return self.subnet_networks().get("netapp")

    @property
    def nodes_cidr(self) -> ipaddress.IPv4Network:
        return self.subnet_networks()["nodes"]

    @property
    def lustre_cidr(self) -> ipaddress.IPv4Network:
        return self.subnet_networks()["lustre"]

    @property
    def uses_existing_subnets(self) -> bool:
        return self.existing_subnets is not None


def usable_addresses(network: ipaddress.IPv4Network) -> int:
    return network.num_addresses - AZURE_RESERVED_ADDRESSES
