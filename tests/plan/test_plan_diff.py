"""`make plan-diff`: what a config change does, read from two plans of the real program."""

from __future__ import annotations

import contextlib
import copy
import io
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.plan import diff as plan_diff
from aks_gpu_platform.plan import diff_command, diff_text
from aks_gpu_platform.plan.document import dumps, plan_document, read_plan
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.replacement import replacement_order
from aks_gpu_platform.plan.report import plan_summary
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.arm_paths import AZURE_PATH_PARAMETERS
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import STACKS, without_models
from tests.harness.fresh_install import repository_copy
from tools import REPO_ROOT

AGENT_POOL = "azure-native:containerservice:AgentPool"
GPU_POOLS = "aks-gpu-platform:gpuPools"
# main before machine-readable plans existed (the plan wrote no plan.json).
BEFORE_PLAN_JSON = "dacfd162d249041640751e2822e5e9c1218be838"


@pytest.fixture(scope="module")
def dev_plan() -> dict[str, Any]:
    return _document(run_stack("dev"), load_stack_file("dev", REPO_ROOT))


def _document(recording: Recording, config: dict[str, Any]) -> dict[str, Any]:
    """plan.json as `make plan` writes it, summary and stack config included."""
    return plan_document(recording, "dev", summary=plan_summary(recording), config=config)


def _plan_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    change(config)
    return _document(run_stack("dev", config), config)


def _pool_change(diff: plan_diff.PlanDiff) -> plan_diff.ResourceChange:
    found = [c for c in diff.changes if c.type == AGENT_POOL and c.name == "platform-gpu-gput4-pool"]
    assert len(found) == 1, f"the T4 pool changes exactly once: {[(c.op, c.name) for c in diff.changes]}"
    return found[0]


def test_resizing_a_gpu_pool_updates_it_in_place(dev_plan: dict[str, Any]) -> None:
    max_count = load_stack_file("dev", REPO_ROOT)[GPU_POOLS][0]["maxCount"]

    def resize(config: dict[str, Any]) -> None:
        config[GPU_POOLS][0]["maxCount"] = max_count + 1
        config[GPU_POOLS][0]["minCount"] = 1

    diff = plan_diff.diff_plans(dev_plan, _plan_with(resize))
    change = _pool_change(diff)
    assert change.op == "update", "autoscale bounds change in place: no new pool, no drained nodes"
    by_path = {c.path: (c.before, c.after) for c in change.changes}
    assert by_path == {"maxCount": (max_count, max_count + 1), "minCount": (0, 1)}, (
        f"exactly the bounds change; count is ignored (the autoscaler owns it): {by_path}"
    )
    replaced = [(c.type, c.name) for c in diff.of("replace")]
    assert replaced == [("kubernetes:batch/v1:Job", "platform-gpu-smoke-test-job")], (
        f"a resize replaces no Azure resource, only re-runs the GPU smoke test (its name hashes the pools): {replaced}"
    )
    assert diff.of("delete") == [], "a resize deletes nothing"


def test_changing_a_gpu_pools_vm_size_replaces_it_create_before_delete(dev_plan: dict[str, Any]) -> None:
    def resize_vm(config: dict[str, Any]) -> None:
        config[GPU_POOLS][0]["vmSize"] = "Standard_NC8as_T4_v3"

    diff = plan_diff.diff_plans(dev_plan, _plan_with(resize_vm))
    change = _pool_change(diff)
    assert change.op == "replace", "Azure cannot change a pool's VM size: Pulumi must replace the pool"
    reasons = {c.path: c.replaces for c in change.changes if c.replaces}
    assert reasons.get("vmSize") == "azure-native replaces on vmSize", reasons
    assert reasons.get("agentPoolName") == "part of the Azure resource ID", "the hashed pool name changes with it"
    before, after = (
        next(c for c in change.changes if c.path == "agentPoolName").before,
        next(c for c in change.changes if c.path == "agentPoolName").after,
    )
    assert before != after and after.startswith("gput4"), "a new Azure name, so old and new pools can coexist"
    assert change.order == "create-before-delete", "the new pool exists before the old one is drained: no gap"
    assert change.order_why == "the program sets deleteBeforeReplace: false"


