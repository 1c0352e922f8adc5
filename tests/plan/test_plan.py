"""`make plan` end to end: the real command on the real stack files, and on a broken one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from aks_gpu_platform.components.shared.roles import ROLE_NAMES
from aks_gpu_platform.plan.document import PLAN_FILE, read_plan
from aks_gpu_platform.plan.mock_values import distinctive
from aks_gpu_platform.plan.recording_cache import RECORDING_CACHE
from aks_gpu_platform.plan.screen import REPORT_FILE
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS, plan_in_process
from tests.upstream.scheduling import object_pod_templates
from tools import REPO_ROOT

# A pull-request comment and a terminal both show lines as they are.
MAX_LINE = 120


def _plan(*args: str, hash_seed: str = "0", evaluate: bool = False) -> subprocess.CompletedProcess[str]:
    # Different hash seeds shuffle set and dict iteration that depends on hashing between the two runs.
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    if evaluate:
        env[RECORDING_CACHE] = ""
    return subprocess.run(
        [sys.executable, "-m", "aks_gpu_platform.plan.report", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _report(runs: TwoRuns) -> str:
    """The whole report the first run wrote beside plan.json: first screen and detail."""
    return runs.first_files[REPORT_FILE].decode()


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass(frozen=True)
class TwoRuns:
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    first_files: dict[str, bytes]
    second_files: dict[str, bytes]
    out: Path


@pytest.fixture(scope="module")
def plan_runs(tmp_path_factory: pytest.TempPathFactory, recordings: dict[str, Recording]) -> dict[str, TwoRuns]:
    """Each stack planned twice into the same folder, in fresh processes with different hash seeds.

    The first run reads the session's recording (`recordings` has stored it). dev's second run evaluates
    the program itself, so its two outputs come from independent evaluations; prod's reads the recording
    again, so its pair checks the rendering under another hash seed.
    """
    runs: dict[str, TwoRuns] = {}
    for stack in STACKS:
        out = tmp_path_factory.mktemp(f"{stack}-plan")
        first = _plan("--stack", stack, "--out", str(out), hash_seed="1")
        first_files = _files(out)
        second = _plan("--stack", stack, "--out", str(out), hash_seed="2", evaluate=stack == "dev")
        runs[stack] = TwoRuns(first, second, first_files, _files(out), out)
    return runs


@pytest.mark.parametrize("stack", STACKS)
def test_two_plan_runs_print_and_write_the_same_bytes(plan_runs: dict[str, TwoRuns], stack: str) -> None:
    runs = plan_runs[stack]
    assert runs.first.returncode == 0 and runs.second.returncode == 0, runs.first.stderr + runs.second.stderr
    assert runs.first.stdout == runs.second.stdout, "plans are diffed between branches: the same tree prints the same"
    assert PLAN_FILE in runs.first_files and any(name.startswith("k8s/") for name in runs.first_files)
    assert runs.first_files.keys() == runs.second_files.keys(), "the same files are written"
    changed = [name for name in runs.first_files if runs.first_files[name] != runs.second_files[name]]
    assert changed == [], f"every file under out/ must keep its checksum between runs: {changed}"


@pytest.mark.parametrize("stack", STACKS)
def test_the_written_report_puts_verdicts_first_then_summary_then_detail(
    plan_runs: dict[str, TwoRuns], stack: str
) -> None:
    lines = _report(plan_runs[stack]).splitlines()
    verdicts = next(i for i, line in enumerate(lines) if line.startswith("Verdicts: "))
    summary = next(i for i, line in enumerate(lines) if line.startswith("Node pools"))
    detail = lines.index("Detail")
    assert verdicts < summary < detail, "verdicts, then the summary, then the detail"
    assert "ManagedCluster platform-aks-cluster" in "\n".join(lines[detail:]), "the resource tree is detail"
    assert "ManagedCluster platform-aks-cluster" not in plan_runs[stack].first.stdout, "and not printed by default"


@pytest.mark.parametrize("stack", STACKS)
def test_plan_lines_fit_a_pull_request_comment(plan_runs: dict[str, TwoRuns], stack: str) -> None:
    long = [line for line in plan_runs[stack].first.stdout.splitlines() if len(line) > MAX_LINE]
    assert long == [], f"lines longer than {MAX_LINE} characters: {long[:3]}"


def test_plan_names_roles_instead_of_their_guids(plan_runs: dict[str, TwoRuns]) -> None:
    out = _report(plan_runs["dev"])
    assert "role='AcrPull'" in out and "role='Grafana Admin'" in out, "role assignments read by role name"
    shown = [guid for guid in ROLE_NAMES if guid in out]
    assert shown == [], f"role definition GUIDs should not be what a reviewer reads: {shown}"


@pytest.mark.parametrize("stack", STACKS)
def test_values_only_the_mocks_know_never_pass_for_real_ones(
    plan_runs: dict[str, TwoRuns], recordings: dict[str, Recording], stack: str
) -> None:
    """IDs, principal IDs, addresses and endpoints the mocks invent are written as <computed: origin>."""
    made_up = [value for value in recordings[stack].mock_values if distinctive(value)]
    assert made_up, "the mocks invent subscription-scoped IDs and GUIDs in every stack"
    runs = plan_runs[stack]
    texts = {"stdout": runs.first.stdout} | {name: data.decode() for name, data in runs.first_files.items()}
    leaked = sorted({f"{value} in {where}" for where, text in texts.items() for value in made_up if value in text})
    assert leaked == [], f"mock-made values shown as if real: {leaked[:5]}"
    plan = runs.first_files[PLAN_FILE].decode()
    assert "<computed: getClientConfig.subscriptionId>" in plan, "role definition IDs are built on the subscription"


def test_prod_plan_marks_the_lustre_address_and_prints_quota_and_cost(plan_runs: dict[str, TwoRuns]) -> None:
    runs = plan_runs["prod"]
    storage_class = runs.first_files["k8s/storageclass-cluster-azurelustre-static.yaml"].decode()
    marked = "mgs-ip-address: '<computed: platform-lustre-filesystem.clientInfo.mgsAddress>'"
    assert marked in storage_class, storage_class
    out = runs.first.stdout
    assert "StandardNCADSA100v4Family  288" in out and "standardNDSH100v5Family    1,152" in out, out
    floor = next(line for line in out.splitlines() if line.strip().startswith("total"))
    assert floor.split()[1].startswith("$") and floor.split()[2].startswith("$"), "floor and ceiling are printed"
    assert "Lustre 64 TiB AMLFS-Durable-Premium-250" in " ".join(out.split()), (
        "what has no price is named, not counted as zero"
    )


def test_plan_json_holds_every_resource_with_its_options(plan_runs: dict[str, TwoRuns]) -> None:
    plan = read_plan(plan_runs["prod"].out / PLAN_FILE)
    pools = [e for e in plan["resources"].values() if e["type"] == "azure-native:containerservice:AgentPool"]
    assert len(pools) == 5, "prod registers a CPU pool and four GPU pools"
    for pool in pools:
        assert pool["options"]["ignoreChanges"][0] == "count", "the autoscaler owns count"
        assert pool["options"]["deleteBeforeReplace"] is False, "pools are replaced create-before-delete"
        assert list(pool["inputs"]) == sorted(pool["inputs"]), "inputs are written in sorted order"
    provider = next(e for e in plan["resources"].values() if e["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"].startswith("<secret"), "the kubeconfig never lands in plan.json"
    assert plan["outputs"]["kubeconfig"].startswith("<secret"), "secret outputs are withheld"


def test_markdown_format_renders_a_pull_request_comment(tmp_path: Path) -> None:
    result = plan_in_process("--stack", "dev", "--out", str(tmp_path), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("### Plan for stack 'dev'"), out[:200]
    assert "| pool (Azure name) | VM size |" in out and "| vCPU quota | needed at peak | pools |" in out
    assert out.count("<details>") == out.count("</details>") >= 3, "the detail is folded away"
    shown, folded = out[: out.index("<details>")], out[out.index("<details>") :]
    assert "ManagedCluster platform-aks-cluster" in folded and "ManagedCluster platform-aks-cluster" not in shown
    assert "- **warning**: pool gput4 kept up around the clock by gpu-inference-sample/triton: $404/month" in shown
    assert "#### Cold start" in shown and "Cold start of pool gput4" in folded, "the path shown, its sources folded"
    assert "warning: placeholder training.teams[0].members[0]: got" in folded, "each verdict in full, folded"


def test_plan_rejects_a_broken_config_with_one_clear_message(tmp_path: Path) -> None:
    document = yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["aks-gpu-platform:network"]["subnets"]["nodes"] = "10.40.0.0/33"
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text(yaml.safe_dump(document))
    result = plan_in_process("--stack", "dev", "--config-file", str(broken), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, "a config error must fail the plan"
    assert "network.subnets.nodes" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, "users see the message, not Python internals"
    assert "ManagedCluster" not in result.stdout, "nothing is planned from an invalid config"
    assert not (tmp_path / "out" / PLAN_FILE).exists(), "no plan.json from an invalid config"


def test_plan_warns_about_placeholders_a_real_deployment_refuses_and_still_succeeds(
    plan_runs: dict[str, TwoRuns],
) -> None:
    dev_plan = plan_runs["dev"].first
    assert dev_plan.returncode == 0, "offline, stand-in IDs and addresses are fine: the plan still succeeds"
    full = _report(plan_runs["dev"])
    warnings = [line.strip() for line in full.splitlines() if line.strip().startswith("warning:")]
    assert warnings, f"the plan must list the dev stack's placeholders:\n{full[:2000]}"
    named = " ".join(warnings)
    screen = " ".join(dev_plan.stdout.split())
    for path in (
        "cluster.entraId.adminGroupObjectIds[0]",
        "cluster.apiServer.authorizedIpRanges[0]",
        "monitoring.alerts.emailReceivers[0].email",
        "training.teams[0].members[0]",
    ):
        assert f"warning: placeholder {path}: got" in named, f"{path} still holds a stand-in and must be named"
        assert path in screen, f"{path} is named on the first screen"
    assert "storage.lustre.hpcCacheProviderObjectId (section off)" in screen, "dev's Lustre is off: the plan says so"
    assert "`pulumi up` refuses the 4 that would reach Azure" in screen, "and how many a deployment refuses"


def test_plan_tells_which_outputs_are_secret(plan_runs: dict[str, TwoRuns]) -> None:
    out = _report(plan_runs["dev"])
    assert "kubeconfig (secret)" in out, "the plan tells which outputs are secret"
    assert "Traceback" not in out + plan_runs["dev"].first.stderr
    assert json.loads(plan_runs["dev"].first_files[PLAN_FILE])["stack"] == "dev"


@pytest.mark.parametrize("stack", STACKS)
def test_plan_tells_to_restart_the_keda_operator_once_its_credential_exists(
    plan_runs: dict[str, TwoRuns], recordings: dict[str, Recording], stack: str
) -> None:
    out = " ".join(_report(plan_runs[stack]).split())
    credentials = recordings[stack].of_type("azure-native:managedidentity:FederatedIdentityCredential")
    keda = [c for c in credentials if c.inputs["subject"] == "system:serviceaccount:kube-system:keda-operator"]
    # Microsoft's AKS KEDA workload-identity guide restarts the add-on's operator after creating the credential:
    # the add-on's Deployment is AKS-managed, so the program cannot roll it; the plan must say it.
    assert ("rollout restart deployment keda-operator" in out) == bool(keda), (
        "without the restart, every GPU ScaledObject fails to authenticate and nothing scales"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_the_plan_lists_every_image_with_its_digest_or_unpinned(
    plan_runs: dict[str, TwoRuns], recordings: dict[str, Recording], stack: str
) -> None:
    out = _report(plan_runs[stack])
    section = out.split("Images (each with its digest, or unpinned and why):", 1)[1].split("Rendered objects", 1)[0]
    lines = " ".join(section.split())
    # Every container the stack's objects run is listed: `image sha256:...`, or `image unpinned: why`.
    containers = [
        str(c["image"])
        for pod in object_pod_templates(recordings[stack])
        for c in [*(pod.spec.get("containers") or []), *(pod.spec.get("initContainers") or [])]
    ]
    assert containers, "every stack runs pods of its own"
    missing: list[str] = []
    for image in containers:
        tagged, _, digest = image.partition("@")
        listed = f"{tagged} {digest}" if digest else f"{image} unpinned: "
        if listed not in lines:
            missing.append(image)
    assert not missing, f"images the plan does not list with a digest or `unpinned`: {sorted(set(missing))}"
    # The model server and the smoke test: Docker Hub images by tag, through the registry, listed as unpinned.
    assert re.search(r"\S+\.azurecr\.io/docker\.io/vllm/vllm-openai:v0\.34\.0 unpinned: the model servers", lines)
    assert re.search(r"\.azurecr\.io/docker\.io/nvidia/cuda:12\.4\.1-base-ubuntu22\.04 unpinned: the GPU smoke", lines)
    # Pinned images print the digest an upstream file records (the device plugin's, from the GPU Operator bundle).
    assert re.search(r"\.azurecr\.io/nvcr\.io/nvidia/k8s-device-plugin:v0\.20\.0 sha256:a61ba9fd", lines), lines


def test_the_plan_warns_that_docker_hub_is_pulled_anonymously_through_the_cache(plan_runs: dict[str, TwoRuns]) -> None:
    # dev runs the model server and the smoke test from Docker Hub; the docker-hub rule has no credential set.
    lines = " ".join(_report(plan_runs["dev"]).split())
    warning = re.search(r"cache rule docker-hub pulls docker\.io anonymously \(no credential set\)[^!]*", lines)
    assert warning, "a rate-limited upstream pulled without credentials is named in the plan"
    assert "docker.io/vllm/vllm-openai:v0.34.0" in warning[0] and "docker.io/nvidia/cuda:" in warning[0], warning[0]
