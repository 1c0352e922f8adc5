"""A stack deployed with the previous release updates in place: every old URN is taken over.

The fixtures are the URNs the last release registered for dev and prod
(`python -m tools.urns --stack <stack>` at that release). A URN the new program no longer reaches,
directly or through an alias, is a delete plus a create on `pulumi up`: the cluster, pools and
Lustre would be rebuilt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aks_gpu_platform.testing import RecordedResource, Recording
from tools.urns import takeover

FIXTURES = Path(__file__).parent.parent / "fixtures" / "urns"


# Deployed by the last release and deleted on purpose by this one, with the reason.
RETIRED = {
    "PodDisruptionBudget::upgrade-pdb-default-myapp-pdb": "a budget for a demo app no stack deploys",
    "RoleAssignment::monitoring-grafana-logs-reader": "Grafana reads no container logs unless grafana.containerLogs",
}


def released_urns(stack: str) -> list[str]:
    return [line for line in (FIXTURES / f"{stack}.txt").read_text().splitlines() if line]


def retired(urn: str) -> bool:
    return any(urn.endswith(suffix) for suffix in RETIRED)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_resource_of_the_last_release_is_taken_over(recordings: dict[str, Recording], stack: str) -> None:
    olds = released_urns(stack)
    assert len(olds) > 40, "the fixture must hold the released stack's resources"
    result = takeover(recordings[stack], olds, stack)
    missing = [urn for urn in result.missing(olds) if not retired(urn)]
    assert not missing, f"{stack}: these deployed resources would be deleted and recreated:\n" + "\n".join(missing)
    assert not result.claimed_twice, f"{stack}: two resources claim the same deployed URN: {result.claimed_twice}"
    kept = [urn for urn in olds if retired(urn) and urn not in result.missing(olds)]
    assert not kept, f"{stack}: a retired resource must really be gone: {kept}"


def _resource(urn: str, parent: str = "", specs: list[dict[str, object]] | None = None) -> RecordedResource:
    type_ = urn.split("::")[2].rsplit("$", 1)[-1]
    return RecordedResource(
        type=type_,
        name=urn.split("::", 3)[3],
        urn=urn,
        parent=parent,
        custom=True,
        inputs={},
        outputs={},
        protect=False,
        ignore_changes=[],
        replace_on_changes=[],
        delete_before_replace=False,
        retain_on_delete=False,
        depends_on=[],
        deleted_with="",
        provider="",
        alias_specs=specs or [],
    )


def test_a_component_moved_under_a_new_parent_needs_an_alias_and_its_children_inherit_it() -> None:
    stack, root = "dev", "urn:pulumi:dev::aks-gpu-platform::pulumi:pulumi:Stack::aks-gpu-platform-dev"
    olds = [
        "urn:pulumi:dev::aks-gpu-platform::my:index:Pool::gpu",
        "urn:pulumi:dev::aks-gpu-platform::my:index:Pool$azure-native:containerservice:AgentPool::gpu-pool",
    ]
    platform = "urn:pulumi:dev::aks-gpu-platform::pulumi:pulumi:Stack$my:index:Platform::platform"
    pool = "urn:pulumi:dev::aks-gpu-platform::pulumi:pulumi:Stack$my:index:Platform$my:index:Pool::gpu"
    child = (
        "urn:pulumi:dev::aks-gpu-platform::pulumi:pulumi:Stack$my:index:Platform$my:index:Pool"
        "$azure-native:containerservice:AgentPool::gpu-pool"
    )
    without = Recording(resources=[_resource(platform, root), _resource(pool, platform), _resource(child, pool)])
    assert takeover(without, olds, stack).missing(olds) == sorted(olds), "no alias: both would be replaced"

    aliased = Recording(
        resources=[
            _resource(platform, root),
            _resource(pool, platform, [{"name": "", "type": "", "parentUrn": "", "noParent": True}]),
            _resource(child, pool),
        ]
    )
    result = takeover(aliased, olds, stack)
    assert result.missing(olds) == [], "an alias to the old root parent reaches the pool and, inherited, its child"
    assert result.reached[olds[1]] == (
        "urn:pulumi:dev::aks-gpu-platform::my:index:Platform$my:index:Pool$azure-native:containerservice:AgentPool::gpu-pool"
    ), "the engine's URN carries the parent's whole type chain"
