"""A served model's way in: the `inferencepool` Helm release (its InferencePool and endpoint picker, with the
picker's plugin config) and the HTTPRoute from the gateway's team listeners to that pool.

What it follows (docs/charts.md, "Serving"): the `inferencepool` chart of gateway-api-inference-extension v1.5.0
(commit df9f8909, config/charts/inferencepool and config/charts/epplib): the InferencePool is named after the
release, the picker `<release>-epp`; the chart has no nodeSelector key (affinity only) and renders no
securityContext for the picker (epplib templates/_deployment.yaml), so the models namespace enforces `baseline` and
warns at `restricted` (serving.py): the model servers themselves meet `restricted`. A model whose picker scores the
servers' own prefix caches runs the llm-d router's picker image on the same chart (routing.py).
"""

import hashlib
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from aks_gpu_platform.config.catalog.images import mirrored_parts
from aks_gpu_platform.config.gpu.scheduling import cpu_node_affinity
from aks_gpu_platform.config.inference.adapters import served_names
from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.config.inference.runtime import REQUEST_TIMEOUT_SECONDS

from .adapters import LORA_AFFINITY_SCORER, LORA_AFFINITY_WEIGHT
from .gateway import GATEWAY_NAME, GATEWAY_NAMESPACE, team_listener
from .model_dashboards import picker_name
from .routing import PRECISE_PICKER_IMAGE, precise_picker_config
from .vllm_server import VLLM_PORT, ModelPlacement, pool_selector

INFERENCE_POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
INFERENCE_POOL_CHART_VERSION = "v1.5.0"
# The endpoint picker the chart runs by default (config/charts/inferencepool/values.yaml at v1.5.0).
PICKER_IMAGE = f"registry.k8s.io/gateway-api-inference-extension/epp:{INFERENCE_POOL_CHART_VERSION}"
EPP_GRPC_PORT = 9002
REQUEST_TIMEOUT = f"{REQUEST_TIMEOUT_SECONDS}s"
"""The route's request timeout, which bounds a streamed response too (config/inference/runtime.py)."""
PICKER_CONFIG_FILE = "serving-plugins.yaml"
PICKER_CONFIG_HASH_ENV = "PICKER_CONFIG_SHA256"
"""The picker reads its config file at start only (GAIE v1.5.0 site-src/guides/epp-configuration/config-text.md) and
the chart's Deployment carries no checksum of its ConfigMap (epplib templates/_deployment.yaml): the config's hash in
the pod's environment makes a changed config roll the picker."""
FLOW_CONTROL_METRIC = "inference_extension_flow_control_queue_size"
"""The picker's gauge of requests it holds (pkg/epp/metrics/metrics.go l.428 at v1.5.0; labels fairness_id,
priority, inference_pool, model_name, target_model_name)."""


def picker_config(flow_control: bool, prefix_cache: bool = True, lora_affinity: bool = False) -> str:
    """The picker's EndpointPickerConfig: the chart's default (epplib templates/_config.yaml at v1.5.0, vLLM over
    HTTP, no latency predictor) plus, for a model that may scale to zero, the `flowControl` feature gate
    (pkg/epp/config/loader/configloader.go): requests wait in the picker while no server is ready instead of
    getting 503 at once (site-src/guides/flow-control.md, "Autoscaling: KEDA and Scale-to-Zero"). Without vLLM's
    prefix cache, no prefix-cache scorer: it would steer requests towards a cache that is not kept. With adapters,
    the LoRA affinity scorer (adapters.py), which the chart's default lacks."""
    scorers = [("queue-scorer", 2), ("kv-cache-utilization-scorer", 2)]
    if prefix_cache:
        scorers.append(("prefix-cache-scorer", 3))
    if lora_affinity:
        scorers.append((LORA_AFFINITY_SCORER, LORA_AFFINITY_WEIGHT))
    config: dict[str, Any] = {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            *({"type": scorer} for scorer, _ in scorers),
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [{"pluginRef": scorer, "weight": weight} for scorer, weight in scorers],
            }
        ],
    }
    if flow_control:
        config["featureGates"] = ["flowControl"]
    return yaml.safe_dump(config, sort_keys=False)


def picker_labels(model: str) -> dict[str, str]:
    """The picker pod's selector labels (epplib templates/_helpers.tpl, InferencePool mode)."""
    return {"inferencepool": picker_name(model)}


def picker_holds_requests(model: ServedModelConfig) -> bool:
    """The picker runs flow control, which holds requests while no server is ready: a model that may be at zero."""
    return model.min_replicas == 0


