"""Write rendered Kubernetes objects and Helm values to disk and validate them against upstream schemas."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object

from .mock_values import MockValueMarker


@dataclass
class ObjectVerdict:
    path: Path
    kind: str
    name: str
    status: str  # "valid", "invalid", "custom-resource"
    detail: str = ""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-").lower()


def _dump(document: Any) -> str:
    return yaml.safe_dump(document, sort_keys=True)


def render_and_validate(
    recording: Recording, out_dir: Path, version: str, marker: MockValueMarker | None = None
) -> list[ObjectVerdict]:
    """Every plain Kubernetes object as YAML under out_dir/k8s, Helm values under out_dir/helm.

    Files come out the same on every run: objects in URN order, keys sorted, and values only the
    mocks know written as `<computed: origin>` (the schema check sees the object as the program built it).
    """
    marker = marker or MockValueMarker(recording.mock_values)
    k8s_dir = out_dir / "k8s"
    helm_dir = out_dir / "helm"
    for folder in (k8s_dir, helm_dir):
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.yaml"):
            stale.unlink()
    verdicts: list[ObjectVerdict] = []
    for resource in sorted(recording.kubernetes_objects(), key=lambda r: r.urn):
        manifest = kubernetes_object(resource)
        kind = str(manifest.get("kind", resource.type.rsplit(":", 1)[-1]))
        meta = manifest.get("metadata") or {}
        name = str(meta.get("name", resource.name))
        namespace = str(meta.get("namespace", "cluster"))
        path = k8s_dir / f"{_slug(kind)}-{_slug(namespace)}-{_slug(name)}.yaml"
        path.write_text(_dump(marker.value(manifest)))
        status, detail = validate_object(manifest, version)
        verdicts.append(ObjectVerdict(path, kind, name, status, detail))
    verdicts.sort(key=lambda v: v.path.name)
    for release in sorted(recording.of_type("kubernetes:helm.sh/v3:Release"), key=lambda r: r.urn):
        path = helm_dir / f"{_slug(release.name)}-values.yaml"
        header = {k: release.inputs.get(k) for k in ("chart", "version", "namespace")}
        header["repository"] = (release.inputs.get("repositoryOpts") or {}).get("repo")
        path.write_text(_dump(marker.value({"release": header, "values": release.inputs.get("values", {})})))
    return verdicts
