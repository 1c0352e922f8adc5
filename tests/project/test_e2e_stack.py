"""The end-to-end stack: its config renders and validates, the real program plans it, the workflow cleans up."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.render import render_and_validate
from aks_gpu_platform.testing import Recording, policy_verdicts
from aks_gpu_platform.testing.stack_files import read_stack_yaml
from tests.conftest import settings_of
from tools import REPO_ROOT, e2e_stack

RUN_ID = "1234567890123"  # GitHub run ids are 11 digits today; the names leave room for 13
ADMIN_GROUP = "00000000-0000-4000-8000-0000000000e7"
HPC_PROVIDER = "00000000-0000-4000-8000-0000000000c7"
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "e2e.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def rendered(run_id: str = RUN_ID) -> dict[str, Any]:
    return e2e_stack.render(
        read_stack_yaml(e2e_stack.TEMPLATE), run_id, [ADMIN_GROUP], HPC_PROVIDER, ["198.51.100.7/32"]
    )


@pytest.fixture(scope="module")
def e2e_recording() -> Recording:
    return run_stack(e2e_stack.stack_name(RUN_ID), config=rendered())


def test_the_rendered_config_validates_through_the_stack_loader() -> None:
    config = rendered()
    e2e_stack.validate(config)  # raises ConfigError on any invalid field
    settings = settings_of(config)
    assert settings["environment"] == "dev", "nothing protected, so the destroy can remove everything"
    assert settings["cluster"]["entraId"]["adminGroupObjectIds"] == [ADMIN_GROUP]
    assert settings["cluster"]["apiServer"]["authorizedIpRanges"] == ["198.51.100.7/32"], "the runner reaches the API"
    assert settings["storage"]["lustre"]["hpcCacheProviderObjectId"] == HPC_PROVIDER


def test_every_name_azure_wants_unique_carries_the_run_id() -> None:
    first, second = settings_of(rendered("11111111111")), settings_of(rendered("22222222222"))
    paths = [
        ("resourceGroup", "name"),
        ("cluster", "name"),
        ("monitoring", "registry", "name"),
        ("monitoring", "grafana", "name"),
        ("storage", "lustre", "blob", "accountName"),
    ]
    for path in paths:
        a, b = first, second
        for key in path:
            a, b = a[key], b[key]
        assert "11111111111" in a and a != b, f"{'.'.join(path)} must differ between two concurrent or retried runs"


def test_a_bad_identity_stops_the_render_with_the_field_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match=r"cluster\.entraId\.adminGroupObjectIds\[0\]:"):
        e2e_stack.validate(
            e2e_stack.render(read_stack_yaml(e2e_stack.TEMPLATE), RUN_ID, [""], HPC_PROVIDER, ["198.51.100.7/32"])
        )
    code = e2e_stack.main(
        [
            "--run-id",
            RUN_ID,
            "--admin-group-id",
            ADMIN_GROUP,
            "--hpc-cache-provider-object-id",
            HPC_PROVIDER,
            "--authorized-ip-range",
            "not-a-cidr",
            "--out-dir",
            str(tmp_path),
        ]
    )
    assert code == 2 and "cluster.apiServer.authorizedIpRanges[0]:" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing is written from an invalid config"
    with pytest.raises(ValueError, match="run id"):
        rendered("12ab")


def test_the_cli_writes_the_stack_file_pulumi_reads_and_keeps_its_other_keys(tmp_path: Path) -> None:
    target = tmp_path / f"Pulumi.e2e-{RUN_ID}.yaml"
    target.write_text("encryptionsalt: v1:abc\n")
    code = e2e_stack.main(
        [
            *("--run-id", RUN_ID, "--admin-group-id", ADMIN_GROUP, "--hpc-cache-provider-object-id", HPC_PROVIDER),
            *("--authorized-ip-range", "198.51.100.7/32, 203.0.113.0/28", "--location", "eastus"),
            *("--out-dir", str(tmp_path)),
        ]
    )
    assert code == 0
    document = yaml.safe_load(target.read_text())
    assert document["encryptionsalt"] == "v1:abc", "a secrets salt `pulumi stack init` wrote survives"
    config = document["config"]
    assert config["aks-gpu-platform:location"] == config["azure-native:location"] == "eastus"
    assert config["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"] == [
        "198.51.100.7/32",
        "203.0.113.0/28",
    ], "comma-separated ranges from one variable split into a list"


def test_the_program_plans_the_small_e2e_platform(e2e_recording: Recording) -> None:
    pools = e2e_recording.of_type("azure-native:containerservice:AgentPool")
    [pool] = [p for p in pools if p.inputs["vmSize"].startswith("Standard_NC")]
    assert (pool.inputs["vmSize"], pool.inputs["minCount"], pool.inputs["maxCount"]) == (
        "Standard_NC4as_T4_v3",
        1,
        1,
    ), "one T4 node that stays up for the allocatable-GPU check"
    lustre = e2e_recording.one("azure-native:storagecache:AmlFilesystem")
    assert lustre.inputs["storageCapacityTiB"] == 4 and lustre.inputs["sku"]["name"] == "AMLFS-Durable-Premium-500"
    assert not any(r.protect for r in e2e_recording.resources), "the destroy must be able to remove everything"
    rg = e2e_recording.one("azure-native:resources:ResourceGroup")
    assert rg.inputs["resourceGroupName"] == f"rg-aksgpu-e2e-{RUN_ID}"
    assert e2e_recording.of_type("kubernetes:batch/v1:Job"), "the smoke Job the first check looks for"
    assert not [r for r in e2e_recording.of_type("kubernetes:apps/v1:Deployment") if "inference" in r.name], (
        "no sample workload holds the only GPU"
    )


def test_the_program_exports_what_the_checks_read(e2e_recording: Recording) -> None:
    outputs = e2e_recording.stack_outputs
    for key in ("kubeconfig", "prometheusQueryEndpoint", "lustreNamespace", "lustrePvcName"):
        assert outputs.get(key), f"tools/e2e_checks.py reads the {key} output"
    assert "kubeconfig" in e2e_recording.secret_outputs, "the kubeconfig stays a secret output"
    assert str(outputs["prometheusQueryEndpoint"]).startswith("https://")


def test_the_rendered_objects_pass_the_schema_and_the_policies(e2e_recording: Recording, tmp_path: Path) -> None:
    verdicts = render_and_validate(e2e_recording, tmp_path, "1.33.0")
    assert verdicts and not [v for v in verdicts if v.status == "invalid"], [v.detail for v in verdicts]
    mandatory = [(p.name, v) for p, vs in policy_verdicts(e2e_recording, "dev") if p.mandatory for v in vs]
    assert not mandatory, mandatory


def _workflow() -> dict[Any, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def test_the_workflow_is_opt_in_and_runs_one_stack_at_a_time() -> None:
    workflow = _workflow()
    triggers = workflow[True]  # YAML 1.1 reads the bare key `on` as true
    assert set(triggers) == {"workflow_dispatch", "schedule"}, "never on push or pull request: it costs money"
    [job] = workflow["jobs"].values()
    assert job["environment"] == "e2e" and job["concurrency"]["cancel-in-progress"] is False
    assert job["permissions"] == {"contents": "read", "id-token": "write"}, "OIDC and read-only contents, no more"
    assert workflow["permissions"] == {}
    assert job["env"]["STACK"] == "e2e-${{ github.run_id }}"


def test_the_workflow_always_destroys_the_stack_it_created() -> None:
    [job] = _workflow()["jobs"].values()
    steps = job["steps"]
    names = [s.get("id") for s in steps]
    up, destroy = names.index("up"), names.index("destroy")
    assert names.index("init") < up < destroy
    destroy_step = steps[destroy]
    assert destroy_step["if"].startswith("${{ always()"), "runs after failures and cancellations too"
    assert "pulumi destroy --yes" in destroy_step["run"] and "--remove" in destroy_step["run"]
    assert "--run-program" in destroy_step["run"], "the Grafana token in state has expired hours after `pulumi up`"
    fallback = next(s for s in steps[destroy + 1 :] if "az group delete" in s.get("run", ""))
    assert "steps.destroy.outcome != 'success'" in fallback["if"], "after a failed, timed-out or cancelled destroy"
    checks = next(s for s in steps if "tools.e2e_checks" in s.get("run", ""))
    assert "umask 077" in checks["run"] and "--show-secrets" in checks["run"], "the outputs file is private"


def test_the_job_limit_leaves_time_for_every_step_destroy_included() -> None:
    [job] = _workflow()["jobs"].values()
    limited = [s for s in job["steps"] if "timeout-minutes" in s]
    assert any(s.get("id") == "destroy" for s in limited), "the destroy has its own limit"
    total = sum(s["timeout-minutes"] for s in limited)
    assert job["timeout-minutes"] >= total, (
        f"a job limit of {job['timeout-minutes']} min below the steps' {total} min can kill the destroy "
        "midway and leave Lustre and GPU nodes billing"
    )


def test_the_workflow_pins_the_same_actions_as_the_deploy_workflow() -> None:
    [job] = _workflow()["jobs"].values()
    used = {s["uses"] for s in job["steps"] if "uses" in s}
    assert all(SHA_PIN.match(u) for u in used), used
    deploy = (REPO_ROOT / ".github" / "workflows" / "deploy.yml").read_text()
    assert all(u in deploy for u in used), "one pinned SHA per action across the workflows"
