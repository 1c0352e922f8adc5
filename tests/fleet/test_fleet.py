"""The fleet stack (Pulumi.fleet.yaml): member platforms, the MultiKueue manager, Fleet Manager's staged upgrades."""

from __future__ import annotations

import base64
import copy
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from aks_gpu_platform.components.fleet import token_rotator as multikueue_token_rotator
from aks_gpu_platform.components.fleet.multikueue import (
    MULTIKUEUE_ACCOUNT,
    MULTIKUEUE_CHECK,
    MULTIKUEUE_CONTROLLER,
    ROTATOR,
)
from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.config.fleet.section import load_fleet
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.upstream import admission_cel as admission
from tests.upstream import cron, upgrade_owner
from tests.upstream import rbac as rbac_model
from tests.upstream.arm_spec import load_specs, request_problems
from tests.upstream.autoscaler_template import pods_that_bring_up_nodes, scale_from_zero_problems
from tests.upstream.kueue_schemas import cel_violations, schema_errors
from tests.upstream.member_api import member_api
from tests.upstream.scheduling import scheduling_check
from tests.upstream.upgrade_owner import KUBERNETES
from tools import REPO_ROOT

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
FLEET_API = "2026-06-01"
MEMBERS = ("krc", "jpe")
GENERIC = "azure-native:resources:Resource"
CLUSTER = "azure-native:containerservice:ManagedCluster"


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


def test_the_rotated_kubeconfig_is_one_kueue_accepts() -> None:
    # pkg/controller/admissionchecks/multikueue/multikueuecluster.go validateKubeconfig (v0.19.2): no exec plugins,
    # no token files, no auth providers, embedded CA only.
    text = multikueue_token_rotator.member_kubeconfig("krc", "https://krc.example:443", "Q0E=", MULTIKUEUE_ACCOUNT, "t")
    kubeconfig = yaml.safe_load(text)
    for user in kubeconfig["users"]:
        assert set(user["user"]) == {"token"}, "exec, tokenFile and auth providers are refused by Kueue"
    for cluster in kubeconfig["clusters"]:
        assert set(cluster["cluster"]) == {"server", "certificate-authority-data"}, "CA file paths are refused"
    assert kubeconfig["contexts"][0]["context"]["cluster"] == kubeconfig["current-context"] == "krc"


# kueue v0.19.2 apis/kueue/v1beta2/multikueue_types.go MultiKueueConfigSecretKey: the only key Kueue reads.
KUEUE_KUBECONFIG_KEY = "kubeconfig"


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies `application/merge-patch+json`."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in cast(dict[str, Any], patch).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged


def test_the_rotation_writes_the_kubeconfig_where_kueue_reads_it(fleet_recording: Recording) -> None:
    secret = kubernetes_object(fleet_recording.one("kubernetes:core/v1:Secret", "krc-kubeconfig"))
    # The API server keeps stringData as base64 data.
    stored = {"data": {k: base64.b64encode(v.encode()).decode() for k, v in secret["stringData"].items()}}
    fresh = multikueue_token_rotator.member_kubeconfig("krc", "https://krc:443", "Q0E=", MULTIKUEUE_ACCOUNT, "fresh")
    stored = _merge_patch(stored, multikueue_token_rotator.kubeconfig_patch(fresh))
    read = yaml.safe_load(base64.b64decode(stored["data"][KUEUE_KUBECONFIG_KEY]))
    assert [u["user"].get("token") for u in read["users"]] == ["fresh"], (
        "Kueue must read the token the CronJob just wrote, or it keeps the placeholder (no member) or an expired token"
    )


def test_no_member_token_is_kept_in_pulumi_state(fleet_recording: Recording) -> None:
    legacy = [
        r.name
        for r in fleet_recording.of_type("kubernetes:core/v1:Secret")
        if r.inputs.get("type") == "kubernetes.io/service-account-token"
    ]
    assert not legacy, f"legacy service-account tokens never expire and land in the stack's state: {legacy}"
    for secret in fleet_recording.of_type("kubernetes:core/v1:Secret"):
        if secret.name.endswith("-kubeconfig"):
            kubeconfig = yaml.safe_load(secret.inputs["stringData"]["kubeconfig"])
            assert not kubeconfig["users"], f"{secret.name}: Pulumi creates it empty; only the CronJob writes tokens"
            assert {"data", "stringData"} <= set(secret.ignore_changes), (
                f"{secret.name}: a later `pulumi up` must not reset the token the CronJob wrote"
            )


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
# MultiKueue at kubernetes-sigs/kueue v0.19.2, pkg/controller/admissionchecks/multikueue/workload.go: once the
# manager reserves quota, nominateAndSynchronizeWorkers copies the Workload (not the job) to the nominated members
# (AllAtOnce: all; the Incremental dispatcher, pkg/controller/workloaddispatcher/incrementaldispatcher.go: stepSize
# members per 5-minute round). reconcileGroup step 6 picks the member whose copy shows Admitted first
# (bestMatchByCondition: the earliest transition, a race between independent clusters), removes every other copy
# (RemoveRemoteObjects: update to drop the finalizer, then delete) and creates the job only there (SyncJob). A
# member's Kueue admits a copy when its namespace has the LocalQueue and the ClusterQueue behind it has unused
# nominal quota of a flavor; with a ProvisioningRequest check, Admitted waits for the nodes, which the autoscaler
# starts bringing up as soon as the copy's quota is reserved.


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
                return sum(int(r["nominalQuota"]) for r in entry["resources"] if r["name"].endswith("/gpu"))
    return 0


