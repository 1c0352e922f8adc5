"""What each model server is started with and who finds it: vLLM shards the model over exactly the GPUs its pod
holds, loads it in the precision the memory check sized, and the InferencePool, its scrape and the gateway's path
to the picker reach the right pods.

Upstream facts used (docs/charts.md, "Serving"):
- vLLM 0.34.0 `vllm serve` flags (vllm/engine/arg_utils.py) and `--dtype` names (vllm/config/model.py: `half` and
  `float16` are float16, `bfloat16` bfloat16, `float`/`float32` float32; `auto` with `--quantization fp8` keeps the
  checkpoint's 16-bit type and quantises the weights to fp8).
- LeaderWorkerSet v0.10.0: every pod of a group gets LWS_GROUP_SIZE = leaderWorkerTemplate.size.
- The inferencepool chart v1.5.0 (tests/upstream/serving.py): the pool's endpointPickerRef port and the picker's
  `inferencepool: <release>-epp` pod label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from aks_gpu_platform.components.inference.gateway import GATEWAY_NAME, GATEWAY_NAMESPACE, GATEWAY_POD_LABEL
from aks_gpu_platform.components.monitoring import metrics_labels as labels
from aks_gpu_platform.config.gpu.scheduling import GPU_POOL_NAME_LABEL_KEY, GPU_RESOURCE
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.inference.test_serving import DEV_MODELS, PROD_MODELS, REVISION, _prod_with_models, _with_models
from tests.upstream.promql import Evaluator
from tests.upstream.scheduling import node_templates
from tests.upstream.scrape import Series
from tests.upstream.serving import picker_name, rendered_inference_pool
from tests.upstream.tenancy import Endpoint, build_world, connection_refusals
from tools import REPO_ROOT

POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
# vllm/config/model.py at 0.34.0: the torch type behind each --dtype name.
VLLM_DTYPE_BITS = {"half": 16, "float16": 16, "bfloat16": 16, "float": 32, "float32": 32}


@pytest.fixture(scope="module")
def served() -> dict[str, Recording]:
    # The T4 model left at `auto`: what vLLM is told must still be float16, the type the T4 computes.
    dev = [{**DEV_MODELS[0], "dtype": "auto"}]
    return {"dev": run_stack("dev", _with_models("dev", dev)), "prod": run_stack("prod", _prod_with_models())}


def _objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


def _server_pods(recording: Recording) -> dict[str, list[tuple[dict[str, Any], int]]]:
    """Model name -> (pod template, pods of that template in one replica) of its servers."""
    pods: dict[str, list[tuple[dict[str, Any], int]]] = {}
    for deployment in _objects(recording, "Deployment"):
        if deployment["metadata"]["namespace"] == "models":
            pods[deployment["metadata"]["name"]] = [(deployment["spec"]["template"], 1)]
    for group in _objects(recording, "LeaderWorkerSet"):
        template = group["spec"]["leaderWorkerTemplate"]
        size = int(template["size"])
        pods[group["metadata"]["name"]] = [(template["leaderTemplate"], 1), (template["workerTemplate"], size - 1)]
    return pods


def _flags(args: list[str], env: Mapping[str, str]) -> dict[str, str]:
    """`--flag value` pairs of a `vllm serve` command line, with Kubernetes' $(VAR) expansion applied."""
    flags: dict[str, str] = {}
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else ""
            for name, resolved in env.items():
                value = value.replace(f"$({name})", resolved)
            flags[arg[2:]] = value
    return flags


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_vllm_shards_each_replica_over_exactly_the_gpus_it_holds(served: dict[str, Recording], stack: str) -> None:
    models = {m["name"]: m for m in (DEV_MODELS if stack == "dev" else PROD_MODELS)}
    pods = _server_pods(served[stack])
    assert set(pods) == set(models), f"every configured model gets its servers: {sorted(pods)}"
    for name, templates in pods.items():
        model = models[name]
        want = model.get("tensorParallel", 1) * model.get("nodes", 1)
        held = 0
        for template, count in templates:
            (container,) = template["spec"]["containers"]
            gpus = int(container["resources"]["limits"][GPU_RESOURCE])
            held += gpus * count
            group = {"LWS_GROUP_SIZE": str(sum(c for _, c in templates))}
            flags = _flags(container["args"], group)
            tensor = int(flags.get("tensor-parallel-size", "1"))
            pipeline = int(flags.get("pipeline-parallel-size", "1"))
            assert tensor == gpus, (
                f"{name}: vLLM shards over {tensor} GPU(s) but the pod holds {gpus}: the others idle, or the "
                "weights sized for the whole replica do not fit one GPU"
            )
            assert tensor * pipeline == want, (
                f"{name}: tensor {tensor} x pipeline {pipeline} ranks, but a replica is tensorParallel x nodes = "
                f"{want} GPUs: the group waits for ranks that never join"
            )
            assert flags.get("served-model-name") == name, f"{name}: clients call the model by its configured name"
        assert held == want, f"{name}: one replica's pods hold {held} GPUs, the config and the cost count {want}"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_vllm_loads_the_weights_in_the_precision_the_memory_check_sized(
    served: dict[str, Recording], stack: str
) -> None:
    for name, templates in _server_pods(served[stack]).items():
        for template, _ in templates:
            (container,) = template["spec"]["containers"]
            dtype = _flags(container["args"], {})["dtype"]
            assert VLLM_DTYPE_BITS.get(dtype) == 16 or dtype == "auto", (
                f"{name}: --dtype {dtype} is not a 16-bit type vLLM knows: the weights take twice the memory the "
                "config checked, or vLLM exits on an unknown name"
            )
            if stack == "dev":
                assert dtype in ("half", "float16"), (
                    f"{name}: a T4 (compute capability 7.5) has no bfloat16; `auto` must reach vLLM as float16, not "
                    f"{dtype}"
                )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_inference_pool_and_scrape_select_only_their_own_models_api_servers(
    served: dict[str, Recording], stack: str
) -> None:
    recording = served[stack]
    pods = _server_pods(recording)
    monitors = {m["metadata"]["name"]: m for m in _objects(recording, "PodMonitor")}
    releases = [r for r in recording.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("chart") == POOL_CHART]
    assert {str(r.inputs["name"]) for r in releases} == set(pods), "one InferencePool per model"

    def selects(selector: Mapping[str, str], template: dict[str, Any]) -> bool:
        labels = template["metadata"].get("labels") or {}
        return all(labels.get(k) == v for k, v in selector.items())

    for release in releases:
        name = str(release.inputs["name"])
        pool = rendered_inference_pool(name, str(release.inputs["namespace"]), release.inputs.get("values") or {})
        monitor = monitors[f"vllm-{name}"]["spec"]["selector"]["matchLabels"]
        for selector, what in ((pool["spec"]["selector"]["matchLabels"], "InferencePool"), (monitor, "PodMonitor")):
            for other, templates in pods.items():
                serving = [t for t, _ in templates if t["spec"]["containers"][0].get("ports")]
                chosen = [t for t, _ in templates if selects(selector, t)]
                if other == name:
                    assert chosen and all(t in serving for t in chosen), (
                        f"{what} {name} must select its own API servers only (not a group's headless workers): "
                        f"{selector}"
                    )
                else:
                    assert chosen == [], (
                        f"{what} {name} also selects model {other}'s pods: requests for {name} reach a server that "
                        "answers another model (404), and its metrics mix into this model's"
                    )


