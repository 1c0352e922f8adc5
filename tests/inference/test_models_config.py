"""inference.models: each rule refuses a model that could not serve, before any resource, naming the field."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest
import yaml
from pydantic_core import PydanticCustomError

from aks_gpu_platform.components.inference.model_dashboards import slo_alert
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.models import serving_dtype
from aks_gpu_platform.config.loader import refuse_missing_secrets
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.config.rules import check_rdma_pod_security
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.upstream.promql import selectors
from tools import REPO_ROOT

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"
QWEN_05B = "Qwen/Qwen2.5-0.5B-Instruct"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@cache
def _stack(stack: str) -> dict[str, Any]:
    return settings_of(load_stack_file(stack, REPO_ROOT))


def _model(**overrides: Any) -> dict[str, Any]:
    model: dict[str, Any] = {
        "name": "chat",
        "weights": {"huggingFace": QWEN_05B},
        "pool": "gput4",
        "dtype": "float16",
        "maxModelLen": 4096,
        "minReplicas": 1,
        "maxReplicas": 2,
        "teams": ["ml"],
        "slo": {"timeToFirstTokenP90Seconds": 2},
    }
    model.update(overrides)
    return model


def _prod_model(**overrides: Any) -> dict[str, Any]:
    model = {
        "weights": {"huggingFace": LLAMA_8B, "revision": COMMIT, "tokenSecret": True},
        "pool": "h100z1",
        "dtype": "auto",
        "teams": ["llm"],
    }
    return _model(**{**model, **overrides})


def _load(stack: str, *models: dict[str, Any], token: str | None = None, **inference: Any) -> PlatformConfig:
    settings = copy.deepcopy(_stack(stack))
    settings["inference"] = {"models": list(models), **inference}
    if token is not None:
        settings["huggingFaceToken"] = token
    return load_platform_config(settings)


def _refused(stack: str, *models: dict[str, Any], token: str | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(stack, *models, token=token)
    assert len(caught.value.problems) == 1, f"one clear problem, not a cascade: {caught.value.problems}"
    return caught.value.problems[0]


def test_stacks_without_inference_deploy_no_model() -> None:
    settings = copy.deepcopy(_stack("prod"))
    del settings["inference"]
    cfg = load_platform_config(settings)
    assert cfg.inference.models == [], "a stack that never mentions inference must serve nothing"
    assert cfg.inference.gateway_internal, "the gateway must stay off the internet unless a stack asks"


def test_the_small_model_fits_a_t4_and_keeps_its_settings() -> None:
    cfg = _load("dev", _model())
    (model,) = cfg.inference.models
    assert (model.pool, model.tensor_parallel, model.min_replicas, model.max_replicas) == ("gput4", 1, 1, 2), (
        "the deploy reads pool, parallelism and replicas from the validated model"
    )


def test_an_8b_model_in_16_bit_does_not_fit_a_t4() -> None:
    # 8,030,261,248 params x 2 B = 14.96 GiB of weights; a T4 reports 15,360 MiB in nvidia-smi (not 16 GB), taken as
    # 14,336 MiB under CUDA (the stated 1,024 MiB reserve), of which vLLM budgets 90 % = 12,902 MiB, less 2 GiB for
    # activations and CUDA graphs = 10.6 GiB: vLLM would fail to load.
    problem = _refused("dev", _model(weights={"huggingFace": LLAMA_8B, "tokenSecret": True}), token="hf_x")
    assert problem.startswith("inference.models[0].maxModelLen:"), f"names the field to change: {problem}"
    assert "15.0 GiB of weights" in problem and "10.6 GiB" in problem, f"shows the arithmetic: {problem}"
    assert "14,336 MiB" in problem, f"names the memory vLLM sees on the device: {problem}"


@pytest.mark.parametrize(("max_model_len", "fits"), [(22873, True), (22874, False), (26046, False)])
@pytest.mark.parametrize("spread", [{"tensorParallel": 2}, {"nodes": 2}])
def test_the_kv_cache_for_max_model_len_must_fit_beside_the_weights(
    max_model_len: int, fits: bool, spread: dict[str, int]
) -> None:
    # By hand, vLLM 0.34.0's own budget: it takes an H100 80GB's total from the CUDA runtime, 79.11 GiB = 81,008 MiB
    # (vllm-project/vllm issue 27508), not nvidia-smi's 81,559; ceil(81,008 MiB x 0.9) = 76,448,740,148 B less 2 GiB
    # for activations and CUDA graphs = 74,301,256,500 B per GPU, 148,602,513,000 B on two; less 70,553,706,496 x 2
    # B = 141,107,412,992 B of weights leaves 7,495,100,008 B / (2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B
    # per token) = 22,873 tokens. (On nvidia-smi's total 26,046 would pass and the server fail at start.)
    model = _prod_model(
        weights={"huggingFace": LLAMA_70B, "revision": COMMIT, "tokenSecret": True},
        maxModelLen=max_model_len,
        maxReplicas=1,
        **spread,
    )
    if fits:
        _load("prod", model, token="hf_x")
    else:
        problem = _refused("prod", model, token="hf_x")
        assert f"inference.models[0].maxModelLen: got {max_model_len}" in problem, f"past the KV room: {problem}"


def test_bfloat16_is_refused_below_compute_capability_8() -> None:
    problem = _refused("dev", _model(dtype="bfloat16"))
    assert problem.startswith("inference.models[0].dtype: got 'bfloat16'"), problem
    assert "float16" in problem, f"says what to use instead: {problem}"
    cfg = _load("dev", _model(dtype="auto"))
    (pool,) = cfg.gpu_pools
    assert serving_dtype(cfg.inference.models[0].dtype, pool.sku.gpu_model) == "float16", "auto is float16 on a T4"
    assert serving_dtype("auto", "H100-80GB") == "bfloat16", "and bfloat16 where the GPU computes it"


@pytest.mark.parametrize(("tp", "ok"), [(1, True), (2, True), (4, True), (8, True), (3, False), (16, False)])
def test_tensor_parallel_divides_the_node_gpus(tp: int, ok: bool) -> None:
    model = _prod_model(tensorParallel=tp, maxReplicas=1)
    if ok:
        _load("prod", model, token="hf_x")
        return
    with pytest.raises(ConfigError) as caught:
        _load("prod", model, token="hf_x")
    problem = caught.value.problems[0]
    assert "tensorParallel" in problem, f"names the field: {problem}"


def test_tensor_parallel_above_the_node_is_named_with_the_choices() -> None:
    problem = _refused("prod", _prod_model(tensorParallel=3, maxReplicas=1), token="hf_x")
    assert problem.startswith("inference.models[0].tensorParallel: got 3"), problem
    assert "[1, 2, 4, 8]" in problem, f"lists what divides 8 GPUs: {problem}"


def test_a_model_across_nodes_needs_infiniband() -> None:
    weights = {"huggingFace": LLAMA_8B, "revision": COMMIT, "tokenSecret": True}
    problem = _refused("prod", _prod_model(pool="gpua100", nodes=2, weights=weights, maxReplicas=1), token="hf_x")
    assert problem.startswith("inference.models[0].nodes: got 2"), problem
    assert "InfiniBand" in problem, problem
    _load("prod", _prod_model(nodes=2, maxReplicas=1), token="hf_x")


def test_max_replicas_must_fit_the_pool() -> None:
    # gput4: maxCount 4 x 1 T4.
    _load("dev", _model(maxReplicas=4))
    problem = _refused("dev", _model(maxReplicas=5))
    assert problem.startswith("inference.models[0].maxReplicas: got 5"), problem
    assert "holds 4" in problem, f"says what the pool holds: {problem}"
    # h100z1: 4 nodes x 8 = 32 GPUs; TP 8 x 5 replicas = 40.
    problem = _refused("prod", _prod_model(tensorParallel=8, maxReplicas=5), token="hf_x")
    assert "= 40, but pool h100z1 holds 32" in problem, problem


def test_a_replica_across_nodes_counts_the_gpus_of_every_node() -> None:
    # h100z1: 4 nodes x 8 = 32 GPUs; a replica of TP 4 over 2 nodes holds 8: 4 replicas fit, 5 (40 GPUs) do not.
    _load("prod", _prod_model(tensorParallel=4, nodes=2, maxReplicas=4), token="hf_x")
    problem = _refused("prod", _prod_model(tensorParallel=4, nodes=2, maxReplicas=5), token="hf_x")
    assert problem.startswith("inference.models[0].maxReplicas: got 5"), (
        f"five 8-GPU replicas need 40 GPUs of a 32-GPU pool: the fifth group would stay pending: {problem}"
    )
    assert "5 replicas x 8 GPUs = 40" in problem, f"shows the arithmetic over both nodes: {problem}"


def test_a_gated_model_needs_the_token_secret() -> None:
    problem = _refused("prod", _prod_model(weights={"huggingFace": LLAMA_8B, "revision": COMMIT}), token="hf_x")
    assert problem.startswith("inference.models[0].weights.tokenSecret: got False"), problem
    assert "gated" in problem, problem


def test_a_real_deployment_refuses_a_token_model_without_the_secret() -> None:
    cfg = _load("prod", _prod_model())
    with pytest.raises(ConfigError) as caught:
        refuse_missing_secrets(cfg)
    (problem,) = caught.value.problems
    assert problem.startswith("inference.models[0].weights.tokenSecret: got True"), problem
    assert "pulumi config set --secret huggingFaceToken" in problem, f"says how to set it: {problem}"
    with_token = _load("prod", _prod_model(), token="hf_x")
    refuse_missing_secrets(with_token)
    assert "hf_x" not in repr(with_token) and "hf_x" not in str(with_token.model_dump()), "the token never shows"
    refuse_missing_secrets(_load("dev", _model()))


def test_prod_pins_hub_weights_to_a_commit() -> None:
    weights = {"huggingFace": LLAMA_8B, "revision": "main", "tokenSecret": True}
    problem = _refused("prod", _prod_model(weights=weights), token="hf_x")
    assert problem.startswith("inference.models[0].weights.revision: got 'main'"), problem
    _load("dev", _model(weights={"huggingFace": QWEN_05B, "revision": "main"}))


def test_an_uncatalogued_model_is_refused_with_the_catalog() -> None:
    problem = _refused("dev", _model(weights={"huggingFace": "mistralai/Mistral-7B-v0.1"}))
    assert problem.startswith("inference.models[0].weights.huggingFace: got 'mistralai/Mistral-7B-v0.1'"), problem
    assert QWEN_05B in problem, f"lists what can be served: {problem}"


def test_blob_weights_name_the_model_they_copy() -> None:
    problem = _refused("prod", _prod_model(weights={"blob": {"path": "models/llama"}}))
    assert "weights.catalogId" in problem, problem
    cfg = _load("prod", _prod_model(weights={"blob": {"path": "models/llama-ft"}, "catalogId": LLAMA_8B}))
    assert cfg.inference.models[0].weights.model_id == LLAMA_8B, "the Blob copy is sized as the catalogued model"
    problem = _refused("prod", _prod_model(weights={"blob": {"path": "models/l"}, "huggingFace": LLAMA_8B}))
    assert "exactly one of huggingFace" in problem, problem


def test_pool_and_teams_must_exist() -> None:
    problem = _refused("dev", _model(pool="gpua100"))
    assert problem.startswith("inference.models[0].pool: got 'gpua100'") and "gput4" in problem, problem
    problem = _refused("dev", _model(teams=["ml", "nlp"]))
    assert problem.startswith("inference.models[0].teams[1]: got 'nlp'") and "['ml']" in problem, problem


def test_scale_to_zero_is_explicit() -> None:
    problem = _refused("dev", _model(minReplicas=0))
    assert problem.startswith("inference.models[0].minReplicas: got 0") and "scaleToZero" in problem, problem
    _load("dev", _model(minReplicas=0, scaleToZero=True, slo={"timeToFirstTokenP90Seconds": 45}))


def test_scale_to_zero_is_refused_where_a_wake_misses_the_slo() -> None:
    # The autoscaler alone waits 30 s before it adds a GPU node (config/catalog/cold_start.py).
    problem = _refused("dev", _model(minReplicas=0, scaleToZero=True, slo={"timeToFirstTokenP90Seconds": 29}))
    assert problem.startswith("inference.models[0].scaleToZero: got True"), problem
    assert "at least 30 s" in problem, problem
    assert "held in the endpoint picker" in problem and "time held in the picker + vLLM's" in problem, (
        f"the refusal must reason on the quantity the SLO alert reads: {problem}"
    )


HOLD_METRIC = "inference_extension_flow_control_request_queue_duration_seconds"


def test_scale_to_zero_is_refused_where_the_alert_cannot_see_a_wake() -> None:
    """The alert reads the picker's hold from GAIE v1.5.0's histogram: histogram_quantile reads a hold past its
    last finite bucket as that bucket, so an SLO at or above it never sees a wake miss it."""
    upstream = json.loads((REPO_ROOT / "tests" / "fixtures" / "serving" / "upstream-names.json").read_text())
    last_bucket = max(upstream["epp_metrics"]["metrics"][HOLD_METRIC]["buckets"])
    alert = slo_alert("models", "chat", 45, flow_control=True)[1]
    assert any(s.metric == f"{HOLD_METRIC}_bucket" for s in selectors(alert)), "the refusal and the alert share it"
    problem = _refused("dev", _model(minReplicas=0, scaleToZero=True, slo={"timeToFirstTokenP90Seconds": last_bucket}))
    assert problem.startswith("inference.models[0].scaleToZero: got True"), problem
    assert f"{last_bucket:g} s" in problem and "held in the endpoint picker" in problem, problem
    _load("dev", _model(minReplicas=0, scaleToZero=True, slo={"timeToFirstTokenP90Seconds": last_bucket - 0.1}))


def test_a_multi_node_model_keeps_the_rdma_pod_security_policy() -> None:
    """Its servers add IPC_LOCK, which only Azure Policy's RDMA baseline admits and still bounds."""
    settings = copy.deepcopy(_stack("prod"))
    for pool in settings["gpuPools"]:
        if pool["name"] == "h100z3":
            pool["maxCount"] = 6  # room for the kept-up group beside the teams' quotas
    settings["inference"] = {"models": [_prod_model(pool="h100z3", nodes=2, tensorParallel=8, maxReplicas=1)]}
    settings["huggingFaceToken"] = "hf_x"
    cfg = load_platform_config(settings)
    off = cfg.security.model_copy(
        update={"pod_security": cfg.security.pod_security.model_copy(update={"enabled": False})}
    )
    no_training = cfg.training.model_copy(update={"teams": []})  # no InfiniBand team: the models are the reason
    with pytest.raises(PydanticCustomError) as caught:  # the rule's error, which validation reports as a problem
        check_rdma_pod_security(off, no_training, cfg.gpu_pools, cfg.inference)
    assert "span nodes" in str(caught.value) and "IPC_LOCK" in str(caught.value), caught.value
    single = cfg.inference.model_copy(
        update={"models": [m.model_copy(update={"nodes": 1}) for m in cfg.inference.models]}
    )
    check_rdma_pod_security(off, no_training, cfg.gpu_pools, single)


