"""Reachability: every connection the platform configures across a network boundary is admitted by its target,
from the address the source really leaves from.

Edges, from the recorded resources:
- the MultiKueue manager to each member's API server (the rotation CronJob's MEMBERS, which Kueue then dials);
- the CI runner to every cluster's API server (`pulumi up` creates in-cluster objects; tools/runner_access.py
  adds the runner's /32 to the stack file for the run, .github/workflows/deploy.yml);
- pods to each private endpoint in their VNet (the registry, the Lustre HSM storage account).

Target rules, AKS REST 2025-09-01 (managedClusters.json, azure-rest-api-specs 1041da1a5), the version azure-native
3.29 sends: ManagedClusterAPIServerAccessProfile.enablePrivateCluster puts the API server behind a private endpoint
(reachable only through the cluster's VNet, peering and its private DNS zone: not modelled, so refused);
authorizedIPRanges admits only sources inside a listed CIDR. A cluster's egress is the load balancer's
`loadBalancerProfile.outboundIPs` when given; otherwise an address AKS allocates (an AKS-managed IP) that no
authorized range written before the cluster can name (articles/aks/api-server-authorized-ip-ranges.md: AKS adds
that IP to the cluster's *own* ranges only). A brought outbound IP serves the cluster's Standard load balancer only
as a Standard SKU, static IPv4 address ("Matching SKUs are required for load balancer and public IP resources",
articles/load-balancer/skus.md; AKS's outbound rules are IPv4 unless the cluster is dual-stack): anything else is
no egress at all. A private endpoint is reached by name only through a private DNS zone
group on the endpoint whose zone is linked to the source's VNet (articles/private-link/private-endpoint-dns.md:
privatelink.azurecr.io, privatelink.blob.core.windows.net).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

import yaml

from aks_gpu_platform.testing import Recording, kubernetes_object

CLUSTER = "azure-native:containerservice:ManagedCluster"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
SUBNET = "azure-native:network:Subnet"
VNET = "azure-native:network:VirtualNetwork"
ENDPOINT = "azure-native:network:PrivateEndpoint"
ZONE_GROUP = "azure-native:network:PrivateDnsZoneGroup"
ZONE = "azure-native:privatedns:PrivateZone"
ZONE_LINK = "azure-native:privatedns:VirtualNetworkLink"
CRONJOB = "kubernetes:batch/v1:CronJob"
MANAGED_EGRESS = "an AKS-managed outbound IP"
PRIVATE_ZONES = {"registry": "privatelink.azurecr.io", "blob": "privatelink.blob.core.windows.net"}


@dataclass(frozen=True)
class Edge:
    source: str
    egress: str
    """The source's public address, or MANAGED_EGRESS when AKS picks it."""
    target: str


def _unusable(ip: dict[str, Any]) -> str | None:
    """Why a public IP cannot be a Standard load balancer's outbound address, or None."""
    sku = (ip.get("sku") or {}).get("name")
    if sku != "Standard":
        return f"SKU {sku!r}, not Standard"
    if ip.get("publicIPAllocationMethod") not in (None, "Static"):
        return f"allocation {ip['publicIPAllocationMethod']!r}, not Static"
    if ip.get("publicIPAddressVersion") not in (None, "IPv4"):
        return f"version {ip['publicIPAddressVersion']!r}, not IPv4"
    return None


def egress_of(recording: Recording, cluster: dict[str, Any]) -> str:
    """The address a cluster's traffic leaves from: its load balancer's outbound public IP."""
    profile = (cluster.get("networkProfile") or {}).get("loadBalancerProfile") or {}
    ids = [ip["id"] for ip in (profile.get("outboundIPs") or {}).get("publicIPs") or []]
    ips = {str(ip.outputs.get("id")): ip for ip in recording.of_type(PUBLIC_IP)}
    found = [ips[i] for i in ids if i in ips]
    if not found:
        return MANAGED_EGRESS
    why = _unusable(found[0].inputs)
    if why:
        return f"an outbound IP the load balancer cannot use ({why})"
    return str(found[0].outputs.get("ipAddress") or "") or MANAGED_EGRESS


def admits(cluster: dict[str, Any], address: str) -> str | None:
    """None when the API server admits `address`, else why not."""
    access = cluster.get("apiServerAccessProfile") or {}
    if access.get("enablePrivateCluster"):
        return "the API server is private (no peering or private DNS to it is built)"
    ranges = access.get("authorizedIPRanges") or []
    if not ranges:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"the source leaves from {address}, which none of {ranges} can name"
    if any(ip in ipaddress.ip_network(r, strict=False) for r in ranges):
        return None
    return f"{address} is in none of {ranges}"


def _clusters(recording: Recording) -> dict[str, dict[str, Any]]:
    return {
        str(c.outputs.get("fqdn")): {**c.inputs, "_name": c.inputs["resourceName"]} for c in recording.of_type(CLUSTER)
    }


