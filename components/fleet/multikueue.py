"""MultiKueue across a fleet: the manager admits a team's job once and runs it on the member that admits it first.

Follows kubernetes-sigs/kueue v0.19.2: site/content/en/docs/concepts/multikueue.md, apis/kueue/v1beta2/
multikueue_types.go, pkg/controller/admissionchecks/multikueue/{workload.go,multikueuecluster.go},
pkg/controller/workloaddispatcher/incrementaldispatcher.go.

Dispatch. The manager copies only the Workload to the nominated members; the job itself is created on the one
member whose copy is admitted first, and every other copy is deleted (workload.go reconcileGroup, steps 6b and
nominateAndSynchronizeWorkers). Members admit on quota alone (no ProvisioningRequest check in a fleet, see
config/fleet/section.py), so a copy costs nothing: only the winner's pods bring GPU nodes up, in one region.

How the manager reaches the members. At v0.19.2 a kubeconfig Secret may not use exec plugins, token files or auth
providers (`validateKubeconfig`), so kubelogin cannot run from it, and the ClusterProfile source that allows exec
providers is behind the alpha `MultiKueueClusterProfile` gate. A bearer token is allowed and Kueue watches the
Secret, reconnecting when it changes. So on each member a service account, `kueue-system/multikueue-manager`:
cluster-wide it may only read what MultiKueue watches (Workloads, Jobs and JobSets: its remote watches and garbage
collector list them in every namespace, multikueuecluster.go establishWatch/runGC); it writes only in the team
namespaces (RoleBindings). Its tokens are short-lived TokenRequests that a CronJob on the manager asks for with its
own Entra workload identity and writes into the Secret Kueue reads (components/fleet/token_rotator.py); the
member lets that identity create tokens for this one account and nothing else. No token is kept in Pulumi state.
"""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

import pulumi
import pulumi_kubernetes as k8s

from ..shared.context import ClusterHandle
from ..shared.workload_identity import federated_identity, identity_service_account, python_program_pod
from ..training.queues import KUEUE_API_VERSION, KUEUE_NAMESPACE
from . import token_rotator as multikueue_token_rotator

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
MULTIKUEUE_CHECK = "multikueue"
MULTIKUEUE_CONFIG = "fleet-members"
MULTIKUEUE_ACCOUNT = "multikueue-manager"
RBAC_GROUP = "rbac.authorization.k8s.io"
# On the member's service account: raising fleet.multiKueue.credentialGeneration replaces the account (delete first),
# and every token issued for the old one is refused (a bound token names its account's UID).
GENERATION_ANNOTATION = "aks-gpu-platform/credential-generation"
# apis/config/v1beta2/configuration_types.go: MultiKueueDispatcherModeAllAtOnce / ...Incremental.
DISPATCHERS = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
# site/static/examples/multikueue/create-multikueue-kubeconfig.sh at v0.19.2, narrowed to the two frameworks the
# platform manages (batch/job, jobset.x-k8s.io/jobset) and Kueue's own objects, and split by scope.
_READ = ["get", "list", "watch"]
MEMBER_READ_RULES: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
    {"api_groups": ["batch"], "resources": ["jobs"], "verbs": _READ},
    {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _READ},
    {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": _READ},
]
"""Cluster-wide (ClusterRoleBinding): the remote watches and the garbage collector span every namespace."""
MEMBER_WRITE_RULES: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
    {"api_groups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete"]},
    {"api_groups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete"]},
    {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    # RemoveRemoteObjects: update drops the finalizer, then delete; the copy on a losing member goes away.
    {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["create", "delete", "update", "patch"]},
    {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
]
"""Per team namespace (RoleBindings): what creating, syncing and removing a job's copy takes."""
# The rotation: tokens live an hour and are replaced every ten minutes, so five runs in a row may fail before
# dispatch stops. TokenRequest takes at least 600 s (authentication.k8s.io/v1 TokenRequestSpec).
TOKEN_SECONDS = 3600
ROTATION_SCHEDULE = "*/10 * * * *"
ROTATOR = "multikueue-token-rotator"
ROTATOR_UID = 10001
ROTATOR_PROGRAM = Path(multikueue_token_rotator.__file__).read_text()
ROTATOR_CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=MCR's Azure CLI image is pinned by release and OS tag; a digest pins one arch",
    "checkov.io/skip2": "CKV2_K8S_6=the CronJob serves nothing; it calls only Entra ID and the members' API servers",
    "checkov.io/skip3": "CKV_K8S_38=the pod needs its service account token for workload identity and the Secrets",
}
# Until the first rotation (at most ROTATION_SCHEDULE's period after `pulumi up`) Kueue sees no usable kubeconfig.
PLACEHOLDER_KUBECONFIG = json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": [], "users": []})


