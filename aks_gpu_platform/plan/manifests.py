"""The workloads of a team's manifests as the checks read them: each Job, JobSet, Pod or Deployment, its pod sets and
what each pod requests (Kubernetes quantities, the scheduler's sum of a pod's requests)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CHECKED_KINDS = ("Pod", "Deployment", "Job", "JobSet")
GIB = 2**30


class ManifestError(ValueError):
    """A manifest the command cannot read: exit 2."""


# ---------------------------------------------------------------- quantities and requests

_SUFFIXES = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)(?:[eE]([+-]?\d+)|([a-zA-Z]*))$")


def parse_quantity(value: Any, where: str = "") -> Fraction:
    """A Kubernetes quantity (apimachinery pkg/api/resource): `500m`, `12Gi`, `2`, `1e3`."""
    match = _QUANTITY.match(str(value).strip())
    if not match or (match.group(3) or "") not in _SUFFIXES:
        raise ManifestError(f"{where}: {value!r} is not a Kubernetes quantity (e.g. 500m, 2, 12Gi)")
    number = Fraction(match.group(1))
    if match.group(2):
        return number * Fraction(10) ** int(match.group(2))
    return number * _SUFFIXES[match.group(3) or ""]


def show_amount(name: str, amount: Fraction) -> str:
    if name == "memory" or name.endswith("storage"):
        return f"{float(amount / GIB):.3g}Gi"
    if name == "cpu" and amount.denominator != 1:
        return f"{math.ceil(amount * 1000)}m"
    return f"{float(amount):g}"


def _container_requests(container: Mapping[str, Any], where: str) -> dict[str, Fraction]:
    """A limit without a request is the request (the API server's defaulting)."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(k): parse_quantity(v, f"{where} container {container.get('name')} {k}") for k, v in merged.items()}


def pod_requests(spec: Mapping[str, Any], where: str = "") -> dict[str, Fraction]:
    """k8s.io/component-helpers resource/helpers.go PodRequests: containers plus restartable init containers
    (sidecars), or an init container plus the sidecars started before it, whichever is more; plus the overhead."""
    total: dict[str, Fraction] = {}
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for name, amount in _container_requests(container, where).items():
            total[name] = total.get(name, Fraction(0)) + amount
    for container in spec.get("initContainers") or []:
        requests = _container_requests(container, where)
        if container.get("restartPolicy") == "Always":
            for name, amount in requests.items():
                sidecars[name] = sidecars.get(name, Fraction(0)) + amount
                total[name] = total.get(name, Fraction(0)) + amount
                init_peak[name] = max(init_peak.get(name, Fraction(0)), sidecars[name])
        else:
            for name, amount in requests.items():
                init_peak[name] = max(init_peak.get(name, Fraction(0)), amount + sidecars.get(name, Fraction(0)))
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, Fraction(0)), amount)
    for name, amount in (spec.get("overhead") or {}).items():
        total[str(name)] = total.get(str(name), Fraction(0)) + parse_quantity(amount, f"{where} overhead")
    return total


# ---------------------------------------------------------------- the manifest's workloads


@dataclass(frozen=True)
class PodSet:
    """Pods that share one template: what Kueue meters and the scheduler places."""

    name: str
    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]
    count: int


@dataclass(frozen=True)
class Workload:
    kind: str
    name: str
    namespace: str
    obj: Mapping[str, Any]
    pod_sets: tuple[PodSet, ...]

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def queue(self) -> str | None:
        labels = (self.obj.get("metadata") or {}).get("labels") or {}
        return labels.get(QUEUE_LABEL)


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _job_pods(job_spec: Mapping[str, Any]) -> int:
    """kueue pkg/controller/jobs/job/job_controller.go podsCount: parallelism, at most completions."""
    parallelism = _int(job_spec.get("parallelism"), 1)
    completions = job_spec.get("completions")
    return min(parallelism, int(completions)) if completions is not None else parallelism


def _template(obj: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(value, Mapping):
        raise ManifestError(f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}: no {'.'.join(path)}")
    return value  # pyright: ignore[reportUnknownVariableType]


def workload(obj: Mapping[str, Any]) -> Workload:
    kind = str(obj["kind"])
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or meta.get("generateName") or "")
    namespace = meta.get("namespace")
    if not namespace:
        raise ManifestError(f"{kind} {name}: set metadata.namespace (a team's jobs run in its team-<name> namespace)")
    if kind == "Pod":
        sets = [PodSet("the pod", meta, _template(obj, "spec"), 1)]
    elif kind == "Deployment":
        template = _template(obj, "spec", "template")
        replicas = _int((obj.get("spec") or {}).get("replicas"), 1)
        sets = [PodSet("its pods", template.get("metadata") or {}, _template(template, "spec"), replicas)]
    elif kind == "Job":
        template = _template(obj, "spec", "template")
        sets = [PodSet("its pods", template.get("metadata") or {}, _template(template, "spec"), _job_pods(obj["spec"]))]
    else:
        sets = []
        for replicated in _template(obj, "spec").get("replicatedJobs") or []:
            job = _template(replicated, "template", "spec")
            template = _template(job, "template")
            # jobset pkg/controller/jobset_controller.go PodsCountPerReplica times the replicas.
            count = _int(replicated.get("replicas"), 1) * _job_pods(job)
            sets.append(
                PodSet(
                    f"replicated job {replicated.get('name')}", template.get("metadata") or {}, template["spec"], count
                )
            )
    return Workload(kind, name, str(namespace), obj, tuple(sets))


def read_manifests(paths: Sequence[Path]) -> list[Workload]:
    """Every Job, JobSet, Pod and Deployment of the files (other kinds, a PVC beside a job, are skipped)."""
    found: list[Workload] = []
    for path in paths:
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except (OSError, yaml.YAMLError) as error:
            raise ManifestError(f"{path}: {error}") from error
        for document in documents:
            if document is None:
                continue
            if not isinstance(document, Mapping) or "kind" not in document:
                raise ManifestError(f"{path}: a document without `kind`: not a Kubernetes object")
            items = document.get("items") if document["kind"] == "List" else [document]  # pyright: ignore[reportUnknownMemberType]
            for item in items or []:  # pyright: ignore[reportUnknownVariableType]
                if item.get("kind") in CHECKED_KINDS:  # pyright: ignore[reportUnknownMemberType]
                    found.append(workload(item))  # pyright: ignore[reportUnknownArgumentType]
    return found
