"""The CrossGuard pack wraps every rule as a mandatory policy and reports what the rules report.

Runs policy/__main__.py inside policy/venv (pulumi-policy conflicts with the project's pins)
with PolicyPack replaced by a recorder, then calls each policy's validate callback.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from aks_gpu_platform import policy_model
from aks_gpu_platform import policy_rules as rules
from tools import REPO_ROOT

POLICY_PYTHON = REPO_ROOT / "policy" / "venv" / "bin" / "python"

DRIVER = r"""
import json, runpy, sys
import pulumi_policy
from pulumi_policy import (
    PolicyResource, PolicyResourceOptions, ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs,
)

captured = {}
pulumi_policy.PolicyPack = lambda **kw: captured.update(kw)
runpy.run_path(sys.argv[1], run_name="__main__")

def opts(protect=False, ignore=()):
    return PolicyResourceOptions(protect, list(ignore), False, [], None, [], None)

cases = json.loads(sys.argv[2])
report = {"pack_level": captured["enforcement_level"].value, "policies": {}, "violations": {}}
for policy in captured["policies"]:
    report["policies"][policy.name] = policy.enforcement_level.value
for case in cases:
    found = []
    for policy in captured["policies"]:
        sink = lambda msg, urn=None, name=policy.name: found.append(name)
        if isinstance(policy, ResourceValidationPolicy):
            o = opts(case["protect"], case["ignore"])
            args = ResourceValidationArgs(case["type"], case["props"], "urn:x", "x", o, None)
            policy._ResourceValidationPolicy__validate(args, sink)
        else:
            o = opts(case["protect"], case["ignore"])
            resource = PolicyResource(case["type"], case["props"], "urn:x", "x", o, None, None, [], {})
            policy._StackValidationPolicy__validate(StackValidationArgs([resource]), sink)
    report["violations"][case["id"]] = found
print(json.dumps(report))
"""

CASES = [
    {
        "id": "public-storage",
        "type": policy_model.STORAGE_ACCOUNT,
        "props": {"allowBlobPublicAccess": True, "tags": {"environment": "prod"}},
        "protect": False,
        "ignore": [],
    },
    {
        "id": "locked-storage",
        "type": policy_model.STORAGE_ACCOUNT,
        "props": {
            "allowBlobPublicAccess": False,
            "minimumTlsVersion": "TLS1_2",
            "enableHttpsTrafficOnly": True,
            "publicNetworkAccess": "Disabled",
            "tags": {"environment": "prod"},
        },
        "protect": True,
        "ignore": [],
    },
    {
        "id": "untainted-gpu-pool",
        "type": policy_model.AGENT_POOL,
        "props": {
            "vmSize": "Standard_NC4as_T4_v3",
            "enableAutoScaling": True,
            "enableEncryptionAtHost": True,
            "nodeLabels": {"pool": "gpu"},
        },
        "protect": False,
        "ignore": ["count"],
    },
    {
        "id": "unencrypted-prod-pool",
        "type": policy_model.AGENT_POOL,
        "props": {"vmSize": "Standard_D8ds_v5", "enableAutoScaling": True, "tags": {"environment": "prod"}},
        "protect": False,
        "ignore": ["count"],
    },
    {
        "id": "blocking-pdb",
        "type": policy_model.PDB,
        "props": {"spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "x"}}}},
        "protect": False,
        "ignore": [],
    },
]


@pytest.fixture(scope="module")
def pack_report() -> dict[str, object]:
    if not POLICY_PYTHON.exists():
        pytest.fail("policy/venv is missing: run `make policy-venv` (make test does)")
    result = subprocess.run(
        [str(POLICY_PYTHON), "-c", DRIVER, str(REPO_ROOT / "policy" / "__main__.py"), json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(REPO_ROOT / "policy"),
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_pack_wraps_every_rule_as_mandatory(pack_report: dict[str, object]) -> None:
    expected = {p.name for p in rules.POLICIES} - rules.OFFLINE_ONLY
    assert pack_report["policies"] == dict.fromkeys(expected, "mandatory"), "a CLI user must be blocked, not warned"
    assert pack_report["pack_level"] == "mandatory"


def test_pack_reports_what_the_rules_report(pack_report: dict[str, object]) -> None:
    assert pack_report["violations"] == {
        "public-storage": [
            "prod-stateful-protected",
            "no-public-blob-access",
            "storage-tls-https",  # no minimum TLS version
            "storage-tls-https",  # HTTPS-only not set
            "prod-storage-private",
        ],
        "locked-storage": [],
        "untainted-gpu-pool": ["gpu-pool-taint-and-label"],
        "unencrypted-prod-pool": ["prod-encryption-at-host"],
        "blocking-pdb": ["pdb-satisfiable"],
    }
