"""The inference gateway: Gateway API and InferencePool CRDs, Istio (istiod only, no sidecars) and one Gateway with a
listener per team that calls a model, each listener reachable from that team's namespace only.

Pins and what they follow (docs/charts.md, "Serving"):
- Gateway API standard channel v1.5.1, the version Istio 1.30.3 builds against (istio/istio go.mod at 1.30.3,
  commit 56df41f6), applied from its release asset.
- The InferencePool CRD of gateway-api-inference-extension v1.6.0 (commit 992e5c29,
  config/crd/bases/inference.networking.k8s.io_inferencepools.yaml), applied from the file at the tag; the fixture
  tests/fixtures/crds/inferencepools-v1.6.0.yaml is the same file.
- Istio 1.30.3 charts `base` and `istiod` (manifests/charts/base, manifests/charts/istio-control/istio-discovery at
  56df41f6): istiod's `env` is rendered into its container (templates/deployment.yaml), and
  ENABLE_GATEWAY_API_INFERENCE_EXTENSION (pilot/pkg/features/experimental.go, default false) makes it route to
  InferencePools. With Gateway API "automated deployment" istiod creates the gateway Deployment and its
  LoadBalancer Service from the Gateway (files/kube-gateway.yaml), labelled
  `gateway.networking.k8s.io/gateway-name: <gateway>`, and copies spec.infrastructure.annotations onto both.
"""

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored_repository
from aks_gpu_platform.config.gpu.scheduling import cpu_node_selector

from ..network.policies import NAMESPACE_NAME_LABEL
from ..shared.context import ClusterHandle
from ..shared.workloads import platform_namespace, pod_security_labels
from .egress import gateway_namespace_egress
from .gateway_identity import gateway_identity

GATEWAY_API_VERSION = "v1.5.1"
GATEWAY_API_CRDS_URL = (
    f"https://github.com/kubernetes-sigs/gateway-api/releases/download/{GATEWAY_API_VERSION}/standard-install.yaml"
)
INFERENCE_POOL_CRD_VERSION = "v1.6.0"
INFERENCE_POOL_CRD_URL = (
    "https://raw.githubusercontent.com/kubernetes-sigs/gateway-api-inference-extension/"
    f"{INFERENCE_POOL_CRD_VERSION}/config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"
)
ISTIO_CHART_REPO = "https://istio-release.storage.googleapis.com/charts"
ISTIO_VERSION = "1.30.3"
# Istio's own mirror of its images: Docker Hub (the charts' default hub) limits anonymous pulls.
ISTIO_HUB = "gcr.io/istio-release"
ISTIO_NAMESPACE = "istio-system"
GATEWAY_NAMESPACE = "inference-gateway"
GATEWAY_NAME = "inference-gateway"
GATEWAY_CLASS = "istio"
# files/kube-gateway.yaml at 1.30.3: the label on the gateway pods and the Service selector; the Service is
# `<gateway>-istio`.
GATEWAY_POD_LABEL = "gateway.networking.k8s.io/gateway-name"
GATEWAY_SERVICE = f"{GATEWAY_NAME}-istio"
INTERNAL_LB_ANNOTATION = "service.beta.kubernetes.io/azure-load-balancer-internal"
LISTENER_PORT_BASE = 8080
"""A team's listener port is this plus the team's index in `training.teams` (stable while teams are appended)."""


def team_listener(team: str) -> str:
    return f"team-{team}"


def team_ports(all_teams: Sequence[str], calling: Sequence[str]) -> dict[str, int]:
    """Listener port of each team that calls a model, by its place in `training.teams`."""
    return {team: LISTENER_PORT_BASE + all_teams.index(team) for team in all_teams if team in calling}


def gateway_spec(ports: Mapping[str, int], models_namespace: str, internal: bool) -> dict[str, object]:
    """One HTTP listener per team; only routes from the models namespace may attach."""
    routes = {"namespaces": {"from": "Selector", "selector": {"matchLabels": {NAMESPACE_NAME_LABEL: models_namespace}}}}
    spec: dict[str, object] = {
        "gatewayClassName": GATEWAY_CLASS,
        "listeners": [
            {"name": team_listener(team), "port": port, "protocol": "HTTP", "allowedRoutes": routes}
            for team, port in ports.items()
        ],
    }
    if internal:
        spec["infrastructure"] = {"annotations": {INTERNAL_LB_ANNOTATION: "true"}}
    return spec