def multikueue_configuration(dispatcher: str) -> dict[str, Any]:
    """The `multiKueue` section of the manager's Kueue Configuration (MultiKueue is Beta, on by default). The
    Incremental dispatcher offers a job to one member per 5-minute round (stepSize 1; the default 3 would offer it
    to every member of a small fleet at once), in MultiKueueConfig order (MultiKueueIncrementalDispatcher*
    gates, Beta and on at v0.19.2)."""
    section: dict[str, Any] = {"dispatcherName": DISPATCHERS[dispatcher]}
    if dispatcher == "Incremental":
        section["incrementalDispatcherConfig"] = {"stepSize": 1}
    return {"multiKueue": section}


def member_ca_and_server(kubeconfig: str) -> tuple[str, str]:
    """The certificate authority data and server of a member's user kubeconfig (public values)."""
    cluster = json.loads(kubeconfig) if kubeconfig.lstrip().startswith("{") else _yaml(kubeconfig)
    entry = cluster["clusters"][0]["cluster"]
    return entry["certificate-authority-data"], entry["server"]


def _yaml(text: str) -> dict[str, Any]:
    import yaml  # the program's own environment has PyYAML; the CronJob's image does not need it

    return cast(dict[str, Any], yaml.safe_load(text))


class MemberAccessArgs(TypedDict):
    member: ClusterHandle
    """The member cluster the manager dispatches to."""
    team_namespaces: Sequence[str]
    """The member's team namespaces: the only ones MultiKueue may write in."""
    rotator_principal_id: pulumi.Input[str]
    """Entra object ID of the manager's rotation identity: it may create tokens for the account, nothing else."""
    depends_on: Sequence[pulumi.Resource]
    """What creates kueue-system and the team namespaces on the member (its Kueue release, its queues)."""
    credential_generation: int
    """fleet.multiKueue.credentialGeneration: a new value replaces the account, revoking every token it had."""


