"""The inference concern's add-ons (components/shared/addon.py), present once `inference.models` names a model:
Istio (the inference gateway's control plane), LeaderWorkerSet and the served models themselves, each with its
endpoint picker and dashboard."""

from aks_gpu_platform.config.inference.models import InferenceConfig
from aks_gpu_platform.config.platform import PlatformConfig

from ..shared.addon import AddOn, Board, Chart, Dashboard, Readiness
from .adapters import with_adapter_panels
from .gateway import ISTIO_CHART_REPO, ISTIO_NAMESPACE, ISTIO_VERSION
from .inference_pool import INFERENCE_POOL_CHART, INFERENCE_POOL_CHART_VERSION, picker_holds_requests
from .model_dashboards import model_dashboard
from .serving import LWS_CHART, LWS_NAMESPACE, LWS_VERSION

ISTIO_TAG = "istio/istio tag `1.30.3` (2026-07-13, commit `56df41f6`)"


def serves_models(cfg: PlatformConfig) -> bool:
    return bool(cfg.inference.models)


def model_boards(cfg: PlatformConfig) -> list[Board]:
    """Each served model's dashboard, named as ModelServing (`<platform>-serving`) named it."""
    namespace = cfg.inference.namespace
    return [
        Board(
            f"serving-{model.name}-dashboard",
            with_adapter_panels(
                model_dashboard(
                    namespace,
                    model.name,
                    model.slo.time_to_first_token_p90_seconds,
                    model.nodes > 1,
                    picker_holds_requests(model),
                    model.prefix_caching,
                    model.routing.precise,
                ),
                namespace,
                model,
            ),
        )
        for model in cfg.inference.models
    ]


ISTIO = AddOn(
    name="istio",
    summary="istiod, which runs the inference gateway's pods and routes HTTPRoutes to InferencePools",
    namespace=ISTIO_NAMESPACE,
    pod_security="baseline",
    undrained=True,
    active=serves_models,
    charts=(
        Chart(
            "base",
            ISTIO_VERSION,
            repository=ISTIO_CHART_REPO,
            source=f"{ISTIO_TAG}, newest patch of the newest minor. Its go.mod pins `sigs.k8s.io/gateway-api v1.5.1` "
            "(the Gateway API CRDs we apply) and `gateway-api-inference-extension v1.4.0` (InferencePool v1)",
            templates_read="`manifests/charts/base/{values.yaml, templates/}`: CRDs, webhook configuration, a service "
            "account; no pods, no hooks",
            readiness=Readiness("0 s: CRDs and configuration only"),
        ),
        Chart(
            "istiod",
            ISTIO_VERSION,
            repository=ISTIO_CHART_REPO,
            source=f'{ISTIO_TAG}; `env.ENABLE_GATEWAY_API_INFERENCE_EXTENSION: "true"` '
            "(`pilot/pkg/features/experimental.go`, default false) makes istiod route HTTPRoutes to InferencePools; "
            "`global.hub: gcr.io/istio-release` (Istio's mirror; Docker Hub is the default hub)",
            templates_read="`manifests/charts/istio-control/istio-discovery/{values.yaml, templates/deployment.yaml, "
            "templates/zzz_profile.yaml, files/kube-gateway.yaml}`: flat values (`pilot.` is istioctl's prefix only), "
            "`nodeSelector`/`affinity`/`tolerations` (plus its own `cni.istio.io/not-ready` toleration), readiness "
            "`/ready` 1 s + 3 s; `gateways.seccompProfile` reaches the gateway pods istiod creates from the Gateway "
            "(`gateway.networking.k8s.io/gateway-name` label, Service `<gateway>-istio`, "
            "`spec.infrastructure.annotations` copied onto both)",
            readiness=Readiness("64 s: readiness `/ready` after 1 s, every 3 s", "gcr.io/istio-release"),
        ),
    ),
)

LWS = AddOn(
    name="lws",
    summary="LeaderWorkerSet, which runs a model spanning nodes as one group (installed once a model has `nodes` > 1)",
    namespace=LWS_NAMESPACE,
    pod_security="baseline",
    undrained=True,
    active=serves_models,
    charts=(
        Chart(
            LWS_CHART,
            LWS_VERSION,
            source="kubernetes-sigs/lws tag `v0.10.0` (2026-08-11, commit `2161f38f`); image "
            "`registry.k8s.io/lws/lws:v0.10.0` (git says `tag: main`; `hack/push-chart.sh` stamps the release tag, set "
            "explicitly here)",
            templates_read="`charts/lws/{values.yaml, templates/manager/deployment.yaml, crds/}`, "
            "`api/leaderworkerset/v1/leaderworkerset_types.go`",
            readiness=Readiness("75 s: readiness after 5 s, every 10 s", "registry.k8s.io"),
        ),
    ),
)

SERVED_MODELS = AddOn(
    name="served-models",
    summary="the vLLM servers of `inference.models`, each behind its InferencePool and endpoint picker (one "
    "release per model); `privileged` once a model spans nodes (its servers lock memory for NCCL over RDMA)",
    namespace=InferenceConfig.model_fields["namespace"].default,
    pod_security="baseline",
    active=serves_models,
    configured_namespace=lambda cfg: cfg.inference.namespace,
    charts=(
        Chart(
            INFERENCE_POOL_CHART,
            INFERENCE_POOL_CHART_VERSION,
            source="kubernetes-sigs/gateway-api-inference-extension tag `v1.5.0` (2026-04-18, commit `df9f8909`): the "
            "last tag with the endpoint picker and its chart (v1.6.0 moved them to llm-d/llm-d-router, whose chart "
            "still defaults its image to `main`); picker image `registry.k8s.io/gateway-api-inference-extension/"
            "epp:v1.5.0` (chart default)",
            templates_read="`config/charts/inferencepool/{values.yaml, templates/inferencepool.yaml, "
            "templates/istio.yaml}`, `config/charts/epplib/templates/{_deployment.yaml, _helpers.tpl, _config.yaml}`, "
            "`pkg/epp/server/options.go` (flags), `pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go` "
            "(the vLLM series it reads)",
            readiness=Readiness("62 s: the picker's gRPC readiness every 2 s", "registry.k8s.io"),
        ),
    ),
    dashboards=(Dashboard("one per served model (`Model <name>`)", model_boards),),
)