def cluster_queue_for(recording: Recording, owner: str, workload: Workload) -> dict[str, Any] | None:
    local = {(ns, lq): cq for ns, lq, cq in queue_mirror(recording, owner)}
    name = local.get((workload.namespace, workload.queue))
    queues = {q["metadata"]["name"]: q for q in cluster_objects(recording, owner, "ClusterQueue")}
    return queues.get(name) if name else None


def admits(recording: Recording, owner: str, workload: Workload, used: int) -> bool:
    queue = cluster_queue_for(recording, owner, workload)
    return queue is not None and used + workload.gpus <= gpu_quota(queue, workload.flavor)


def provisions_before_admission(recording: Recording, owner: str, workload: Workload) -> bool:
    queue = cluster_queue_for(recording, owner, workload) or {}
    checks = queue.get("spec", {}).get("admissionChecksStrategy", {}).get("admissionChecks", [])
    return any(c["name"] != MULTIKUEUE_CHECK for c in checks)


@dataclass(frozen=True)
class Outcome:
    winner: str | None
    provisioned: frozenset[str]
    """Members whose autoscaler brings GPU nodes up for this one job."""
    left_running: frozenset[str]
    """Losing members whose copy the manager could not remove."""


def manager_can(recording: Recording, member: str, verb: str, resource: tuple[str, str], namespace: str) -> bool:
    return rbac_model.kubernetes_allows(
        rbac_objects_on(recording, member),
        {f"system:serviceaccount:kueue-system:{MULTIKUEUE_ACCOUNT}"},
        rbac_model.Request(verb, resource[0], resource[1], namespace=namespace),
    )


def dispatch(recording: Recording, workload: Workload, used: dict[str, int]) -> list[Outcome]:
    """Every way the race can end: any member that can admit the copy may be first."""
    if not admits(recording, "manager", workload, sum(used.values())):
        return [Outcome(None, frozenset(), frozenset())]  # the manager holds it: no quota reserved, nothing copied
    config = cluster_objects(recording, "dispatch", "MultiKueueConfig")[0]
    nominated = list(config["spec"]["clusters"])
    can_admit = [m for m in nominated if admits(recording, m, workload, used.get(m, 0))]
    if not can_admit:
        return [Outcome(None, frozenset(), frozenset())]
    early = frozenset(m for m in can_admit if provisions_before_admission(recording, m, workload))
    outcomes = []
    for winner in can_admit:
        losers = [m for m in nominated if m != winner]
        removable = {
            m
            for m in losers
            if manager_can(recording, m, "update", ("kueue.x-k8s.io", "workloads"), workload.namespace)
            and manager_can(recording, m, "delete", ("kueue.x-k8s.io", "workloads"), workload.namespace)
        }
        outcomes.append(Outcome(winner, early | {winner}, frozenset(set(losers) - removable)))
    return outcomes


def a_team_job(recording: Recording, gpus: int) -> Workload:
    namespace, queue, _ = sorted(queue_mirror(recording, "manager"))[0]
    return Workload(namespace, queue, "gput4", gpus)


def test_a_job_costs_one_region_whichever_member_wins(fleet_recording: Recording) -> None:
    outcomes = dispatch(fleet_recording, a_team_job(fleet_recording, 2), {})
    assert {o.winner for o in outcomes} == set(MEMBERS), "with both members idle either may admit first: a race"
    for outcome in outcomes:
        assert outcome.provisioned == {outcome.winner}, (
            f"won by {outcome.winner}: GPU nodes come up in {sorted(outcome.provisioned)}; one job must cost one region"
        )
        assert not outcome.left_running, (
            f"won by {outcome.winner}: the copies on {sorted(outcome.left_running)} cannot be removed and keep their "
            "quota (and would run the job a second time)"
        )


