"""Each team's data is its own: what a member of one team tries against another team's data, refused, over the
rendered dev, prod (Lustre on), dev with Lustre on, and each fleet member.

Every attempt goes through what the API server and the drivers would do with the rendered objects
(tests/upstream/storage.py): ResourceQuota admission of a claim, the class's sub-dir and key Secret namespace,
the namespace's admission policies with their CEL evaluated.
"""

from __future__ import annotations

import copy
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.training.team_storage import ROOT_MOUNT, directory_script
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.training.section import TeamConfig, TrainingConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, settings_of
from tests.harness.contract_stacks import platform_recording
from tests.upstream.storage import (
    AKS_BUILT_IN_CLASSES,
    PV,
    PVC,
    STORAGE_CLASS,
    claim_refusal,
    classes,
    identity_token_exchange_refusal,
    key_reachable_by_team,
    pod_refusal,
    static_bind_refusal,
)
from tools import REPO_ROOT

JOB = "kubernetes:batch/v1:Job"
TEAM_LABEL = "aks-gpu-platform/team"
STACKS = ("dev", "prod", "fleet-krc", "fleet-jpe")
EXAMPLE = REPO_ROOT / "examples" / "team-jobset" / "jobset.yaml"


def _dev_with_lustre() -> Recording:
    config = load_stack_file("dev", REPO_ROOT)
    config["aks-gpu-platform:storage"]["lustre"]["enabled"] = True
    return run_stack("dev", config)


_RECORDINGS: dict[str, Recording] = {}


def recording_of(stack: str) -> Recording:
    if stack not in _RECORDINGS:
        _RECORDINGS[stack] = _dev_with_lustre() if stack == "dev-lustre" else platform_recording(stack)
    return _RECORDINGS[stack]


def team_namespaces(recording: Recording) -> dict[str, str]:
    """Team name -> namespace, from the namespaces the platform labels as a team's."""
    found = {}
    for namespace in recording.of_type("kubernetes:core/v1:Namespace"):
        metadata = namespace.inputs["metadata"]
        if TEAM_LABEL in metadata.get("labels", {}):
            found[metadata["labels"][TEAM_LABEL]] = metadata["name"]
    assert found, "every contract stack has teams"
    return found


def teams_of(stack: str) -> dict[str, TeamConfig]:
    """The stack file's validated teams (their uids and gids as configured, or derived)."""
    config = load_stack_file("fleet" if stack.startswith("fleet") else stack.removesuffix("-lustre"), REPO_ROOT)
    training = validate_section(TrainingConfig, config["aks-gpu-platform:training"], "training")
    return {team.name: team for team in training.teams}


def team_pod(uid: int, gid: int, **overrides: Any) -> dict[str, Any]:
    """A pod spec as a team's job template gives it: the team's identity, restricted-style containers."""
    spec: dict[str, Any] = {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": uid,
            "runAsGroup": gid,
            "fsGroup": gid,
            "supplementalGroupsPolicy": "Strict",
        },
        "containers": [
            {
                "name": "trainer",
                "image": "trainer",
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [{"name": "data", "mountPath": "/ckpt"}],
            }
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "lustre-pvc"}}],
    }
    for key, value in overrides.items():
        spec[key] = value
    return spec


# --- Lustre: each team mounts its own directory -------------------------------------------------------------


@pytest.mark.parametrize("stack", ["prod", "dev-lustre"])
def test_each_team_claim_on_lustre_mounts_only_that_team_s_own_directory_never_the_filesystem_root(
    stack: str,
) -> None:
    recording = recording_of(stack)
    by_name = classes(recording)
    mounted: dict[str, str] = {}
    for team, namespace in team_namespaces(recording).items():
        claims = [c for c in recording.of_type(PVC) if c.inputs["metadata"]["namespace"] == namespace]
        lustre = [
            c
            for c in claims
            if by_name.get(c.inputs["spec"]["storageClassName"], {}).get("provisioner", "").startswith("azurel")
        ]
        assert len(lustre) == 1, f"team {team} gets one claim on Lustre"
        storage_class = by_name[lustre[0].inputs["spec"]["storageClassName"]]
        sub_dir = storage_class["parameters"].get("sub-dir", "")
        assert sub_dir.strip("/"), (
            f"team {team}'s Lustre claim mounts the filesystem root: every team's checkpoints are open to it"
        )
        assert "${" not in sub_dir, "a template the driver fails to fill would mount one directory for every team"
        mounted[team] = sub_dir.strip("/")
    for team, path in mounted.items():
        for other, other_path in mounted.items():
            if other != team:
                assert not (path + "/").startswith(other_path + "/"), (
                    f"team {team}'s directory {path} lies inside team {other}'s {other_path}"
                )


