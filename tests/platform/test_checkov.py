"""checkov scans what the stacks plan: zero failures, every skip carries its reason, tampered copies fail.

One checkov run covers every scan (checkov spends 3-4 s starting up): dev's and prod's rendered Kubernetes
objects and ARM templates, the objects only a variant renders (NetApp Files, GPU validation), an unhardened
pod and a tampered prod template. checkov pins packages apart from the project's, so it runs from
.venv-checkov (`make checkov-venv`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.render import render_and_validate
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS
from tests.gpu.test_gpu_validation import validated_config
from tests.harness.checkov_scan import checkov_reports
from tests.storage.test_netapp import PROD_NETAPP_SUBNET, with_netapp
from tools import arm

UNHARDENED = "unhardened"
TAMPERED = "tampered"
CLUSTER = "Microsoft.ContainerService/managedClusters"
# Variants of prod and what marks their own objects' file names: the shipped stacks render none of these objects.
VARIANT_OBJECTS = {"netapp": "netapp-", "gpu-validation": "gpu-validation"}

Results = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def variants() -> dict[str, Recording]:
    return {
        "netapp": run_stack("prod", with_netapp("prod", {"enabled": True}, PROD_NETAPP_SUBNET)),
        "gpu-validation": run_stack("prod", validated_config()),
    }


def _render(recording: Recording, folder: Path, scratch: Path, only: str = "") -> None:
    verdicts = render_and_validate(recording, scratch, "1.33.0")
    folder.mkdir(parents=True)
    for verdict in verdicts:
        if only in verdict.path.name:
            verdict.path.rename(folder / verdict.path.name)


def _tampered(template: dict[str, Any]) -> dict[str, Any]:
    """prod's template with three insecure settings and without its declared skips."""
    tampered = copy.deepcopy(template)
    for resource in tampered["resources"]:
        resource.pop("metadata", None)
        if resource["type"] == "Microsoft.ContainerRegistry/registries":
            resource["properties"]["adminUserEnabled"] = True
        if resource["type"] == CLUSTER:
            resource["properties"]["apiServerAccessProfile"] = {"enablePrivateCluster": False}
        if resource["type"] == "Microsoft.Storage/storageAccounts":
            resource["properties"]["networkAcls"]["defaultAction"] = "Allow"
    return tampered


@pytest.fixture(scope="module")
def scan(
    recordings: dict[str, Recording], variants: dict[str, Recording], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Results]]:
    """framework -> part (a stack, a variant, `unhardened`, `tampered`) -> checkov's passed, failed and skipped checks.

    The folder holds `kubernetes/<part>/*.yaml` and `arm/<part>.json`; a check's file path names its part.
    """
    folder = tmp_path_factory.mktemp("checkov")
    scratch = tmp_path_factory.mktemp("render")
    for stack in STACKS:
        _render(recordings[stack], folder / "kubernetes" / stack, scratch / stack)
        (folder / "arm").mkdir(exist_ok=True)
        (folder / "arm" / f"{stack}.json").write_text(json.dumps(arm.arm_template(recordings[stack])))
    for name, only in VARIANT_OBJECTS.items():
        _render(variants[name], folder / "kubernetes" / name, scratch / name, only)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "loose", "namespace": "ml"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "securityContext": {"privileged": True}}]},
    }
    (folder / "kubernetes" / UNHARDENED).mkdir()
    (folder / "kubernetes" / UNHARDENED / "pod.yaml").write_text(json.dumps(pod))
    (folder / "arm" / f"{TAMPERED}.json").write_text(json.dumps(_tampered(arm.arm_template(recordings["prod"]))))

    split: dict[str, dict[str, Results]] = {}
    for framework, report in checkov_reports(folder, ("kubernetes", "arm")).items():
        for outcome in ("passed_checks", "failed_checks", "skipped_checks"):
            for check in report["results"].get(outcome, []):
                top, rest = str(check["file_path"]).strip("/").split("/", 1)
                part = rest.split("/", 1)[0].removesuffix(".json")
                assert top == framework, f"{framework} scanned {check['file_path']}, a file of another framework"
                results = split.setdefault(framework, {}).setdefault(part, {})
                results.setdefault(outcome, []).append(check)
    return split


def _skip_reasons(recording: Recording) -> dict[tuple[str, str], str]:
    """(object name, check) -> the reason its `checkov.io/skip<n>` annotation gives."""
    found: dict[tuple[str, str], str] = {}
    for resource in recording.resources:
        if not resource.type.startswith("kubernetes:") or not isinstance(resource.inputs.get("metadata"), dict):
            continue
        metadata = resource.inputs["metadata"]
        for key, value in (metadata.get("annotations") or {}).items():
            if key.startswith("checkov.io/skip") and "=" in str(value):
                check, reason = str(value).split("=", 1)
                found[(str(metadata.get("name")), check)] = reason
    return found


