"""The planned Azure resources as an ARM template, the form checkov's ARM checks read (test_checkov.py scans it):
every resource is in it, at the API version the SDK calls and with ARM's field placement.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from aks_gpu_platform.components.shared.scan_exceptions import arm_scan_exception
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS
from tools import arm

CLUSTER = "Microsoft.ContainerService/managedClusters"


@pytest.fixture(scope="module")
def templates(recordings: dict[str, Recording]) -> dict[str, dict[str, Any]]:
    return {stack: arm.arm_template(recordings[stack]) for stack in STACKS}


def test_every_planned_azure_resource_is_in_the_template(
    recordings: dict[str, Recording], templates: dict[str, dict[str, Any]]
) -> None:
    for stack in STACKS:
        planned = arm.azure_resources(recordings[stack])
        resources = templates[stack]["resources"]
        assert planned and len(resources) == len(planned), f"{stack}: a resource left out is never scanned"
        for resource in resources:
            assert re.fullmatch(r"Microsoft\.\w+(/\w+)+", resource["type"]), resource["type"]
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}(-preview)?", resource["apiVersion"]), resource
            assert resource["name"].count("/") == resource["type"].count("/") - 1, (
                f"{resource['type']}: ARM names a child resource parent/child"
            )


def test_the_cluster_carries_the_api_version_the_sdk_calls_and_arm_field_placement(
    templates: dict[str, dict[str, Any]],
) -> None:
    [cluster] = [r for r in templates["prod"]["resources"] if r["type"] == CLUSTER]
    # pulumi-azure-native 3.29 ManagedCluster: "Uses Azure REST API version 2025-09-01".
    assert cluster["apiVersion"] == "2025-09-01"
    assert {"location", "sku", "identity", "tags"} <= set(cluster) and "resourceGroupName" not in cluster["properties"]
    assert cluster["properties"]["apiServerAccessProfile"]["authorizedIPRanges"], "settings sit under properties"
    assert isinstance(cluster["identity"]["userAssignedIdentities"], dict), "ARM keys identities by resource ID"
    [account] = [r for r in templates["prod"]["resources"] if r["type"] == "Microsoft.Storage/storageAccounts"]
    assert account["properties"]["networkAcls"]["defaultAction"] == "Deny", "ARM's name of networkRuleSet"


def test_an_unmapped_azure_type_stops_the_export(recordings: dict[str, Recording]) -> None:
    resource = copy.copy(arm.azure_resources(recordings["dev"])[0])
    resource.type = "azure-native:compute:VirtualMachine"
    with pytest.raises(arm.UnmappedTypeError, match="compute:VirtualMachine"):
        arm.arm_resource(resource)


def test_an_exception_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="real reason"):
        arm_scan_exception("azure-native:storage:StorageAccount", "CKV_AZURE_33", "noisy")
