"""What a CI deploy identity needs on a stack's resource groups, as the `az` commands that grant it.

    python -m tools.deploy_identity --assignee-object-id <object id> --scope <resource group ID> --subscription <ID>
    python -m tools.deploy_identity --check prod     # the stack's assignments the condition would refuse

`pulumi up` creates role assignments (the kubelet's AcrPull, the control plane's Network Contributor,
the teams' Grafana Viewer...), so the deploy identity must be able to assign roles. User Access
Administrator (or Owner) would let any code that lands on `main` grant Owner to anyone. Instead it gets
Role Based Access Control Administrator with a condition (Azure ABAC, conditionVersion 2.0) that
admits a role assignment, created or deleted, only for the role definitions and principal types the
platform assigns (`ASSIGNABLE`, held equal to what dev, prod and the fleet render by tests/cluster/test_security.py; on
delete also the Grafana Admin grant a person's own deploy made, `REMOVABLE`). Beside it: Contributor (every
resource), Azure Kubernetes Service RBAC Cluster Admin on the group (every Kubernetes object, from the cluster's
creation on) and, for the pod-security policy assignment, a custom role that writes policy assignments and nothing
else (Contributor excludes `Microsoft.Authorization/*/Write`; Resource Policy Contributor would also write policy
exemptions, which switch the organisation's own policies off).

Role-assignment conditions: "Examples to delegate Azure role assignment management with conditions"
(Constrain roles and principal types) and "Authorization actions and attributes", MicrosoftDocs/azure-docs
articles/role-based-access-control/delegate-role-assignments-examples.md and
conditions-authorization-actions-attributes.md (commits 0b8729ea, 1f87455f).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence

from aks_gpu_platform.components.shared import roles
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording

from . import REPO_ROOT

# Built-in role definition IDs of the deploy identity's own roles (azure-docs built-in-roles/privileged.md).
CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"
RBAC_ADMINISTRATOR = "f58310d9-a9f6-439a-9e8d-f62e7b41a168"
# Azure Kubernetes Service RBAC Cluster Admin (azure-docs built-in-roles/containers.md): Kubernetes access through
# Entra ID and Azure RBAC. Granted on the group, not the cluster: the cluster does not exist before the first
# `pulumi up`, which creates it and then every Kubernetes object through it in the same run.
AKS_RBAC_CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
POLICY_ASSIGNER_ROLE = "AKS GPU platform policy assigner"
POLICY_ASSIGNER_ACTIONS = (
    "Microsoft.Authorization/policyAssignments/read",
    "Microsoft.Authorization/policyAssignments/write",
    "Microsoft.Authorization/policyAssignments/delete",
)

# Every (principal type, role) the platform assigns: managed identities and Azure's own service principals
# get the service roles; Entra ID groups (admins, teams) get Grafana and cluster-user access, and each team's groups
# the data role on their team's Blob container (components/training/team_storage.py). The deployer's
# own Grafana Admin grant is to the deploy identity, a service principal.
ASSIGNABLE: Mapping[str, tuple[str, ...]] = {
    "ServicePrincipal": (
        roles.ACR_PULL,
        roles.MANAGED_IDENTITY_OPERATOR,
        roles.NETWORK_CONTRIBUTOR,
        roles.MONITORING_DATA_READER,
        roles.MONITORING_READER,
        roles.STORAGE_ACCOUNT_CONTRIBUTOR,
        roles.STORAGE_BLOB_DATA_CONTRIBUTOR,
        roles.STORAGE_BLOB_DATA_READER,
        roles.GRAFANA_ADMIN,
    ),
    "Group": (roles.GRAFANA_ADMIN, roles.GRAFANA_VIEWER, roles.AKS_CLUSTER_USER, roles.STORAGE_BLOB_DATA_CONTRIBUTOR),
}
# What it may delete: the above, and the Grafana Admin grant a person's `pulumi up` gave that person (the program
# names a person's token `User`). Once CI deploys the stack, Pulumi replaces that grant with the deploy identity's
# and deletes the person's; refused, the delete would fail that deploy and every later one.
REMOVABLE: Mapping[str, tuple[str, ...]] = {**ASSIGNABLE, "User": (roles.GRAFANA_ADMIN,)}

_ATTRIBUTE = "Microsoft.Authorization/roleAssignments"


def _constrained(action: str, source: str, assignable: Mapping[str, Sequence[str]]) -> list[str]:
    """Lines of one block: any action but `action`, or `source` (Request on create, Resource on delete) names
    one of the roles of its principal type. Laid out as Microsoft's examples are."""
    lines = ["(", " (", f"  !(ActionMatches{{'{_ATTRIBUTE}/{action}'}})", " )", " OR", " ("]
    for i, (principal, guids) in enumerate(sorted(assignable.items())):
        lines += ["  OR"] if i else []
        lines += [
            "  (",
            f"   @{source}[{_ATTRIBUTE}:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{{', '.join(sorted(guids))}}}",
            "   AND",
            f"   @{source}[{_ATTRIBUTE}:PrincipalType] ForAnyOfAnyValues:StringEqualsIgnoreCase {{'{principal}'}}",
            "  )",
        ]
    return [*lines, " )", ")"]


