"""Capacity contract: every job a team-facing page tells a person to run fits the stack it names.

Admitted by Kueue on the team's quota, and placed, all pods at once, on the admitted pool at its maxCount
beside what the stack keeps up there (tests/upstream/capacity.py). A job that passes admission but cannot be placed
waits forever while its team sees quota free.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.runtime import project_config
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of, without_models
from tests.platform.test_examples import EXAMPLES, run_example
from tests.platform.test_examples import recording as example_recording
from tests.training.test_example_training_job import JOBSET, KUBECONFIG, admit, admitted_pod
from tests.upstream.capacity import (
    SCALED_OBJECT,
    gpu_pools,
    pinned_gpu_workloads,
    placement_problems,
    quotas_a_pinned_pod_may_take,
)
from tools import REPO_ROOT

TEAM_PAGES = ("docs/for-ml-teams.md", "docs/training.md", "examples/README.md")
# Each job file a team-facing page runs, and the stack the page runs it on.
DOCUMENTED_JOBS = {
    "examples/team-jobset/jobset.yaml": "dev",
    "examples/team-jobset/copy-data-dev.yaml": "dev",
    "examples/team-jobset/copy-data-prod.yaml": "prod",
    "examples/llm-serving/chat-job.yaml": "dev",
}


def documented_job_files() -> set[str]:
    found: set[str] = set()
    for page in TEAM_PAGES:
        found |= set(re.findall(r"kubectl (?:apply|create) -f (\S+\.ya?ml)", (REPO_ROOT / page).read_text()))
    return found


def test_every_job_a_team_page_runs_is_under_the_contract() -> None:
    assert documented_job_files() <= set(DOCUMENTED_JOBS), (
        "a job file a page tells a person to apply must name its stack here, so its capacity is checked"
    )


def pod_sets(documents: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any], int]]:
    """(namespace, queue, pod template, pod count) of each JobSet (one pod set per replicated job) and Job."""
    found = []
    for document in documents:
        if document and document["kind"] == "Job":
            meta = document["metadata"]
            count = document["spec"].get("parallelism", 1)
            found.append(
                (meta["namespace"], meta["labels"]["kueue.x-k8s.io/queue-name"], document["spec"]["template"], count)
            )
        if document and document["kind"] == "JobSet":
            meta = document["metadata"]
            for replicated in document["spec"]["replicatedJobs"]:
                job = replicated["template"]["spec"]
                count = replicated.get("replicas", 1) * job.get("parallelism", 1)
                found.append((meta["namespace"], meta["labels"]["kueue.x-k8s.io/queue-name"], job["template"], count))
    return found


def check_job(recording: Recording, path: str, documents: list[dict[str, Any]] | None = None) -> list[str]:
    """Why the JobSets of `path` (or `documents`, what it renders) cannot run on `recording`'s stack."""
    if documents is None:
        documents = list(yaml.safe_load_all((REPO_ROOT / path).read_text()))
    problems: list[str] = []
    for namespace, queue, pod, count in pod_sets(documents):
        flavor = admit(recording, queue, namespace, pod, count)
        if flavor is None:
            problems.append(f"{path}: Kueue admits none of its {count} pods on queue {namespace}/{queue}")
            continue
        problems += [
            f"{path}: {p}" for p in placement_problems(recording, flavor, admitted_pod(recording, pod, flavor), count)
        ]
    return problems


@pytest.mark.parametrize("path", sorted(DOCUMENTED_JOBS))
def test_a_documented_job_is_admitted_and_placed_beside_what_the_stack_keeps_up(
    path: str, dev_recording: Recording, prod_recording: Recording
) -> None:
    recording = {"dev": dev_recording, "prod": prod_recording}[DOCUMENTED_JOBS[path]]
    assert not check_job(recording, path), "the page's job must run on the stack the page names"


def test_the_training_job_example_runs_on_the_platform_stack_its_stack_file_names() -> None:
    platform = example_recording("infiniband-training")
    (reference,) = [
        v
        for k, v in project_config(EXAMPLES / "training-job" / "Pulumi.dev.yaml")[1].items()
        if k.endswith(":platformStack")
    ]
    outputs = {"kubeconfig": KUBECONFIG, "trainingTeams": platform.stack_outputs["trainingTeams"]}
    job = run_example(EXAMPLES / "training-job", stack_references={reference: outputs})
    documents = [kubernetes_object(r) for r in job.of_type(JOBSET)]
    assert documents, "the example renders its JobSet"
    assert not check_job(platform, "examples/training-job", documents), (
        "the README's `pulumi up` must give a job that runs on the infiniband-training platform it names"
    )