def test_scale_to_zero_is_refused_across_nodes() -> None:
    model = _prod_model(nodes=2, maxReplicas=1, minReplicas=0, scaleToZero=True)
    problem = _refused("prod", model, token="hf_x")
    assert problem.startswith("inference.models[0].scaleToZero: got True"), problem


def test_max_model_len_within_the_model_context() -> None:
    problem = _refused("dev", _model(maxModelLen=32769))
    assert problem.startswith("inference.models[0].maxModelLen: got 32769") and "32768" in problem, problem


def test_names_are_unique() -> None:
    problem = _refused("dev", _model(), _model(maxReplicas=1))
    assert problem.startswith("inference.models[1].name: got 'chat'"), problem


def test_kept_up_replicas_fit_beside_the_team_quotas() -> None:
    # h100z1: 4 x 8 = 32 GPUs, team llm's nominal quota 24: 8 left for kept-up replicas.
    _load("prod", _prod_model(minReplicas=8, maxReplicas=8), token="hf_x")
    problem = _refused("prod", _prod_model(minReplicas=9, maxReplicas=9), token="hf_x")
    assert problem.startswith("inference.models[0].minReplicas: got 9"), problem
    assert "quotas there take 24" in problem and "replicas 9" in problem, problem
    two = [_prod_model(minReplicas=4, maxReplicas=4), _prod_model(name="chat2", minReplicas=5, maxReplicas=5)]
    problem = _refused("prod", *two, token="hf_x")
    assert problem.startswith("inference.models[1].minReplicas"), f"models on one pool add up: {problem}"


