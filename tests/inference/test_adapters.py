"""LoRA adapters: each is staged at its commit, loaded by its base's vLLM servers, callable by name through the
base's route by the base's teams only, scored by the picker, counted in the memory fit, watched and priced per
adapter. Checked against vLLM 0.34.0 (tests/upstream/lora_serving.py), the endpoint picker v1.5.0
(tests/upstream/endpoint_picker.py), the gateway (tests/upstream/gateway_auth.py), the pinned CRDs and the scrape."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.inference.adapters import adapter_args
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.models import MODELS, ModelShape, serving_dtype
from aks_gpu_platform.config.inference.model_checks import engine_memory_budget
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.plan.adapter_cost import adapter_cost_lines
from aks_gpu_platform.plan.cost import pool_capacities
from aks_gpu_platform.plan.model_cost import model_costs
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.upstream.crd_schema import crd_problems
from tests.upstream.endpoint_picker import (
    Server,
    TokenCounts,
    config_problems,
    effective_config,
    picked,
    record_response,
    streamed_chunks,
)
from tests.upstream.engine_semantics import hub_download
from tests.upstream.gateway_auth import Request, Token, decide, deciding_rules, gateway_world, without_rule
from tests.upstream.lora_serving import (
    Adapter,
    Shape,
    VllmStartError,
    hub_snapshot,
    lora_tensor_bytes,
    streams_usage_in_every_chunk,
    vllm_lora_server,
)
from tests.upstream.promql import Evaluator, History, selectors
from tests.upstream.scrape import Container, Pod, Port, pod_monitor_scrape_configs, scrape, targets
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
UPSTREAM = json.loads((REPO_ROOT / "tests" / "fixtures" / "serving" / "upstream-names.json").read_text())
COMMIT = "0123456789abcdef0123456789abcdef01234567"
GATEWAY = "inference-gateway"
AUDIENCE = "inference-gateway"
MIB = 1024**2


def _settings(stack: str) -> dict[str, Any]:
    return settings_of(copy.deepcopy(load_stack_file(stack, REPO_ROOT)))


def _adapter(name: str, rank: int = 16, **source: Any) -> dict[str, Any]:
    return {"name": name, "source": source or {"huggingFace": f"org/{name}", "revision": COMMIT}, "rank": rank}


def _dev_model(**overrides: Any) -> dict[str, Any]:
    model: dict[str, Any] = {
        "name": "chat",
        "weights": {"huggingFace": "Qwen/Qwen2.5-1.5B-Instruct"},
        "pool": "gput4",
        "dtype": "float16",
        "maxModelLen": 32768,
        "minReplicas": 1,
        "maxReplicas": 1,
        "teams": ["ml"],
        "slo": {"timeToFirstTokenP90Seconds": 2},
    }
    model.update(overrides)
    return model


def _load(stack: str, *models: dict[str, Any]) -> PlatformConfig:
    settings = _settings(stack)
    settings["inference"] = {"models": list(models)}
    return load_platform_config(settings)


def _refused(stack: str, *models: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(stack, *models)
    assert len(caught.value.problems) == 1, f"one clear problem, not a cascade: {caught.value.problems}"
    return caught.value.problems[0]


def _objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


def _prod_llama() -> dict[str, Any]:
    (model,) = [m for m in _settings("prod")["inference"]["models"] if m["name"] == "llama-3-1-8b"]
    return model


# --- config: the shape of an adapter, its source, its name, its rank --------------------------------------------


def test_prod_serves_a_model_with_two_hub_adapters_at_commits() -> None:
    cfg = load_platform_config(_settings("prod"))
    with_adapters = [m for m in cfg.inference.models if m.adapters]
    assert [m.name for m in with_adapters] == ["llama-3-1-8b"]
    (model,) = with_adapters
    assert len(model.adapters) == 2
    for adapter in model.adapters:
        assert adapter.source.hugging_face and adapter.source.revision and len(adapter.source.revision) == 40


def test_a_blob_adapter_is_refused_naming_its_field_until_blob_adapters_are_served() -> None:
    model = _dev_model(adapters=[_adapter("good"), _adapter("from-blob", blob="adapters/support-bot")])
    problem = _refused("dev", model)
    assert problem.startswith("inference.models[0].adapters[1].source.blob: got 'adapters/support-bot'"), problem
    assert "not served yet" in problem and "huggingFace" in problem, f"says what to do instead: {problem}"


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ({"huggingFace": "org/x", "revision": "v1.0"}, "source.revision"),
        ({"huggingFace": "org/x"}, "source.revision"),
        ({"huggingFace": "org/x", "revision": COMMIT.upper()}, "source.revision"),
        ({}, "source.huggingFace"),
    ],
)
def test_one_bad_adapter_among_good_ones_is_named_alone(source: dict[str, Any], field: str) -> None:
    """A tag or branch cannot be resolved offline to the snapshot folder the servers load: a commit only."""
    bad = {"name": "bad", "source": source, "rank": 8}
    problem = _refused("dev", _dev_model(adapters=[_adapter("first"), bad, _adapter("third")]))
    assert problem.startswith(f"inference.models[0].adapters[1].{field}:"), problem


@pytest.mark.parametrize(("rank", "accepted"), [(1, True), (512, True), (513, False), (0, False)])
def test_an_adapter_rank_up_to_the_largest_vllm_reserves(rank: int, accepted: bool) -> None:
    model = _dev_model(maxModelLen=4096, adapters=[_adapter("a", rank=rank)])
    if accepted:
        _load("dev", model)
    else:
        assert _refused("dev", model).startswith("inference.models[0].adapters[0].rank:")


def test_an_adapter_name_up_to_what_its_staging_container_holds() -> None:
    longest = "a" * 55
    cfg = _load("dev", _dev_model(adapters=[_adapter(longest)]))
    assert cfg.inference.models[0].adapters[0].name == longest
    problem = _refused("dev", _dev_model(adapters=[_adapter("a" * 56)]))
    assert problem.startswith("inference.models[0].adapters[0].name:") and "container" in problem, problem


@pytest.mark.parametrize(
    ("models", "where", "why"),
    [
        ([_dev_model(adapters=[_adapter("chat")])], "models[0].adapters[0].name", "base model's name"),
        ([_dev_model(adapters=[_adapter("a"), _adapter("a")])], "models[0].adapters[1].name", "unique"),
        (
            [_dev_model(), _dev_model(name="other", adapters=[_adapter("chat")])],
            "models[1].adapters[0].name",
            "model chat already answers",
        ),
        (
            [_dev_model(adapters=[_adapter("a")]), _dev_model(name="other", adapters=[_adapter("a")])],
            "models[1].adapters[0].name",
            "an adapter of model chat",
        ),
    ],
)
def test_every_served_name_is_one_route_and_one_model_value(models: list[dict[str, Any]], where: str, why: str) -> None:
    problem = _refused("dev", *models)
    assert problem.startswith(f"inference.{where}:") and why in problem, problem


@pytest.mark.parametrize(
    ("model", "refused"),
    [
        (_dev_model(maxModelLen=4096, maxLoras=1, adapters=[_adapter("a"), _adapter("b")]), False),
        (_dev_model(maxModelLen=4096, maxLoras=2, adapters=[_adapter("a"), _adapter("b")]), False),
        (_dev_model(maxModelLen=4096, maxLoras=3, adapters=[_adapter("a"), _adapter("b")]), True),
        (_dev_model(maxModelLen=4096, maxLoras=1), True),
    ],
)
def test_lora_slots_are_at_most_one_per_adapter(model: dict[str, Any], refused: bool) -> None:
    if refused:
        assert _refused("dev", model).startswith("inference.models[0].maxLoras:")
    else:
        _load("dev", model)


def test_a_model_takes_as_many_adapters_as_its_route_has_rules_for() -> None:
    fifteen = [_adapter(f"a{i}", rank=8) for i in range(15)]
    _load("dev", _dev_model(maxModelLen=4096, adapters=fifteen))
    problem = _refused("dev", _dev_model(maxModelLen=4096, adapters=[*fifteen, _adapter("a15", rank=8)]))
    assert problem.startswith("inference.models[0].adapters: got '16 adapters'") and "16 rules" in problem, problem


# --- memory: the slots vLLM preallocates, taken from the KV cache ---------------------------------------------


def _shape(model: ModelShape) -> Shape:
    return Shape(
        layers=model.layers,
        hidden=model.hidden_size,
        q=model.attention_heads * model.head_dim,
        kv=model.kv_heads * model.head_dim,
        intermediate=model.intermediate_size,
        vocab=model.vocab_size,
        embedding_modules=model.lora_embeddings,
    )


@pytest.mark.parametrize("hub_id", sorted(MODELS))
def test_the_catalog_sizes_reproduce_each_models_parameter_count(hub_id: str) -> None:
    """The LoRA sizes (hidden, intermediate, vocab) are right if, with the attention fields, they rebuild the
    published parameter count of the Llama/Qwen2 layout exactly: attention (q, k, v, o; Qwen2 with q/k/v biases),
    the gated MLP, two RMSNorms per layer, the final norm, the embeddings (Qwen2.5 ties the LM head to them)."""
    m = MODELS[hub_id]
    h, q, kv = m.hidden_size, m.attention_heads * m.head_dim, m.kv_heads * m.head_dim
    tied = hub_id.startswith("Qwen/")
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * m.intermediate_size + 2 * h + ((q + 2 * kv) if tied else 0)
    assert m.layers * per_layer + m.vocab_size * h * (1 if tied else 2) + h == m.params


@pytest.mark.parametrize("hub_id", sorted(MODELS))
@pytest.mark.parametrize(("slots", "rank", "tp"), [(1, 16, 1), (3, 64, 2), (2, 8, 8)])
def test_the_fit_check_counts_the_lora_tensors_vllm_allocates(hub_id: str, slots: int, rank: int, tp: int) -> None:
    """The memory the check adds for a model's adapters is the size of every stacked LoRA tensor vLLM 0.34.0
    preallocates on each tensor-parallel rank, summed over the replica."""
    shape = MODELS[hub_id]
    if shape.attention_heads % tp or shape.kv_heads % tp:
        pytest.skip(f"{hub_id} does not shard over {tp} GPUs")
    from aks_gpu_platform.config.inference.adapters import lora_slot_bytes

    assert slots * lora_slot_bytes(shape, rank, tp) == lora_tensor_bytes(_shape(shape), slots, rank, tp)


def test_one_llama_8b_slot_at_rank_16_is_88_mib() -> None:
    """A figure worked by hand from vLLM's tensor shapes: r 16, bf16, one GPU."""
    llama = _shape(MODELS["meta-llama/Llama-3.1-8B-Instruct"])
    assert round(lora_tensor_bytes(llama, 1, 16, 1) / MIB, 1) == 88.1


