"""A private endpoint with its privatelink DNS zone, the zone's VNet link and the zone group.

The zone group registers the endpoint's private IP in the zone, and the link makes the VNet
resolve the service's public name to that IP: clients keep using the normal host name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import pulumi
import pulumi_azure_native.network as network
import pulumi_azure_native.privatedns as privatedns


class PrivateLink(NamedTuple):
    endpoint: network.PrivateEndpoint
    """The private endpoint (its `id` for outputs)."""
    ready: list[pulumi.Resource]
    """The endpoint, its DNS zone group and VNet link: `depends_on` these before a client resolves the name."""


def private_endpoint(
    name: str,
    *,
    parent: pulumi.Resource,
    resource_group_name: pulumi.Input[str],
    location: pulumi.Input[str],
    target_id: pulumi.Input[str],
    target_name: pulumi.Output[str],
    group_id: str,
    dns_zone: str,
    subnet_id: pulumi.Input[str],
    vnet_id: pulumi.Input[str],
    vnet_link_name: str,
    tags: Mapping[str, str],
) -> PrivateLink:
    """Children `{name}-dns-zone`, `-dns-link`, `-private-endpoint`, `-dns-zone-group` for `group_id` of `target_id`."""
    child = pulumi.ResourceOptions(parent=parent)
    zone = privatedns.PrivateZone(
        f"{name}-dns-zone",
        resource_group_name=resource_group_name,
        private_zone_name=dns_zone,
        location="Global",
        tags=dict(tags),
        opts=child,
    )
    link = privatedns.VirtualNetworkLink(
        f"{name}-dns-link",
        resource_group_name=resource_group_name,
        private_zone_name=zone.name,
        virtual_network_link_name=vnet_link_name,
        location="Global",
        registration_enabled=False,
        virtual_network={"id": vnet_id},
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=zone),
    )
    endpoint = network.PrivateEndpoint(
        f"{name}-private-endpoint",
        resource_group_name=resource_group_name,
        location=location,
        private_endpoint_name=target_name.apply(lambda n: f"pe-{n}"),
        subnet={"id": subnet_id},
        private_link_service_connections=[
            {"name": group_id, "private_link_service_id": target_id, "group_ids": [group_id]}
        ],
        tags=dict(tags),
        opts=child,
    )
    zone_group = network.PrivateDnsZoneGroup(
        f"{name}-dns-zone-group",
        resource_group_name=resource_group_name,
        private_endpoint_name=endpoint.name,
        private_dns_zone_group_name="default",
        private_dns_zone_configs=[{"name": dns_zone.replace(".", "-"), "private_dns_zone_id": zone.id}],
        opts=pulumi.ResourceOptions(parent=endpoint),
    )
    return PrivateLink(endpoint, [endpoint, zone_group, link])
