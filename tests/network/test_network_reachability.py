"""Contract: every connection the platform configures across a network boundary is admitted by its target, from
the address its source really leaves from (tests/upstream/reachability.py, the model and its sources).

Stacks: dev, prod and the fleet as written, the scheduling variants, and each with the CI runner's /32 added the
way the deploy workflow adds it (tools/runner_access.py authorize).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.gpu.test_scheduling import VARIANTS, variant_config
from tests.upstream.reachability import (
    MANAGED_EGRESS,
    api_server_problems,
    egress_of,
    manager_edges,
    private_endpoint_problems,
)
from tools import REPO_ROOT
from tools.runner_access import authorize

# A GitHub-hosted runner's address for one run: in none of the stacks' configured ranges.
RUNNER = "192.0.2.77"
STACK_FILES = ("dev", "prod", "fleet")


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording]) -> dict[str, Recording]:
    found = {**recordings, "fleet": run_stack("fleet")}
    found |= {name: run_stack("dev", variant_config(name)) for name in VARIANTS}
    return found


@pytest.fixture(scope="module")
def with_runner() -> dict[str, Recording]:
    """Each stack file as the deploy workflow runs it: the runner's /32 authorized for the run."""
    found: dict[str, Recording] = {}
    for stack in STACK_FILES:
        outcome, config = authorize(copy.deepcopy(load_stack_file(stack, REPO_ROOT)), RUNNER)
        assert outcome == "added", f"{stack}: the runner address must be outside the configured ranges"
        found[stack] = run_stack(stack, config)
    return found


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet", *VARIANTS])
def test_every_configured_connection_is_admitted(stacks: dict[str, Recording], stack: str) -> None:
    problems = api_server_problems(stacks[stack]) + private_endpoint_problems(stacks[stack])
    assert not problems, f"{stack}: a green `pulumi up` with connections that are refused:\n" + "\n".join(problems)


@pytest.mark.parametrize("stack", STACK_FILES)
def test_the_ci_runner_reaches_every_api_server_it_deploys_to(with_runner: dict[str, Recording], stack: str) -> None:
    problems = api_server_problems(with_runner[stack], RUNNER)
    assert not problems, f"{stack}: the deploy cannot create in-cluster objects:\n" + "\n".join(problems)


def test_the_contract_sees_the_manager_dial_every_member(stacks: dict[str, Recording]) -> None:
    edges = manager_edges(stacks["fleet"])
    assert len(edges) == 2 and all(e.egress != MANAGED_EGRESS for e in edges), edges


def _reverted(recording: Recording, change: Any) -> Recording:
    copied = copy.deepcopy(recording)
    for resource in copied.resources:
        change(resource)
    return copied


def test_the_contract_catches_a_manager_on_an_aks_managed_egress(stacks: dict[str, Recording]) -> None:
    """The defect before the fix: the manager left through an IP AKS allocates, in no member's ranges."""

    def managed_egress(resource: Any) -> None:
        if resource.type.endswith(":ManagedCluster"):
            resource.inputs.get("networkProfile", {}).pop("loadBalancerProfile", None)
            access = resource.inputs.get("apiServerAccessProfile", {})
            access["authorizedIPRanges"] = [r for r in access.get("authorizedIPRanges", []) if not r.startswith("20.")]

    broken = _reverted(stacks["fleet"], managed_egress)
    assert (
        egress_of(broken, broken.one("azure-native:containerservice:ManagedCluster", "manager").inputs)
        == MANAGED_EGRESS
    )
    problems = api_server_problems(broken)
    assert len(problems) == 2 and all("MultiKueue cannot connect" in p for p in problems), problems


def test_the_contract_catches_a_manager_egress_ip_its_load_balancer_cannot_use(stacks: dict[str, Recording]) -> None:
    """A Basic (or dynamic, or IPv6) address never becomes a Standard load balancer's outbound IP: the manager has no
    egress the members admit."""

    def basic_sku(resource: Any) -> None:
        if resource.type == "azure-native:network:PublicIPAddress" and "manager-egress" in resource.name:
            resource.inputs["sku"] = {"name": "Basic", "tier": "Regional"}

    problems = api_server_problems(_reverted(stacks["fleet"], basic_sku))
    assert len(problems) == 2 and all("not Standard" in p for p in problems), problems


def test_the_contract_catches_a_member_that_does_not_admit_the_manager(stacks: dict[str, Recording]) -> None:
    def forget_manager(resource: Any) -> None:
        if resource.type.endswith(":ManagedCluster") and "jpe" in resource.name:
            access = resource.inputs["apiServerAccessProfile"]
            access["authorizedIPRanges"] = access["authorizedIPRanges"][:1]

    problems = api_server_problems(_reverted(stacks["fleet"], forget_manager))
    assert problems and all("jpe" in p for p in problems), problems


def test_the_contract_catches_a_private_endpoint_without_its_dns_link(recordings: dict[str, Recording]) -> None:
    broken = copy.deepcopy(recordings["prod"])
    broken.resources = [r for r in broken.resources if not r.type.endswith(":VirtualNetworkLink")]
    assert len(private_endpoint_problems(broken)) == 2, "pods would resolve the registry's public address"


def test_a_member_overriding_its_ranges_keeps_the_manager_and_the_runner_out(stacks: dict[str, Recording]) -> None:
    config = copy.deepcopy(load_stack_file("fleet", REPO_ROOT))
    member = config["aks-gpu-platform:fleet"]["members"][1]["platform"]
    member["cluster"]["apiServer"] = {"authorizedIpRanges": ["198.51.100.0/24"]}
    _, config = authorize(config, RUNNER)
    problems = api_server_problems(run_stack("fleet", config), RUNNER)
    assert any("CI runner" in p and "jpe" in p for p in problems), (
        "the runner's /32 goes to the top-level ranges only: a member that overrides them shuts the deploy out"
    )
