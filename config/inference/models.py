"""Models served from the GPU pools (`inference.models`): weights, engine, pool, parallelism, replicas, callers, SLO.

The sizing rules follow config/catalog/models.py: weights plus the KV cache of one maxModelLen sequence must fit
vLLM's own budget of tensorParallel x nodes GPUs (engine_memory_budget). A model not in that catalog is refused with the
list of catalogued ones (no guessed shapes): add a sourced row to serve another.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from ..base import ConfigModel
from ..catalog.cold_start import AUTOSCALER_GPU_DELAY, node_provisioning
from ..catalog.gpu_sizes import GPU_SKUS
from ..catalog.models import (
    ACTIVATION_AND_GRAPHS_GIB,
    GPU_MEMORY_UTILIZATION,
    MIB,
    MODELS,
    ModelShape,
    computes_bfloat16,
    device_memory_mib,
    model_shape,
    serving_dtype,
)
from ..errors import field_error
from ..gpu.section import GpuPoolConfig
from ..training.section import TrainingConfig, gpu_capacity, gpus_per_node
from .section import KubernetesName

# A Hub commit (40 hex) or a tag/branch name; a commit is what makes weights reproducible.
HUB_REVISION = re.compile(r"^([0-9a-f]{40}|[A-Za-z0-9][A-Za-z0-9._-]{0,127})$")
HUB_COMMIT = re.compile(r"^[0-9a-f]{40}$")
HUB_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
BLOB_PATH = r"^[a-z0-9]([a-z0-9-]{1,61}[a-z0-9])?/[^\s]+$"
HUGGING_FACE_TOKEN_KEY = "huggingFaceToken"
GIB = 1024**3
HELM_RELEASE_NAME_MAX = 53
"""A model's name is its inferencepool Helm release's: Helm refuses a longer one (helm/helm v3.17.0
pkg/chartutil/validate_name.go maxReleaseNameLen, "reserve 10 chars" under the 63 of a DNS label)."""
LABEL_VALUE_MAX = 63
"""A Kubernetes label value (apimachinery pkg/util/validation IsValidLabelValue)."""
STAGING_JOB_PREFIX = "weights-stage-"
"""The staging Job is `weights-stage-<model>`; the API server labels its pods `job-name` and
`batch.kubernetes.io/job-name` with that name (kubernetes v1.36 pkg/registry/batch/job/strategy.go
generateSelector), a label value."""
REVISION_HASH_MAX = 10
"""A StatefulSet labels its pods `controller-revision-hash: <StatefulSet name>-<hash>` (kubernetes v1.36
pkg/controller/history ControllerRevisionName; the hash is a uint32's decimal digits through
rand.SafeEncodeString: at most 10 characters), a label value. A LeaderWorkerSet's leader StatefulSet is named
after it, each group's workers' `<name>-<group index>` (kubernetes-sigs/lws v0.10.0 pkg/controllers)."""
PICKER_NAME_PREFIX = 40
"""The inferencepool chart names the picker's Deployment, Service, ConfigMap, ServiceAccount and RBAC after the first
40 characters of the release name plus `-epp` (gateway-api-inference-extension v1.5.0
config/charts/epplib/templates/_helpers.tpl, `trunc 40`): two models sharing those collide."""


class ModelWeightsConfig(ConfigModel):
    """Where a model's weights come from: the Hugging Face Hub, or a path in the platform's Blob data account."""

    hugging_face: str | None = Field(
        default=None,
        pattern=HUB_ID,
        description="Hub id (<org>/<model>), e.g. Qwen/Qwen2.5-0.5B-Instruct; a model of config/catalog/models.py",
    )
    revision: str | None = Field(
        default=None,
        description="Hub commit (40 hex) or tag the weights are read at; prod requires it with huggingFace",
    )
    blob: str | None = Field(
        default=None,
        pattern=BLOB_PATH,
        description="<container>/<path> in the platform's Lustre/Blob data account, mounted read-only (no token)",
    )
    catalog_id: str | None = Field(
        default=None,
        description="With blob: the Hub id of the catalogued model these weights are a copy of (sizes the GPUs)",
    )
    token_secret: bool = Field(
        default=False,
        description="Read the Hub with the stack secret aks-gpu-platform:huggingFaceToken (`pulumi config set "
        "--secret huggingFaceToken`); gated models need it",
    )

    @model_validator(mode="after")
    def _check_source(self) -> ModelWeightsConfig:
        if (self.hugging_face is None) == (self.blob is None):
            raise field_error(
                "huggingFace", self.hugging_face, "set exactly one of huggingFace (a Hub id) or blob (a Blob path)"
            )
        if self.revision is not None and not HUB_REVISION.match(self.revision):
            raise field_error("revision", self.revision, "a Hub commit (40 lowercase hex) or a tag name")
        if self.blob is not None:
            if self.revision is not None:
                raise field_error("revision", self.revision, "only with huggingFace; a Blob path has no revision")
            if self.token_secret:
                raise field_error("tokenSecret", True, "only with huggingFace; Blob weights are read without a token")
            if self.catalog_id is None:
                raise field_error(
                    "catalogId", None, f"blob weights need the catalogued model they copy, one of {sorted(MODELS)}"
                )
        elif self.catalog_id is not None:
            raise field_error("catalogId", self.catalog_id, "only with blob; huggingFace names the model itself")
        return self

    @property
    def model_id(self) -> str:
        """The catalog key: the Hub id, or the model the Blob copy is of."""
        found = self.hugging_face or self.catalog_id
        assert found is not None, "checked by _check_source"
        return found


class ModelSloConfig(ConfigModel):
    """What callers are promised; the alert fires when the model misses it."""

    time_to_first_token_p90_seconds: float = Field(
        gt=0, le=600, alias="timeToFirstTokenP90Seconds", description="Time to first token at p90, seconds"
    )


class ServedModelConfig(ConfigModel):
    """One model served by vLLM behind the inference gateway, callable by its teams."""

    name: KubernetesName = Field(
        description="Served model name (the API's `model`), route and label; unique, starting with a letter, at most "
        "53 characters (its Helm release), 49 with huggingFace weights (its staging Job's label), across nodes 51 "
        "less the digits of maxReplicas - 1 (its StatefulSets' revision label), and unique in its first 40 (its "
        "endpoint picker's name)"
    )
    weights: ModelWeightsConfig = Field(description="Where the weights come from")
    engine: Literal["vllm"] = Field(default="vllm", description="Serving engine, pinned in config/catalog/images.py")
    pool: str = Field(description="The gpuPools[].name (NVIDIA) the replicas run on")
    tensor_parallel: int = Field(
        default=1, ge=1, le=8, description="GPUs one pod shards the model over; divides the pool's GPUs per node"
    )
    nodes: int = Field(
        default=1,
        ge=1,
        le=16,
        description="Nodes one replica spans (pipeline parallel through a LeaderWorkerSet); >1 needs InfiniBand",
    )
    dtype: Literal["auto", "bfloat16", "float16", "fp8"] = Field(
        default="auto",
        description="Weights dtype: auto is bfloat16 on compute capability 8.0+, float16 below (T4); fp8 is "
        "vLLM's online fp8 quantization",
    )
    max_model_len: int = Field(
        ge=256, le=1_048_576, description="Longest sequence (prompt + output) in tokens; its KV cache must fit"
    )
    min_replicas: int = Field(default=1, ge=0, le=1000, description="Replicas kept up; 0 only with scaleToZero")
    max_replicas: int = Field(ge=1, le=1000, description="Most replicas; each holds tensorParallel x nodes GPUs")
    scale_to_zero: bool = Field(
        default=False,
        description="Allow minReplicas 0: the first request waits for a node, the image and the weights; "
        "not for multi-node models, an SLO below the pool's node start, or an SLO of 60 s or more (the longest "
        "hold in the endpoint picker the SLO alert tells apart)",
    )
    teams: list[str] = Field(min_length=1, description="training.teams[].name allowed to call the model")
    shared_prefix_cache: bool = Field(
        default=False,
        description="With more than one team: keep vLLM's prefix cache on and shared by them, which lets each team "
        "time the others' prompts (a prompt that starts like a recent one answers sooner); off, such a model runs "
        "with --no-enable-prefix-caching",
    )
    slo: ModelSloConfig = Field(description="Time-to-first-token objective the alert checks")

    @property
    def prefix_caching(self) -> bool:
        """vLLM keeps its prefix cache: one team, or its teams opted to share it (vLLM 0.34.0 separates cached
        prefixes only by the body's cache_salt, which the gateway cannot set)."""
        return len(self.teams) == 1 or self.shared_prefix_cache

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel * self.nodes

    @property
    def shape(self) -> ModelShape:
        found = model_shape(self.weights.model_id)
        assert found is not None, "checked by check_models"
        return found

    @model_validator(mode="after")
    def _check_replicas(self) -> ServedModelConfig:
        if self.min_replicas > self.max_replicas:
            raise field_error("minReplicas", self.min_replicas, f"must not exceed maxReplicas ({self.max_replicas})")
        if self.min_replicas == 0 and not self.scale_to_zero:
            raise field_error(
                "minReplicas",
                0,
                "0 needs scaleToZero: true, and the first request then waits for a GPU node, the vLLM image and "
                "the weights; keep at least 1 for a model with callers waiting",
            )
        if self.scale_to_zero and self.nodes > 1:
            raise field_error(
                "scaleToZero",
                True,
                f"a multi-node model (nodes {self.nodes}) starts a whole LeaderWorkerSet group of InfiniBand nodes, "
                "far beyond the route's timeout: keep minReplicas >= 1",
            )
        if len(set(self.teams)) != len(self.teams):
            raise field_error("teams", self.teams, "each team may appear once")
        return self


class InferenceConfig(ConfigModel):
    """LLM serving: models behind one inference gateway, routed by the endpoint picker, scaled on queue and KV cache."""

    models: list[ServedModelConfig] = Field(
        default_factory=lambda: list[ServedModelConfig](), description="Served models; none: nothing is deployed"
    )
    gateway_internal: bool = Field(
        default=True, description="The gateway gets an internal Azure load balancer (false: a public address)"
    )
    namespace: KubernetesName = Field(
        default="models", description="Namespace of the model servers, their pools and endpoint pickers"
    )
    team_requests_per_minute: int = Field(
        default=600,
        ge=1,
        le=1_000_000,
        description="Requests a team may send through the gateway per minute, across its models (each gateway pod "
        "counts its own); past it the gateway answers 429",
    )

    @model_validator(mode="after")
    def _check_names(self) -> InferenceConfig:
        seen: dict[str, int] = {}
        pickers: dict[str, int] = {}
        for i, model in enumerate(self.models):
            if model.name in seen:
                raise field_error(f"models[{i}].name", model.name, f"must be unique; models[{seen[model.name]}] has it")
            seen[model.name] = i
            if not model.name[0].isalpha():
                raise field_error(
                    f"models[{i}].name",
                    model.name,
                    "must start with a letter: the inferencepool chart names a Service `<name>-epp` and Service "
                    "names are DNS-1035 labels (Kubernetes ValidateServiceName)",
                )
            limit, reason = name_limit(model)
            if len(model.name) > limit:
                raise field_error(
                    f"models[{i}].name", model.name, f"{len(model.name)} characters; at most {limit}: {reason}"
                )
            prefix = model.name[:PICKER_NAME_PREFIX]
            if prefix in pickers:
                other = self.models[pickers[prefix]].name
                raise field_error(
                    f"models[{i}].name",
                    model.name,
                    f"shares its first {PICKER_NAME_PREFIX} characters with models[{pickers[prefix]}] ({other!r}): "
                    f"the inferencepool chart names each picker `<first {PICKER_NAME_PREFIX} characters>-epp` "
                    "(epplib templates/_helpers.tpl), so both would write one picker Deployment, Service and "
                    "ConfigMap; make the names differ within their first 40 characters",
                )
            pickers[prefix] = i
        return self


def name_limit(model: ServedModelConfig) -> tuple[int, str]:
    """The longest name the model's objects allow, and why: the tightest of the systems that read it."""
    limits = [
        (
            HELM_RELEASE_NAME_MAX,
            "it names the model's inferencepool Helm release, and Helm refuses longer ones "
            "(pkg/chartutil/validate_name.go)",
        )
    ]
    if model.weights.hugging_face:
        limits.append(
            (
                LABEL_VALUE_MAX - len(STAGING_JOB_PREFIX),
                f"its staging Job `{STAGING_JOB_PREFIX}<name>` gets the label job-name with that name, and a label "
                f"value holds at most {LABEL_VALUE_MAX} characters",
            )
        )
    if model.nodes > 1:
        last_group = f"-{model.max_replicas - 1}"
        limits.append(
            (
                LABEL_VALUE_MAX - REVISION_HASH_MAX - 1 - len(last_group),
                f"its LeaderWorkerSet's StatefulSets, up to `<name>{last_group}` for maxReplicas "
                f"{model.max_replicas}, label their pods `controller-revision-hash: <StatefulSet>-<hash of up to "
                f"{REVISION_HASH_MAX}>`, at most {LABEL_VALUE_MAX} characters",
            )
        )
    return min(limits, key=lambda limit: limit[0])


def engine_memory_budget(model: ServedModelConfig, pool: GpuPoolConfig) -> float:
    """Bytes vLLM 0.34.0 leaves for the weights and the KV cache over a replica's GPUs: per GPU,
    ceil(CUDA-reported total x --gpu-memory-utilization) (vllm/v1/worker/utils.py request_memory) less the activation
    peak, CUDA graphs and context (vllm/v1/worker/gpu_worker.py determine_available_memory; a stated margin)."""
    reported, _ = device_memory_mib(pool.sku.gpu_model, pool.sku.gpu_memory_gib)
    per_gpu = math.ceil(reported * MIB * GPU_MEMORY_UTILIZATION) - ACTIVATION_AND_GRAPHS_GIB * GIB
    return model.gpus_per_replica * per_gpu


def _memory_fit(model: ServedModelConfig, pool: GpuPoolConfig) -> str | None:
    """Why the model does not fit its GPUs, or None."""
    shape = model.shape
    dtype = serving_dtype(model.dtype, pool.sku.gpu_model)
    weights = shape.weight_bytes(dtype)
    kv = shape.kv_bytes_per_token * model.max_model_len
    gpus = model.gpus_per_replica
    usable = engine_memory_budget(model, pool)
    if weights + kv <= usable:
        return None
    reported, _ = device_memory_mib(pool.sku.gpu_model, pool.sku.gpu_memory_gib)
    return (
        f"{shape.hub_id} in {dtype} needs {weights / GIB:.1f} GiB of weights + {kv / GIB:.1f} GiB of KV cache for "
        f"maxModelLen {model.max_model_len} ({shape.kv_bytes_per_token} B/token) = {(weights + kv) / GIB:.1f} GiB, "
        f"but vLLM's budget on {gpus} x {pool.sku.gpu_model} ({reported:,} MiB each as CUDA reports it, "
        f"--gpu-memory-utilization {GPU_MEMORY_UTILIZATION}, less {ACTIVATION_AND_GRAPHS_GIB:g} GiB per GPU for "
        f"activations and CUDA graphs) is {usable / GIB:.1f} GiB: lower maxModelLen, raise tensorParallel/nodes, "
        "use fp8 or a larger GPU"
    )


PICKER_HOLD_CEILING_SECONDS = 60.0
"""The last finite bucket of the picker's inference_extension_flow_control_request_queue_duration_seconds
(gateway-api-inference-extension v1.5.0 pkg/epp/metrics/metrics.go l.395): histogram_quantile reads a longer hold as
this."""


def _wake_floor_seconds(pool: GpuPoolConfig) -> float:
    """The least a request that wakes a model from zero replicas waits for a GPU node: the autoscaler's delay plus
    the lowest published provisioning time of the pool's size family (0 where none is published)."""
    provisioning = node_provisioning(pool.sku.family)
    return (AUTOSCALER_GPU_DELAY.low_s or 0) + (provisioning.low_s or 0)


def _check_model(i: int, model: ServedModelConfig, pool: GpuPoolConfig, environment: str) -> None:
    path = f"inference.models[{i}]"
    shape = model_shape(model.weights.model_id)
    if shape is None:
        key = "weights.huggingFace" if model.weights.hugging_face else "weights.catalogId"
        raise field_error(
            f"{path}.{key}",
            model.weights.model_id,
            f"not in the model catalog (config/catalog/models.py), which sizes GPUs from sourced shapes: "
            f"{sorted(MODELS)}; add a row with its config.json source to serve another",
        )
    if (
        model.weights.hugging_face
        and environment == "prod"
        and not (model.weights.revision and HUB_COMMIT.match(model.weights.revision))
    ):
        raise field_error(
            f"{path}.weights.revision",
            model.weights.revision,
            "prod serves reproducible weights: a Hub commit (40 lowercase hex) from the model's 'Files and versions'",
        )
    if shape.gated and model.weights.hugging_face and not model.weights.token_secret:
        raise field_error(
            f"{path}.weights.tokenSecret",
            False,
            f"{shape.hub_id} is gated ({shape.license}): the Hub serves it only with a token of an account that "
            "accepted the licence; set tokenSecret: true and `pulumi config set --secret huggingFaceToken <token>`",
        )
    if model.max_model_len > shape.max_position_embeddings:
        raise field_error(
            f"{path}.maxModelLen",
            model.max_model_len,
            f"{shape.hub_id} is built for at most {shape.max_position_embeddings} tokens (max_position_embeddings)",
        )
    per_node = gpus_per_node(pool)
    if pool.mig_profile is not None or pool.sharing is not None:
        raise field_error(
            f"{path}.pool",
            model.pool,
            "a model server needs whole GPUs: pool "
            f"{pool.name} is {'cut into MIG slices' if pool.mig_profile else 'shared between pods'}",
        )
    if model.tensor_parallel > per_node or per_node % model.tensor_parallel:
        divisors = [d for d in range(1, per_node + 1) if per_node % d == 0]
        raise field_error(
            f"{path}.tensorParallel",
            model.tensor_parallel,
            f"must divide the {per_node} GPUs of a {pool.vm_size} node: one of {divisors}",
        )
    if model.nodes > 1 and not pool.infiniband:
        raise field_error(
            f"{path}.nodes",
            model.nodes,
            f"a model across nodes talks over InfiniBand; pool {pool.name} has infiniband off "
            f"(IB sizes: {sorted(s for s, sku in GPU_SKUS.items() if sku.infiniband)})",
        )
    if model.dtype == "bfloat16" and not computes_bfloat16(pool.sku.gpu_model):
        raise field_error(
            f"{path}.dtype",
            "bfloat16",
            f"{pool.sku.gpu_model} has compute capability below 8.0 and vLLM refuses bfloat16 there: use float16 "
            "(or auto)",
        )
    problem = _memory_fit(model, pool)
    if problem is not None:
        raise field_error(f"{path}.maxModelLen", model.max_model_len, problem)
    needed = model.max_replicas * model.gpus_per_replica
    if needed > gpu_capacity(pool):
        raise field_error(
            f"{path}.maxReplicas",
            model.max_replicas,
            f"{model.max_replicas} replicas x {model.gpus_per_replica} GPUs = {needed}, but pool {pool.name} holds "
            f"{gpu_capacity(pool)} (maxCount {pool.max_count} x {per_node})",
        )
    if model.scale_to_zero:
        _check_wake_against_slo(path, model, pool)


def _check_wake_against_slo(path: str, model: ServedModelConfig, pool: GpuPoolConfig) -> None:
    """The SLO alert reads the caller's time to first token as the time held in the endpoint picker plus vLLM's own
    (components/inference/model_dashboards.py). A request that wakes the model is held in the picker for the whole
    wake, so on that same quantity a wake is at least the wake floor, and the picker's histogram reads any hold
    longer than its last finite bucket as that bucket."""
    slo = model.slo.time_to_first_token_p90_seconds
    floor = _wake_floor_seconds(pool)
    if slo < floor:
        raise field_error(
            f"{path}.scaleToZero",
            True,
            f"a request that wakes the model is held in the endpoint picker at least {floor:.0f} s for a "
            f"{pool.sku.family} node (autoscaler delay + published provisioning, config/catalog/cold_start.py), so "
            f"its time to first token as the SLO alert reads it (time held in the picker + vLLM's) is above the "
            f"SLO's {slo:g} s on every wake: keep minReplicas >= 1",
        )
    if slo >= PICKER_HOLD_CEILING_SECONDS:
        raise field_error(
            f"{path}.scaleToZero",
            True,
            f"the SLO alert reads the time a request is held in the endpoint picker from a histogram whose last "
            f"bucket is {PICKER_HOLD_CEILING_SECONDS:g} s, so a wake longer than that reads as "
            f"{PICKER_HOLD_CEILING_SECONDS:g} s and an SLO of {slo:g} s is never seen missed by a wake: keep "
            f"minReplicas >= 1, or set slo.timeToFirstTokenP90Seconds below {PICKER_HOLD_CEILING_SECONDS:g}",
        )


def check_models(
    inference: InferenceConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    training: TrainingConfig,
    environment: str,
) -> None:
    """Each model against the pools, the teams and the catalog, before any resource exists."""
    pools = {p.name: p for p in gpu_pools}
    teams = [t.name for t in training.teams] if training.enabled else []
    for i, model in enumerate(inference.models):
        path = f"inference.models[{i}]"
        pool = pools.get(model.pool)
        if pool is None:
            raise field_error(f"{path}.pool", model.pool, f"must name a GPU pool in gpuPools: {sorted(pools)}")
        if pool.sku.vendor != "nvidia":
            raise field_error(
                f"{path}.pool", model.pool, f"vLLM is served on NVIDIA pools; {pool.vm_size} has {pool.sku.gpu_model}"
            )
        for j, team in enumerate(model.teams):
            if team not in teams:
                raise field_error(
                    f"{path}.teams[{j}]",
                    team,
                    f"must name a team of training.teams (with training on): {teams}",
                )
        _check_model(i, model, pool, environment)
    _check_kept_up_beside_quotas(inference, pools, training)


def _check_kept_up_beside_quotas(
    inference: InferenceConfig, pools: dict[str, GpuPoolConfig], training: TrainingConfig
) -> None:
    """Nominal quota is a guarantee: a job using all of it must find the GPUs free. Replicas a model keeps up
    (minReplicas) hold GPUs whenever it is idle, so they must fit beside the teams' nominal quotas on their pool."""
    nominal: dict[str, int] = {}
    for team in training.teams if training.enabled else []:
        for quota in team.quotas:
            nominal[quota.pool] = nominal.get(quota.pool, 0) + quota.gpus
    kept: dict[str, int] = {}
    for i, model in enumerate(inference.models):
        kept[model.pool] = kept.get(model.pool, 0) + model.min_replicas * model.gpus_per_replica
        pool = pools[model.pool]
        if nominal.get(pool.name, 0) + kept[pool.name] > gpu_capacity(pool):
            raise field_error(
                f"inference.models[{i}].minReplicas",
                model.min_replicas,
                f"pool {pool.name} holds {gpu_capacity(pool)} GPUs; the teams' nominal quotas there take "
                f"{nominal.get(pool.name, 0)} and the models' kept-up replicas {kept[pool.name]}: a job using its "
                "whole quota would be admitted and never placed. Lower minReplicas or a quota, or raise maxCount",
            )


def missing_token(inference: InferenceConfig, token: SecretStr | None) -> list[str]:
    """Problems for models that read the Hub with a token the stack does not hold. Checked for a real deployment
    only (config/loader.py): the offline plan and the tests read stack files, where no secret is decrypted."""
    if token is not None and token.get_secret_value():
        return []
    return [
        f"inference.models[{i}].weights.tokenSecret: got True; the stack has no secret {HUGGING_FACE_TOKEN_KEY}: run "
        f"`pulumi config set --secret {HUGGING_FACE_TOKEN_KEY} <token>` (a Hub token with read access to "
        f"{model.weights.model_id})"
        for i, model in enumerate(inference.models)
        if model.weights.token_secret
    ]
