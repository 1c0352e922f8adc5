"""An offline authoriser for the rendered access objects: Kubernetes RBAC plus Azure role assignments.

Kubernetes RBAC follows kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go,
pkg/apis/rbac/v1/evaluation_helpers.go and pkg/registry/rbac/validation/rule.go (read at main-branch commit
05c351a9; the stacks pin 1.36, whose tag was not available to read): a request is allowed if any rule of a
role bound to the user or one of its groups matches; a RoleBinding grants its Role or ClusterRole only inside the
binding's namespace; a ClusterRoleBinding grants everywhere; `*` matches any verb, group or resource; a
subresource is matched as `<resource>/<subresource>`; resourceNames, when set, limit the rule to those names.
There are no deny rules. Subjects match as `appliesToUser` does: a Group subject by `has(user.GetGroups(),
subject.Name)`, a byte-for-byte string comparison, a User subject by the user's name only (a binding that names a
group's object ID as a User binds no one); the user's groups are what the authenticator put in the
request (for AKS with Entra ID, the token's `groups` claim: object IDs in lower case). Nothing is normalised here:
a model that folded case would hide a binding that binds no one.

Azure role assignments follow Azure RBAC's model (learn.microsoft.com/azure/role-based-access-control/
overview, "How Azure RBAC determines if a user has access"): an assignment applies to its scope and
every scope under it; a role allows an operation that matches one of its actions (or dataActions) and
none of its notActions. An assignment's principalId is an Entra object ID (the RoleAssignment REST spec,
Microsoft.Authorization stable/2022-04-01, types it as a string; the service resolves it to a directory object), so
it matches a group of the caller as a GUID value, not as text; scopes compare case-insensitively, as ARM resource
IDs do. The built-in roles below are test data, restated from
MicrosoftDocs/azure-docs articles/role-based-access-control/built-in-roles/containers.md and
monitor.md (read 2026-12), and Storage Blob Data Reader from the role's definition as Azure returns it
(azure-rbac-catalog.org's copy, updated 2021-11-11), keyed by role definition GUID.

AKS with Azure RBAC for Kubernetes authorization asks Azure for requests of Entra identities as
`Microsoft.ContainerService/managedClusters/<group>/<resource>/<verb>` data actions on the cluster
or `<cluster>/namespaces/<ns>` scope (articles/aks/manage-azure-rbac.md); it "teams with Kubernetes
RBAC" (articles/aks/concepts-identity.md): a request either authoriser allows is allowed.
"""

from __future__ import annotations

import fnmatch
import uuid
from dataclasses import dataclass
from typing import Any

# role GUID -> (name, actions, dataActions)
AZURE_BUILT_IN_ROLES: dict[str, tuple[str, list[str], list[str]]] = {
    "4abbcc35-e782-43d8-92c5-2d3f1bd2253f": (
        "Azure Kubernetes Service Cluster User Role",
        [
            "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
            "Microsoft.ContainerService/managedClusters/read",
        ],
        [],
    ),
    "60921a7e-fef1-4a43-9b16-a26c52ad4769": (
        "Grafana Viewer",
        [],
        ["Microsoft.Dashboard/grafana/ActAsGrafanaViewer/action"],
    ),
    "22926164-76b3-42b3-bc55-97df8dab3e41": (
        "Grafana Admin",
        [],
        ["Microsoft.Dashboard/grafana/ActAsGrafanaAdmin/action"],
    ),
    "a79a5197-3a5c-4973-a920-486035ffd60f": (
        "Grafana Editor",
        [],
        ["Microsoft.Dashboard/grafana/ActAsGrafanaEditor/action"],
    ),
    "43d0d8ad-25c7-4714-9337-8ba259a9fe05": (
        "Monitoring Reader",
        ["*/read", "Microsoft.OperationalInsights/workspaces/search/action", "Microsoft.Support/*"],
        [],
    ),
    "b0d8363b-8ddd-447d-831f-62ca05bff136": (
        "Monitoring Data Reader",
        ["Microsoft.Monitor/accounts/read"],
        ["Microsoft.Monitor/accounts/data/metrics/read"],
    ),
    "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": (
        "Storage Blob Data Reader",
        [
            "Microsoft.Storage/storageAccounts/blobServices/containers/read",
            "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
        ],
        ["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"],
    ),
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": (
        "Storage Blob Data Contributor",
        [
            "Microsoft.Storage/storageAccounts/blobServices/containers/delete",
            "Microsoft.Storage/storageAccounts/blobServices/containers/read",
            "Microsoft.Storage/storageAccounts/blobServices/containers/write",
            "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
        ],
        [
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/move/action",
            "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action",
        ],
    ),
}

