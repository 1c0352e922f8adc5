"""On the MultiKueue manager: refuse, at submission, a job no member can ever admit.

The manager's ClusterQueues hold each team's quota summed over the members; a member's holds only its own share.
A job that fits the sum but no member is admitted on the manager, copied to every member, admitted by none, and
holds the manager's quota for as long as it exists: Kueue v0.19.2 has no dispatch timeout (pkg/controller/
admissionchecks/multikueue/workload.go waits for a member's Admitted condition without a deadline). So a
ValidatingAdmissionPolicy per team namespace refuses a Job or JobSet asking more GPUs than the largest share one
member can give that team (config/fleet/section.py largest_job), with a message that names the limit.
An update is refused
only when it asks more than the limit and more than before (a Job's parallelism is its one mutable GPU count): a
job admitted under a larger limit stays manageable after the quota is lowered.

GPUs of a job, as Kueue counts them for its PodSets. Per pod, what Kubernetes reserves for it (k8s.io/component-
helpers resource/helpers.go PodRequests, which Kueue's resources.NewRequestsFromPodSpec calls): the containers plus
the restartable (sidecar) init containers, or a plain init container plus those sidecars if that is more; each
container's GPU limit, else its request (an extended resource's request equals its limit, and a pod may state only
the limit). Plain init containers count here as if every sidecar started before them: never less than Kubernetes
counts. Pods per Job: min(parallelism, completions) (kueue pkg/controller/jobs/job/job_controller.go podsCount);
for a JobSet each replicated Job's replicas times that (jobset_controller.go PodsCountPerReplica). Kubernetes CEL's
list library (k8s.io/apiserver pkg/cel/library/lists.go: `sum()`, `min()`, `max()`) adds them up.
"""

from collections.abc import Mapping, Sequence
from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.fleet.section import LargestJob

from ..shared.cel import container_gpus
from ..shared.context import ClusterHandle

ADMISSION_GROUP = "admissionregistration.k8s.io"
POLICY_PREFIX = "fleet-largest-job"


SIDECAR = "(has(c.restartPolicy) && c.restartPolicy == 'Always')"


def _pod_gpus(pod: str, resources: Sequence[str]) -> str:
    """CEL: the GPUs Kubernetes reserves for one pod of spec `pod`."""
    gpus = container_gpus(resources)
    containers = f"{pod}.containers.map(c, {gpus}).sum()"
    inits = f"(has({pod}.initContainers) ? {pod}.initContainers : [])"
    sidecars = f"{inits}.filter(c, {SIDECAR}).map(c, {gpus}).sum()"
    largest_init = f"([0] + {inits}.filter(c, !{SIDECAR}).map(c, {gpus})).max()"
    return f"({sidecars} + [{containers}, {largest_init}].max())"


def _pods(job_spec: str) -> str:
    """CEL: the pods Kueue counts for one Job spec: min(parallelism, completions), parallelism defaulting to 1."""
    parallelism = f"(has({job_spec}.parallelism) ? {job_spec}.parallelism : 1)"
    completions = f"(has({job_spec}.completions) ? {job_spec}.completions : {parallelism})"
    return f"[{parallelism}, {completions}].min()"


def job_gpus_expression(resources: Sequence[str], root: str = "object") -> str:
    """CEL: the GPUs a Job or JobSet (`root`: the request's `object`, or `oldObject`) asks for in all."""
    job = f"{_pods(f'{root}.spec')} * {_pod_gpus(f'{root}.spec.template.spec', resources)}"
    replicated = (
        f"{root}.spec.replicatedJobs.map(r, (has(r.replicas) ? r.replicas : 1) * "
        f"{_pods('r.template.spec')} * {_pod_gpus('r.template.spec.template.spec', resources)}).sum()"
    )
    return f"{root}.kind == 'JobSet' ? {replicated} : {job}"


def largest_job_policy_spec(
    team: str, limit: LargestJob, resources: Sequence[str]
) -> k8s.admissionregistration.v1.ValidatingAdmissionPolicySpecArgsDict:
    """The team's policy: Jobs and JobSets whose GPUs exceed what one member can admit are refused."""
    where = f"member {limit.member}, pool {limit.pool}" if limit.member else "no member has quota for this team"
    return {
        "failure_policy": "Fail",
        "match_constraints": {
            "resource_rules": [
                {
                    "api_groups": ["batch"],
                    "api_versions": ["v1"],
                    "resources": ["jobs"],
                    "operations": ["CREATE", "UPDATE"],
                },
                {
                    "api_groups": ["jobset.x-k8s.io"],
                    "api_versions": ["v1alpha2"],
                    "resources": ["jobsets"],
                    "operations": ["CREATE", "UPDATE"],
                },
            ]
        },
        "variables": [
            {"name": "gpus", "expression": job_gpus_expression(resources)},
            # Variables are evaluated when first used: only for an update above the limit.
            {
                "name": "gpus_before",
                "expression": f"request.operation == 'UPDATE' ? ({job_gpus_expression(resources, 'oldObject')}) : 0",
            },
        ],
        "validations": [
            {
                # An update that asks no more than before passes: a job admitted under a larger limit (the quota
                # was lowered since) can still be suspended, relabelled or finished by Kueue and its owner.
                "expression": f"variables.gpus <= {limit.gpus} || variables.gpus <= variables.gpus_before",
                "message_expression": (
                    f"'this job asks ' + string(variables.gpus) + ' GPUs; the largest job team {team} can run is "
                    f"{limit.gpus} GPUs ({where}): no member could admit it and it would hold the team\\'s fleet "
                    "quota forever. Split it or ask the platform team for a larger quota.'"
                ),
                "reason": "Forbidden",
            }
        ],
    }


class LargestJobPolicyArgs(TypedDict):
    manager: ClusterHandle
    """The MultiKueue manager: where teams submit."""
    limits: Mapping[str, tuple[str, LargestJob]]
    """Team name -> (its namespace, the largest job it can run)."""
    gpu_resources: Sequence[str]
    """Every GPU resource name the fleet's pools advertise (nvidia.com/gpu, amd.com/gpu)."""


class LargestJobPolicy(pulumi.ComponentResource):
    """One ValidatingAdmissionPolicy and binding per team namespace on the manager."""

    def __init__(self, name: str, args: LargestJobPolicyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:FleetLargestJobPolicy", name, None, opts)
        on_manager = args["manager"].k8s_options(self)
        for team, (namespace, limit) in args["limits"].items():
            policy_name = f"{POLICY_PREFIX}-{team}"
            policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{team}",
                metadata={"name": policy_name},
                spec=largest_job_policy_spec(team, limit, args["gpu_resources"]),
                opts=on_manager,
            )
            k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-{team}-binding",
                metadata={"name": policy_name},
                spec={
                    "policy_name": policy.metadata["name"],
                    "validation_actions": ["Deny"],
                    "match_resources": {
                        "namespace_selector": {"match_labels": {"kubernetes.io/metadata.name": namespace}}
                    },
                },
                opts=on_manager,
            )
        self.register_outputs({})
