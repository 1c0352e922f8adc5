"""An Azure identity a Kubernetes service account signs in as (Azure Workload Identity)."""

import pulumi
import pulumi_azure_native.managedidentity as managedidentity

from .context import ClusterHandle

# The audience Entra ID expects of a federated service-account token (Azure Workload Identity docs).
AZURE_AD_TOKEN_AUDIENCE = "api://AzureADTokenExchange"


def service_account_subject(namespace: str, service_account: str) -> str:
    """The `sub` claim of a service account's projected token, as the cluster's OIDC issuer signs it."""
    return f"system:serviceaccount:{namespace}:{service_account}"


def federated_identity(
    identity_name: str,
    credential_name: str,
    *,
    handle: ClusterHandle,
    namespace: str,
    service_account: str,
    opts: pulumi.ResourceOptions,
    azure_name: pulumi.Input[str] | None = None,
) -> tuple[managedidentity.UserAssignedIdentity, managedidentity.FederatedIdentityCredential]:
    """A user-assigned identity and the credential that lets `namespace/service_account` on this cluster use it.

    The credential is named after the service account; `azure_name` names the identity in Azure (default:
    a generated name).
    """
    identity = managedidentity.UserAssignedIdentity(
        identity_name,
        resource_group_name=handle.resource_group_name,
        location=handle.location,
        resource_name_=azure_name,
        tags=dict(handle.tags),
        opts=opts,
    )
    credential = managedidentity.FederatedIdentityCredential(
        credential_name,
        resource_group_name=handle.resource_group_name,
        resource_name_=identity.name,
        federated_identity_credential_resource_name=service_account,
        issuer=handle.oidc_issuer_url,
        subject=service_account_subject(namespace, service_account),
        audiences=[AZURE_AD_TOKEN_AUDIENCE],
        opts=opts,
    )
    return identity, credential
