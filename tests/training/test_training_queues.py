"""Training queues under mocks: Kueue and JobSet releases, one flavor per GPU pool, team queues and quotas."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.training.queues import (
    JOBSET_CHART,
    JOBSET_VERSION,
    KUEUE_CHART,
    KUEUE_VERSION,
    TrainingQueues,
)
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS
from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.training.section import TrainingConfig, gpu_capacity, gpus_per_node
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from tests.conftest import assert_rejected, cluster_handle, set_path, settings_of, without_models
from tests.upstream.kube_scheduler import pod_fits_node, taint
from tests.upstream.kueue_schemas import cel_violations, schema_errors
from tools import REPO_ROOT

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
RELEASE = "kubernetes:helm.sh/v3:Release"
AGENT_POOL = "azure-native:containerservice:AgentPool"
NAMESPACE = "kubernetes:core/v1:Namespace"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SCHEMA = "1.33.0"


def kueue_objects(recording: Recording, kind: str = "") -> list[dict[str, Any]]:
    found = [kubernetes_object(r) for r in recording.resources if r.type.startswith(KUEUE + kind)]
    assert found, f"no Kueue {kind or 'object'} rendered: the training section must produce its queues"
    return found


def by_name(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def pool_nodes(recording: Recording) -> dict[str, tuple[dict[str, str], list[str]]]:
    """Per GPU pool (config name): the node labels and taints its AgentPool gives every node."""
    pools: dict[str, tuple[dict[str, str], list[str]]] = {}
    for pool in recording.of_type(AGENT_POOL):
        labels = pool.inputs.get("nodeLabels") or {}
        if labels.get("pool") == "gpu":
            pools[labels["gpu-pool"]] = (labels, pool.inputs.get("nodeTaints") or [])
    assert pools, "the stack must record its GPU pools"
    return pools


def manager_config(recording: Recording) -> dict[str, Any]:
    release = recording.one(RELEASE, "queues-kueue")
    return yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


def test_prod_plans_the_pinned_kueue_and_jobset_releases_on_the_cpu_pool(prod_recording: Recording) -> None:
    kueue = prod_recording.one(RELEASE, "queues-kueue")
    jobset = prod_recording.one(RELEASE, "queues-jobset")
    assert (
        (kueue.inputs["chart"], kueue.inputs["version"])
        == (KUEUE_CHART, KUEUE_VERSION)
        == (
            "oci://registry.k8s.io/kueue/charts/kueue",
            "0.19.2",
        )
    ), "Kueue must be the pinned upstream release"
    assert (jobset.inputs["chart"], jobset.inputs["version"]) == (JOBSET_CHART, JOBSET_VERSION)
    assert jobset.urn in kueue.depends_on, "Kueue sets up its JobSet integration only if JobSet's CRD is there"
    cpu_pool = prod_recording.one(AGENT_POOL, "cpu-pool").inputs
    for release, selector in (
        (kueue, kueue.inputs["values"]["controllerManager"]["nodeSelector"]),
        (jobset, jobset.inputs["values"]["controller"]["nodeSelector"]),
    ):
        pod = {"nodeSelector": selector}
        assert pod_fits_node(pod, cpu_pool["nodeLabels"], cpu_pool.get("nodeTaints") or []), (
            f"{release.name}: the controller must schedule on the CPU pool"
        )
        for labels, taints in pool_nodes(prod_recording).values():
            assert not pod_fits_node(pod, labels, taints), f"{release.name} must never take a GPU node"
        assert release.deleted_with and release.provider, f"{release.name}: in-cluster, deleted with the cluster"


def test_every_kueue_object_passes_its_crd_schema_and_waits_for_the_release(prod_recording: Recording) -> None:
    kueue = prod_recording.one(RELEASE, "queues-kueue")
    crs = [r for r in prod_recording.resources if r.type.startswith(KUEUE)]
    kinds = {r.type.removeprefix(KUEUE) for r in crs}
    assert kinds == {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
        "Cohort",
    }
    for resource in crs:
        manifest = kubernetes_object(resource)
        problems = schema_errors(manifest) + cel_violations(manifest)
        assert not problems, f"{resource.name} would be rejected or pruned by the v0.19.2 CRD: {problems}"
        assert kueue.urn in resource.depends_on, f"{resource.name}: its CRD and webhooks come with the Kueue release"
        assert resource.deleted_with, f"{resource.name}: deleted with the cluster, not one by one"


def test_one_flavor_per_gpu_pool_that_lands_admitted_pods_on_that_pool_only(prod_recording: Recording) -> None:
    flavors = by_name(kueue_objects(prod_recording, "ResourceFlavor"))
    nodes = pool_nodes(prod_recording)
    cpu = flavors.pop(load_platform_config(settings_of(_prod_config())).cpu_pool.name)
    assert cpu["spec"] == {"nodeLabels": {"pool": "cpu"}}, "GPU-less jobs are metered on the CPU pool's own flavor"
    for other, (labels, taints) in nodes.items():
        assert not pod_fits_node({"nodeSelector": cpu["spec"]["nodeLabels"]}, labels, taints), (
            f"a GPU-less pod admitted on the CPU flavor must not land on {other}"
        )
    assert set(flavors) == set(nodes), "every GPU pool, and only GPU pools, needs its own flavor beside the CPU pool's"
    for name, flavor in flavors.items():
        spec = flavor["spec"]
        # What Kueue does on admission: inject the flavor's nodeLabels and tolerations into the pods.
        admitted_pod = {"nodeSelector": spec["nodeLabels"], "tolerations": spec["tolerations"]}
        labels, taints = nodes[name]
        assert pod_fits_node(admitted_pod, labels, taints), f"a pod admitted on {name} must fit {name}'s nodes"
        assert [taint(t) for t in taints] == spec["nodeTaints"], f"{name}: nodeTaints must be the node's"
        for other, (other_labels, other_taints) in nodes.items():
            if other != name:
                assert not pod_fits_node(admitted_pod, other_labels, other_taints), (
                    f"a pod admitted on {name} must not land on {other}: its quota was charged to {name}"
                )


def test_each_team_gets_a_namespace_a_local_queue_and_its_quotas_in_a_cohort(prod_recording: Recording) -> None:
    cfg = load_platform_config(settings_of(_prod_config()))
    queues = by_name(kueue_objects(prod_recording, "ClusterQueue"))
    local = kueue_objects(prod_recording, "LocalQueue")
    flavors = by_name(kueue_objects(prod_recording, "ResourceFlavor"))
    namespaces = {
        kubernetes_object(n)["metadata"]["name"]: kubernetes_object(n) for n in prod_recording.of_type(NAMESPACE)
    }
    cohorts = by_name(kueue_objects(prod_recording, "Cohort"))
    assert len(cfg.training.teams) == 2, "prod configures two example teams"
    for team in cfg.training.teams:
        queue = queues[team.name]["spec"]
        assert queue["cohortName"] == team.cohort and team.cohort in cohorts, "teams borrow through their cohort"
        (group,) = queue["resourceGroups"]
        quotas = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
        assert set(quotas) <= set(flavors), f"{team.name}: quotas must name existing flavors"
        for quota in team.quotas:
            assert quotas[quota.pool][GPU_RESOURCE]["nominalQuota"] == quota.gpus
        (lq,) = [q for q in local if q["metadata"]["namespace"] == team.namespace_name]
        assert lq["metadata"]["name"] == team.local_queue_name and lq["spec"]["clusterQueue"] == team.name
        ns = namespaces[team.namespace_name]
        # The API server labels every namespace with its own name; the selector keeps other namespaces out.
        ns_labels = {**ns["metadata"]["labels"], "kubernetes.io/metadata.name": team.namespace_name}
        assert queue["namespaceSelector"]["matchLabels"].items() <= ns_labels.items()
        for other in cfg.training.teams:
            if other.name != team.name:
                assert queue["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] != other.namespace_name


def test_quota_within_each_pools_capacity_in_prod(prod_recording: Recording) -> None:
    cfg = load_platform_config(settings_of(_prod_config()))
    pools = {p.name: p for p in cfg.gpu_pools}
    nominal: dict[str, int] = {}
    for queue in kueue_objects(prod_recording, "ClusterQueue"):
        for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
            if flavor["name"] == cfg.cpu_pool.name:
                continue  # the CPU pool's flavor holds no GPU
            gpu = next(r for r in flavor["resources"] if r["name"] == GPU_RESOURCE)
            nominal[flavor["name"]] = nominal.get(flavor["name"], 0) + int(gpu["nominalQuota"])
    assert nominal, "prod must hand out GPU quota"
    for pool, gpus in nominal.items():
        assert gpus <= gpu_capacity(pools[pool]), f"{pool}: guaranteed GPUs above what maxCount nodes can hold"


def test_every_cluster_queue_waits_for_the_provisioning_request_check(prod_recording: Recording) -> None:
    (check,) = kueue_objects(prod_recording, "AdmissionCheck")
    configs = by_name(kueue_objects(prod_recording, "ProvisioningRequestConfig"))
    params = check["spec"]["parameters"]
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert params["kind"] == "ProvisioningRequestConfig" and params["name"] in configs, "the check's config must exist"
    config = configs[params["name"]]["spec"]
    # AKS's documented pairing (configure-kueue-with-cluster-autoscaler, 2026-07-17): atomic scale-up.
    assert config["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    assert config["managedResources"] == [GPU_RESOURCE], "GPU pod sets wait for nodes; CPU-only ones do not"
    for queue in kueue_objects(prod_recording, "ClusterQueue"):
        names = [c["name"] for c in queue["spec"]["admissionChecksStrategy"]["admissionChecks"]]
        assert names == [check["metadata"]["name"]], f"{queue['metadata']['name']}: no job starts on half its nodes"


def test_kueue_manages_jobsets_only_in_team_namespaces(prod_recording: Recording) -> None:
    config = manager_config(prod_recording)
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert "jobset.x-k8s.io/jobset" in config["integrations"]["frameworks"], "the training example is a JobSet"
    assert config["health"]["healthProbeBindAddress"] == ":8081", "the chart's probes call :8081"
    assert config["manageJobsWithoutQueueName"] is True, "an unlabelled job in a team namespace must not bypass quota"
    selector = config["managedJobsNamespaceSelector"]["matchLabels"]
    namespaces = [kubernetes_object(n)["metadata"] for n in prod_recording.of_type(NAMESPACE)]
    assert namespaces, "the stack creates namespaces"
    team_namespaces = {t["namespace"] for t in prod_recording.stack_outputs["trainingTeams"].values()}
    for meta in namespaces:
        selected = selector.items() <= (meta.get("labels") or {}).items()
        # The chart puts this selector on its Job/JobSet webhooks (failurePolicy Fail): platform Jobs such
        # as the GPU smoke test must never wait on Kueue.
        assert selected == (meta["name"] in team_namespaces), f"namespace {meta['name']} selected={selected}"
    assert config["waitForPodsReady"]["timeout"] == "30m", "a stuck job gives its quota back"
    assert config["resources"]["quotaCheckStrategy"] == "IgnoreUndeclared", "rdma/ib must not block admission"


def test_team_namespaces_get_a_claim_on_the_lustre_filesystem(prod_recording: Recording) -> None:
    classes = {
        c.inputs["metadata"]["name"]: c.inputs
        for c in prod_recording.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        if c.inputs["provisioner"] == "azurelustre.csi.azure.com"
    }
    teams = prod_recording.stack_outputs["trainingTeams"]
    claims = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in (kubernetes_object(c) for c in prod_recording.of_type(PVC))
    }
    assert teams, "prod exports its teams"
    for team, out in teams.items():
        claim = claims[(out["namespace"], out["lustrePvcName"])]
        assert claim["spec"]["storageClassName"] in classes, f"{team}: the exported claim is on Lustre"
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "every rank mounts it"
        assert validate_object(claim, SCHEMA)[0] == "valid"


def test_dev_runs_one_controller_without_a_pdb_that_would_block_drains(dev_recording: Recording) -> None:
    values = dev_recording.one(RELEASE, "queues-kueue").inputs["values"]["controllerManager"]
    assert values["replicas"] == 1
    assert values["podDisruptionBudget"]["enabled"] is False, "minAvailable 1 of 1 replica blocks every upgrade"
    assert dev_recording.stack_outputs["trainingTeams"]["ml"] == {
        "namespace": "team-ml",
        "localQueue": "ml",
        "clusterQueue": "ml",
        "gpuPools": ["gput4"],
        "computeDomainPools": [],
        "uid": 20001,
        "gid": 20001,
    }, "without Lustre (dev) there is no claim to export; a T4 pool shares no NVLink across VMs"


def _prod_config() -> dict[str, Any]:
    from aks_gpu_platform.testing.stack_files import load_stack_file

    return load_stack_file("prod", REPO_ROOT)


POOLS = [
    GpuPoolConfig.model_validate({"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4}),
    GpuPoolConfig.model_validate(
        {
            "name": "h100",
            "vmSize": "Standard_ND96isr_H100_v5",
            "zones": ["1"],
            "maxCount": 2,
            "infiniband": True,
            "priority": "Spot",
            "taints": ["team=llm:NoSchedule"],
        }
    ),
]


def build_training(build: Callable[[Callable[[], Any]], Recording], training: dict[str, Any]) -> Recording:
    settings = TrainingConfig.model_validate(training)
    return build(
        lambda: TrainingQueues("training", {"settings": settings, "gpu_pools": POOLS, "cluster": cluster_handle()})
    )


def test_spot_and_extra_taints_reach_the_flavor_tolerations(build: Callable[[Callable[[], Any]], Recording]) -> None:
    recording = build_training(
        build, {"kueue": {"enabled": True}, "teams": [{"name": "a", "quotas": [{"pool": "h100", "gpus": 8}]}]}
    )
    flavor = by_name(kueue_objects(recording, "ResourceFlavor"))["h100"]["spec"]
    taints = ["sku=gpu:NoSchedule", "team=llm:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]
    labels = {"pool": "gpu", "gpu-pool": "h100", "gpu-model": "H100-80GB"}
    pod = {"nodeSelector": flavor["nodeLabels"], "tolerations": flavor["tolerations"]}
    assert pod_fits_node(pod, labels, taints), "Kueue must add every toleration a Spot pool with extra taints needs"
    assert not pod_fits_node({"nodeSelector": flavor["nodeLabels"]}, labels, taints), "the taints are real"
    for manifest in kueue_objects(recording):
        assert not schema_errors(manifest) + cel_violations(manifest), manifest["metadata"]["name"]


def test_without_provisioning_requests_queues_admit_on_quota_alone(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:
    recording = build_training(
        build,
        {
            "kueue": {"enabled": True},
            "admission": {"provisioningRequest": False},
            "teams": [
                {"name": "a", "cohort": None, "quotas": [{"pool": "a100", "gpus": 4, "cpu": "80", "memory": "800Gi"}]}
            ],
        },
    )
    assert not [r for r in recording.resources if r.type.startswith(KUEUE + "AdmissionCheck")]
    assert not [r for r in recording.resources if r.type.startswith(KUEUE + "Cohort")], "no cohort configured"
    (queue,) = kueue_objects(recording, "ClusterQueue")
    assert "admissionChecksStrategy" not in queue["spec"] and "cohortName" not in queue["spec"]
    assert queue["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu", "memory", GPU_RESOURCE]
    assert not schema_errors(queue) + cel_violations(queue)


def test_a_quota_for_a_missing_pool_fails_before_any_resource(build: Callable[[Callable[[], Any]], Recording]) -> None:
    with pytest.raises(Exception, match=r"training.teams\[0\].quotas\[0\].pool: got 'v100'"):
        build_training(
            build, {"kueue": {"enabled": True}, "teams": [{"name": "a", "quotas": [{"pool": "v100", "gpus": 1}]}]}
        )


def _training(stack_config: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    return settings_of(stack_config("prod"))


@pytest.mark.parametrize(
    ("path", "value", "field", "hint"),
    [
        (
            "training.teams.0.quotas.0.pool",
            "h100z9",
            "training.teams[0].quotas[0].pool",
            "must name a GPU pool in gpuPools",
        ),
        ("training.teams.0.quotas.0.gpus", 40, "training.teams[0].quotas[0].gpus", "holds at most 32 GPUs"),
        # vision's 16 on h100z3 plus llm's 17 > 32: each fits alone, the guarantees together do not.
        ("training.teams.0.quotas.2.gpus", 17, "training.teams[1].quotas[1].gpus", "teams ['llm', 'vision'] ask 33"),
        ("training.teams.0.name", "LLM_team", "training.teams[0].name", "String should match pattern"),
        ("training.teams.1.namespace", "team-llm", "training.teams[1].namespace", "one namespace per team"),
        ("training.teams.1.namespace", "kube-system", "training.teams[1].namespace", "must not be kube-*"),
        ("training.teams.1.namespace", "training", "training.teams[1].namespace", "storage.lustre.training.namespace"),
        ("training.teams.1.cohort", "Shared Pool", "training.teams[1].cohort", "String should match pattern"),
        ("training.teams.1.quotas.1.cpu", None, "training.teams[1].quotas[1].cpu", "on every quota of the team"),
        ("training.teams.1.quotas.0.memory", "lots", "training.teams[1].quotas[0].memory", "String should match"),
        (
            "training.teams.1.quotas.0.lendingLimitGpus",
            11,
            "training.teams[1].quotas[0].lendingLimitGpus",
            "at most gpus",
        ),
        (
            "training.teams.1.preemption.reclaimWithinCohort",
            "Never",
            "training.teams[1].preemption.borrowWithinCohort",
            "Never",
        ),
        (
            "training.admission.provisioningClass",
            "queued-provisioning.gke.io",
            "training.admission.provisioningClass",
            "best-effort",
        ),
    ],
)
def test_bad_training_config_is_rejected_naming_the_field(
    stack_config: Callable[[str], dict[str, Any]], path: str, value: Any, field: str, hint: str
) -> None:
    settings = _training(stack_config)
    if path.endswith("reclaimWithinCohort"):
        set_path(settings, "training.teams.1.preemption.borrowWithinCohort", "LowerPriority")
    set_path(settings, path, value)
    assert_rejected(settings, "a bad team queue must stop the plan before Kueue sees it", field, hint)


def test_borrowing_limit_needs_a_cohort(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _training(stack_config)
    set_path(settings, "training.teams.1.cohort", None)
    assert_rejected(
        settings,
        "the CRD rejects borrowingLimit without a cohort",
        "training.teams[1].quotas[1].borrowingLimitGpus",
        "needs a cohort",
    )


def test_mig_pools_count_mig_devices_as_gpus(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = _training(stack_config)
    set_path(settings, "gpuPools.0.migProfile", "MIG1g")  # gpua100: 12 nodes x 1 A100 x 7 MIG devices = 84
    set_path(settings, "training.teams.1.quotas.0.gpus", 82)
    cfg = load_platform_config(settings)
    assert gpu_capacity(cfg.gpu_pools[0]) == 84, "the device plugin advertises each MIG slice as one nvidia.com/gpu"
    set_path(settings, "training.teams.1.quotas.0.gpus", 83)
    assert_rejected(settings, "MIG capacity is still bounded", "training.teams[1].quotas[0].gpus", "holds at most 84")


# Instances of each MIG profile one GPU holds: the "Number of Instances Available" column of NVIDIA's MIG user
# guide, "Supported MIG Profiles" (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html:
# the A100-SXM4-40GB, A100 80GB, H100 80GB, H100 NVL 94GB and H200 141GB tables), keyed by NVIDIA's profile name.
NVIDIA_MIG_INSTANCES_PER_GPU = {
    "A100-40GB": {"1g.5gb": 7, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    "A100-80GB": {"1g.10gb": 7, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "H100-80GB": {"1g.10gb": 7, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "H100-NVL": {"1g.12gb": 7, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1},
    "H200-141GB": {"1g.18gb": 7, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
}


@pytest.mark.parametrize(
    ("size", "profile"), [(size, mig.profile) for size, sku in GPU_SKUS.items() for mig in sku.mig]
)
def test_mig_capacity_is_what_nvidia_partitions_each_gpu_into(size: str, profile: str) -> None:
    pool = GpuPoolConfig.model_validate({"name": "mig", "vmSize": size, "maxCount": 3, "migProfile": profile})
    mig = pool.sku.mig_slice(profile)
    assert mig is not None
    instances = NVIDIA_MIG_INSTANCES_PER_GPU[pool.sku.gpu_model][mig.nvidia_profile]
    assert gpus_per_node(pool) == pool.sku.gpus_per_vm * instances, (
        f"{size} with {profile}: the device plugin advertises {instances} x {mig.nvidia_profile} per GPU; a quota "
        "sized on any other count admits jobs that never schedule (too many) or strands paid-for slices (too few)"
    )
    assert gpu_capacity(pool) == 3 * gpus_per_node(pool), "maxCount nodes of that many devices"


def test_a_disabled_training_section_creates_nothing(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = without_models(stack_config("dev"))  # its model's callers are training teams
    config["aks-gpu-platform:training"]["kueue"]["enabled"] = False
    recording = run_stack("dev", config)
    assert recording.of_type("azure-native:containerservice:ManagedCluster"), "the rest of the stack still plans"
    assert not recording.of_type("aks-gpu-platform:index:TrainingQueues")
    assert not [
        r
        for r in recording.resources
        if r.type.startswith(KUEUE) or r.name.removeprefix("platform-").startswith("queues-")
    ]
    assert "trainingTeams" not in recording.stack_outputs
