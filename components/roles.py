"""Azure built-in roles the platform assigns, and one way to assign them."""

from __future__ import annotations

import pulumi
import pulumi_azure_native.authorization as authorization

# Built-in role definition IDs (same in every Azure public cloud tenant).
ACR_PULL = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
MANAGED_IDENTITY_OPERATOR = "f1a07417-d97a-45cb-824c-7a7467783830"
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
MONITORING_DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"
MONITORING_READER = "43d0d8ad-25c7-4714-9337-8ba259a9fe05"
GRAFANA_ADMIN = "22926164-76b3-42b3-bc55-97df8dab3e41"
STORAGE_ACCOUNT_CONTRIBUTOR = "17d1049b-9a84-46fb-8f53-869881c3d3ab"
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"


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
    opts: pulumi.ResourceOptions | None = None,
) -> authorization.RoleAssignment:
    """A role assignment on the narrowest scope, with `principalType` set.

    Setting the principal type lets Azure skip the directory lookup that fails while a new
    identity is still replicating.
    """
    return authorization.RoleAssignment(
        name,
        principal_id=principal_id,
        principal_type=principal_type,
        role_definition_id=role_definition_id(role_guid),
        scope=scope,
        opts=opts,
    )
