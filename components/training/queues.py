"""Training as a service: Kueue team queues with GPU quotas, all-or-nothing admission, JobSet.

- JobSet (the Kubernetes API for a group of pods that start, fail and restart together) and
  Kueue (queues, quotas, fair sharing, preemption) are installed on the CPU pool.
- One ResourceFlavor per GPU pool: its node labels and taints, and the tolerations Kueue adds to
  the pods it admits there. A job's pod set gets exactly one flavor, so all of its ranks land on
  one pool; on InfiniBand pools that is one IB fabric.
- Per team: a namespace, a LocalQueue to submit to, a ClusterQueue with `nvidia.com/gpu` (and
  optionally CPU and memory) quotas per pool, a cohort to borrow idle quota through, preemption.
- With `admission.provisioningRequest`, every ClusterQueue waits for a ProvisioningRequest
  admission check: the cluster autoscaler brings up every node a job needs before the job starts.

Objects follow the v1beta2 CRDs of Kueue v0.19.2 and the JobSet v1alpha2 CRD of JobSet v0.12.0.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import yaml

from aks_gpu_platform.config.catalog.images import mirrored_repository_and_tag
from aks_gpu_platform.config.errors import ConfigError
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_RESOURCE,
    GPU_TAINT,
    SPOT_TAINT,
    cpu_node_selector,
    gpu_pool_node_labels,
    gpu_resource,
    parse_taint,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.training.section import TeamConfig, TeamQuotaConfig, TrainingConfig, gpus_per_node

from ..gpu.dra_driver import CHANNEL_DEVICE_CLASS
from ..network.policies import platform_ingress
from ..shared.context import ClusterHandle
from ..shared.workloads import platform_namespace, training_namespace
from .quota_groups import metered_quota_group, quota_group

# oci://registry.k8s.io/kueue/charts/kueue: kubernetes-sigs/kueue tag v0.19.2 (2026-08-20), charts/kueue;
# the released chart points at registry.k8s.io/kueue/kueue:v0.19.2 (hack/helm-chart-package.sh).
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_VERSION = "0.19.2"
KUEUE_NAMESPACE = "kueue-system"
KUEUE_RELEASE = "kueue"
# oci://registry.k8s.io/jobset/charts/jobset: kubernetes-sigs/jobset tag v0.12.0 (2026-05-08), charts/jobset.
JOBSET_CHART = "oci://registry.k8s.io/jobset/charts/jobset"
JOBSET_VERSION = "0.12.0"
# The release images (hack/helm-chart-package.sh stamps them into the published chart; git's values name staging).
KUEUE_IMAGE = f"registry.k8s.io/kueue/kueue:v{KUEUE_VERSION}"
JOBSET_IMAGE = f"registry.k8s.io/jobset/jobset:v{JOBSET_VERSION}"
JOBSET_NAMESPACE = "jobset-system"

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
# Team namespaces carry it; Kueue's job webhooks and manageJobsWithoutQueueName act only there.
MANAGED_NAMESPACE_LABEL = "kueue.x-k8s.io/managed-namespace"
TEAM_LABEL = "aks-gpu-platform/team"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
PROVISIONING_CHECK = "gpu-nodes-provisioned"
# Workload kinds Kueue manages: plain Jobs and JobSets (the training example). Others stay unmanaged.
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")
# The logical resource a ComputeDomain channel claim counts as in Kueue (a name of ours; not a quota).
COMPUTE_DOMAIN_CHANNEL_RESOURCE = "nvidia.com/compute-domain-channel"


class LustreClaimArgs(TypedDict):
    """The Lustre class every team namespace gets a claim from (ReadWriteMany)."""

    storage_class_name: pulumi.Input[str]
    """StorageClass of the filesystem (its output, so claims wait for the class and the CSI driver): the whole
    filesystem, for teams without a class of their own."""
    team_storage_classes: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Team name -> the class of the team's own directory (TeamStorage), which its claim uses instead."""
    claim_name: str
    """Name of the claim in each team namespace."""
    size_gi: int
    """Nominal size; every claim sees the whole filesystem."""