def test_the_race_model_catches_provisioning_on_every_member(fleet_recording: Recording) -> None:
    """The defect before the fix: each member's ClusterQueue waited for a ProvisioningRequest check."""
    broken = copy.deepcopy(fleet_recording)
    for r in broken.resources:
        if r.type == KUEUE + "ClusterQueue" and not r.name.startswith("fleet-manager-"):
            r.inputs["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "provisioning"}]}
    outcome = dispatch(broken, a_team_job(broken, 2), {})[0]
    assert outcome.provisioned == set(MEMBERS), "a ProvisioningRequest on every member scales every region up"


def test_a_member_role_without_delete_leaves_the_losing_copy_behind(fleet_recording: Recording) -> None:
    broken = copy.deepcopy(fleet_recording)
    for r in broken.resources:
        if r.type.endswith(":ClusterRole") and r.name.endswith("-multikueue-writer"):
            for rule in r.inputs["rules"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != "delete"]
    outcome = dispatch(broken, a_team_job(broken, 2), {})[0]
    assert outcome.left_running, "without delete the manager cannot remove the copy on the member that lost"


def test_a_job_that_does_not_fit_one_member_s_quota_runs_on_another(fleet_recording: Recording) -> None:
    job = a_team_job(fleet_recording, 2)
    assert {o.winner for o in dispatch(fleet_recording, job, {"krc": 2})} == {"jpe"}, "krc is full: only jpe admits"
    assert dispatch(fleet_recording, job, {"krc": 2, "jpe": 2})[0].winner is None, "the fleet is full: the job waits"


def test_members_admit_on_quota_alone_and_an_explicit_provisioning_request_is_refused() -> None:
    plan = load_fleet(settings())
    assert not any(cfg.training.admission.provisioning_request for cfg in plan.members.values())
    values = settings()
    values["training"]["admission"] = {"provisioningRequest": True}
    rejected(values, "training.admission.provisioningRequest", "only the member that wins the job scales up")


# --- who may do what, where --------------------------------------------------------------------------------------


def cluster_name_of(recording: Recording, resource: RecordedResource) -> str:
    """The cluster an in-cluster object goes to: the one whose FQDN its provider's kubeconfig names."""
    providers = {p.urn: p for p in recording.resources if p.type == "pulumi:providers:kubernetes"}
    kubeconfig = str(providers[resource.provider.rsplit("::", 1)[0]].inputs.get("kubeconfig", ""))
    return next(
        c.inputs["resourceName"] for c in recording.of_type(CLUSTER) if str(c.outputs.get("fqdn")) in kubeconfig
    )


def cluster_names(recording: Recording) -> dict[str, str]:
    """`manager` and each member name -> its Azure cluster name."""
    plan = load_fleet(settings())
    return {"manager": plan.manager.cluster.name, **{m: c.cluster.name for m, c in plan.members.items()}}


def rbac_objects_on(recording: Recording, owner: str) -> list[dict[str, Any]]:
    name = cluster_names(recording)[owner]
    return [
        kubernetes_object(r)
        for r in recording.resources
        if r.type.startswith("kubernetes:rbac.authorization.k8s.io/v1:") and cluster_name_of(recording, r) == name
    ]


def test_multikueue_writes_only_in_team_namespaces_and_reads_what_it_watches(fleet_recording: Recording) -> None:
    plan = load_fleet(settings())
    team_namespace = plan.shared_training.teams[0].namespace_name
    for member in MEMBERS:
        for verb, resource in [("create", ("batch", "jobs")), ("create", ("jobset.x-k8s.io", "jobsets"))]:
            assert manager_can(fleet_recording, member, verb, resource, team_namespace), (
                f"{member}: MultiKueue creates the job's copy in {team_namespace}"
            )
            for namespace in ("kube-system", "kueue-system", "default"):
                assert not manager_can(fleet_recording, member, verb, resource, namespace), (
                    f"{member}: a {resource[1]} in {namespace} could run privileged or as any service account: "
                    "the manager's token must not create one there"
                )
        for resource in [("kueue.x-k8s.io", "workloads"), ("batch", "jobs"), ("jobset.x-k8s.io", "jobsets")]:
            for verb in ("list", "watch"):
                assert manager_can(fleet_recording, member, verb, resource, ""), (
                    f"{member}: MultiKueue's remote watch and garbage collector {verb} {resource[1]} in every namespace"
                )
        for verb, resource in [("get", ("", "secrets")), ("create", ("", "pods"))]:
            assert not manager_can(fleet_recording, member, verb, resource, team_namespace), (
                f"{member}: no {resource[1]}"
            )


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(_leaves(item, f"{path}.{key}" if path else str(key)))
        return found
    return {path: value}


def test_raising_the_credential_generation_revokes_every_member_token(fleet_recording: Recording) -> None:
    """A TokenRequest token names its service account's UID and dies with it: raising the generation must make
    Pulumi delete each member's multikueue-manager account and create a new one (a new UID), not patch it."""
    config = copy.deepcopy(load_stack_file("fleet", REPO_ROOT))
    config["aks-gpu-platform:fleet"].setdefault("multiKueue", {})["credentialGeneration"] = 2
    raised = run_stack("fleet", config)
    for member in MEMBERS:
        before = fleet_recording.one("kubernetes:core/v1:ServiceAccount", f"fleet-{member}-multikueue-account")
        after = raised.one("kubernetes:core/v1:ServiceAccount", f"fleet-{member}-multikueue-account")
        old, new = _leaves(before.inputs), _leaves(after.inputs)
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        assert changed, f"{member}: the account does not change at all, so its leaked tokens keep working"
        replaced = [c for c in changed if any(c == r or c.startswith(f"{r}.") for r in after.replace_on_changes)]
        assert replaced, f"{member}: {changed} is patched in place; the account keeps its UID and its tokens"
        assert after.delete_before_replace, f"{member}: a same-name account cannot be created beside the old one"


def test_only_the_rotation_identity_issues_the_multikueue_token(fleet_recording: Recording) -> None:
    identity = next(
        r
        for r in fleet_recording.of_type("azure-native:managedidentity:UserAssignedIdentity")
        if "multikueue" in r.name
    )
    principal = identity.outputs["principalId"]
    for member in MEMBERS:
        objects = rbac_objects_on(fleet_recording, member)

        def may(
            verb: str, resource: str, sub: str, name: str, namespace: str = "kueue-system", on: Any = objects
        ) -> bool:
            request = rbac_model.Request(verb, "", resource, namespace=namespace, subresource=sub, name=name)
            return rbac_model.kubernetes_allows(on, set(), request, user=principal)

        assert may("create", "serviceaccounts", "token", MULTIKUEUE_ACCOUNT), f"{member}: the CronJob's TokenRequest"
        assert not may("create", "serviceaccounts", "token", "kueue-controller-manager"), f"{member}: no other account"
        assert not may("create", "serviceaccounts", "token", MULTIKUEUE_ACCOUNT, "kube-system"), f"{member}: elsewhere"
        assert not may("get", "secrets", "", ""), f"{member}: the identity reads nothing"
    manager = rbac_objects_on(fleet_recording, "manager")
    account = {f"system:serviceaccount:kueue-system:{ROTATOR}"}
    for member in MEMBERS:
        request = rbac_model.Request("patch", "", "secrets", namespace="kueue-system", name=f"multikueue-{member}")
        assert rbac_model.kubernetes_allows(manager, account, request), f"the CronJob writes {member}'s kubeconfig"
    other = rbac_model.Request("get", "", "secrets", namespace="kueue-system", name="kueue-webhook-server-cert")
    assert not rbac_model.kubernetes_allows(manager, account, other), "the CronJob reads no other Secret"


def test_the_rotation_program_asks_a_short_token_and_writes_the_secret_kueue_reads(fleet_recording: Recording) -> None:
    job = kubernetes_object(fleet_recording.one("kubernetes:batch/v1:CronJob", "multikueue-tokens"))
    pod = job["spec"]["jobTemplate"]["spec"]["template"]
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert pod["metadata"]["labels"]["azure.workload.identity/use"] == "true", "the program signs in as its identity"
    seconds = int(env["TOKEN_SECONDS"])
    assert 600 <= seconds <= 3600, "TokenRequest takes at least 600 s; a token must not outlive an hour"
    gap = cron.parse(job["spec"]["schedule"]).longest_gap_seconds()
    assert gap * 3 <= seconds, (
        f"runs up to {gap} s apart: a {seconds} s token must survive two missed runs before Kueue loses the member"
    )
    request = multikueue_token_rotator.token_request(seconds)
    assert request["spec"] == {"expirationSeconds": seconds}, "a TokenRequest bound to nothing but time"
    secrets = {
        c["spec"]["clusterSource"]["kubeConfig"]["location"]
        for c in cluster_objects(fleet_recording, "dispatch", "MultiKueueCluster")
    }
    assert {m["secret"] for m in json.loads(env["MEMBERS"])} == secrets, "the program writes what Kueue reads"


@pytest.mark.parametrize(
    ("schedule", "gap_minutes"),
    [
        ("*/10 * * * *", 10),
        ("0 * * * *", 60),  # "0" is minute 0 of every hour, not every 0 minutes
        ("@hourly", 60),
        ("5,35 * * * *", 30),
        ("0-50/25 * * * *", 25),  # 0, 25, 50
        ("*/10 9-17 * * MON-FRI", 63 * 60 + 10),  # Friday 17:50 to Monday 09:00
        ("0 0 1 * 1", 7 * 24 * 60),  # day of month and day of week both set: either (both: months apart)
        # A step above 1 clears the star bit (robfig/cron v3.0.1 parser.go getRange): odd days or Mondays...
        ("0 3 */2 * 1", 2 * 24 * 60),
        ("0 3 */1 * 1", 7 * 24 * 60),  # ...while */1 stays a star: every day and a Monday, so Mondays only
    ],
)
def test_the_cron_model_reads_every_field_as_the_cronjob_controller_does(schedule: str, gap_minutes: int) -> None:
    assert cron.parse(schedule).longest_gap_seconds() == gap_minutes * 60


@pytest.mark.parametrize("schedule", ["*/10 * * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "5-1 * * * *"])
def test_the_cron_model_refuses_what_the_cronjob_controller_refuses(schedule: str) -> None:
    with pytest.raises(cron.CronError):
        cron.parse(schedule)


# --- teams --------------------------------------------------------------------------------------------------------


def team_groups() -> tuple[str, set[str]]:
    team = load_fleet(settings()).shared_training.teams[0]
    return team.namespace_name, set(team.members)


def test_teams_submit_on_the_manager_and_only_read_on_members(fleet_recording: Recording) -> None:
    namespace, groups = team_groups()
    submit = rbac_model.Request("create", "jobset.x-k8s.io", "jobsets", namespace=namespace)
    logs = rbac_model.Request("get", "", "pods", namespace=namespace, subresource="log", name="train-0")
    assert rbac_model.kubernetes_allows(rbac_objects_on(fleet_recording, "manager"), groups, submit), (
        "teams are told to submit on the manager: without this Role they cannot"
    )
    for member in MEMBERS:
        objects = rbac_objects_on(fleet_recording, member)
        assert not rbac_model.kubernetes_allows(objects, groups, submit), (
            f"{member}: a job submitted here bypasses MultiKueue and the fleet's quota"
        )
        assert rbac_model.kubernetes_allows(objects, groups, logs), f"{member}: teams read their ranks' logs here"
    manager_id = fleet_recording.one(CLUSTER, "manager").outputs["id"]
    credentials = "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action"
    assignments = [r.inputs for r in fleet_recording.of_type("azure-native:authorization:RoleAssignment")]
    assert rbac_model.azure_allows(assignments, groups, manager_id, credentials), "teams fetch the manager's kubeconfig"


def test_the_largest_job_policy_refuses_what_no_member_can_admit(fleet_recording: Recording) -> None:
    plan = load_fleet(settings())
    namespace, _ = team_groups()
    policy = kubernetes_object(
        fleet_recording.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "largest-job")
    )
    largest = 2  # one member's gput4 quota for the team (the manager's is 4: both members)
    assert admission.job_gpus(policy, admission.jobset(replicas=1, parallelism=2, gpus_per_pod=1)) == 2
    assert admission.verdict(policy, admission.jobset(replicas=1, parallelism=largest, gpus_per_pod=1)) is None
    refusal = admission.verdict(policy, admission.jobset(replicas=3, parallelism=1, gpus_per_pod=1))
    assert refusal is not None and "largest job team ml can run is 2 GPUs" in refusal, (
        f"3 GPUs fit the manager's 4 but neither member's 2: the job would hold the quota forever ({refusal})"
    )
    assert admission.verdict(policy, admission.job(parallelism=1, gpus_per_pod=3)) is not None, "a Job too"
    binding = kubernetes_object(
        fleet_recording.one(
            "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "largest-job"
        )
    )
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": namespace
    }, "the limit is the team's: it applies in its namespace"
    assert binding["spec"]["validationActions"] == ["Deny"], "a warning would let the job in"
    assert plan.members["krc"].training.teams[0].quotas[0].gpus == largest


def test_the_largest_job_policy_sees_every_job_a_team_submits_on_the_manager(fleet_recording: Recording) -> None:
    """The documented submissions, a Job and the team JobSet example, created or changed in the team's namespace
    on the manager, reach the policy; other namespaces are not the team's limit."""
    namespace, _ = team_groups()
    policy = kubernetes_object(
        fleet_recording.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "largest-job")
    )
    binding = kubernetes_object(
        fleet_recording.one(
            "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "largest-job"
        )
    )
    example = REPO_ROOT / "examples" / "team-jobset" / "jobset.yaml"
    (jobset,) = [d for d in yaml.safe_load_all(example.read_text()) if d and d["kind"] == "JobSet"]
    submissions = {"Job": admission.job(parallelism=1, gpus_per_pod=1), "JobSet": jobset}
    labels = {"kubernetes.io/metadata.name": namespace}
    for kind, obj in submissions.items():
        for operation in ("CREATE", "UPDATE"):
            assert admission.policy_applies(policy, binding, obj, operation, labels), (
                f"a {kind} {operation} in {namespace} never reaches the policy: a job no member can admit gets in"
            )
        elsewhere = {"kubernetes.io/metadata.name": "kube-system"}
        assert not admission.policy_applies(policy, binding, obj, "CREATE", elsewhere), "the limit is the team's"