def gateway_ingress(
    ports: Mapping[str, int], team_namespaces: Mapping[str, str]
) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """NetworkPolicy spec on the gateway pods: each team's namespace reaches its own listener port, nothing else.

    Cilium (kube-proxy replacement) resolves the gateway's LoadBalancer and cluster addresses to the gateway pods
    before policy applies, so a team pod calling either meets this policy with its own identity.
    """
    return {
        "pod_selector": {"match_labels": {GATEWAY_POD_LABEL: GATEWAY_NAME}},
        "policy_types": ["Ingress"],
        "ingress": [
            {
                "from_": [{"namespace_selector": {"match_labels": {NAMESPACE_NAME_LABEL: team_namespaces[team]}}}],
                "ports": [{"protocol": "TCP", "port": port}],
            }
            for team, port in ports.items()
        ],
    }


def team_gateway_egress(port: int) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """NetworkPolicy spec in a team namespace adding the team's listener to what its pods may reach (policies add
    up: the team's own egress policy keeps everything else as it is)."""
    return {
        "pod_selector": {},
        "policy_types": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespace_selector": {"match_labels": {NAMESPACE_NAME_LABEL: GATEWAY_NAMESPACE}},
                        "pod_selector": {"match_labels": {GATEWAY_POD_LABEL: GATEWAY_NAME}},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": port}],
            }
        ],
    }


def istiod_values() -> dict[str, object]:
    """istiod chart values (flat: `pilot.` is istioctl's prefix only)."""
    runtime_default = {"type": "RuntimeDefault"}
    return {
        "global": {"hub": mirrored_repository(ISTIO_HUB), "tag": ISTIO_VERSION},
        "env": {"ENABLE_GATEWAY_API_INFERENCE_EXTENSION": "true"},
        "nodeSelector": cpu_node_selector(),
        # One replica on the small CPU pool; the HPA the chart adds by default would only grow it.
        "autoscaleEnabled": False,
        "replicaCount": 1,
        "seccompProfile": runtime_default,
        # The gateway pods istiod creates: RuntimeDefault makes them pass the restricted level (default `{}`).
        "gateways": {"seccompProfile": runtime_default},
    }


