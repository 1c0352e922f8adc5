"""Upgrade policy: channels, maintenance windows with freezes, LTS, per-pool upgrade settings, PDBs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from aks_gpu_platform.components.cluster.agent_pools import pool_upgrade_settings
from aks_gpu_platform.components.upgrade.disruption_budget import pod_disruption_budget
from aks_gpu_platform.components.upgrade.policy import UpgradePolicy, UpgradePolicyArgs
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.upgrade.section import DisruptionBudgetConfig, UpgradeConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import STACKS, assert_rejected, cluster_handle, set_path, settings_of
from tools import REPO_ROOT

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
# The maintenance configuration names AKS binds to the auto-upgrade and node-OS channels; a window under any
# other name gates nothing (MicrosoftDocs/azure-aks-docs articles/aks/planned-maintenance.md, "Schedule
# configuration types for planned maintenance", commit 04921f5f, ms.date 2025-12-19). Spelled out, not imported:
# the test checks the program against AKS, not against itself.
AUTO_UPGRADE_SCHEDULE = "aksManagedAutoUpgradeSchedule"
NODE_OS_UPGRADE_SCHEDULE = "aksManagedNodeOSUpgradeSchedule"


def _upgrade(stack_config: Callable[[str], dict[str, Any]], stack: str) -> dict[str, Any]:
    return settings_of(stack_config(stack))["upgrade"]


@pytest.mark.parametrize("stack", STACKS)
def test_both_channels_are_set_from_config(
    recordings: dict[str, Recording], stack_config: Callable[[str], dict[str, Any]], stack: str
) -> None:
    upgrade = _upgrade(stack_config, stack)
    profile = recordings[stack].one(CLUSTER).inputs["autoUpgradeProfile"]
    assert profile["upgradeChannel"] == upgrade["autoUpgradeChannel"] != "none", "Azure must keep patching"
    assert profile["nodeOSUpgradeChannel"] == upgrade["nodeOsUpgradeChannel"] == "NodeImage", (
        "node images must be rolled by AKS inside the node-OS window"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_both_maintenance_windows_exist_at_night_for_at_least_four_hours(
    recordings: dict[str, Recording], stack_config: Callable[[str], dict[str, Any]], stack: str
) -> None:
    recording = recordings[stack]
    upgrade = _upgrade(stack_config, stack)
    configs = {m.inputs["configName"]: m for m in recording.of_type(MAINTENANCE)}
    assert set(configs) == {AUTO_UPGRADE_SCHEDULE, NODE_OS_UPGRADE_SCHEDULE}, (
        "AKS applies a window to a channel by these names only: under another name upgrades start at any hour"
    )
    cluster = recording.one(CLUSTER)
    for config_name, key in (
        (AUTO_UPGRADE_SCHEDULE, "autoUpgradeWindow"),
        (NODE_OS_UPGRADE_SCHEDULE, "nodeOsUpgradeWindow"),
    ):
        m = configs[config_name]
        window = m.inputs["maintenanceWindow"]
        assert m.inputs["resourceName"] == cluster.outputs["name"], "the window must belong to this cluster"
        assert m.deleted_with == cluster.urn, "the window goes with its cluster"
        assert window["durationHours"] >= 4, "AKS refuses windows under 4 hours"
        assert window["utcOffset"] == "+09:00", "windows are planned in Korean local time"
        assert window["startTime"] == upgrade[key]["startTime"]
        assert int(window["startTime"][:2]) < 6, "upgrades start at night local time"
        schedule = upgrade[key]["schedule"]
        assert list(window["schedule"]) == [schedule], "exactly one recurrence, as configured"


def test_dev_rolls_node_images_nightly_and_the_cluster_weekly(dev_recording: Recording) -> None:
    configs = {m.inputs["configName"]: m.inputs["maintenanceWindow"] for m in dev_recording.of_type(MAINTENANCE)}
    assert configs[NODE_OS_UPGRADE_SCHEDULE]["schedule"] == {"daily": {"intervalDays": 1}}
    assert configs[AUTO_UPGRADE_SCHEDULE]["schedule"] == {"weekly": {"dayOfWeek": "Tuesday", "intervalWeeks": 1}}


def test_prod_freezes_upgrades_for_the_training_campaign(
    prod_recording: Recording, stack_config: Callable[[str], dict[str, Any]]
) -> None:
    freezes = _upgrade(stack_config, "prod")["freezes"]
    expected = [{"start": f["start"], "end": f["end"]} for f in freezes]
    assert expected, "prod must carry the campaign freeze"
    assert prod_recording.of_type(MAINTENANCE), "prod schedules its upgrades"
    for m in prod_recording.of_type(MAINTENANCE):
        assert m.inputs["maintenanceWindow"]["notAllowedDates"] == expected, (
            f"{m.inputs['configName']}: neither Kubernetes nor node-image upgrades may start during a campaign"
        )


def test_prod_is_premium_with_long_term_support_on_the_patch_channel(prod_recording: Recording) -> None:
    i = prod_recording.one(CLUSTER).inputs
    assert i["sku"]["tier"] == "Premium", "LTS exists only on the Premium tier"
    assert i["supportPlan"] == "AKSLongTermSupport"
    assert i["autoUpgradeProfile"]["upgradeChannel"] == "patch", "Microsoft pairs LTS with the patch channel"


def test_dev_stays_on_the_cheaper_tier(dev_recording: Recording) -> None:
    i = dev_recording.one(CLUSTER).inputs
    assert i["sku"]["tier"] == "Standard" and i["supportPlan"] == "KubernetesOfficial"


@pytest.mark.parametrize("stack", STACKS)
def test_system_and_cpu_pools_surge(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    system = recording.one(CLUSTER).inputs["agentPoolProfiles"][0]["upgradeSettings"]
    cpu = recording.one(AGENT_POOL, "cpu").inputs["upgradeSettings"]
    for where, settings in (("system", system), ("cpu", cpu)):
        assert settings["maxSurge"] == "33%", f"{where}: cheap CPU nodes surge so capacity never drops"
        assert "maxUnavailable" not in settings, f"{where}: surging pools keep every node serving"
        assert 1 <= settings["drainTimeoutInMinutes"] <= 1440


def test_prod_cpu_pool_soaks_between_nodes(prod_recording: Recording) -> None:
    assert prod_recording.one(AGENT_POOL, "cpu").inputs["upgradeSettings"]["nodeSoakDurationInMinutes"] == 5


def gpu_pool_upgrade_settings(upgrade: dict[str, Any]) -> dict[str, Any]:
    return dict(pool_upgrade_settings(validate_section(UpgradeConfig, upgrade, source="test").gpu_pools))


def test_gpu_pools_default_to_no_surge_one_unavailable_long_drain_and_schedule() -> None:
    settings: dict[str, Any] = dict(gpu_pool_upgrade_settings({}))
    assert settings["max_surge"] == "0", "a GPU surge needs spare GPU quota the subscription may not have"
    assert settings.get("max_unavailable") == "1", "without surge one node at a time must go down instead"
    assert settings.get("drain_timeout_in_minutes", 0) >= 60, "training jobs need well over 30 min to checkpoint"
    assert settings.get("undrainable_node_behavior") == "Schedule", (
        "without a surge node AKS has nothing to quarantine a blocked node behind; it goes back into service"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_stack_gpu_pool_settings_come_from_config(stack_config: Callable[[str], dict[str, Any]], stack: str) -> None:
    gpu = _upgrade(stack_config, stack)["gpuPools"]
    settings: dict[str, Any] = dict(gpu_pool_upgrade_settings(_upgrade(stack_config, stack)))
    assert (settings["max_surge"], settings.get("max_unavailable")) == ("0", "1")
    assert settings.get("drain_timeout_in_minutes") == gpu["drainTimeoutInMinutes"] > 30
    assert settings.get("undrainable_node_behavior") == gpu.get("undrainableNodeBehavior", "Schedule")


def test_a_gpu_surge_is_used_only_when_the_config_affords_it() -> None:
    upgrade = {"gpuPools": {"maxSurge": "1", "undrainableNodeBehavior": "Cordon"}}
    settings: dict[str, Any] = dict(gpu_pool_upgrade_settings(upgrade))
    assert settings["max_surge"] == "1", "an explicit surge means the quota for one more GPU node exists"
    assert "max_unavailable" not in settings, "AKS takes maxUnavailable only with maxSurge 0"
    assert settings.get("undrainable_node_behavior") == "Cordon", "with a surge node a blocked node can be quarantined"


@pytest.mark.parametrize("stack", STACKS)
def test_cordon_is_set_only_on_pools_that_surge(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    rolled = [("system", recording.one(CLUSTER).inputs["agentPoolProfiles"][0]["upgradeSettings"])]
    rolled += [(p.name, p.inputs["upgradeSettings"]) for p in recording.of_type(AGENT_POOL)]
    assert len(rolled) >= 3, "the system, CPU and GPU pools all carry upgrade settings"
    for pool, settings in rolled:
        if settings["undrainableNodeBehavior"] == "Cordon":
            assert settings["maxSurge"].rstrip("%") != "0", (
                f"{pool}: AKS keeps one surge node per cordoned node (maxBlockedNodes defaults to maxSurge); "
                "with maxSurge 0 a blocked node cannot be quarantined as docs/upgrades.md promises"
            )


@pytest.mark.parametrize("stack", STACKS)
def test_with_a_channel_on_the_version_fields_azure_moves_are_ignored(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    assert "kubernetesVersion" in recording.one(CLUSTER).ignore_changes, "re-sending the minor would be a downgrade"
    assert "orchestratorVersion" in recording.one(AGENT_POOL, "cpu").ignore_changes


# An application's budget, as a user lists it in `upgrade.disruptionBudgets` (the design notes' example).
APP_BUDGET = {
    "name": "myapp-pdb",
    "namespace": "default",
    "selector": {"app": "myapp"},
    "minAvailable": 2,
    "replicas": 3,
}


@pytest.fixture(scope="module")
def pinned_recording() -> Recording:
    """The dev stack with auto-upgrade off, node images unmanaged (the pinned version drives everything) and an
    application's disruption budget."""
    config = load_stack_file("dev", REPO_ROOT)
    config["aks-gpu-platform:upgrade"]["autoUpgradeChannel"] = "none"
    config["aks-gpu-platform:upgrade"]["nodeOsUpgradeChannel"] = "Unmanaged"
    config["aks-gpu-platform:upgrade"]["disruptionBudgets"] = [APP_BUDGET]
    return run_stack("dev", config)