def test_the_largest_job_policy_counts_gpus_as_kueue_reserves_them(fleet_recording: Recording) -> None:
    """Kueue reserves a pod's GPUs as Kubernetes counts them (init and sidecar containers included) and min(
    parallelism, completions) pods per Job: the policy must count the same, or a job it lets through holds the
    manager's quota forever, and one it refuses could have run."""
    policy = kubernetes_object(
        fleet_recording.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "largest-job")
    )
    shapes = {
        "plain": admission.job(parallelism=2, gpus_per_pod=1),
        "fewer completions than parallelism": admission.job(parallelism=4, gpus_per_pod=1, completions=2),
        "GPUs in an init container": admission.job(parallelism=1, gpus_per_pod=0, init_gpus=(3,)),
        "a GPU sidecar": admission.job(parallelism=1, gpus_per_pod=2, sidecar_gpus=(1,)),
        "only a sidecar asks": admission.job(parallelism=1, gpus_per_pod=0, sidecar_gpus=(1,)),
        "JobSet": admission.jobset(replicas=2, parallelism=1, gpus_per_pod=1),
    }
    for shape, obj in shapes.items():
        assert admission.job_gpus(policy, obj) == admission.kubernetes_gpus(obj), (
            f"{shape}: the policy counts {admission.job_gpus(policy, obj)} GPUs, Kueue reserves "
            f"{admission.kubernetes_gpus(obj)}"
        )
    # A plain init container before a sidecar is counted as if the sidecar ran beside it: never less than Kueue.
    ordered = admission.job(parallelism=1, gpus_per_pod=0, init_gpus=(2,), sidecar_gpus=(1,))
    assert admission.job_gpus(policy, ordered) >= admission.kubernetes_gpus(ordered), "a job the policy undercounts"
    largest = 2
    assert admission.verdict(policy, shapes["GPUs in an init container"]) is not None, (
        "3 GPUs asked by an init container: no member can give the team 3, the job would wait forever"
    )
    assert admission.verdict(policy, shapes["a GPU sidecar"]) is not None, "2 + a 1-GPU sidecar is 3 GPUs per pod"
    assert admission.kubernetes_gpus(shapes["fewer completions than parallelism"]) == largest
    assert admission.verdict(policy, shapes["fewer completions than parallelism"]) is None, (
        "Kueue reserves 2 pods of 4 (completions 2): a member can admit it"
    )


