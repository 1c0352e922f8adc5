"""What in-cluster and Azure children need from the cluster, passed as one handle."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class ClusterHandle:
    """The cluster and where it lives: handed to every component that builds on it."""

    resource_group_name: pulumi.Input[str]
    """Resource group of the platform."""
    location: str
    """Azure region."""
    tags: Mapping[str, str]
    """Tags every Azure resource carries."""
    cluster: containerservice.ManagedCluster
    """The ManagedCluster; in-cluster objects are deleted with it."""
    cluster_name: pulumi.Output[str]
    """The cluster's Azure name."""
    cluster_id: pulumi.Output[str]
    """The cluster's Azure resource ID (rules, associations and alerts attach to it)."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    oidc_issuer_url: pulumi.Output[str]
    """The cluster's OIDC issuer (workload identity federation)."""
    protect: bool
    """Protect stateful resources (prod)."""
    image_pulls: Sequence[pulumi.Resource] = ()
    """What an in-cluster object waits for so its pods can pull through the platform's registry (the kubelet's
    AcrPull, the cache rules, the private endpoint); empty before the registry exists."""

    def k8s_options(self, parent: pulumi.Resource | None = None) -> pulumi.ResourceOptions:
        """Options for an in-cluster object: the cluster's provider, deleted with the cluster; under `parent`
        when given (a component's child), at the top of the stack otherwise."""
        return pulumi.ResourceOptions(
            parent=parent, provider=self.provider, deleted_with=self.cluster, depends_on=list(self.image_pulls) or None
        )
