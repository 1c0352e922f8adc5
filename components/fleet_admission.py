"""On the MultiKueue manager: refuse, at submission, a job no member can ever admit.

The manager's ClusterQueues hold each team's quota summed over the members; a member's holds only its own share.
A job that fits the sum but no member is admitted on the manager, copied to every member, admitted by none, and
holds the manager's quota for as long as it exists: Kueue v0.19.2 has no dispatch timeout (pkg/controller/
admissionchecks/multikueue/workload.go waits for a member's Admitted condition without a deadline). So a
ValidatingAdmissionPolicy per team namespace refuses a Job or JobSet asking more GPUs than the largest share one
member can give that team (config/fleet.py largest_job), with a message that names the limit.

GPUs of a job, as Kueue counts them for its PodSets: per pod the GPU limits of its containers (an extended
resource's request equals its limit, and a pod may state only the limit), times a Job's parallelism, or for a
JobSet each replicated Job's replicas times its parallelism. Kubernetes CEL's `sum()` (list library,
k8s.io/apiserver pkg/cel/library/lists.go) adds them up.
"""

from collections.abc import Mapping, Sequence
from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.fleet import LargestJob

from .context import ClusterHandle

ADMISSION_GROUP = "admissionregistration.k8s.io"
POLICY_PREFIX = "fleet-largest-job"


def container_gpus(resources: Sequence[str]) -> str:
    """CEL: the GPUs one container `c` asks for, over every GPU resource name."""
    terms = [
        f"(has(c.resources) && has(c.resources.limits) && '{r}' in c.resources.limits ? "
        f"int(c.resources.limits['{r}']) : (has(c.resources) && has(c.resources.requests) && "
        f"'{r}' in c.resources.requests ? int(c.resources.requests['{r}']) : 0))"
        for r in resources
    ]
    return " + ".join(terms)


def _pod_gpus(pod: str, resources: Sequence[str]) -> str:
    return f"{pod}.containers.map(c, {container_gpus(resources)}).sum()"


def job_gpus_expression(resources: Sequence[str]) -> str:
    """CEL: the GPUs a Job or JobSet (`object`) asks for in all."""
    parallelism = "(has(object.spec.parallelism) ? object.spec.parallelism : 1)"
    job = f"{parallelism} * {_pod_gpus('object.spec.template.spec', resources)}"
    replicated = (
        "object.spec.replicatedJobs.map(r, (has(r.replicas) ? r.replicas : 1) * "
        "(has(r.template.spec.parallelism) ? r.template.spec.parallelism : 1) * "
        f"{_pod_gpus('r.template.spec.template.spec', resources)}).sum()"
    )
    return f"object.kind == 'JobSet' ? {replicated} : {job}"


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
        "variables": [{"name": "gpus", "expression": job_gpus_expression(resources)}],
        "validations": [
            {
                "expression": f"variables.gpus <= {limit.gpus}",
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
