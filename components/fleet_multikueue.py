"""MultiKueue across a fleet: the manager admits a team's job once and runs it on the first member that admits it.

Follows kubernetes-sigs/kueue v0.19.2: site/content/en/docs/concepts/multikueue.md, apis/kueue/v1beta2/
multikueue_types.go, pkg/controller/admissionchecks/multikueue/multikueuecluster.go.

How the manager reaches the members. At v0.19.2 a kubeconfig Secret may not use exec plugins, token files or
auth providers (`validateKubeconfig`: "exec plugins are not allowed"), so kubelogin cannot run from it; the
ClusterProfile source that allows exec access providers is behind the alpha `MultiKueueClusterProfile` gate
(off by default). What remains is what the setup guide does: on each member a service account bound to a
ClusterRole that can only create, watch and delete the Jobs, JobSets and Workloads MultiKueue mirrors, and
the manager holds that account's token in a Secret in `kueue-system`. No admin credential is involved, which
matters on Entra-ID-only members (local accounts disabled: there is none). Raising
`fleet.multiKueue.credentialGeneration` replaces the token Secret, which revokes the old token.
"""

import base64
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import yaml

from .context import ClusterHandle
from .training_queues import KUEUE_API_VERSION, KUEUE_NAMESPACE

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
MULTIKUEUE_CHECK = "multikueue"
MULTIKUEUE_CONFIG = "fleet-members"
MULTIKUEUE_ACCOUNT = "multikueue-manager"
# apis/config/v1beta2/configuration_types.go: MultiKueueDispatcherModeAllAtOnce / ...Incremental.
DISPATCHERS = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
# site/static/examples/multikueue/create-multikueue-kubeconfig.sh at v0.19.2, narrowed to the two
# frameworks the platform manages (batch/job, jobset.x-k8s.io/jobset) and Kueue's own objects.
_MIRRORED = ["create", "delete", "get", "list", "watch"]
MEMBER_RULES: list[k8s.rbac.v1.PolicyRuleArgsDict] = [
    {"api_groups": ["batch"], "resources": ["jobs"], "verbs": _MIRRORED},
    {"api_groups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _MIRRORED},
    {"api_groups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_MIRRORED, "update", "patch"]},
    {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    {
        "api_groups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues", "localqueues"],
        "verbs": ["get", "list", "watch"],
    },
]


def multikueue_configuration(dispatcher: str) -> dict[str, Any]:
    """The `multiKueue` section of the manager's Kueue Configuration (MultiKueue is Beta, on by default)."""
    return {"multiKueue": {"dispatcherName": DISPATCHERS[dispatcher]}}


def member_kubeconfig(name: str, server: str, ca_data: str, token: str) -> str:
    """A kubeconfig `validateKubeconfig` accepts: embedded CA, https server, a bearer token and nothing else."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
            "users": [{"name": MULTIKUEUE_ACCOUNT, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": MULTIKUEUE_ACCOUNT}}],
            "current-context": name,
        }
    )


class MemberAccessArgs(TypedDict):
    member: ClusterHandle
    """The member cluster the manager dispatches to."""
    server: pulumi.Input[str]
    """The member's API server host (its FQDN)."""
    generation: int
    """`fleet.multiKueue.credentialGeneration`: raising it replaces the token, which revokes the old one."""
    depends_on: Sequence[pulumi.Resource]
    """What creates kueue-system on the member (its Kueue release)."""


class MemberAccess(pulumi.ComponentResource):
    """On one member: the service account MultiKueue acts as, its narrow ClusterRole, and a token for the manager."""

    kubeconfig: pulumi.Output[str]
    """Secret kubeconfig the manager's Kueue uses for this member."""

    def __init__(self, name: str, args: MemberAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:MultiKueueMemberAccess", name, None, opts)
        member, server, generation, depends_on = args["member"], args["server"], args["generation"], args["depends_on"]
        # kueue-system comes with the member's Kueue release.
        on_member = pulumi.ResourceOptions.merge(
            member.k8s_options(self), pulumi.ResourceOptions(depends_on=depends_on)
        )
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata={"name": MULTIKUEUE_ACCOUNT, "namespace": KUEUE_NAMESPACE}, opts=on_member
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata={"name": MULTIKUEUE_ACCOUNT}, rules=MEMBER_RULES, opts=on_member
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata={"name": MULTIKUEUE_ACCOUNT},
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.metadata["name"]},
            subjects=[{"kind": "ServiceAccount", "name": account.metadata["name"], "namespace": KUEUE_NAMESPACE}],
            opts=on_member,
        )
        # The control plane fills a service-account-token Secret with the token and the cluster's CA.
        token = k8s.core.v1.Secret(
            f"{name}-token-{generation}",
            metadata={
                "name": f"{MULTIKUEUE_ACCOUNT}-token-{generation}",
                "namespace": KUEUE_NAMESPACE,
                "annotations": {"kubernetes.io/service-account.name": MULTIKUEUE_ACCOUNT},
            },
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions.merge(on_member, pulumi.ResourceOptions(depends_on=[account])),
        )
        data: pulumi.Output[Mapping[str, str]] = token.data.apply(lambda d: d or {})
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(server, data).apply(
                lambda v: member_kubeconfig(
                    name, f"https://{v[0]}:443", v[1].get("ca.crt", ""), _decoded(v[1].get("token", ""))
                )
            )
        )
        self.register_outputs({})


def _decoded(value: str) -> str:
    return base64.b64decode(value).decode() if value else ""


class FleetDispatchArgs(TypedDict):
    manager: ClusterHandle
    """The manager cluster: the AdmissionCheck, MultiKueueConfig, clusters and their Secrets go here."""
    kueue_release: pulumi.Resource
    """The manager's Kueue release (the CRDs)."""
    member_kubeconfigs: Mapping[str, pulumi.Output[str]]
    """Member name -> kubeconfig of its MultiKueue service account, in dispatch order."""


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

        for member, kubeconfig in args["member_kubeconfigs"].items():
            secret = k8s.core.v1.Secret(
                f"{name}-{member}-kubeconfig",
                metadata={"name": f"multikueue-{member}", "namespace": KUEUE_NAMESPACE},
                string_data={"kubeconfig": kubeconfig},
                opts=after_crds,
            )
            kueue_object(
                f"{member}-cluster",
                "MultiKueueCluster",
                {"name": member},
                {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret.metadata["name"]}}},
            )
        kueue_object(
            "config", "MultiKueueConfig", {"name": MULTIKUEUE_CONFIG}, {"clusters": list(args["member_kubeconfigs"])}
        )
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
