"""Team access, checked as AKS would authorise it: a member of team A works in A and nowhere else.

The contract "authorisers compare exactly": the rendered Roles, RoleBindings and Azure role assignments of each
stack (dev, prod, each fleet member, dev with a second team, dev with member groups written in upper case) go
through the offline authoriser in tests/upstream/rbac.py, which matches subjects byte for byte as the API server
does, for a member presenting the groups an Entra ID token carries (object IDs in lower case). Namespace bounds
and isolation are evaluated on the rendered LimitRange, ResourceQuota and NetworkPolicy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from aks_gpu_platform.components.shared.roles import GRAFANA_VIEWER
from aks_gpu_platform.components.training.team_tenancy import RBAC_GROUP
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, settings_of
from tests.upstream.pod_security_policy import admission
from tests.upstream.pod_security_policy import assignments as pod_security_assignments
from tests.upstream.pod_security_standard import enforced_level
from tests.upstream.pod_security_standard import violations as pss_violations
from tests.upstream.rbac import Request, allowed, azure_allows, kubernetes_allows
from tools import REPO_ROOT

SCHEMA = "1.33.0"
RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
NOBODY = "00000000-0000-4000-8000-0000000000ff"
PLATFORM_NAMESPACES = ("kube-system", "kueue-system", "jobset-system", "gpu-resources")
SECOND_TEAM_GROUP = "00000000-0000-4000-8000-0000000000e2"
FLEET_MEMBERS = ("krc", "jpe")


def two_team_config() -> dict[str, Any]:
    """Dev with a second team sharing the T4 pool: one GPU each."""
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    training = config["aks-gpu-platform:training"]
    training["teams"][0]["quotas"][0]["gpus"] = 1
    training["teams"].append(
        {"name": "cv", "namespace": "team-cv", "members": [SECOND_TEAM_GROUP], "quotas": [{"pool": "gput4", "gpus": 1}]}
    )
    return config


@dataclass
class World:
    """What the authorisers see (RBAC objects, role assignments, scopes) and who is in which team."""

    rbac: list[dict[str, Any]]
    assignments: list[dict[str, Any]]
    cluster_id: str
    grafana_id: str
    teams: dict[str, tuple[str, set[str]]]
    """Team -> (namespace, member groups), from the stack config."""
    recording: Recording
    submits: bool = True
    """False on a fleet member: teams submit on the manager (MultiKueue dispatches) and only read here."""

    def can(self, groups: set[str], request: Request) -> bool:
        return allowed(self.rbac, self.assignments, self.cluster_id, groups, request)


def upper_case_members_config() -> dict[str, Any]:
    """Dev with its team's group object ID written in upper case, as the Azure portal shows it."""
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    team = config["aks-gpu-platform:training"]["teams"][0]
    team["members"] = [group.upper() for group in team["members"]]
    return config


def token_groups(written: list[str]) -> set[str]:
    """The `groups` claim of a member's Entra ID token: the object IDs of their groups, in lower case."""
    return {group.lower() for group in written}


def raw_teams(config: dict[str, Any]) -> dict[str, tuple[str, set[str]]]:
    """Team -> (namespace, the groups its members' tokens carry), from the stack file as written."""
    teams = config["aks-gpu-platform:training"]["teams"]
    return {t["name"]: (t.get("namespace") or t["name"], token_groups(t.get("members") or [])) for t in teams}


def build_world(recording: Recording, config: dict[str, Any], submits: bool = True) -> World:
    teams = raw_teams(config)
    cluster = recording.one("azure-native:containerservice:ManagedCluster")
    grafana = recording.one("azure-native:dashboard:Grafana")
    return World(
        rbac=[kubernetes_object(r) for r in recording.resources if r.type.startswith(RBAC)],
        assignments=[r.inputs for r in recording.of_type(ASSIGNMENT)],
        cluster_id=cluster.outputs["id"],
        grafana_id=grafana.outputs["id"],
        teams=teams,
        recording=recording,
        submits=submits,
    )


@pytest.fixture(scope="module")
def two_teams() -> World:
    config = two_team_config()
    return build_world(run_stack("dev", config), config)


