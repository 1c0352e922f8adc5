"""Network component built directly: a VNet with chained subnets, or nothing for existing subnets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.components.network.vnet import Network
from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.network.section import NetworkConfig
from aks_gpu_platform.testing import Recording

BASE = "/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/hub/providers/Microsoft.Network"
EXISTING = {
    "existingSubnets": {
        "vnetId": f"{BASE}/virtualNetworks/spoke",
        "nodesSubnetId": f"{BASE}/virtualNetworks/spoke/subnets/nodes",
        "lustreSubnetId": f"{BASE}/virtualNetworks/spoke/subnets/lustre",
        "privateEndpointsSubnetId": f"{BASE}/virtualNetworks/spoke/subnets/pe",
        "nodesSubnetCidr": "10.60.0.0/22",
        "lustreSubnetCidr": "10.60.8.0/24",
    }
}
NEW = {
    "addressSpace": "10.70.0.0/16",
    "subnets": {"nodes": "10.70.0.0/22", "lustre": "10.70.8.0/24", "privateEndpoints": "10.70.9.0/26"},
}


def network(settings: dict[str, Any]) -> Network:
    validated = validate_section(NetworkConfig, settings, source="network")
    return Network("net", {"resource_group_name": "rg", "location": "koreacentral", "settings": validated})


def test_existing_subnets_create_nothing(build: Callable[[Callable[[], Any]], Recording]) -> None:
    recording = build(lambda: network(EXISTING))
    azure = [r for r in recording.resources if r.type.startswith("azure-native:")]
    assert azure == [], "a hub-and-spoke network is used as handed in, never recreated"


def test_new_vnet_has_three_subnets_written_one_after_another(build: Callable[[Callable[[], Any]], Recording]) -> None:
    recording = build(lambda: network(NEW))
    subnets = recording.of_type("azure-native:network:Subnet")
    assert [s.inputs["addressPrefix"] for s in subnets] == ["10.70.0.0/22", "10.70.8.0/24", "10.70.9.0/26"]
    assert subnets[1].urn != subnets[0].urn and subnets[0].urn in subnets[1].depends_on, (
        "Azure rejects concurrent subnet writes on one VNet"
    )
    assert "subnets" in recording.one("azure-native:network:VirtualNetwork").ignore_changes


def test_network_settings_are_validated_like_the_stack(build: Callable[[Callable[[], Any]], Recording]) -> None:
    bad = {**NEW, "subnets": {**NEW["subnets"], "lustre": "10.99.0.0/24"}}
    with pytest.raises(ConfigError) as caught:
        build(lambda: network(bad))
    assert "subnets.lustre:" in str(caught.value), "a subnet outside the VNet is refused before any resource"
