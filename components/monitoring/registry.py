"""Container registry (ACR Premium) that serves the DCGM exporter image, private in prod."""

from typing import TypedDict

import pulumi
import pulumi_azure_native.containerregistry as containerregistry

from aks_gpu_platform.config.catalog.images import UPSTREAMS
from aks_gpu_platform.config.monitoring.section import RegistryConfig, derived_name

from ..network.private_endpoint import private_endpoint
from ..shared import roles
from ..shared.context import ClusterHandle
from ..shared.scan_exceptions import arm_scan_exception

REGISTRY = "azure-native:containerregistry:Registry"
arm_scan_exception(
    REGISTRY,
    "CKV_AZURE_166",
    "quarantine holds every image until a scanner marks it verified; this registry only caches NVIDIA's pinned "
    "DCGM exporter image through its cache rule, with no scanner in that path, so quarantine would block the "
    "nodes' pulls (Defender for Containers scans registry images instead)",
)
arm_scan_exception(
    REGISTRY,
    "CKV_AZURE_139",
    "monitoring.registry.publicNetworkAccess is true in this stack (dev: reachable without the private endpoint); "
    "prod sets it false and pulls through the private endpoint",
    when=lambda inputs: inputs.get("publicNetworkAccess") == "Enabled",
)
arm_scan_exception(
    REGISTRY,
    "CKV_AZURE_233",
    "monitoring.registry.zoneRedundancy is false in this stack (dev: a zone outage only delays a cached image "
    "pull); prod sets it true",
    when=lambda inputs: inputs.get("zoneRedundancy") == "Disabled",
)

PRIVATE_DNS_ZONE = "privatelink.azurecr.io"
DCGM_UPSTREAM = "nvcr.io/nvidia/k8s/dcgm-exporter"


def registry_name_of(settings: RegistryConfig, base_name: str) -> str:
    """The registry's Azure name: the configured one, else derived from the cluster name."""
    return derived_name(settings.name, "acr", base_name, 50, alphanumeric=True)


def login_server_of(settings: RegistryConfig, base_name: str) -> str:
    """`<name>.azurecr.io`, known before the registry exists: ACR's login server is its name in lower case under
    azurecr.io (the registry keeps the default, unscoped domain name label), so image references are plain text."""
    return f"{registry_name_of(settings, base_name).lower()}.azurecr.io"


class RegistryArgs(TypedDict):
    cluster: ClusterHandle
    """The cluster whose nodes pull from the registry (resource group, region, tags, protection)."""
    base_name: str
    """Name the registry's default name derives from (the cluster name)."""
    settings: RegistryConfig
    """The `monitoring.registry` config section."""
    kubelet_identity_object_id: pulumi.Input[str]
    """Principal the nodes pull images as; gets AcrPull on the registry."""
    private_endpoints_subnet_id: pulumi.Input[str]
    """Subnet of the private endpoint (used when public network access is off)."""
    vnet_id: pulumi.Input[str]
    """VNet the private DNS zone is linked to (used when public network access is off)."""


def _premium_registry(
    name: str, cfg: RegistryConfig, handle: ClusterHandle, registry_name: str, parent: pulumi.Resource
) -> containerregistry.Registry:
    """ACR Premium, admin user and anonymous pull off, public or not as configured."""
    return containerregistry.Registry(
        f"{name}-registry",
        resource_group_name=handle.resource_group_name,
        location=handle.location,
        registry_name=registry_name,
        sku={"name": containerregistry.SkuName.PREMIUM},
        admin_user_enabled=False,
        anonymous_pull_enabled=False,
        public_network_access=(
            containerregistry.PublicNetworkAccess.ENABLED
            if cfg.public_network_access
            else containerregistry.PublicNetworkAccess.DISABLED
        ),
        network_rule_bypass_options=containerregistry.NetworkRuleBypassOptions.AZURE_SERVICES,
        zone_redundancy=(
            containerregistry.ZoneRedundancy.ENABLED
            if cfg.zone_redundancy
            else containerregistry.ZoneRedundancy.DISABLED
        ),
        tags=dict(handle.tags),
        # The registry holds the cached images every node pulls; prod refuses to delete it.
        opts=pulumi.ResourceOptions(parent=parent, protect=handle.protect),
    )


