"""Weights streamed from a team's Blob container (`weights.blob`): the rendered servers run through vLLM 0.34.0's
loader, the Run:ai Model Streamer and its Azure backend as their source has them (tests/upstream/
runai_streamer_loader.py), sign in as an identity of the model's own that may read that one container, reach
Entra ID and the account and nothing more, hold no weights cache, and stay inside their memory limit.

Stacks: prod as written (a tensor-parallel model of team llm, the HSM account private) and dev with Lustre on and
a single-GPU streamed model only (the account public, no Blob class for caches)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.models import MODELS
from aks_gpu_platform.plan import cold_start
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.mocks import SUBSCRIPTION, TENANT
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.inference.test_serving import DEV_MODELS
from tests.training.test_team_access import raw_teams
from tests.upstream.engine_semantics import flag
from tests.upstream.rbac import azure_allows
from tests.upstream.runai_streamer_loader import (
    LoadRefused,
    azure_sign_in,
    host_buffer_bytes,
    offline_keeps_model,
    streamed_load,
    webhook_env,
)
from tests.upstream.storage import identity_token_exchange_refusal
from tests.upstream.tenancy import Endpoint, World, build_world, connection_refusals, team_pod
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
MODELS_NS = "models"
CONTAINER = "azure-native:storage:BlobContainer"
ACCOUNT = "azure-native:storage:StorageAccount"
ROLE = "azure-native:authorization:RoleAssignment"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
BLOB_READ = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"
BLOB_WRITE = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"
ENTRA_ID = "20.190.160.1"
"""A public address, as login.microsoftonline.com resolves to (Microsoft's 20.190.128.0/18)."""
IMDS, WIRESERVER = "169.254.169.254", "168.63.129.16"
GIB = 1024**3
LARGEST_TENSOR_BYTES = {
    # The embedding table, vocab_size x hidden_size x 2 bytes, from each model's config.json on the Hub.
    "Qwen/Qwen2.5-0.5B-Instruct": 151_936 * 896 * 2,
    "meta-llama/Llama-3.1-8B-Instruct": 128_256 * 4096 * 2,
}
DEV_STREAMED = {
    **DEV_MODELS[0],
    "name": "qwen-small-ft",
    "weights": {"blob": {"path": "models/qwen2.5-0.5b-ft"}, "catalogId": "Qwen/Qwen2.5-0.5B-Instruct"},
}


def dev_streamed_config() -> dict[str, Any]:
    """dev with Lustre on (the team's container), one streamed model and no Blob class (it caches nothing)."""
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    config[PREFIX + "storage"]["lustre"]["enabled"] = True
    for blob_class in config[PREFIX + "storage"]["blobClasses"].values():
        blob_class["enabled"] = False
    config[PREFIX + "inference"] = {"models": [DEV_STREAMED]}
    return config


@cache
def _config(stack: str) -> dict[str, Any]:
    return dev_streamed_config() if stack == "dev-streamed" else load_stack_file(stack, REPO_ROOT)


@cache
def _recording(stack: str) -> Recording:
    return run_stack("dev", _config(stack)) if stack == "dev-streamed" else run_stack(stack)


STACKS = ("prod", "dev-streamed")


def streamed_models(stack: str) -> list[dict[str, Any]]:
    """The stack file's models with weights in Blob, as written."""
    return [m for m in _config(stack)[PREFIX + "inference"]["models"] if "blob" in m["weights"]]


def owner(model: dict[str, Any]) -> str:
    return model["weights"]["blob"].get("team") or model["teams"][0]


def objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


def server_template(recording: Recording, model: str) -> dict[str, Any]:
    (deployment,) = [d for d in objects(recording, "Deployment") if d["metadata"]["name"] == model]
    return deployment["spec"]["template"]


def vllm(template: dict[str, Any]) -> dict[str, Any]:
    (container,) = [c for c in template["spec"]["containers"] if c["name"] == "vllm"]
    return container


def plain_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}


def service_account(recording: Recording, name: str) -> dict[str, Any]:
    (found,) = [
        s
        for s in objects(recording, "ServiceAccount")
        if s["metadata"]["name"] == name and s["metadata"]["namespace"] == MODELS_NS
    ]
    return found