class CpuMetering(TypedDict):
    """Every team's ClusterQueue meters CPU and memory (Kueue v0.19.2 with `quotaCheckStrategy: IgnoreUndeclared`
    counts only covered resources, pkg/scheduler/flavorassigner/flavorassigner.go): a flavor for the CPU pool comes
    first, where jobs without GPUs run, and each GPU flavor a quota names no CPU or memory on gets the share of its
    nodes' vCPUs and memory that comes with the team's GPUs."""

    flavor: str
    """The CPU pool's name: its flavor's name."""
    cpu: str
    """The CPU pool's capacity (maxCount x vCPUs): the default CPU of a team's GPU-less jobs."""
    memory: str
    """The CPU pool's capacity in memory, likewise."""


def _quantity(amount: int, unit: str, per: int) -> str:
    """`amount` of `unit` (m or Mi) written in whole units when it divides evenly (500m, 2, 1536Mi, 8Gi)."""
    if amount % per == 0:
        return f"{amount // per}{'' if unit == 'm' else 'Gi'}"
    return f"{amount}{unit}"


def with_node_share(quota: TeamQuotaConfig, pool: GpuPoolConfig) -> TeamQuotaConfig:
    """`quota` with its unset CPU and memory filled in: the team's GPUs' share of their nodes' vCPUs and memory."""
    devices = gpus_per_node(pool)
    cpu = quota.cpu or _quantity(quota.gpus * pool.sku.vcpus * 1000 // devices, "m", 1000)
    memory = quota.memory or _quantity(quota.gpus * pool.sku.memory_gib * 1024 // devices, "Mi", 1024)
    return quota.model_copy(update={"cpu": cpu, "memory": memory})


class TrainingQueuesArgs(TypedDict):
    settings: TrainingConfig
    """The validated `training` section (quotas already checked against the pools)."""
    gpu_pools: Sequence[GpuPoolConfig]
    """Every GPU pool: one ResourceFlavor each."""
    cluster: ClusterHandle
    """The cluster the releases and queues go to."""
    lustre: NotRequired[LustreClaimArgs]
    """When Lustre is on: a claim on it in every team namespace, for datasets and checkpoints."""
    admission_checks: NotRequired[Sequence[str]]
    """More AdmissionChecks every ClusterQueue waits for (a fleet manager's MultiKueue check)."""
    kueue_configuration: NotRequired[Mapping[str, Any]]
    """Top-level keys added to Kueue's Configuration (a fleet manager's `multiKueue` section)."""
    memory_locking_namespaces: NotRequired[Sequence[str]]
    """Team namespaces whose NCCL pods add IPC_LOCK for RDMA, where Azure Policy enforces the pod security baseline
    with IPC_LOCK allowed (components/cluster/azure_policy.py); only where that policy is assigned."""
    cpu_metering: NotRequired[CpuMetering]
    """Meter CPU and memory for every team (where jobs run; a MultiKueue manager meters GPUs only)."""


def flavor_name(pool: GpuPoolConfig) -> str:
    """A pool's ResourceFlavor is named after the pool, so `kubectl get workloads` shows where a job runs."""
    return pool.name


def pool_node_taints(pool: GpuPoolConfig) -> list[str]:
    """The taints AKS puts on the pool's nodes: the GPU taint, the pool's own, and Spot's."""
    return [GPU_TAINT, *pool.taints, *([SPOT_TAINT] if pool.priority == "Spot" else [])]


def flavor_spec(pool: GpuPoolConfig) -> dict[str, Any]:
    """ResourceFlavor spec: the labels that select the pool's nodes, their taints, and the matching
    tolerations Kueue injects into pods it admits on this flavor (teams need not know the taints)."""
    taints = [parse_taint(t) for t in pool_node_taints(pool)]
    return {
        "nodeLabels": gpu_pool_node_labels(pool.name, pool.sku.gpu_model),
        "nodeTaints": taints,
        "tolerations": [
            {"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]} for t in taints
        ],
    }


def _resource_group(
    team: TeamConfig,
    gpu_resources: Mapping[str, str],
    metering: CpuMetering | None,
    pools: Mapping[str, GpuPoolConfig],
) -> dict[str, Any]:
    """The team's one resource group; metered, every GPU quota comes with its nodes' share of CPU and memory."""
    if metering is None:
        return quota_group(team, gpu_resources)
    shared = [with_node_share(q, pools[q.pool]) if q.pool in pools else q for q in team.quotas]
    metered = team.model_copy(update={"quotas": shared})
    return metered_quota_group(metered, gpu_resources, metering["flavor"], metering["cpu"], metering["memory"])


def cluster_queue_spec(
    team: TeamConfig,
    admission_checks: Sequence[str],
    gpu_resources: Mapping[str, str] | None = None,
    metering: CpuMetering | None = None,
    pools: Mapping[str, GpuPoolConfig] | None = None,
) -> dict[str, Any]:
    """The team's ClusterQueue: quotas per pool flavor, cohort, preemption, and only its own namespace."""
    spec: dict[str, Any] = {
        # Only LocalQueues in the team's namespace may point at its quota.
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.namespace_name}},
        "queueingStrategy": team.queueing_strategy,
        "preemption": {
            "withinClusterQueue": team.preemption.within_cluster_queue,
            "reclaimWithinCohort": team.preemption.reclaim_within_cohort,
            "borrowWithinCohort": {"policy": team.preemption.borrow_within_cohort},
        },
        "resourceGroups": [_resource_group(team, gpu_resources or {}, metering, pools or {})],
    }
    if team.cohort is not None:
        spec["cohortName"] = team.cohort
    if admission_checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in admission_checks]}
    return spec


