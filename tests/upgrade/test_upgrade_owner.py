"""Contract: one owner per upgrade (tests/upstream/upgrade_owner.py, the simulator and its sources), over dev, prod, the
fleet and the scheduling variants."""

from __future__ import annotations

import copy

import pytest

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from tests.gpu.test_scheduling import VARIANTS, variant_config
from tests.upstream.upgrade_owner import KUBERNETES, NODE_IMAGE, owner_problems, ownerships


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording]) -> dict[str, Recording]:
    found = {**recordings, "fleet": run_stack("fleet")}
    return found | {name: run_stack("dev", variant_config(name)) for name in VARIANTS}


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet", *VARIANTS])
def test_each_upgrade_of_each_cluster_has_one_owner_and_its_window(stacks: dict[str, Recording], stack: str) -> None:
    problems = owner_problems(stacks[stack])
    assert not problems, f"{stack}:\n" + "\n".join(problems)


def test_fleet_members_are_the_fleet_s_and_the_manager_is_aks_s(stacks: dict[str, Recording]) -> None:
    owners = {(o.cluster, o.kind): o.owners for o in ownerships(stacks["fleet"])}
    for member in ("aks-gpu-fleet-dev-krc", "aks-gpu-fleet-dev-jpe"):
        assert owners[(member, KUBERNETES)] == ("fleet:kubernetes",)
        assert owners[(member, NODE_IMAGE)] == ("fleet:node-image",)
    assert owners[("aks-fleet-mgr-dev", KUBERNETES)] == ("aks:patch",), "the manager is no Fleet member"


def test_the_contract_catches_members_whose_aks_channels_race_the_fleet(stacks: dict[str, Recording]) -> None:
    """The defect before the fix: members kept the shared `patch` and `NodeImage` channels."""
    broken = copy.deepcopy(stacks["fleet"])
    for cluster in broken.of_type("azure-native:containerservice:ManagedCluster"):
        if "mgr" not in cluster.name:
            cluster.inputs["autoUpgradeProfile"] = {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    problems = owner_problems(broken)
    assert len([p for p in problems if "exactly one" in p]) == 4, problems


def test_the_contract_catches_a_fleet_member_without_windows_or_version_ignore(stacks: dict[str, Recording]) -> None:
    """The other half of the defect: channels off took the windows and the version ignore rule with them."""
    broken = copy.deepcopy(stacks["fleet"])
    broken.resources = [
        r for r in broken.resources if not (r.type.endswith(":MaintenanceConfiguration") and "-krc-" in r.name)
    ]
    for resource in broken.resources:
        if resource.type.endswith(":AgentPool") and "-krc-" in resource.name:
            resource.ignore_changes = [f for f in resource.ignore_changes if f != "orchestratorVersion"]
    problems = owner_problems(broken)
    assert any("aksManagedAutoUpgradeSchedule" in p for p in problems), problems
    assert any("aksManagedNodeOSUpgradeSchedule" in p for p in problems), problems
    assert any("orchestratorVersion" in p for p in problems), problems