def team_container(recording: Recording, team: str) -> Any:
    """The BlobContainer team storage made for `team` (the one its stack output names)."""
    name = recording.stack_outputs["teamData"][team]["container"]
    (container,) = [c for c in recording.of_type(CONTAINER) if c.outputs["name"] == name]
    return container


def arm_id(resource: Any) -> str:
    """The ARM ID Azure gives a storage account or container, from its path parameters (the mocks' IDs are flat)."""
    group = resource.inputs["resourceGroupName"]
    account = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.Storage/storageAccounts/"
    if resource.type == ACCOUNT:
        return account + resource.inputs["accountName"]
    return (
        f"{account}{resource.inputs['accountName']}/blobServices/default/containers/{resource.inputs['containerName']}"
    )


def arm_assignments(recording: Recording) -> list[dict[str, Any]]:
    """Every role assignment with its scope as the ARM ID it names in Azure."""
    ids = {r.outputs["id"]: arm_id(r) for r in [*recording.of_type(CONTAINER), *recording.of_type(ACCOUNT)]}
    return [{**a.inputs, "scope": ids.get(a.inputs["scope"], a.inputs["scope"])} for a in recording.of_type(ROLE)]


def reader_identity(recording: Recording, template: dict[str, Any]) -> Any:
    """The identity the pod's service account names."""
    account = service_account(recording, template["spec"]["serviceAccountName"])
    client_id = account["metadata"]["annotations"]["azure.workload.identity/client-id"]
    (identity,) = [i for i in recording.of_type(IDENTITY) if i.outputs["clientId"] == client_id]
    return identity


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return request.param


def test_both_stacks_stream_a_model(stack: str) -> None:
    assert streamed_models(stack), f"{stack} must hold a streamed model for these contracts to mean anything"


def test_a_streamed_server_loads_its_team_container_with_vllm_0_34_0(stack: str) -> None:
    """The reference: the URI's container is the one team storage made for the model's team, the account the one
    that holds it; vLLM takes the flags, the streamer picks its Azure backend."""
    recording = _recording(stack)
    for model in streamed_models(stack):
        container = vllm(server_template(recording, model["name"]))
        env = plain_env(container)
        load = streamed_load(container["args"], env)
        blob = team_container(recording, owner(model))
        assert load.load_format == "runai_streamer" and load.backend == "azure", load
        assert load.container == blob.outputs["name"] == blob.inputs["containerName"], (
            f"{model['name']} reads {load.container}, team {owner(model)}'s container is {blob.outputs['name']}"
        )
        assert load.prefix == model["weights"]["blob"]["path"], load
        assert env["AZURE_STORAGE_ACCOUNT_NAME"] == blob.inputs["accountName"], (
            "the streamer reaches the account named in AZURE_STORAGE_ACCOUNT_NAME: it must hold the container"
        )
        assert flag(container["args"], "served-model-name") == model["name"], (
            "vLLM serves a streamed model from a local copy of its config: the API name must be given"
        )
        assert flag(container["args"], "revision") is None, "a revision has no meaning for Blob"
        assert env.get("HF_HUB_OFFLINE") == "1" and offline_keeps_model(load.model), "nothing reaches for the Hub"


def test_the_loader_refuses_what_vllm_refuses() -> None:
    """The model of vLLM's loader can fail: each flag it checks, mis-set, is refused."""
    good = ["az://team-a/m", "--load-format", "runai_streamer", "--model-loader-extra-config", '{"memory_limit": 1}']
    assert streamed_load(good, {}).memory_limit == 1
    for args in (
        ["az://team-a/m", "--load-format", "safetensors"],
        [*good[:4], '{"memory_limit": 1, "buffer": 2}'],
        [*good[:4], '{"distributed": "true"}'],
        [*good[:4], '{"memory_limit": -2}'],
        [*good[:4], "memory_limit=1"],
    ):
        with pytest.raises(LoadRefused):
            streamed_load(args, {})
    assert streamed_load(["az://team-a/m"], {}).load_format == "runai_streamer", "auto becomes the streamer"
    assert streamed_load(["AZ://team-a/m"], {}).backend == "none", "the streamer's scheme check is case-sensitive"