def test_the_pull_request_diff_leads_with_the_quota_and_cost_a_vm_size_change_brings(dev_plan: dict[str, Any]) -> None:
    def resize_vm(config: dict[str, Any]) -> None:
        config[GPU_POOLS][0]["vmSize"] = "Standard_NC8as_T4_v3"

    head = _plan_with(resize_vm)
    diff = plan_diff.diff_plans(dev_plan, head)
    text = diff_text.render(diff, "Plan diff for stack 'dev'", markdown=True)
    first = text.split("```", 1)[0]
    (quota,) = [q for q in diff.quota if q.name == "standardNCASv3_T4Family"]
    pool = next(p for p in load_stack_file("dev", REPO_ROOT)[GPU_POOLS] if p["vmSize"] == "Standard_NC4as_T4_v3")
    assert quota.delta == 4 * pool["maxCount"], "4 more vCPUs per node at maxCount: the quota request grows by that"
    ceiling = next(c for c in diff.monthly if c.name == "ceiling")
    assert ceiling.delta > 0, "a bigger VM raises the monthly ceiling"
    assert f"ceiling +${ceiling.delta:,.0f}/month" in first, f"the reviewer reads the cost change first:\n{first}"
    assert "standardNCASv3_T4Family" in first and "(+" in first, "and the quota change, before the resource list"
    assert "replace (create-before-delete)" in text, "then what is replaced, in which order"


def _resize_vm(config: dict[str, Any]) -> None:
    config[GPU_POOLS][0]["vmSize"] = "Standard_NC8as_T4_v3"


def test_a_create_before_delete_pool_replacement_shows_the_quota_both_pools_hold(dev_plan: dict[str, Any]) -> None:
    change = _pool_change(plan_diff.diff_plans(dev_plan, _plan_with(_resize_vm)))
    (peak,) = [n for n in change.notes if n.startswith("quota peak")]
    max_count = load_stack_file("dev", REPO_ROOT)[GPU_POOLS][0]["maxCount"]
    old, new = 4 * max_count, 8 * max_count  # NC4as_T4_v3 and NC8as_T4_v3 vCPUs at maxCount
    assert f"old {old} + new {new} = {old + new} vCPUs" in peak and "standardNCASv3_T4Family" in peak, (
        "while the new pool comes up beside the old one both count against the family quota: the request must "
        f"cover the sum, not the new pool alone: {peak}"
    )


def test_replacing_a_gpu_pool_warns_that_its_jobs_are_drained_and_for_how_long(dev_plan: dict[str, Any]) -> None:
    change = _pool_change(plan_diff.diff_plans(dev_plan, _plan_with(_resize_vm)))
    (drained,) = [n for n in change.notes if n.startswith("GPU pool replaced")]
    drain = load_stack_file("dev", REPO_ROOT)["aks-gpu-platform:upgrade"]["gpuPools"]["drainTimeoutInMinutes"]
    assert "running jobs" in drained and f"up to {drain} min" in drained, (
        f"a reviewer must see that approving this stops the team's running jobs, and for how long: {drained}"
    )
    text = diff_text.render(plan_diff.diff_plans(dev_plan, _plan_with(_resize_vm)), "t")
    assert f"note: {drained}" in text, "the warning is printed under the pool"


def test_a_pool_deleted_before_its_replacement_claims_no_quota_peak(dev_plan: dict[str, Any]) -> None:
    head = _plan_with(_resize_vm)
    for entry in head["resources"].values():
        if entry["type"] == AGENT_POOL and entry["name"] == "platform-gpu-gput4-pool":
            entry["options"]["deleteBeforeReplace"] = True
    change = _pool_change(plan_diff.diff_plans(dev_plan, head))
    assert change.order == "delete-before-replace"
    assert not [n for n in change.notes if n.startswith("quota peak")], (
        f"the old pool is gone before the new one comes up: the quota never holds both: {change.notes}"
    )
    assert [n for n in change.notes if n.startswith("GPU pool replaced")], "its running jobs are drained all the same"


def test_a_vm_size_with_more_gpus_per_node_shows_the_team_quotas_against_the_new_capacity(
    dev_plan: dict[str, Any],
) -> None:
    def four_gpus(config: dict[str, Any]) -> None:
        config[GPU_POOLS][0]["vmSize"] = "Standard_NC64as_T4_v3"  # 4 T4s per VM

    change = _pool_change(plan_diff.diff_plans(dev_plan, _plan_with(four_gpus)))
    max_count = load_stack_file("dev", REPO_ROOT)[GPU_POOLS][0]["maxCount"]
    (capacity,) = [n for n in change.notes if n.startswith("GPU capacity")]
    assert f"{max_count} -> {4 * max_count}" in capacity and "ml 2" in capacity, (
        f"a new VM size changes the pool's GPUs as much as maxCount does: the reviewer weighs it against the quotas: "
        f"{capacity}"
    )


