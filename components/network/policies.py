"""NetworkPolicies at the team and platform boundaries, as Cilium (the cluster's policy engine) enforces them.

The cluster runs Azure CNI powered by Cilium with `networkPolicy: cilium` (components/cluster/aks_cluster.py), so
Kubernetes NetworkPolicy is enforced by Cilium, whose semantics differ from the API's prose in one place that
matters here (cilium/cilium Documentation/security/policy/language.rst, "IP/CIDR based"): an `ipBlock` selects
only addresses outside the cluster. Pods and nodes (their IPs, host-network pods on them included) are selected by
identity, never by CIDR (unless the agent runs with `policy-cidr-match-mode: nodes`, which AKS does not set). So
`0.0.0.0/0` in an egress rule means "outside the cluster", and a pod under an egress policy reaches a node's ports
(kubelet, node exporter, AKS's host-network DCGM exporter) only through a rule that names the node, which none here
does.

Team namespaces, egress: their own pods (NCCL, rendezvous), cluster DNS, and anything outside the cluster except
the Azure Instance Metadata Service (its token endpoint hands a pod the kubelet identity's token: AcrPull on the
registry) and the WireServer (168.63.129.16: the VM's goal state and extension settings; team pods resolve names
through CoreDNS, which is in kube-system, so they never need it). Nothing in another namespace: the DCGM exporter
(it lists every team's pods on its node), Kueue, the GPU stack and other teams stay out of reach.

Platform namespaces, ingress: default deny, then their own pods and kube-system. kube-system holds what must
reach them: managed Prometheus (ama-metrics) scraping, and the konnectivity agents through which the AKS API
server calls webhooks (Kueue's, JobSet's) and aggregated APIs (the API server's calls arrive from those pods).
Kubelet probes come from the node itself, which Cilium always admits (`allow-localhost`).
"""

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

DNS_NAMESPACE = "kube-system"
DNS_POD_LABELS = {"k8s-app": "kube-dns"}  # CoreDNS on AKS
IMDS = "169.254.169.254/32"
WIRESERVER = "168.63.129.16/32"
OUTSIDE_THE_CLUSTER = "0.0.0.0/0"
LINK_LOCAL = "169.254.0.0/16"
# RFC 1918 and the shared range (RFC 6598): the VNet, peered networks and on-premises links, never the internet.
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
# Managed Prometheus (ama-metrics) and the konnectivity agents run there.
PLATFORM_CALLERS_NAMESPACE = "kube-system"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _namespace(name: str) -> k8s.meta.v1.LabelSelectorArgsDict:
    return {"match_labels": {NAMESPACE_NAME_LABEL: name}}


def team_egress(file_servers: Sequence[str] = ()) -> list[k8s.networking.v1.NetworkPolicyEgressRuleArgsDict]:
    """Where a team's pods may connect to: their namespace, DNS, and outside the cluster but for IMDS/WireServer
    and `file_servers`: subnets of file servers that admit clients by address (Managed Lustre, NetApp Files' NFS
    export to the node subnet). Pod traffic to the VNet leaves with its node's address (Azure CNI Overlay SNATs
    it), so a pod with a user-space client (libnfs, no mount) would reach every team's files there as any uid;
    the node's kernel mounts them for the claims, which no pod policy applies to."""
    return [
        {"to": [{"pod_selector": {}}]},
        dns_egress(),
        {"to": [{"ip_block": {"cidr": OUTSIDE_THE_CLUSTER, "except_": [IMDS, WIRESERVER, *file_servers]}}]},
    ]


def dns_egress() -> k8s.networking.v1.NetworkPolicyEgressRuleArgsDict:
    """CoreDNS in kube-system, UDP and TCP 53."""
    return {
        "to": [{"namespace_selector": _namespace(DNS_NAMESPACE), "pod_selector": {"match_labels": DNS_POD_LABELS}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }


def internet_https_egress() -> k8s.networking.v1.NetworkPolicyEgressRuleArgsDict:
    """TCP 443 to public addresses only: not IMDS or the WireServer (named even though the ranges below hold
    them), not link-local, not the private ranges (the VNet, its private endpoints and file servers). A
    Kubernetes NetworkPolicy cannot name a host (FQDN), so this is as close as it gets to one HTTPS service on
    the internet; Cilium matches an `ipBlock` only outside the cluster (module doc)."""
    blocked = [IMDS, WIRESERVER, LINK_LOCAL, *PRIVATE_RANGES]
    return {
        "to": [{"ip_block": {"cidr": OUTSIDE_THE_CLUSTER, "except_": blocked}}],
        "ports": [{"protocol": "TCP", "port": 443}],
    }


def platform_ingress(
    name: str,
    namespace: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    pods: k8s.meta.v1.LabelSelectorArgsDict | None = None,
) -> k8s.networking.v1.NetworkPolicy:
    """Default-deny ingress for a platform namespace, but for its own pods and kube-system (see the module doc).
    `pods`: the pods it covers, when some have a narrower ingress policy of their own (default: all)."""
    spec: k8s.networking.v1.NetworkPolicySpecArgsDict = {
        "pod_selector": pods or {},
        "policy_types": ["Ingress"],
        "ingress": [
            {"from_": [{"pod_selector": {}}]},
            {"from_": [{"namespace_selector": _namespace(PLATFORM_CALLERS_NAMESPACE)}]},
        ],
    }
    return k8s.networking.v1.NetworkPolicy(
        f"{name}-platform-ingress", metadata={"name": "platform-ingress", "namespace": namespace}, spec=spec, opts=opts
    )