def test_adapters_that_leave_no_kv_cache_are_refused_one_slot_past_the_budget() -> None:
    """Qwen2.5-1.5B on a T4 at maxModelLen 32768, adapters of rank 512: as many slots as vLLM's budget holds beside
    the weights and one maxModelLen of KV cache fit; one more is refused, naming the slots."""
    cfg = _load("dev", _dev_model())
    model, (pool,) = cfg.inference.models[0], [p for p in cfg.gpu_pools if p.name == "gput4"]
    shape = model.shape
    free = (
        engine_memory_budget(model, pool)
        - shape.weight_bytes(serving_dtype("float16", pool.sku.gpu_model))
        - shape.kv_bytes_per_token * model.max_model_len
    )
    fitting = math.floor(free / lora_tensor_bytes(_shape(shape), 1, 512, 1))
    assert 1 <= fitting < 15, f"the boundary must lie within the adapters a model may have: {fitting}"
    _load("dev", _dev_model(adapters=[_adapter(f"a{i}", rank=512) for i in range(fitting)]))
    problem = _refused("dev", _dev_model(adapters=[_adapter(f"a{i}", rank=512) for i in range(fitting + 1)]))
    assert problem.startswith("inference.models[0].maxModelLen:"), problem
    assert f"for {fitting + 1} LoRA slot(s) at rank 512" in problem and "maxLoras" in problem, problem
    fewer_slots = _dev_model(maxLoras=fitting, adapters=[_adapter(f"a{i}", rank=512) for i in range(fitting + 1)])
    _load("dev", fewer_slots)


