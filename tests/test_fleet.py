"""The fleet stack (Pulumi.fleet.yaml): member platforms, the MultiKueue manager, Fleet Manager's staged upgrades."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.fleet_multikueue import MULTIKUEUE_CHECK, MULTIKUEUE_CONTROLLER
from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.config.fleet import load_fleet
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.arm_spec import load_specs, schema_problems
from tests.autoscaler_template import pods_that_bring_up_nodes, scale_from_zero_problems
from tests.conftest import settings_of
from tests.kueue_schemas import cel_violations, schema_errors
from tests.scheduling import scheduling_check
from tools import REPO_ROOT

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
FLEET_API = "2024-05-02-preview"
MEMBERS = ("krc", "jpe")


@pytest.fixture(scope="module")
def fleet_recording() -> Recording:
    return run_stack("fleet")


def settings() -> dict[str, Any]:
    return copy.deepcopy(settings_of(load_stack_file("fleet", REPO_ROOT)))


def cluster_objects(recording: Recording, owner: str, kind: str) -> list[dict[str, Any]]:
    """Kueue objects of one cluster: `owner` is a member name or `manager` (children are named `fleet-<owner>-...`)."""
    return [
        kubernetes_object(r)
        for r in recording.resources
        if r.type == KUEUE + kind and r.name.startswith(f"fleet-{owner}-")
    ]


# --- config ----------------------------------------------------------------------------------------------------------


def rejected(values: dict[str, Any], field: str, hint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_fleet(values)
    message = str(caught.value)
    assert f"{field}:" in message and hint in message, f"the error must name {field} and say {hint!r}:\n{message}"


def test_the_example_fleet_validates_every_member_as_a_whole_platform() -> None:
    plan = load_fleet(settings())
    assert {m: c.location for m, c in plan.members.items()} == {"krc": "koreacentral", "jpe": "japaneast"}


def test_overlapping_member_networks_are_refused_naming_the_member() -> None:
    values = settings()
    members = values["fleet"]["members"]
    members[1]["platform"]["network"] = {**values["network"], "vnetName": "vnet-second"}  # krc's, the top level's
    rejected(values, "fleet.members[1].platform.network", "must not overlap")


def test_two_members_in_one_region_are_refused() -> None:
    values = settings()
    values["fleet"]["members"][1]["platform"]["location"] = "koreacentral"
    rejected(values, "fleet.members[1].platform.location", "its own region")


def test_a_member_cannot_override_the_mirrored_training_section() -> None:
    values = settings()
    values["fleet"]["members"][0]["platform"] = {"training": {"teams": []}}
    rejected(values, "fleet.members[0].platform.training", "shared by every member")


def test_a_member_quota_beyond_its_own_pool_is_refused_like_a_platform_s() -> None:
    values = settings()
    # the team's 2 GPUs no longer fit krc's pool
    values["fleet"]["members"][0]["platform"] = {"gpuPools": [{**values["gpuPools"][0], "maxCount": 1}]}
    rejected(values, "fleet.members[0].platform.training.teams[0].quotas[0].gpus", "holds at most 1 GPUs")


def test_a_canary_that_names_no_member_is_refused() -> None:
    values = settings()
    values["fleet"]["updates"]["canaryMembers"] = ["kr"]
    rejected(values, "fleet.updates.canaryMembers[0]", "must name a member")


# --- MultiKueue objects -------------------------------------------------------------------------------------------


def test_every_kueue_object_of_the_fleet_passes_its_v0_19_2_crd(fleet_recording: Recording) -> None:
    crs = [r for r in fleet_recording.resources if r.type.startswith(KUEUE)]
    kinds = {r.type.removeprefix(KUEUE) for r in crs}
    assert {"MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"} <= kinds
    for resource in crs:
        manifest = kubernetes_object(resource)
        problems = schema_errors(manifest) + cel_violations(manifest)
        assert not problems, f"{resource.name} would be rejected or pruned by the v0.19.2 CRD: {problems}"


def test_the_manager_s_queues_wait_for_the_multikueue_check_over_every_member(fleet_recording: Recording) -> None:
    checks = {c["metadata"]["name"]: c for c in cluster_objects(fleet_recording, "dispatch", "AdmissionCheck")}
    check = checks[MULTIKUEUE_CHECK]
    assert check["spec"]["controllerName"] == MULTIKUEUE_CONTROLLER, "only this controller dispatches to workers"
    config = cluster_objects(fleet_recording, "dispatch", "MultiKueueConfig")[0]
    assert config["metadata"]["name"] == check["spec"]["parameters"]["name"], "the check must point at the config"
    clusters = {c["metadata"]["name"] for c in cluster_objects(fleet_recording, "dispatch", "MultiKueueCluster")}
    assert set(config["spec"]["clusters"]) == clusters == set(MEMBERS), "every member is a dispatch target"
    for queue in cluster_objects(fleet_recording, "manager", "ClusterQueue"):
        waits = [c["name"] for c in queue["spec"]["admissionChecksStrategy"]["admissionChecks"]]
        assert waits == [MULTIKUEUE_CHECK], f"{queue['metadata']['name']}: without the check jobs run on the manager"


def test_the_manager_reaches_members_through_a_kubeconfig_kueue_accepts(fleet_recording: Recording) -> None:
    # pkg/controller/admissionchecks/multikueue/multikueuecluster.go validateKubeconfig (v0.19.2): no exec plugins,
    # no token files, no auth providers, embedded CA only.
    for secret in fleet_recording.of_type("kubernetes:core/v1:Secret"):
        if not secret.name.endswith("-kubeconfig") or "dispatch" not in secret.name:
            continue
        kubeconfig = yaml.safe_load(secret.inputs["stringData"]["kubeconfig"])
        for user in kubeconfig["users"]:
            assert set(user["user"]) == {"token"}, "exec, tokenFile and auth providers are refused by Kueue"
        for cluster in kubeconfig["clusters"]:
            assert "certificate-authority" not in cluster["cluster"], "CA file paths are refused"
            assert not cluster["cluster"].get("insecure-skip-tls-verify"), "TLS must be verified"
    roles = [
        r
        for r in fleet_recording.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if "multikueue" in r.name
    ]
    assert len(roles) == len(MEMBERS)
    for role in roles:
        verbs = {v for rule in role.inputs["rules"] for v in rule["verbs"]}
        groups = {g for rule in role.inputs["rules"] for g in rule["apiGroups"]}
        assert "*" not in verbs and "*" not in groups, "the manager's identity on a member is not an admin"
        assert "" not in groups, "no core objects (secrets, pods) on members"


# --- the mirror ---------------------------------------------------------------------------------------------------


def queue_mirror(recording: Recording, owner: str) -> set[tuple[str, str, str]]:
    """(namespace, LocalQueue, ClusterQueue) of one cluster, the names MultiKueue matches across clusters."""
    found = set()
    for queue in cluster_objects(recording, owner, "LocalQueue"):
        found.add((queue["metadata"]["namespace"], queue["metadata"]["name"], queue["spec"]["clusterQueue"]))
    return found


def mirror_problems(recording: Recording) -> list[str]:
    manager = queue_mirror(recording, "manager")
    problems = []
    for member in MEMBERS:
        mirror = queue_mirror(recording, member)
        if mirror != manager:
            problems.append(f"{member}: missing {sorted(manager - mirror)}, extra {sorted(mirror - manager)}")
    return problems


def test_members_have_exactly_the_manager_s_namespaces_and_local_queues(fleet_recording: Recording) -> None:
    assert queue_mirror(fleet_recording, "manager"), "the manager has team queues to submit to"
    problems = mirror_problems(fleet_recording)
    assert not problems, f"MultiKueue creates the job in the same namespace and queue on the worker: {problems}"


def test_a_member_without_its_mirrored_local_queue_is_caught(fleet_recording: Recording) -> None:
    broken = copy.copy(fleet_recording)
    broken.resources = [
        r for r in fleet_recording.resources if not (r.type == KUEUE + "LocalQueue" and r.name.startswith("fleet-jpe-"))
    ]
    assert any(p.startswith("jpe:") for p in mirror_problems(broken)), "a missing LocalQueue must fail the mirror"


# --- dispatch model -----------------------------------------------------------------------------------------------
# MultiKueue at kubernetes-sigs/kueue v0.19.2 (site/content/en/docs/concepts/multikueue.md "Job Flow";
# pkg/controller/admissionchecks/multikueue/workload.go): the manager reserves quota in its own ClusterQueue,
# copies the workload to the nominated members (AllAtOnce: all of them), and the first member whose Kueue
# admits it wins; the copies elsewhere are deleted. A member's Kueue admits a workload when its namespace has a
# LocalQueue of that name and the ClusterQueue behind it has unused nominal quota of a flavor the pods fit.


@dataclass(frozen=True)
class Workload:
    namespace: str
    queue: str
    flavor: str
    gpus: int


def gpu_quota(cluster_queue: dict[str, Any], flavor: str) -> int:
    for group in cluster_queue["spec"]["resourceGroups"]:
        for entry in group["flavors"]:
            if entry["name"] == flavor:
                return sum(int(r["nominalQuota"]) for r in entry["resources"] if r["name"] == "nvidia.com/gpu")
    return 0


def admits(recording: Recording, owner: str, workload: Workload, used: int) -> bool:
    local = {(ns, lq): cq for ns, lq, cq in queue_mirror(recording, owner)}
    cluster_queue = local.get((workload.namespace, workload.queue))
    if cluster_queue is None:
        return False
    queues = {q["metadata"]["name"]: q for q in cluster_objects(recording, owner, "ClusterQueue")}
    return used + workload.gpus <= gpu_quota(queues[cluster_queue], workload.flavor)


def dispatch(recording: Recording, workload: Workload, used: dict[str, int]) -> str | None:
    if not admits(recording, "manager", workload, sum(used.values())):
        return None  # the manager holds it: no quota reserved, nothing dispatched
    config = cluster_objects(recording, "dispatch", "MultiKueueConfig")[0]
    return next((m for m in config["spec"]["clusters"] if admits(recording, m, workload, used.get(m, 0))), None)


def test_a_job_that_does_not_fit_one_member_s_quota_runs_on_another(fleet_recording: Recording) -> None:
    queues = queue_mirror(fleet_recording, "manager")
    job = Workload(*next((ns, lq) for ns, lq, _ in queues), "gput4", 2)
    assert dispatch(fleet_recording, job, {}) == "krc", "with both members idle the first to admit wins"
    assert dispatch(fleet_recording, job, {"krc": 2}) == "jpe", "krc's quota is used up: jpe admits the job"
    assert dispatch(fleet_recording, job, {"krc": 2, "jpe": 2}) is None, "the fleet is full: the job waits"


# --- Fleet Manager ------------------------------------------------------------------------------------------------

BODIES_MEMBER = "azure-native:containerservice:FleetMember"
BODIES = {
    "azure-native:containerservice:Fleet": "fleets",
    "azure-native:containerservice:FleetMember": "fleets/members",
    "azure-native:containerservice:FleetUpdateStrategy": "fleets/updateStrategies",
    "azure-native:containerservice:AutoUpgradeProfile": "fleets/autoUpgradeProfiles",
}


def test_every_fleet_manager_body_passes_the_rest_spec_at_its_api_version(fleet_recording: Recording) -> None:
    specs = load_specs()
    for type_token, resource_type in BODIES.items():
        spec = specs[("Microsoft.ContainerService", resource_type, FLEET_API)]
        body = spec["definitions"][spec["body"]]
        for resource in fleet_recording.of_type(type_token):
            # The SDK flattens `properties` (x-ms-client-flatten): its keys are the resource's own inputs.
            properties = {k: v for k, v in resource.inputs.items() if k in body["properties"]}
            problems = schema_problems(properties, body, spec["definitions"], "properties")
            assert not problems, f"{resource.name}: Azure refuses {problems}"
        assert fleet_recording.of_type(type_token), f"the fleet has a {type_token}"


def test_updates_run_the_canary_region_first_then_the_rest_after_a_wait(fleet_recording: Recording) -> None:
    members = {r.inputs["fleetMemberName"]: r.inputs["group"] for r in fleet_recording.of_type(BODIES_MEMBER)}
    assert set(members) == set(MEMBERS), "every member platform joins the fleet"
    stages = fleet_recording.one("azure-native:containerservice:FleetUpdateStrategy").inputs["strategy"]["stages"]
    assert [g["name"] for g in stages[0]["groups"]] == [members["krc"]], "the canary stage holds only the canary"
    assert stages[0]["afterStageWaitInSeconds"] >= 3600, "a wait lets the canary show problems before the rest"
    assert {g["name"] for g in stages[1]["groups"]} == {members["jpe"]}, "every other member follows"
    profiles = {
        r.inputs["channel"] for r in fleet_recording.of_type("azure-native:containerservice:AutoUpgradeProfile")
    }
    assert profiles == {"Stable", "NodeImage"}, "Kubernetes and node images are both upgraded through the stages"
    windows = [r for r in fleet_recording.of_type("azure-native:containerservice:MaintenanceConfiguration")]
    for member in MEMBERS:
        assert any(w.name.startswith(f"fleet-{member}-") for w in windows), f"{member} keeps its maintenance windows"


def member_recording(recording: Recording, member_urn: str) -> Recording:
    """One member platform's part of the fleet: the resources under its AksGpuPlatform component."""
    parents = {r.urn: r.parent for r in recording.resources}

    def under(urn: str) -> bool:
        while urn:
            if urn == member_urn:
                return True
            urn = parents.get(urn, "")
        return False

    return Recording(resources=[r for r in recording.resources if under(r.urn)])


def test_every_member_passes_the_scheduling_and_scale_from_zero_checks(fleet_recording: Recording) -> None:
    # Each member is a whole platform in its own cluster: its pods must fit its own pools, from zero too.
    plan = load_fleet(settings())
    platforms = fleet_recording.of_type("aks-gpu-platform:index:AksGpuPlatform")
    assert len(platforms) == len(plan.members), "one platform per member"
    for platform in platforms:
        member = next(m for m in plan.members if platform.name.endswith(f"-{m}"))
        ib = {p.name for p in plan.members[member].gpu_pools if p.infiniband}
        part = member_recording(fleet_recording, platform.urn)
        check = scheduling_check(part, ib)
        assert [n for n in check.user_nodes if n.gpu], f"{member}: the check sees the member's GPU pools"
        assert not check.problems(), f"{member}: pods that never run:\n" + "\n".join(check.problems())
        assert pods_that_bring_up_nodes(part, ib), f"{member}: the contract sees the pods that scale its pools up"
        stuck = scale_from_zero_problems(part, ib)
        assert not stuck, f"{member}: pods a pool at zero never scales up for:\n" + "\n".join(stuck)
