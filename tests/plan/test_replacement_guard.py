"""The replacement guard fails a preview that destroys a stateful resource, and passes a safe one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.plan import replacement_guard
from tools import REPO_ROOT

FIXTURES = Path(__file__).parent.parent / "fixtures" / "preview"


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def _guard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aks_gpu_platform.plan.replacement_guard", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_safe_preview_passes() -> None:
    result = _guard(str(FIXTURES / "safe-update.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no stateful or protected resource" in result.stdout
    assert "create=1" in result.stdout, "the change summary is echoed for the reviewer"


def test_cluster_replacement_fails_once_with_the_forcing_property() -> None:
    result = _guard(str(FIXTURES / "cluster-replace.json"))
    assert result.returncode == 1, "replacing the cluster must block the pull request"
    assert result.stdout.count("ManagedCluster::aks-cluster") == 1, "one finding per resource, not per step"
    assert "changing dnsPrefix forces a replacement" in result.stdout, "the reviewer sees why"


def test_gpu_pool_deletion_fails_but_cpu_pool_replacement_does_not() -> None:
    found = replacement_guard.findings(_load("gpu-pool-delete.json"))
    assert [(f.op, f.urn.rsplit("::", 1)[-1]) for f in found] == [("delete", "gpua100-pool")]
    assert found[0].why_guarded == replacement_guard.GPU_POOL_REASON


def test_every_stateful_type_and_protected_resource_is_caught() -> None:
    found = replacement_guard.findings(_load("stateful-replace.json"))
    assert {f.type for f in found} == {
        "azure-native:storage:StorageAccount",
        "azure-native:containerregistry:Registry",
        "azure-native:storagecache:AmlFilesystem",
        "azure-native:resources:ResourceGroup",
    }
    causes = {f.type.rsplit(":", 1)[-1]: f.cause for f in found}
    assert causes["StorageAccount"] == "changing accountName forces a replacement", "read from detailedDiff"
    assert causes["AmlFilesystem"] == "changing skuName forces a replacement", "read from replaceReasons"


def test_allow_accepts_an_intended_replacement() -> None:
    preview = _load("cluster-replace.json")
    urn = preview["steps"][0]["urn"]
    assert replacement_guard.findings(preview, [urn]) == []
    assert _guard(str(FIXTURES / "cluster-replace.json"), "--allow", urn).returncode == 0


def test_type_is_read_from_the_urn_when_states_are_absent() -> None:
    step = {"op": "delete", "urn": "urn:pulumi:prod::p::a:index:Lustre$azure-native:storagecache:AmlFilesystem::fs"}
    assert replacement_guard.type_of(step) == "azure-native:storagecache:AmlFilesystem"
    assert len(replacement_guard.findings({"steps": [step]})) == 1


@pytest.mark.parametrize("content", ["not json", "[1, 2]"])
def test_unreadable_preview_is_a_usage_error(tmp_path: Path, content: str) -> None:
    bad = tmp_path / "preview.json"
    bad.write_text(content)
    result = _guard(str(bad))
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_a_pool_moved_to_another_subnet_fails_as_an_update_azure_refuses() -> None:
    # azure-native updates vnetSubnetID in place (not force-new); AKS rejects it, stopping `pulumi up` halfway.
    pool = "azure-native:containerservice:AgentPool"
    urn = f"urn:pulumi:dev::aks-gpu-platform::aks-gpu-platform:index:CpuNodePool${pool}::cpu"
    state = {"type": pool, "inputs": {"agentPoolName": "cpu1a2b"}}
    step = {
        "op": "update",
        "urn": urn,
        "oldState": state,
        "newState": state,
        "diffs": ["vnetSubnetID"],
        "detailedDiff": {"vnetSubnetID": {"kind": "update", "inputDiff": True}},
    }
    (found,) = replacement_guard.findings({"steps": [step]})
    assert found.op == "update" and "rename the pool" in found.why_guarded, found
    assert replacement_guard.findings({"steps": [step]}, allowed=[urn]) == [], "--allow accepts it on purpose"
    harmless = {**step, "diffs": ["count"], "detailedDiff": {"count": {"kind": "update"}}}
    assert replacement_guard.findings({"steps": [harmless]}) == [], "other pool updates pass"
