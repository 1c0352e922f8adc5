"""Training section: Kueue quotas and all-or-nothing admission for teams, JobSet for distributed jobs.

Kueue objects and fields follow the v1beta2 CRDs of Kueue v0.19.2
(kubernetes-sigs/kueue, config/components/crd/bases at tag v0.19.2).
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from ..base import ConfigModel
from ..errors import field_error
from ..gpu.section import GpuPoolConfig
from ..types import DNS_LABEL_PATTERN as DNS_LABEL_PATTERN  # the name this module had
from ..types import DnsLabel, EntraObjectId

# A Kubernetes name that is also a DNS label (namespaces, LocalQueues, cohorts, ClusterQueues).
# Kubernetes resource.Quantity, as the Kueue CRD's nominalQuota pattern accepts it (e.g. "96", "500m", "1800Gi").
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
Quantity = Annotated[
    str,
    StringConstraints(pattern=QUANTITY_PATTERN),
    Field(description="Kubernetes quantity, e.g. 96 (CPU cores), 500m, 1800Gi"),
]

ProvisioningClass = Literal[
    "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
    "check-capacity.autoscaling.x-k8s.io",
]
QueueingStrategy = Literal["BestEffortFIFO", "StrictFIFO"]
WithinClusterQueue = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimWithinCohort = Literal["Never", "LowerPriority", "Any"]
BorrowWithinCohort = Literal["Never", "LowerPriority"]

# Namespaces the platform or Kubernetes own; a team namespace there would be shared with system pods.
# (kueue-system / jobset-system: the releases here; gpu-*/nvidia-*: components/gpu/nvidia_stack.py;
# azurelustre: the Lustre CSI driver.)
RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kueue-system",
        "jobset-system",
        "gpu-resources",
        "gpu-operator",
        "nvidia-network-operator",
        "azurelustre",
    }
)

# The POSIX identity a team's pods run as, which owns its directory on shared filesystems: above the ids images
# and distributions hand out (0-999 system, 1000+ first users: 1000 itself is the usual image user), below 2^31
# (Kubernetes' runAsUser/runAsGroup/fsGroup limit is 2^31-1).
TEAM_ID_MIN = 1001
TEAM_ID_MAX = 2**31 - 1
# A team without an explicit uid gets one derived from its name: stable whatever the order of the teams.
DERIVED_ID_BASE = 100_000
DERIVED_ID_SPAN = 900_000


def derived_team_id(team: str) -> int:
    """The uid (and gid) of a team that sets none: 100000-999999 from a hash of its name."""
    return DERIVED_ID_BASE + int(hashlib.sha256(team.encode()).hexdigest(), 16) % DERIVED_ID_SPAN


# ResourceFlavor spec.nodeTaints / spec.tolerations maxItems (Kueue v0.19.2 CRD).
FLAVOR_MAX_TAINTS = 8


def gpus_per_node(pool: GpuPoolConfig) -> int:
    """`nvidia.com/gpu` one node of the pool advertises: GPUs per VM, times the MIG instances each GPU is split
    into (the device plugin's `single` strategy shows each instance as one device; counts from the GPU catalog),
    times the replicas of a shared pool (the plugin advertises each device `replicas` times: NVIDIA/k8s-device-plugin
    v0.20.0 README, "Shared Access to GPUs", 8 GPUs x 10 replicas = 80)."""
    mig = pool.sku.mig_slice(pool.mig_profile) if pool.mig_profile else None
    replicas = pool.sharing.replicas if pool.sharing else 1
    return pool.sku.gpus_per_vm * (mig.per_gpu if mig else 1) * replicas


def gpu_capacity(pool: GpuPoolConfig) -> int:
    """The most `nvidia.com/gpu` a pool offers: maxCount nodes x GPUs per node."""
    return pool.max_count * gpus_per_node(pool)


class KueueConfig(ConfigModel):
    """Kueue, the batch admission controller: queues, quotas, preemption, all-or-nothing admission."""

    enabled: bool = Field(default=False, description="Install Kueue (and JobSet) and create the team queues")
    replicas: int = Field(
        default=2,
        ge=1,
        le=3,
        description="Controller replicas (leader election); 2+ keeps the job webhooks answering through a node drain",
    )
    pods_ready_timeout_minutes: int = Field(
        default=30,
        ge=5,
        le=1440,
        description="An admitted job whose pods are not all Ready by then is evicted and requeued, freeing its "
        "quota (covers GPU node start-up and multi-GB image pulls; 5 min is the least that fits a node boot)",
    )


class JobSetConfig(ConfigModel):
    """JobSet, the Kubernetes API for distributed jobs (one group of pods, one DNS domain, one failure policy)."""

    enabled: bool = Field(default=True, description="Install the JobSet controller (needed by the training example)")


class AdmissionConfig(ConfigModel):
    """What Kueue waits for besides quota before it admits a job."""

    provisioning_request: bool = Field(
        default=True,
        description="Admit a GPU job only once the cluster autoscaler has brought up every node it needs "
        "(a ProvisioningRequest admission check); off: admit on quota and rely on the pods-ready timeout",
    )
    provisioning_class: ProvisioningClass = Field(
        default="best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        description="best-effort-atomic-scale-up scales the pool up in one step (what AKS documents for Kueue); "
        "check-capacity only checks existing nodes and never scales, so pools at zero never admit",
    )


class PreemptionConfig(ConfigModel):
    """When a pending job of this team may evict running ones (Kueue ClusterQueue `spec.preemption`)."""

    within_cluster_queue: WithinClusterQueue = Field(
        default="LowerPriority", description="Evict this team's own lower-priority jobs to fit a pending one"
    )
    reclaim_within_cohort: ReclaimWithinCohort = Field(
        default="Any", description="Take back quota other teams borrowed from this team's nominal share"
    )
    borrow_within_cohort: BorrowWithinCohort = Field(
        default="Never", description="Preempt other teams' lower-priority jobs while borrowing"
    )

    @model_validator(mode="after")
    def _check_borrow(self) -> PreemptionConfig:
        # The ClusterQueue CRD's own rule: borrowWithinCohort needs reclaimWithinCohort.
        if self.reclaim_within_cohort == "Never" and self.borrow_within_cohort != "Never":
            raise field_error(
                "borrowWithinCohort", self.borrow_within_cohort, "must be Never while reclaimWithinCohort is Never"
            )
        return self


class TeamQuotaConfig(ConfigModel):
    """A team's guaranteed share of one GPU pool (a ResourceFlavor in the team's ClusterQueue)."""

    pool: str = Field(description="Name of a GPU pool in gpuPools")
    gpus: int = Field(ge=0, description="Nominal nvidia.com/gpu: guaranteed to the team, lent to others while idle")
    cpu: Quantity | None = Field(
        default=None, description="Nominal CPU on this pool; set on all or none of a team's quotas"
    )
    memory: Quantity | None = Field(
        default=None, description="Nominal memory on this pool; set on all or none of a team's quotas"
    )
    borrowing_limit_gpus: int | None = Field(
        default=None, ge=0, description="Most GPUs the team borrows from its cohort here; unset: no limit, 0: none"
    )
    lending_limit_gpus: int | None = Field(
        default=None, ge=0, description="Most of its nominal GPUs the team lends to the cohort; unset: all"
    )

    @model_validator(mode="after")
    def _check_lending(self) -> TeamQuotaConfig:
        if self.lending_limit_gpus is not None and self.lending_limit_gpus > self.gpus:
            raise field_error("lendingLimitGpus", self.lending_limit_gpus, f"at most gpus ({self.gpus})")
        return self


class CpuJobsQuotaConfig(ConfigModel):
    """A team's share of the CPU pool for jobs that ask for no GPU (data preparation, copies, evaluation)."""

    cpu: Quantity = Field(description="Nominal CPU of the team's GPU-less jobs on the CPU pool")
    memory: Quantity = Field(description="Nominal memory of the team's GPU-less jobs on the CPU pool")