def kueue_manager_config(settings: TrainingConfig, gpu_pools: Sequence[GpuPoolConfig] = ()) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2), the chart's `controllerManagerConfigYaml`.

    The chart replaces its whole default with this, so the listener settings its probes and
    Services expect are restated (charts/kueue/values.yaml and templates/manager at v0.19.2).
    """
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # Quota and usage per ClusterQueue and flavor (kueue_cluster_queue_resource_usage, _nominal_quota) are
        # exported only with enableClusterQueueResources (cmd/kueue/main.go WithResourceMetrics, v0.19.2).
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # In team namespaces a Job or JobSet without a queue label stays suspended: nothing bypasses quota.
        "manageJobsWithoutQueueName": True,
        # Also scopes the chart's job webhooks (failurePolicy Fail) to team namespaces, so Jobs elsewhere
        # (smoke test, Helm hooks) never depend on Kueue being up.
        "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}},
        # All-or-nothing at run time: a job whose pods are not all Ready in time gives its quota back.
        "waitForPodsReady": {
            "timeout": f"{settings.kueue.pods_ready_timeout_minutes}m",
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
        },
        "integrations": {"frameworks": list(FRAMEWORKS)},
        # Only what a ClusterQueue declares is metered: GPUs always, CPU/memory where a team sets them;
        # the RDMA device (RDMA_RESOURCE) of InfiniBand pools is not a quota. Beta, on by default in v0.19.
        "resources": {"quotaCheckStrategy": "IgnoreUndeclared", **_device_class_mappings(gpu_pools)},
    }


def _device_class_mappings(gpu_pools: Sequence[GpuPoolConfig]) -> dict[str, Any]:
    """Kueue v0.19.2 (KueueDRAIntegration, beta and on by default) refuses a job whose ResourceClaimTemplate names
    a DeviceClass without a mapping ("DeviceClass ... is not mapped in DRA configuration", pkg/dra/claims.go): a
    ComputeDomain's channel class gets one (apis/config/v1beta2 DeviceClassMapping). No ClusterQueue declares the
    mapped resource, so IgnoreUndeclared admits on GPU quota alone: a channel is not a scarce device."""
    if not any(p.sku.multi_node_nvlink for p in gpu_pools):
        return {}
    mapping = {"name": COMPUTE_DOMAIN_CHANNEL_RESOURCE, "deviceClassNames": [CHANNEL_DEVICE_CLASS]}
    return {"deviceClassMappings": [mapping]}


class TrainingQueues(pulumi.ComponentResource):
    """JobSet and Kueue on the CPU pool, a ResourceFlavor per GPU pool, and a queue with quotas per team."""

    kueue_release: k8s.helm.v3.Release
    """The Kueue release; its CRDs back every queue object here."""
    jobset_release: k8s.helm.v3.Release | None
    """The JobSet release, or None when training.jobset is off."""
    flavor_names: list[str]
    """ResourceFlavor names, one per GPU pool, in pool order."""
    admission_check: str | None
    """The ProvisioningRequest admission check every ClusterQueue waits for, or None."""
    namespaces: dict[str, pulumi.Output[str]]
    """Team name -> its namespace's name, resolved once the namespace exists."""
    teams: pulumi.Output[dict[str, dict[str, Any]]]
    """Per team: namespace, localQueue, clusterQueue, gpuPools (the pools it has quota on, which are the
    `gpu-pool` node label values), computeDomainPools (those of them with multi-node NVLink), uid and gid (the
    identity its pods run as) and, with Lustre, lustrePvcName."""

    def __init__(self, name: str, args: TrainingQueuesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:TrainingQueues", name, None, opts)
        settings = args["settings"]
        self._pools = {pool.name: pool for pool in args["gpu_pools"]}
        # What each pool's nodes advertise their GPUs as: a quota on an AMD pool meters `amd.com/gpu`.
        self._gpu_resources = {pool_name: gpu_resource(pool) for pool_name, pool in self._pools.items()}
        # Pools whose NVLink spans VMs: a job there shares GPU memory across nodes only through a ComputeDomain.
        self._compute_domain_pools = {
            pool_name for pool_name, pool in self._pools.items() if pool.sku.multi_node_nvlink
        }
        _check_quota_pools(settings, self._pools)
        self._in_cluster = args["cluster"].k8s_options(self)
        self._metering = args.get("cpu_metering")

        self.jobset_release = self._jobset(name, settings)
        self.kueue_release = self._kueue(name, args)
        self._controller_ingress(name)
        # Every Kueue object needs the CRDs (and the validating webhooks) the release installs.
        self._crd_opts = pulumi.ResourceOptions.merge(
            self._in_cluster, pulumi.ResourceOptions(depends_on=[self.kueue_release])
        )
        self.flavor_names = self._flavors(name, args["gpu_pools"])
        self.admission_check = self._provisioning_check(name, settings)
        self._cohorts(name, settings)
        self.namespaces = {}
        self.teams = self._teams(name, args)

        self.register_outputs(
            {
                "flavor_names": self.flavor_names,
                "admission_check": self.admission_check,
                "teams": self.teams,
            }
        )

    def _jobset(self, name: str, settings: TrainingConfig) -> k8s.helm.v3.Release | None:
        """JobSet's controller on the CPU pool, or None when training.jobset is off."""
        if not settings.jobset.enabled:
            return None
        namespace = platform_namespace(f"{name}-jobset-namespace", JOBSET_NAMESPACE, "baseline", self._in_cluster)
        return k8s.helm.v3.Release(
            f"{name}-jobset",
            name="jobset",
            chart=JOBSET_CHART,
            version=JOBSET_VERSION,
            namespace=JOBSET_NAMESPACE,
            # charts/jobset values.yaml at git names a staging image; the release image, through the registry.
            values={
                "controller": {"nodeSelector": cpu_node_selector()},
                "image": mirrored_repository_and_tag(JOBSET_IMAGE),
            },
            opts=pulumi.ResourceOptions.merge(self._in_cluster, pulumi.ResourceOptions(depends_on=[namespace])),
        )

    def _kueue(self, name: str, args: TrainingQueuesArgs) -> k8s.helm.v3.Release:
        """Kueue's controller on the CPU pool, configured by `kueue_manager_config` and the args' additions."""
        # Kueue sets up its JobSet integration at start when the JobSet CRD is there.
        after: list[pulumi.Resource] = [self.jobset_release] if self.jobset_release is not None else []
        after.append(platform_namespace(f"{name}-kueue-namespace", KUEUE_NAMESPACE, "baseline", self._in_cluster))
        return k8s.helm.v3.Release(
            f"{name}-kueue",
            name=KUEUE_RELEASE,
            chart=KUEUE_CHART,
            version=KUEUE_VERSION,
            namespace=KUEUE_NAMESPACE,
            values=_kueue_values(args),
            opts=pulumi.ResourceOptions.merge(self._in_cluster, pulumi.ResourceOptions(depends_on=after)),
        )

    def _controller_ingress(self, name: str) -> None:
        """The platform's default-deny ingress in the JobSet and Kueue namespaces, once their releases made them."""
        for release, namespace in ((self.jobset_release, JOBSET_NAMESPACE), (self.kueue_release, KUEUE_NAMESPACE)):
            if release is not None:
                after = pulumi.ResourceOptions(depends_on=[release])
                platform_ingress(
                    f"{name}-{namespace}", namespace, pulumi.ResourceOptions.merge(self._in_cluster, after)
                )

    def _flavors(self, name: str, gpu_pools: Sequence[GpuPoolConfig]) -> list[str]:
        """A ResourceFlavor per GPU pool (and, metered, one for the CPU pool); the GPU flavors' names, in pool order."""
        if self._metering is not None:
            # GPU-less jobs land on the CPU pool; no taints, so Kueue adds no tolerations there.
            self._kueue_object(
                f"{name}-flavor-cpu",
                "ResourceFlavor",
                {"name": self._metering["flavor"]},
                {"nodeLabels": cpu_node_selector()},
            )
        for pool in gpu_pools:
            self._kueue_object(
                f"{name}-flavor-{pool.name}", "ResourceFlavor", {"name": flavor_name(pool)}, flavor_spec(pool)
            )
        return [flavor_name(pool) for pool in gpu_pools]

    def _provisioning_check(self, name: str, settings: TrainingConfig) -> str | None:
        """With `admission.provisioningRequest`: the AdmissionCheck every ClusterQueue waits for, and its config."""
        if not settings.admission.provisioning_request:
            return None
        self._kueue_object(
            f"{name}-provisioning-config",
            "ProvisioningRequestConfig",
            {"name": PROVISIONING_CHECK},
            {
                "provisioningClassName": settings.admission.provisioning_class,
                # Only pod sets that ask for GPUs wait for new nodes.
                "managedResources": sorted(set(self._gpu_resources.values()) | {GPU_RESOURCE}),
                # One pod template per group of identical ranks keeps the request small.
                "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
            },
        )
        self._kueue_object(
            f"{name}-provisioning-check",
            "AdmissionCheck",
            {"name": PROVISIONING_CHECK},
            {
                "controllerName": PROVISIONING_CONTROLLER,
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "ProvisioningRequestConfig",
                    "name": PROVISIONING_CHECK,
                },
            },
        )
        return PROVISIONING_CHECK

    def _cohorts(self, name: str, settings: TrainingConfig) -> None:
        """A Cohort per name the teams borrow idle quota through."""
        for cohort in sorted({t.cohort for t in settings.teams if t.cohort is not None}):
            self._kueue_object(f"{name}-cohort-{cohort}", "Cohort", {"name": cohort}, {})

    def _teams(self, name: str, args: TrainingQueuesArgs) -> pulumi.Output[dict[str, dict[str, Any]]]:
        """Per team its namespace and queues (`self.namespaces` gets each namespace's name); what `teams` says."""
        teams: dict[str, pulumi.Output[dict[str, Any]]] = {}
        checks = [*([self.admission_check] if self.admission_check else []), *args.get("admission_checks", [])]
        locking = set(args.get("memory_locking_namespaces", []))
        for team in args["settings"].teams:
            namespace = training_namespace(
                f"{name}-team-{team.name}-namespace",
                team.namespace_name,
                self._in_cluster,
                labels={MANAGED_NAMESPACE_LABEL: "true", TEAM_LABEL: team.name},
                locks_memory=team.namespace_name in locking,
            )
            self.namespaces[team.name] = namespace.metadata["name"]
            teams[team.name] = self._team(name, team, namespace, checks, args.get("lustre"))
        return pulumi.Output.all(**teams) if teams else pulumi.Output.from_input({})

    def _kueue_object(
        self, resource_name: str, kind: str, metadata: Mapping[str, Any], spec: Mapping[str, Any]
    ) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            resource_name, api_version=KUEUE_API_VERSION, kind=kind, metadata=metadata, spec=spec, opts=self._crd_opts
        )

    def _team(
        self,
        name: str,
        team: TeamConfig,
        namespace: k8s.core.v1.Namespace,
        checks: Sequence[str],
        lustre: LustreClaimArgs | None,
    ) -> pulumi.Output[dict[str, Any]]:
        """The team's ClusterQueue and LocalQueue, and with Lustre its claim."""
        prefix = f"{name}-team-{team.name}"
        self._kueue_object(
            f"{prefix}-cluster-queue",
            "ClusterQueue",
            {"name": team.name},
            cluster_queue_spec(team, checks, self._gpu_resources, self._metering, self._pools),
        )
        local_queue = k8s.apiextensions.CustomResource(
            f"{prefix}-local-queue",
            api_version=KUEUE_API_VERSION,
            kind="LocalQueue",
            metadata={"name": team.local_queue_name, "namespace": namespace.metadata["name"]},
            spec={"clusterQueue": team.name},
            opts=pulumi.ResourceOptions.merge(
                self._in_cluster, pulumi.ResourceOptions(depends_on=[self.kueue_release, namespace])
            ),
        )
        out: dict[str, pulumi.Input[Any]] = {
            "namespace": namespace.metadata["name"],
            # Read once the LocalQueue exists, so consumers never submit to a queue not yet there.
            "localQueue": local_queue.id.apply(lambda _: team.local_queue_name),
            "clusterQueue": team.name,
            "gpuPools": [q.pool for q in team.quotas],
            "computeDomainPools": [q.pool for q in team.quotas if q.pool in self._compute_domain_pools],
            # The identity the team's pods run as, which owns its directory on Lustre.
            "uid": team.run_as_user,
            "gid": team.run_as_group,
        }
        if lustre is not None:
            out["lustrePvcName"] = self._lustre_claim(prefix, team, namespace, lustre)
        return pulumi.Output.all(**out)

    def _lustre_claim(
        self, prefix: str, team: TeamConfig, namespace: k8s.core.v1.Namespace, lustre: LustreClaimArgs
    ) -> pulumi.Output[str]:
        """The team's claim on Lustre: on its own directory's class, or the whole filesystem's; its name."""
        storage_class = lustre.get("team_storage_classes", {}).get(team.name, lustre["storage_class_name"])
        claim = k8s.core.v1.PersistentVolumeClaim(
            f"{prefix}-claim",
            metadata={"name": lustre["claim_name"], "namespace": namespace.metadata["name"]},
            spec={
                "access_modes": ["ReadWriteMany"],
                "storage_class_name": storage_class,
                "resources": {"requests": {"storage": f"{lustre['size_gi']}Gi"}},
            },
            opts=self._in_cluster,
        )
        return claim.metadata["name"]


