"""A distributed PyTorch training JobSet submitted through a team's Kueue LocalQueue.

Reads the platform's `kubeconfig` and `trainingTeams` outputs through a StackReference. What the
platform's libraries do, this example leaves to them:

- JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.12.0) creates the headless Service that gives every
  rank a DNS name, publishes rank 0's address as the coordinator, and restarts all ranks together
  (from the last checkpoint) when one fails.
- Kueue (through the `kueue.x-k8s.io/queue-name` label) holds the JobSet suspended until the team's
  quota and every GPU node it needs are there, then injects the chosen pool's node labels and
  tolerations. The JobSet is created without `suspend`: Kueue's webhook sets it, and a program
  that re-sent `suspend: true` on a later update would stop a running job.
- On a pool whose NVLink spans VMs (Grace-Blackwell), NVIDIA's DRA driver (installed by the platform)
  gives the job's ranks IMEX channels through a ComputeDomain: the example creates one per job and
  its pods claim the channel template the domain's controller creates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field

from aks_gpu_platform.config.base import ConfigModel
from aks_gpu_platform.config.gpu.scheduling import GPU_POOL_NAME_LABEL_KEY, GPU_RESOURCE, RDMA_RESOURCE
from aks_gpu_platform.config.loader import read_stack_settings, validate_section

PROJECT = "training-job"
LUSTRE_MOUNT = "/mnt/lustre"
MASTER_PORT = 29500
REPLICATED_JOB = "node"
CHECKPOINT_MOUNT = "/mnt/checkpoints"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
# JobSet puts rank 0's stable DNS name in this annotation on every pod (spec.coordinator).
COORDINATOR_ANNOTATION = "jobset.sigs.k8s.io/coordinator"
# The Job controller's annotation with the pod's index in an Indexed Job: the node rank.
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
# NVIDIA/k8s-dra-driver-gpu v0.4.0, api/nvidia.com/resource/v1beta1/computedomain.go and
# demo/specs/imex/nvbandwidth-test-job-1.yaml: the domain names the ResourceClaimTemplate its controller
# creates in the domain's namespace; each pod claims it and its containers name the claim.
COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
CHANNEL_CLAIM = "compute-domain-channel"


class TrainingJobConfig(ConfigModel):
    platform_stack: str = Field(pattern=r"^[\w.-]+/[\w.-]+/[\w.-]+$", description="org/project/stack of the platform")
    team: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description="Team whose LocalQueue and quota to use")
    job_name: str = Field(
        default="train",
        pattern=r"^[a-z]([-a-z0-9]{0,22}[a-z0-9])?$",
        description="JobSet name, at most 24 long: the coordinator label <name>-node-0-0.<name> must fit 63",
    )
    nodes: int = Field(default=2, ge=1, le=64, description="Pods, one per node; all start together or none")
    gpus_per_node: int = Field(default=1, ge=1, le=8, description="GPUs per pod, one torchrun process each")
    gpu_pool: str = Field(default="", description="Pin the job to one GPU pool (its Kueue flavor); empty: any")
    image: str = Field(default="nvcr.io/nvidia/pytorch:26.03-py3", pattern=r"^[^:@\s]+(:[\w.-]+|@sha256:[0-9a-f]{64})$")
    steps: int = Field(default=1000, ge=1)
    checkpoint_every: int = Field(default=100, ge=1, description="Steps between checkpoints")
    max_restarts: int = Field(
        default=3, ge=0, le=20, description="JobSet restarts of all ranks after a failure, each from the checkpoint"
    )
    rdma: bool = Field(
        default=False, description="Request the InfiniBand RDMA device, so NCCL uses the fabric (InfiniBand pools only)"
    )
    compute_domain: bool = Field(
        default=False,
        description="One ComputeDomain for the job, so its ranks share GPU memory over NVLink across VMs "
        "(multi-node NVLink pools only)",
    )
    checkpoint_claim: str = Field(
        default="",
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
        description="ReadWriteMany claim in the team namespace for checkpoints; empty: the team's Lustre claim",
    )
    cpu: str = "8"
    memory: str = "48Gi"


def select_team(teams: dict[str, Any], team: str, checkpoint_claim: str) -> dict[str, Any]:
    """The team's namespace, LocalQueue and checkpoint claim (its Lustre one unless another is named)."""
    if team not in teams:
        raise pulumi.RunError(f"team: {team!r} is not a team of the platform stack (has {sorted(teams)})")
    found = teams[team]
    if not checkpoint_claim and not found.get("lustrePvcName"):
        raise pulumi.RunError(
            f"team: {team!r} has no Lustre claim; enable storage.lustre on the platform stack "
            "or name a ReadWriteMany claim of the team in checkpointClaim"
        )
    return found