def test_a_rank_just_past_one_vllm_takes_reserves_the_next() -> None:
    """Rank 17 is reserved at 32, the next rank `--max-lora-rank` accepts, and counted at 32."""
    cfg = _load("dev", _dev_model(maxModelLen=4096, adapters=[_adapter("a", rank=17)]))
    from aks_gpu_platform.components.inference.vllm_server import vllm_args

    args = vllm_args(cfg.inference.models[0], "T4")
    server = vllm_lora_server(args, {}, {_snapshot_of(args, "a"): Adapter(rank=17)}, "chat")
    assert server.max_lora_rank == 32 and server.serves("a") == "a"


def _snapshot_of(args: list[str], adapter: str) -> str:
    modules = args[args.index("--lora-modules") + 1 :]
    (path,) = [json.loads(m)["path"] for m in modules if m.startswith("{") and json.loads(m)["name"] == adapter]
    return str(path)


# --- vLLM: what the servers load and whom they answer ---------------------------------------------------------


def _staged(recording: Recording, model: str) -> dict[str, Adapter]:
    """The adapter folders the model's staging Job leaves in its cache (rank as the stack declares it), by the path
    the servers see: the same claim is mounted at the same path in both."""
    (job,) = [j for j in _objects(recording, "Job") if j["metadata"]["name"] == f"weights-stage-{model}"]
    cfg = load_platform_config(_settings("prod"))
    (served,) = [m for m in cfg.inference.models if m.name == model]
    ranks = {a.source.hugging_face: a.rank for a in served.adapters}
    files: dict[str, Adapter] = {}
    for container in job["spec"]["template"]["spec"].get("initContainers", []):
        env = {e["name"]: e.get("value", "") for e in container["env"]}
        args = container["args"]
        repo, revision = args[1], args[args.index("--revision") + 1]
        folder = hub_snapshot(env["HF_HOME"], repo, revision)
        assert folder is not None, f"{container['name']}: a revision that names no snapshot folder offline"
        files[folder] = Adapter(rank=ranks[repo])
    return files