class InferenceGatewayArgs(TypedDict):
    cluster: ClusterHandle
    models_namespace: str
    """Where the model servers, their InferencePools and HTTPRoutes live."""
    team_ports: Mapping[str, int]
    """Listener port of each team that calls a model."""
    team_namespaces: Mapping[str, str]
    """Namespace of each of those teams."""
    internal: bool
    """Internal Azure load balancer (`inference.gatewayInternal`)."""
    created_namespaces: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Team -> its namespace's name as the resource that creates it outputs: the team's egress policy waits for it."""
    team_models: Mapping[str, Sequence[str]]
    """Team -> the models whose config lists it (what its callers policy lets through)."""
    backend_ports: Sequence[int]
    """The model servers' and pickers' ports in the models namespace (the gateway's egress)."""
    requests_per_minute: int
    """Each team's request budget per gateway pod (`inference.teamRequestsPerMinute`)."""


class InferenceGateway(pulumi.ComponentResource):
    """CRDs, Istio, the Gateway, and the policies that give each team its own listener."""

    crds: list[pulumi.Resource]
    """What an InferencePool or HTTPRoute waits for."""
    gateway: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:InferenceGateway", name, None, opts)
        self._in_cluster = args["cluster"].k8s_options(self)
        istiod = self._crds_and_istio(name)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": GATEWAY_NAMESPACE, "labels": pod_security_labels("restricted")},
            opts=self._in_cluster,
        )
        self.gateway = k8s.apiextensions.CustomResource(
            f"{name}-gateway",
            api_version="gateway.networking.k8s.io/v1",
            kind="Gateway",
            metadata={"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE},
            spec=gateway_spec(args["team_ports"], args["models_namespace"], args["internal"]),
            opts=self._after(namespace, istiod),
        )
        self._gateway_policies(name, args, namespace)
        self._team_identities(name, args, self._after(namespace, istiod))
        self._team_egress(name, args)
        self.register_outputs({})

    def _after(self, *resources: pulumi.Resource) -> pulumi.ResourceOptions:
        """In the cluster, after `resources`."""
        return pulumi.ResourceOptions.merge(self._in_cluster, pulumi.ResourceOptions(depends_on=list(resources)))

    def _crds_and_istio(self, name: str) -> k8s.helm.v3.Release:
        """The Gateway API and InferencePool CRDs, Istio's base chart and istiod; sets `crds`, returns istiod."""
        gateway_api = k8s.yaml.v2.ConfigFile(
            f"{name}-gateway-api-crds", file=GATEWAY_API_CRDS_URL, opts=self._in_cluster
        )
        pool_crd = k8s.yaml.v2.ConfigFile(
            f"{name}-inferencepool-crd", file=INFERENCE_POOL_CRD_URL, opts=self._in_cluster
        )
        istio_namespace = platform_namespace(f"{name}-istio-namespace", ISTIO_NAMESPACE, "baseline", self._in_cluster)
        base = k8s.helm.v3.Release(
            f"{name}-istio-base",
            name="istio-base",
            chart="base",
            version=ISTIO_VERSION,
            repository_opts={"repo": ISTIO_CHART_REPO},
            namespace=ISTIO_NAMESPACE,
            values={"defaultRevision": "default"},
            opts=self._after(istio_namespace),
        )
        # istiod watches the Gateway API and InferencePool kinds it finds at start.
        istiod = k8s.helm.v3.Release(
            f"{name}-istiod",
            name="istiod",
            chart="istiod",
            version=ISTIO_VERSION,
            repository_opts={"repo": ISTIO_CHART_REPO},
            namespace=ISTIO_NAMESPACE,
            values=istiod_values(),
            opts=self._after(base, gateway_api, pool_crd),
        )
        self.crds = [gateway_api, pool_crd, istiod]
        return istiod

    def _gateway_policies(self, name: str, args: InferenceGatewayArgs, namespace: k8s.core.v1.Namespace) -> None:
        """In the gateway namespace: each team reaches its own listener; the gateway reaches the models' backends."""
        k8s.networking.v1.NetworkPolicy(
            f"{name}-team-listeners",
            metadata={"name": "team-listeners", "namespace": GATEWAY_NAMESPACE},
            spec=gateway_ingress(args["team_ports"], args["team_namespaces"]),
            opts=self._after(namespace),
        )
        gateway_namespace_egress(
            name,
            GATEWAY_NAMESPACE,
            {GATEWAY_POD_LABEL: GATEWAY_NAME},
            args["models_namespace"],
            args["backend_ports"],
            self._after(namespace),
        )

    def _team_identities(self, name: str, args: InferenceGatewayArgs, opts: pulumi.ResourceOptions) -> None:
        """Who calls on each listener, which models it may name, and its request budget (gateway_identity.py)."""
        teams = {
            team: (args["team_namespaces"][team], port, args["team_models"][team])
            for team, port in args["team_ports"].items()
        }
        gateway_identity(
            name,
            GATEWAY_NAMESPACE,
            GATEWAY_NAME,
            args["cluster"].oidc_issuer_url,
            teams,
            args["requests_per_minute"],
            opts,
        )

    def _team_egress(self, name: str, args: InferenceGatewayArgs) -> None:
        """In each calling team's namespace, a policy letting its pods reach its listener."""
        for team, port in args["team_ports"].items():
            k8s.networking.v1.NetworkPolicy(
                f"{name}-egress-{team}",
                metadata={
                    "name": "inference-gateway-egress",
                    "namespace": args.get("created_namespaces", {}).get(team, args["team_namespaces"][team]),
                },
                spec=team_gateway_egress(port),
                opts=self._in_cluster,
            )