def test_the_sample_server_does_not_take_the_gpus_quotas_and_kept_up_models_hold() -> None:
    # dev's gput4 at maxCount 3 holds 3 GPUs: team ml's nominal quota 2 and the model's kept-up replica 1. The
    # inference sample keeps one more GPU up; if it may land there, a job using ml's whole quota never places.
    settings = copy.deepcopy(_stack("dev"))
    (gput4,) = [p for p in settings["gpuPools"] if p["name"] == "gput4"]
    gput4["maxCount"] = 3
    settings["inference"] = {"models": [_model(minReplicas=1, maxReplicas=1)]}
    with pytest.raises(ConfigError) as caught:
        cfg = load_platform_config(settings)
        allowed = cfg.sample_inference_pools()
        kept = cfg.autoscaling.sample_inference.scaling.min_replicas * cfg.autoscaling.sample_inference.gpus_per_pod
        held = 2 + 1 + (kept if allowed is None or "gput4" in allowed else 0)
        assert held <= 3, f"gput4 would hold {held} GPUs kept or guaranteed out of 3: ml's quota is not a guarantee"
    (problem,) = caught.value.problems
    assert "kept-up replicas (1 GPU(s) here)" in problem, f"the refusal names what holds the GPUs: {problem}"


def test_kept_up_replicas_hold_all_their_gpus_beside_the_quotas() -> None:
    # h100z1: 32 GPUs, team llm's nominal quota 24: one TP-8 replica (8 GPUs) fits beside it, two (16) do not.
    _load("prod", _prod_model(tensorParallel=8, minReplicas=1, maxReplicas=1), token="hf_x")
    problem = _refused("prod", _prod_model(tensorParallel=8, minReplicas=2, maxReplicas=2), token="hf_x")
    assert problem.startswith("inference.models[0].minReplicas: got 2"), (
        f"two kept-up TP-8 replicas hold 16 GPUs, leaving 16 for a 24-GPU quota: a full-quota job never runs: {problem}"
    )
    assert "replicas 16" in problem, f"counts tensorParallel x nodes GPUs per kept-up replica: {problem}"


def test_the_llm_serving_example_excerpt_validates_on_dev() -> None:
    excerpt = yaml.safe_load((REPO_ROOT / "examples" / "llm-serving" / "inference.yaml").read_text())["config"]
    settings = copy.deepcopy(_stack("dev"))
    settings["inference"] = excerpt["aks-gpu-platform:inference"]
    (model,) = load_platform_config(settings).inference.models
    assert model.name in (REPO_ROOT / "examples" / "llm-serving" / "chat-job.yaml").read_text(), (
        "the example's job asks for the model the excerpt serves"
    )