def test_a_streamed_server_signs_in_as_its_own_identity_federated_to_its_service_account(stack: str) -> None:
    recording = _recording(stack)
    team_identities = {d["clientId"] for d in recording.stack_outputs["teamData"].values()}
    for model in streamed_models(stack):
        template = server_template(recording, model["name"])
        account = service_account(recording, template["spec"]["serviceAccountName"])
        env = {**plain_env(vllm(template)), **webhook_env(template["metadata"]["labels"], account, TENANT)}
        assert azure_sign_in(env) == "workload identity", (
            f"{model['name']}: without the pod label and the annotated service account the credential falls to "
            "IMDS, which the models namespace's egress refuses"
        )
        identity = reader_identity(recording, template)
        assert identity.outputs["clientId"] not in team_identities, (
            "not the team's own data identity: that one writes the container"
        )
        name = account["metadata"]["name"]
        assert identity_token_exchange_refusal(recording, identity.outputs["clientId"], MODELS_NS, name) is None
        subjects = {
            c.inputs["subject"]
            for c in recording.of_type(CREDENTIAL)
            if c.inputs["resourceName"] == identity.outputs["name"]
        }
        assert subjects == {f"system:serviceaccount:{MODELS_NS}:{name}"}, (
            f"the identity trusts the model's own service account only: {subjects}"
        )


def test_the_reader_identity_reads_its_team_container_and_nothing_else(stack: str) -> None:
    recording = _recording(stack)
    assignments = arm_assignments(recording)
    containers = {c.inputs["containerName"]: arm_id(c) for c in recording.of_type(CONTAINER)}
    for model in streamed_models(stack):
        identity = reader_identity(recording, server_template(recording, model["name"]))
        principal = identity.outputs["principalId"]
        grants = [a for a in assignments if a["principalId"] == principal]
        own = arm_id(team_container(recording, owner(model)))
        assert [(a["scope"], a["roleDefinitionId"].rsplit("/", 1)[-1]) for a in grants] == [(own, READER)], (
            f"{model['name']}: one grant, Storage Blob Data Reader, scoped to exactly its team's container: {grants}"
        )
        assert azure_allows(assignments, {principal}, f"{own}/blobs/{model['weights']['blob']['path']}", BLOB_READ)
        assert not azure_allows(assignments, {principal}, f"{own}/blobs/x", BLOB_WRITE), "the servers write nothing"
        for name, other in containers.items():
            if other != own:
                assert not azure_allows(assignments, {principal}, f"{other}/blobs/x", BLOB_READ), f"reads {name}"


def test_a_streamed_model_has_no_weights_cache_or_staging_job_and_hub_models_keep_theirs(stack: str) -> None:
    recording = _recording(stack)
    claims = {c["metadata"]["name"] for c in objects(recording, "PersistentVolumeClaim")}
    jobs = {j["metadata"]["name"] for j in objects(recording, "Job") if j["metadata"].get("namespace") == MODELS_NS}
    for model in streamed_models(stack):
        name = model["name"]
        assert not {c for c in claims if name in c}, f"{name}: a streamed model caches nothing"
        assert not {j for j in jobs if name in j}, f"{name}: nothing stages a streamed model's weights"
        volumes = server_template(recording, name)["spec"].get("volumes") or []
        assert not [v for v in volumes if "persistentVolumeClaim" in v], f"{name} mounts a claim"
    hub = [m["name"] for m in _config(stack)[PREFIX + "inference"]["models"] if "huggingFace" in m["weights"]]
    for name in hub:
        assert f"weights-cache-{name}" in claims and f"weights-stage-{name}" in jobs, f"{name} stages from the Hub"


def _limit_bytes(container: dict[str, Any]) -> int:
    memory = container["resources"]["limits"]["memory"]
    assert memory.endswith("Gi"), memory
    return int(memory[:-2]) * GIB


def test_the_streamer_buffers_stay_under_the_container_memory_limit(stack: str) -> None:
    """The streamer's host buffers are charged to the container: above its limit the kernel kills the server while
    it loads. Its default is 40 GB per rank, bounded only by the files it reads, and the folder holds whatever the
    team uploaded (the catalog sizes the GPUs, not the files): the bound must hold for a folder larger than the pod."""
    recording = _recording(stack)
    for model in streamed_models(stack):
        container = vllm(server_template(recording, model["name"]))
        load = streamed_load(container["args"], plain_env(container))
        ranks = model.get("tensorParallel", 1)
        limit = _limit_bytes(container)
        largest = LARGEST_TENSOR_BYTES[model["weights"]["catalogId"]]
        held = host_buffer_bytes(load, ranks, 4 * limit, largest)
        assert held < limit, f"{model['name']}: the streamer may hold {held / GIB:.1f} GiB, the limit is {limit / GIB}"
        if ranks > 1:
            assert load.distributed, "without distributed streaming every rank reads the whole checkpoint from Blob"