def _check_quota_pools(settings: TrainingConfig, pools: Mapping[str, GpuPoolConfig]) -> None:
    """Every quota names a GPU pool (the platform's config rules say so; a direct caller may not)."""
    missing = [
        f"training.teams[{i}].quotas[{j}].pool: got {q.pool!r}; must name a GPU pool: {sorted(pools)}"
        for i, team in enumerate(settings.teams)
        for j, q in enumerate(team.quotas)
        if q.pool not in pools
    ]
    if missing:
        raise ConfigError(missing, source="TrainingQueues args")


def _kueue_values(args: TrainingQueuesArgs) -> dict[str, Any]:
    """Kueue chart values: its controller on the CPU pool through the registry, and its Configuration."""
    settings = args["settings"]
    replicas = settings.kueue.replicas
    config = {**kueue_manager_config(settings, args["gpu_pools"]), **args.get("kueue_configuration", {})}
    return {
        "controllerManager": {
            "replicas": replicas,
            "nodeSelector": cpu_node_selector(),
            # A PDB with minAvailable equal to the replicas would block every node drain.
            "podDisruptionBudget": {"enabled": replicas > 1, "minAvailable": 1},
            "manager": {"image": mirrored_repository_and_tag(KUEUE_IMAGE)},
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config)},
    }
