"""checkov scans every rendered Kubernetes object: zero failures, every skip carries its reason.

checkov pins packages apart from the project's, so it runs from .venv-checkov (`make checkov-venv`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.testing import Recording
from tests.checkov_scan import checkov_report
from tests.conftest import STACKS
from tools.render import render_and_validate


def _scan(folder: Path) -> dict[str, Any]:
    return checkov_report(folder, "kubernetes")


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_objects_pass_checkov(recordings: dict[str, Recording], stack: str, tmp_path: Path) -> None:
    verdicts = render_and_validate(recordings[stack], tmp_path, "1.33.0")
    assert any(v.kind == "Job" for v in verdicts), "the smoke test Job is among the scanned workloads"
    report = _scan(tmp_path / "k8s")
    results = report["results"]
    failed = [(c["check_id"], c["resource"]) for c in results["failed_checks"]]
    assert failed == [], f"{stack}: checkov failures must be fixed or skipped with a reason: {failed}"
    assert report["summary"]["passed"] > 0, "checkov actually evaluated the objects"
    for skipped in results.get("skipped_checks", []):
        reason = str(skipped.get("suppress_comment") or "")
        assert len(reason) > 20, f"skip of {skipped['check_id']} on {skipped['resource']} needs a one-line reason"


def test_checkov_catches_an_unhardened_workload(tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "loose", "namespace": "ml"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "securityContext": {"privileged": True}}]},
    }
    (tmp_path / "pod.yaml").write_text(json.dumps(pod))
    failed = {c["check_id"] for c in _scan(tmp_path)["results"]["failed_checks"]}
    assert {"CKV_K8S_16", "CKV_K8S_20"} <= failed, "privileged, escalating containers must fail the scan"