def _dev_minor() -> str:
    return str(load_stack_file("dev", REPO_ROOT)["aks-gpu-platform:cluster"]["kubernetesVersion"])


def test_with_the_channel_off_the_pinned_version_drives_cluster_and_pools(pinned_recording: Recording) -> None:
    cluster = pinned_recording.one(CLUSTER)
    pool = pinned_recording.one(AGENT_POOL, "cpu")
    assert cluster.inputs["kubernetesVersion"] == _dev_minor()
    assert "kubernetesVersion" not in cluster.ignore_changes, "nothing else moves the version, so config must"
    assert pool.inputs["orchestratorVersion"] == _dev_minor()
    assert "orchestratorVersion" not in pool.ignore_changes
    assert cluster.inputs["autoUpgradeProfile"]["upgradeChannel"] == "none"


def test_without_managed_upgrades_no_maintenance_window_is_created(pinned_recording: Recording) -> None:
    assert pinned_recording.of_type(MAINTENANCE) == [], "a window for a channel that is off governs nothing"


def test_a_configured_budget_leaves_a_pod_evictable_and_passes_the_schema(pinned_recording: Recording) -> None:
    recording = pinned_recording
    policy = recording.one("aks-gpu-platform:index:UpgradePolicy")
    pdbs = [p for p in recording.of_type(PDB) if p.parent == policy.urn]
    assert [(p.inputs["metadata"]["namespace"], p.inputs["metadata"]["name"]) for p in pdbs] == [
        (APP_BUDGET["namespace"], APP_BUDGET["name"])
    ], "each configured budget becomes one PDB"
    pdb = pdbs[0]
    spec = pdb.inputs["spec"]
    assert spec["minAvailable"] < APP_BUDGET["replicas"], "minAvailable equal to replicas blocks every drain"
    assert spec["selector"] == {"matchLabels": APP_BUDGET["selector"]}
    assert pdb.deleted_with == recording.one(CLUSTER).urn, "in-cluster objects go with the cluster"
    assert pdb.provider.startswith(recording.one("pulumi:providers:kubernetes").urn), "the PDB must target this cluster"
    schema = load_platform_config(settings_of(load_stack_file("dev", REPO_ROOT))).cluster.schema_version
    verdict = validate_object(kubernetes_object(pdb), schema)
    assert verdict == ("valid", ""), f"{APP_BUDGET['name']}: {verdict}"