@pytest.fixture(scope="module")
def fleet_worlds() -> dict[str, World]:
    """Each fleet member's platform, authorised on its own cluster (the shared training section names the teams)."""
    from tests.fleet.test_fleet import member_recording

    config = load_stack_file("fleet", REPO_ROOT)
    recording = run_stack("fleet")
    worlds: dict[str, World] = {}
    for platform in recording.of_type("aks-gpu-platform:index:AksGpuPlatform"):
        member = next(m for m in FLEET_MEMBERS if platform.name.endswith(f"-{m}"))
        worlds[member] = build_world(member_recording(recording, platform.urn), config, submits=False)
    assert set(worlds) == set(FLEET_MEMBERS), "every member platform is authorised"
    return worlds


@pytest.fixture(scope="module", params=["dev", "prod", "two-teams", "upper-case-members", *FLEET_MEMBERS])
def stack(request: pytest.FixtureRequest) -> World:
    if request.param == "two-teams":
        return request.getfixturevalue("two_teams")
    if request.param == "upper-case-members":
        config = upper_case_members_config()
        return build_world(run_stack("dev", config), config)
    if request.param in FLEET_MEMBERS:
        return request.getfixturevalue("fleet_worlds")[request.param]
    return build_world(request.getfixturevalue(f"{request.param}_recording"), load_stack_file(request.param, REPO_ROOT))


def pairs(w: World) -> list[tuple[str, str | None]]:
    """(team A, another team B or None when the stack has one team)."""
    names = sorted(w.teams)
    return [(a, next((b for b in names if b != a), None)) for a in names]


READ_VERBS = frozenset({"get", "list", "watch"})
# (why, request in the member's own namespace). Each must be allowed: it is what running a job takes.
OWN_NAMESPACE_ALLOWED: list[tuple[str, Request]] = [
    ("submit a JobSet", Request("create", "jobset.x-k8s.io", "jobsets")),
    ("cancel a JobSet", Request("delete", "jobset.x-k8s.io", "jobsets", name="train")),
    ("watch JobSets", Request("watch", "jobset.x-k8s.io", "jobsets")),
    ("read a JobSet's status", Request("get", "jobset.x-k8s.io", "jobsets", subresource="status")),
    ("submit a Job", Request("create", "batch", "jobs")),
    ("read a Job's status", Request("get", "batch", "jobs", subresource="status")),
    ("list its Jobs (kubectl get jobs)", Request("list", "batch", "jobs")),
    ("list its claims (kubectl get pvc)", Request("list", "", "persistentvolumeclaims")),
    ("list its pods", Request("list", "", "pods")),
    ("read a rank's logs", Request("get", "", "pods", subresource="log", name="train-node-0-0")),
    ("see why a pod is pending", Request("list", "", "events")),
    ("watch admission (kubectl get workloads)", Request("list", "kueue.x-k8s.io", "workloads")),
    ("see its queue", Request("get", "kueue.x-k8s.io", "localqueues", name="ml")),
    (
        "see its place in the queue",
        Request("list", "visibility.kueue.x-k8s.io", "localqueues", subresource="pendingworkloads"),
    ),
    ("claim checkpoint storage", Request("create", "", "persistentvolumeclaims")),
    ("kubectl apply an edited claim (a resize)", Request("patch", "", "persistentvolumeclaims", name="datasets")),
    ("kubectl replace a claim", Request("update", "", "persistentvolumeclaims", name="datasets")),
    ("read what the platform publishes for the team", Request("get", "", "configmaps", name="platform-info")),
]
# Denied even in the member's own namespace: each would bypass quota, escalate, or edit what Kueue owns.
OWN_NAMESPACE_DENIED: list[tuple[str, Request]] = [
    ("a bare pod bypasses Kueue", Request("create", "", "pods")),
    ("exec into pods is not part of running jobs", Request("create", "", "pods", subresource="exec")),
    ("secrets hold service account credentials", Request("get", "", "secrets")),
    ("a RoleBinding would escalate", Request("create", "rbac.authorization.k8s.io", "rolebindings")),
    ("Kueue owns workloads", Request("patch", "kueue.x-k8s.io", "workloads")),
    ("admins own the LocalQueue", Request("update", "kueue.x-k8s.io", "localqueues")),
    (
        "Kueue does not manage RayClusters here: they would run outside quota",
        Request("create", "ray.io", "rayclusters"),
    ),
    ("Deployments are not managed by Kueue here", Request("create", "apps", "deployments")),
    ("the quota is the admins'", Request("delete", "", "resourcequotas", name="storage")),
    ("platform-info is the platform's", Request("update", "", "configmaps", name="platform-info")),
    ("no other ConfigMap", Request("get", "", "configmaps", name="kube-root-ca.crt")),
    ("the isolation is the admins'", Request("delete", "networking.k8s.io", "networkpolicies")),
    (
        "a SecretProviderClass can name any identity, the add-on's on every node too: the admins create them",
        Request("create", "secrets-store.csi.x-k8s.io", "secretproviderclasses"),
    ),
]
CLUSTER_DENIED: list[tuple[str, Request]] = [
    ("nodes", Request("list", "", "nodes")),
    ("namespaces", Request("create", "", "namespaces")),
    ("ClusterQueues set every team's quota", Request("update", "kueue.x-k8s.io", "clusterqueues")),
    ("ResourceFlavors", Request("create", "kueue.x-k8s.io", "resourceflavors")),
    ("cluster role bindings", Request("create", "rbac.authorization.k8s.io", "clusterrolebindings")),
    ("persistent volumes", Request("delete", "", "persistentvolumes")),
]


