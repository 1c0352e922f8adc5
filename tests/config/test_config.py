"""The stack config loads for dev and prod, and every rule rejects a broken value naming the field."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import grpc
import kubernetes_validate
import pulumi
import pytest
from kubernetes_validate.utils import VersionNotSupportedError
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub

from aks_gpu_platform.config import ConfigError, PlatformConfig, load_platform_config
from aks_gpu_platform.config.catalog.aks_versions import (
    AKS_MINORS,
    CATALOG_CHECKED_ON,
    DEFAULT_KUBERNETES_MINOR,
    creatable_minors,
)
from aks_gpu_platform.config.cluster.section import ClusterConfig
from aks_gpu_platform.config.loader import kubernetes_version_date, running_under_engine
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
    ("misspelt region", _set("location", "koreacentrl"), "location", "did you mean koreacentral?"),
    ("display name for a region", _set("location", "Korea Central"), "location", "did you mean koreacentral?"),
    ("zones in a region without zones", _set("location", "koreasouth"), "systemPool.zones", "set zones: []"),
    (
        "misspelt GPU size",
        _set("gpuPools.0.vmSize", "Standard_NC4as_T4_v4"),
        "gpuPools[0].vmSize",
        "did you mean Standard_NC4as_T4_v3",
    ),
    ("not a number", _set("cpuPool.maxCount", "many"), "cpuPool.maxCount", "a whole number belongs here"),
    ("a number as text", _set("cpuPool.maxCount", "4"), "cpuPool.maxCount", "without quotes: maxCount: 4"),
    (
        "a decimal as text",
        _set("cluster.autoscalerProfile", {"scaleDownUtilizationThreshold": "0.6"}),
        "cluster.autoscalerProfile.scaleDownUtilizationThreshold",
        "without quotes: scaleDownUtilizationThreshold: 0.6",
    ),
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


# ---------------------------------------------------------------- Kubernetes minor vs the AKS calendar

# As of the catalog's date (2026-12-02) the AKS release calendar gives: community support ended for
# 1.34 on 2026-11-30, so the standard plan creates 1.35-1.37; LTS covers 1.32 (until 2027-03-31) and up.
STANDARD_MINORS_ON_2026_12_02 = ["1.35", "1.36", "1.37"]


@pytest.mark.parametrize("stack", ["dev", "prod", "e2e"])
def test_every_stack_runs_a_minor_aks_creates_under_its_support_plan(
    stack_config: Callable[[str], dict[str, Any]], stack: str
) -> None:
    cfg = load_platform_config(_settings(stack_config, stack))
    row = AKS_MINORS[cfg.cluster.kubernetes_version]
    end = row.lts_end if cfg.upgrade.support_plan == "AKSLongTermSupport" else row.community_support_end
    assert row.generally_available <= CATALOG_CHECKED_ON <= end, (
        f"{stack}: AKS refuses to create a cluster on {cfg.cluster.kubernetes_version} under "
        f"{cfg.upgrade.support_plan}; the deploy would fail at the cluster"
    )


def test_dev_and_prod_run_the_same_minor(stack_config: Callable[[str], dict[str, Any]]) -> None:
    dev, prod = (load_platform_config(_settings(stack_config, s)).cluster for s in ("dev", "prod"))
    assert dev.kubernetes_version == prod.kubernetes_version, "dev must test the Kubernetes minor prod runs"


def test_a_minor_past_community_support_is_rejected_on_the_standard_plan(
    stack_config: Callable[[str], dict[str, Any]],
) -> None:
    settings = _settings(stack_config, "dev")
    settings["cluster"]["kubernetesVersion"] = "1.33"
    error = assert_rejected(
        settings,
        "AKS no longer creates 1.33 clusters under the standard plan",
        "cluster.kubernetesVersion",
        str(STANDARD_MINORS_ON_2026_12_02),
    )
    assert "got '1.33'" in str(error) and "KubernetesOfficial" in str(error), "the message names value and plan"


def test_a_minor_that_left_community_support_points_to_lts(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    settings["cluster"]["kubernetesVersion"] = "1.34"  # community support ended 2026-11-30
    assert_rejected(settings, "1.34 left community support", "cluster.kubernetesVersion", "AKSLongTermSupport")


@pytest.mark.parametrize(("minor", "creatable"), [("1.31", False), ("1.32", True), ("1.33", True), ("1.37", True)])
def test_lts_creates_older_minors_until_their_lts_end(
    stack_config: Callable[[str], dict[str, Any]], minor: str, creatable: bool
) -> None:
    settings = _settings(stack_config, "prod")
    settings["cluster"]["kubernetesVersion"] = minor
    if creatable:
        assert load_platform_config(settings).cluster.kubernetes_version == minor
        return
    assert_rejected(settings, "1.31 LTS ended 2026-11-30", "cluster.kubernetesVersion", "long-term support ended")


def test_a_minor_outside_the_catalog_is_rejected(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    settings["cluster"]["kubernetesVersion"] = "1.40"
    assert_rejected(settings, "AKS has no 1.40", "cluster.kubernetesVersion", "not in the AKS version catalog")


def test_the_default_minor_is_creatable_under_both_plans(stack_config: Callable[[str], dict[str, Any]]) -> None:
    for stack in ("dev", "prod"):
        settings = _settings(stack_config, stack)
        del settings["cluster"]["kubernetesVersion"]
        cfg = load_platform_config(settings)
        assert cfg.cluster.kubernetes_version == DEFAULT_KUBERNETES_MINOR, "an omitted minor gets the default"


def test_a_later_date_rejects_a_minor_that_has_aged_out(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _settings(stack_config, "dev")
    minor = settings["cluster"]["kubernetesVersion"]
    last_day = AKS_MINORS[minor].community_support_end
    assert load_platform_config(settings, kubernetes_version_on=last_day).cluster.kubernetes_version == minor
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings, kubernetes_version_on=last_day + datetime.timedelta(days=1))
    assert "cluster.kubernetesVersion:" in str(caught.value), (
        "a real run after the minor's end must stop before any resource, not fail at the cluster"
    )


def test_builds_check_the_catalog_date_and_real_runs_also_today() -> None:
    later = datetime.date(2030, 1, 1)
    assert kubernetes_version_date(real_run=False, today=later) == CATALOG_CHECKED_ON, (
        "tests, the offline plan and CI must give the same verdict on any day"
    )
    assert kubernetes_version_date(real_run=True, today=later) == later, "a deploy checks the day it runs"
    assert kubernetes_version_date(real_run=True, today=datetime.date(2026, 1, 1)) == CATALOG_CHECKED_ON, (
        "a clock behind the catalog must not bring back minors the catalog already retired"
    )


def test_only_the_pulumi_engine_counts_as_a_real_run(
    build: Callable[[Callable[[], Any]], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    build(lambda: seen.append(running_under_engine()))
    assert seen == [False], "under test mocks the catalog date applies, so the suite stays reproducible"
    engine = ResourceMonitorStub(grpc.insecure_channel("localhost:1"))  # the engine's monitor; never called here
    monkeypatch.setattr(runtime_settings, "get_monitor", lambda: engine)
    assert running_under_engine(), "under the CLI's engine the program also checks today's date"


def test_the_catalog_rows_follow_the_aks_calendar_shape() -> None:
    minors = sorted(AKS_MINORS, key=lambda m: int(m.split(".")[1]))
    assert {f"1.{n}" for n in range(30, 38)} <= set(minors), "1.30-1.37 each have a row with an LTS track"
    for minor in minors:
        row = AKS_MINORS[minor]
        community_days = (row.community_support_end - row.generally_available).days
        lts_days = (row.lts_end - row.community_support_end).days
        assert 270 <= community_days <= 430, f"{minor}: community support is about 12 months after AKS GA"
        assert 300 <= lts_days <= 430, f"{minor}: LTS adds about one more year"


def test_every_creatable_minor_has_an_upstream_schema_to_validate_against() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}
    minors = set(creatable_minors("KubernetesOfficial", CATALOG_CHECKED_ON))
    minors |= set(creatable_minors("AKSLongTermSupport", CATALOG_CHECKED_ON))
    assert minors, "some minor must be creatable"
    for minor in sorted(minors):
        # ClusterConfig.schema_version is what aks_gpu_platform/plan/report.py validates rendered objects against.
        version = ClusterConfig.model_construct(kubernetes_version=minor).schema_version
        try:
            kubernetes_validate.validate(config_map, version, strict=True)
        except VersionNotSupportedError:
            pytest.fail(f"kubernetes-validate has no {version} schema: the plan could not validate a {minor} stack")