def test_a_job_admitted_under_a_larger_limit_stays_manageable(fleet_recording: Recording) -> None:
    """After the quota is lowered, Kueue must still suspend (evict) or relabel a job the old limit let in, and its
    owner must still scale it down; scaling it up above the limit is refused like a new job."""
    policy = kubernetes_object(
        fleet_recording.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "largest-job")
    )
    running = admission.job(parallelism=4, gpus_per_pod=1)  # let in when the team's limit was 4
    suspended = copy.deepcopy(running)
    suspended["spec"]["suspend"] = True
    assert admission.verdict(policy, suspended, old=running) is None, "Kueue could no longer evict the job"
    smaller = admission.job(parallelism=3, gpus_per_pod=1)
    assert admission.verdict(policy, smaller, old=running) is None, "scaling down toward the limit must pass"
    larger = admission.job(parallelism=5, gpus_per_pod=1)
    assert admission.verdict(policy, larger, old=running) is not None, "asking more than before and the limit"
    assert admission.verdict(policy, running) is not None, "the same job created today is above the limit"


def two_teams_in_a_cohort() -> dict[str, Any]:
    """The fleet stack with a second team in ml's cohort, and ml allowed to borrow one GPU of it (krc's pool grown
    to hold both teams' nominal quota)."""
    config = copy.deepcopy(load_stack_file("fleet", REPO_ROOT))
    config["aks-gpu-platform:gpuPools"][0]["maxCount"] = 4
    teams = config["aks-gpu-platform:training"]["teams"]
    teams[0]["quotas"][0]["borrowingLimitGpus"] = 1
    teams.append(
        {
            "name": "cv",
            "namespace": "team-cv",
            "members": ["00000000-0000-4000-8000-0000000000e2"],
            "quotas": [{"pool": "gput4", "gpus": 2}],
        }
    )
    return config