def in_namespace(request: Request, namespace: str) -> Request:
    return replace(request, namespace=namespace)


def allow_cases(w: World) -> list[tuple[str, Callable[[World], bool]]]:
    """Every grant a member relies on, as (label, check on a world): used to prove each rule is needed."""
    cases: list[tuple[str, Callable[[World], bool]]] = []
    for team, (namespace, groups) in w.teams.items():
        for why, request in OWN_NAMESPACE_ALLOWED:
            if not w.submits and request.verb not in READ_VERBS:
                continue
            r = in_namespace(request, namespace)
            cases.append((f"{team}: {why}", lambda x, g=groups, r=r: x.can(g, r)))
        for group in groups:
            cases.append(
                (
                    f"{team}: get credentials",
                    lambda x, g=group: azure_allows(
                        x.assignments,
                        {g},
                        x.cluster_id,
                        "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
                    ),
                )
            )
            cases.append(
                (
                    f"{team}: Grafana Viewer",
                    lambda x, g=group: azure_allows(
                        x.assignments, {g}, x.grafana_id, "Microsoft.Dashboard/grafana/ActAsGrafanaViewer/action"
                    ),
                )
            )
            # for-ml-teams.md "Your team's data": members upload datasets to their team's container.
            for container in team_containers(w, team):
                cases.append(
                    (
                        f"{team}: upload to its Blob container",
                        lambda x, g=group, c=container: azure_allows(
                            x.assignments,
                            {g},
                            f"{c}/blobs/datasets/part-0",
                            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
                        ),
                    )
                )
    return cases


def team_containers(w: World, team: str) -> list[str]:
    """The resource ID of the team's own Blob container, where the stack has one (Lustre on)."""
    return [
        c.outputs["id"]
        for c in w.recording.of_type("azure-native:storage:BlobContainer")
        if c.inputs["containerName"] == f"team-{team}"
    ]


def test_a_member_runs_and_watches_jobs_in_its_own_namespace(stack: World) -> None:
    for label, check in allow_cases(stack):
        assert check(stack), f"{label} must be allowed: a team member cannot run a job without it"


def test_on_a_fleet_member_a_team_reads_but_cannot_submit_past_multikueue(stack: World) -> None:
    if stack.submits:
        pytest.skip("teams submit on this cluster")
    for team, (namespace, groups) in stack.teams.items():
        for why, request in OWN_NAMESPACE_ALLOWED:
            r = in_namespace(request, namespace)
            if request.verb not in READ_VERBS:
                assert not stack.can(groups, r), f"{team} must not {why} on a member: it bypasses the manager"


def test_a_member_cannot_bypass_quota_or_escalate_in_its_own_namespace(stack: World) -> None:
    for team, (namespace, groups) in stack.teams.items():
        for why, request in OWN_NAMESPACE_DENIED:
            r = in_namespace(request, namespace)
            assert not stack.can(groups, r), f"{team}: {r} must be denied ({why})"


def test_a_member_cannot_act_in_another_teams_namespace(stack: World) -> None:
    for a, b in pairs(stack):
        if b is None:
            continue
        groups, other = stack.teams[a][1], stack.teams[b][0]
        for why, request in OWN_NAMESPACE_ALLOWED:
            r = in_namespace(request, other)
            assert not stack.can(groups, r), f"a member of {a} must not {why} in {b}'s namespace {other}"