class Registry(pulumi.ComponentResource):
    """ACR Premium, admin user and anonymous pull off, AcrPull for the kubelet, DCGM image cached from nvcr.io."""

    registry_id: pulumi.Output[str]
    """Azure resource ID of the registry."""
    login_server: pulumi.Output[str]
    """`<name>.azurecr.io`: the host of every image the nodes pull from here."""
    dcgm_exporter_repository: pulumi.Output[str]
    """`<login server>/<cache repository>`: the DCGM exporter image repository (tag from config)."""
    private_endpoint_id: pulumi.Output[str] | None
    """Private endpoint of the registry, or None when it is public."""

    def __init__(self, name: str, args: RegistryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:Registry", name, None, opts)
        cfg, handle = args["settings"], args["cluster"]
        registry_name = registry_name_of(cfg, args["base_name"])
        self.registry = _premium_registry(name, cfg, handle, registry_name, self)
        self.registry_id = self.registry.id
        self.login_server = self.registry.login_server
        self._cache_rules(name, cfg, handle)
        self.acr_pull = roles.assign_role(
            f"{name}-kubelet-acr-pull",
            role_guid=roles.ACR_PULL,
            principal_id=args["kubelet_identity_object_id"],
            scope=self.registry.id,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Built from the cache rule and the AcrPull grant, so whatever pulls the image (the exporter
        # release) waits for both instead of starting in ImagePullBackOff.
        self.dcgm_exporter_repository = pulumi.Output.all(
            self.registry.login_server, self.cache_rule.target_repository, self.acr_pull.id
        ).apply(lambda parts: f"{parts[0]}/{parts[1]}")

        self.pulls_ready: list[pulumi.Resource] = [self.acr_pull, *self.upstream_cache_rules]
        """What a pod pulling through the registry waits for: the kubelet's AcrPull and the cache rules."""
        self.private_endpoint_id = None
        if not cfg.public_network_access:
            self._private_endpoint(name, args, registry_name)
        self.register_outputs(
            {
                "registry_id": self.registry_id,
                "login_server": self.login_server,
                "dcgm_exporter_repository": self.dcgm_exporter_repository,
            }
        )

    def _cache_rules(self, name: str, cfg: RegistryConfig, handle: ClusterHandle) -> None:
        """The DCGM exporter's cache rule, and one wildcard rule per other upstream registry."""
        child = pulumi.ResourceOptions(parent=self)
        # ACR's artifact cache pulls the image from NVIDIA on first use: no manual push step to forget.
        self.cache_rule = containerregistry.CacheRule(
            f"{name}-dcgm-cache",
            resource_group_name=handle.resource_group_name,
            registry_name=self.registry.name,
            cache_rule_name="nvidia-dcgm-exporter",
            source_repository=DCGM_UPSTREAM,
            target_repository=cfg.dcgm_cache_repository,
            opts=child,
        )
        # Every other image: one wildcard rule per upstream registry (`<host>/*` in the registry caches `<host>/*`).
        self.upstream_cache_rules = [
            containerregistry.CacheRule(
                f"{name}-cache-{upstream.rule_name}",
                resource_group_name=handle.resource_group_name,
                registry_name=self.registry.name,
                cache_rule_name=upstream.rule_name,
                source_repository=f"{upstream.host}/*",
                target_repository=f"{upstream.target}/*",
                opts=child,
            )
            for upstream in UPSTREAMS.values()
        ]

    def _private_endpoint(self, name: str, args: RegistryArgs, registry_name: str) -> None:
        """The registry's endpoint in the private-endpoints subnet; pulls wait for it and its DNS."""
        handle = args["cluster"]
        link = private_endpoint(
            name,
            parent=self,
            resource_group_name=handle.resource_group_name,
            location=handle.location,
            target_id=self.registry.id,
            target_name=self.registry.name,
            group_id="registry",
            dns_zone=PRIVATE_DNS_ZONE,
            subnet_id=args["private_endpoints_subnet_id"],
            vnet_id=args["vnet_id"],
            vnet_link_name=f"{registry_name}-vnet",
            tags=dict(handle.tags),
        )
        self.private_endpoint_id = link.endpoint.id
        self.pulls_ready += link.ready