def manager_edges(recording: Recording) -> list[Edge]:
    """The servers the manager dials: named by the rotation CronJob's MEMBERS, or by a kubeconfig in a Secret of
    the manager (MultiKueue's clusters), from the cluster the object lives on."""
    edges: list[Edge] = []
    clusters = {c.urn: c.inputs for c in recording.of_type(CLUSTER)}
    providers = {p.urn: p for p in recording.resources if p.type == "pulumi:providers:kubernetes"}
    for secret in recording.of_type("kubernetes:core/v1:Secret"):
        text = (secret.inputs.get("stringData") or {}).get("kubeconfig")
        if not isinstance(text, str) or not text.strip():
            continue
        source = _cluster_of(secret.provider, providers, clusters, recording)
        for entry in (yaml.safe_load(text) or {}).get("clusters") or []:
            host = str(entry["cluster"]["server"]).removeprefix("https://").split(":", 1)[0]
            edges.append(Edge(source["resourceName"], egress_of(recording, source), host))
    for job in recording.of_type(CRONJOB):
        manifest = kubernetes_object(job)
        pod = manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for c in pod["containers"] for e in c.get("env", [])}
        if "MEMBERS" not in env:
            continue
        source = _cluster_of(job.provider, providers, clusters, recording)
        for member in json.loads(env["MEMBERS"]):
            host = member["server"].removeprefix("https://").split(":", 1)[0]
            edges.append(Edge(source["resourceName"], egress_of(recording, source), host))
    return edges


def _cluster_of(provider_ref: str, providers: dict[str, Any], clusters: dict[str, Any], recording: Recording) -> Any:
    """The cluster a Kubernetes provider talks to: its kubeconfig names the cluster's FQDN."""
    provider = providers[provider_ref.rsplit("::", 1)[0]]
    kubeconfig = str(provider.inputs.get("kubeconfig", ""))
    for cluster in recording.of_type(CLUSTER):
        if str(cluster.outputs.get("fqdn")) in kubeconfig:
            return cluster.inputs
    raise AssertionError(f"no cluster behind provider {provider.urn}")


def api_server_problems(recording: Recording, runner: str | None = None) -> list[str]:
    """Every manager->member edge, and the runner (when given) to every cluster, admitted by the target."""
    clusters = _clusters(recording)
    problems: list[str] = []
    for edge in manager_edges(recording):
        target = clusters.get(edge.target)
        if target is None:
            problems.append(f"{edge.source} -> {edge.target}: no cluster of the stack has that API server")
            continue
        why = admits(target, edge.egress)
        if why:
            problems.append(f"{edge.source} -> {target['_name']}: MultiKueue cannot connect: {why}")
    if runner is not None:
        for cluster in clusters.values():
            why = admits(cluster, runner)
            if why:
                problems.append(f"CI runner {runner} -> {cluster['_name']}: `pulumi up` cannot reach it: {why}")
    return problems


def private_endpoint_problems(recording: Recording) -> list[str]:
    """Each private endpoint: in the cluster's VNet, with a DNS zone group whose zone is linked to that VNet."""
    subnets = {str(s.outputs.get("id")): s.inputs for s in recording.of_type(SUBNET)}
    vnet_ids = {str(v.inputs.get("virtualNetworkName")): str(v.outputs.get("id")) for v in recording.of_type(VNET)}
    zones = {str(z.outputs.get("id")): z.inputs["privateZoneName"] for z in recording.of_type(ZONE)}
    links = {
        (link.inputs["privateZoneName"], str(link.inputs["virtualNetwork"]["id"]).lower())
        for link in recording.of_type(ZONE_LINK)
    }
    groups = {str(g.inputs.get("privateEndpointName")): g.inputs for g in recording.of_type(ZONE_GROUP)}
    problems: list[str] = []
    for endpoint in recording.of_type(ENDPOINT):
        subnet = subnets.get(str(endpoint.inputs["subnet"]["id"]))
        vnet = vnet_ids.get(str((subnet or {}).get("virtualNetworkName")), "")
        for connection in endpoint.inputs.get("privateLinkServiceConnections", []):
            for group_id in connection.get("groupIds", []):
                zone = PRIVATE_ZONES.get(group_id)
                group = groups.get(str(endpoint.inputs.get("privateEndpointName")))
                configured = {zones.get(c["privateDnsZoneId"]) for c in (group or {}).get("privateDnsZoneConfigs", [])}
                if zone not in configured:
                    problems.append(f"{endpoint.name}: no DNS zone group for {zone}: pods resolve the public address")
                elif vnet and (zone, vnet.lower()) not in links:
                    problems.append(f"{endpoint.name}: {zone} is not linked to the pods' VNet {vnet}")
    return problems


def private_endpoint_addresses(recording: Recording) -> dict[str, str]:
    """Each private endpoint -> an address it can hold (the first Azure leaves to hosts in its subnet: .4), so a
    network policy model can ask whether pods may connect there."""
    prefixes = {str(s.outputs.get("id")): str(s.inputs.get("addressPrefix")) for s in recording.of_type(SUBNET)}
    found: dict[str, str] = {}
    for endpoint in recording.of_type(ENDPOINT):
        prefix = prefixes.get(str(endpoint.inputs["subnet"]["id"]))
        if prefix and prefix != "None":
            found[endpoint.name] = str(ipaddress.ip_network(prefix)[4])
    return found