def test_a_member_cannot_touch_platform_namespaces_or_cluster_objects(stack: World) -> None:
    for team, (_, groups) in stack.teams.items():
        for namespace in PLATFORM_NAMESPACES:
            for why, request in [*OWN_NAMESPACE_ALLOWED, ("secrets", Request("get", "", "secrets"))]:
                r = in_namespace(request, namespace)
                assert not stack.can(groups, r), f"{team} must not {why} in platform namespace {namespace}"
        for why, request in CLUSTER_DENIED:
            assert not stack.can(groups, request), f"{team} must not touch cluster-scoped {why}: {request}"


def test_azure_grants_credentials_and_grafana_viewing_only(stack: World) -> None:
    for team, (_, groups) in stack.teams.items():
        for operation, scope in (
            ("Microsoft.ContainerService/managedClusters/listClusterAdminCredential/action", stack.cluster_id),
            ("Microsoft.ContainerService/managedClusters/write", stack.cluster_id),
            ("Microsoft.Dashboard/grafana/ActAsGrafanaEditor/action", stack.grafana_id),
            ("Microsoft.Dashboard/grafana/ActAsGrafanaAdmin/action", stack.grafana_id),
        ):
            assert not azure_allows(stack.assignments, groups, scope, operation), (
                f"{team}'s groups must not be granted {operation}: members get credentials and Viewer, nothing more"
            )
    anyone = Request("create", "jobset.x-k8s.io", "jobsets", namespace=next(iter(stack.teams.values()))[0])
    assert not stack.can({NOBODY}, anyone), "a group in no team gets nothing"
    assert not azure_allows(
        stack.assignments,
        {NOBODY},
        stack.cluster_id,
        "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
    )


def without(w: World, drop: Callable[[World], object]) -> World:
    smaller = World(
        copy.deepcopy(w.rbac), copy.deepcopy(w.assignments), w.cluster_id, w.grafana_id, w.teams, w.recording
    )
    drop(smaller)
    return smaller


def grants(w: World) -> list[tuple[str, Callable[[World], object]]]:
    """Every single grant the platform renders for teams: each Role rule, each binding, each assignment."""
    found: list[tuple[str, Callable[[World], object]]] = []
    for i, obj in enumerate(w.rbac):
        where = f"{obj['kind']} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        if obj["kind"] in ("Role", "ClusterRole"):
            for j, rule in enumerate(obj.get("rules") or []):
                found.append((f"{where} rule {rule}", lambda x, i=i, j=j: x.rbac[i]["rules"].pop(j)))
        else:
            found.append((where, lambda x, i=i: x.rbac.pop(i)))
    for k, assignment in enumerate(w.assignments):
        if any(assignment["principalId"] in groups for _, groups in w.teams.values()):
            role = assignment["roleDefinitionId"].rsplit("/", 1)[-1]
            found.append((f"assignment {role} to {assignment['principalId']}", lambda x, k=k: x.assignments.pop(k)))
    return found


def test_every_grant_is_needed_by_a_case_that_fails_without_it(stack: World) -> None:
    cases = allow_cases(stack)
    team_grants = grants(stack)
    assert len(team_grants) > len(stack.teams), "each team must render its role, binding and assignments"
    for label, drop in team_grants:
        smaller = without(stack, drop)
        broken = [name for name, check in cases if not check(smaller)]
        assert broken, f"removing {label} breaks no member's task: it grants more than a team needs"


def test_rendered_access_and_bounds_pass_the_kubernetes_schema(stack: World) -> None:
    kinds = {"Role", "RoleBinding", "LimitRange", "ResourceQuota", "NetworkPolicy"}
    namespaces = {ns for ns, _ in stack.teams.values()}
    checked = 0
    for resource in stack.recording.kubernetes_objects():
        manifest = kubernetes_object(resource)
        if manifest.get("kind") in kinds and manifest["metadata"].get("namespace") in namespaces:
            status, detail = validate_object(manifest, SCHEMA)
            assert status == "valid", f"{resource.name}: {detail}"
            checked += 1
    assert checked >= 4 * len(namespaces), "every team namespace gets its role, bounds and isolation"


def namespaced(w: World, kind: str, namespace: str) -> list[dict[str, Any]]:
    return [
        o
        for o in (kubernetes_object(r) for r in w.recording.kubernetes_objects())
        if o.get("kind") == kind and o["metadata"].get("namespace") == namespace
    ]