def check_compute_domain(team: dict[str, Any], wanted_pool: str, compute_domain: bool, nodes: int) -> None:
    """A ComputeDomain exactly where the job lands on multi-node NVLink: its channel exists only there."""
    pools = [wanted_pool] if wanted_pool else list(team["gpuPools"])
    nvlink = set(team.get("computeDomainPools") or [])
    if compute_domain and not set(pools) <= nvlink:
        raise pulumi.RunError(
            f"computeDomain: the job can land on {sorted(set(pools) - nvlink)}, which have no multi-node NVLink: "
            f"its pods would wait forever for an IMEX channel; pin gpuPool to one of {sorted(nvlink)}"
        )
    if not compute_domain and nodes > 1 and pools and set(pools) <= nvlink:
        raise pulumi.RunError(
            f"computeDomain: {nodes} ranks on multi-node NVLink pool(s) {sorted(pools)} need a ComputeDomain to "
            "share GPU memory across VMs; set computeDomain: true"
        )


def node_selector(team_pools: list[str], wanted: str) -> dict[str, str]:
    """One of the pools the team has quota on (Kueue admits a pinned job only on a matching flavor)."""
    if wanted not in team_pools:
        raise pulumi.RunError(f"gpuPool: {wanted!r} is not a pool the team has quota on (has {team_pools})")
    return {GPU_POOL_NAME_LABEL_KEY: wanted}


def channel_template(job_name: str) -> str:
    return f"{job_name}-channel"


def compute_domain(
    job_name: str, metadata: dict[str, Any], nodes: int, opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """The job's ComputeDomain: the IMEX domain its ranks join, with the channel template they claim."""
    return k8s.apiextensions.CustomResource(
        f"{job_name}-domain",
        api_version=COMPUTE_DOMAIN_API_VERSION,
        kind="ComputeDomain",
        metadata=metadata,
        spec={
            # With the driver's default IMEXDaemonsWithDNSNames gate, numNodes only sets when the domain's
            # status reads Ready (all ranks' IMEX daemons up); it does not hold pods back.
            "numNodes": nodes,
            "channel": {"resourceClaimTemplate": {"name": channel_template(job_name)}},
        },
        # The CRD declares spec immutable (x-kubernetes-validations `self == oldSelf`): a new node count
        # replaces the domain instead of an update the API server refuses.
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(replace_on_changes=["spec"], delete_before_replace=True)
        ),
    )


def annotation_env(name: str, annotation: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}}