def test_the_gateway_reaches_each_models_endpoint_picker(served: dict[str, Recording]) -> None:
    recording = served["prod"]
    world = build_world(recording, {})
    gateway = Endpoint("pod", 0, namespace=GATEWAY_NAMESPACE, labels=((GATEWAY_POD_LABEL, GATEWAY_NAME),))
    releases = [r for r in recording.of_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("chart") == POOL_CHART]
    assert releases, "prod serves models"
    for release in releases:
        name, namespace = str(release.inputs["name"]), str(release.inputs["namespace"])
        pool = rendered_inference_pool(name, namespace, release.inputs.get("values") or {})
        port = int(pool["spec"]["endpointPickerRef"]["port"]["number"])
        picker = Endpoint("pod", port, namespace=namespace, labels=(("inferencepool", picker_name(name)),))
        assert connection_refusals(world, gateway, picker) == [], (
            f"the gateway must reach {name}'s picker on its ext_proc port {port}, or every request to the model "
            "fails open to a random server or is refused"
        )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_scaled_object_scales_its_models_servers(served: dict[str, Recording], stack: str) -> None:
    recording = served[stack]
    servers = {
        (o["apiVersion"], o["kind"], o["metadata"]["name"])
        for kind in ("Deployment", "LeaderWorkerSet")
        for o in _objects(recording, kind)
        if o["metadata"]["namespace"] == "models"
    }
    scaled = [s for s in _objects(recording, "ScaledObject") if s["metadata"]["namespace"] == "models"]
    assert len(scaled) == len(servers), "one ScaledObject per model"
    for obj in scaled:
        ref = obj["spec"]["scaleTargetRef"]
        assert (ref["apiVersion"], ref["kind"], ref["name"]) in servers, (
            f"{obj['metadata']['name']} scales {ref}, which does not exist: KEDA reports the target missing and the "
            f"model never grows past its minReplicas (servers: {sorted(servers)})"
        )


