"""checkov scans every rendered Kubernetes object: zero failures, every skip carries its reason.

checkov pins packages apart from the project's, so it runs from .venv-checkov (`make checkov-venv`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from aks_gpu_platform.testing import Recording
from tests.checkov_scan import checkov_report
from tests.conftest import STACKS
from tools.render import render_and_validate

UNHARDENED = "unhardened"


@pytest.fixture(scope="module")
def reports(recordings: dict[str, Recording], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One checkov run over dev's and prod's rendered objects and an unhardened pod, split by folder.

    One run instead of three: most of a scan is checkov starting up.
    """
    folder = tmp_path_factory.mktemp("checkov")
    for stack in STACKS:
        out = tmp_path_factory.mktemp(f"render-{stack}")
        verdicts = render_and_validate(recordings[stack], out, "1.33.0")
        assert any(v.kind == "Job" for v in verdicts), "the smoke test Job is among the scanned workloads"
        (out / "k8s").rename(folder / stack)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "loose", "namespace": "ml"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "securityContext": {"privileged": True}}]},
    }
    (folder / UNHARDENED).mkdir()
    (folder / UNHARDENED / "pod.yaml").write_text(json.dumps(pod))
    results = checkov_report(folder, "kubernetes", quiet=False)["results"]
    split: dict[str, dict[str, Any]] = {part: {} for part in (*STACKS, UNHARDENED)}
    for outcome in ("passed_checks", "failed_checks", "skipped_checks"):
        for check in results.get(outcome, []):
            part = str(check["file_path"]).strip("/").split("/", 1)[0]
            split[part].setdefault(outcome, []).append(check)
    return split


@pytest.fixture(scope="module")
def skip_reasons(recordings: dict[str, Recording]) -> dict[str, dict[tuple[str, str], str]]:
    """(object name, check) -> the reason its `checkov.io/skip<n>` annotation gives, per stack."""
    found: dict[str, dict[tuple[str, str], str]] = {}
    for stack in STACKS:
        found[stack] = {}
        for resource in recordings[stack].resources:
            if not resource.type.startswith("kubernetes:") or not isinstance(resource.inputs.get("metadata"), dict):
                continue
            metadata = resource.inputs["metadata"]
            for key, value in (metadata.get("annotations") or {}).items():
                if key.startswith("checkov.io/skip") and "=" in str(value):
                    check, reason = str(value).split("=", 1)
                    found[stack][(str(metadata.get("name")), check)] = reason
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_objects_pass_checkov(
    reports: dict[str, dict[str, Any]], skip_reasons: dict[str, dict[tuple[str, str], str]], stack: str
) -> None:
    results = reports[stack]
    failed = [(c["check_id"], c["resource"]) for c in results.get("failed_checks", [])]
    assert failed == [], f"{stack}: checkov failures must be fixed or skipped with a reason: {failed}"
    assert results.get("passed_checks"), "checkov actually evaluated the objects"
    # checkov's JSON drops an annotation's comment: read each skip's reason from the object itself.
    for skipped in results.get("skipped_checks", []):
        # Graph checks name a workload's pod as `Pod.<namespace>.<workload>.<app label>`: match the object by name.
        reasons = [
            why
            for (name, check), why in skip_reasons[stack].items()
            if check == skipped["check_id"] and f".{name}" in skipped["resource"]
        ]
        reason = max(reasons, key=len, default="")
        assert len(reason) > 20, f"skip of {skipped['check_id']} on {skipped['resource']} needs a one-line reason"


def test_checkov_catches_an_unhardened_workload(reports: dict[str, dict[str, Any]]) -> None:
    failed = {c["check_id"] for c in reports[UNHARDENED].get("failed_checks", [])}
    assert {"CKV_K8S_16", "CKV_K8S_20"} <= failed, "privileged, escalating containers must fail the scan"