@pytest.mark.parametrize("stack", ["prod", "dev-lustre"])
def test_a_member_of_one_team_cannot_claim_another_team_s_lustre_class_or_the_filesystem_root_class(
    stack: str,
) -> None:
    recording = recording_of(stack)
    namespaces = team_namespaces(recording)
    by_name = classes(recording)
    own = {
        team: next(
            c.inputs["spec"]["storageClassName"]
            for c in recording.of_type(PVC)
            if c.inputs["metadata"]["namespace"] == namespace
            and by_name.get(c.inputs["spec"]["storageClassName"], {}).get("provisioner", "").startswith("azurel")
        )
        for team, namespace in namespaces.items()
    }
    lustre_classes = [n for n, c in by_name.items() if c["provisioner"] == "azurelustre.csi.azure.com"]
    roots = [n for n in lustre_classes if not by_name[n].get("parameters", {}).get("sub-dir")]
    assert roots, "the platform's training namespace keeps a class on the filesystem root"
    for team, namespace in namespaces.items():
        for root in roots:
            assert claim_refusal(recording, namespace, root) is not None, (
                f"team {team} may claim {root}, the whole filesystem: every team's directory is under it"
            )
        assert claim_refusal(recording, namespace, own[team]) is None, f"team {team} may claim its own directory"
        for other_class in lustre_classes:
            if other_class != own[team]:
                assert claim_refusal(recording, namespace, other_class) is not None, (
                    f"team {team} may claim {other_class}: a pod would mount another team's directory or the root"
                )


def test_each_team_s_directory_is_made_the_team_s_before_its_lustre_class_serves_a_claim() -> None:
    recording = recording_of("prod")
    teams = teams_of("prod")
    by_urn = {r.urn: r for r in recording.of_type(JOB)}
    root_claim = recording.one(PVC, "lustre-pvc").inputs["metadata"]
    team_classes = [r for r in recording.of_type(STORAGE_CLASS) if r.inputs.get("parameters", {}).get("sub-dir")]
    assert len(team_classes) == len(teams), "one class per team, each on its own directory"
    for r in team_classes:
        sub_dir = r.inputs["parameters"]["sub-dir"]
        jobs = [by_urn[u] for u in r.depends_on if u in by_urn]
        assert len(jobs) == 1, f"{r.inputs['metadata']['name']} must wait for the Job that creates {sub_dir}"
        spec = jobs[0].inputs["spec"]["template"]["spec"]
        assert jobs[0].inputs["metadata"]["namespace"] == root_claim["namespace"]
        assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == root_claim["name"], (
            "the Job reaches the team's directory through the filesystem-root claim"
        )
        team = teams[sub_dir.rsplit("/", 1)[-1]]
        script = spec["containers"][0]["command"][-1]
        assert f"chown {team.run_as_user}:{team.run_as_group} {ROOT_MOUNT}/{sub_dir}" in script


