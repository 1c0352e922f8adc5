"""Engine runtime semantics: every server we run (vLLM, the Triton sample, the endpoint picker) is held to what its
source at the pinned version says it does (tests/upstream/engine_semantics.py): a scale-down, rollout or drain lets
in-flight requests finish, the engine's own memory budget holds the model, a starting server reads weights staged
once and waits as long as its probe allows, and every reader of the Hub token waits for its Secret."""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Mapping
from typing import Any

import pytest

from aks_gpu_platform.components.inference.vllm_server import IMAGE_PULL_ALLOWANCE_SECONDS
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.cold_start import AUTOSCALER_GPU_DELAY, NODE_PROVISIONING
from aks_gpu_platform.config.catalog.gpu_sizes import GPU_SKUS
from aks_gpu_platform.config.catalog.models import ACTIVATION_AND_GRAPHS_GIB, DEVICE_MEMORY_MIB, MODELS
from aks_gpu_platform.config.inference.runtime import CACHE_READ_MBPS, ENGINE_START_SECONDS, HUB_DOWNLOAD_MBPS
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.inference.test_serving import DEV_MODELS, PREFIX, PROD_MODELS, _prod_with_models, _with_models
from tests.upstream import engine_semantics as engine
from tests.upstream.serving import CHART_DEFAULTS, rendered_inference_pool
from tools import REPO_ROOT

MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
GIB = 1024**3
MIB = 1024**2
# Bytes per weight of each vLLM --dtype name the servers are given (vllm/config/model.py); fp8 is 1 B.
DTYPE_BYTES = {"half": 2, "float16": 2, "bfloat16": 2}


@pytest.fixture(scope="module")
def served() -> dict[str, Recording]:
    # prod beside a variant whose 8B model spans two GPUs of one node (tensor parallel, no group).
    sharded = [{**PROD_MODELS[0], "tensorParallel": 2}, *PROD_MODELS[1:]]
    config = _with_models("prod", sharded)
    for pool in config[PREFIX + "gpuPools"]:
        if pool["name"] == "h100z3":
            pool["maxCount"] = 6
    return {
        "dev": run_stack("dev", _with_models("dev", DEV_MODELS)),
        "prod": run_stack("prod", _prod_with_models()),
        "sharded": run_stack("prod", config),
    }


def _resources(recording: Recording, kind: str) -> list[tuple[RecordedResource, dict[str, Any]]]:
    found = [(r, kubernetes_object(r)) for r in recording.kubernetes_objects()]
    return [(r, o) for r, o in found if o.get("kind") == kind]


def _servers(recording: Recording) -> list[tuple[RecordedResource, dict[str, Any], int]]:
    """(resource, pod template, GPU pods of the template per replica) of every model server."""
    pods: list[tuple[RecordedResource, dict[str, Any], int]] = []
    for resource, deployment in _resources(recording, "Deployment"):
        if deployment["metadata"]["namespace"] == "models":
            pods.append((resource, deployment["spec"]["template"], 1))
    for resource, group in _resources(recording, "LeaderWorkerSet"):
        template = group["spec"]["leaderWorkerTemplate"]
        pods.append((resource, template["leaderTemplate"], 1))
        pods.append((resource, template["workerTemplate"], int(template["size"]) - 1))
    return pods


def _vllm(template: Mapping[str, Any]) -> dict[str, Any]:
    (container,) = [c for c in template["spec"]["containers"] if c["name"] == "vllm"]
    return container


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}


