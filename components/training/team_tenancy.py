"""What each training team gets around its queue: access for its Entra ID groups, bounds, isolation.

Access is split by what each authoriser can express (AKS cluster with Entra ID and Azure RBAC for
Kubernetes authorization, where Azure "teams with Kubernetes RBAC" for Entra identities,
MicrosoftDocs/azure-aks-docs articles/aks/concepts-identity.md):

- Azure role assignments for what only Azure can grant: "Azure Kubernetes Service Cluster User Role"
  on the cluster (listClusterUserCredential: `az aks get-credentials`, nothing inside the cluster) and
  "Grafana Viewer" on Managed Grafana.
- A Kubernetes Role and RoleBinding to the groups in the team namespace for everything in-cluster.
  Azure's built-in data-plane roles cannot grant it: custom resources (JobSet, Kueue) are covered by
  no built-in Writer role, and a custom role reaches them only through
  `Microsoft.ContainerService/managedClusters/*/read` (articles/aks/manage-azure-rbac.md, "Before you
  begin"): read, never create. Kueue's chart ships `kueue-batch-user-role`, but it aggregates editor
  rights on every kind Kueue can integrate (Ray, Spark, LeaderWorkerSet, Kubeflow...), including kinds
  this platform's Kueue does not manage, which would then run outside quota; the Role here grants
  exactly the kinds in FRAMEWORKS.

Bounds and isolation per team namespace: a LimitRange (a container without requests or limits gets
defaults), a ResourceQuota on storage claims, and a NetworkPolicy that admits traffic only from the
namespace itself (ranks' NCCL and rendezvous) and from kube-system (managed Prometheus), another that lets
traffic out only to the namespace, DNS and outside the cluster but IMDS (components/network/policies.py), the
admission policy and system-priority quota of components/training/team_admission.py. Cilium enforces Kubernetes
NetworkPolicy (the cluster's network policy engine, components/cluster/aks_cluster.py).
"""

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.training.section import TeamConfig, TrainingConfig

from ..network.policies import team_egress
from ..shared import roles
from ..shared.context import ClusterHandle
from .platform_info import PLATFORM_INFO
from .queues import FRAMEWORKS, JOBSET_NAMESPACE, KUEUE_NAMESPACE, TEAM_LABEL
from .team_admission import (
    ANCESTRY_POLICY_NAME,
    POLICY_NAME,
    job_ancestry_policy_spec,
    pod_boundary_policy_spec,
    system_priority_quota_spec,
)

TEAM_MEMBER_ROLE = "team-member"
RBAC_GROUP = "rbac.authorization.k8s.io"
# The verbs Kueue's own job editor ClusterRoles grant (charts/kueue/templates/rbac/*_editor_role.yaml, v0.19.2).
EDIT = ["create", "delete", "get", "list", "patch", "update", "watch"]
READ = ["get", "list", "watch"]
# A container that states no requests or limits gets these, so no pod in a team namespace is unbounded.
DEFAULT_REQUEST = {"cpu": "1", "memory": "4Gi"}
DEFAULT_LIMIT = {"cpu": "4", "memory": "16Gi"}
# Storage claims a team may hold (its Lustre claim included).
STORAGE_QUOTA = {"persistentvolumeclaims": "20", "requests.storage": "50Ti"}
# Managed Prometheus (ama-metrics) runs there and scrapes pods that expose metrics.
MONITORING_NAMESPACE = "kube-system"


def framework_resources() -> list[tuple[str, str]]:
    """(API group, plural) of every job kind Kueue manages here: the only kinds a team may create."""
    found: list[tuple[str, str]] = []
    for framework in FRAMEWORKS:
        group, kind = framework.rsplit("/", 1)
        found.append((group, f"{kind}s"))
    return found


def team_member_rules() -> list[k8s.rbac.v1.PolicyRuleArgsDict]:
    """Submit, watch and cancel managed jobs; read their pods, logs, events and queue state; own claims.

    No pods/create (a bare pod would bypass Kueue), no secrets, no roles, no Kueue writes.
    """
    rules: list[k8s.rbac.v1.PolicyRuleArgsDict] = []
    for group, plural in framework_resources():
        rules.append({"api_groups": [group], "resources": [plural], "verbs": EDIT})
        rules.append({"api_groups": [group], "resources": [f"{plural}/status"], "verbs": ["get"]})
    return [
        *rules,
        {"api_groups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"], "verbs": READ},
        # `kubectl kueue list pending-workloads` / the visibility API: the job's place in the queue.
        {"api_groups": ["visibility.kueue.x-k8s.io"], "resources": ["localqueues/pendingworkloads"], "verbs": READ},
        {"api_groups": [""], "resources": ["pods", "events"], "verbs": READ},
        {"api_groups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        # patch and update: `kubectl apply` of an edited claim (a resize) patches it.
        {
            "api_groups": [""],
            "resources": ["persistentvolumeclaims"],
            "verbs": ["create", "delete", "patch", "update", *READ],
        },
        # What the platform publishes for the team (`kubectl get configmap platform-info -o yaml`); no other ConfigMap.
        {"api_groups": [""], "resources": ["configmaps"], "resource_names": [PLATFORM_INFO], "verbs": ["get"]},
    ]


