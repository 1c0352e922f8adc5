"""Model serving: the models namespace and its policies, the inference gateway, the LeaderWorkerSet controller for
models that span nodes, and every configured model (served_model.py) with its dashboard and SLO alert.

The LeaderWorkerSet controller: the `lws` chart v0.10.0 (kubernetes-sigs/lws commit 2161f38f, charts/lws). The
models namespace: the inferencepool chart renders no securityContext for the picker (inference_pool.py), so the
namespace enforces `baseline` and warns at `restricted`.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored_repository_and_tag
from aks_gpu_platform.config.gpu.scheduling import cpu_node_selector
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.adapters import served_names
from aks_gpu_platform.config.inference.models import InferenceConfig, ServedModelConfig
from aks_gpu_platform.config.inference.streamed_weights import streamed_weights_team

from ..monitoring.alerts import alert_rules
from ..network.policies import NAMESPACE_NAME_LABEL, platform_ingress
from ..shared.workloads import MEMORY_LOCKING_POD_SECURITY, platform_namespace
from ..training.team_storage import TeamContainer
from .adapters import adapter_endpoints, with_adapters_named
from .autoscaling import KedaWiringArgs
from .egress import ModelPods, models_egress
from .gateway import GATEWAY_NAME, GATEWAY_NAMESPACE, GATEWAY_POD_LABEL, GATEWAY_SERVICE, InferenceGateway, team_ports
from .inference_pool import EPP_GRPC_PORT, picker_holds_requests, picker_labels
from .model_dashboards import prefix_cache_alert, slo_alert
from .routing import kv_events_policies, kv_events_port, platform_ingress_pods
from .served_model import ServedModel, ServedModelArgs
from .vllm_server import VLLM_PORT, model_labels
from .weights_cache import cache_gib, hugging_face_token_secret

LWS_CHART = "oci://registry.k8s.io/lws/charts/lws"
LWS_VERSION = "0.10.0"
LWS_IMAGE_TAG = "v0.10.0"
LWS_IMAGE = f"registry.k8s.io/lws/lws:{LWS_IMAGE_TAG}"
LWS_NAMESPACE = "lws-system"
# The inferencepool chart's picker has no securityContext (epplib templates/_deployment.yaml at v1.5.0): baseline
# admits it; restricted is what single-node model servers meet, so warn and audit at it.
MODELS_NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}
# A multi-node model's servers add IPC_LOCK for NCCL over RDMA, which `baseline` refuses and no level short of
# `privileged` allows: that namespace is then enforced like an InfiniBand team's, by Azure Policy's baseline with
# IPC_LOCK allowed, always Deny (components/cluster/azure_policy.py; config/rules.py keeps that policy on).
MEMORY_LOCKING_MODELS_NAMESPACE_LABELS = {**MODELS_NAMESPACE_LABELS, **MEMORY_LOCKING_POD_SECURITY}


def models_namespace_labels(models: Sequence[ServedModelConfig]) -> dict[str, str]:
    """Pod Security of the models namespace: `privileged` under Azure Policy's RDMA baseline once a model spans
    nodes (its servers add IPC_LOCK), else `baseline`."""
    locks_memory = any(model.nodes > 1 for model in models)
    return MEMORY_LOCKING_MODELS_NAMESPACE_LABELS if locks_memory else MODELS_NAMESPACE_LABELS


def lws_values() -> dict[str, Any]:
    """LeaderWorkerSet chart values (charts/lws/values.yaml at v0.10.0): in git the image tag is `main`; the
    published chart is stamped with the release tag (hack/push-chart.sh), set here all the same."""
    return {
        "image": {"manager": {**mirrored_repository_and_tag(LWS_IMAGE), "pullPolicy": "IfNotPresent"}},
        "nodeSelector": cpu_node_selector(),
        # The chart asks 1 CPU / 1 GiB; a controller reconciling a few groups needs a fraction on the small CPU pool.
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
    }


def models_ingress() -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """The gateway pods reach the model servers' API and the pickers' ext_proc port, nothing else of the namespace."""
    return {
        "pod_selector": {},
        "policy_types": ["Ingress"],
        "ingress": [
            {
                "from_": [
                    {
                        "namespace_selector": {"match_labels": {NAMESPACE_NAME_LABEL: GATEWAY_NAMESPACE}},
                        "pod_selector": {"match_labels": {GATEWAY_POD_LABEL: GATEWAY_NAME}},
                    }
                ],
                "ports": [{"protocol": "TCP", "port": VLLM_PORT}, {"protocol": "TCP", "port": EPP_GRPC_PORT}],
            }
        ],
    }


class ModelServingArgs(KedaWiringArgs):
    settings: InferenceConfig
    gpu_pools: Sequence[GpuPoolConfig]
    teams: Sequence[str]
    """`training.teams[].name` in config order: a team's listener port follows its place."""
    team_namespaces: Mapping[str, str]
    """Namespace of every training team."""
    created_namespaces: NotRequired[Mapping[str, pulumi.Input[str]]]
    """Team -> namespace name output of the resource creating it (the training stage's)."""
    cache_storage_class: str | None
    """The weights caches' class; None when no model caches Hub weights."""
    team_containers: NotRequired[Mapping[str, TeamContainer]]
    """Team -> its Blob container (training.team_storage), for models streamed from one."""
    weights_endpoint_range: NotRequired[str | None]
    """With streamed models: the subnet of the account's private endpoint (None: its public endpoint)."""
    action_group_id: pulumi.Input[str]
    """Where the SLO alerts notify."""
    alerts_enabled: bool
    """`monitoring.alerts.enabled`: false keeps the SLO rules but stops them from firing."""
    rule_scopes: Sequence[pulumi.Input[str]]
    """The Azure Monitor workspace and the cluster (scopes of a Prometheus rule group)."""
    hugging_face_token: NotRequired[pulumi.Input[str] | None]
    """The stack secret `huggingFaceToken`, for models with tokenSecret."""
    scrape_dependencies: Sequence[pulumi.Resource]
    """What a PodMonitor waits for: the cluster and the managed Prometheus add-on that installs its CRD."""
    cpu_pool_scales: NotRequired[bool]
    """`cpuPool.minCount < maxCount`: a staging Job may wait for a new CPU node. Default true."""