def _server_container(recording: Recording, model: str) -> dict[str, Any]:
    (deployment,) = [d for d in _objects(recording, "Deployment") if d["metadata"]["name"] == model]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def test_each_adapter_is_staged_and_served_by_name_by_its_base_servers(prod_recording: Recording) -> None:
    container = _server_container(prod_recording, "llama-3-1-8b")
    env = {e["name"]: e.get("value", "") for e in container["env"]}
    files = _staged(prod_recording, "llama-3-1-8b")
    assert len(files) == 2, "both adapters are downloaded by the staging Job"
    server = vllm_lora_server(container["args"], env, files, "llama-3-1-8b")
    for name in ("yara-rules", "neuro-screening"):
        assert server.serves(name) == name, f"a request with model {name!r} is served with that adapter"
    assert server.serves("llama-3-1-8b") == "", "the model's own name is the base, without an adapter"
    assert server.serves("yara") is None, "any other name is a 404"
    assert server.max_loras == 2 and server.max_lora_rank == 32, "a slot per adapter, at the highest rank (32)"
    assert not server.runtime_updating, "no /v1/load_lora_adapter on the team route"


def test_every_adapter_stays_in_host_memory_when_fewer_fit_a_batch() -> None:
    """maxLoras bounds the GPU slots; every static adapter still stays in host memory, so a switch never reloads."""
    cfg = _load("dev", _dev_model(maxModelLen=4096, maxLoras=1, adapters=[_adapter(n) for n in ("a", "b", "c")]))
    args = adapter_args(cfg.inference.models[0], "/cache")
    flags = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i] in ("--max-loras", "--max-cpu-loras")}
    assert flags == {"--max-loras": "1", "--max-cpu-loras": "3"}, flags


def test_adapters_on_a_model_streamed_from_blob_are_refused_naming_them() -> None:
    """Adapters are staged into a weights cache, which a streamed model does not have: its servers would start
    with --lora-modules paths that do not exist."""
    (streamed,) = [m for m in _settings("prod")["inference"]["models"] if "blob" in m["weights"]]
    problem = _refused("prod", {**streamed, "adapters": [_adapter("a")]})
    assert problem.startswith("inference.models[0].adapters:") and "weights cache" in problem, problem


def test_the_staging_job_takes_only_what_vllm_reads_of_an_adapter(prod_recording: Recording) -> None:
    """A training run's repository often holds optimizer states and a tokenizer beside the adapter."""
    (job,) = [j for j in _objects(prod_recording, "Job") if j["metadata"]["name"] == "weights-stage-llama-3-1-8b"]
    repository = [
        "adapter_config.json",
        "adapter_model.safetensors",
        "optimizer.pt",
        "training_args.bin",
        "tokenizer.json",
        "README.md",
    ]
    for container in job["spec"]["template"]["spec"]["initContainers"]:
        fetched = hub_download(container["args"]).fetches(repository)
        assert fetched == ["adapter_config.json", "adapter_model.safetensors"], (container["name"], fetched)
        assert hub_download(container["args"]).fetches(["adapter_model.bin"]) == ["adapter_model.bin"]