def test_the_directory_job_s_script_leaves_a_directory_only_the_team_s_uid_and_gid_can_open(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    team = TeamConfig.model_validate({"name": "llm", "uid": 4242, "gid": 4343, "quotas": [{"pool": "p", "gpus": 1}]})
    script = directory_script(team).replace(ROOT_MOUNT, str(tmp_path))
    for _ in range(2):  # a rerun (a new Job after a change) must succeed on an existing directory
        subprocess.run(["sh", "-c", script], check=True, capture_output=True)
    made = (tmp_path / "teams" / "llm").stat()
    assert (made.st_uid, made.st_gid) == (4242, 4343), "the team's pods own what they write"
    assert stat.S_IMODE(made.st_mode) == 0o2770, "others (another team's uid) get nothing; new files keep the group"
    teams = (tmp_path / "teams").stat()
    assert stat.S_IMODE(teams.st_mode) == 0o711, "a team reaches its directory but cannot list the other teams'"


def _as(uid: int, gid: int, *command: str) -> subprocess.CompletedProcess[bytes]:
    """Run `command` as uid:gid with no supplemental groups (what the admission policy leaves a team pod)."""
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *command], capture_output=True, check=False
    )


def test_a_job_checkpoints_under_its_own_name_in_its_team_s_directory_and_another_team_s_uid_cannot() -> None:
    if os.geteuid() != 0:
        pytest.skip("chown and setpriv need root")
    # A filesystem root every uid can traverse to, as the Lustre mount is (pytest's tmp_path is root's only).
    tmp_path = Path(tempfile.mkdtemp(prefix="lustre-root-"))
    tmp_path.chmod(0o755)
    try:
        _checkpoint_attempts(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _checkpoint_attempts(tmp_path: Path) -> None:
    teams = teams_of("prod")
    llm, vision = teams["llm"], teams["vision"]
    for team in (llm, vision):
        script = directory_script(team).replace(ROOT_MOUNT, str(tmp_path))
        subprocess.run(["sh", "-c", script], check=True, capture_output=True)
    # The team's claim mounts teams/llm at the pod's /ckpt; CHECKPOINT_DIR is /ckpt/<JobSet name> (the example).
    own = tmp_path / "teams" / "llm"
    checkpoint = own / "train"
    made = _as(llm.run_as_user, llm.run_as_group, "sh", "-c", f"mkdir -p {checkpoint} && echo x > {checkpoint}/last.pt")
    assert made.returncode == 0, f"the job cannot make its checkpoint directory at its first save: {made.stderr!r}"
    assert checkpoint.stat().st_gid == llm.run_as_group, "setgid: the checkpoint stays in the team's group"
    for attempt in (f"ls {own}", f"cat {checkpoint}/last.pt", f"touch {own}/planted"):
        refused = _as(vision.run_as_user, vision.run_as_group, "sh", "-c", attempt)
        assert refused.returncode != 0, f"team vision's uid can `{attempt}` in team llm's directory"
    listing = _as(vision.run_as_user, vision.run_as_group, "ls", str(tmp_path / "teams"))
    assert listing.returncode != 0, "a team lists the other teams' directories"


# --- Claims on classes that share one account, one key or the filesystem root --------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_a_claim_on_a_class_that_shares_one_storage_account_is_refused_in_every_team_namespace(stack: str) -> None:
    recording = recording_of(stack)
    shared = [n for n in AKS_BUILT_IN_CLASSES if n.startswith(("azurefile", "azureblob"))]
    shared += [n for n, c in classes(recording).items() if c["provisioner"] == "blob.csi.azure.com"]
    for team, namespace in team_namespaces(recording).items():
        for storage_class in shared:
            assert claim_refusal(recording, namespace, storage_class) is not None, (
                f"team {team} may claim {storage_class}: its volume shares one storage account with every other "
                "team's, and the driver leaves the account key where the team's pods can mount it"
            )


@pytest.mark.parametrize("stack", STACKS)
def test_no_class_a_team_may_claim_puts_an_account_key_secret_into_a_team_namespace(stack: str) -> None:
    recording = recording_of(stack)
    namespaces = set(team_namespaces(recording).values())
    for namespace in namespaces:
        reachable = key_reachable_by_team(recording, namespace, namespaces)
        assert not reachable, (
            f"a claim in {namespace} on {reachable} stores the storage account key there: a pod mounting that "
            "Secret reads every share of the account, other teams' included"
        )


@pytest.mark.parametrize("stack", STACKS)
def test_a_team_keeps_a_read_write_many_class_for_checkpoints_whatever_the_stack_s_lustre(stack: str) -> None:
    recording = recording_of(stack)
    by_name = classes(recording)
    for team, namespace in team_namespaces(recording).items():
        usable = [
            n
            for n, c in by_name.items()
            if c["provisioner"] in ("file.csi.azure.com", "azurelustre.csi.azure.com")
            and claim_refusal(recording, namespace, n, "100Gi") is None
        ]
        assert usable, f"team {team} has no shared-filesystem class left for checkpoints every rank can mount"


# --- Pods run as the team -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", [*STACKS, "dev-lustre"])
def test_a_pod_as_its_own_team_s_uid_and_gid_is_admitted_in_its_namespace(stack: str) -> None:
    recording = recording_of(stack)
    teams = teams_of(stack)
    for name, namespace in team_namespaces(recording).items():
        team = teams[name]
        assert pod_refusal(recording, namespace, team_pod(team.run_as_user, team.run_as_group)) is None


def _attempts(own: TeamConfig, other_uid: int, other_gid: int) -> dict[str, dict[str, Any]]:
    uid, gid = own.run_as_user, own.run_as_group
    pod = team_pod(uid, gid)
    as_other_container = copy.deepcopy(pod)
    as_other_container["containers"][0]["securityContext"]["runAsUser"] = other_uid
    unset_user = copy.deepcopy(pod)
    del unset_user["securityContext"]["runAsUser"]
    unset_group = copy.deepcopy(pod)
    del unset_group["securityContext"]["runAsGroup"]
    no_strict = copy.deepcopy(pod)
    del no_strict["securityContext"]["supplementalGroupsPolicy"]
    merge = copy.deepcopy(pod)
    merge["securityContext"]["supplementalGroupsPolicy"] = "Merge"
    escalating = copy.deepcopy(pod)
    del escalating["containers"][0]["securityContext"]["allowPrivilegeEscalation"]
    capable = copy.deepcopy(pod)
    capable["containers"][0]["securityContext"]["capabilities"] = {"add": ["DAC_OVERRIDE"]}
    init_as_other = copy.deepcopy(pod)
    init_as_other["initContainers"] = [
        {"name": "fetch", "image": "x", "securityContext": {"runAsUser": other_uid, "allowPrivilegeEscalation": False}}
    ]
    nfs = copy.deepcopy(pod)
    nfs["volumes"] = [{"name": "data", "nfs": {"server": "10.0.0.4", "path": "/volume"}}]
    # Inline (ephemeral) Azure Files and Blob volumes name a share or container and a key Secret; older Files
    # driver releases read that Secret from whichever namespace the volume names.
    files = copy.deepcopy(pod)
    files["volumes"] = [{"name": "data", "csi": {"driver": "file.csi.azure.com", "volumeAttributes": _OTHER_SHARE}}]
    blob = copy.deepcopy(pod)
    blob["volumes"] = [{"name": "data", "csi": {"driver": "blob.csi.azure.com", "volumeAttributes": _OTHER_BLOB}}]
    among_good = _with_secrets_store(pod)
    among_good["volumes"].insert(1, {"name": "other", "csi": {"driver": "blob.csi.azure.com"}})
    return {
        "the other team's uid": team_pod(other_uid, gid),
        "the other team's gid": team_pod(uid, other_gid),
        "root": team_pod(0, 0),
        "one container as the other team's uid": as_other_container,
        "an init container as the other team's uid": init_as_other,
        "no runAsUser (the image's user)": unset_user,
        "no runAsGroup (the image's group)": unset_group,
        "the other team's gid as a supplemental group": team_pod(
            uid, gid, securityContext={**pod["securityContext"], "supplementalGroups": [other_gid]}
        ),
        "its own gid and the other team's as supplemental groups": team_pod(
            uid, gid, securityContext={**pod["securityContext"], "supplementalGroups": [gid, other_gid]}
        ),
        "the other team's gid as fsGroup": team_pod(
            uid, gid, securityContext={**pod["securityContext"], "fsGroup": other_gid}
        ),
        "groups from the image's /etc/group": no_strict,
        "groups from the image's /etc/group, asked for (Merge)": merge,
        "privilege escalation (setuid binaries)": escalating,
        "an added capability": capable,
        "an inline NFS volume": nfs,
        "an inline Azure Files volume": files,
        "an inline Blob volume": blob,
        "an inline Blob volume among a claim and a Secrets Store volume": among_good,
    }


_OTHER_SHARE = {"shareName": "team-b", "secretName": "azure-storage-account", "secretNamespace": "team-b"}
_OTHER_BLOB = {"containerName": "team-b", "secretName": "azure-storage-account", "secretNamespace": "team-b"}


def _with_secrets_store(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod with the team's own Key Vault secrets mounted inline through a SecretProviderClass of its namespace."""
    mounted = copy.deepcopy(pod)
    inline = {"driver": "secrets-store.csi.k8s.io", "readOnly": True}
    inline["volumeAttributes"] = {"secretProviderClass": "team-keys"}
    mounted["volumes"].append({"name": "keys", "csi": inline})
    mounted["containers"][0]["volumeMounts"].append({"name": "keys", "mountPath": "/keys", "readOnly": True})
    return mounted


@pytest.mark.parametrize("stack", ["prod", "dev-lustre"])
def test_a_team_pod_mounts_its_own_key_vault_secrets_inline_beside_its_claims(stack: str) -> None:
    """The Secrets Store driver reads the SecretProviderClass from the pod's own namespace: the one inline csi driver
    a team pod keeps."""
    recording = recording_of(stack)
    teams = teams_of(stack)
    for name, namespace in team_namespaces(recording).items():
        pod = _with_secrets_store(team_pod(teams[name].run_as_user, teams[name].run_as_group))
        assert pod_refusal(recording, namespace, pod) is None, pod_refusal(recording, namespace, pod)


@pytest.mark.parametrize("stack", [*STACKS, "dev-lustre"])
def test_a_pod_that_could_act_as_another_team_s_uid_or_gid_is_refused_at_admission(stack: str) -> None:
    recording = recording_of(stack)
    teams = teams_of(stack)
    namespaces = team_namespaces(recording)
    for name, namespace in namespaces.items():
        own = teams[name]
        others = [t for t in teams.values() if t.name != name]
        # With one team, "another team" is any other identity on the filesystem (a later team, a platform uid).
        other_uid, other_gid = (
            (others[0].run_as_user, others[0].run_as_group) if others else (own.run_as_user + 1, own.run_as_group + 1)
        )
        for attempt, spec in _attempts(own, other_uid, other_gid).items():
            assert pod_refusal(recording, namespace, spec) is not None, (
                f"team {name}: a pod with {attempt} is admitted in {namespace}: on a filesystem every team reaches, "
                "it reads and overwrites files of another identity"
            )


def test_the_team_example_job_runs_as_the_dev_team_s_identity_and_is_admitted() -> None:
    recording = recording_of("dev")
    documents = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    jobset = next(d for d in documents if d["kind"] == "JobSet")
    namespace = jobset["metadata"]["namespace"]
    for replicated in jobset["spec"]["replicatedJobs"]:
        pod = replicated["template"]["spec"]["template"]["spec"]
        assert pod_refusal(recording, namespace, pod) is None, (
            f"the documented example's pods are refused in {namespace}: {pod_refusal(recording, namespace, pod)}"
        )
    for claim in (d for d in documents if d["kind"] == "PersistentVolumeClaim"):
        assert claim_refusal(recording, namespace, claim["spec"]["storageClassName"]) is None, (
            f"the example's claim on {claim['spec']['storageClassName']} is refused in {namespace}"
        )


# --- Config: each team's identity is its own ------------------------------------------------------------------


def _training(teams: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kueue": {"enabled": True}, "teams": teams}


def _team(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "quotas": [{"pool": "gput4", "gpus": 1}], **extra}


@pytest.mark.parametrize(
    ("teams", "field", "hint"),
    [
        ([_team("a", uid=5000), _team("b", uid=5000)], "teams[1].uid", "unique across teams"),
        ([_team("a", uid=5000, gid=7000), _team("b", uid=6000, gid=7000)], "teams[1].gid", "unique across teams"),
        ([_team("a", uid=5000), _team("b", uid=6000, gid=5000)], "teams[1].gid", "unique across teams"),
        ([_team("a", uid=0)], "uid", "greater than or equal to 1001"),
        ([_team("a", gid=2**31)], "gid", "less than or equal to 2147483647"),
    ],
)
def test_two_teams_sharing_a_uid_or_gid_or_a_system_id_are_refused_naming_the_field(
    teams: list[dict[str, Any]], field: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_section(TrainingConfig, _training(teams), "training")
    text = str(caught.value)
    assert field in text and hint in text, f"the error must name {field} and say {hint!r}: {text}"


def test_a_team_without_a_uid_keeps_the_same_one_whatever_the_order_of_the_teams() -> None:
    first = validate_section(TrainingConfig, _training([_team("a"), _team("b")]), "training")
    second = validate_section(TrainingConfig, _training([_team("b"), _team("a")]), "training")
    uids: Callable[[TrainingConfig], dict[str, int]] = lambda t: {x.name: x.run_as_user for x in t.teams}  # noqa: E731
    assert uids(first) == uids(second), "reordering teams must not hand a directory to another team"
    assert all(1001 <= uid < 2**31 for uid in uids(first).values())
    assert len(set(uids(first).values())) == 2


# --- Root squash: the directory Job's root must reach the filesystem --------------------------------------------


@pytest.mark.parametrize(
    ("nid_lists", "covered"),
    [
        ("", False),
        ("10.40.0.4@tcp", False),  # one node, not the subnet: the Job may land elsewhere
        ("10.40.[0-1].[0-255]@tcp", False),  # half of a /22
        ("10.40.[0-3].[0-255]@tcp", True),
        ("10.9.9.9@tcp;10.40.[0-3].*@tcp", True),
        ("10.40.[0,1,2-3].[0-255]@tcp", True),
    ],
)
def test_lustre_with_teams_under_root_squash_needs_the_nodes_subnet_exempt(
    stack_config: Callable[[str], dict[str, Any]], nid_lists: str, covered: bool
) -> None:
    settings = settings_of(stack_config("dev"))
    settings["storage"]["lustre"]["enabled"] = True
    settings["storage"]["lustre"]["rootSquash"] = {"mode": "RootOnly", "noSquashNidLists": nid_lists}
    if covered:
        load_platform_config(settings)
        return
    assert_rejected(
        settings,
        "each team's directory is created as root from a node: squashed to nobody it fails at the first deploy",
        "storage.lustre.rootSquash.noSquashNidLists",
        "10.40.[0-3].[0-255]@tcp",
    )


# --- Blob: each team's data container, its identity and its claim --------------------------------------------

CONTAINER = "azure-native:storage:BlobContainer"
ROLE = "azure-native:authorization:RoleAssignment"
BLOB_DATA_ROLES = {
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe",  # Storage Blob Data Contributor
    "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",  # Storage Blob Data Reader
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",  # Storage Blob Data Owner
    "17d1049b-9a84-46fb-8f53-869881c3d3ab",  # Storage Account Contributor (listKeys: every container)
}


def _streamed_from(stack: str, team: str) -> list[str]:
    """The stack file's models streamed from `team`'s container (the team named, else the model's only team)."""
    config = load_stack_file(stack.removesuffix("-lustre"), REPO_ROOT)
    return [
        m["name"]
        for m in config["aks-gpu-platform:inference"]["models"]
        if "blob" in m["weights"] and (m["weights"]["blob"].get("team") or m["teams"][0]) == team
    ]


def _server_account(recording: Recording, model: str) -> str:
    """The service account a served model's servers run as."""
    (deployment,) = [
        d.inputs
        for d in recording.of_type("kubernetes:apps/v1:Deployment")
        if d.inputs["metadata"] == {**d.inputs["metadata"], "name": model, "namespace": "models"}
    ]
    return deployment["spec"]["template"]["spec"]["serviceAccountName"]


def _trusted_subjects(recording: Recording, principal: str) -> list[str]:
    """The service accounts whose tokens the identity with `principal` accepts."""
    (identity,) = [
        r
        for r in recording.of_type("azure-native:managedidentity:UserAssignedIdentity")
        if r.outputs["principalId"] == principal
    ]
    return [
        c.inputs["subject"]
        for c in recording.of_type("azure-native:managedidentity:FederatedIdentityCredential")
        if c.inputs["resourceName"] == identity.outputs["name"]
    ]


@pytest.mark.parametrize("stack", ["prod", "dev-lustre"])
def test_each_team_s_blob_data_is_opened_only_to_that_team_s_identity_and_groups(stack: str) -> None:
    recording = recording_of(stack)
    teams = teams_of(stack)
    data = recording.stack_outputs["teamData"]
    account = recording.one("azure-native:storage:StorageAccount", "hsm")
    assert set(data) == set(teams), "every team gets its Blob data"
    containers = {c.outputs["name"]: c for c in recording.of_type(CONTAINER)}
    for name, team in teams.items():
        entry = data[name]
        assert entry["account"] == account.outputs["name"], "the team's data sits beside the filesystem it feeds"
        container = containers[entry["container"]]
        grants = [r for r in recording.of_type(ROLE) if r.inputs["scope"] == container.outputs["id"]]
        identity = next(
            r
            for r in recording.of_type("azure-native:managedidentity:UserAssignedIdentity")
            if r.outputs["clientId"] == entry["clientId"]
        )
        writes = [r for r in grants if r.inputs["roleDefinitionId"].endswith("ba92f5b4-2d11-453d-a403-e96b0029c9fe")]
        principals = {r.inputs["principalId"] for r in writes}
        assert principals == {identity.outputs["principalId"], *team.members}, (
            f"team {name}'s container is opened to its workload identity and its member groups, to nobody else"
        )
        reads = [r for r in grants if r not in writes]
        assert all(r.inputs["roleDefinitionId"].endswith("2a2b9908-6ea1-4ae2-8e65-a410df84e7d1") for r in reads), (
            "beside the team's writers, only Storage Blob Data Reader"
        )
        assert sorted(_trusted_subjects(recording, r.inputs["principalId"]) for r in reads) == sorted(
            [f"system:serviceaccount:models:{_server_account(recording, model)}"]
            for model in _streamed_from(stack, name)
        ), f"team {name}'s container is read by the servers of the models streamed from it, nobody else"
    team_principals = {
        r.outputs["principalId"]
        for r in recording.of_type("azure-native:managedidentity:UserAssignedIdentity")
        if r.outputs["clientId"] in {e["clientId"] for e in data.values()}
    } | {group for team in teams.values() for group in team.members}
    wide = [
        r.name
        for r in recording.of_type(ROLE)
        if r.inputs["principalId"] in team_principals
        and r.inputs["roleDefinitionId"].rsplit("/", 1)[-1] in BLOB_DATA_ROLES
        and r.inputs["scope"] not in {c.outputs["id"] for c in containers.values()}
    ]
    assert not wide, f"a team principal holds a data role beyond its container (every team's data): {wide}"


@pytest.mark.parametrize("stack", ["prod", "dev-lustre"])
def test_a_team_s_data_claim_mounts_with_its_own_token_and_never_the_account_key(stack: str) -> None:
    recording = recording_of(stack)
    namespaces = team_namespaces(recording)
    data = recording.stack_outputs["teamData"]
    for name, namespace in namespaces.items():
        entry = data[name]
        claim = next(
            c.inputs
            for c in recording.of_type(PVC)
            if c.inputs["metadata"] == {"name": entry["claim"], "namespace": namespace}
        )
        (volume,) = [
            v.inputs["spec"]
            for v in recording.of_type(PV)
            if v.inputs["metadata"]["name"] == claim["spec"]["volumeName"]
        ]
        attributes = volume["csi"]["volumeAttributes"]
        assert attributes.get("mountWithWorkloadIdentityToken") == "true", (
            "without token-only mode the driver fetches the account key, which opens every team's container"
        )
        assert attributes["clientID"] == entry["clientId"] and attributes["containerName"] == entry["container"]
        assert (
            claim_refusal(
                recording,
                namespace,
                claim["spec"]["storageClassName"],
                claim["spec"]["resources"]["requests"]["storage"],
            )
            is None
        ), "the team's own data claim fits its storage quota"
        assert identity_token_exchange_refusal(recording, entry["clientId"], namespace, entry["serviceAccount"]) is None


@pytest.mark.parametrize("stack", ["prod", "dev-lustre"])
def test_a_member_of_one_team_cannot_reach_another_team_s_blob_data_by_static_volume_or_inline_identity(
    stack: str,
) -> None:
    recording = recording_of(stack)
    namespaces = team_namespaces(recording)
    data = recording.stack_outputs["teamData"]
    volumes = {
        name: next(
            c.inputs["spec"]["volumeName"]
            for c in recording.of_type(PVC)
            if c.inputs["metadata"] == {"name": data[name]["claim"], "namespace": namespace}
        )
        for name, namespace in namespaces.items()
    }
    if len(namespaces) == 1:
        # One team: the attempt is from a namespace that is not the team's (a later team, a platform namespace).
        namespaces = {**namespaces, "intruder": "team-intruder"}
    for name, namespace in namespaces.items():
        for other, volume in volumes.items():
            if other == name:
                continue
            assert static_bind_refusal(recording, namespace, "team-data", volume) is not None, (
                f"a claim in {namespace} naming {volume} binds: team {other}'s container would mount there"
            )
            client_id = data[other]["clientId"]
            assert identity_token_exchange_refusal(recording, client_id, namespace, "team-data") is not None, (
                f"a pod in {namespace} signs in as team {other}'s data identity (an inline blob volume with its "
                "clientID would mount team {other}'s container)"
            )


def test_the_documented_copy_job_mounts_the_team_s_blob_and_lustre_claims_as_the_team_and_is_admitted() -> None:
    recording = recording_of("prod")
    (job,) = [d for d in yaml.safe_load_all((EXAMPLE.parent / "copy-data-prod.yaml").read_text()) if d]
    namespace = job["metadata"]["namespace"]
    pod = job["spec"]["template"]["spec"]
    assert pod_refusal(recording, namespace, pod) is None, pod_refusal(recording, namespace, pod)
    claims = {
        c.inputs["metadata"]["name"]: c.inputs["spec"]
        for c in recording.of_type(PVC)
        if c.inputs["metadata"]["namespace"] == namespace
    }
    mounted = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    assert mounted <= set(claims), f"the copy Job mounts claims the team's namespace has: {mounted - set(claims)}"
    (team,) = [n for n, t in recording.stack_outputs["trainingTeams"].items() if t["namespace"] == namespace]
    data = recording.stack_outputs["teamData"][team]
    assert data["claim"] in mounted and pod["serviceAccountName"] == data["serviceAccount"], (
        "the driver mounts the team's container with the token of the pod's service account: it must be team-data"
    )


def test_the_training_job_example_runs_as_its_team_on_the_platform_it_names_and_is_admitted() -> None:
    from aks_gpu_platform.testing import kubernetes_object
    from aks_gpu_platform.testing.stack_files import read_stack_yaml
    from tests.platform.test_examples import EXAMPLES, run_example, stack_file
    from tests.platform.test_examples import recording as example_recording

    platform = example_recording("infiniband-training")
    own = read_stack_yaml(stack_file(EXAMPLES / "training-job"))
    job = run_example(
        EXAMPLES / "training-job", stack_references={own["training-job:platformStack"]: {**platform.stack_outputs}}
    )
    jobset = kubernetes_object(job.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"))
    namespace = jobset["metadata"]["namespace"]
    for replicated in jobset["spec"]["replicatedJobs"]:
        pod = replicated["template"]["spec"]["template"]["spec"]
        refusal = pod_refusal(platform, namespace, pod)
        assert refusal is None, f"the training-job example's pods are refused in {namespace}: {refusal}"
