"""Every namespace the platform puts anything in enforces a Pod Security level the stack chose: the stack creates it,
with the three Pod Security labels, before any Helm release installs into it. A namespace Helm creates
(`create_namespace`) carries no label, so Kubernetes enforces `privileged` there: anything goes."""

from __future__ import annotations

import re
from functools import cache

import pytest

from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.gpu.test_scheduling import VARIANTS
from tests.harness.contract_stacks import CONTRACT_STACKS, contract_recording
from tools import REPO_ROOT

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
LEVELS = ("privileged", "baseline", "restricted")
MODES = ("enforce", "audit", "warn")
# Namespaces Kubernetes and AKS create on every cluster; AKS manages kube-system's pods and its labels.
BUILT_IN = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
# A stack with a multi-node served model: the only one that installs LeaderWorkerSet.
MULTI_NODE_SERVING = "prod-multi-node-serving"
STACKS = (*CONTRACT_STACKS, *(v for v in VARIANTS if v not in CONTRACT_STACKS), MULTI_NODE_SERVING)


@cache
def recording(stack: str) -> Recording:
    if stack == MULTI_NODE_SERVING:
        from tests.inference.test_serving import _prod_with_models  # pyright: ignore[reportPrivateUsage]

        return run_stack("prod", _prod_with_models())
    return contract_recording(stack)


def _depends(recording: Recording, urn: str) -> set[str]:
    """Every resource `urn` waits for, directly or through what it waits for."""
    edges = {r.urn: r.depends_on for r in recording.resources}
    seen: set[str] = set()
    todo = list(edges.get(urn, []))
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo += edges.get(dep, [])
    return seen


def _cluster(provider: str) -> str:
    """The Kubernetes provider a resource goes through: one per cluster (a fleet renders several)."""
    return provider.rsplit("::", 1)[0]


def namespace_problems(recording: Recording) -> list[str]:
    created = {(_cluster(r.provider), str(r.inputs["metadata"]["name"])): r for r in recording.of_type(NAMESPACE)}
    problems: list[str] = []
    for (_, name), ns in sorted(created.items()):
        labels = ns.inputs["metadata"].get("labels") or {}
        for mode in MODES:
            level = labels.get(f"pod-security.kubernetes.io/{mode}")
            if level not in LEVELS:
                problems.append(
                    f"namespace {name}: pod-security.kubernetes.io/{mode} is {level!r}, not one of {LEVELS}"
                )
    landing: dict[tuple[str, str], list[str]] = {}
    for resource in recording.kubernetes_objects():
        obj = kubernetes_object(resource)
        namespace = obj["metadata"].get("namespace")
        if namespace:
            what = f"{obj['kind']} {obj['metadata']['name']}"
            landing.setdefault((_cluster(resource.provider), str(namespace)), []).append(what)
    for release in recording.of_type(RELEASE):
        key = (_cluster(release.provider), str(release.inputs.get("namespace")))
        landing.setdefault(key, []).append(f"Helm release {release.name}")
        if release.inputs.get("createNamespace"):
            problems.append(f"{release.name}: Helm creates {key[1]} without Pod Security labels")
        if key in created and created[key].urn not in _depends(recording, release.urn):
            problems.append(f"{release.name}: installs before the stack has created {key[1]} with its labels")
    for (_, namespace), what in sorted(landing.items()):
        if (_, namespace) not in created and namespace not in BUILT_IN:
            problems.append(f"{namespace} (holding {what[0]}) is neither created by the stack nor built in")
    return problems


@pytest.mark.parametrize("stack", STACKS)
def test_every_namespace_the_platform_uses_is_created_with_its_pod_security_levels(stack: str) -> None:
    problems = namespace_problems(recording(stack))
    assert not problems, "\n".join(problems)


def test_the_stacks_cover_every_platform_namespace_that_helm_used_to_create() -> None:
    """So the parametrization above reaches each one: cert-manager, JobSet, Kueue, Istio, the Network Operator,
    LeaderWorkerSet, the GPU Operator, the DRA driver and AMD's operator."""
    used = {str(r.inputs.get("namespace")) for stack in STACKS for r in recording(stack).of_type(RELEASE)}
    expected = {
        "cert-manager",
        "jobset-system",
        "kueue-system",
        "istio-system",
        "nvidia-network-operator",
        "lws-system",
        "gpu-operator",
        "nvidia-dra-driver-gpu",
    }
    assert expected <= used, f"not installed by any stack checked: {sorted(expected - used)}"


def documented_levels() -> dict[str, set[str]]:
    """Namespace -> the `enforce` levels docs/security.md ("Namespace Pod Security") says the platform chooses (a row
    names a second level where config decides, e.g. a served model spanning nodes). Team namespaces are left out:
    their level depends on InfiniBand quota (tests/training/test_tenancy.py)."""
    text = (REPO_ROOT / "docs" / "security.md").read_text()
    section = text.split("## Namespace Pod Security", 1)[1].split("\n## ", 1)[0]
    levels: dict[str, set[str]] = {}
    for names, chosen in re.findall(r"^\| (.+?) \| (.+?) \|", section, re.M):
        allowed = set(re.findall(r"`(privileged|baseline|restricted)`", chosen))
        for name in re.findall(r"`([a-z0-9-]+)`", names):
            levels[name] = allowed
    return levels


def test_the_documented_levels_name_every_platform_namespace() -> None:
    levels = documented_levels()
    assert {"kueue-system", "istio-system", "models", "inference-gateway", "gpu-operator"} <= set(levels), levels
    assert all(allowed and allowed <= set(LEVELS) for allowed in levels.values()), levels


@pytest.mark.parametrize("stack", STACKS)
def test_each_platform_namespace_enforces_the_level_the_platform_chose(stack: str) -> None:
    """Not just any valid level: a controller's namespace at `privileged` admits privileged pods beside it."""
    levels = documented_levels()
    wrong: list[str] = []
    for ns in recording(stack).of_type(NAMESPACE):
        name = str(ns.inputs["metadata"]["name"])
        labels = ns.inputs["metadata"].get("labels") or {}
        if name in levels and labels.get("pod-security.kubernetes.io/enforce") not in levels[name]:
            wrong.append(f"{name}: enforces {labels.get('pod-security.kubernetes.io/enforce')!r}, not {levels[name]}")
    assert not wrong, "\n".join(wrong)