def test_the_staging_job_and_the_servers_share_the_cache_the_adapters_lie_in(prod_recording: Recording) -> None:
    (job,) = [j for j in _objects(prod_recording, "Job") if j["metadata"]["name"] == "weights-stage-llama-3-1-8b"]
    (deployment,) = [d for d in _objects(prod_recording, "Deployment") if d["metadata"]["name"] == "llama-3-1-8b"]

    def claim_at(pod: dict[str, Any], container: dict[str, Any], path: str) -> str:
        (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        return str(volume["persistentVolumeClaim"]["claimName"])

    job_pod, server_pod = job["spec"]["template"]["spec"], deployment["spec"]["template"]["spec"]
    for path in _staged(prod_recording, "llama-3-1-8b"):
        writers = {claim_at(job_pod, c, path) for c in job_pod["initContainers"]}
        assert writers == {claim_at(server_pod, server_pod["containers"][0], path)}, path


def test_a_staged_adapter_above_the_reserved_rank_fails_the_servers_start(prod_recording: Recording) -> None:
    """What a wrong `rank` in config does: the server never becomes ready (visible, the rollout fails)."""
    container = _server_container(prod_recording, "llama-3-1-8b")
    files = {path: Adapter(rank=64) for path in _staged(prod_recording, "llama-3-1-8b")}
    with pytest.raises(VllmStartError, match="greater than max_lora_rank 32"):
        vllm_lora_server(container["args"], {}, files, "llama-3-1-8b")


def test_models_without_adapters_run_without_lora(prod_recording: Recording) -> None:
    container = _server_container(prod_recording, "qwen-1-5b")
    server = vllm_lora_server(container["args"], {}, {}, "qwen-1-5b")
    assert not server.enabled and not server.adapters


def test_every_node_of_a_multi_node_group_gets_the_same_lora_engine() -> None:
    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    big = {
        "name": "llama-70b",
        "weights": {"huggingFace": "meta-llama/Llama-3.1-70B-Instruct", "revision": COMMIT, "tokenSecret": True},
        "pool": "h100z3",
        "tensorParallel": 8,
        "nodes": 2,
        "maxModelLen": 32768,
        "minReplicas": 1,
        "maxReplicas": 2,
        "teams": ["llm"],
        "slo": {"timeToFirstTokenP90Seconds": 5},
        "adapters": [_adapter("big-a", rank=8), _adapter("big-b", rank=64)],
    }
    config[PREFIX + "inference"]["models"] = [big]
    for pool in config[PREFIX + "gpuPools"]:
        if pool["name"] == "h100z3":
            pool["maxCount"] = 6
    recording = run_stack("prod", config)
    (group,) = _objects(recording, "LeaderWorkerSet")
    templates = group["spec"]["leaderWorkerTemplate"]
    engines = []
    for role in ("leaderTemplate", "workerTemplate"):
        (container,) = templates[role]["spec"]["containers"]
        args = container["args"]
        paths = {_snapshot_of(args, name): Adapter(rank=64) for name in ("big-a", "big-b")}
        server = vllm_lora_server(args, {}, paths, "llama-70b")
        engines.append((server.enabled, server.max_loras, server.max_lora_rank))
    assert engines[0] == engines[1] == (True, 2, 64), engines


# --- usage: counted once per request, so not forced into every chunk ------------------------------------------


def test_streamed_usage_is_not_forced_so_the_picker_counts_each_request_once(prod_recording: Recording) -> None:
    """vLLM's forced usage rides on every streamed chunk and the v1.5.0 picker observes every chunk with usage: a
    streamed answer of 100 tokens would count as ~5,000. Without it, a request that asks for its usage
    (stream_options.include_usage) or is not streamed is counted exactly once."""
    for name in ("llama-3-1-8b", "qwen-1-5b"):
        assert not streams_usage_in_every_chunk(_server_container(prod_recording, name)["args"]), name
    honest = TokenCounts()
    record_response(honest, streamed_chunks(40, 100, usage_in_every_chunk=False, final_usage=True))
    record_response(honest, [(40, 100)])  # a non-streamed answer carries its usage once
    assert (honest.observations, honest.input_sum, honest.output_sum) == (2, 80, 200)
    forced = TokenCounts()
    record_response(forced, streamed_chunks(40, 100, usage_in_every_chunk=True, final_usage=True))
    assert forced.output_sum > 20 * 100, "the overcount the flag would cause"


# --- the picker: config it loads, where it sends an adapter's request ------------------------------------------


def _pool_values(recording: Recording, model: str) -> dict[str, Any]:
    (release,) = [
        r
        for r in recording.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs.get("name") == model and str(r.inputs.get("chart", "")).endswith("inferencepool")
    ]
    return dict(release.inputs.get("values") or {})


def test_the_picker_of_a_model_with_adapters_loads_a_config_with_the_lora_affinity_scorer(
    prod_recording: Recording,
) -> None:
    plugins = UPSTREAM["epp_plugins"]
    text = effective_config(_pool_values(prod_recording, "llama-3-1-8b"))
    assert config_problems(text, plugins["registered"], plugins["without_parameters"]) == []
    (profile,) = yaml.safe_load(text)["schedulingProfiles"]
    assert "lora-affinity-scorer" in {p["pluginRef"] for p in profile["plugins"]}
    plain = effective_config(_pool_values(prod_recording, "qwen-1-5b"))
    assert "lora-affinity-scorer" not in plain, "a model without adapters keeps its config"


def test_an_adapters_request_goes_to_the_server_that_has_it_loaded(prod_recording: Recording) -> None:
    """One slot each, two servers, each running one adapter: the request for `yara-rules` goes to the server running
    it, not to one that would first have to swap its adapter out (the chart's default config cannot tell)."""
    servers = [
        Server("a", waiting=1, kv_usage=0.4, max_lora=1, running_adapters=("yara-rules",)),
        Server("b", waiting=1, kv_usage=0.4, max_lora=1, running_adapters=("neuro-screening",)),
    ]
    ours = effective_config(_pool_values(prod_recording, "llama-3-1-8b"))
    assert picked(ours, "yara-rules", servers) == ["a"]
    assert picked(ours, "neuro-screening", servers) == ["b"]
    assert picked(effective_config({}), "yara-rules", servers) == ["a", "b"], "the chart default is blind to it"


# --- the gateway: the base's teams, nobody else -----------------------------------------------------------------


def _issuer(recording: Recording) -> str:
    return str(recording.one("azure-native:containerservice:ManagedCluster").outputs["oidcIssuerProfile"]["issuerURL"])


def _team_namespaces(recording: Recording) -> dict[str, str]:
    return {team: t["namespace"] for team, t in recording.stack_outputs["trainingTeams"].items()}


def _token(recording: Recording, namespace: str) -> Token:
    return Token(_issuer(recording), (AUDIENCE,), f"system:serviceaccount:{namespace}:default")


def test_each_adapter_is_reached_by_its_bases_teams_on_their_listeners(prod_recording: Recording) -> None:
    objects = [kubernetes_object(r) for r in prod_recording.kubernetes_objects()]
    world = gateway_world(objects, GATEWAY)
    endpoints = prod_recording.stack_outputs["modelEndpoints"]
    namespaces = _team_namespaces(prod_recording)
    for adapter in ("yara-rules", "neuro-screening"):
        assert set(endpoints[adapter]) == {"llm", "vision"}, "the adapter's teams are its base's"
        for team, url in endpoints[adapter].items():
            port = int(url.split(":")[2].split("/")[0])
            for path in (f"/{adapter}/v1/chat/completions", f"/{adapter}/v1/models"):
                verdict = decide(world, Request(port, path, _token(prod_recording, namespaces[team])))
                assert (verdict.status, verdict.model) == (200, "llama-3-1-8b"), f"{team} -> {path}: {verdict}"


@pytest.fixture(scope="module")
def vision_adapter() -> Recording:
    """prod with an adapter on qwen-1-5b, a model of team vision only."""
    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    for model in config[PREFIX + "inference"]["models"]:
        if model["name"] == "qwen-1-5b":
            model["adapters"] = [_adapter("captions", rank=8)]
    return run_stack("prod", config)


def test_another_team_is_denied_an_adapter_of_a_model_it_may_not_call(vision_adapter: Recording) -> None:
    objects = [kubernetes_object(r) for r in vision_adapter.kubernetes_objects()]
    world = gateway_world(objects, GATEWAY)
    namespaces = _team_namespaces(vision_adapter)
    llm_port = int(vision_adapter.stack_outputs["modelEndpoints"]["llama-3-1-8b"]["llm"].split(":")[2].split("/")[0])
    vision_port = int(vision_adapter.stack_outputs["modelEndpoints"]["captions"]["vision"].split(":")[2].split("/")[0])
    assert set(vision_adapter.stack_outputs["modelEndpoints"]["captions"]) == {"vision"}
    vision = _token(vision_adapter, namespaces["vision"])
    assert decide(world, Request(vision_port, "/captions/v1/chat/completions", vision)).status == 200
    llm = _token(vision_adapter, namespaces["llm"])
    request = Request(llm_port, "/captions/v1/chat/completions", llm)
    assert decide(world, request).status == 403, "llm's own token on its own listener"
    rule = "AuthorizationPolicy inference-gateway/team-llm-callers #1"
    assert deciding_rules(world, request) == [rule], "refused for the path: not one of llm's models"
    # With the route attached to every listener, the policy alone refuses it; without that rule it would pass.
    widened = world.copy()
    for route in widened.routes:
        for ref in route["spec"]["parentRefs"]:
            ref.pop("sectionName", None)
    assert decide(widened, request).status == 403
    assert decide(without_rule(widened, rule), request).status == 200
    assert decide(world, Request(vision_port, "/captions/v1/models", llm)).status == 403, "llm's token on vision's"


def test_the_routes_with_adapters_are_admitted_by_the_pinned_crd(prod_recording: Recording) -> None:
    (route,) = [r for r in _objects(prod_recording, "HTTPRoute") if r["metadata"]["name"] == "llama-3-1-8b"]
    assert [r["matches"][0]["path"]["value"] for r in route["spec"]["rules"]] == [
        "/llama-3-1-8b",
        "/yara-rules",
        "/neuro-screening",
    ]
    assert crd_problems(route, "httproutes-v1.5.1.json") == []


def test_fifteen_adapters_fill_a_route_and_a_sixteenth_rule_too_many_is_refused_by_the_crd() -> None:
    from aks_gpu_platform.components.inference.inference_pool import http_route

    cfg = _load("dev", _dev_model(maxModelLen=4096, adapters=[_adapter(f"a{i}", rank=8) for i in range(15)]))
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "chat", "namespace": "models"},
        "spec": http_route(cfg.inference.models[0], "models"),
    }
    assert len(route["spec"]["rules"]) == 16 and crd_problems(route, "httproutes-v1.5.1.json") == []
    route["spec"]["rules"].append(copy.deepcopy(route["spec"]["rules"][-1]))
    assert crd_problems(route, "httproutes-v1.5.1.json"), "the API server refuses a 17th rule"
    two_matches = copy.deepcopy(route)
    del two_matches["spec"]["rules"][16]
    two_matches["spec"]["rules"][1]["matches"].append({"path": {"type": "PathPrefix", "value": "/more"}})
    assert crd_problems(two_matches, "httproutes-v1.5.1.json"), "a prefix rewrite takes exactly one match"