def condition(
    assignable: Mapping[str, Sequence[str]] = ASSIGNABLE, removable: Mapping[str, Sequence[str]] = REMOVABLE
) -> str:
    """The condition on the Role Based Access Control Administrator assignment: create and delete constrained."""
    return "\n".join(
        [*_constrained("write", "Request", assignable), "AND", *_constrained("delete", "Resource", removable)]
    )


def policy_assigner_definition(subscription: str) -> dict[str, object]:
    """The custom role that writes policy assignments only, assignable in one subscription."""
    return {
        "Name": POLICY_ASSIGNER_ROLE,
        "Description": "Creates, updates and deletes Azure Policy assignments; no exemptions, no definitions",
        "Actions": list(POLICY_ASSIGNER_ACTIONS),
        "NotActions": [],
        "AssignableScopes": [f"/subscriptions/{subscription}"],
    }


def commands(assignee: str = "$ASSIGNEE", scope: str = "$SCOPE", subscription: str = "$SUBSCRIPTION") -> str:
    """The shell commands, in order, that give one deploy identity its rights on one scope.

    By default they read the shell variables ASSIGNEE, SCOPE and SUBSCRIPTION. The condition goes through a
    quoted here-document: it holds `!(` and quotes, which an interactive shell would expand or split.
    """
    base = f'az role assignment create --assignee-object-id "{assignee}" --assignee-principal-type ServicePrincipal'
    definition = json.dumps(policy_assigner_definition(subscription))
    return "\n".join(
        [
            f'{base} --role {CONTRIBUTOR} --scope "{scope}"',
            f'{base} --role {AKS_RBAC_CLUSTER_ADMIN} --scope "{scope}"',
            "condition=\"$(cat <<'CONDITION'",
            condition(),
            "CONDITION",
            ')"',
            f'{base} --role {RBAC_ADMINISTRATOR} --scope "{scope}" --condition "$condition" --condition-version 2.0',
            "# once per subscription (an existing definition of that name: az role definition update):",
            'az role definition create --role-definition "$(cat <<DEFINITION',
            definition,
            "DEFINITION",
            ')"',
            f'{base} --role "{POLICY_ASSIGNER_ROLE}" --scope "{scope}"',
        ]
    )


def refused(recording: Recording) -> list[str]:
    """The role assignments a rendered stack makes that `ASSIGNABLE` does not cover, each with why."""
    allowed = {(principal, guid) for principal, guids in ASSIGNABLE.items() for guid in guids}
    found: list[str] = []
    for assignment in recording.of_type("azure-native:authorization:RoleAssignment"):
        guid = str(assignment.inputs.get("roleDefinitionId", "")).rsplit("/", 1)[-1]
        principal = str(assignment.inputs.get("principalType", "User"))  # the REST API's default
        if (principal, guid) not in allowed:
            role = roles.ROLE_NAMES.get(guid, "a role the program defines itself (its ID exists only once created)")
            found.append(f"{assignment.name}: {role} to a {principal}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignee-object-id", default="$ASSIGNEE", help="the deploy identity's object ID")
    parser.add_argument("--scope", default="$SCOPE", help="each resource group the stack deploys into (its ID)")
    parser.add_argument("--subscription", default="$SUBSCRIPTION", help="the subscription ID")
    parser.add_argument("--check", metavar="STACK", help="list the stack's role assignments the condition refuses")
    options = parser.parse_args(argv)
    if options.check:
        stack_file = REPO_ROOT / f"Pulumi.{options.check}.yaml"
        if not stack_file.is_file():
            print(f"error: {stack_file.name} not found", file=sys.stderr)
            return 2
        found = refused(run_stack(options.check))
        for line in found:
            print(f"refused: {line}")
        print(f"{options.check}: every role assignment passes the condition" if not found else "")
        return 1 if found else 0
    print(commands(options.assignee_object_id, options.scope, options.subscription))
    return 0


if __name__ == "__main__":
    sys.exit(main())