def held_requests_query(namespace: str, model: str) -> str:
    """PromQL: requests the picker holds for the model's pool (one series; the only signal while at zero)."""
    return f'sum({FLOW_CONTROL_METRIC}{{namespace="{namespace}",inference_pool="{model}"}})'


def model_picker_config(model: ServedModelConfig) -> str | None:
    """The model's picker config, None for the chart's own: ours when the picker holds requests, the model keeps no
    prefix cache to score on, has adapters to score, or the picker scores the servers' own caches (routing.py)."""
    holds = picker_holds_requests(model)
    if not holds and model.prefix_caching and not model.routing.precise and not model.adapters:
        return None
    config = picker_config(flow_control=holds, prefix_cache=model.prefix_caching, lora_affinity=bool(model.adapters))
    return precise_picker_config(config, model) if model.routing.precise else config


def picker_image(model: ServedModelConfig) -> str:
    """The llm-d router's picker for precise prefix-cache scoring, else the chart's own (routing.py says why)."""
    return PRECISE_PICKER_IMAGE if model.routing.precise else PICKER_IMAGE


def _picker_plugins(model: ServedModelConfig) -> dict[str, Any]:
    """Our plugin config, and its hash in the picker's environment, where the chart's own does not do."""
    config = model_picker_config(model)
    if config is None:
        return {}
    digest = hashlib.sha256(config.encode()).hexdigest()
    return {
        "pluginsConfigFile": PICKER_CONFIG_FILE,
        "pluginsCustomConfig": {PICKER_CONFIG_FILE: config},
        "env": [{"name": PICKER_CONFIG_HASH_ENV, "value": digest}],
    }


def inference_pool_values(model: ServedModelConfig) -> dict[str, Any]:
    """inferencepool chart values: the pool over the model's serving pods, the picker on the CPU pool."""
    return {
        "inferencePool": {
            "targetPorts": [{"number": VLLM_PORT}],
            "modelServerType": "vllm",
            "modelServers": {"matchLabels": pool_selector(model)},
        },
        # Istio: a DestinationRule so the gateway speaks TLS to the picker's self-signed gRPC (templates/istio.yaml).
        "provider": {"name": "istio"},
        "inferenceExtension": {
            "replicas": 1,
            "image": {**mirrored_parts(picker_image(model)), "pullPolicy": "IfNotPresent"},
            "affinity": cpu_node_affinity(),
            # The chart's 4 CPU / 8 GiB is sized for high-QPS scale tests (values.yaml); one model's picker on the
            # small CPU pool needs a fraction of it. Memory limit kept well above the request.
            "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
            # Managed Prometheus scrapes every picker's :9090 (the SLO reads it) without a bearer token
            # (--metrics-endpoint-auth=false).
            "monitoring": {"prometheus": {"auth": {"enabled": False}}},
            **_picker_plugins(model),
        },
    }


def http_route(model: ServedModelConfig, namespace: str) -> dict[str, Any]:
    """The model's route: `/<name>/...` on each of its teams' listeners, to its InferencePool, and the same for each
    of its adapters' names (a rule each: a prefix rewrite takes exactly one match)."""
    return {
        "parentRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "name": GATEWAY_NAME,
                "namespace": GATEWAY_NAMESPACE,
                "sectionName": team_listener(team),
            }
            for team in model.teams
        ],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": f"/{name}"}}],
                # Clients use `http://<gateway>:<port>/<model>/v1` as the OpenAI base URL.
                "filters": [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
                    }
                ],
                "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": model.name}],
                "timeouts": {"request": REQUEST_TIMEOUT},
            }
            for name in served_names(model)
        ],
    }


def inference_pool_release(
    name: str, model: ServedModelConfig, namespace: str, opts: pulumi.ResourceOptions
) -> k8s.helm.v3.Release:
    """The model's InferencePool and endpoint picker, a release named after the model."""
    return k8s.helm.v3.Release(
        f"{name}-pool",
        name=model.name,
        chart=INFERENCE_POOL_CHART,
        version=INFERENCE_POOL_CHART_VERSION,
        namespace=namespace,
        values=inference_pool_values(model),
        opts=opts,
    )


def model_route(name: str, placement: ModelPlacement, opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    """The HTTPRoute from the model's teams' listeners to its InferencePool."""
    model, namespace = placement.model, placement.namespace
    return k8s.apiextensions.CustomResource(
        f"{name}-route",
        api_version="gateway.networking.k8s.io/v1",
        kind="HTTPRoute",
        metadata={"name": model.name, "namespace": namespace, "labels": placement.labels},
        spec=http_route(model, namespace),
        opts=opts,
    )
