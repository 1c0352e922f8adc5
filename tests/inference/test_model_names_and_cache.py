"""A served model's weights cache binds, and its name fits every system that reads it: Helm's release names and the
inferencepool chart's picker names."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.inference.test_serving import _prod_with_models
from tests.platform.test_name_limits import name_problems
from tests.upstream.names import (
    INFERENCE_POOL_CHART,
    dns_1035_problem,
    helm_release_problem,
    inference_pool_chart_objects,
    job_pod_labels,
    label_value_problem,
)
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _model(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "weights": {"huggingFace": "Qwen/Qwen2.5-0.5B-Instruct"},
        "pool": "gput4",
        "dtype": "float16",
        "maxModelLen": 4096,
        "minReplicas": 0,
        "scaleToZero": True,
        "maxReplicas": 1,
        "teams": ["ml"],
        "slo": {"timeToFirstTokenP90Seconds": 45},
    }


def _dev(models: list[dict[str, Any]], blob_classes: dict[str, Any] | None = None) -> dict[str, Any]:
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    config[PREFIX + "inference"] = {"models": models}
    if blob_classes is not None:
        storage = config.setdefault(PREFIX + "storage", {})
        storage["blobClasses"] = {**storage.get("blobClasses", {}), **blob_classes}
    return config


def _objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


@pytest.mark.parametrize(
    "blob_classes",
    [
        {},
        {"premium": {"enabled": False, "name": "blob-premium", "skuName": "Premium_LRS"}},
        {"standard": {"enabled": False, "name": "blob-standard", "skuName": "Standard_LRS"}},
    ],
    ids=["both", "premium-off", "standard-off"],
)
def test_the_weights_cache_claims_a_storage_class_the_stack_creates(blob_classes: dict[str, Any]) -> None:
    recording = run_stack("dev", _dev([_model("chat")], blob_classes))
    created = {c["metadata"]["name"] for c in _objects(recording, "StorageClass")}
    (claim,) = [
        c for c in _objects(recording, "PersistentVolumeClaim") if c["metadata"]["name"] == "weights-cache-chat"
    ]
    assert claim["spec"]["storageClassName"] in created, (
        f"the weights cache names class {claim['spec']['storageClassName']!r}, but the stack creates "
        f"{sorted(created)}: the claim never binds and the model's pods stay Pending"
    )


def test_served_models_without_any_blob_class_are_refused_naming_the_setting() -> None:
    off = {
        "premium": {"enabled": False, "name": "blob-premium", "skuName": "Premium_LRS"},
        "standard": {"enabled": False, "name": "blob-standard", "skuName": "Standard_LRS"},
    }
    with pytest.raises(ConfigError) as refused:
        run_stack("dev", _dev([_model("chat")], off))
    assert "storage.blobClasses" in str(refused.value) and "enable" in str(refused.value), str(refused.value)


NAME_53 = "chat-" + "q" * 48  # 53 characters
NAME_49 = NAME_53[:49]


def _pool_releases(recording: Recording) -> list[Any]:
    return [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == INFERENCE_POOL_CHART]


def _refusal(config: dict[str, Any], stack: str = "dev") -> str:
    with pytest.raises(ConfigError) as refused:
        run_stack(stack, config)
    return str(refused.value)


def test_a_hub_model_name_at_its_limit_renders_names_every_system_accepts() -> None:
    recording = run_stack("dev", _dev([_model(NAME_49)]))
    (release,) = _pool_releases(recording)
    assert helm_release_problem(release.inputs["name"]) is None
    assert name_problems(recording) == []


def test_a_hub_model_name_past_its_staging_jobs_label_is_refused_naming_the_label() -> None:
    name = NAME_49 + "x"
    assert label_value_problem(job_pod_labels(f"weights-stage-{name}")["job-name"]), "the model must show the clash"
    message = _refusal(_dev([_model(name)]))
    assert "inference.models[0].name" in message and "at most 49" in message and "job-name" in message, message


def test_a_model_name_past_helms_limit_is_refused_naming_the_limit() -> None:
    name = NAME_53 + "x"
    assert helm_release_problem(name) is not None, "the model of Helm must refuse 54 characters"
    blob = {"blob": {"path": "weights/qwen"}, "catalogId": "Qwen/Qwen2.5-0.5B-Instruct"}
    message = _refusal(_dev([{**_model(name), "weights": blob}]))
    assert "inference.models[0].name" in message and "53" in message and "Helm" in message, message


def test_a_model_name_starting_with_a_digit_is_refused_for_its_pickers_service() -> None:
    assert dns_1035_problem("7b-chat-epp"), "the model of Service names must refuse it"
    message = _refusal(_dev([_model("7b-chat")]))
    assert "inference.models[0].name" in message and "letter" in message and "-epp" in message, message


def _group(name: str, max_replicas: int) -> dict[str, Any]:
    config = copy.deepcopy(_prod_with_models())
    (group,) = [m for m in config[PREFIX + "inference"]["models"] if m.get("nodes", 1) > 1]
    group.update(name=name, maxReplicas=max_replicas)
    (pool,) = [p for p in config[PREFIX + "gpuPools"] if p["name"] == group["pool"]]
    pool["maxCount"] = max(pool["maxCount"], 4 + max_replicas * group["nodes"])
    return config


def test_a_multi_node_model_name_at_its_limit_renders_revision_labels_kubernetes_accepts() -> None:
    # maxReplicas 101: the last group's workers are the StatefulSet `<name>-100`, their pods' revision label
    # `<name>-100-<hash of up to 10>`: 48 characters of name, tighter than the staging Job's 49.
    name = "l" * 48
    recording = run_stack("prod", _group(name, 101))
    assert [r for r in recording.kubernetes_objects() if r.inputs.get("kind") == "LeaderWorkerSet"]
    assert name_problems(recording) == []
    message = _refusal(_group(name + "l", 101), "prod")
    assert "inference.models[2].name" in message and "at most 48" in message, message
    assert "controller-revision-hash" in message, message


def _shared(prefix_length: int) -> list[str]:
    stem = ("qwen-small-instruct-" * 3)[:prefix_length]
    return [f"{stem}{'a' * (45 - prefix_length)}", f"{stem}{'b' * (45 - prefix_length)}"]


def test_models_differing_within_their_first_40_characters_get_distinct_pickers() -> None:
    names = _shared(39)
    recording = run_stack("dev", _dev([_model(n) for n in names]))
    rendered = [
        (kind, name)
        for r in _pool_releases(recording)
        for kind, name in inference_pool_chart_objects(r.inputs["name"], r.inputs["values"])
    ]
    assert len(rendered) == len(set(rendered)), f"two releases render one object: {sorted(rendered)}"
    assert name_problems(recording) == [], "their dashboards, Jobs and labels stay apart too"


def test_models_sharing_their_first_40_characters_are_refused() -> None:
    names = _shared(40)
    pickers = [inference_pool_chart_objects(n, {})[2] for n in names]
    assert pickers[0] == pickers[1], "the chart model must show the collision this refusal prevents"
    with pytest.raises(ConfigError) as refused:
        run_stack("dev", _dev([_model(n) for n in names]))
    message = str(refused.value)
    assert "inference.models[1].name" in message and "40" in message and "-epp" in message, message