def quantity(value: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "m": 1e-3}
    for suffix, scale in units.items():
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * scale
    return float(value)


def test_a_container_without_requests_or_limits_is_bounded(stack: World) -> None:
    for team, (namespace, _) in stack.teams.items():
        (limit_range,) = namespaced(stack, "LimitRange", namespace)
        (container,) = [limit for limit in limit_range["spec"]["limits"] if limit["type"] == "Container"]
        for resource in ("cpu", "memory"):
            request, limit = container["defaultRequest"][resource], container["default"][resource]
            assert quantity(request) > 0 and quantity(limit) >= quantity(request), (
                f"{team}: a container that states no {resource} must get a request the scheduler and Kueue count "
                "and a limit at least that large"
            )


def test_the_storage_quota_leaves_room_for_the_teams_lustre_claim(prod_recording: Recording) -> None:
    w = build_world(prod_recording, load_stack_file("prod", REPO_ROOT))
    for team, (namespace, _) in w.teams.items():
        (quota,) = [q for q in namespaced(w, "ResourceQuota", namespace) if "requests.storage" in q["spec"]["hard"]]
        claims = namespaced(w, "PersistentVolumeClaim", namespace)
        assert claims, f"prod has Lustre: {team} gets a claim"
        used = sum(quantity(c["spec"]["resources"]["requests"]["storage"]) for c in claims)
        hard = quota["spec"]["hard"]
        assert used < quantity(hard["requests.storage"]) and len(claims) < int(hard["persistentvolumeclaims"]), (
            f"{team}: the platform's own claim must fit the quota with room for checkpoints"
        )