def kueue_admits_at_most(recording: Recording, member: str, cluster_queue: str, flavor: str) -> int:
    """The largest job a member's ClusterQueue can admit on a flavor, from its rendered objects: its nominal GPUs plus
    what its cohort can lend it, the other ClusterQueues' lendingLimit (else all their nominal quota), within its own
    borrowingLimit (kueue v0.19.2 site/content/en/docs/concepts/cluster_queue.md, BorrowingLimit and LendingLimit)."""

    def gpus(queue: dict[str, Any]) -> dict[str, Any]:
        for group in queue["spec"]["resourceGroups"]:
            for entry in group["flavors"]:
                if entry["name"] == flavor:
                    return next(r for r in entry["resources"] if r["name"].endswith("/gpu"))
        return {"nominalQuota": 0}

    queues = cluster_objects(recording, member, "ClusterQueue")
    own = next(q for q in queues if q["metadata"]["name"] == cluster_queue)
    cohort = own["spec"].get("cohortName")
    lendable = 0
    if cohort is not None:
        others = [q for q in queues if q is not own and q["spec"].get("cohortName") == cohort]
        lendable = sum(int(gpus(q).get("lendingLimit", gpus(q)["nominalQuota"])) for q in others)
    if "borrowingLimit" in gpus(own):
        lendable = min(lendable, int(gpus(own)["borrowingLimit"]))
    return int(gpus(own)["nominalQuota"]) + lendable


def test_the_largest_job_is_what_a_member_admits_with_what_its_cohort_lends() -> None:
    recording = run_stack("fleet", two_teams_in_a_cohort())
    policy = kubernetes_object(
        recording.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "largest-job-ml")
    )
    most = max(kueue_admits_at_most(recording, member, "ml", "gput4") for member in MEMBERS)
    assert most == 3, "2 of its own and 1 borrowed from cv (ml's borrowingLimit), on one member"
    assert admission.verdict(policy, admission.job(parallelism=most, gpus_per_pod=1)) is None, (
        f"a {most}-GPU job fits one member with what the cohort lends: refusing it wastes the team's quota"
    )
    assert admission.verdict(policy, admission.job(parallelism=most + 1, gpus_per_pod=1)) is not None, (
        f"{most + 1} GPUs exceed what any member admits: the job would hold the manager's quota forever"
    )


# --- upgrades -----------------------------------------------------------------------------------------------------

BODY_TYPES = ("fleets", "members", "updateStrategies", "autoUpgradeProfiles")


def fleet_bodies(recording: Recording) -> list[RecordedResource]:
    return [r for r in recording.of_type(GENERIC) if r.inputs.get("resourceType") in BODY_TYPES]


def test_every_fleet_manager_body_passes_the_ga_rest_spec(fleet_recording: Recording) -> None:
    specs = load_specs()
    bodies = fleet_bodies(fleet_recording)
    assert {b.inputs["resourceType"] for b in bodies} == set(BODY_TYPES), "the whole Fleet is sent"
    for body in bodies:
        assert body.inputs["apiVersion"] == FLEET_API, f"{body.name}: the GA API, not the retiring preview"
        problems = request_problems(body.inputs, specs)
        assert not problems, f"{body.name}: Azure refuses {problems}"
    typed = [r.type for r in fleet_recording.resources if r.type.startswith("azure-native:containerservice:Fleet")]
    assert not typed, f"azure-native 3.29's typed Fleet resources send 2024-05-02-preview: {typed}"


