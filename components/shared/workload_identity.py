"""An Azure identity a Kubernetes service account signs in as (Azure Workload Identity)."""

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_azure_native.managedidentity as managedidentity
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import (
    SCANNED_CONTAINER_SECURITY_CONTEXT,
    cpu_node_selector,
    restricted_pod_security_context,
)

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


# The image of the platform's own small programs that sign in with workload identity: MCR's Azure CLI at a release
# tag with its OS in the tag (MicrosoftDocs/azure-docs-cli docs-ref-conceptual/run-azure-cli-docker.md, 2025-06-20,
# names `2.74.0-azurelinux3.0`); the programs use only its python3 (Azure/azure-cli scripts/release/rpm/
# azure-cli.spec: `Requires: python3`) and its standard library: no curl, kubectl or YAML.
AZURE_CLI_IMAGE = "mcr.microsoft.com/azure-cli:2.74.0-azurelinux3.0"


def python_program_pod(
    service_account: str, uid: int, container: str, program: str, env: Mapping[str, pulumi.Input[str]]
) -> dict[str, Any]:
    """A pod running one standard-library Python program as `service_account`: on the CPU pool, restricted and
    non-root, with `env`."""
    return {
        "serviceAccountName": service_account,
        "restartPolicy": "Never",
        "nodeSelector": cpu_node_selector(),
        "securityContext": restricted_pod_security_context(uid),
        "containers": [
            {
                "name": container,
                "image": mirrored(AZURE_CLI_IMAGE),
                "imagePullPolicy": "Always",
                "command": ["python3", "-c", program],
                "env": [{"name": key, "value": value} for key, value in env.items()],
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"cpu": "200m", "memory": "128Mi"},
                },
                "securityContext": SCANNED_CONTAINER_SECURITY_CONTEXT,
            }
        ],
    }


def identity_service_account(
    name: str,
    namespace: str,
    account: str,
    client_id: pulumi.Input[str],
    rules: list[k8s.rbac.v1.PolicyRuleArgsDict],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The service account a workload-identity program runs as (annotated with its identity's client ID), and a
    Role with `rules` in its namespace bound to it. Returns the three objects, for the program to wait for."""
    metadata: k8s.meta.v1.ObjectMetaArgsDict = {"name": account, "namespace": namespace}
    service_account = k8s.core.v1.ServiceAccount(
        name, metadata={**metadata, "annotations": {"azure.workload.identity/client-id": client_id}}, opts=opts
    )
    role = k8s.rbac.v1.Role(name, metadata=metadata, rules=rules, opts=opts)
    binding = k8s.rbac.v1.RoleBinding(
        name,
        metadata=metadata,
        role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "Role", "name": role.metadata["name"]},
        subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        opts=opts,
    )
    return [service_account, role, binding]