# --- Kubernetes objects ----------------------------------------------------------------------------


@pytest.mark.parametrize("part", [*STACKS, *VARIANT_OBJECTS])
def test_rendered_objects_pass_checkov(
    scan: dict[str, dict[str, Results]],
    recordings: dict[str, Recording],
    variants: dict[str, Recording],
    part: str,
) -> None:
    results = scan["kubernetes"].get(part, {})
    failed = [(c["check_id"], c["resource"]) for c in results.get("failed_checks", [])]
    assert failed == [], f"{part}: checkov failures must be fixed or skipped with a reason: {failed}"
    assert results.get("passed_checks"), f"{part}: checkov actually evaluated the objects"
    # checkov's JSON drops an annotation's comment: read each skip's reason from the object itself.
    reasons_by_object = _skip_reasons({**recordings, **variants}[part])
    for skipped in results.get("skipped_checks", []):
        # Graph checks name a workload's pod as `Pod.<namespace>.<workload>.<app label>`: match the object by name.
        reasons = [
            why
            for (name, check), why in reasons_by_object.items()
            if check == skipped["check_id"] and f".{name}" in skipped["resource"]
        ]
        reason = max(reasons, key=len, default="")
        assert len(reason) > 20, f"skip of {skipped['check_id']} on {skipped['resource']} needs a one-line reason"


def test_the_smoke_test_and_the_variants_own_workloads_were_scanned(scan: dict[str, dict[str, Results]]) -> None:
    def scanned(part: str) -> set[str]:
        return {c["resource"] for c in scan["kubernetes"][part]["passed_checks"]}

    assert any(r.startswith("Job.") for r in scanned("dev")), "the smoke test Job is among the scanned workloads"
    assert "Pod.training.netapp-test" in scanned("netapp"), "the NetApp verification pod was scanned"
    assert sum(r.startswith("Job.gpu-validation.") for r in scanned("gpu-validation")) >= 1, (
        "the validation Jobs were scanned"
    )


def test_checkov_catches_an_unhardened_workload(scan: dict[str, dict[str, Results]]) -> None:
    failed = {c["check_id"] for c in scan["kubernetes"][UNHARDENED].get("failed_checks", [])}
    assert {"CKV_K8S_16", "CKV_K8S_20"} <= failed, "privileged, escalating containers must fail the scan"


# --- the Azure resources, as an ARM template -------------------------------------------------------


def _is_cluster(check: dict[str, Any]) -> bool:
    return str(check["resource"]).startswith(f"{CLUSTER}.")  # checkov names a resource <type>.<name>


@pytest.mark.parametrize("stack", STACKS)
def test_the_planned_azure_resources_pass_checkov_or_skip_with_a_reason(
    scan: dict[str, dict[str, Results]], stack: str
) -> None:
    results = scan["arm"][stack]
    failed = [(c["check_id"], c["resource"]) for c in results.get("failed_checks", [])]
    assert failed == [], f"{stack}: fix each finding or declare it next to the resource (arm_scan_exception)"
    on_cluster = {c["check_id"] for c in results["passed_checks"] if _is_cluster(c)}
    assert {"CKV_AZURE_5", "CKV_AZURE_6", "CKV_AZURE_141", "CKV_AZURE_171"} <= on_cluster, (
        "RBAC, authorized API ranges, no local accounts and an upgrade channel were evaluated on the cluster"
    )
    skipped = results.get("skipped_checks", [])
    assert skipped, f"{stack}: the cluster's retired-dashboard check at least is skipped with its reason"
    for check in skipped:
        reason = str(check["check_result"].get("suppress_comment", ""))
        assert len(reason.strip()) >= 40, f"{check['check_id']} on {check['resource']}: a skip needs its reason"


def test_prod_is_checked_where_dev_explains_its_choice(scan: dict[str, dict[str, Results]]) -> None:
    def ids(stack: str, outcome: str) -> set[str]:
        return {c["check_id"] for c in scan["arm"][stack].get(outcome, []) if _is_cluster(c)}

    conditional = {"CKV_AZURE_226", "CKV_AZURE_227"}  # ephemeral OS disk, encryption at host
    assert conditional <= ids("dev", "skipped_checks"), "dev declares why it runs without them"
    assert conditional <= ids("prod", "passed_checks"), "prod has them on, so the check must still run there"


def test_the_scan_catches_insecure_settings(scan: dict[str, dict[str, Results]]) -> None:
    failed = {c["check_id"] for c in scan["arm"][TAMPERED].get("failed_checks", [])}
    # ACR admin user on, API server open to every address, storage firewall open.
    assert {"CKV_AZURE_137", "CKV_AZURE_6", "CKV_AZURE_35"} <= failed, failed
    assert "CKV_AZURE_8" in failed, "without the template's skips, the declared exceptions fail again"