# Kubernetes verbs -> the Azure data action suffix AKS checks for them (manage-azure-rbac.md custom roles).
AZURE_VERB = {
    "get": "read",
    "list": "read",
    "watch": "read",
    "create": "write",
    "update": "write",
    "patch": "write",
    "delete": "delete",
}


@dataclass(frozen=True)
class Request:
    """One Kubernetes API request as the authoriser sees it."""

    verb: str
    group: str
    resource: str
    namespace: str | None = None
    """None for cluster-scoped objects."""
    subresource: str = ""
    name: str = ""


def _matches(patterns: list[str], value: str) -> bool:
    return "*" in patterns or value in patterns


def rule_allows(rule: dict[str, Any], request: Request) -> bool:
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    names = rule.get("resourceNames") or []
    return (
        _matches(rule.get("verbs") or [], request.verb)
        and _matches(rule.get("apiGroups") or [], request.group)
        and _matches(rule.get("resources") or [], resource)
        and (not names or request.name in names)
    )


SERVICE_ACCOUNT_USER = "system:serviceaccount:"


def _applies(subject: dict[str, Any], user: str | None, groups: set[str]) -> bool:
    """`appliesToUser` (kubernetes pkg/apis/rbac/v1/evaluation_helpers.go): a User subject names the user, a
    ServiceAccount subject the user `system:serviceaccount:<ns>:<name>`, a Group subject one of the user's groups.
    A service account's user name may come in `groups` (the one entry starting `system:serviceaccount:`)."""
    kind, name = subject.get("kind"), subject.get("name", "")
    users = {i for i in groups if i.startswith(SERVICE_ACCOUNT_USER)} | ({user} if user else set())
    if kind == "ServiceAccount":
        return f"{SERVICE_ACCOUNT_USER}{subject.get('namespace', '')}:{name}" in users
    if kind == "User":
        return name in users
    return kind == "Group" and name in groups - users


def _bound(binding: dict[str, Any], groups: set[str], user: str | None = None) -> bool:
    return any(_applies(s, user, groups) for s in binding.get("subjects") or [])


def kubernetes_allows(
    objects: list[dict[str, Any]], groups: set[str], request: Request, user: str | None = None
) -> bool:
    """Kubernetes RBAC over rendered Role/ClusterRole/RoleBinding/ClusterRoleBinding manifests.

    `groups` are the request's groups exactly as the authenticator reports them; `user` its user name (an Entra ID
    service principal's object ID on AKS). A team member is known by groups only: no User subject names them."""
    roles = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects if o["kind"] == "Role"}
    cluster_roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding") or not _bound(binding, groups, user):
            continue
        where = binding["metadata"].get("namespace")
        if binding["kind"] == "RoleBinding" and where != request.namespace:
            continue
        ref = binding["roleRef"]
        role = roles.get((where, ref["name"])) if ref["kind"] == "Role" else cluster_roles.get(ref["name"])
        if role is not None and any(rule_allows(r, request) for r in role.get("rules") or []):
            return True
    return False


def _under(scope: str, assignment_scope: str) -> bool:
    scope, assignment_scope = scope.lower().rstrip("/"), assignment_scope.lower().rstrip("/")
    return scope == assignment_scope or scope.startswith(assignment_scope + "/")


def _object_id(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def azure_allows(assignments: list[dict[str, Any]], groups: set[str], scope: str, operation: str) -> bool:
    """Does an assignment to one of `groups` at or above `scope` grant `operation` (action or data action)?"""
    object_ids = {_object_id(g) for g in groups} - {None}
    for assignment in assignments:
        if _object_id(assignment["principalId"]) not in object_ids or not _under(scope, assignment["scope"]):
            continue
        guid = assignment["roleDefinitionId"].rsplit("/", 1)[-1]
        _, actions, data_actions = AZURE_BUILT_IN_ROLES[guid]
        if any(fnmatch.fnmatchcase(operation.lower(), p.lower()) for p in [*actions, *data_actions]):
            return True
    return False


def azure_data_action(request: Request) -> str:
    """The data action AKS asks Azure for on a Kubernetes request."""
    path = "/".join(p for p in (request.group, request.resource, request.subresource) if p)
    return f"Microsoft.ContainerService/managedClusters/{path}/{AZURE_VERB[request.verb]}"


def allowed(
    objects: list[dict[str, Any]], assignments: list[dict[str, Any]], cluster_id: str, groups: set[str], r: Request
) -> bool:
    """AKS with Entra ID and Azure RBAC: Kubernetes RBAC or an Azure data action on the cluster/namespace."""
    scope = f"{cluster_id}/namespaces/{r.namespace}" if r.namespace else cluster_id
    return kubernetes_allows(objects, groups, r) or azure_allows(assignments, groups, scope, azure_data_action(r))
