"""The stack config loads for dev and prod, and every rule rejects a broken value naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from aks_gpu_platform.config import ConfigError, PlatformConfig, load_platform_config
from tests.conftest import STACKS, assert_rejected, settings_of

Breaker = Callable[[dict[str, Any]], None]


def _settings(stack_config: Callable[[str], dict[str, Any]], stack: str) -> dict[str, Any]:
    return settings_of(stack_config(stack))


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_config_loads_and_validates(stack_config: Callable[[str], dict[str, Any]], stack: str) -> None:
    cfg = load_platform_config(_settings(stack_config, stack))
    assert isinstance(cfg, PlatformConfig)
    assert cfg.environment == stack, "the environment key must match the stack it configures"
    assert cfg.location == "koreacentral"


def test_prod_is_zonal_and_locked_down(stack_config: Callable[[str], dict[str, Any]]) -> None:
    cfg = load_platform_config(_settings(stack_config, "prod"))
    assert cfg.system_pool.zones == ["1", "2", "3"], "prod's system pool must survive a zone outage"
    assert cfg.cpu_pool.zones == ["1", "2", "3"]
    assert cfg.cluster.local_accounts_disabled, "prod allows Entra ID identities only"
    assert cfg.protect_stateful


def _set(path: str, value: Any) -> Breaker:
    def apply(settings: dict[str, Any]) -> None:
        node: Any = settings
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = parts[-1]
        if value is _DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return apply


_DELETE = object()

# (description, how to break the dev config, field path that must be named, text the message must contain)
BROKEN: list[tuple[str, Breaker, str, str]] = [
    ("min above max", _set("cpuPool.minCount", 9), "cpuPool.minCount", "must not exceed maxCount"),
    ("unknown top-level key", _set("clusterr", {"name": "x"}), "clusterr", "unknown key"),
    ("unknown nested key", _set("cluster.kubernetesVersions", "1.33"), "cluster.kubernetesVersions", "unknown key"),
    ("malformed CIDR", _set("network.subnets.nodes", "10.40.0.0/33"), "network.subnets.nodes", "IPv4 CIDR"),
    ("CIDR with host bits", _set("network.subnets.nodes", "10.40.0.5/22"), "network.subnets.nodes", "host bits"),
    (
        "subnet outside the VNet",
        _set("network.subnets.lustre", "10.41.0.0/24"),
        "network.subnets.lustre",
        "inside addressSpace",
    ),
    (
        "overlapping subnets",
        _set("network.subnets.lustre", "10.40.1.0/24"),
        "network.subnets.lustre",
        "must not overlap subnets.nodes",
    ),
    (
        "private endpoint subnet too small",
        _set("network.subnets.privateEndpoints", "10.40.9.0/29"),
        "network.subnets.privateEndpoints",
        "/28 or larger",
    ),
    (
        "node subnet too small for the pools",
        _set("network.subnets.nodes", "10.40.0.0/29"),
        "network.subnets.nodes",
        "need",
    ),
    ("pool name with capitals", _set("cpuPool.name", "CpuPool"), "cpuPool.name", "pattern"),
    ("pool name too long", _set("gpuPools.0.name", "gpupoolnumber1"), "gpuPools[0].name", "pattern"),
    ("duplicate pool names", _set("cpuPool.name", "system"), "cpuPool.name", "unique"),
    ("zone that does not exist", _set("cpuPool.zones", ["4"]), "cpuPool.zones[0]", "'1', '2' or '3'"),
    ("system pool with no node", _set("systemPool.minCount", 0), "systemPool.minCount", "greater than or equal to 1"),
    ("not a number", _set("cpuPool.maxCount", "many"), "cpuPool.maxCount", "valid integer"),
    ("LTS without Premium", _set("upgrade.supportPlan", "AKSLongTermSupport"), "upgrade.tier", "requires tier Premium"),
    (
        "public API server open to the world",
        _set("cluster.apiServer.authorizedIpRanges", []),
        "cluster.apiServer.authorizedIpRanges",
        "authorized range",
    ),
    (
        "DNS service IP outside the service CIDR",
        _set("cluster.dnsServiceIp", "10.0.0.10"),
        "cluster.dnsServiceIp",
        "inside serviceCidr",
    ),
    ("pod CIDR overlapping the VNet", _set("cluster.podCidr", "10.40.0.0/16"), "cluster.podCidr", "must not overlap"),
    ("Kubernetes patch version", _set("cluster.kubernetesVersion", "1.33.2"), "cluster.kubernetesVersion", "pattern"),
    (
        "admin group that is not a GUID",
        _set("cluster.entraId.adminGroupObjectIds", ["platform-admins"]),
        "cluster.entraId.adminGroupObjectIds[0]",
        "pattern",
    ),
    ("no GPU pool", _set("gpuPools", []), "gpuPools", "at least 1"),
    ("missing cluster section", _set("cluster", _DELETE), "cluster", "missing"),
    ("unknown environment", _set("environment", "staging"), "environment", "'dev' or 'prod'"),
    ("kubeconfig login mode", _set("cluster.kubeconfigLogin", "devicecode"), "cluster.kubeconfigLogin", "azurecli"),
]


@pytest.mark.parametrize(("why", "breaker", "field", "hint"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_value_is_rejected_naming_the_field(
    stack_config: Callable[[str], dict[str, Any]], why: str, breaker: Breaker, field: str, hint: str
) -> None:
    settings = _settings(stack_config, "dev")
    breaker(settings)
    error = assert_rejected(settings, why, field, hint)
    assert isinstance(error, pulumi.RunError), "the Pulumi CLI prints RunError without a traceback"


def test_every_problem_is_listed_at_once(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    settings["cpuPool"]["maxCount"] = "many"
    settings["cluster"]["dnsPrefix"] = "-bad-"
    settings["location"] = "Korea Central"
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    problems = caught.value.problems
    fields = {p.split(":")[0] for p in problems}
    assert {"cpuPool.maxCount", "cluster.dnsPrefix", "location"} <= fields, (
        f"a user fixes all mistakes in one round only if all are listed: {problems}"
    )


def test_message_shows_the_given_value(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    settings["network"]["subnets"]["nodes"] = "10.40.0.0/33"
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert "'10.40.0.0/33'" in str(caught.value), "the message quotes what was given"


def test_existing_subnets_replace_the_vnet(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    base = "/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/hub/providers/Microsoft.Network"
    settings["network"] = {
        "existingSubnets": {
            "vnetId": f"{base}/virtualNetworks/spoke",
            "nodesSubnetId": f"{base}/virtualNetworks/spoke/subnets/nodes",
            "lustreSubnetId": f"{base}/virtualNetworks/spoke/subnets/lustre",
            "privateEndpointsSubnetId": f"{base}/virtualNetworks/spoke/subnets/pe",
            "nodesSubnetCidr": "10.60.0.0/22",
            "lustreSubnetCidr": "10.60.8.0/24",
        }
    }
    cfg = load_platform_config(settings)
    assert cfg.network.uses_existing_subnets

    settings["network"]["existingSubnets"]["nodesSubnetId"] = "snet-nodes"
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert "network.existingSubnets.nodesSubnetId:" in str(caught.value)


def test_vnet_and_existing_subnets_are_exclusive(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    base = "/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/hub/providers/Microsoft.Network"
    settings["network"]["existingSubnets"] = {
        "vnetId": f"{base}/virtualNetworks/spoke",
        "nodesSubnetId": f"{base}/virtualNetworks/spoke/subnets/nodes",
        "lustreSubnetId": f"{base}/virtualNetworks/spoke/subnets/lustre",
        "privateEndpointsSubnetId": f"{base}/virtualNetworks/spoke/subnets/pe",
        "nodesSubnetCidr": "10.60.0.0/22",
        "lustreSubnetCidr": "10.60.8.0/24",
    }
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert "network.existingSubnets:" in str(caught.value)
