"""Capacity contract: every job a team-facing page tells a person to run fits the stack it names.

Admitted by Kueue on the team's quota, and placed, all pods at once, on the admitted pool at its maxCount
beside what the stack keeps up there (tests/capacity.py). A job that passes admission but cannot be placed
waits forever while its team sees quota free.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.runtime import project_config
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.capacity import pinned_gpu_workloads, placement_problems
from tests.conftest import settings_of
from tests.test_example_training_job import JOBSET, KUBECONFIG, admit, admitted_pod
from tests.test_examples import EXAMPLES, run_example
from tests.test_examples import recording as example_recording
from tools import REPO_ROOT

TEAM_PAGES = ("docs/for-ml-teams.md", "docs/training.md", "examples/README.md")
# Each job file a team-facing page runs, and the stack the page runs it on.
DOCUMENTED_JOBS = {"examples/team-jobset/jobset.yaml": "dev", "examples/team-jobset/copy-data.yaml": "dev"}


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
    # Today's dev: the sample's minimum replica is on the T4 pool the team's job uses.
    assert [p.replicas for p in pinned_gpu_workloads(dev_recording)] == [1], "the dev sample keeps one GPU pod up"
    from tests.capacity import gpu_pools

    pool = gpu_pools(dev_recording)["gput4"]
    recording = copy.deepcopy(dev_recording)
    for r in recording.of_type("azure-native:containerservice:AgentPool"):
        if r.inputs.get("agentPoolName") == pool.name:
            r.inputs["maxCount"] = 2  # the pool as it was: 2 nodes for a 2-node job and the sample
    problems = check_job(recording, "examples/team-jobset/jobset.yaml")
    assert problems and "holds 1 of the job's 2 pods" in problems[0], problems


def test_the_config_refuses_quotas_the_pools_cannot_hold_beside_the_sample() -> None:
    config = copy.deepcopy(settings_of(load_stack_file("dev", REPO_ROOT)))
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
