"""Models served from the GPU pools (`inference.models`): weights, engine, pool, parallelism, replicas, callers, SLO.

The sizing rules follow config/catalog/models.py: weights plus the KV cache of one maxModelLen sequence, plus the
LoRA slots of its adapters (adapters.py), must fit vLLM's own budget of tensorParallel x nodes GPUs (model_checks.py
engine_memory_budget). A model not in that catalog is
refused with the list of catalogued ones (no guessed shapes): add a sourced row to serve another.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from ..base import ConfigModel
from ..catalog.models import MODELS, ModelShape, model_shape
from ..errors import field_error
from .adapters import AdapterConfig, check_adapter_names, check_model_adapters
from .routing import ModelRoutingConfig, check_routing
from .section import KubernetesName
from .weights import BlobWeightsConfig

# A Hub commit (40 hex) or a tag/branch name; a commit is what makes weights reproducible.
HUB_REVISION = re.compile(r"^([0-9a-f]{40}|[A-Za-z0-9][A-Za-z0-9._-]{0,127})$")
HUB_COMMIT = re.compile(r"^[0-9a-f]{40}$")
HUB_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
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
    """Where a model's weights come from: the Hugging Face Hub, or a folder in a team's Blob container."""

    hugging_face: str | None = Field(
        default=None,
        pattern=HUB_ID,
        description="Hub id (<org>/<model>), e.g. Qwen/Qwen2.5-0.5B-Instruct; a model of config/catalog/models.py",
    )
    revision: str | None = Field(
        default=None,
        description="Hub commit (40 hex) or tag the weights are read at; prod requires it with huggingFace",
    )
    blob: BlobWeightsConfig | None = Field(
        default=None,
        description="A checkpoint folder in a team's Blob container (the Lustre HSM account: storage.lustre), "
        "streamed to the GPUs by every replica as a read-only identity of the model's own; no weights cache, no Hub",
    )
    catalog_id: str | None = Field(
        default=None,
        description="With blob: the Hub id of the catalogued model these weights are a copy or fine-tune of (same "
        "architecture and size: it sizes the GPUs)",
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
                "huggingFace",
                self.hugging_face,
                "set exactly one of huggingFace (a Hub id) or blob (a folder in a team's Blob container)",
            )
        if self.revision is not None and not HUB_REVISION.match(self.revision):
            raise field_error("revision", self.revision, "a Hub commit (40 lowercase hex) or a tag name")
        if self.blob is not None:
            if self.revision is not None:
                raise field_error("revision", self.revision, "only with huggingFace; a Blob path has no revision")
            if self.token_secret:
                raise field_error(
                    "tokenSecret", True, "only with huggingFace; Blob weights are read with the model's own identity"
                )
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
    adapters: list[AdapterConfig] = Field(
        default_factory=lambda: list[AdapterConfig](),
        description="LoRA adapters served on this model's replicas, each callable by its own name by the model's "
        "teams (config/inference/adapters.py)",
    )
    max_loras: int | None = Field(
        default=None,
        ge=1,
        description="With adapters: how many one batch may mix (vLLM --max-loras), each slot GPU memory taken from "
        "the KV cache; default one per adapter",
    )
    routing: ModelRoutingConfig = Field(
        default_factory=ModelRoutingConfig, description="How the endpoint picker scores the servers' prefix caches"
    )

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
        check_model_adapters(self)
        check_routing(self.routing, self.teams, self.prefix_caching, self.min_replicas)
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
        check_adapter_names(self.models)
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