PRIVILEGED_POD = {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": True}}]}


def test_team_namespaces_refuse_privileged_pods(stack: World) -> None:
    """By Kubernetes' baseline, or, where a team's NCCL pods add IPC_LOCK (which baseline refuses), by the Azure
    Policy baseline that Denies there in every environment."""
    namespaces = {
        o["metadata"]["name"]: o["metadata"].get("labels") or {}
        for o in (kubernetes_object(r) for r in stack.recording.of_type("kubernetes:core/v1:Namespace"))
    }
    policies = pod_security_assignments(stack.recording)
    for team, (namespace, _) in stack.teams.items():
        refused = pss_violations(enforced_level(namespaces[namespace]), PRIVILEGED_POD)
        refused += admission(policies, namespace, PRIVILEGED_POD).denied
        assert refused, f"{team}: privileged pods must be refused in {namespace}"


def ingress_allowed(w: World, source_namespace: str, target_namespace: str) -> bool:
    """NetworkPolicy semantics (networking.k8s.io/v1) for pod-to-pod ingress between namespaces, any pod."""
    policies = [
        p
        for p in namespaced(w, "NetworkPolicy", target_namespace)
        if "Ingress" in p["spec"].get("policyTypes", []) and not p["spec"]["podSelector"]
    ]
    if not policies:
        return True
    source_labels = {"kubernetes.io/metadata.name": source_namespace}
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            for peer in rule.get("from") or []:
                if "namespaceSelector" in peer:
                    wanted = peer["namespaceSelector"].get("matchLabels") or {}
                    if wanted.items() <= source_labels.items():
                        return True
                elif "podSelector" in peer and source_namespace == target_namespace:
                    return True
    return False


def test_teams_are_isolated_on_the_network_but_reach_themselves_and_monitoring(stack: World) -> None:
    for a, b in pairs(stack):
        namespace = stack.teams[a][0]
        assert ingress_allowed(stack, namespace, namespace), f"{a}'s ranks must reach each other (NCCL, rendezvous)"
        assert ingress_allowed(stack, "kube-system", namespace), f"managed Prometheus must scrape {a}'s pods"
        assert not ingress_allowed(stack, "kueue-system", namespace), "no other namespace reaches a team's pods"
        if b is not None:
            assert not ingress_allowed(stack, stack.teams[b][0], namespace), f"{b} must not reach {a}'s pods"


def test_two_teams_plan_cleanly_each_with_its_own_access(two_teams: World) -> None:
    assert set(two_teams.teams) == {"ml", "cv"}
    bindings = [o for o in two_teams.rbac if o["kind"] == "RoleBinding"]
    assert {b["metadata"]["namespace"] for b in bindings} == {"team-ml", "team-cv"}
    assert any(SECOND_TEAM_GROUP in b["principalId"] for b in two_teams.assignments)


def test_a_group_listed_twice_in_a_team_is_rejected(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    team = settings["training"]["teams"][0]
    team["members"] = [team["members"][0], team["members"][0].upper()]
    assert_rejected(settings, "a duplicate grant is refused by Azure", "training.teams[0].members[1]", "once per team")


def test_a_member_that_is_not_an_object_id_is_rejected(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    settings["training"]["teams"][0]["members"] = ["ml-engineers"]
    assert_rejected(settings, "RBAC binds Entra groups by object ID", "training.teams[0].members[0]", "pattern")


def test_a_group_written_in_upper_case_still_admits_its_members(
    stack_config: Callable[[str], dict[str, Any]],
) -> None:
    """The portal shows object IDs in upper case; tokens carry them in lower case and RBAC compares exactly."""
    config = upper_case_members_config()
    world = build_world(run_stack("dev", config), config)
    (namespace, groups) = world.teams["ml"]
    for why, request in OWN_NAMESPACE_ALLOWED:
        r = in_namespace(request, namespace)
        assert world.can(groups, r), f"a member whose token carries {sorted(groups)} must be able to {why}"
    bindings = [o for o in world.rbac if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] == namespace]
    assert [s["name"] for b in bindings for s in b["subjects"]] == sorted(groups), (
        "the RoleBinding names the group as the token does"
    )


def test_the_authoriser_matches_group_subjects_byte_for_byte() -> None:
    """The model must not fold case: the API server's `has(user.GetGroups(), subject.Name)` does not."""
    role = {
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "ns"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    group = "0000000a-0000-4000-8000-0000000000e1"

    def binding(name: str) -> dict[str, Any]:
        return {
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "ns"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "Group", "apiGroup": RBAC_GROUP, "name": name}],
        }

    read = Request("get", "", "pods", namespace="ns")
    assert kubernetes_allows([role, binding(group)], {group}, read)
    assert not kubernetes_allows([role, binding(group.upper())], {group}, read), (
        "a RoleBinding to the upper-case spelling binds nobody whose token carries the lower-case ID"
    )
    assignment = {"principalId": group.upper(), "scope": "/s/x", "roleDefinitionId": "/r/" + GRAFANA_VIEWER}
    assert azure_allows([assignment], {group}, "/s/x", "Microsoft.Dashboard/grafana/ActAsGrafanaViewer/action"), (
        "Azure resolves principalId to the directory object: the spelling of the GUID does not matter there"
    )


@pytest.mark.parametrize(
    ("team", "why"),
    [
        ({"name": "kube-public"}, "kube-public is readable by every user, anonymous ones included"),
        ({"name": "ml", "namespace": "kube-node-lease"}, "kube-node-lease holds every node's heartbeat Lease"),
        ({"name": "ml", "namespace": "kube-system"}, "kube-system runs the cluster's own components"),
        ({"name": "default"}, "default is where anything without a namespace lands"),
    ],
)
def test_a_team_namespace_in_a_system_namespace_is_rejected(
    stack_config: Callable[[str], dict[str, Any]], team: dict[str, str], why: str
) -> None:
    settings = settings_of(stack_config("dev"))
    entry = settings["training"]["teams"][0]
    entry.pop("namespace", None)  # without one, the team's name is its namespace
    entry.update(team)
    field = "namespace" if "namespace" in team else "name"
    assert_rejected(settings, why, f"training.teams[0].{field}", "must not be kube-*")


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet"])
def test_the_member_guide_says_how_to_reach_an_api_server_behind_authorized_ranges(stack: str) -> None:
    """Credentials are not enough: from an address outside the ranges kubectl times out with no hint why."""
    config = load_stack_file(stack, REPO_ROOT)
    ranges = config["aks-gpu-platform:cluster"].get("apiServer", {}).get("authorizedIpRanges")
    assert ranges, f"{stack} admits only authorized ranges"
    guide = (REPO_ROOT / "docs" / "for-ml-teams.md").read_text()
    credentials = guide.split("## 1. Get credentials", 1)[1].split("\n## ", 1)[0]
    assert "cluster.apiServer.authorizedIpRanges" in credentials and "private cluster" in credentials, (
        "the first step a member takes must say which addresses the API server answers and what to do otherwise"
    )
