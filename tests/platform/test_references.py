"""Every name a rendered object refers to resolves in its cluster: to an object the stack creates there (itself or
through a chart a test models), or to one the cluster provides (tests/upstream/references.py lists those, with their
sources). A dangling name fails only on a real cluster: a claim that never binds, a pod refused at admission or stuck
in ContainerCreating, a route the gateway rejects, a scaler with nothing to scale."""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import pytest

from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.harness.contract_stacks import CONTRACT_STACKS, contract_recording
from tests.upstream.names import INFERENCE_POOL_CHART, inference_pool_chart_objects
from tests.upstream.references import Cluster, dangling, pool_port_problems, references
from tests.upstream.release_contract import release_facts
from tests.upstream.scheduling import RELEASE
from tests.upstream.serving import rendered_inference_pool


def clusters_of(recording: Recording) -> dict[str, Cluster]:
    """Each Kubernetes provider's cluster (a fleet's hub and members apart), with what its charts create."""
    clusters: dict[str, Cluster] = defaultdict(Cluster)
    for resource in recording.kubernetes_objects():
        clusters[resource.provider].add(kubernetes_object(resource))
    facts = {f.release: f for f in release_facts(recording)[0]}
    for release in recording.of_type(RELEASE):
        cluster = clusters[release.provider]
        namespace = str(release.inputs.get("namespace") or "default")
        if release.inputs.get("createNamespace"):
            cluster.add({"kind": "Namespace", "metadata": {"name": namespace}})
        if release.name in facts:
            for runtime_class in facts[release.name].model.runtime_classes:
                cluster.add({"kind": "RuntimeClass", "metadata": {"name": runtime_class}})
        if release.inputs.get("chart") == INFERENCE_POOL_CHART:
            name, values = release.inputs["name"], release.inputs.get("values") or {}
            for kind, object_name in inference_pool_chart_objects(name, values):
                cluster.add({"kind": kind, "metadata": {"name": object_name, "namespace": namespace}})
            cluster.add(rendered_inference_pool(name, namespace, values))
    return dict(clusters)


def reference_problems(recording: Recording) -> list[str]:
    problems: list[str] = []
    for cluster in clusters_of(recording).values():
        refs = [ref for manifest in cluster.objects.values() for ref in references(manifest)]
        problems += dangling(cluster, refs) + pool_port_problems(cluster)
    return problems


@pytest.mark.parametrize("stack", CONTRACT_STACKS)
def test_every_name_an_object_refers_to_resolves_in_its_cluster(stack: str) -> None:
    recording = contract_recording(stack)
    assert reference_problems(recording) == []


def _planted(stack: str, kind: str, change: Any) -> Recording:
    """The stack's recording with one object of `kind` changed by `change`."""
    planted = copy.deepcopy(contract_recording(stack))
    (target, *_) = [r for r in planted.kubernetes_objects() if r.inputs.get("kind") == kind]
    change(target.inputs)
    return planted


def _set_class(inputs: dict[str, Any]) -> None:
    inputs["spec"]["storageClassName"] = "blob-premium-disabled"


def _set_listener(inputs: dict[str, Any]) -> None:
    inputs["spec"]["parentRefs"][0]["sectionName"] = "team-nobody"


def _set_target(inputs: dict[str, Any]) -> None:
    inputs["spec"]["scaleTargetRef"]["name"] = "renamed"


@pytest.mark.parametrize(
    ("kind", "change", "named"),
    [
        ("PersistentVolumeClaim", _set_class, "StorageClass blob-premium-disabled"),
        ("HTTPRoute", _set_listener, "listener team-nobody"),
        ("ScaledObject", _set_target, "/renamed"),
    ],
)
def test_a_planted_dangling_reference_is_caught(kind: str, change: Any, named: str) -> None:
    problems = reference_problems(_planted("dev", kind, change))
    assert len(problems) == 1 and named in problems[0], problems


def test_an_inference_pool_on_a_port_its_pods_do_not_serve_is_caught() -> None:
    def move_port(inputs: dict[str, Any]) -> None:
        if inputs["metadata"]["namespace"] == "models":
            inputs["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 8080

    planted = copy.deepcopy(contract_recording("dev"))
    for resource in planted.kubernetes_objects():
        if resource.inputs.get("kind") == "Deployment":
            move_port(resource.inputs)
    problems = reference_problems(planted)
    assert any("targets ports [8000]" in p for p in problems), problems