def test_the_contract_sees_the_inference_sample_take_a_gpu_the_job_needed(dev_recording: Recording) -> None:
    # Today's dev: the sample's and the served model's minimum replicas are on the T4 pool the team's job uses.
    kept = sorted((p.source.split("/")[-1], p.replicas) for p in pinned_gpu_workloads(dev_recording))
    assert [n for _, n in kept] == [1, 1], f"the dev sample and the dev model each keep one GPU pod up: {kept}"
    pool = gpu_pools(dev_recording)["gput4"]
    recording = copy.deepcopy(dev_recording)
    for r in recording.of_type("azure-native:containerservice:AgentPool"):
        if r.inputs.get("agentPoolName") == pool.name:
            r.inputs["maxCount"] = 3  # one node short: 2 for the 2-node job, 1 each for the sample and the model
    problems = check_job(recording, "examples/team-jobset/jobset.yaml")
    assert problems and "holds 1 of the job's 2 pods" in problems[0], problems


def test_the_config_refuses_quotas_the_pools_cannot_hold_beside_the_sample() -> None:
    config = copy.deepcopy(settings_of(without_models(load_stack_file("dev", REPO_ROOT))))
    (pool,) = config["gpuPools"]
    pool["maxCount"] = 2
    with pytest.raises(ConfigError) as refused:
        load_platform_config(config)
    message = str(refused.value)
    assert "training.teams[0].quotas[0].gpus" in message and "sampleInference" in message, (
        "the refusal names the quota field and what else holds the pool's GPUs"
    )
    config["autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0
    load_platform_config(config)  # a sample that scales to zero pins nothing


def test_what_the_stack_keeps_up_is_the_autoscalers_floor_not_the_deployment(dev_recording: Recording) -> None:
    """KEDA owns the sample's replicas (the Deployment states none): its minReplicaCount is what holds GPUs."""
    recording = run_stack("dev", without_models(load_stack_file("dev", REPO_ROOT)), project_dir=REPO_ROOT)
    pool = gpu_pools(recording)["gput4"]
    for r in recording.of_type("azure-native:containerservice:AgentPool"):
        if r.inputs.get("agentPoolName") == pool.name:
            r.inputs["maxCount"] = 2  # room for the 2-node job only when nothing else is kept up
    (scaled,) = recording.of_type(SCALED_OBJECT)
    scaled.inputs["spec"]["minReplicaCount"] = 0
    assert pinned_gpu_workloads(recording) == [], "a sample that scales to zero keeps no GPU"
    assert not check_job(recording, "examples/team-jobset/jobset.yaml"), "so the job gets the pool's two nodes"
    del scaled.inputs["spec"]["minReplicaCount"]
    assert pinned_gpu_workloads(recording) == [], "KEDA's minReplicaCount defaults to 0 (scaledobject_types.go)"
    scaled.inputs["spec"]["minReplicaCount"] = 2
    assert [p.replicas for p in pinned_gpu_workloads(recording)] == [2], "a floor of two keeps two GPU pods up"


def test_no_pinned_pod_can_take_a_gpu_a_teams_quota_guarantees(recordings: dict[str, Recording]) -> None:
    for stack, recording in recordings.items():
        assert not quotas_a_pinned_pod_may_take(recording), f"{stack}: a team's whole quota is always placeable"


def test_with_a_spare_pool_the_sample_stays_off_the_pool_a_team_holds_whole() -> None:
    """Two T4 pools: the team holds all of gput4, gput4b is spare. The sample's kept-up pod must go to gput4b;
    left free to pick, the scheduler may put it on gput4, and the team's 3-GPU job is admitted and never placed."""
    config = without_models(copy.deepcopy(load_stack_file("dev", REPO_ROOT)))
    (pool,) = config["aks-gpu-platform:gpuPools"]
    config["aks-gpu-platform:gpuPools"].append({**copy.deepcopy(pool), "name": "gput4b", "maxCount": 1})
    config["aks-gpu-platform:training"]["teams"][0]["quotas"][0]["gpus"] = 3
    recording = run_stack("dev", config, project_dir=REPO_ROOT)
    assert [p.replicas for p in pinned_gpu_workloads(recording)] == [1], "the sample keeps one pod up"
    assert not quotas_a_pinned_pod_may_take(recording), "the sample can land only where no quota is guaranteed"


def test_the_config_refuses_when_no_pool_has_room_for_every_kept_up_replica() -> None:
    """One free GPU on each of two pools does not hold two kept-up replicas: both may land on either pool."""
    config = copy.deepcopy(settings_of(without_models(load_stack_file("dev", REPO_ROOT))))
    (pool,) = config["gpuPools"]
    pool["maxCount"] = 3
    config["gpuPools"].append({**copy.deepcopy(pool), "name": "gput4b", "maxCount": 2})
    (team,) = config["training"]["teams"]
    team["quotas"].append({"pool": "gput4b", "gpus": 1})  # gput4: 3 - 2 = 1 free; gput4b: 2 - 1 = 1 free
    config["autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 2
    with pytest.raises(ConfigError) as refused:
        load_platform_config(config)
    assert "training.teams[0].quotas[0].gpus" in str(refused.value) and "no GPU pool has room" in str(refused.value)
    config["gpuPools"][1]["maxCount"] = 3  # gput4b: 3 - 1 = 2 free, room for both
    assert load_platform_config(config).sample_inference_pools() == ["gput4b"], "the sample is kept to gput4b"