def test_a_change_of_pool_capacity_shows_the_team_quotas_against_it(dev_plan: dict[str, Any]) -> None:
    def shrink(config: dict[str, Any]) -> None:
        # One node fewer than dev's: the team's 1 GPU beside the sample's and the model's kept-up replicas.
        config[GPU_POOLS][0]["maxCount"] = 3
        config["aks-gpu-platform:training"]["teams"][0]["quotas"][0]["gpus"] = 1

    change = _pool_change(plan_diff.diff_plans(dev_plan, _plan_with(shrink)))
    (capacity,) = [n for n in change.notes if n.startswith("GPU capacity")]
    max_count = load_stack_file("dev", REPO_ROOT)[GPU_POOLS][0]["maxCount"]
    assert f"{max_count} -> 3" in capacity and "ml 1" in capacity, (
        f"the reviewer compares the new capacity with what the teams are guaranteed on it: {capacity}"
    )


def test_the_capacity_beside_the_team_quotas_counts_what_the_nodes_advertise(dev_plan: dict[str, Any]) -> None:
    """Quotas count the devices nodes advertise (shared replicas, MIG slices): the capacity beside them must too."""

    def time_sliced(config: dict[str, Any]) -> None:
        without_models(config)  # a model server needs whole GPUs
        config[GPU_POOLS][0].update(maxCount=2, sharing={"mode": "timeSlicing", "replicas": 4})
        config["aks-gpu-platform:autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0
        config["aks-gpu-platform:training"]["teams"][0]["quotas"][0]["gpus"] = 8

    change = _pool_change(plan_diff.diff_plans(dev_plan, _plan_with(time_sliced)))
    (capacity,) = [n for n in change.notes if n.startswith("GPU capacity")]
    max_count = load_stack_file("dev", REPO_ROOT)[GPU_POOLS][0]["maxCount"]
    assert f"{max_count} -> 8" in capacity and "ml 8" in capacity, (
        f"2 T4 nodes shared 4 ways advertise 8 nvidia.com/gpu, the 8 the team may hold; 2 GPUs beside a quota of 8 "
        f"would read as a quota the pool cannot hold: {capacity}"
    )


def test_an_unpriced_addition_reads_unpriced_never_plus_zero(dev_plan: dict[str, Any]) -> None:
    def lustre(config: dict[str, Any]) -> None:
        config["aks-gpu-platform:storage"]["lustre"]["enabled"] = True

    diff = plan_diff.diff_plans(dev_plan, _plan_with(lustre))
    assert any("Lustre" in item for item in diff.unpriced_added), diff.unpriced_added
    lines = diff_text.summary_lines(diff)
    money = next(line for line in lines if line.startswith("Monthly cost"))
    assert "+$0/" not in money and "unpriced" in money, (
        f"a filesystem billed from creation without a known price must not read as free: {money}"
    )
    assert any(line.startswith("Unpriced") and "Lustre" in line for line in lines), lines
    no_change = diff_text.summary_lines(replace(diff, unpriced_added=[]))
    assert "unpriced" not in " ".join(no_change), "nothing new unpriced, nothing said"
    older = copy.deepcopy(dev_plan)
    del older["summary"]["unpriced"]  # a base planned before the list existed
    assert plan_diff.diff_plans(older, _plan_with(lustre)).unpriced_added == [], (
        "against a plan without the list, nothing can be called new: the diff must not blame the change for it"
    )


def test_moving_a_pool_to_another_subnet_is_refused_not_sent(dev_plan: dict[str, Any]) -> None:
    # AKS cannot change a node pool's subnet; azure-native does not force a replacement for it, so `pulumi up`
    # would send an update AKS rejects. The diff must say so and fail, before anyone applies it.
    pool_urn = next(u for u, e in sorted(dev_plan["resources"].items()) if e["type"] == AGENT_POOL)
    head = copy.deepcopy(dev_plan)
    head["resources"][pool_urn]["inputs"]["vnetSubnetID"] = (
        "/subscriptions/s/resourceGroups/rg/providers/x/subnets/other"
    )
    diff = plan_diff.diff_plans(dev_plan, head)
    (change,) = diff.refused
    assert change.op == "update" and change.urn == pool_urn, "an update, not a replacement: that is what is sent"
    (prop,) = [p for p in change.changes if p.path == "vnetSubnetID"]
    assert prop.refused and "rename the pool" in prop.refused, "the diff says why it fails and what to do instead"
    text = diff_text.render(diff, "t")
    assert "refused by Azure" in text and "Refused:" in text, text


def test_without_the_option_azure_native_would_delete_the_pool_first(dev_plan: dict[str, Any]) -> None:
    """What `pulumi up` did before pools set deleteBeforeReplace=False: the provider asks to delete first."""
    pool = next(e for e in dev_plan["resources"].values() if e["type"] == AGENT_POOL)
    left_to_provider = copy.deepcopy(pool)
    left_to_provider["options"]["deleteBeforeReplace"] = None
    order, why = replacement_order(pool, left_to_provider)
    assert order == "delete-before-replace" and "agentPoolName is set" in why, why


def _edited(
    plan: dict[str, Any], type_token: str, edit: Callable[[dict[str, Any]], None]
) -> tuple[str, dict[str, Any]]:
    head = copy.deepcopy(plan)
    urn = next(u for u, e in sorted(head["resources"].items()) if e["type"] == type_token)
    edit(head["resources"][urn]["inputs"])
    return urn, head


def test_kubernetes_objects_replace_on_immutable_fields_and_keep_their_name_deleting_first(
    dev_plan: dict[str, Any],
) -> None:
    urn, head = _edited(dev_plan, "kubernetes:core/v1:ConfigMap", lambda i: i.update(data={"counters.csv": "x"}))
    change = next(c for c in plan_diff.diff_plans(dev_plan, head).changes if c.urn == urn)
    assert change.op == "replace", "ConfigMap data is immutable to pulumi-kubernetes unless made mutable"
    assert change.order == "delete-before-replace", "the same name cannot exist twice in a namespace"

    urn, head = _edited(
        dev_plan, "kubernetes:storage.k8s.io/v1:StorageClass", lambda i: i["metadata"].update(name="blob-renamed")
    )
    change = next(c for c in plan_diff.diff_plans(dev_plan, head).changes if c.urn == urn)
    assert change.op == "replace" and change.order == "create-before-delete", "a new name can exist beside the old"

    urn, head = _edited(dev_plan, "kubernetes:apps/v1:Deployment", lambda i: i["metadata"].update(labels={"a": "b"}))
    change = next(c for c in plan_diff.diff_plans(dev_plan, head).changes if c.urn == urn)
    assert change.op == "update", "labels change in place"


def test_a_renamed_resource_without_an_alias_is_flagged(dev_plan: dict[str, Any]) -> None:
    head = copy.deepcopy(dev_plan)
    urn = next(u for u, e in head["resources"].items() if e["type"] == "kubernetes:core/v1:Namespace")
    head["resources"][urn + "-renamed"] = head["resources"].pop(urn)
    diff = plan_diff.diff_plans(dev_plan, head)
    assert [c.op for c in diff.changes] == ["delete", "create"], diff.changes
    create = diff.of("create")[0]
    assert create.notes and "without `aliases`" in create.notes[0], "a logical rename deletes the object it took over"


def test_identical_plans_show_no_changes(dev_plan: dict[str, Any]) -> None:
    diff = plan_diff.diff_plans(dev_plan, copy.deepcopy(dev_plan))
    assert diff.changes == [] and diff.outputs_changed == []
    assert diff.unchanged == sum(1 for e in dev_plan["resources"].values() if e["custom"]) > 0
    assert "No changes." in diff_text.render(diff, "t")


@pytest.mark.parametrize("stack", STACKS)
def test_every_azure_resource_the_stack_registers_has_its_arm_path(
    recordings: dict[str, Recording], stack: str
) -> None:
    """Replacement and its order are read from these parameters; an unlisted type would be guessed."""
    azure = [r for r in recordings[stack].resources if r.type.startswith("azure-native:") and r.custom]
    assert azure, "the stack registers Azure resources"
    for resource in azure:
        params = AZURE_PATH_PARAMETERS.get(resource.type)
        assert params, f"{resource.type} is missing from aks_gpu_platform/testing/arm_paths.py"
        # Only a resource's own name may be left to Pulumi's auto-naming (role assignments get a GUID).
        missing = [p for p in params[:-1] if p not in resource.inputs]
        assert missing == [], f"{resource.type} {resource.name}: path parameters {missing} are not SDK input names"


def test_the_cli_compares_two_plan_files(dev_plan: dict[str, Any], tmp_path: Path) -> None:
    head = _plan_with(lambda config: config[GPU_POOLS][0].update(vmSize="Standard_NC8as_T4_v3"))
    (tmp_path / "base.json").write_text(dumps(dev_plan))
    (tmp_path / "head.json").write_text(dumps(head))
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = diff_command.main(
            ["--base-plan", str(tmp_path / "base.json"), "--head-plan", str(tmp_path / "head.json")]
        )
    out = printed.getvalue()
    assert code == 0, out
    assert "replace (create-before-delete) azure-native:containerservice:AgentPool platform-gpu-gput4-pool" in out, out
    assert "vmSize: Standard_NC4as_T4_v3 -> Standard_NC8as_T4_v3  [forces replacement" in out, out
    assert read_plan(tmp_path / "head.json") == head, "plan.json reads back as written"


def _git_has(commit: str) -> bool:
    return subprocess.run(["git", "-C", str(REPO_ROOT), "cat-file", "-e", commit], check=False).returncode == 0


def _worktrees() -> set[str]:
    """The base checkouts plan-diff has registered (other worktrees of the clone come and go on their own)."""
    listing = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "list", "--porcelain"], capture_output=True, text=True, check=True
    ).stdout
    return {line for line in listing.splitlines() if line.startswith("worktree ") and "/plan-diff-" in line}


