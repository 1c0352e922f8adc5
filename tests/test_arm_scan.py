"""The planned Azure resources, exported as an ARM template, pass checkov's ARM checks: every failure
is fixed or skipped next to its resource with the reason.

One checkov run scans dev, prod and a tampered copy (checkov starts slowly); it lives in .venv-checkov.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.components.scan_exceptions import arm_scan_exception
from aks_gpu_platform.testing import Recording
from tests.checkov_scan import checkov_report
from tests.conftest import STACKS
from tools import arm

CLUSTER = "Microsoft.ContainerService/managedClusters"


@pytest.fixture(scope="module")
def templates(recordings: dict[str, Recording]) -> dict[str, dict[str, Any]]:
    return {stack: arm.arm_template(recordings[stack]) for stack in STACKS}


@pytest.fixture(scope="module")
def scan(templates: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """checkov's ARM report over dev, prod and `tampered` (prod with three insecure settings)."""
    folder = tmp_path_factory.mktemp("arm")
    for stack, template in templates.items():
        (folder / f"{stack}.json").write_text(json.dumps(template))
    tampered = copy.deepcopy(templates["prod"])
    for resource in tampered["resources"]:
        resource.pop("metadata", None)
        if resource["type"] == "Microsoft.ContainerRegistry/registries":
            resource["properties"]["adminUserEnabled"] = True
        if resource["type"] == CLUSTER:
            resource["properties"]["apiServerAccessProfile"] = {"enablePrivateCluster": False}
        if resource["type"] == "Microsoft.Storage/storageAccounts":
            resource["properties"]["networkAcls"]["defaultAction"] = "Allow"
    (folder / "tampered.json").write_text(json.dumps(tampered))
    return checkov_report(folder, "arm", quiet=False)["results"]


def _of(checks: list[dict[str, Any]], file: str) -> list[dict[str, Any]]:
    return [c for c in checks if Path(c["file_path"]).name == file]


def _is_cluster(check: dict[str, Any]) -> bool:
    return str(check["resource"]).startswith(f"{CLUSTER}.")  # checkov names a resource <type>.<name>


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


@pytest.mark.parametrize("stack", STACKS)
def test_the_planned_azure_resources_pass_checkov_or_skip_with_a_reason(scan: dict[str, Any], stack: str) -> None:
    failed = [(c["check_id"], c["resource"]) for c in _of(scan["failed_checks"], f"{stack}.json")]
    assert failed == [], f"{stack}: fix each finding or declare it next to the resource (arm_scan_exception)"
    on_cluster = {c["check_id"] for c in _of(scan["passed_checks"], f"{stack}.json") if _is_cluster(c)}
    assert {"CKV_AZURE_5", "CKV_AZURE_6", "CKV_AZURE_141", "CKV_AZURE_171"} <= on_cluster, (
        "RBAC, authorized API ranges, no local accounts and an upgrade channel were evaluated on the cluster"
    )
    skipped = _of(scan["skipped_checks"], f"{stack}.json")
    assert skipped, f"{stack}: the cluster's retired-dashboard check at least is skipped with its reason"
    for check in skipped:
        reason = str(check["check_result"].get("suppress_comment", ""))
        assert len(reason.strip()) >= 40, f"{check['check_id']} on {check['resource']}: a skip needs its reason"


def test_prod_is_checked_where_dev_explains_its_choice(scan: dict[str, Any]) -> None:
    def ids(checks: list[dict[str, Any]], file: str) -> set[str]:
        return {c["check_id"] for c in _of(checks, file) if _is_cluster(c)}

    conditional = {"CKV_AZURE_226", "CKV_AZURE_227"}  # ephemeral OS disk, encryption at host
    assert conditional <= ids(scan["skipped_checks"], "dev.json"), "dev declares why it runs without them"
    assert conditional <= ids(scan["passed_checks"], "prod.json"), "prod has them on, so the check must still run there"


def test_the_scan_catches_insecure_settings(scan: dict[str, Any]) -> None:
    failed = {c["check_id"] for c in _of(scan["failed_checks"], "tampered.json")}
    # ACR admin user on, API server open to every address, storage firewall open.
    assert {"CKV_AZURE_137", "CKV_AZURE_6", "CKV_AZURE_35"} <= failed, failed
    assert "CKV_AZURE_8" in failed, "without the template's skips, the declared exceptions fail again"


def test_an_exception_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="real reason"):
        arm_scan_exception("azure-native:storage:StorageAccount", "CKV_AZURE_33", "noisy")