def _pod_labels(recording: Recording) -> list[tuple[str, dict[str, str]]]:
    """(namespace, labels) of the pods every rendered workload makes."""
    found: list[tuple[str, dict[str, str]]] = []
    for resource in recording.kubernetes_objects():
        template = (resource.inputs.get("spec") or {}).get("template") or {}
        labels = (template.get("metadata") or {}).get("labels")
        if labels:
            found.append(((resource.inputs.get("metadata") or {}).get("namespace", "default"), labels))
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_budget_guards_a_workload_the_stack_deploys(recordings: dict[str, Recording], stack: str) -> None:
    # A budget for pods nobody runs is a demo object in a real cluster (the old `default/myapp-pdb`).
    recording = recordings[stack]
    pods = _pod_labels(recording)
    for pdb in recording.of_type(PDB):
        meta, selector = pdb.inputs["metadata"], pdb.inputs["spec"]["selector"]["matchLabels"]
        guarded = [
            labels
            for namespace, labels in pods
            if namespace == meta["namespace"] and selector.items() <= labels.items()
        ]
        assert guarded, f"{stack}: PDB {meta['namespace']}/{meta['name']} selects no pod the stack deploys"


def _helper_program(min_available: int, replicas: int) -> Callable[[], Any]:
    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        budget = {"name": "api", "namespace": "serving", "selector": {"app": "api"}}
        budget |= {"minAvailable": min_available, "replicas": replicas}
        validated = validate_section(DisruptionBudgetConfig, budget, source="PodDisruptionBudget api")
        pod_disruption_budget("api-pdb", validated, provider, provider)

    return program