# --- metrics, dashboards, alerts, price -------------------------------------------------------------------------


EPP = UPSTREAM["epp_metrics"]["metrics"]


def _picker_pod(model: str) -> Pod:
    return Pod(
        "models",
        f"{model}-epp-5c6d8f-x2x9q",
        {"inferencepool": f"{model}-epp"},
        "cpu0",
        "10.0.1.5",
        (Container("epp", (Port("grpc", 9002), Port("grpc-health", 9003), Port("metrics", 9090))),),
    )


def _picker_exposition(per_second: dict[tuple[str, str], tuple[float, float, float]], at: int) -> str:
    """The picker's counters after `at` seconds at the given (requests, input tokens, output tokens) per second per
    (body model, target model): the target differs where a caller's x-gateway-model-name-rewrite header asked the
    servers for another name (pkg/epp/handlers/request.go)."""
    lines = [
        "# TYPE inference_objective_request_total counter",
        "# TYPE inference_objective_input_tokens histogram",
        "# TYPE inference_objective_output_tokens histogram",
    ]
    for (body, target), (requests, input_tokens, output_tokens) in per_second.items():
        labels = f'model_name="{body}",target_model_name="{target}"'
        lines.append(f'inference_objective_request_total{{{labels},priority="0"}} {requests * at}')
        for metric, rate in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            lines.append(f"inference_objective_{metric}_sum{{{labels}}} {rate * at}")
            lines.append(f"inference_objective_{metric}_count{{{labels}}} {requests * at}")
    return "\n".join(lines) + "\n"