def test_the_fleet_takes_over_the_typed_resources_deleting_first(fleet_recording: Recording) -> None:
    for body in fleet_bodies(fleet_recording):
        assert body.aliases, f"{body.name}: without an alias a stack deployed before would create and delete it"
        assert body.delete_before_replace, f"{body.name}: the same Azure ID cannot be created beside itself"


def test_updates_run_the_canary_region_first_then_the_rest_after_a_wait(fleet_recording: Recording) -> None:
    bodies = fleet_bodies(fleet_recording)
    members = {
        r.inputs["resourceName"]: r.inputs["properties"]["group"]
        for r in bodies
        if r.inputs["resourceType"] == "members"
    }
    assert set(members) == set(MEMBERS), "every member platform joins the fleet"
    strategy = next(r for r in bodies if r.inputs["resourceType"] == "updateStrategies")
    stages = strategy.inputs["properties"]["strategy"]["stages"]
    assert [g["name"] for g in stages[0]["groups"]] == [members["krc"]], "the canary stage holds only the canary"
    hours = load_fleet(settings()).fleet.updates.wait_after_canary_hours
    assert stages[0]["afterStageWaitInSeconds"] == hours * 3600, (
        f"the rest of the fleet must wait the {hours} h written in fleet.updates.waitAfterCanaryHours, no less: "
        "the wait is what lets the canary's alerts and checks show a problem"
    )
    assert {g["name"] for g in stages[1]["groups"]} == {members["jpe"]}, "every other member follows"
    member_urns = {r.urn for r in bodies if r.inputs["resourceType"] == "members"}
    assert member_urns <= set(strategy.depends_on), (
        "a group must match an existing member's group: the strategy waits for the members it names"
    )


@pytest.mark.parametrize("selection", ["Consistent", "Latest"])
def test_the_configured_node_image_selection_reaches_the_kubernetes_upgrade_runs(
    selection: str, fleet_recording: Recording
) -> None:
    """A Kubernetes upgrade rolls node images too: the selection set in fleet.updates decides which images the
    members get (Consistent: one image everywhere), so it must sit on the profile whose runs use it."""
    if selection == load_fleet(settings()).fleet.updates.node_image_selection:
        recording = fleet_recording
    else:
        config = copy.deepcopy(load_stack_file("fleet", REPO_ROOT))
        config["aks-gpu-platform:fleet"]["updates"]["nodeImageSelection"] = selection
        recording = run_stack("fleet", config)
    channels = {
        p.inputs["resourceName"]: p.inputs["properties"]["channel"]
        for p in fleet_bodies(recording)
        if p.inputs["resourceType"] == "autoUpgradeProfiles"
    }
    kubernetes = [name for name, channel in channels.items() if upgrade_owner.FLEET_CHANNELS[channel] == KUBERNETES]
    assert kubernetes, f"a profile must move Kubernetes versions: {channels}"
    runs = upgrade_owner.run_node_image_selections(recording)
    for name in kubernetes:
        assert runs[name] == selection, (
            f"{name} ({channels[name]}) runs upgrade node images with {runs[name]}, not the configured {selection}"
        )


def test_members_leave_upgrades_to_the_fleet_and_a_channel_left_on_is_refused() -> None:
    plan = load_fleet(settings())
    for member, cfg in plan.members.items():
        assert cfg.upgrade.owner == "fleet", member
        assert (cfg.upgrade.auto_upgrade_channel, cfg.upgrade.node_os_upgrade_channel) == ("none", "None"), member
    assert plan.manager.upgrade.owner == "aks" and plan.manager.upgrade.auto_upgrade_channel == "patch"
    values = settings()
    values["upgrade"]["autoUpgradeChannel"] = "patch"
    rejected(values, "upgrade.autoUpgradeChannel", "whichever runs first")


# --- member-only pools ---------------------------------------------------------------------------------------------


def region_pinned() -> dict[str, Any]:
    """krc alone has a second pool; the team has quota on it (the documented region-pinning recipe)."""
    values = settings()
    pool = {**values["gpuPools"][0], "name": "gput4krc", "maxCount": 1}
    values["gpuPools"] = [values["gpuPools"][0], pool]
    values["training"]["teams"][0]["quotas"].append({"pool": "gput4krc", "gpus": 1})
    return values


def test_a_pool_only_one_member_has_is_that_member_s_and_the_manager_counts_it_once() -> None:
    plan = load_fleet(region_pinned())
    assert [q.pool for q in plan.members["krc"].training.teams[0].quotas] == ["gput4", "gput4krc"]
    assert [q.pool for q in plan.members["jpe"].training.teams[0].quotas] == ["gput4"], "jpe has no such pool"
    from aks_gpu_platform.config.fleet.section import manager_training

    quotas = {q.pool: q.gpus for q in manager_training(plan).teams[0].quotas}
    assert quotas == {"gput4": 4, "gput4krc": 1}, "the manager's quota is the sum over the members with the pool"


def test_a_quota_on_a_pool_no_member_has_is_refused() -> None:
    values = settings()
    values["training"]["teams"][0]["quotas"].append({"pool": "nowhere", "gpus": 1})
    rejected(values, "training.teams[0].quotas[1].pool", "must name a GPU pool of at least one member")


def test_a_member_only_quota_error_names_the_quota_as_written() -> None:
    values = region_pinned()
    quotas = values["training"]["teams"][0]["quotas"]
    quotas.reverse()  # the krc-only pool first: jpe validates [gput4] alone, its quotas[0] is the file's quotas[1]
    quotas[1]["gpus"] = 5
    rejected(values, "fleet.members[1].platform.training.teams[0].quotas[1].gpus", "holds at most 4 GPUs")