def _world(stack: str) -> World:
    return build_world(_recording(stack), raw_teams(_config(stack)))


def test_a_streamed_server_reaches_entra_id_and_its_account_and_nothing_else_outside(stack: str) -> None:
    w = _world(stack)
    private = not (_config(stack)[PREFIX + "storage"]["lustre"]["blob"].get("publicNetworkAccess", True))
    hsm = next((address for name, address in w.private_endpoints if "hsm" in name), None)
    for model in streamed_models(stack):
        template = server_template(_recording(stack), model["name"])
        source = Endpoint("pod", 0, namespace=MODELS_NS, labels=tuple(sorted(template["metadata"]["labels"].items())))
        assert not connection_refusals(w, source, Endpoint("external", 443, address=ENTRA_ID)), "Entra ID's tokens"
        if private:
            assert hsm is not None, "a private account has its private endpoint"
            assert not connection_refusals(w, source, Endpoint("external", 443, address=hsm)), "the account, privately"
        for why, to in (
            ("IMDS", Endpoint("external", 80, address=IMDS)),
            ("the WireServer", Endpoint("external", 80, address=WIRESERVER)),
            ("plain HTTP", Endpoint("external", 80, address=ENTRA_ID)),
            ("a team's pods", team_pod(next(iter(w.teams.values()))[0])),
            *((f"the file server {n}", Endpoint("external", 988, address=a)) for n, a in w.storage_servers),
        ):
            assert connection_refusals(w, source, to), f"{model['name']} reaches {why}"


def test_the_plan_times_a_streamed_replica_from_the_published_streaming_rate() -> None:
    settings = settings_of(copy.deepcopy(load_stack_file("prod", REPO_ROOT)))
    (index,) = [i for i, m in enumerate(settings["inference"]["models"]) if "blob" in m["weights"]]
    figures = {}
    for tensor_parallel in (1, 2, 4):
        settings["inference"]["models"][index]["tensorParallel"] = tensor_parallel
        cfg = load_platform_config(settings)
        budget = cold_start.model_ready(cfg, cfg.inference.models[index])
        figures[tensor_parallel] = budget.stage(cold_start.WEIGHTS).figure
    checkpoint_gib = MODELS["meta-llama/Llama-3.1-8B-Instruct"].params * 2 / GIB
    assert "kaito" in figures[1].source and "kaito" in figures[2].source, figures
    assert figures[1].low_s == round(checkpoint_gib / 1.4, 1) and figures[1].high_s == round(checkpoint_gib / 1.2, 1)
    assert figures[2].low_s == figures[2].high_s == round(checkpoint_gib / 3.8, 1), figures[2]
    assert figures[4].low_s is None and figures[4].high_s is None and "2 ranks" in figures[4].note, (
        f"no source measured 4 ranks: the stage stays unknown and says why: {figures[4]}"
    )


# --- config: each rule refuses the one bad model and names it ------------------------------------------------


def _prod_settings(models: list[dict[str, Any]]) -> dict[str, Any]:
    settings = settings_of(copy.deepcopy(load_stack_file("prod", REPO_ROOT)))
    settings["inference"]["models"] = models
    return settings


def _streamed(name: str, **overrides: Any) -> dict[str, Any]:
    (model,) = copy.deepcopy(streamed_models("prod"))
    return {**model, "name": name, **overrides}