def _dashboard(recording: Recording, model: str) -> dict[str, Any]:
    (board,) = [
        json.loads(d.inputs["configJson"])
        for d in recording.of_type("grafana:oss/dashboard:Dashboard")
        if json.loads(d.inputs["configJson"])["title"] == f"Model {model}"
    ]
    return board


def test_each_adapter_has_a_dashboard_panel_reading_its_own_tokens(prod_recording: Recording) -> None:
    """Through the picker's PodMonitor as managed Prometheus stores it: each adapter's panel shows the requests and
    tokens per second the servers served with it (a request rewritten to it by header included) and its share of
    the model's output tokens."""
    board = _dashboard(prod_recording, "llama-3-1-8b")
    panels = {p["title"]: p for p in board["panels"]}
    rates = {
        ("llama-3-1-8b", "llama-3-1-8b"): (2.0, 800.0, 300.0),
        ("yara-rules", "yara-rules"): (1.0, 200.0, 60.0),
        ("llama-3-1-8b", "yara-rules"): (0.25, 50.0, 40.0),
        ("neuro-screening", "neuro-screening"): (0.5, 50.0, 100.0),
    }
    monitors = [m for m in _objects(prod_recording, "PodMonitor") if m["metadata"]["name"] == "epp-llama-3-1-8b"]
    histories: dict[tuple[tuple[str, str], ...], History] = {}
    for at in range(0, 615, 15):
        text = _picker_exposition(rates, at)
        for monitor in monitors:
            for config in pod_monitor_scrape_configs(monitor):
                for target in targets(config, [_picker_pod("llama-3-1-8b")]):
                    for sample in scrape(target, config, text, {"cluster": "aks"}).series:
                        key = tuple(sorted(sample.labels.items()))
                        histories.setdefault(key, History(sample.labels)).append(at, sample.value, 15)
    evaluator = Evaluator(list(histories.values()), at=600)
    for adapter in ("yara-rules", "neuro-screening"):
        served = [rate for (_, target), rate in rates.items() if target == adapter]
        requests, input_tokens, output_tokens = (sum(column) for column in zip(*served, strict=True))
        expected = [requests, input_tokens, output_tokens, output_tokens / 500.0]
        shown = []
        for target in panels[f"Adapter {adapter}"]["targets"]:
            (value,) = evaluator.vector(target["expr"])
            shown.append(round(value.value, 6))
        assert evaluator.problems == [], evaluator.problems
        assert shown == pytest.approx(expected), f"{adapter}: {shown}"