class MemberAccess(pulumi.ComponentResource):
    """On one member: the service account MultiKueue acts as, its reads and per-namespace writes, and who may
    issue its tokens."""

    def __init__(self, name: str, args: MemberAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:MultiKueueMemberAccess", name, None, opts)
        on_member = pulumi.ResourceOptions.merge(
            args["member"].k8s_options(self), pulumi.ResourceOptions(depends_on=list(args["depends_on"]))
        )
        _member_account(name, args["credential_generation"], on_member)
        _member_reads(name, on_member)
        _member_writes(name, args["team_namespaces"], on_member)
        _token_issuer(name, args["rotator_principal_id"], on_member)
        self.register_outputs({})


_SUBJECT: k8s.rbac.v1.SubjectArgsDict = {
    "kind": "ServiceAccount",
    "name": MULTIKUEUE_ACCOUNT,
    "namespace": KUEUE_NAMESPACE,
}


def _member_account(name: str, generation: int, on_member: pulumi.ResourceOptions) -> None:
    """The service account MultiKueue acts as; a new credential generation replaces it."""
    account_metadata: k8s.meta.v1.ObjectMetaArgsDict = {"name": MULTIKUEUE_ACCOUNT, "namespace": KUEUE_NAMESPACE}
    if generation > 1:
        # Absent at the first generation: a fleet deployed before the setting existed keeps its account.
        account_metadata["annotations"] = {GENERATION_ANNOTATION: str(generation)}
    k8s.core.v1.ServiceAccount(
        f"{name}-account",
        metadata=account_metadata,
        # Same name, new UID: the old account must be gone before the new one is created.
        opts=pulumi.ResourceOptions.merge(
            on_member,
            pulumi.ResourceOptions(replace_on_changes=["metadata.annotations"], delete_before_replace=True),
        ),
    )


def _member_reads(name: str, on_member: pulumi.ResourceOptions) -> None:
    """MEMBER_READ_RULES for the account, cluster-wide."""
    reader = k8s.rbac.v1.ClusterRole(
        f"{name}-role", metadata={"name": MULTIKUEUE_ACCOUNT}, rules=MEMBER_READ_RULES, opts=on_member
    )
    k8s.rbac.v1.ClusterRoleBinding(
        f"{name}-binding",
        metadata={"name": MULTIKUEUE_ACCOUNT},
        role_ref={"api_group": RBAC_GROUP, "kind": "ClusterRole", "name": reader.metadata["name"]},
        subjects=[_SUBJECT],
        opts=on_member,
    )


def _member_writes(name: str, team_namespaces: Sequence[str], on_member: pulumi.ResourceOptions) -> None:
    """MEMBER_WRITE_RULES for the account, in each team namespace only."""
    writer = k8s.rbac.v1.ClusterRole(
        f"{name}-writer",
        metadata={"name": f"{MULTIKUEUE_ACCOUNT}-writer"},
        rules=MEMBER_WRITE_RULES,
        opts=on_member,
    )
    for namespace in team_namespaces:
        k8s.rbac.v1.RoleBinding(
            f"{name}-writer-{namespace}",
            metadata={"name": f"{MULTIKUEUE_ACCOUNT}-writer", "namespace": namespace},
            role_ref={"api_group": RBAC_GROUP, "kind": "ClusterRole", "name": writer.metadata["name"]},
            subjects=[_SUBJECT],
            opts=on_member,
        )


def _token_issuer(name: str, rotator_principal_id: pulumi.Input[str], on_member: pulumi.ResourceOptions) -> None:
    """The manager's rotation identity may create tokens for the account, and nothing else."""
    issuer = k8s.rbac.v1.Role(
        f"{name}-token-issuer",
        metadata={"name": f"{MULTIKUEUE_ACCOUNT}-token-issuer", "namespace": KUEUE_NAMESPACE},
        rules=[
            {
                "api_groups": [""],
                "resources": ["serviceaccounts/token"],
                "resource_names": [MULTIKUEUE_ACCOUNT],
                "verbs": ["create"],
            }
        ],
        opts=on_member,
    )
    k8s.rbac.v1.RoleBinding(
        f"{name}-token-issuer",
        metadata={"name": f"{MULTIKUEUE_ACCOUNT}-token-issuer", "namespace": KUEUE_NAMESPACE},
        role_ref={"api_group": RBAC_GROUP, "kind": "Role", "name": issuer.metadata["name"]},
        # A managed identity reaches Kubernetes RBAC as a user named by its object ID (Azure/kubelogin#39).
        subjects=[{"kind": "User", "api_group": RBAC_GROUP, "name": rotator_principal_id}],
        opts=on_member,
    )


class TokenRotationArgs(TypedDict):
    manager: ClusterHandle
    """The manager: the identity federates with its OIDC issuer, the CronJob and Secrets live in its kueue-system."""
    kueue_release: pulumi.Resource
    """The manager's Kueue release (kueue-system)."""
    members: Mapping[str, tuple[pulumi.Input[str], pulumi.Input[str]]]
    """Member name -> (API server FQDN, user kubeconfig) of each member; the CA comes from the kubeconfig."""


class TokenRotation(pulumi.ComponentResource):
    """On the manager: the rotation identity, the Secrets Kueue reads, and the CronJob that keeps them fresh."""

    principal_id: pulumi.Output[str]
    """Entra object ID of the rotation identity (members bind it to their token issuer Role)."""

    def __init__(self, name: str, args: TokenRotationArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:MultiKueueTokenRotation", name, None, opts)
        handle = args["manager"]
        identity, credential = federated_identity(
            f"{name}-identity",
            f"{name}-credential",
            handle=handle,
            namespace=KUEUE_NAMESPACE,
            service_account=ROTATOR,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.principal_id = identity.principal_id
        on_manager = pulumi.ResourceOptions.merge(
            handle.k8s_options(self), pulumi.ResourceOptions(depends_on=[args["kueue_release"]])
        )
        # Only the member Secrets, only their content: no create (a name cannot limit create), no read of others.
        secrets: k8s.rbac.v1.PolicyRuleArgsDict = {
            "api_groups": [""],
            "resources": ["secrets"],
            "resource_names": [member_secret_name(m) for m in args["members"]],
            "verbs": ["get", "patch"],
        }
        account = identity_service_account(
            f"{name}-account", KUEUE_NAMESPACE, ROTATOR, identity.client_id, [secrets], on_manager
        )
        members = pulumi.Output.all(
            *(pulumi.Output.all(m, fqdn, kubeconfig) for m, (fqdn, kubeconfig) in args["members"].items())
        ).apply(_members_json)
        env: dict[str, pulumi.Input[str]] = {
            "MEMBERS": members,
            "MULTIKUEUE_ACCOUNT": MULTIKUEUE_ACCOUNT,
            "SECRET_NAMESPACE": KUEUE_NAMESPACE,
            "TOKEN_SECONDS": str(TOKEN_SECONDS),
        }
        _rotation_cronjob(
            name,
            env,
            pulumi.ResourceOptions.merge(on_manager, pulumi.ResourceOptions(depends_on=[credential, *account])),
        )
        self.register_outputs({"principal_id": self.principal_id})


def _rotation_cronjob(name: str, env: Mapping[str, pulumi.Input[str]], opts: pulumi.ResourceOptions) -> None:
    """Every ROTATION_SCHEDULE, a run of the rotation program with `env`, never two at once."""
    k8s.batch.v1.CronJob(
        f"{name}-cronjob",
        metadata={
            "name": ROTATOR,
            "namespace": KUEUE_NAMESPACE,
            "labels": {"app": ROTATOR},
            "annotations": ROTATOR_CHECKOV_SKIPS,
        },
        spec={
            "schedule": ROTATION_SCHEDULE,
            "concurrency_policy": "Forbid",
            "successful_jobs_history_limit": 1,
            "failed_jobs_history_limit": 3,
            "job_template": {
                "spec": {
                    "backoff_limit": 1,
                    "active_deadline_seconds": 300,
                    "template": {
                        "metadata": {
                            "labels": {"app": ROTATOR, "azure.workload.identity/use": "true"},
                            "annotations": ROTATOR_CHECKOV_SKIPS,
                        },
                        "spec": cast(k8s.core.v1.PodSpecArgsDict, rotator_pod_spec(env)),
                    },
                }
            },
        },
        opts=opts,
    )


def member_secret_name(member: str) -> str:
    """The manager's Secret holding a member's kubeconfig (the name the rotation program writes to)."""
    return f"multikueue-{member}"


def _members_json(members: list[list[str]]) -> str:
    entries: list[dict[str, str]] = []
    for name, fqdn, kubeconfig in members:
        ca, _ = member_ca_and_server(kubeconfig)
        entries.append({"name": name, "server": f"https://{fqdn}:443", "ca": ca, "secret": member_secret_name(name)})
    return json.dumps(entries)


def rotator_pod_spec(env: Mapping[str, pulumi.Input[str]]) -> dict[str, Any]:
    """The rotation pod: on the CPU pool, restricted and non-root, running the program with `env`."""
    return python_program_pod(ROTATOR, ROTATOR_UID, "rotate", ROTATOR_PROGRAM, env)


class FleetDispatchArgs(TypedDict):
    manager: ClusterHandle
    """The manager cluster: the AdmissionCheck, MultiKueueConfig, clusters and their Secrets go here."""
    kueue_release: pulumi.Resource
    """The manager's Kueue release (the CRDs)."""
    members: Sequence[str]
    """Member names, in dispatch order (the Incremental dispatcher offers a job to them in this order)."""


class FleetDispatch(pulumi.ComponentResource):
    """The manager's MultiKueue objects: one MultiKueueCluster per member, their config and the admission check."""

    admission_check: str
    """The check every manager ClusterQueue waits for."""

    def __init__(self, name: str, args: FleetDispatchArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:FleetDispatch", name, None, opts)
        on_manager = args["manager"].k8s_options(self)
        after_crds = pulumi.ResourceOptions.merge(
            on_manager, pulumi.ResourceOptions(depends_on=[args["kueue_release"]])
        )

        def kueue_object(role: str, kind: str, metadata: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
            k8s.apiextensions.CustomResource(
                f"{name}-{role}",
                api_version=KUEUE_API_VERSION,
                kind=kind,
                metadata=metadata,
                spec=spec,
                opts=after_crds,
            )

        for member in args["members"]:
            secret = k8s.core.v1.Secret(
                f"{name}-{member}-kubeconfig",
                metadata={"name": member_secret_name(member), "namespace": KUEUE_NAMESPACE},
                string_data={"kubeconfig": PLACEHOLDER_KUBECONFIG},
                # The rotation CronJob owns the content from its first run on: Pulumi creates it and never resets it.
                opts=pulumi.ResourceOptions.merge(
                    after_crds, pulumi.ResourceOptions(ignore_changes=["data", "stringData"])
                ),
            )
            kueue_object(
                f"{member}-cluster",
                "MultiKueueCluster",
                {"name": member},
                {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret.metadata["name"]}}},
            )
        kueue_object("config", "MultiKueueConfig", {"name": MULTIKUEUE_CONFIG}, {"clusters": list(args["members"])})
        kueue_object(
            "check",
            "AdmissionCheck",
            {"name": MULTIKUEUE_CHECK},
            {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": MULTIKUEUE_CONFIG},
            },
        )
        self.admission_check = MULTIKUEUE_CHECK
        self.register_outputs({"admission_check": self.admission_check})