def main() -> None:
    cfg = validate_section(TrainingJobConfig, read_stack_settings(PROJECT), source="training-job config")
    platform = pulumi.StackReference(cfg.platform_stack)
    team = platform.require_output("trainingTeams").apply(
        lambda teams: select_team(teams, cfg.team, cfg.checkpoint_claim)
    )
    # Checked where the namespace is read, so no object is created for a job that cannot run.
    namespace = team.apply(
        lambda t: (check_compute_domain(t, cfg.gpu_pool, cfg.compute_domain, cfg.nodes), t["namespace"])[1]
    )
    provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))
    opts = pulumi.ResourceOptions(provider=provider)

    name = cfg.job_name
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": PROJECT}

    def meta(object_name: str = name, extra_labels: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"name": object_name, "namespace": namespace, "labels": {**labels, **(extra_labels or {})}}

    script = k8s.core.v1.ConfigMap(
        f"{name}-script",
        metadata=meta(f"{name}-script"),
        data={"train.py": (Path(__file__).parent / "train.py").read_text()},
        opts=opts,
    )
    # The team's Lustre claim, or the claim named in checkpointClaim (Lustre's CSI node has no Arm64 build).
    if cfg.checkpoint_claim:
        volume, mount, claim = "checkpoints", CHECKPOINT_MOUNT, pulumi.Output.from_input(cfg.checkpoint_claim)
    else:
        volume, mount, claim = "lustre", LUSTRE_MOUNT, team.apply(lambda t: str(t["lustrePvcName"]))
    # The claim is the team's own directory (Lustre: teams/<team>, owned by the team's uid): one tree per job name.
    checkpoint_dir = pulumi.Output.from_input(f"{mount}/checkpoints/{name}")
    gpus = str(cfg.gpus_per_node)
    devices = {GPU_RESOURCE: gpus, **({RDMA_RESOURCE: "1"} if cfg.rdma else {})}
    container: dict[str, Any] = {
        "name": "trainer",
        "image": cfg.image,
        "command": [
            "torchrun",
            f"--nnodes={cfg.nodes}",
            f"--nproc-per-node={cfg.gpus_per_node}",
            "--node-rank=$(NODE_RANK)",
            "--master-addr=$(MASTER_ADDR)",
            f"--master-port={MASTER_PORT}",
            "/opt/train/train.py",
        ],
        "env": [
            annotation_env("NODE_RANK", COMPLETION_INDEX_ANNOTATION),
            annotation_env("MASTER_ADDR", COORDINATOR_ANNOTATION),
            {"name": "CHECKPOINT_DIR", "value": checkpoint_dir},
            {"name": "CHECKPOINT_EVERY", "value": str(cfg.checkpoint_every)},
            {"name": "STEPS", "value": str(cfg.steps)},
        ],
        "ports": [{"name": "rendezvous", "containerPort": MASTER_PORT}],
        "resources": {
            "requests": {"cpu": cfg.cpu, "memory": cfg.memory, **devices},
            "limits": {"cpu": cfg.cpu, "memory": cfg.memory, **devices},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            # NCCL over RDMA pins memory: IPC_LOCK, which reaches only a root process (no ambient capabilities).
            # The platform admits root with IPC_LOCK alone in the namespaces of teams with InfiniBand quota.
            **(
                {"runAsUser": 0, "runAsNonRoot": False, "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}}
                if cfg.rdma
                else {}
            ),
        },
        "volumeMounts": [
            {"name": volume, "mountPath": mount},
            {"name": "script", "mountPath": "/opt/train", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        # Time for rank 0 to write a checkpoint after SIGTERM (preemption, drain).
        "terminationGracePeriodSeconds": 120,
        # The team's identity (trainingTeams uid/gid): the only one the platform admits in the team's namespace,
        # and the owner of its directory.
        "securityContext": team.apply(
            lambda t: {
                "runAsNonRoot": True,
                "runAsUser": t["uid"],
                "runAsGroup": t["gid"],
                "fsGroup": t["gid"],
                "supplementalGroupsPolicy": "Strict",
                "seccompProfile": {"type": "RuntimeDefault"},
            }
        ),
        "containers": [container],
        "volumes": [
            {"name": volume, "persistentVolumeClaim": {"claimName": claim}},
            {"name": "script", "configMap": {"name": script.metadata["name"]}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        ],
    }
    if cfg.gpu_pool:
        wanted = cfg.gpu_pool
        # Without a pin Kueue picks one of the team's pools and injects its labels and tolerations.
        pod_spec["nodeSelector"] = team.apply(lambda t: node_selector(t["gpuPools"], wanted))
    jobset_after: list[pulumi.Resource] = []
    if cfg.compute_domain:
        domain = compute_domain(name, meta(f"{name}-domain"), cfg.nodes, opts)
        # Every rank claims one IMEX channel of the job's domain, from the template its controller creates.
        pod_spec["resourceClaims"] = [{"name": CHANNEL_CLAIM, "resourceClaimTemplateName": channel_template(name)}]
        container["resources"]["claims"] = [{"name": CHANNEL_CLAIM}]
        # Kueue reads the claim template when it admits (kueue v0.19.2 pkg/dra/claims.go getClaimSpec): the
        # domain first, so its controller can create the template; a missing one is retried, not refused.
        jobset_after.append(domain)
    jobset = k8s.apiextensions.CustomResource(
        name,
        api_version="jobset.x-k8s.io/v1alpha2",
        kind="JobSet",
        # The one Kueue-specific line: submit through the team's LocalQueue.
        metadata=meta(extra_labels={QUEUE_NAME_LABEL: team.apply(lambda t: t["localQueue"])}),
        spec={
            # Ranks resolve each other (and rank 0) before every pod is Ready.
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "coordinator": {"replicatedJob": REPLICATED_JOB, "jobIndex": 0, "podIndex": 0},
            # Any failed rank restarts all of them; train.py resumes from the last checkpoint.
            "failurePolicy": {"maxRestarts": cfg.max_restarts, "restartStrategy": "Recreate"},
            "successPolicy": {"operator": "All"},
            "ttlSecondsAfterFinished": 86400,
            # One replicated job = one Kueue pod set = one flavor: every rank lands on the same pool.
            "replicatedJobs": [
                {
                    "name": REPLICATED_JOB,
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "completionMode": "Indexed",
                            "completions": cfg.nodes,
                            "parallelism": cfg.nodes,
                            "backoffLimit": 0,  # the JobSet failure policy restarts the group instead
                            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
                        }
                    },
                }
            ],
        },
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=jobset_after)),
    )
    # Blocks voluntary evictions (node drains, upgrades) of running ranks: losing one stalls them all.
    k8s.policy.v1.PodDisruptionBudget(
        f"{name}-ranks",
        metadata=meta(f"{name}-ranks"),
        spec={"minAvailable": cfg.nodes, "selector": {"matchLabels": labels}},
        opts=opts,
    )

    pulumi.export("jobSetName", jobset.metadata["name"])
    pulumi.export("namespace", namespace)
    pulumi.export("localQueue", team.apply(lambda t: t["localQueue"]))
    pulumi.export("checkpointDir", checkpoint_dir)


main()
