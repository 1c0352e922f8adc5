"""Egress of the serving namespaces: what the model servers, their endpoint pickers and the gateway may connect to,
and nothing else (NetworkPolicy as Cilium enforces it, components/network/policies.py).

Every pod of the models and gateway namespaces: cluster DNS only. On top of that, by role:
- weights staging Jobs: HTTPS to public addresses, for the weights download from the Hugging Face Hub (huggingface.co
  and the CDN it redirects to). The model servers load the staged copy with the Hub offline and reach nothing
  outside the cluster. The cluster runs Cilium without Advanced Container Networking Services, so no
  FQDN policy exists and a Kubernetes NetworkPolicy cannot name a host: the rule is TCP 443 to the internet with
  IMDS (169.254.169.254: its token endpoint hands out the node identity's token), the WireServer (168.63.129.16),
  link-local and the private ranges (the VNet, private endpoints, file servers) taken out. A multi-node model's
  group also reaches its own pods (NCCL, torch.distributed) on any port.
- endpoint pickers: the model servers' port (metrics and load; with precise routing also the tokenisation of each
  prompt, and the servers' KV-cache event port), and HTTPS to public addresses: the AKS API server (the picker
  watches pods and its InferencePool) is a public address outside the cluster.
- gateway pods: istiod's xDS/CA port, and the models namespace's servers and pickers.
The Prometheus scrape (ama-metrics in kube-system) and kubelet probes are ingress and stay admitted by the
namespaces' ingress policies; nothing here needs to call them.

vLLM 0.34.0 reports usage to stats.vllm.ai unless VLLM_NO_USAGE_STATS=1, VLLM_DO_NOT_TRACK=1 or DO_NOT_TRACK=1
(vllm/usage/usage_lib.py is_usage_stats_enabled, vllm/envs.py): every server container sets both switches, so it
stays off even if the egress rule ever admits the stats host.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import pulumi
import pulumi_kubernetes as k8s

from ..network.policies import NAMESPACE_NAME_LABEL, dns_egress, internet_https_egress

USAGE_STATS_OFF: list[dict[str, str]] = [
    {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
    {"name": "DO_NOT_TRACK", "value": "1"},
]
SERVER_LABELS = {"app.kubernetes.io/name": "vllm"}
"""What every model server pod carries (a model's own pods add their instance label)."""
WEIGHTS_STAGE_LABELS = {"app.kubernetes.io/name": "weights-stage"}
"""What every weights staging pod carries (with its model's instance label): the only pods that download."""
ISTIO_NAMESPACE_LABELS = {NAMESPACE_NAME_LABEL: "istio-system"}
ISTIOD_LABELS = {"app": "istiod"}  # manifests/charts/istio-control/istio-discovery templates/deployment.yaml
ISTIOD_XDS_PORT = 15012
"""istiod's xDS and certificate port, what a gateway proxy dials (Istio's ports-used-by-istio reference)."""


class ModelPods(NamedTuple):
    """How a model's pods are selected."""

    servers: Mapping[str, str]
    picker: Mapping[str, str]
    multi_node: bool
    kv_events_port: int | None = None
    """Where the servers publish KV-cache events to the picker (precise routing), or None."""


def dns_only() -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """Every pod of the namespace under an egress policy whose only rule is DNS: what no other rule adds is denied."""
    return {"pod_selector": {}, "policy_types": ["Egress"], "egress": [dns_egress()]}


def weights_stage_egress() -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """The weights staging Jobs: the weights source (HTTPS on the internet). The servers themselves load the staged
    copy with the Hub offline (HF_HUB_OFFLINE), so they reach nothing outside the cluster."""
    return {
        "pod_selector": {"match_labels": WEIGHTS_STAGE_LABELS},
        "policy_types": ["Egress"],
        "egress": [internet_https_egress()],
    }


def group_egress(servers: Mapping[str, str]) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """A multi-node model's pods reach each other (the leader's rendezvous, NCCL), any port."""
    return {
        "pod_selector": {"match_labels": dict(servers)},
        "policy_types": ["Egress"],
        "egress": [{"to": [{"pod_selector": {"match_labels": dict(servers)}}]}],
    }


def picker_egress(pods: ModelPods, server_port: int) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """A model's endpoint picker: its own model's servers (their API and, with precise routing, their KV-cache
    events), and the API server outside the cluster."""
    ports = [server_port, *([pods.kv_events_port] if pods.kv_events_port else [])]
    return {
        "pod_selector": {"match_labels": dict(pods.picker)},
        "policy_types": ["Egress"],
        "egress": [
            {
                "to": [{"pod_selector": {"match_labels": dict(pods.servers)}}],
                "ports": [{"protocol": "TCP", "port": port} for port in ports],
            },
            internet_https_egress(),
        ],
    }


def gateway_egress(
    gateway_pods: Mapping[str, str], models_namespace: str, backend_ports: Sequence[int]
) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """Gateway pods: istiod, and the model servers' and pickers' ports in the models namespace."""
    return {
        "pod_selector": {"match_labels": dict(gateway_pods)},
        "policy_types": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespace_selector": {"match_labels": ISTIO_NAMESPACE_LABELS},
                        "pod_selector": {"match_labels": ISTIOD_LABELS},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": ISTIOD_XDS_PORT}],
            },
            {
                "to": [{"namespace_selector": {"match_labels": {NAMESPACE_NAME_LABEL: models_namespace}}}],
                "ports": [{"protocol": "TCP", "port": port} for port in backend_ports],
            },
        ],
    }


def _policy(
    name: str,
    policy: str,
    namespace: pulumi.Input[str],
    spec: k8s.networking.v1.NetworkPolicySpecArgsDict,
    opts: pulumi.ResourceOptions,
) -> None:
    k8s.networking.v1.NetworkPolicy(name, metadata={"name": policy, "namespace": namespace}, spec=spec, opts=opts)


def models_egress(
    name: str, namespace: str, models: Mapping[str, ModelPods], server_port: int, opts: pulumi.ResourceOptions
) -> None:
    """The models namespace's egress policies."""
    _policy(f"{name}-egress-dns-only", "egress-dns-only", namespace, dns_only(), opts)
    _policy(f"{name}-egress-weights-stage", "egress-weights-stage", namespace, weights_stage_egress(), opts)
    for model, pods in models.items():
        _policy(
            f"{name}-egress-picker-{model}", f"egress-picker-{model}", namespace, picker_egress(pods, server_port), opts
        )
        if pods.multi_node:
            _policy(
                f"{name}-egress-group-{model}", f"egress-group-{model}", namespace, group_egress(pods.servers), opts
            )


def gateway_namespace_egress(
    name: str,
    namespace: str,
    gateway_pods: Mapping[str, str],
    models_namespace: str,
    backend_ports: Sequence[int],
    opts: pulumi.ResourceOptions,
) -> None:
    """The gateway namespace's egress policies."""
    _policy(f"{name}-egress-dns-only", "egress-dns-only", namespace, dns_only(), opts)
    spec = gateway_egress(gateway_pods, models_namespace, backend_ports)
    _policy(f"{name}-egress-gateway", "egress-gateway", namespace, spec, opts)