def team_reader_rules() -> list[k8s.rbac.v1.PolicyRuleArgsDict]:
    """What a team keeps on a fleet member, where it submits nothing (jobs reach members only through the manager's
    MultiKueue): the read verbs of `team_member_rules`, so logs, pods, events and the mirrored jobs stay visible."""
    readers: list[k8s.rbac.v1.PolicyRuleArgsDict] = []
    for rule in team_member_rules():
        verbs = [v for v in rule["verbs"] if v in READ]  # type: ignore[union-attr]
        readers.append({**rule, "verbs": verbs})
    return readers


def isolation_ingress() -> list[k8s.networking.v1.NetworkPolicyIngressRuleArgsDict]:
    """Ingress a team's pods accept: their own namespace, and the monitoring namespace."""
    return [
        {"from_": [{"pod_selector": {}}]},
        {"from_": [{"namespace_selector": {"match_labels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}}}]},
    ]


class TeamTenancyArgs(TypedDict):
    settings: TrainingConfig
    """The validated `training` section: teams and their member groups."""
    namespaces: Mapping[str, pulumi.Input[str]]
    """Team name -> namespace name (an output of the namespace, so objects wait for it)."""
    cluster: ClusterHandle
    """The cluster: credentials are granted on it, in-cluster objects go to it."""
    gpu_pools: NotRequired[Sequence[GpuPoolConfig]]
    """Every GPU pool of the cluster (of the fleet, on a MultiKueue manager): their own taints mark GPU nodes too.
    Without them the admission policy knows the GPU taint and the vendors' taint keys only."""
    grafana_id: NotRequired[pulumi.Input[str]]
    """Managed Grafana's resource ID: team groups get Grafana Viewer there (none on a cluster without Grafana)."""
    submits: NotRequired[bool]
    """Default True. False on a fleet member: teams submit on the MultiKueue manager, here `team_reader_rules`."""
    file_servers: NotRequired[Sequence[str]]
    """Subnets (CIDR) of file servers that admit the node subnet (Lustre, NetApp Files): team pods may not reach
    them (components/network/policies.py team_egress)."""
    storage_quota: NotRequired[Mapping[str, Mapping[str, str]]]
    """Team name -> more `hard` entries of its storage quota (TeamStorage's zero quotas on shared classes)."""


class TeamTenancy(pulumi.ComponentResource):
    """Per team: Role + RoleBinding for its groups, LimitRange, ResourceQuota, NetworkPolicy; Azure grants."""

    member_groups: list[str]
    """Every distinct member group of every team, each granted cluster credentials and Grafana Viewer."""

    def __init__(self, name: str, args: TeamTenancyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:TeamTenancy", name, None, opts)
        settings = args["settings"]
        in_cluster = args["cluster"].k8s_options(self)
        if settings.teams:
            _admission_policies(name, args.get("gpu_pools", ()), in_cluster)
        for team in settings.teams:
            prefix, namespace = f"{name}-{team.name}", args["namespaces"][team.name]
            _member_access(prefix, namespace, team, args.get("submits", True), in_cluster)
            _namespace_bounds(prefix, namespace, args.get("storage_quota", {}).get(team.name, {}), in_cluster)
            _namespace_isolation(prefix, namespace, args.get("file_servers", ()), in_cluster)
        # Object IDs arrive lower-cased by the config model, as Entra ID tokens carry them.
        self.member_groups = sorted({group for team in settings.teams for group in team.members})
        self._azure_grants(name, args)
        self.register_outputs({"member_groups": self.member_groups})

    def _azure_grants(self, name: str, args: TeamTenancyArgs) -> None:
        """Per member group: cluster credentials and, with Grafana, Grafana Viewer."""
        azure = pulumi.ResourceOptions(parent=self)
        for group in self.member_groups:
            # One assignment per group and scope: Azure refuses a second identical one.
            roles.assign_role(
                f"{name}-cluster-user-{group}",
                role_guid=roles.AKS_CLUSTER_USER,
                principal_id=group,
                principal_type=authorization.PrincipalType.GROUP,
                scope=args["cluster"].cluster_id,
                opts=azure,
            )
            if "grafana_id" in args:
                roles.assign_role(
                    f"{name}-grafana-viewer-{group}",
                    role_guid=roles.GRAFANA_VIEWER,
                    principal_id=group,
                    principal_type=authorization.PrincipalType.GROUP,
                    scope=args["grafana_id"],
                    opts=azure,
                )


def _admission_policies(name: str, gpu_pools: Sequence[GpuPoolConfig], in_cluster: pulumi.ResourceOptions) -> None:
    """The pod boundary and job ancestry policies, each bound in every namespace labelled as a team's (members
    cannot edit namespace labels): one policy for all teams."""
    policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        f"{name}-pod-boundary",
        metadata={"name": POLICY_NAME},
        spec=pod_boundary_policy_spec(gpu_pools),  # type: ignore[arg-type]
        opts=in_cluster,
    )
    ancestry = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        f"{name}-job-ancestry",
        metadata={"name": ANCESTRY_POLICY_NAME},
        spec=job_ancestry_policy_spec((JOBSET_NAMESPACE, KUEUE_NAMESPACE)),  # type: ignore[arg-type]
        opts=in_cluster,
    )
    for resource, policy_name, bound in (
        ("pod-boundary", POLICY_NAME, policy),
        ("job-ancestry", ANCESTRY_POLICY_NAME, ancestry),
    ):
        k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-{resource}-binding",
            metadata={"name": policy_name},
            spec={
                "policy_name": bound.metadata["name"],
                "validation_actions": ["Deny"],
                "match_resources": {
                    "namespace_selector": {"match_expressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}
                },
            },
            opts=in_cluster,
        )


def _member_access(
    prefix: str, namespace: pulumi.Input[str], team: TeamConfig, submits: bool, in_cluster: pulumi.ResourceOptions
) -> None:
    """The team's Role (`team_member_rules`, or `team_reader_rules` where teams submit elsewhere), bound to its
    member groups."""
    role = k8s.rbac.v1.Role(
        f"{prefix}-member-role",
        metadata={"name": TEAM_MEMBER_ROLE, "namespace": namespace},
        rules=team_member_rules() if submits else team_reader_rules(),
        opts=in_cluster,
    )
    if team.members:
        k8s.rbac.v1.RoleBinding(
            f"{prefix}-members",
            metadata={"name": TEAM_MEMBER_ROLE, "namespace": namespace},
            role_ref={"api_group": RBAC_GROUP, "kind": "Role", "name": role.metadata["name"]},
            # Entra ID groups reach Kubernetes RBAC by object ID (AKS's authentication webhook).
            subjects=[{"kind": "Group", "api_group": RBAC_GROUP, "name": group} for group in team.members],
            opts=in_cluster,
        )


def _namespace_bounds(
    prefix: str, namespace: pulumi.Input[str], more_storage_quota: Mapping[str, str], in_cluster: pulumi.ResourceOptions
) -> None:
    """Container defaults, the storage quota (with `more_storage_quota`'s entries) and no system-priority pods."""
    k8s.core.v1.LimitRange(
        f"{prefix}-container-defaults",
        metadata={"name": "container-defaults", "namespace": namespace},
        spec={"limits": [{"type": "Container", "default_request": DEFAULT_REQUEST, "default": DEFAULT_LIMIT}]},
        opts=in_cluster,
    )
    k8s.core.v1.ResourceQuota(
        f"{prefix}-storage-quota",
        metadata={"name": "storage", "namespace": namespace},
        spec={"hard": {**STORAGE_QUOTA, **more_storage_quota}},
        opts=in_cluster,
    )
    k8s.core.v1.ResourceQuota(
        f"{prefix}-system-priority-quota",
        metadata={"name": "no-system-priority", "namespace": namespace},
        spec=system_priority_quota_spec(),  # type: ignore[arg-type]
        opts=in_cluster,
    )


def _namespace_isolation(
    prefix: str, namespace: pulumi.Input[str], file_servers: Sequence[str], in_cluster: pulumi.ResourceOptions
) -> None:
    """NetworkPolicies: ingress from the namespace and monitoring only, egress as `team_egress` allows."""
    k8s.networking.v1.NetworkPolicy(
        f"{prefix}-isolation",
        metadata={"name": "team-isolation", "namespace": namespace},
        spec={"pod_selector": {}, "policy_types": ["Ingress"], "ingress": isolation_ingress()},
        opts=in_cluster,
    )
    k8s.networking.v1.NetworkPolicy(
        f"{prefix}-egress",
        metadata={"name": "team-egress", "namespace": namespace},
        spec={"pod_selector": {}, "policy_types": ["Egress"], "egress": team_egress(file_servers)},
        opts=in_cluster,
    )
