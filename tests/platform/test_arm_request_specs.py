"""Every Azure request we write by hand matches its REST spec at the API version we send.

A generic `azure-native:resources:Resource` has no SDK types behind it: ARM refuses a wrong enum, and silently
drops a key its API version does not have. Each such body in dev, prod and the variants is checked against the
azure-rest-api-specs excerpt for its exact (provider, type, API version) (tests/upstream/arm_spec.py,
tests/fixtures/arm_specs/, each excerpt naming its spec file and commit). A body without an excerpt fails, so the
next hand-written body brings its spec.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aks_gpu_platform.components.gpu.aks_managed import managed_pool_name
from aks_gpu_platform.components.gpu.node_pool import azure_pool_name
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording
from tests.gpu.test_aks_managed import managed_config
from tests.gpu.test_scheduling import VARIANTS, variant_config
from tests.storage.test_netapp import PROD_NETAPP_SUBNET, with_netapp
from tests.upstream.arm_spec import create_only_paths, load_specs, request_problems

GENERIC = "azure-native:resources:Resource"
SPECS = load_specs()
FLEXIBLE_NETAPP = {"enabled": True, "serviceLevel": "Flexible", "sizeTiB": 2, "throughputMiBps": 256}


@pytest.fixture(scope="module")
def stacks(recordings: dict[str, Recording]) -> dict[str, Recording]:
    """dev, prod, the scheduling variants, AKS-managed GPU with a MIG pool, and a Flexible NetApp pool."""
    variants = {name: run_stack("dev", variant_config(name)) for name in VARIANTS}
    variants["aks-managed-mig"] = run_stack("dev", managed_config())
    variants["netapp-flexible"] = run_stack("prod", with_netapp("prod", FLEXIBLE_NETAPP, PROD_NETAPP_SUBNET))
    return {**recordings, **variants}


def _generic(recording: Recording) -> list[RecordedResource]:
    return recording.of_type(GENERIC)


def test_every_generic_resource_body_matches_its_rest_spec(stacks: dict[str, Recording]) -> None:
    checked = {name: _generic(recording) for name, recording in stacks.items()}
    assert checked["aks-managed-mig"] and checked["netapp-flexible"], "the variants carry hand-written bodies"
    problems = [
        f"{stack} {r.name}: {p}" for stack, rs in checked.items() for r in rs for p in request_problems(r.inputs, SPECS)
    ]
    assert not problems, "ARM would refuse these bodies or silently drop keys:\n" + "\n".join(problems)


def test_every_create_only_property_sent_replaces_the_resource_when_it_changes(
    stacks: dict[str, Recording],
) -> None:
    """A property the spec marks create-only (`x-ms-mutability` without "update") changed in place is an update
    the service refuses or ignores; a generic resource has no schema to tell Pulumi, so the program must say so."""
    checked = {**stacks, "fleet": run_stack("fleet")}
    found: set[str] = set()
    missing: list[str] = []
    for stack, recording in checked.items():
        for resource in _generic(recording):
            for path in create_only_paths(resource.inputs, SPECS):
                found.add(f"{resource.inputs['resourceType']} {path}")
                if not any(path == r or path.startswith(f"{r}.") for r in resource.replace_on_changes):
                    missing.append(f"{stack} {resource.name}: {path}")
                elif not resource.delete_before_replace:
                    missing.append(f"{stack} {resource.name}: {path} replaces, but beside itself (same Azure ID)")
    assert {
        "autoUpgradeProfiles properties.updateStrategyId",
        "autoUpgradeProfiles properties.nodeImageSelection.type",
        "members properties.clusterResourceId",
    } <= found, f"the spec excerpts mark the Fleet's create-only properties: {sorted(found)}"
    assert not missing, "create-only properties updated in place:\n" + "\n".join(missing)


def _one(recording: Recording, resource_type: str) -> dict[str, Any]:
    (found,) = [r for r in _generic(recording) if r.inputs["resourceType"] == resource_type and "mig" in r.name] or [
        r for r in _generic(recording) if r.inputs["resourceType"] == resource_type
    ]
    return copy.deepcopy(found.inputs)


def test_the_contract_refuses_the_flexible_pool_at_2025_01_01(stacks: dict[str, Recording]) -> None:
    """The body sent before the fix: API 2025-01-01 has no Flexible level and no customThroughputMibps."""
    body = _one(stacks["netapp-flexible"], "capacityPools")
    body["apiVersion"] = "2025-01-01"
    problems = "\n".join(request_problems(body, SPECS))
    assert "'Flexible' is not one of" in problems, "2025-01-01 would refuse the Flexible service level"
    assert "customThroughputMibps: not in the spec" in problems, "2025-01-01 would drop the pool throughput"


def test_the_contract_refuses_a_single_mig_pool_sent_as_gpu_instance_profile(stacks: dict[str, Recording]) -> None:
    """The body sent before the fix: top-level gpuInstanceProfile instead of nvidia.migProfiles."""
    body = _one(stacks["aks-managed-mig"], "agentPools")
    nvidia = body["properties"]["gpuProfile"]["nvidia"]
    assert nvidia.get("migStrategy") == "Single", "the variant's MIG pool uses the Single strategy"
    profile = nvidia.pop("migProfiles")[0]
    body["properties"]["gpuInstanceProfile"] = profile
    assert request_problems(body, SPECS) == [
        "properties.gpuProfile.nvidia.migProfiles: migStrategy Single needs exactly one profile"
    ]
    nvidia["migProfiles"] = [profile]
    assert request_problems(body, SPECS) == [
        "properties.gpuInstanceProfile: mutually exclusive with gpuProfile.nvidia.migProfiles"
    ]


def test_an_unknown_type_or_api_version_fails_until_its_spec_is_kept() -> None:
    problems = request_problems(
        {"resourceProviderNamespace": "Microsoft.Web", "resourceType": "sites", "apiVersion": "2024-04-01"}, SPECS
    )
    assert problems and "no spec excerpt" in problems[0], "a new hand-written body must bring its spec excerpt"


def test_managed_gpu_pools_are_replaced_create_before_delete(stacks: dict[str, Recording]) -> None:
    """azure-native deletes first when a named resource is replaced unless told otherwise; the hashed pool name
    differs on every replacement, so the new pool can exist before the old one is drained."""
    pools = [r for r in _generic(stacks["aks-managed-mig"]) if r.inputs["resourceType"] == "agentPools"]
    assert pools
    for pool in pools:
        assert pool.delete_before_replace_defined and not pool.delete_before_replace, (
            f"{pool.name}: a VM-size change would drain and delete the GPU pool before its replacement exists"
        )


# --- every field AKS cannot change in place renames the pool -------------------------------------------------------

SPOT = {"priority": "Spot", "spot": {"evictionPolicy": "Delete", "maxPrice": -1}}
BASE = {"name": "gpu", "vmSize": "Standard_NC24ads_A100_v4", "zones": ["1"], "minCount": 1, "maxCount": 1, **SPOT}
# Changes AKS refuses on an existing pool, each with where that is stated.
CREATE_ONLY = {
    "VM size (manage-node-pools: the VM size cannot change after creation)": {"vmSize": "Standard_NC48ads_A100_v4"},
    "OS disk type (spec OSDiskType: 'May not be changed after creation')": {
        "osDiskType": "Ephemeral",
        "osDiskSizeGb": 64,
    },
    "zones (availabilityZones are fixed at creation)": {"zones": ["2"]},
    "MIG profile (GPUInstanceProfile is set at creation)": {"migProfile": "MIG3g"},
    "Spot eviction policy (not updatable on an existing scale set)": {
        "spot": {"evictionPolicy": "Deallocate", "maxPrice": -1}
    },
    "priority (Spot vs Regular is a different scale set)": {"priority": "Regular", "spot": None},
    "taints (nodeTaints are applied at node creation)": {"taints": ["team=a:NoSchedule"]},
}


def _pool(**changes: Any) -> GpuPoolConfig:
    settings = {**BASE, **changes}
    return GpuPoolConfig.model_validate({k: v for k, v in settings.items() if v is not None})


@pytest.mark.parametrize("why", sorted(CREATE_ONLY))
def test_every_create_only_field_changes_the_pools_azure_name(why: str) -> None:
    base, changed = _pool(), _pool(**CREATE_ONLY[why])
    for mode in ("devicePlugin", "gpuOperator"):
        assert azure_pool_name(changed, mode) != azure_pool_name(base, mode), (
            f"{why}: AKS refuses the update; only a new name makes Pulumi create a new pool"
        )
    assert managed_pool_name(changed) != managed_pool_name(base), f"{why}: the managed pool too"