def test_the_helper_renders_a_valid_budget_for_a_users_workload(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:
    pdb = build(_helper_program(1, 2)).one(PDB)
    assert pdb.inputs["metadata"]["namespace"] == "serving"
    assert pdb.inputs["spec"] == {"minAvailable": 1, "selector": {"matchLabels": {"app": "api"}}}
    assert pdb.deleted_with and pdb.provider, "in-cluster objects use the cluster's provider and go with it"
    assert validate_object(
        kubernetes_object(pdb),
        load_platform_config(settings_of(load_stack_file("dev", REPO_ROOT))).cluster.schema_version,
    ) == ("valid", "")


def test_the_helper_refuses_an_unsatisfiable_budget(build: Callable[[Callable[[], Any]], Recording]) -> None:
    with pytest.raises(ConfigError) as caught:
        build(_helper_program(3, 3))
    assert "minAvailable:" in str(caught.value) and "below replicas (3)" in str(caught.value), (
        "a PDB that no drain can satisfy stalls every upgrade"
    )


def test_upgrade_policy_builds_directly_with_args(build: Callable[[Callable[[], Any]], Recording]) -> None:
    recording = build(
        lambda: UpgradePolicy(
            "up",
            {
                "cluster": cluster_handle(),
                "settings": validate_section(
                    UpgradeConfig,
                    {
                        "autoUpgradeWindow": {
                            "schedule": "daily",
                            "startTime": "22:30",
                            "durationHours": 8,
                            "utcOffset": "-07:00",
                        },
                        "nodeOsUpgradeChannel": "SecurityPatch",
                    },
                    source="test",
                ),
            },
        )
    )
    windows = {m.inputs["configName"]: m.inputs["maintenanceWindow"] for m in recording.of_type(MAINTENANCE)}
    assert windows[AUTO_UPGRADE_SCHEDULE] == {
        "schedule": {"daily": {"intervalDays": 1}},
        "startTime": "22:30",
        "durationHours": 8,
        "utcOffset": "-07:00",
    }
    assert "notAllowedDates" not in windows[NODE_OS_UPGRADE_SCHEDULE], "no freeze configured, none sent"
    assert all(m.name.startswith("up-") for m in recording.of_type(MAINTENANCE)), "children carry the instance name"


def _at(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda settings: set_path(settings, path, value)


def _budget(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """The application budget with one key broken."""
    return lambda settings: set_path(settings, "upgrade.disruptionBudgets", [{**APP_BUDGET, key: value}])


# (why, how to break the stack config, field path the message must name, text it must contain)
BROKEN: list[tuple[str, str, Callable[[dict[str, Any]], None], str, str]] = [
    ("LTS on Standard", "prod", _at("upgrade.tier", "Standard"), "upgrade.tier", "requires tier Premium"),
    (
        "LTS on the stable channel",
        "prod",
        _at("upgrade.autoUpgradeChannel", "stable"),
        "upgrade.autoUpgradeChannel",
        "pairs with the patch channel",
    ),
    (
        "window under 4 hours",
        "dev",
        _at("upgrade.autoUpgradeWindow.durationHours", 3),
        "upgrade.autoUpgradeWindow.durationHours",
        "greater than or equal to 4",
    ),
    (
        "window over 24 hours",
        "dev",
        _at("upgrade.nodeOsUpgradeWindow.durationHours", 25),
        "upgrade.nodeOsUpgradeWindow.durationHours",
        "less than or equal to 24",
    ),
    (
        "bad utcOffset",
        "dev",
        _at("upgrade.nodeOsUpgradeWindow.utcOffset", "+9"),
        "upgrade.nodeOsUpgradeWindow.utcOffset",
        "pattern",
    ),
    (
        "utcOffset out of range",
        "dev",
        _at("upgrade.autoUpgradeWindow.utcOffset", "+15:00"),
        "upgrade.autoUpgradeWindow.utcOffset",
        "pattern",
    ),
    (
        "bad start time",
        "dev",
        _at("upgrade.autoUpgradeWindow.startTime", "25:00"),
        "upgrade.autoUpgradeWindow.startTime",
        "pattern",
    ),
    (
        "freeze ending before it starts",
        "prod",
        _at("upgrade.freezes.0.end", "2027-01-01"),
        "upgrade.freezes[0].end",
        "must not be before start",
    ),
    (
        "surge and unavailable on the CPU pool",
        "dev",
        _at("upgrade.cpuPool.maxUnavailable", "1"),
        "upgrade.cpuPool.maxUnavailable",
        "not both",
    ),
    (
        "surge and unavailable on the GPU pools",
        "prod",
        _at("upgrade.gpuPools.maxSurge", "1"),
        "upgrade.gpuPools.maxUnavailable",
        "not both",
    ),
    (
        "zero surge and nothing unavailable",
        "dev",
        _at("upgrade.cpuPool.maxSurge", "0"),
        "upgrade.cpuPool.maxUnavailable",
        "at least 1",
    ),
    ("surge over 100%", "dev", _at("upgrade.cpuPool.maxSurge", "150%"), "upgrade.cpuPool.maxSurge", "at most 100%"),
    (
        "maxUnavailable on the system pool",
        "dev",
        _at("upgrade.systemPool.maxUnavailable", "1"),
        "upgrade.systemPool.maxUnavailable",
        "not allowed on the system pool",
    ),
    (
        "drain timeout over a day",
        "prod",
        _at("upgrade.gpuPools.drainTimeoutInMinutes", 1441),
        "upgrade.gpuPools.drainTimeoutInMinutes",
        "less than or equal to 1440",
    ),
    (
        "soak over 30 minutes",
        "prod",
        _at("upgrade.gpuPools.nodeSoakDurationInMinutes", 31),
        "upgrade.gpuPools.nodeSoakDurationInMinutes",
        "less than or equal to 30",
    ),
    (
        "Cordon on GPU pools that roll without surge",
        "dev",
        _at("upgrade.gpuPools.undrainableNodeBehavior", "Cordon"),
        "upgrade.gpuPools.undrainableNodeBehavior",
        "use Schedule, or set maxSurge to 1 or more",
    ),
    (
        "Cordon on a CPU pool that takes nodes down instead of surging",
        "dev",
        lambda s: s["upgrade"]["cpuPool"].update(maxSurge="0", maxUnavailable="1", undrainableNodeBehavior="Cordon"),
        "upgrade.cpuPool.undrainableNodeBehavior",
        "maxBlockedNodes = maxSurge",
    ),
    (
        "unknown undrainable behaviour",
        "dev",
        _at("upgrade.gpuPools.undrainableNodeBehavior", "Evict"),
        "upgrade.gpuPools.undrainableNodeBehavior",
        "'Cordon' or 'Schedule'",
    ),
    (
        "PDB minAvailable equal to replicas",
        "dev",
        _budget("minAvailable", 3),
        "upgrade.disruptionBudgets[0].minAvailable",
        "must be below replicas (3)",
    ),
    (
        "PDB on a single replica",
        "dev",
        _budget("replicas", 1),
        "upgrade.disruptionBudgets[0].replicas",
        "greater than or equal to 2",
    ),
    (
        "PDB with an empty selector",
        "dev",
        _budget("selector", {}),
        "upgrade.disruptionBudgets[0].selector",
        "at least 1",
    ),
]


@pytest.mark.parametrize(("why", "stack", "breaker", "field", "hint"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_upgrade_setting_is_rejected_naming_the_field(
    stack_config: Callable[[str], dict[str, Any]],
    why: str,
    stack: str,
    breaker: Callable[[dict[str, Any]], None],
    field: str,
    hint: str,
) -> None:
    settings = settings_of(stack_config(stack))
    breaker(settings)
    assert_rejected(settings, why, field, hint)


@pytest.mark.parametrize(("surge", "fits"), [("33%", True), ("100%", False)])
def test_the_node_subnet_must_hold_each_pools_upgrade_surge(
    stack_config: Callable[[str], dict[str, Any]], surge: str, fits: bool
) -> None:
    settings = settings_of(stack_config("dev"))
    settings["network"]["subnets"]["nodes"] = "10.40.0.0/27"  # 27 usable addresses
    settings["cpuPool"]["maxCount"] = 12  # 18 nodes at most, +1 system surge, +4 or +12 CPU surge, GPU surges none
    settings["upgrade"]["cpuPool"]["maxSurge"] = surge
    if fits:
        assert load_platform_config(settings).upgrade.cpu_pool.surge_nodes(12) == 4, "33% of 12 rounds up to 4"
        return
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert "network.subnets.nodes:" in str(caught.value) and "need 31" in str(caught.value), (
        "a surge the subnet cannot address fails the upgrade halfway"
    )


def test_platform_budgets_are_rendered_with_the_clusters_provider(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:
    budget = {"name": "api", "namespace": "serving", "selector": {"app": "api"}, "minAvailable": 1, "replicas": 2}

    def run() -> None:
        args: UpgradePolicyArgs = {
            "cluster": cluster_handle(),
            "settings": UpgradeConfig(),
            "platform_budgets": [validate_section(DisruptionBudgetConfig, budget, source="test")],
        }
        UpgradePolicy("up", args)

    recording = build(run)
    pdb = recording.one(PDB)
    assert pdb.inputs["spec"]["minAvailable"] == 1 and pdb.name == "up-pdb-serving-api"
    assert pdb.provider.startswith(recording.one("pulumi:providers:kubernetes").urn), (
        "a PDB created through another provider would land in another cluster"
    )


def _gpu_pools(recording: Recording) -> list[Any]:
    pools = [p for p in recording.of_type(AGENT_POOL) if p.inputs["nodeLabels"].get("pool") == "gpu"]
    assert pools, "every stack has at least one GPU pool"
    return pools


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_pool_rolls_without_surge_with_a_long_drain_and_schedule(
    recordings: dict[str, Recording], stack_config: Callable[[str], dict[str, Any]], stack: str
) -> None:
    gpu = _upgrade(stack_config, stack)["gpuPools"]
    for pool in _gpu_pools(recordings[stack]):
        settings = pool.inputs["upgradeSettings"]
        assert (settings["maxSurge"], settings["maxUnavailable"]) == ("0", "1"), (
            f"{pool.name}: no spare GPU quota is needed to upgrade"
        )
        assert settings["drainTimeoutInMinutes"] == gpu["drainTimeoutInMinutes"] > 30, (
            f"{pool.name}: training jobs need time to checkpoint"
        )
        assert settings["undrainableNodeBehavior"] == "Schedule", (
            f"{pool.name}: without a surge node a blocked GPU node goes back into service with its job"
        )
        assert "orchestratorVersion" in pool.ignore_changes, "auto-upgrade moves the GPU pool's version too"


def test_with_the_channel_off_gpu_pools_follow_the_pinned_version(pinned_recording: Recording) -> None:
    for pool in _gpu_pools(pinned_recording):
        assert pool.inputs["orchestratorVersion"] == _dev_minor()
        assert "orchestratorVersion" not in pool.ignore_changes, f"{pool.name}: the pinned version drives the pool"