def test_the_adapter_panels_read_picker_series_and_labels_that_exist(prod_recording: Recording) -> None:
    board = _dashboard(prod_recording, "llama-3-1-8b")
    exprs = [t["expr"] for p in board["panels"] if p["title"].startswith("Adapter ") for t in p["targets"]]
    assert exprs
    for expr in exprs:
        for selector in selectors(expr):
            assert selector.metric is not None
            base = selector.metric.removesuffix("_sum").removesuffix("_count")
            assert base in EPP, f"the v1.5.0 picker exposes no {selector.metric}"
            kind = EPP[base]["type"]
            assert (kind == "histogram") == (selector.metric != base), f"{selector.metric} as a {kind}"
            own = {name for name, _, _ in selector.matchers} - {"namespace", "pod"}
            assert own <= set(EPP[base]["labels"]), f"{selector.metric} has no label {own - set(EPP[base]['labels'])}"


def test_the_servers_scrape_drops_vllms_lora_series_and_keeps_the_rest(prod_recording: Recording) -> None:
    exposition = (
        "# TYPE vllm:lora_requests_info gauge\n"
        'vllm:lora_requests_info{max_lora="2",running_lora_adapters="yara-rules",waiting_lora_adapters=""} 1.7e9\n'
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0",model_name="MODEL"} 3\n'
    )
    kept: dict[str, set[str]] = {}
    for model in ("llama-3-1-8b", "qwen-1-5b"):
        (monitor,) = [m for m in _objects(prod_recording, "PodMonitor") if m["metadata"]["name"] == f"vllm-{model}"]
        container = _server_container(prod_recording, model)
        (deployment,) = [d for d in _objects(prod_recording, "Deployment") if d["metadata"]["name"] == model]
        ports = tuple(Port(p["name"], p["containerPort"]) for p in container["ports"])
        pod = Pod(
            "models",
            f"{model}-7d9f-0",
            deployment["spec"]["template"]["metadata"]["labels"],
            "n0",
            "10.0.0.9",
            (Container("vllm", ports),),
        )
        (config,) = pod_monitor_scrape_configs(monitor)
        (target,) = targets(config, [pod])
        kept[model] = {s.name for s in scrape(target, config, exposition.replace("MODEL", model), {}).series}
    assert kept["llama-3-1-8b"] == {"vllm:num_requests_waiting"}
    assert kept["qwen-1-5b"] == {"vllm:num_requests_waiting", "vllm:lora_requests_info"}, "only with adapters"


def test_the_models_slo_alert_says_it_covers_its_adapters(prod_recording: Recording) -> None:
    (group,) = [
        g
        for g in prod_recording.of_type("azure-native:alertsmanagement:PrometheusRuleGroup")
        if g.name.endswith("-llama-3-1-8b-slo")
    ]
    (rule,) = group.inputs["rules"]
    assert "yara-rules, neuro-screening" in rule["annotations"]["description"]
    (vllm_selector,) = [s for s in selectors(rule["expression"]) if s.metric and s.metric.startswith("vllm:")]
    assert ("model_name", "=", "llama-3-1-8b") in vllm_selector.matchers, (
        "vLLM labels an adapter's requests with the base's served name: the model's series hold them"
    )


def test_the_plan_prices_each_adapters_tokens_as_its_bases() -> None:
    cfg = load_platform_config(_settings("prod"))
    costs = model_costs(cfg.inference.models, pool_capacities(run_stack("prod")), cfg.location)
    base = next(c for c in costs if c.model == "llama-3-1-8b").per_million_output_tokens
    assert base is not None
    lines = adapter_cost_lines(cfg.inference.models, costs)
    assert [line.split(" ")[1] for line in lines] == ["yara-rules", "neuro-screening"]
    for line in lines:
        assert f"${base:,.2f} per million output tokens" in line and "without LoRA" in line, line
    t4 = _load("dev", _dev_model(maxModelLen=4096, adapters=[_adapter("a")]))
    t4_costs = model_costs(t4.inference.models, pool_capacities(run_stack("dev")), t4.location)
    (line,) = adapter_cost_lines(t4.inference.models, t4_costs)
    assert "no price per token" in line and "no sourced benchmark" in line, line


# --- the example ---------------------------------------------------------------------------------------------------


def test_the_adapters_example_is_the_prod_stacks_model() -> None:
    excerpt = yaml.safe_load((REPO_ROOT / "examples" / "llm-serving" / "adapters.yaml").read_text())["config"]
    (model,) = excerpt[PREFIX + "inference"]["models"]
    assert model == _prod_llama(), "the example shows what prod serves"
    assert len(model["adapters"]) == 2
