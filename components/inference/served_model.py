"""One served model: vLLM replicas on its GPU pool, its InferencePool and endpoint picker, its route through the
gateway, the scrape of its metrics and KEDA scaling on what its users wait for. Each part is built by its own
module (vllm_server, weights_cache or blob_weights, inference_pool, model_metrics, model_scaling); this component
orders them."""

from collections.abc import Sequence
from typing import NotRequired

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import ServedModelConfig

from ..training.team_storage import TeamContainer
from .autoscaling import KedaWiringArgs
from .blob_weights import blob_reader
from .inference_pool import inference_pool_release, model_route
from .model_metrics import model_pod_monitors
from .model_scaling import kv_cache_query, model_scaled_object, waiting_query
from .routing import render_service
from .vllm_server import ModelPlacement, model_labels, model_servers
from .weights_cache import cache_claim_name, staging_job, weights_cache


class ServedModelArgs(KedaWiringArgs):
    settings: ServedModelConfig
    pool: GpuPoolConfig
    """The model's GPU pool."""
    namespace: str
    cache_storage_class: str | None
    """ReadWriteMany class of the per-model weights cache (Hub weights)."""
    weights_container: NotRequired[TeamContainer]
    """Weights streamed from Blob: the owning team's container, which the model's identity may read."""
    weights_endpoint_range: NotRequired[str | None]
    """Weights streamed from Blob: the subnet of the account's private endpoint (None: its public endpoint)."""
    cache_gib: int
    """Size of that cache."""
    token_secret: NotRequired[k8s.core.v1.Secret | None]
    """The Secret (key HUGGING_FACE_SECRET_KEY) holding the Hub token, for gated models: its readers wait for it."""
    depends_on: NotRequired[Sequence[pulumi.Resource]]
    """The gateway's CRDs and the namespace."""
    scrape_dependencies: NotRequired[Sequence[pulumi.Resource]]
    """What the PodMonitor waits for besides the cluster (the managed Prometheus add-on)."""
    cpu_pool_scales: NotRequired[bool]
    """The CPU pool may add a node (minCount < maxCount): the staging Job's deadline allows for one."""


class ServedModel(pulumi.ComponentResource):
    """A model's servers, InferencePool + picker, HTTPRoute, PodMonitor and ScaledObject."""

    waiting_query: str
    kv_cache_query: str

    def __init__(self, name: str, args: ServedModelArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:ServedModel", name, None, opts)
        model, handle = args["settings"], args["cluster"]
        self._in_cluster = pulumi.ResourceOptions.merge(
            handle.k8s_options(self), pulumi.ResourceOptions(depends_on=list(args.get("depends_on", [])))
        )
        container = args.get("weights_container")
        account = container.account if container is not None else None
        placement = ModelPlacement(model, args["pool"], args["namespace"], cache_claim_name(model), account)
        weights = self._stage_weights(name, placement, args) + self._read_weights(name, placement, args)
        server = model_servers(name, placement, self._after(*weights))
        # A precise model's picker tokenises each prompt on the model's servers through this Service (routing.py).
        render = [render_service(name, placement, self._in_cluster)] if model.routing.precise else []
        picker = inference_pool_release(name, model, placement.namespace, self._after(*render))
        model_route(name, placement, self._after(picker))
        model_pod_monitors(
            name, placement, picker, handle.cluster, list(args.get("scrape_dependencies", [])), self._in_cluster
        )
        model_scaled_object(self, name, args, model, placement.namespace, server)
        self.waiting_query = waiting_query(placement.namespace, model.name)
        self.kv_cache_query = kv_cache_query(placement.namespace, model.name)
        self.register_outputs({"waiting_query": self.waiting_query, "kv_cache_query": self.kv_cache_query})

    def _after(self, *resources: pulumi.Resource) -> pulumi.ResourceOptions:
        """In the cluster, after the component's dependencies and `resources`."""
        return pulumi.ResourceOptions.merge(self._in_cluster, pulumi.ResourceOptions(depends_on=list(resources)))

    def _stage_weights(self, name: str, placement: ModelPlacement, args: ServedModelArgs) -> list[pulumi.Resource]:
        """Hub weights: the cache claim and the Job that fills it, which the servers wait for (none otherwise). The
        download waits for the token it reads."""
        if placement.cache_claim is None:
            return []
        model, handle = placement.model, args["cluster"]
        # The downloaded weights outlive every replica: a new one loads them instead of the Hub's.
        kept = pulumi.ResourceOptions.merge(self._in_cluster, pulumi.ResourceOptions(protect=handle.protect))
        storage_class = args["cache_storage_class"]
        assert storage_class is not None, "checked by check_weights_cache_class"
        cache = weights_cache(name, placement, storage_class, args["cache_gib"], kept)
        secret = args.get("token_secret") if model.weights.token_secret else None
        job = staging_job(
            name,
            placement,
            secret is not None,
            args.get("cpu_pool_scales", True),
            self._after(cache, *([secret] if secret else [])),
        )
        return [cache, job]

    def _read_weights(self, name: str, placement: ModelPlacement, args: ServedModelArgs) -> list[pulumi.Resource]:
        """Weights streamed from Blob: the reader identity with its grant and service account, and the servers'
        egress, which the servers wait for (none otherwise)."""
        model = placement.model
        if model.weights.blob is None:
            return []
        container = args.get("weights_container")
        assert container is not None, "ModelServing hands a streamed model its team's container"
        return blob_reader(
            name,
            model,
            placement.namespace,
            model_labels(model.name),
            container,
            args.get("weights_endpoint_range"),
            args["cluster"],
            self,
            self._in_cluster,
        )