def _refusal(settings: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert len(caught.value.problems) == 1, caught.value.problems
    return caught.value.problems[0]


def test_one_bad_blob_model_among_good_ones_is_refused_by_its_index() -> None:
    prod = load_stack_file("prod", REPO_ROOT)[PREFIX + "inference"]["models"]
    good = [*copy.deepcopy(prod), _streamed("llama-support-2")]
    load_platform_config(_prod_settings(good))
    shared = _streamed("llama-support-3", teams=["llm", "vision"], maxReplicas=1)
    problem = _refusal(_prod_settings([*good, shared]))
    assert problem.startswith(f"inference.models[{len(good)}].weights.blob.team: got None"), problem
    assert "['llm', 'vision']" in problem, f"names the teams to choose from: {problem}"
    named = {**shared, "weights": {**shared["weights"], "blob": {**shared["weights"]["blob"], "team": "vision"}}}
    load_platform_config(_prod_settings([*good, named]))
    outside = {**named, "teams": ["llm"]}
    problem = _refusal(_prod_settings([*good, outside]))
    assert problem.startswith(f"inference.models[{len(good)}].weights.blob.team: got 'vision'"), problem


@pytest.mark.parametrize("extra", [0, 1])
def test_a_blob_path_at_its_length_limit_loads_and_one_past_it_is_refused(extra: int) -> None:
    # A shard's blob name is <path>/model-00001-of-00004.safetensors: 991 + 1 + 32 = 1,024, Azure's limit.
    path = "models/" + "a" * (991 - len("models/") + extra)
    model = _streamed(
        "llama-support", weights={"blob": {"path": path}, "catalogId": "meta-llama/Llama-3.1-8B-Instruct"}
    )
    if not extra:
        load_platform_config(_prod_settings([model]))
        return
    problem = _refusal(_prod_settings([model]))
    assert problem.startswith("inference.models[0].weights.blob.path") and "991" in problem, problem


@pytest.mark.parametrize("path", ["models/../other-team", "/models/x", "models/x/", "models//x", "models/x y"])
def test_a_blob_path_that_is_not_a_plain_folder_is_refused(path: str) -> None:
    model = _streamed(
        "llama-support", weights={"blob": {"path": path}, "catalogId": "meta-llama/Llama-3.1-8B-Instruct"}
    )
    assert _refusal(_prod_settings([model])).startswith("inference.models[0].weights.blob.path")


def test_a_multi_node_blob_model_is_refused_naming_nodes() -> None:
    model = _streamed("llama-support", pool="h100z1", tensorParallel=8, nodes=2, maxReplicas=1)
    settings = _prod_settings([model])
    # Room for the group's 16 GPUs beside team llm's 24 on the pool.
    (pool,) = [p for p in settings["gpuPools"] if p["name"] == "h100z1"]
    pool["maxCount"] = 6
    problem = _refusal(settings)
    assert problem.startswith("inference.models[0].nodes: got 2") and "huggingFace" in problem, problem


def test_a_blob_model_whose_team_has_no_container_is_refused() -> None:
    config = dev_streamed_config()
    config[PREFIX + "storage"]["lustre"]["enabled"] = False
    problem = _refusal(settings_of(config))
    assert problem.startswith("inference.models[0].weights.blob: got") and "storage.lustre" in problem, problem


def test_a_private_account_behind_existing_subnets_is_refused_for_streaming() -> None:
    settings = _prod_settings([_streamed("llama-support")])
    hub = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hub"
    settings["network"] = {
        "existingSubnets": {
            "vnetId": hub,
            "nodesSubnetId": f"{hub}/subnets/nodes",
            "lustreSubnetId": f"{hub}/subnets/lustre",
            "privateEndpointsSubnetId": f"{hub}/subnets/private-endpoints",
            "nodesSubnetCidr": "10.50.0.0/20",
            "lustreSubnetCidr": "10.50.16.0/24",
        }
    }
    problem = _refusal(settings)
    assert problem.startswith("inference.models[0].weights.blob") and "existingSubnets" in problem, problem


def test_a_stack_serving_only_streamed_models_needs_no_cache_class_but_a_hub_model_does() -> None:
    config = dev_streamed_config()
    assert _recording("dev-streamed").of_type("kubernetes:apps/v1:Deployment"), "it deploys without a Blob class"
    hub = {**DEV_STREAMED, "name": "qwen-hub", "weights": {"huggingFace": "Qwen/Qwen2.5-0.5B-Instruct"}}
    config[PREFIX + "inference"]["models"] = [hub]
    with pytest.raises(ConfigError) as caught:
        run_stack("dev", config)
    assert "storage.blobClasses" in str(caught.value), str(caught.value)
