"""`make plan` end to end: the real command on the real stack files, and on a broken one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.stack_files import REPO_ROOT


def _plan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.plan", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def dev_plan(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    return _plan("--stack", "dev", "--out", str(tmp_path_factory.mktemp("dev-plan")))


def test_plan_prints_the_dev_tree_and_counts(dev_plan: subprocess.CompletedProcess[str]) -> None:
    result = dev_plan
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "azure-native:containerservice:ManagedCluster platform-aks-cluster" in out, "the tree names each resource"
    assert "Resources by type" in out and "azure-native:containerservice:AgentPool" in out
    assert "kubeconfig (secret)" in out, "the plan tells which outputs are secret"
    assert "Traceback" not in out + result.stderr


def test_plan_rejects_a_broken_config_with_one_clear_message(tmp_path: Path) -> None:
    document = yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["aks-gpu-platform:network"]["subnets"]["nodes"] = "10.40.0.0/33"
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text(yaml.safe_dump(document))
    result = _plan("--stack", "dev", "--config-file", str(broken), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, "a config error must fail the plan"
    assert "network.subnets.nodes" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, "users see the message, not Python internals"
    assert "ManagedCluster" not in result.stdout, "nothing is planned from an invalid config"


def test_plan_warns_about_placeholders_a_real_deployment_refuses_and_still_succeeds(
    dev_plan: subprocess.CompletedProcess[str],
) -> None:
    assert dev_plan.returncode == 0, "offline, stand-in IDs and addresses are fine: the plan still succeeds"
    warnings = [line.strip() for line in dev_plan.stdout.splitlines() if line.strip().startswith("warning:")]
    assert warnings, f"the plan must list the dev stack's placeholders:\n{dev_plan.stdout[-2000:]}"
    named = " ".join(warnings)
    for path in (
        "cluster.entraId.adminGroupObjectIds[0]",
        "cluster.apiServer.authorizedIpRanges[0]",
        "monitoring.alerts.emailReceivers[0].email",
    ):
        assert f"warning: {path}: got" in named, f"{path} still holds a stand-in and must be named"
    lustre = next(w for w in warnings if "storage.lustre.hpcCacheProviderObjectId" in w)
    assert "switched off" in lustre, "dev's Lustre is off: the plan says so instead of calling it refused"
    assert "refuse the 3 that would reach Azure" in dev_plan.stdout