def _rewritten(path: str, prefix: str, replacement: str) -> str:
    """Gateway API ReplacePrefixMatch, by the table in its doc comment (kubernetes-sigs/gateway-api
    apis/v1/httproute_types.go, HTTPPathModifier): the matched prefix is replaced on a segment boundary, so
    `/foo/bar` with prefix `/foo` and replacement `/` becomes `/bar`."""
    assert path == prefix or path.startswith(prefix.rstrip("/") + "/"), f"{path} does not match {prefix}"
    return (replacement.rstrip("/") + path[len(prefix.rstrip("/")) :]) or "/"


def test_the_route_hands_vllm_the_openai_path_the_documented_call_uses(dev_recording: Recording) -> None:
    job = (REPO_ROOT / "examples" / "llm-serving" / "chat-job.yaml").read_text()
    (url,) = re.findall(r"http://\S+/v1/chat/completions", job)
    path = "/" + url.split("/", 3)[3]
    matched = []
    for route in _objects(dev_recording, "HTTPRoute"):
        for rule in route["spec"]["rules"]:
            prefixes = [m["path"]["value"] for m in rule["matches"] if path.startswith(m["path"]["value"] + "/")]
            for prefix in prefixes:
                (rewrite,) = [f["urlRewrite"]["path"] for f in rule.get("filters", []) if f["type"] == "URLRewrite"]
                assert rewrite["type"] == "ReplacePrefixMatch", rewrite
                matched.append(_rewritten(path, prefix, rewrite["replacePrefixMatch"]))
    # vLLM 0.34.0 serves the OpenAI API under /v1 (vllm/entrypoints/openai/api_server.py).
    assert matched == ["/v1/chat/completions"], (
        f"{path} reaches vLLM as {matched}: anything but /v1/chat/completions is a 404 from the server"
    )