def _routes(recording: Recording) -> dict[str, list[dict[str, Any]]]:
    return {o["metadata"]["name"]: o["spec"]["rules"] for _, o in _resources(recording, "HTTPRoute")}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_stopping_model_server_finishes_every_request_the_route_lets_through(
    served: dict[str, Recording], stack: str
) -> None:
    routes = _routes(served[stack])
    servers = _servers(served[stack])
    assert servers, "the model servers must be seen"
    for resource, template, _ in servers:
        container = _vllm(template)
        stop = engine.vllm_stop(container["args"])
        name = resource.inputs["metadata"]["name"]
        assert stop.drains, f"{name}: vLLM aborts every in-flight request on SIGTERM without --shutdown-timeout"
        longest = max(engine.route_cuts_after(rule) for rule in routes[name])
        assert longest <= stop.drain_seconds, (
            f"{name}: the route lets a streamed response run {longest} s, but vLLM stops waiting for it after "
            f"{stop.drain_seconds} s: every scale-down or rollout cuts the longest streams"
        )
        pause = engine.pre_stop_seconds(container)
        assert not engine.killed_after(template["spec"], stop, pause), (
            f"{name}: the kubelet kills the server after {template['spec'].get('terminationGracePeriodSeconds')} s, "
            f"before its {pause} s preStop pause and {stop.drain_seconds} s drain end"
        )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_stopping_server_leaves_the_picker_before_it_refuses_requests(
    served: dict[str, Recording], stack: str
) -> None:
    # vLLM's /health stays 200 while it drains, and it aborts requests arriving after SIGTERM: only the picker's
    # own view (a pod with a deletion timestamp is dropped) stops new requests, so SIGTERM must come after a pause.
    for resource, template, _ in _servers(served[stack]):
        container = _vllm(template)
        if engine.vllm_port(container["args"]) is None:
            continue
        stop = engine.vllm_stop(container["args"])
        assert stop.healthy_while_draining and not stop.accepts_new, "the engine facts this test relies on"
        assert engine.pre_stop_seconds(container) >= 1, (
            f"{resource.inputs['metadata']['name']}: SIGTERM comes at once, so requests the picker chose a moment "
            "before the pod's deletion reach an engine that aborts them"
        )