class TeamConfig(ConfigModel):
    """One team: a namespace, a LocalQueue to submit to, and a ClusterQueue holding its quotas."""

    name: DnsLabel = Field(description="Team name; also its ClusterQueue's name")
    namespace: DnsLabel | None = Field(default=None, description="Namespace the team submits jobs in; default: name")
    local_queue: DnsLabel | None = Field(
        default=None, description="LocalQueue name jobs put in kueue.x-k8s.io/queue-name; default: name"
    )
    cohort: DnsLabel | None = Field(
        default="gpu-teams", description="Teams in one cohort borrow each other's idle quota; null: no borrowing"
    )
    queueing_strategy: QueueingStrategy = Field(
        default="BestEffortFIFO", description="BestEffortFIFO lets a smaller job pass one that does not fit yet"
    )
    preemption: PreemptionConfig = Field(
        default_factory=PreemptionConfig, description="When this team's pending jobs may evict running ones"
    )
    quotas: list[TeamQuotaConfig] = Field(min_length=1, description="One entry per GPU pool the team may use")
    cpu_jobs: CpuJobsQuotaConfig | None = Field(
        default=None,
        description="CPU and memory the team's jobs without GPUs get on the CPU pool (Kueue meters them there); "
        "default: the CPU pool's whole capacity, shared with the platform's own pods and the other teams",
    )
    members: list[EntraObjectId] = Field(
        default_factory=list[str],
        description="Object IDs of the Entra ID groups whose members submit jobs here: they may fetch cluster "
        "credentials, run and watch jobs in this namespace only, and view Grafana; empty: only cluster admins. "
        "Stored in lower case, as Entra ID tokens carry them",
    )
    uid: int | None = Field(
        default=None,
        ge=TEAM_ID_MIN,
        le=TEAM_ID_MAX,
        description="User ID every pod of the team runs as (enforced at admission); it owns the team's directory "
        "on Lustre. 1001 to 2^31-1, unique across teams; unset: derived from the name (100000-999999)",
    )
    gid: int | None = Field(
        default=None,
        ge=TEAM_ID_MIN,
        le=TEAM_ID_MAX,
        description="Group ID of the team's pods and directory (setgid, mode 2770). 1001 to 2^31-1, unique across "
        "teams; unset: the uid",
    )

    @property
    def namespace_name(self) -> str:
        return self.namespace or self.name

    @property
    def local_queue_name(self) -> str:
        return self.local_queue or self.name

    @property
    def run_as_user(self) -> int:
        """The uid the team's pods run as: `uid`, or derived from the name."""
        return self.uid if self.uid is not None else derived_team_id(self.name)

    @property
    def run_as_group(self) -> int:
        """The gid of the team's pods and directory: `gid`, or the uid."""
        return self.gid if self.gid is not None else self.run_as_user

    @property
    def covered_resources(self) -> list[str]:
        """Resources the team's ClusterQueue meters (the order of every flavor's quota list)."""
        first = self.quotas[0]
        extra = [r for r, value in (("cpu", first.cpu), ("memory", first.memory)) if value is not None]
        return [*extra, "nvidia.com/gpu"]

    @model_validator(mode="after")
    def _check_quotas(self) -> TeamConfig:
        seen: dict[str, int] = {}
        for j, quota in enumerate(self.quotas):
            if quota.pool in seen:
                raise field_error(
                    f"quotas[{j}].pool", quota.pool, f"one quota per pool; quotas[{seen[quota.pool]}] has it"
                )
            seen[quota.pool] = j
            if self.cohort is None and quota.borrowing_limit_gpus is not None:
                raise field_error(
                    f"quotas[{j}].borrowingLimitGpus", quota.borrowing_limit_gpus, "needs a cohort to borrow from"
                )
        for j, group in enumerate(self.members):
            if group in self.members[:j]:
                raise field_error(f"members[{j}]", group, "each group once per team")
        # Kueue meters the same resources on every flavor of a ClusterQueue.
        for resource in ("cpu", "memory"):
            given = [getattr(q, resource) is not None for q in self.quotas]
            if any(given) and not all(given):
                j = given.index(False)
                raise field_error(
                    f"quotas[{j}].{resource}", None, f"set {resource} on every quota of the team or on none"
                )
        return self