def test_a_base_that_predates_plan_json_fails_with_a_clear_message() -> None:
    if not _git_has(BEFORE_PLAN_JSON):
        pytest.skip(f"this clone lacks {BEFORE_PLAN_JSON}")
    before = _worktrees()
    result = subprocess.run(
        [sys.executable, "-m", "aks_gpu_platform.plan.diff_command", "--stack", "dev", "--base", BEFORE_PLAN_JSON],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "predates machine-readable plans" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert _worktrees() <= before, "the temporary worktree of the base is removed again"


def test_plan_diff_plans_a_git_ref_in_a_temporary_worktree() -> None:
    before = _worktrees()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aks_gpu_platform.plan",
            "plan-diff",
            "--stack",
            "dev",
            "--base",
            "HEAD",
            "--format",
            "markdown",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert f"## Plan diff for stack 'dev': HEAD ({head.stdout.strip()[:12]}) -> the working tree" in result.stdout
    assert "to create" in result.stdout and "unchanged" in result.stdout
    assert _worktrees() <= before, "the temporary worktree of the base is removed again"


def _chargeback_edited(plan: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> tuple[str, dict[str, Any]]:
    head = copy.deepcopy(plan)
    urn = next(u for u, e in head["resources"].items() if e["name"] == "platform-monitoring-chargeback-recording-rules")
    edit(head["resources"][urn]["inputs"])
    return urn, head


def _text_of(base: dict[str, Any], head: dict[str, Any]) -> str:
    return diff_text.render(plan_diff.diff_plans(base, head), "t")


def test_an_element_inserted_at_the_front_of_a_list_reads_as_one_insertion(dev_plan: dict[str, Any]) -> None:
    spot = {
        "effect": "NoSchedule",
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
    }
    rule = {"record": "gpu_pool:new_rule:sum", "expression": "vector(1)"}

    def prepend(inputs: dict[str, Any]) -> None:
        inputs["rules"].insert(0, rule)

    urn, head = _chargeback_edited(dev_plan, prepend)
    tolerations = head["resources"][
        next(u for u, e in sorted(head["resources"].items()) if e["name"] == "platform-inference-sample-deployment")
    ]["inputs"]["spec"]["template"]["spec"]["tolerations"]
    assert len(tolerations) >= 1, "the sample tolerates the GPU taint already: an insertion goes before it"
    tolerations.insert(0, spot)
    diff = plan_diff.diff_plans(dev_plan, head)
    (rules,) = [c for c in diff.changes if c.urn == urn]
    assert [(p.path, p.before) for p in rules.changes] == [("rules[record=gpu_pool:new_rule:sum]", plan_diff.ABSENT)], (
        f"one rule added, not every rule after it changed: {[p.path for p in rules.changes]}"
    )
    text = _text_of(dev_plan, head)
    assert "rules[record=gpu_pool:new_rule:sum]: added" in text, text
    added = [line for line in text.splitlines() if "tolerations" in line]
    assert len(added) == 1 and "[key=kubernetes.azure.com/scalesetpriority,effect=NoSchedule]: added" in added[0], (
        f"the Spot toleration reads as one insertion, the GPU toleration after it as unchanged: {added}"
    )


def test_a_change_past_a_long_common_prefix_shows_the_part_that_differs(dev_plan: dict[str, Any]) -> None:
    opening = 'label_replace(vector(0.526), "gpu_pool", "gput4", "", "") or ' * 3

    def priced(usd: str) -> Callable[[dict[str, Any]], None]:
        def edit(inputs: dict[str, Any]) -> None:
            for rule in inputs["rules"]:
                if rule.get("record") == "gpu_pool:gpu_hour_price_usd:info":
                    rule["expression"] = f'{opening}label_replace(vector({usd}), "gpu_pool", "gpua100", "", "")'

        return edit

    _, base = _chargeback_edited(dev_plan, priced("0.4444"))
    _, head = _chargeback_edited(dev_plan, priced("3.673"))
    (line,) = [line for line in _text_of(base, head).splitlines() if "gpu_hour_price_usd" in line]
    before, after = line.split(": ", 1)[1].split(" -> ")
    assert "0.4444" in before and "3.673" in after, f"the changed price is what a reviewer sees: {line}"
    assert before.startswith("...") and len(line) < 160, f"the shared opening is elided: {line}"


def test_a_spot_a100_pool_with_a_team_quota_and_a_model_reads_as_its_reviewer_needs(tmp_path: Path) -> None:
    """The whole path a reviewer takes: plan the base and the head with the CLI, diff the two plan.json files."""
    import yaml

    from aks_gpu_platform.plan import report

    base = load_stack_file("dev", REPO_ROOT)
    head = copy.deepcopy(base)
    head[GPU_POOLS].append(
        {"name": "gpua100", "vmSize": "Standard_NC24ads_A100_v4", "priority": "Spot", "minCount": 0, "maxCount": 3}
    )
    head["aks-gpu-platform:training"]["teams"][0]["quotas"].append({"pool": "gpua100", "gpus": 2})
    model = copy.deepcopy(head["aks-gpu-platform:inference"]["models"][0])
    model.update(name="qwen-a100", pool="gpua100", dtype="bfloat16")
    head["aks-gpu-platform:inference"]["models"].append(model)
    for name, config in (("base", base), ("head", head)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({"config": config}))
        with redirect_stdout(io.StringIO()):
            code = report.main(
                ["--stack", "dev", "--config-file", str(tmp_path / f"{name}.yaml"), "--out", str(tmp_path / name)]
            )
        assert code == 0
    printed = io.StringIO()
    with redirect_stdout(printed):
        diff_command.main(
            ["--base-plan", str(tmp_path / "base" / "plan.json"), "--head-plan", str(tmp_path / "head" / "plan.json")]
        )
    text = printed.getvalue()
    summary = text.split("\n\n")[2]
    assert "Team ml: quota 2 GPUs" in summary and "-> quota 4 GPUs" in summary, f"the team's quota change:\n{summary}"
    assert "Model qwen-a100: no model -> floor $" in summary, f"the new model's cost:\n{summary}"
    new = [line for line in summary.splitlines() if line.startswith("New warning:")]
    assert any("qwen-a100" in line and "around the clock" in line for line in new), (
        f"the new model keeps an A100 up: a verdict the base did not have, listed:\n{summary}"
    )
    assert not any("qwen-0-5b" in line for line in new), f"verdicts both plans have are not new:\n{summary}"
    pool = text.split("create azure-native:containerservice:AgentPool platform-gpu-gpua100-pool\n", 1)[1]
    assert pool.startswith("    caused by: aks-gpu-platform:gpuPools[name=gpua100] (added)"), text
    head_plan = read_plan(tmp_path / "head" / "plan.json")
    assert head_plan["summary"]["teams"]["ml"]["estimate"] is False, "a sourced Spot price is no estimate"


def _repo(path: Path, branch: str, *config: str) -> Path:
    """A git repository whose first commit is on `branch`, as `git init` makes one where that is the default."""
    path.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *config, *args], check=True, capture_output=True)

    git("init", "--initial-branch", branch)
    (path / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    git("add", "Pulumi.yaml")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-m", "first")
    return path


def test_plan_diff_compares_against_master_where_git_init_made_master(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "consumer", "master")
    assert diff_command.default_base(repo) == "master", "a repository without main compares against its master"
    subprocess.run(["git", "-C", str(repo), "branch", "main"], check=True)
    assert diff_command.default_base(repo) == "main", "main, where it exists, before master"
    subprocess.run(["git", "-C", str(repo), "update-ref", "refs/remotes/origin/trunk", "HEAD"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk"], check=True
    )
    assert diff_command.default_base(repo) == "origin/trunk", "the remote's default branch before any local guess"


def test_plan_diff_names_the_option_when_no_default_branch_exists(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "consumer", "develop")
    with pytest.raises(RuntimeError, match=r"--base REF"):
        diff_command.default_base(repo)
    subprocess.run(["git", "-C", str(repo), "config", "init.defaultBranch", "develop"], check=True)
    assert diff_command.default_base(repo) == "develop", "the branch init.defaultBranch names"
    not_git = tmp_path / "plain"
    not_git.mkdir()
    (not_git / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        code = diff_command.main(["--project-dir", str(not_git), "--base", "main"])
    assert code == 2 and "not in a git repository" in errors.getvalue() and "--base-plan" in errors.getvalue(), (
        errors.getvalue()
    )


def test_a_change_no_resource_names_is_put_down_to_the_only_config_change(dev_plan: dict[str, Any]) -> None:
    def add_a10(config: dict[str, Any]) -> None:
        config[GPU_POOLS].append({"name": "gpua10", "vmSize": "Standard_NV36ads_A10_v5", "minCount": 0, "maxCount": 1})

    diff = plan_diff.diff_plans(dev_plan, _plan_with(add_a10))
    (job,) = [c for c in diff.changes if c.name == "platform-gpu-smoke-test-job"]
    assert job.causes == ("aks-gpu-platform:gpuPools[name=gpua10] (added; the only config change)",), (
        f"the smoke test's name hashes the pools: nothing in it names the new pool, the one change explains it: "
        f"{job.causes}"
    )
    assert any("runs again" in n and "GPU node" in n for n in job.notes), f"re-running it pulls a GPU node: {job.notes}"
    (pool,) = [c for c in diff.changes if c.type == AGENT_POOL and c.op == "create"]
    assert pool.causes == ("aks-gpu-platform:gpuPools[name=gpua10] (added)",), pool.causes


def test_a_base_tree_is_planned_with_its_own_package(tmp_path: Path) -> None:
    """This virtualenv's editable install maps aks_gpu_platform to the working tree; a BASE checkout must plan with
    its own components and config, or plan-diff would compare the working tree with itself."""
    assert diff_command.planning_python(REPO_ROOT, tmp_path) == sys.executable, "the working tree: this interpreter"
    base = repository_copy(tmp_path / "base")
    python = diff_command.planning_python(base, tmp_path)
    probe = "import aks_gpu_platform.components.platform as p, aks_gpu_platform.config.loader as c\n"
    found = subprocess.run(
        [python, "-c", probe + "print(p.__file__, c.__file__)"], cwd=tmp_path, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    platform, loader = found.stdout.split()
    assert Path(platform).is_relative_to(base / "components") and Path(loader).is_relative_to(base / "config"), (
        f"the base's own folders, not the working tree's: {found.stdout}"
    )


def test_a_long_clause_appended_to_a_long_value_shows_what_it_adds() -> None:
    """A chargeback rule gaining a pool's price: the new pool and its price sit inside the added clause."""
    from aks_gpu_platform.plan.diff import PropertyChange
    from aks_gpu_platform.plan.diff_text import show_change

    before = 'label_replace(label_replace(vector(0.526), "gpu_pool", "gput4", "", ""), "estimate", "false", "", "")'
    added = (
        ' or label_replace(label_replace(vector(0.4444), "gpu_pool", "spota100", "", ""), "estimate", "true", "", "")'
    )
    line = show_change(PropertyChange("rules[0].expression", before, before + added, None))
    shown_after = line.split(" -> ", 1)[1]
    assert "vector(0.4444)" in shown_after and "spota100" in shown_after, line
