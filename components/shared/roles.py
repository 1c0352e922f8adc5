"""Azure built-in roles the platform assigns, and one way to assign them."""

from __future__ import annotations

import asyncio
import re

import pulumi
import pulumi_azure_native.authorization as authorization

# Built-in role definition IDs (same in every Azure public cloud tenant).
ACR_PULL = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
MANAGED_IDENTITY_OPERATOR = "f1a07417-d97a-45cb-824c-7a7467783830"
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
MONITORING_DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"
MONITORING_READER = "43d0d8ad-25c7-4714-9337-8ba259a9fe05"
GRAFANA_ADMIN = "22926164-76b3-42b3-bc55-97df8dab3e41"
GRAFANA_VIEWER = "60921a7e-fef1-4a43-9b16-a26c52ad4769"
# Only listClusterUserCredential: `az aks get-credentials` without --admin; grants nothing inside the cluster.
AKS_CLUSTER_USER = "4abbcc35-e782-43d8-92c5-2d3f1bd2253f"
STORAGE_ACCOUNT_CONTRIBUTOR = "17d1049b-9a84-46fb-8f53-869881c3d3ab"
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
# Lists and reads blobs (data action containers/blobs/read), writes nothing.
STORAGE_BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
GRAFANA_EDITOR = "a79a5197-3a5c-4973-a920-486035ffd60f"

# Display names of the roles above, as Azure lists them (Azure built-in roles,
# https://learn.microsoft.com/azure/role-based-access-control/built-in-roles).
ROLE_NAMES: dict[str, str] = {
    ACR_PULL: "AcrPull",
    MANAGED_IDENTITY_OPERATOR: "Managed Identity Operator",
    NETWORK_CONTRIBUTOR: "Network Contributor",
    MONITORING_DATA_READER: "Monitoring Data Reader",
    MONITORING_READER: "Monitoring Reader",
    GRAFANA_ADMIN: "Grafana Admin",
    GRAFANA_VIEWER: "Grafana Viewer",
    AKS_CLUSTER_USER: "Azure Kubernetes Service Cluster User Role",
    STORAGE_ACCOUNT_CONTRIBUTOR: "Storage Account Contributor",
    STORAGE_BLOB_DATA_CONTRIBUTOR: "Storage Blob Data Contributor",
    STORAGE_BLOB_DATA_READER: "Storage Blob Data Reader",
    GRAFANA_EDITOR: "Grafana Editor",
}


# A new role assignment takes effect across Azure only after a while: "up to 10 minutes" in general
# (https://learn.microsoft.com/azure/role-based-access-control/troubleshooting, "Role assignment changes are not
# being detected", read 2026-12-02), "up to five minutes" for Azure Managed Lustre's HSM grants
# (https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites, "Access roles for blob integration").
PROPAGATION_HOOK_NAME = re.compile(r"-role-propagation-(?P<seconds>[0-9]+)s$")


def propagation_wait(name: str, seconds: int) -> pulumi.ResourceHook | None:
    """An after-create hook that holds a new role assignment's dependents for `seconds` (None for 0).

    Why a resource hook (Pulumi's own mechanism, run by the engine): it runs only when the assignment
    is created (a new stack, or a replaced grant), never on later updates, nor for a stack that already
    had the grant; the engine releases the assignment's dependents only once its after-create hooks
    have returned; and it needs no extra provider plugin. A `pulumiverse_time.Sleep` or a
    `pulumi-command` `sleep` are plugins to download and would wait again on every existing stack they
    are added to; a dynamic provider pickles its code into the state, tied to the exact Python version.
    The hook is skipped in previews and logs what it waits for. (Engine order: CreateStep.Apply in
    pulumi/pulumi pkg/resource/deploy/step.go, v3.259, runs after-create hooks before it completes the step.)
    """
    if seconds <= 0:
        return None

    async def wait_for_propagation(args: pulumi.ResourceHookArgs) -> None:
        pulumi.log.info(f"{args.name}: waiting {seconds}s for the new role assignment to take effect across Azure")
        await asyncio.sleep(seconds)

    return pulumi.ResourceHook(f"{name}-role-propagation-{seconds}s", wait_for_propagation)


def propagation_seconds(hook_names: list[str]) -> int:
    """How long the propagation hooks among `hook_names` (a resource's after-create hooks) wait."""
    return max((int(m["seconds"]) for h in hook_names if (m := PROPAGATION_HOOK_NAME.search(h))), default=0)


def role_definition_id(role_guid: str) -> pulumi.Output[str]:
    """Full role definition ID in the deploying subscription."""
    client = authorization.get_client_config_output()
    return client.subscription_id.apply(
        lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role_guid}"
    )


def assign_role(
    name: str,
    *,
    role_guid: str,
    principal_id: pulumi.Input[str],
    scope: pulumi.Input[str],
    principal_type: authorization.PrincipalType = authorization.PrincipalType.SERVICE_PRINCIPAL,
    wait: pulumi.ResourceHook | None = None,
    opts: pulumi.ResourceOptions | None = None,
) -> authorization.RoleAssignment:
    """A role assignment on the narrowest scope, with `principalType` set.

    Setting the principal type lets Azure skip the directory lookup that fails while a new
    identity is still replicating. `wait` (see `propagation_wait`) runs once the assignment is
    created, before anything that depends on it.
    """
    if wait is not None:
        hooks = pulumi.ResourceOptions(hooks=pulumi.ResourceHookBinding(after_create=[wait]))
        opts = pulumi.ResourceOptions.merge(opts, hooks)
    return authorization.RoleAssignment(
        name,
        principal_id=principal_id,
        principal_type=principal_type,
        role_definition_id=role_definition_id(role_guid),
        scope=scope,
        opts=opts,
    )