def test_the_triton_sample_drains_before_it_is_killed(dev_recording: Recording) -> None:
    (triton,) = [o for _, o in _resources(dev_recording, "Deployment") if o["metadata"]["name"] == "triton"]
    pod = triton["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "triton"]
    stop = engine.triton_stop(container["args"])
    assert not engine.killed_after(pod, stop, engine.pre_stop_seconds(container)), (
        f"Triton waits {stop.drain_seconds} s for in-flight inferences; the pod's grace period "
        f"{pod.get('terminationGracePeriodSeconds', 30)} s kills it first"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_picker_drains_before_it_is_killed(served: dict[str, Recording], stack: str) -> None:
    releases = [r for r in served[stack].of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == POOL_CHART]
    assert releases, "the pickers' releases must be seen"
    for release in releases:
        extension = release.inputs["values"].get("inferenceExtension", {})
        pod = {"terminationGracePeriodSeconds": extension.get("terminationGracePeriodSeconds")}
        pod["terminationGracePeriodSeconds"] = pod["terminationGracePeriodSeconds"] or engine.EPP_CHART_GRACE_SECONDS
        assert not engine.killed_after(pod, engine.epp_stop(), 0), f"{release.inputs['name']}: picker killed mid-drain"


def _pool_gpu(stack: str, template: Mapping[str, Any]) -> str:
    pools = {p["name"]: p for p in load_stack_file("dev" if stack == "dev" else "prod", REPO_ROOT)[PREFIX + "gpuPools"]}
    return GPU_SKUS[pools[template["spec"]["nodeSelector"]["gpu-pool"]]["vmSize"]].gpu_model


@pytest.mark.parametrize("stack", ["dev", "prod", "sharded"])
def test_vllms_own_memory_budget_holds_the_weights_and_one_full_sequence(
    served: dict[str, Recording], stack: str
) -> None:
    for resource, template, pods in _servers(served[stack]):
        args = _vllm(template)["args"]
        if engine.vllm_port(args) is None:
            continue
        gpu = _pool_gpu(stack, template)
        shape = MODELS[args[0]]
        spec = resource.inputs["spec"]
        group = int(spec["leaderWorkerTemplate"]["size"]) if "leaderWorkerTemplate" in spec else pods
        gpus = int(engine.flag(args, "tensor-parallel-size") or 1) * group
        reported = engine.cuda_total_mib(gpu) * MIB
        budget = gpus * (engine.vllm_budget_bytes(args, reported) - ACTIVATION_AND_GRAPHS_GIB * GIB)
        quantised = engine.flag(args, "quantization") is not None
        weights = shape.params * (1 if quantised else DTYPE_BYTES[str(engine.flag(args, "dtype"))])
        kv = shape.kv_bytes_per_token * int(str(engine.flag(args, "max-model-len")))
        assert weights + kv <= budget, (
            f"{args[0]} on {gpus} x {gpu}: {(weights + kv) / GIB:.1f} GiB of weights and KV cache, but vLLM "
            f"budgets {budget / GIB:.1f} GiB of the memory the GPUs report: the server crash-loops at start"
        )


def test_the_catalogued_gpu_memory_is_what_the_devices_report() -> None:
    for gpu, mib in engine.NVIDIA_SMI_TOTAL_MIB.items():
        assert DEVICE_MEMORY_MIB.get(gpu) == mib, f"{gpu}: nvidia-smi reports {mib:,} MiB"
    nominal = {sku.gpu_model: sku.gpu_memory_gib for sku in GPU_SKUS.values()}
    assert engine.NVIDIA_SMI_TOTAL_MIB["T4"] < nominal["T4"] * 1024, "a T4 reports less than its marketed 16 GB"


def _jobs(recording: Recording) -> dict[str, tuple[RecordedResource, dict[str, Any]]]:
    return {o["metadata"]["name"]: (r, o) for r, o in _resources(recording, "Job")}


def _claim(template: Mapping[str, Any]) -> str | None:
    """The claim mounted as the weights cache, None without one."""
    volumes = template["spec"].get("volumes", [])
    cache = [v["persistentVolumeClaim"]["claimName"] for v in volumes if "persistentVolumeClaim" in v]
    return cache[0] if cache else None


def _staging(recording: Recording, template: Mapping[str, Any]) -> tuple[RecordedResource, dict[str, Any]]:
    """The Job that writes the weights cache this server reads."""
    writers = [
        (r, job)
        for r, job in _jobs(recording).values()
        if _claim(template) is not None
        and _claim(job["spec"]["template"]) == _claim(template)
        and job["spec"]["template"]["spec"]["containers"][0].get("command") == ["hf"]
    ]
    assert len(writers) == 1, f"one writer stages the cache {_claim(template)}, found {len(writers)}"
    return writers[0]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_servers_start_on_weights_one_job_staged_and_never_download(served: dict[str, Recording], stack: str) -> None:
    recording = served[stack]
    for resource, template, _ in _servers(recording):
        args = _vllm(template)["args"]
        env = _env(_vllm(template))
        assert not engine.vllm_downloads(env), f"{args[0]}: replicas starting together would all download"
        job_resource, job = _staging(recording, template)
        hub = job["spec"]["template"]["spec"]["containers"][0]["args"]
        assert hub[1] == args[0] and engine.flag(hub, "revision") == engine.flag(args, "revision"), (
            f"the staged checkpoint {hub} is the one the server loads ({args[0]} at {engine.flag(args, 'revision')})"
        )
        assert job_resource.urn in resource.depends_on, f"{args[0]}: the servers start only once the Job completed"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_startup_budgets_grow_with_the_checkpoint_and_hold_the_biggest_model(
    served: dict[str, Recording], stack: str
) -> None:
    recording = served[stack]
    for resource, template, _ in _servers(recording):
        container = _vllm(template)
        args = container["args"]
        megabytes = MODELS[args[0]].params * 2 / 10**6
        read = megabytes / CACHE_READ_MBPS
        engine_wait = engine.vllm_engine_ready_seconds(_env(container))
        assert engine_wait >= read + ENGINE_START_SECONDS, (
            f"{args[0]}: vLLM gives its engine {engine_wait} s, but reading {megabytes:,.0f} MB at "
            f"{CACHE_READ_MBPS:g} MB/s and starting take {read + ENGINE_START_SECONDS:.0f} s"
        )
        if probe := container.get("startupProbe"):
            allowed = probe["periodSeconds"] * probe["failureThreshold"]
            assert allowed >= engine_wait, f"{args[0]}: the probe restarts the server after {allowed} s"
            waits = resource.inputs["metadata"].get("annotations", {}).get("pulumi.com/timeoutSeconds")
            if resource.inputs["kind"] == "Deployment":
                assert int(waits) > allowed, f"{args[0]}: pulumi gives up before the probe does"
        _, job = _staging(recording, template)
        deadline = job["spec"]["activeDeadlineSeconds"]
        assert deadline >= megabytes / HUB_DOWNLOAD_MBPS, f"{args[0]}: the download is cut at {deadline} s"
        assert int(job["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) > deadline, (
            f"{args[0]}: pulumi stops waiting for the staging Job before its own deadline"
        )


def _cpu_pool_scales(stack: str) -> bool:
    pool = load_stack_file("dev" if stack == "dev" else "prod", REPO_ROOT).get(PREFIX + "cpuPool", {})
    return int(pool.get("minCount", 1)) < int(pool.get("maxCount", 5))


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_staging_deadline_leaves_the_download_its_time_after_the_node_and_the_image(
    served: dict[str, Recording], stack: str
) -> None:
    # A Job's activeDeadlineSeconds runs from its start, its pod still Pending (kubernetes v1.36
    # pkg/controller/job/job_controller.go pastActiveDeadline, from status.startTime): a new CPU node, when the pool
    # may add one, and the vLLM image's first pull on it come out of the same deadline as the download.
    node = (AUTOSCALER_GPU_DELAY.high_s or 0) + max(
        f.high_s for f in NODE_PROVISIONING.values() if f.high_s is not None
    )
    for _, template, _ in _servers(served[stack]):
        args = _vllm(template)["args"]
        _, job = _staging(served[stack], template)
        download = MODELS[args[0]].params * 2 / 10**6 / HUB_DOWNLOAD_MBPS
        before = IMAGE_PULL_ALLOWANCE_SECONDS + (node if _cpu_pool_scales(stack) else 0)
        deadline = job["spec"]["activeDeadlineSeconds"]
        assert deadline - before >= download, (
            f"{args[0]}: {deadline} s from the Job's start, {before:.0f} s of it for a CPU node and the image pull, "
            f"leaves {deadline - before:.0f} s for {download:.0f} s of download"
        )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_staged_download_is_only_what_vllm_loads(served: dict[str, Recording], stack: str) -> None:
    for _, template, _ in _servers(served[stack]):
        _, job = _staging(served[stack], template)
        download = engine.hub_download(job["spec"]["template"]["spec"]["containers"][0]["args"])
        assert not download.filenames, f"{download}: a file name turns the patterns off"
        for original in ("original/consolidated.00.pth", "original/params.json"):
            assert any(fnmatch.fnmatch(original, p) for p in download.excluded), (
                f"{download.repo}: {original} is downloaded and cached, and vLLM loads the safetensors"
            )
        assert not any(fnmatch.fnmatch("model-00001-of-00004.safetensors", p) for p in download.excluded)


def _mount_of(container: Mapping[str, Any], path: str) -> str:
    """The volume a path lands on: the deepest mount above it."""
    mounts = [m for m in container.get("volumeMounts", []) if (path + "/").startswith(m["mountPath"].rstrip("/") + "/")]
    assert mounts, f"{path} is on the container's read-only root filesystem"
    return max(mounts, key=lambda m: len(m["mountPath"]))["name"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_no_two_servers_write_one_compile_cache(served: dict[str, Recording], stack: str) -> None:
    for resource, template, _ in _servers(served[stack]):
        container = _vllm(template)
        path = _env(container)["VLLM_CACHE_ROOT"]
        (volume,) = [v for v in template["spec"]["volumes"] if v["name"] == _mount_of(container, path)]
        assert "emptyDir" in volume and volume["emptyDir"].get("sizeLimit"), (
            f"{resource.inputs['metadata']['name']}: VLLM_CACHE_ROOT {path} is on {volume}, which every replica "
            "writes: torch.compile files of pods on different nodes overwrite each other without coherence"
        )


def test_a_bigger_checkpoint_gets_a_bigger_startup_budget(served: dict[str, Recording]) -> None:
    budgets: dict[int, int] = {}
    for stack in ("dev", "prod"):
        for _, template, _ in _servers(served[stack]):
            container = _vllm(template)
            if probe := container.get("startupProbe"):
                budgets[MODELS[container["args"][0]].params] = probe["periodSeconds"] * probe["failureThreshold"]
    ordered = [budgets[p] for p in sorted(budgets)]
    assert len(ordered) >= 3 and ordered == sorted(set(ordered)), f"budgets by checkpoint size: {budgets}"
    biggest = max(shape.params for shape in MODELS.values())
    assert biggest in budgets, "the biggest catalogued model is among those rendered"


def _secret_readers(template: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for c in template["spec"]["containers"]
        for e in c.get("env", [])
        if "secretKeyRef" in e.get("valueFrom", {})
    ]


def test_every_reader_of_the_hub_token_waits_for_the_secret_and_reads_its_key(served: dict[str, Recording]) -> None:
    recording = served["prod"]
    secrets = {o["metadata"]["name"]: (r, o) for r, o in _resources(recording, "Secret")}
    readers = 0
    for resource, job in _jobs(recording).values():
        for name, key in _secret_readers(job["spec"]["template"]):
            readers += 1
            assert name in secrets, f"{job['metadata']['name']} reads Secret {name}, which is not created"
            secret_resource, secret = secrets[name]
            assert key in secret.get("stringData", {}), (
                f"it reads key {key!r}; the Secret writes {secret['stringData']}"
            )
            assert secret_resource.urn in resource.depends_on, f"{job['metadata']['name']} starts before its Secret"
    assert readers, "the gated model's download reads the token"
    gated = {m["name"] for m in PROD_MODELS if m["weights"].get("tokenSecret")}
    for resource, template, _ in _servers(recording):
        if resource.inputs["metadata"]["name"] in gated:
            job_resource, _ = _staging(recording, template)
            assert any(job_resource.urn == urn for urn in resource.depends_on), "the server waits for the download"
            assert secrets["hugging-face-token"][0].urn in job_resource.depends_on, "which waits for the token"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_pool_targets_the_port_its_api_servers_listen_on(served: dict[str, Recording], stack: str) -> None:
    recording = served[stack]
    releases = [r for r in recording.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == POOL_CHART]
    servers = {r.inputs["metadata"]["name"]: t for r, t, _ in _servers(recording)}
    for release in releases:
        pool = rendered_inference_pool(release.inputs["name"], "models", release.inputs["values"])
        targets = {p["number"] for p in pool["spec"]["targetPorts"]}
        selected = [
            t
            for t in [t for r, t, _ in _servers(recording) if r.inputs["metadata"]["name"] == release.inputs["name"]]
            if set(pool["spec"]["selector"]["matchLabels"].items()) <= set(t["metadata"]["labels"].items())
        ]
        assert selected and release.inputs["name"] in servers, f"pool {release.inputs['name']} selects its servers"
        for template in selected:
            container = _vllm(template)
            listening = engine.vllm_port(container["args"])
            declared = {p["containerPort"] for p in container.get("ports", [])}
            assert targets == {listening} and listening in declared, (
                f"pool {release.inputs['name']} sends to {targets}; vLLM listens on {listening}, the pod declares "
                f"{declared} (chart default {CHART_DEFAULTS['inferencePool']['targetPorts']})"
            )


def test_the_leader_serves_the_api_and_the_workers_are_headless(served: dict[str, Recording]) -> None:
    groups = [o for _, o in _resources(served["prod"], "LeaderWorkerSet")]
    assert groups, "the multi-node model's group must be seen"
    for group in groups:
        template = group["spec"]["leaderWorkerTemplate"]
        assert engine.vllm_port(_vllm(template["leaderTemplate"])["args"]) is not None, "the leader serves the API"
        assert engine.vllm_port(_vllm(template["workerTemplate"])["args"]) is None, "workers run no API server"


@pytest.mark.parametrize("stack", ["dev", "prod", "sharded"])
def test_every_pod_over_several_gpus_or_nodes_has_a_shared_memory_volume(
    served: dict[str, Recording], stack: str
) -> None:
    seen = 0
    for resource, template, _ in _servers(served[stack]):
        args = _vllm(template)["args"]
        spec = resource.inputs["spec"]
        spans = int(engine.flag(args, "tensor-parallel-size") or 1) > 1 or "leaderWorkerTemplate" in spec
        if not spans:
            continue
        seen += 1
        mounts = {m["mountPath"]: m["name"] for m in _vllm(template)["volumeMounts"]}
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        shm = volumes.get(mounts.get("/dev/shm", ""), {})
        assert shm.get("emptyDir", {}).get("medium") == "Memory", (
            f"{args[0]}: NCCL between its ranks needs more than the runtime's 64 MiB /dev/shm"
        )
    assert seen or stack == "dev", f"{stack}: a pod over several GPUs or nodes must be seen"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_scaled_down_node_gives_its_model_servers_their_whole_grace_period(
    served: dict[str, Recording], stack: str
) -> None:
    # The cluster autoscaler gives a removed node's pods at most maxGracefulTerminationSec, whatever they ask for.
    profile = served[stack].one(MANAGED_CLUSTER).inputs["autoScalerProfile"]
    for resource, template, _ in _servers(served[stack]):
        grace = template["spec"]["terminationGracePeriodSeconds"]
        assert grace <= int(profile["maxGracefulTerminationSec"]), (
            f"{resource.inputs['metadata']['name']}: asks {grace} s to drain; a scale-down gives it "
            f"{profile['maxGracefulTerminationSec']} s"
        )


def test_an_autoscaler_grace_shorter_than_the_drain_is_refused() -> None:
    settings = settings_of(copy.deepcopy(_with_models("dev", DEV_MODELS)))
    settings["cluster"].setdefault("autoscalerProfile", {})["maxGracefulTerminationSeconds"] = 300
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    (problem,) = caught.value.problems
    assert problem.startswith("cluster.autoscalerProfile.maxGracefulTerminationSeconds: got 300"), problem
