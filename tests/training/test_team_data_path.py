"""What a team member of docs/for-ml-teams.md relies on to get data in and find the platform: the copy-data examples
run on the stack each targets, `platform-info` in every team namespace says what the stack really has, and the team
Role lets a member read it and `kubectl apply` (create, then patch) its own claims, in its own namespace only."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.upstream.rbac import Request, kubernetes_allows
from tests.upstream.storage import claim_refusal, classes, pod_refusal
from tools import REPO_ROOT

PVC = "kubernetes:core/v1:PersistentVolumeClaim"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
GRAFANA_DASHBOARD = "grafana:oss/dashboard:Dashboard"
GRAFANA_FOLDER = "grafana:oss/folder:Folder"
PLATFORM_INFO = "platform-info"
# Each copy-data example and the stack it is written for (its header and docs/for-ml-teams.md say which).
COPY_DATA = {"examples/team-jobset/copy-data-dev.yaml": "dev", "examples/team-jobset/copy-data-prod.yaml": "prod"}


def documents(path: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO_ROOT / path).read_text()) if d]


def rbac_objects(recording: Recording) -> list[dict[str, Any]]:
    return [kubernetes_object(r) for r in recording.resources if r.type.startswith("kubernetes:rbac")]


def members(stack: str) -> dict[str, set[str]]:
    teams = load_stack_file(stack, REPO_ROOT)["aks-gpu-platform:training"]["teams"]
    return {t["name"]: {g.lower() for g in t["members"]} for t in teams}


def claims_in(recording: Recording, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        c.inputs["metadata"]["name"]: c.inputs["spec"]
        for c in recording.of_type(PVC)
        if c.inputs["metadata"].get("namespace") == namespace
    }


def platform_info(recording: Recording, namespace: str) -> dict[str, str]:
    (found,) = [
        c.inputs["data"]
        for c in recording.of_type(CONFIG_MAP)
        if c.inputs["metadata"] == {"name": PLATFORM_INFO, "namespace": namespace}
    ]
    return found


def mapping(text: str) -> dict[str, str]:
    """A `key: value` block of platform-info, as YAML reads it."""
    return {str(k): str(v) for k, v in (yaml.safe_load(text) or {}).items()}


@pytest.mark.parametrize("path", sorted(COPY_DATA))
def test_each_copy_data_example_runs_in_a_team_namespace_of_its_stack_on_claims_and_classes_it_has(
    path: str, recordings: dict[str, Recording]
) -> None:
    stack = COPY_DATA[path]
    recording = recordings[stack]
    teams = {t["namespace"]: t for t in recording.stack_outputs["trainingTeams"].values()}
    brought = {d["metadata"]["name"]: d for d in documents(path) if d["kind"] == "PersistentVolumeClaim"}
    (job,) = [d for d in documents(path) if d["kind"] == "Job"]
    namespace = job["metadata"]["namespace"]
    assert namespace in teams, f"{path} targets {namespace}, which is no team namespace of {stack}: {sorted(teams)}"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == teams[namespace]["localQueue"]
    existing = claims_in(recording, namespace)
    for name, claim in brought.items():
        assert claim["metadata"]["namespace"] == namespace
        storage_class = claim["spec"]["storageClassName"]
        assert storage_class in classes(recording), f"{path}: claim {name} names {storage_class}, not on {stack}"
        refusal = claim_refusal(recording, namespace, storage_class, claim["spec"]["resources"]["requests"]["storage"])
        assert refusal is None, f"{path}: the claim {name} is refused in {namespace}: {refusal}"
    pod = job["spec"]["template"]["spec"]
    mounted = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    assert mounted, f"{path} copies onto a claim"
    missing = mounted - set(existing) - set(brought)
    assert not missing, f"{path} mounts {missing}, which {namespace} on {stack} does not have and the file brings not"
    if "serviceAccountName" in pod:
        accounts = {
            s.inputs["metadata"]["name"]
            for s in recording.of_type(SERVICE_ACCOUNT)
            if s.inputs["metadata"].get("namespace") == namespace
        }
        assert pod["serviceAccountName"] in accounts, f"{path}: no service account {pod['serviceAccountName']}"
    assert pod_refusal(recording, namespace, pod) is None, pod_refusal(recording, namespace, pod)
    (team,) = [name for name, t in recording.stack_outputs["trainingTeams"].items() if t["namespace"] == namespace]
    for document in documents(path):
        plural = {"Job": ("batch", "jobs"), "PersistentVolumeClaim": ("", "persistentvolumeclaims")}
        group, resource = plural[document["kind"]]
        assert kubernetes_allows(
            rbac_objects(recording), members(stack)[team], Request("create", group, resource, namespace=namespace)
        ), f"a member of {team} may kubectl apply the {document['kind']} of {path}"


def test_without_lustre_the_dev_example_copies_onto_an_azure_files_claim(dev_recording: Recording) -> None:
    (claim,) = [d for d in documents("examples/team-jobset/copy-data-dev.yaml") if d["kind"] == "PersistentVolumeClaim"]
    storage_class = classes(dev_recording)[claim["spec"]["storageClassName"]]
    assert storage_class["provisioner"] == "file.csi.azure.com" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert "lustre" not in yaml.safe_dump(documents("examples/team-jobset/copy-data-dev.yaml")), "dev has no Lustre"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_team_namespace_publishes_what_its_stack_has_for_it(stack: str, recordings: dict[str, Recording]) -> None:
    recording = recordings[stack]
    outputs = recording.stack_outputs
    team_folders = {f.inputs["title"]: f for f in recording.of_type(GRAFANA_FOLDER)}
    for team, queue in outputs["trainingTeams"].items():
        namespace = queue["namespace"]
        info = platform_info(recording, namespace)
        assert (info["namespace"], info["localQueue"]) == (namespace, queue["localQueue"])
        assert info["gpuPools"].split(", ") == queue["gpuPools"]
        assert info["grafana"] == outputs["grafanaEndpoint"], "the Grafana address is the stack's, once known"
        callable_models = {m: urls[team] for m, urls in outputs.get("modelEndpoints", {}).items() if team in urls}
        assert mapping(info["models"]) == callable_models, f"{namespace}: the models {team} may call, no other"
        claims = mapping(info["claims"])
        existing = claims_in(recording, namespace)
        assert set(claims) <= set(existing), f"{namespace}: platform-info names claims it does not have"
        expected = {queue["lustrePvcName"]} if "lustrePvcName" in queue else set()
        expected |= {outputs["teamData"][team]["claim"]} if team in outputs.get("teamData", {}) else set()
        assert set(claims) == expected, f"{namespace}: every claim the platform gives {team} is listed"
        for name, hint in claims.items():
            assert f"claimName: {name}" in hint, f"{namespace}: the mount hint of {name} names the claim"
        for storage_class in mapping(info["storageClasses"]):
            assert claim_refusal(recording, namespace, storage_class) is None, (
                f"{namespace}: platform-info offers {storage_class}, which the namespace may not claim"
            )
        folder = team_folders[f"Team {team}"]
        boards = [
            d.inputs["configJson"]
            for d in recording.of_type(GRAFANA_DASHBOARD)
            if d.inputs["folder"] == folder.outputs.get("uid", folder.inputs.get("uid"))
        ]
        assert any(f'"title": "{info["grafanaDashboard"]}"' in b for b in boards), (
            f"{namespace}: the dashboard platform-info names is the one in the team's own folder"
        )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_member_may_get_platform_info_in_its_own_namespace_only(stack: str, recordings: dict[str, Recording]) -> None:
    recording = recordings[stack]
    rbac = rbac_objects(recording)
    namespaces = {team: t["namespace"] for team, t in recording.stack_outputs["trainingTeams"].items()}
    for team, groups in members(stack).items():
        for other, namespace in {**namespaces, "platform": "kube-system"}.items():
            request = Request("get", "", "configmaps", namespace=namespace, name=PLATFORM_INFO)
            allowed = kubernetes_allows(rbac, groups, request)
            assert allowed == (other == team), f"{team} reading {namespace}/{PLATFORM_INFO}: {allowed}"
        other_map = Request("get", "", "configmaps", namespace=namespaces[team], name="kube-root-ca.crt")
        assert not kubernetes_allows(rbac, groups, other_map), "platform-info is the one ConfigMap a member reads"


def test_kubectl_apply_of_an_edited_claim_works_in_the_own_namespace_and_nowhere_else(
    prod_recording: Recording,
) -> None:
    """`kubectl apply` gets the claim, creates it the first time, and patches it once it exists (a resize)."""
    rbac = rbac_objects(prod_recording)
    namespaces = {team: t["namespace"] for team, t in prod_recording.stack_outputs["trainingTeams"].items()}
    assert len(namespaces) > 1, "prod has two teams: one's member must not apply claims in the other's namespace"
    for team, groups in members("prod").items():
        for other, namespace in namespaces.items():
            for verb in ("get", "create", "patch", "update"):
                request = Request(verb, "", "persistentvolumeclaims", namespace=namespace, name="datasets")
                allowed = kubernetes_allows(rbac, groups, request)
                assert allowed == (other == team), f"{team}: {verb} a claim in {namespace} is {allowed}"


def test_platform_info_publishes_the_uid_and_gid_the_team_runs_as_when_they_differ() -> None:
    """A team whose gid is not its uid (its directory's group): platform-info's runAsUser and runAsGroup hints are
    the ones the platform holds the team's pods to, or its Jobs cannot write the team's directory."""
    import copy

    from aks_gpu_platform.plan.offline import run_stack

    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    team = config["aks-gpu-platform:training"]["teams"][0]
    team.update(uid=30001, gid=40001)
    recording = run_stack("prod", config)
    (info,) = [
        obj
        for obj in map(kubernetes_object, recording.kubernetes_objects())
        if obj["kind"] == "ConfigMap"
        and obj["metadata"]["name"] == PLATFORM_INFO
        and obj["metadata"].get("namespace") == team["namespace"]
    ]
    assert (info["data"]["uid"], info["data"]["gid"]) == ("30001", "40001"), info["data"]
