"""Where each azure-native resource this project registers sits in Azure Resource Manager.

The path parameters of a resource type are the names in its ARM ID, in order
(`/subscriptions/{sub}/resourceGroups/{resourceGroupName}/providers/Microsoft.ContainerService/
managedClusters/{resourceName}/agentPools/{agentPoolName}`); the last one is the resource's own
name. azure-native replaces a resource when any of them changes (pulumi/pulumi-azure-native
provider/pkg/provider/diff.go, calculateDetailedDiff). Parameter names are the SDK's input names,
as the recorded inputs carry them; tests check every registered azure-native type is listed.
"""

from __future__ import annotations

# Path parameters of each azure-native resource this project registers, in ARM ID order: the last
# one is the resource's own name. A change to any of them is a different Azure resource.
AZURE_PATH_PARAMETERS: dict[str, tuple[str, ...]] = {
    "azure-native:alertsmanagement:PrometheusRuleGroup": ("resourceGroupName", "ruleGroupName"),
    "azure-native:authorization:PolicyAssignment": ("scope", "policyAssignmentName"),
    "azure-native:authorization:RoleAssignment": ("scope", "roleAssignmentName"),
    "azure-native:containerregistry:CacheRule": ("resourceGroupName", "registryName", "cacheRuleName"),
    "azure-native:containerregistry:Registry": ("resourceGroupName", "registryName"),
    "azure-native:containerservice:AgentPool": ("resourceGroupName", "resourceName", "agentPoolName"),
    "azure-native:containerservice:MaintenanceConfiguration": ("resourceGroupName", "resourceName", "configName"),
    "azure-native:containerservice:ManagedCluster": ("resourceGroupName", "resourceName"),
    "azure-native:dashboard:Grafana": ("resourceGroupName", "workspaceName"),
    "azure-native:managedidentity:FederatedIdentityCredential": (
        "resourceGroupName",
        "resourceName",
        "federatedIdentityCredentialResourceName",
    ),
    "azure-native:managedidentity:UserAssignedIdentity": ("resourceGroupName", "resourceName"),
    "azure-native:monitor:ActionGroup": ("resourceGroupName", "actionGroupName"),
    "azure-native:monitor:AzureMonitorWorkspace": ("resourceGroupName", "azureMonitorWorkspaceName"),
    "azure-native:monitor:DataCollectionEndpoint": ("resourceGroupName", "dataCollectionEndpointName"),
    "azure-native:monitor:DataCollectionRule": ("resourceGroupName", "dataCollectionRuleName"),
    "azure-native:monitor:DataCollectionRuleAssociation": ("resourceUri", "associationName"),
    "azure-native:network:PrivateDnsZoneGroup": ("resourceGroupName", "privateEndpointName", "privateDnsZoneGroupName"),
    "azure-native:network:PrivateEndpoint": ("resourceGroupName", "privateEndpointName"),
    "azure-native:network:Subnet": ("resourceGroupName", "virtualNetworkName", "subnetName"),
    "azure-native:network:VirtualNetwork": ("resourceGroupName", "virtualNetworkName"),
    "azure-native:operationalinsights:Workspace": ("resourceGroupName", "workspaceName"),
    "azure-native:privatedns:PrivateZone": ("resourceGroupName", "privateZoneName"),
    "azure-native:privatedns:VirtualNetworkLink": ("resourceGroupName", "privateZoneName", "virtualNetworkLinkName"),
    "azure-native:resources:ResourceGroup": ("resourceGroupName",),
    "azure-native:storage:BlobContainer": ("resourceGroupName", "accountName", "containerName"),
    "azure-native:storage:BlobServiceProperties": ("resourceGroupName", "accountName", "blobServicesName"),
    "azure-native:storage:StorageAccount": ("resourceGroupName", "accountName"),
    "azure-native:storagecache:AmlFilesystem": ("resourceGroupName", "amlFilesystemName"),
    "azure-native:storagecache:AutoExportJob": ("resourceGroupName", "amlFilesystemName", "autoExportJobName"),
}


def own_name_input(type_token: str) -> str | None:
    """The input that names the resource itself (e.g. `agentPoolName`), or None for an unlisted type."""
    params = AZURE_PATH_PARAMETERS.get(type_token)
    return params[-1] if params else None