def test_prod_servers_load_the_pinned_weights_revision(served: dict[str, Recording]) -> None:
    for name, templates in _server_pods(served["prod"]).items():
        for template, _ in templates:
            (container,) = template["spec"]["containers"]
            revision = _flags(container["args"], {}).get("revision")
            assert revision == REVISION, (
                f"{name}: vLLM reads the Hub at {revision!r}, not the configured commit: a new push to the model "
                "changes what prod serves"
            )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_model_servers_land_only_on_their_configured_pool(served: dict[str, Recording], stack: str) -> None:
    models = {m["name"]: m for m in (DEV_MODELS if stack == "dev" else PROD_MODELS)}
    nodes = node_templates(served[stack])
    for name, templates in _server_pods(served[stack]).items():
        for template, _ in templates:
            selector = template["spec"]["nodeSelector"]
            pools = {n.labels.get(GPU_POOL_NAME_LABEL_KEY) for n in nodes if _subset(selector, n.labels)}
            assert pools == {models[name]["pool"]}, (
                f"{name} may land on pools {pools}: the config sized its memory, tensor parallel and cost for "
                f"{models[name]['pool']}'s GPUs only"
            )


def _subset(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_replica_can_mount_the_weights_cache(served: dict[str, Recording], stack: str) -> None:
    recording = served[stack]
    classes = {o["metadata"]["name"]: o for o in _objects(recording, "StorageClass")}
    claims = [c for c in _objects(recording, "PersistentVolumeClaim") if c["metadata"]["namespace"] == "models"]
    assert claims, "Hub weights are cached on a claim"
    for claim in claims:
        spec = claim["spec"]
        assert "ReadWriteMany" in spec["accessModes"], (
            f"{claim['metadata']['name']}: replicas on other nodes (and every pod of a group) mount the same cache; "
            f"{spec['accessModes']} lets one node attach it and the others stay ContainerCreating"
        )
        provisioner = classes[spec["storageClassName"]]["provisioner"]
        # Azure Blob and Azure Files CSI drivers are the AKS ones that mount a volume on many nodes at once.
        assert provisioner in ("blob.csi.azure.com", "file.csi.azure.com"), (
            f"{claim['metadata']['name']}: class {spec['storageClassName']} ({provisioner}) cannot serve ReadWriteMany"
        )


def _gpu_panel(recording: Recording, model: str) -> str:
    (board,) = [
        json.loads(str(d.inputs["configJson"]))
        for d in recording.of_type("grafana:oss/dashboard:Dashboard")
        if d.name.endswith(f"-{model}-dashboard")
    ]
    (panel,) = [p for p in board["panels"] if p["title"] == "GPU utilisation per server"]
    return str(panel["targets"][0]["expr"])


@pytest.mark.parametrize(
    ("stack", "model", "own", "others"),
    [
        # kubernetes-sigs/lws (docs, "LeaderWorkerSet"): a group's leader is <name>-<group>, its workers
        # <name>-<group>-<index>.
        (
            "prod",
            "llama-70b",
            ["llama-70b-0", "llama-70b-0-1", "llama-70b-1", "llama-70b-1-1"],
            ["llama-8b-6d5f9-x2kq"],
        ),
        # A Deployment's pods: <name>-<ReplicaSet hash>-<suffix>.
        ("dev", "qwen-small", ["qwen-small-7d9f8b6c5-abcde"], ["qwen-small-epp-5c6d-x"]),
    ],
)
def test_the_gpu_panel_shows_every_server_pod_of_the_model(
    served: dict[str, Recording], stack: str, model: str, own: list[str], others: list[str]
) -> None:
    series = [
        Series(
            {
                "__name__": "DCGM_FI_DEV_GPU_UTIL",
                labels.WORKLOAD_NAMESPACE: "models",
                labels.WORKLOAD_POD: pod,
                "gpu": "0",
                "namespace": "gpu-operator",
                "pod": "nvidia-dcgm-exporter-abcde",
            },
            50.0,
        )
        for pod in own + others
    ]
    shown = {s.labels[labels.WORKLOAD_POD] for s in Evaluator(series).vector(_gpu_panel(served[stack], model))}
    assert shown == set(own), (
        f"{model}'s GPU panel shows {sorted(shown)}: every server pod of the model (a group's leader and workers) and "
        "no other pod, or an idle or saturated GPU goes unseen"
    )