class TrainingConfig(ConfigModel):
    """Training as a service: Kueue queues and quotas per team, JobSet, autoscaler-aware admission."""

    kueue: KueueConfig = Field(default_factory=KueueConfig, description="Kueue install; enabled switches training on")
    jobset: JobSetConfig = Field(default_factory=JobSetConfig, description="JobSet controller install")
    admission: AdmissionConfig = Field(
        default_factory=AdmissionConfig, description="What Kueue waits for besides quota before admitting a job"
    )
    teams: list[TeamConfig] = Field(default_factory=list[TeamConfig], description="Teams and their GPU quotas")

    @property
    def enabled(self) -> bool:
        return self.kueue.enabled

    def nominal_gpus(self) -> dict[str, int]:
        """Pool name -> the GPUs the teams' nominal quotas guarantee there, summed over teams (none while off)."""
        nominal: dict[str, int] = {}
        for team in self.teams if self.enabled else []:
            for quota in team.quotas:
                nominal[quota.pool] = nominal.get(quota.pool, 0) + quota.gpus
        return nominal

    @model_validator(mode="after")
    def _check_teams(self) -> TrainingConfig:
        names: dict[str, int] = {}
        namespaces: dict[str, int] = {}
        for i, team in enumerate(self.teams):
            if team.name in names:
                raise field_error(
                    f"teams[{i}].name", team.name, f"team names are unique; teams[{names[team.name]}] has it"
                )
            names[team.name] = i
            namespace = team.namespace_name
            where = f"teams[{i}].namespace" if team.namespace else f"teams[{i}].name"
            if namespace in namespaces:
                raise field_error(
                    where, namespace, f"one namespace per team; teams[{namespaces[namespace]}] uses it (set namespace)"
                )
            if namespace in RESERVED_NAMESPACES or namespace.startswith("kube-"):
                raise field_error(
                    where, namespace, f"a team namespace must not be kube-* or {sorted(RESERVED_NAMESPACES)}"
                )
            namespaces[namespace] = i
        self._check_identities()
        return self

    def _check_identities(self) -> None:
        """Two teams with one uid or gid would own each other's files."""
        for key in ("uid", "gid"):
            seen: dict[int, int] = {}
            for i, team in enumerate(self.teams):
                value = team.run_as_user if key == "uid" else team.run_as_group
                if value in seen:
                    derived = "" if getattr(team, key) is not None else f" (derived from the name {team.name!r})"
                    raise field_error(
                        f"teams[{i}].{key}",
                        value,
                        f"unique across teams{derived}; teams[{seen[value]}] has it: set a distinct {key}",
                    )
                seen[value] = i
