"""The platform's resource group: created, or an existing one adopted."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_azure_native.resources as resources

from aks_gpu_platform.config.platform import ResourceGroupConfig


def platform_resource_group(
    name: str,
    settings: ResourceGroupConfig,
    location: str,
    tags: Mapping[str, str],
    protect: bool = False,
    opts: pulumi.ResourceOptions | None = None,
) -> pulumi.Output[str]:
    """Name of the group every component deploys into."""
    if settings.existing:
        # The lookup fails at preview time if the group is missing, before anything is created.
        return resources.get_resource_group_output(resource_group_name=settings.name).name
    group = resources.ResourceGroup(
        name,
        resource_group_name=settings.name,
        location=location,
        tags=dict(tags),
        # Deleting the group deletes everything in it, data included.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect)),
    )
    return group.name
