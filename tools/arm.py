"""Export a plan's Azure resources as an ARM template, so checkov's ARM checks scan them.

    python -m tools.arm --stack prod > out/prod/azure.json

Each recorded `azure-native:<module>:<Kind>` resource becomes one ARM resource: its ARM type
(`ARM_TYPES`, from the Azure REST API specifications), the API version the installed SDK calls
(read from the resource class's "Uses Azure REST API version" line), its name (child resources
`parent/child` as ARM wants), the top-level fields ARM keeps outside `properties` (location, tags,
sku, identity, zones, kind) and every other input under `properties`. Path parameters (resource
group, names) are not properties and are dropped.

Checks a resource fails on purpose are declared next to it in the component with
`components.scan_exceptions.arm_scan_exception`; they reach the template as checkov's own skip
syntax (`metadata.checkov: ["CKV_AZURE_n: reason"]`), so the scan reports them as skipped with
the reason and fails on anything else.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import re
import sys
from functools import cache
from typing import Any

from aks_gpu_platform import components
from aks_gpu_platform.components.shared.scan_exceptions import arm_scan_exceptions
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording

# azure-native type token -> (ARM resource type, the path parameters naming it, parent first).
# Types and names from the Azure REST API specifications (azure-rest-api-specs, specification/*/resource-manager).
ARM_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "azure-native:alertsmanagement:PrometheusRuleGroup": (
        "Microsoft.AlertsManagement/prometheusRuleGroups",
        ("ruleGroupName",),
    ),
    "azure-native:authorization:PolicyAssignment": (
        "Microsoft.Authorization/policyAssignments",
        ("policyAssignmentName",),
    ),
    "azure-native:authorization:RoleAssignment": ("Microsoft.Authorization/roleAssignments", ("roleAssignmentName",)),
    "azure-native:containerregistry:CacheRule": (
        "Microsoft.ContainerRegistry/registries/cacheRules",
        ("registryName", "cacheRuleName"),
    ),
    "azure-native:containerregistry:Registry": ("Microsoft.ContainerRegistry/registries", ("registryName",)),
    "azure-native:containerservice:AgentPool": (
        "Microsoft.ContainerService/managedClusters/agentPools",
        ("resourceName", "agentPoolName"),
    ),
    "azure-native:containerservice:MaintenanceConfiguration": (
        "Microsoft.ContainerService/managedClusters/maintenanceConfigurations",
        ("resourceName", "configName"),
    ),
    "azure-native:containerservice:ManagedCluster": ("Microsoft.ContainerService/managedClusters", ("resourceName",)),
    "azure-native:dashboard:Grafana": ("Microsoft.Dashboard/grafana", ("workspaceName",)),
    "azure-native:managedidentity:FederatedIdentityCredential": (
        "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
        ("resourceName", "federatedIdentityCredentialResourceName"),
    ),
    "azure-native:managedidentity:UserAssignedIdentity": (
        "Microsoft.ManagedIdentity/userAssignedIdentities",
        ("resourceName",),
    ),
    "azure-native:monitor:ActionGroup": ("Microsoft.Insights/actionGroups", ("actionGroupName",)),
    "azure-native:monitor:AzureMonitorWorkspace": ("Microsoft.Monitor/accounts", ("azureMonitorWorkspaceName",)),
    "azure-native:monitor:DataCollectionEndpoint": (
        "Microsoft.Insights/dataCollectionEndpoints",
        ("dataCollectionEndpointName",),
    ),
    "azure-native:monitor:DataCollectionRule": ("Microsoft.Insights/dataCollectionRules", ("dataCollectionRuleName",)),
    "azure-native:monitor:DataCollectionRuleAssociation": (
        "Microsoft.Insights/dataCollectionRuleAssociations",
        ("associationName",),
    ),
    "azure-native:network:PrivateDnsZoneGroup": (
        "Microsoft.Network/privateEndpoints/privateDnsZoneGroups",
        ("privateEndpointName", "privateDnsZoneGroupName"),
    ),
    "azure-native:network:PrivateEndpoint": ("Microsoft.Network/privateEndpoints", ("privateEndpointName",)),
    "azure-native:network:Subnet": ("Microsoft.Network/virtualNetworks/subnets", ("virtualNetworkName", "subnetName")),
    "azure-native:network:VirtualNetwork": ("Microsoft.Network/virtualNetworks", ("virtualNetworkName",)),
    "azure-native:operationalinsights:Workspace": ("Microsoft.OperationalInsights/workspaces", ("workspaceName",)),
    "azure-native:privatedns:PrivateZone": ("Microsoft.Network/privateDnsZones", ("privateZoneName",)),
    "azure-native:privatedns:VirtualNetworkLink": (
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        ("privateZoneName", "virtualNetworkLinkName"),
    ),
    "azure-native:resources:ResourceGroup": ("Microsoft.Resources/resourceGroups", ("resourceGroupName",)),
    "azure-native:storage:BlobContainer": (
        "Microsoft.Storage/storageAccounts/blobServices/containers",
        ("accountName", "blobServicesName", "containerName"),
    ),
    "azure-native:storage:BlobServiceProperties": (
        "Microsoft.Storage/storageAccounts/blobServices",
        ("accountName", "blobServicesName"),
    ),
    "azure-native:storage:StorageAccount": ("Microsoft.Storage/storageAccounts", ("accountName",)),
    "azure-native:storagecache:AmlFilesystem": ("Microsoft.StorageCache/amlFilesystems", ("amlFilesystemName",)),
    "azure-native:storagecache:AutoExportJob": (
        "Microsoft.StorageCache/amlFilesystems/autoExportJobs",
        ("amlFilesystemName", "autoExportJobName"),
    ),
}
# Fields an ARM resource carries beside `properties` (ARM template resource schema).
TOP_LEVEL = ("location", "tags", "sku", "identity", "zones", "kind", "extendedLocation", "plan")
# azure-native input names that differ from the ARM wire names (the spec's x-ms-client-name), per type.
# Microsoft.Storage storage.json: `networkAcls` is NetworkRuleSet, `supportsHttpsTrafficOnly` EnableHttpsTrafficOnly.
RENAMED: dict[str, dict[str, str]] = {
    "azure-native:storage:StorageAccount": {
        "networkRuleSet": "networkAcls",
        "enableHttpsTrafficOnly": "supportsHttpsTrafficOnly",
    },
}
# Segments whose ARM default name azure-native fills in when the input is absent.
DEFAULT_NAMES = {"blobServicesName": "default"}
API_VERSION = re.compile(r"Uses Azure REST API version (\d{4}-\d{2}-\d{2}(?:-preview)?)")


class UnmappedTypeError(KeyError):
    """An azure-native type with no ARM mapping: its checks would silently not run."""


@cache
def api_version(type_token: str) -> str:
    """The REST API version the installed pulumi-azure-native calls for this resource type."""
    _, module, kind = type_token.split(":")
    cls = getattr(importlib.import_module(f"pulumi_azure_native.{module}"), kind)
    match = API_VERSION.search(inspect.getsource(cls))
    if match is None:
        raise ValueError(f"{type_token}: no 'Uses Azure REST API version' in {inspect.getsourcefile(cls)}")
    return match.group(1)


def _identity(identity: dict[str, Any]) -> dict[str, Any]:
    # azure-native takes user-assigned identities as a list of IDs; ARM keys them by ID.
    assigned = identity.get("userAssignedIdentities")
    if isinstance(assigned, list):
        return {**identity, "userAssignedIdentities": {str(i): {} for i in assigned}}
    return identity


def arm_resource(resource: RecordedResource) -> dict[str, Any]:
    if resource.type not in ARM_TYPES:
        raise UnmappedTypeError(f"{resource.type} has no ARM type in tools/arm.py ARM_TYPES")
    arm_type, name_params = ARM_TYPES[resource.type]
    inputs = dict(resource.inputs)
    segments = [str(inputs.get(p) or DEFAULT_NAMES.get(p) or resource.name) for p in name_params]
    dropped = {*name_params, "resourceGroupName"}
    arm: dict[str, Any] = {
        "type": arm_type,
        "apiVersion": api_version(resource.type),
        "name": "/".join(segments),
    }
    for key in TOP_LEVEL:
        if key in inputs:
            arm[key] = _identity(inputs[key]) if key == "identity" else inputs[key]
    renamed = RENAMED.get(resource.type, {})
    properties = {
        renamed.get(k, k): v for k, v in inputs.items() if k not in dropped and k not in TOP_LEVEL and k != "properties"
    }
    properties.update(inputs.get("properties") or {})  # resources whose SDK keeps ARM's `properties` nesting
    arm["properties"] = properties
    reasons = arm_scan_exceptions(resource.type, resource.inputs)
    if reasons:
        arm["metadata"] = {"checkov": [f"{check}: {reason}" for check, reason in sorted(reasons.items())]}
    return arm


def azure_resources(recording: Recording) -> list[RecordedResource]:
    return [r for r in recording.resources if r.custom and r.type.startswith("azure-native:")]


def _declare_exceptions() -> None:
    # Exceptions are declared where each component module is imported; a template must see all of them.
    for module in pkgutil.walk_packages(components.__path__, f"{components.__name__}."):
        importlib.import_module(module.name)


def arm_template(recording: Recording) -> dict[str, Any]:
    """A deployment template holding every planned Azure resource."""
    _declare_exceptions()
    return {
        "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
        "contentVersion": "1.0.0.0",
        "resources": [arm_resource(r) for r in azure_resources(recording)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    options = parser.parse_args(argv)
    print(json.dumps(arm_template(run_stack(options.stack)), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