class ModelServing(pulumi.ComponentResource):
    """The models namespace, the gateway, and every configured model with its dashboard and SLO alert."""

    endpoints: dict[str, dict[str, str]]
    """Model or adapter -> team -> base URL of the OpenAI-compatible API for that team."""

    def __init__(self, name: str, args: ModelServingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:ModelServing", name, None, opts)
        cfg = args["settings"]
        self._in_cluster = args["cluster"].k8s_options(self)
        calling = [team for model in cfg.models for team in model.teams]
        ports = team_ports(list(args["teams"]), calling)
        gateway = self._gateway(name, args, ports)
        namespace = self._models_namespace(name, cfg)
        token_secret = self._token_secret(name, args, namespace)
        crds: list[pulumi.Resource] = [namespace, *gateway.crds, *self._leader_worker_set_controller(name, cfg)]
        self.endpoints = {}
        for model in cfg.models:
            self._serve(name, model, args, token_secret, crds)
            self._watch(name, model, args)
            service = f"http://{GATEWAY_SERVICE}.{GATEWAY_NAMESPACE}.svc.cluster.local"
            self.endpoints[model.name] = {team: f"{service}:{ports[team]}/{model.name}/v1" for team in model.teams}
            self.endpoints.update(adapter_endpoints(model, self.endpoints[model.name]))
        self.register_outputs({"endpoints": self.endpoints})

    def _after(self, *resources: pulumi.Resource) -> pulumi.ResourceOptions:
        """In the cluster, after `resources`."""
        return pulumi.ResourceOptions.merge(self._in_cluster, pulumi.ResourceOptions(depends_on=list(resources)))

    def _gateway(self, name: str, args: ModelServingArgs, ports: dict[str, int]) -> InferenceGateway:
        """The inference gateway with a listener per calling team."""
        cfg = args["settings"]
        return InferenceGateway(
            f"{name}-gateway",
            {
                "cluster": args["cluster"],
                "models_namespace": cfg.namespace,
                "team_ports": ports,
                "team_namespaces": {team: args["team_namespaces"][team] for team in ports},
                "internal": cfg.gateway_internal,
                "created_namespaces": args.get("created_namespaces", {}),
                "team_models": {
                    team: [n for m in cfg.models if team in m.teams for n in served_names(m)] for team in ports
                },
                "backend_ports": [VLLM_PORT, EPP_GRPC_PORT],
                "requests_per_minute": cfg.team_requests_per_minute,
            },
            pulumi.ResourceOptions(parent=self),
        )

    def _models_namespace(self, name: str, cfg: InferenceConfig) -> k8s.core.v1.Namespace:
        """The models namespace, what may reach its pods (the platform, the gateway) and what they may reach."""
        ns = cfg.namespace
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": ns, "labels": models_namespace_labels(cfg.models)},
            opts=self._in_cluster,
        )
        after_namespace = self._after(namespace)
        platform_ingress(f"{name}-{ns}", ns, after_namespace, platform_ingress_pods(cfg.models))
        pods = {
            m.name: ModelPods(model_labels(m.name), picker_labels(m.name), m.nodes > 1, kv_events_port(m))
            for m in cfg.models
        }
        models_egress(f"{name}-{ns}", ns, pods, VLLM_PORT, after_namespace)
        kv_events_policies(f"{name}-{ns}", ns, cfg.models, pods, after_namespace)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-from-gateway",
            metadata={"name": "from-inference-gateway", "namespace": ns},
            spec=models_ingress(),
            opts=after_namespace,
        )
        return namespace

    def _token_secret(
        self, name: str, args: ModelServingArgs, namespace: k8s.core.v1.Namespace
    ) -> k8s.core.v1.Secret | None:
        """The Hub token Secret, when a model reads the Hub with it and the stack holds it."""
        cfg, token = args["settings"], args.get("hugging_face_token")
        if token is None or not any(m.weights.token_secret for m in cfg.models):
            return None
        return hugging_face_token_secret(name, cfg.namespace, token, self._after(namespace))

    def _leader_worker_set_controller(self, name: str, cfg: InferenceConfig) -> list[pulumi.Resource]:
        """The LeaderWorkerSet controller (its CRD with it) when a model spans nodes, else nothing."""
        if not any(model.nodes > 1 for model in cfg.models):
            return []
        lws_namespace = platform_namespace(f"{name}-lws-namespace", LWS_NAMESPACE, "baseline", self._in_cluster)
        release = k8s.helm.v3.Release(
            f"{name}-lws",
            name="lws",
            chart=LWS_CHART,
            version=LWS_VERSION,
            namespace=LWS_NAMESPACE,
            values=lws_values(),
            opts=self._after(lws_namespace),
        )
        return [release]

    def _serve(
        self,
        name: str,
        model: ServedModelConfig,
        args: ModelServingArgs,
        token_secret: k8s.core.v1.Secret | None,
        crds: list[pulumi.Resource],
    ) -> ServedModel:
        """The model's servers, pool, route, scrape and scaling, once the namespace and the CRDs exist."""
        pools = {pool.name: pool for pool in args["gpu_pools"]}
        served: ServedModelArgs = {
            "cluster": args["cluster"],
            "monitor_workspace_id": args["monitor_workspace_id"],
            "prometheus_query_endpoint": args["prometheus_query_endpoint"],
            "settings": model,
            "pool": pools[model.pool],
            "namespace": args["settings"].namespace,
            "cache_storage_class": args["cache_storage_class"],
            "cache_gib": cache_gib(model),
            "token_secret": token_secret,
            "depends_on": crds,
            "scrape_dependencies": list(args["scrape_dependencies"]),
            "cpu_pool_scales": args.get("cpu_pool_scales", True),
        }
        if model.weights.blob is not None:
            served["weights_container"] = args.get("team_containers", {})[streamed_weights_team(model)]
            served["weights_endpoint_range"] = args.get("weights_endpoint_range")
        return ServedModel(f"{name}-{model.name}", served, pulumi.ResourceOptions(parent=self))

    def _watch(self, name: str, model: ServedModelConfig, args: ModelServingArgs) -> None:
        """The model's time-to-first-token SLO alert (and, with precise routing, its prefix cache hit rate alert) and,
        where the platform has Grafana, its dashboard."""
        handle, ns = args["cluster"], args["settings"].namespace
        holds, precise = picker_holds_requests(model), model.routing.precise
        slo = model.slo.time_to_first_token_p90_seconds
        alerts = [with_adapters_named(slo_alert(ns, model.name, slo, holds, precise), model)]
        watched = "Time-to-first-token SLO"
        if precise:
            alerts.append(prefix_cache_alert(ns, model.name))
            watched += " and prefix cache hit rate"
        base = handle.cluster_name
        alertsmanagement.PrometheusRuleGroup(
            f"{name}-{model.name}-slo",
            resource_group_name=handle.resource_group_name,
            location=handle.location,
            rule_group_name=base.apply(lambda cluster, m=model.name: f"ModelSlo-{m}-{cluster}"[:260]),
            cluster_name=base,
            scopes=list(args["rule_scopes"]),
            interval="PT1M",
            enabled=True,
            description=f"{watched} of model {model.name}",
            rules=alert_rules(
                alerts,
                args["action_group_id"],
                args["alerts_enabled"],
                {"model": model.name},
            ),
            tags=dict(handle.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
