"""KEDA scaling of a served model: a ScaledObject on what its users wait for (vLLM's queue, its KV cache and, for a
model that may be at zero, the requests its endpoint picker holds), with the identity KEDA queries managed
Prometheus as.

The triggers. The queue: vLLM's waiting requests (a replica only queues once its batch is full), as a target average
per replica. The KV cache: the EPP's own saturation point for it (kvCacheUtilThreshold 0.8, GAIE v1.5.0
site-src/guides/flow-control.md), as a Value the HPA compares to the fleet's average.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.inference.models import ServedModelConfig

from .autoscaling import (
    KEDA_API_VERSION,
    KedaWiringArgs,
    keda_metadata,
    keda_object_options,
    keda_trigger_authentication,
)
from .inference_pool import held_requests_query, picker_holds_requests

WAITING_PER_REPLICA = 2
KV_CACHE_TARGET = 0.8
POLLING_SECONDS = 15
COOLDOWN_SECONDS = 300


def waiting_query(namespace: str, model: str) -> str:
    """PromQL: requests waiting in the model's servers, all replicas together (one series)."""
    return f'sum(vllm:num_requests_waiting{{namespace="{namespace}",model_name="{model}"}})'


def kv_cache_query(namespace: str, model: str) -> str:
    """PromQL: the replicas' average KV-cache use, 0..1 (one series)."""
    return f'avg(vllm:kv_cache_usage_perc{{namespace="{namespace}",model_name="{model}"}})'


def _prometheus_trigger(
    name: str, metric_type: str, metadata: dict[str, Any], server_address: pulumi.Input[str], auth: str
) -> dict[str, Any]:
    return {
        "type": "prometheus",
        "name": name,
        "metricType": metric_type,
        "metadata": {"serverAddress": server_address, **metadata},
        "authenticationRef": {"name": auth, "kind": "TriggerAuthentication"},
    }


def _triggers(
    model: ServedModelConfig, namespace: str, server_address: pulumi.Input[str], auth: str
) -> list[dict[str, Any]]:
    waiting = {"query": waiting_query(namespace, model.name), "threshold": str(WAITING_PER_REPLICA)}
    kv_cache = {"query": kv_cache_query(namespace, model.name), "threshold": str(KV_CACHE_TARGET)}
    triggers = [
        _prometheus_trigger("waiting-requests", "AverageValue", waiting, server_address, auth),
        _prometheus_trigger("kv-cache", "Value", kv_cache, server_address, auth),
    ]
    if picker_holds_requests(model):
        # Any held request wakes the model from zero.
        held = {"query": held_requests_query(namespace, model.name), "threshold": "1", "activationThreshold": "0"}
        triggers.append(_prometheus_trigger("held-requests", "AverageValue", held, server_address, auth))
    return triggers


def scaled_object_spec(
    model: ServedModelConfig, namespace: str, server_address: pulumi.Input[str], auth: str
) -> dict[str, Any]:
    """KEDA: replicas on the queue (per replica) and the KV cache (fleet average), within the configured range."""
    kind = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") if model.nodes > 1 else ("apps/v1", "Deployment")
    return {
        "scaleTargetRef": {"apiVersion": kind[0], "kind": kind[1], "name": model.name},
        "minReplicaCount": model.min_replicas,
        "maxReplicaCount": model.max_replicas,
        "pollingInterval": POLLING_SECONDS,
        "cooldownPeriod": COOLDOWN_SECONDS,
        "triggers": _triggers(model, namespace, server_address, auth),
    }


def model_scaled_object(
    parent: pulumi.Resource,
    name: str,
    args: KedaWiringArgs,
    model: ServedModelConfig,
    namespace: str,
    server: pulumi.Resource,
) -> None:
    """The ScaledObject `<model>-serving` on the model's servers, and the identity and TriggerAuthentication it
    queries with; resources named `<name>-*` under `parent`."""
    object_name = f"{model.name}-serving"
    auth, _ = keda_trigger_authentication(parent, name, args, f"id-model-{model.name}-keda", object_name, namespace)
    k8s.apiextensions.CustomResource(
        f"{name}-scaled-object",
        api_version=KEDA_API_VERSION,
        kind="ScaledObject",
        metadata=keda_metadata(object_name, namespace),
        spec=scaled_object_spec(model, namespace, args["prometheus_query_endpoint"], object_name),
        opts=pulumi.ResourceOptions.merge(
            keda_object_options(parent, args["cluster"]), pulumi.ResourceOptions(depends_on=[auth, server])
        ),
    )