def test_a_private_member_is_refused() -> None:
    values = settings()
    values["fleet"]["members"][1]["platform"]["cluster"]["apiServer"] = {
        "privateCluster": True,
        "authorizedIpRanges": [],
    }
    rejected(values, "fleet.members[1].platform.cluster.apiServer.privateCluster", "peering")


# --- each member a platform ---------------------------------------------------------------------------------------


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


def test_two_member_platforms_in_one_stack_never_claim_the_same_urn(fleet_recording: Recording) -> None:
    # The engine refuses a second resource with a URN already registered: the fleet could not be deployed at all.
    platforms = fleet_recording.of_type("aks-gpu-platform:index:AksGpuPlatform")
    assert len(platforms) >= 2, "the fleet stack holds a platform per member"
    seen: dict[str, int] = {}
    for resource in fleet_recording.resources:
        seen[resource.urn] = seen.get(resource.urn, 0) + 1
    twice = sorted(urn for urn, count in seen.items() if count > 1)
    assert not twice, "resources of two member platforms collide on one URN:\n" + "\n".join(twice[:10])


# --- the rotation program -----------------------------------------------------------------------------------------


def test_a_member_that_fails_does_not_stop_the_others_and_the_run_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    written: dict[str, str] = {}
    program = multikueue_token_rotator
    monkeypatch.setenv("MULTIKUEUE_ACCOUNT", MULTIKUEUE_ACCOUNT)
    monkeypatch.setenv("SECRET_NAMESPACE", "kueue-system")
    monkeypatch.setenv("TOKEN_SECONDS", "3600")
    members = [
        {"name": m, "server": f"https://{m}:443", "ca": "Q0E=", "secret": f"multikueue-{m}"} for m in ("krc", "jpe")
    ]
    monkeypatch.setenv("MEMBERS", json.dumps(members))
    monkeypatch.setattr(program, "entra_token", lambda scope: f"entra-for-{scope}")

    def issue(member: dict[str, str], entra: str, account: str, namespace: str, seconds: int) -> str:
        assert entra == f"entra-for-{program.AKS_SERVER_APPLICATION}/.default", "the AKS server application's token"
        if member["name"] == "krc":
            raise PermissionError("the member answered 403 to the TokenRequest")
        return "short-lived"

    monkeypatch.setattr(program, "issue_token", issue)
    monkeypatch.setattr(program, "write_secret", lambda ns, name, kubeconfig: written.update({name: kubeconfig}))
    assert program.main() == 1, "a member left with an old token must show as a failed Job"
    assert set(written) == {"multikueue-jpe"}, "jpe still gets its token"
    assert yaml.safe_load(written["multikueue-jpe"])["users"][0]["user"] == {"token": "short-lived"}
    patch = program.kubeconfig_patch(written["multikueue-jpe"])
    assert set(patch) == {"data"}, "a merge patch of the content only: the Secret's type cannot change"


def test_the_rotation_program_gets_a_token_inside_its_read_only_pod(
    fleet_recording: Recording, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The program as its pod runs it: no writable path but the pod's writable mounts, and a member API server
    that speaks TLS under its own CA."""
    job = kubernetes_object(fleet_recording.one("kubernetes:batch/v1:CronJob", "multikueue-tokens"))
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    read_only = bool(container["securityContext"].get("readOnlyRootFilesystem"))
    writable = [m["mountPath"] for m in container.get("volumeMounts", []) if not m.get("readOnly")]
    if read_only:
        # tempfile finds its directory among the writable mounts, or none at all.
        usable = tmp_path / "mount" if "/tmp" in writable else tmp_path / "read-only-root" / "tmp"
        if "/tmp" in writable:
            usable.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(usable))
    env = {e["name"]: e["value"] for e in container["env"]}
    seconds = int(env["TOKEN_SECONDS"])
    with member_api(tmp_path, caller="entra-token") as api:
        member = {"name": "krc", "server": api.server, "ca": api.ca, "secret": "multikueue-krc"}
        token = multikueue_token_rotator.issue_token(
            member, "entra-token", env["MULTIKUEUE_ACCOUNT"], env["SECRET_NAMESPACE"], seconds
        )
    assert token == api.issued, "the member's token must reach the Secret, or Kueue never connects to the member"
    path, body = api.requests[0]
    assert path == f"/api/v1/namespaces/kueue-system/serviceaccounts/{MULTIKUEUE_ACCOUNT}/token", (
        "the token is for the account the member's RoleBindings name"
    )
    assert body["spec"]["expirationSeconds"] == seconds, "the token lives as long as the rotation plans for"


def test_the_incremental_dispatcher_offers_a_job_to_one_member_per_round() -> None:
    from aks_gpu_platform.components.fleet.multikueue import DISPATCHERS, multikueue_configuration

    section = multikueue_configuration("Incremental")["multiKueue"]
    assert section["dispatcherName"] == DISPATCHERS["Incremental"]
    assert section["incrementalDispatcherConfig"] == {"stepSize": 1}, (
        "the default step of 3 offers the job to every member of a fleet of three or fewer at once"
    )
