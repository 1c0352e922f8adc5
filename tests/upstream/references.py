"""What a cluster resolves the names in our objects against: every object a stack creates in one cluster, the objects
its charts create (as far as a test models the chart), and those the cluster itself provides.

The references followed, each where the API reads it (kubernetes/kubernetes v1.36 pkg/apis/core/types.go, storage,
scheduling, node; Gateway API v1.5.1 apis/v1/httproute_types.go and shared_types.go ParentReference; InferencePool v1
api/v1/inferencepool_types.go; KEDA v2.20.2 apis/keda/v1alpha1/scaledobject_types.go): the namespace of every namespaced
object, storageClassName of a claim, a pod's serviceAccountName, priorityClassName, runtimeClassName, the Secrets and
ConfigMaps (and their keys) of env, envFrom, volumes and imagePullSecrets, a volume's claimName, an HTTPRoute's
parentRefs (Gateway and sectionName listener) and backendRefs, an InferencePool's targetPorts against the container
ports of the pods it selects, a ScaledObject's scaleTargetRef and each trigger's authenticationRef.

Provided by the cluster, so never created by a stack:
- Kubernetes: the namespaces default, kube-system, kube-public and kube-node-lease; the `default` ServiceAccount of
  every namespace (serviceaccounts controller, pkg/controller/serviceaccount/serviceaccounts_controller.go);
  PriorityClasses `system-cluster-critical` and `system-node-critical` (pkg/apis/scheduling/types.go
  SystemPriorityClasses); the `kube-root-ca.crt` ConfigMap of every namespace
  (pkg/controller/certificates/rootcacertpublisher).
- AKS: the built-in StorageClasses (learn.microsoft.com/azure/aks/concepts-storage "Storage classes", and azure-blob-csi
  "built-in storage classes" with the Blob CSI driver on): default, managed, managed-premium, managed-csi,
  managed-csi-premium, azurefile, azurefile-premium, azurefile-csi, azurefile-csi-premium, azureblob-fuse-premium,
  azureblob-nfs-premium.
- An optional reference (`optional: true`) resolves whether or not its object exists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CLUSTER_PROVIDED: dict[str, set[str]] = {
    "StorageClass": {
        "default",
        "managed",
        "managed-premium",
        "managed-csi",
        "managed-csi-premium",
        "azurefile",
        "azurefile-premium",
        "azurefile-csi",
        "azurefile-csi-premium",
        "azureblob-fuse-premium",
        "azureblob-nfs-premium",
    },
    "PriorityClass": {"system-cluster-critical", "system-node-critical"},
    "Namespace": {"default", "kube-system", "kube-public", "kube-node-lease"},
}
IN_EVERY_NAMESPACE = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}
CLUSTER_SCOPED = {"StorageClass", "PriorityClass", "RuntimeClass", "Namespace", "ClusterRole", "ClusterRoleBinding"}


@dataclass(frozen=True)
class Ref:
    """`source` (kind/namespace/name and where in it) names `kind` `name` in `namespace` ("" when cluster scoped)."""

    source: str
    kind: str
    namespace: str
    name: str
    key: str | None = None
    optional: bool = False


@dataclass
class Cluster:
    """The objects one cluster holds, by (kind, namespace, name), with what a reference may look into."""

    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=lambda: {})

    def add(self, manifest: Mapping[str, Any]) -> None:
        kind = str(manifest.get("kind", ""))
        meta = manifest.get("metadata") or {}
        namespace = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
        self.objects[(kind, namespace, str(meta.get("name", "")))] = dict(manifest)

    def has(self, kind: str, namespace: str, name: str) -> bool:
        if (kind, namespace, name) in self.objects:
            return True
        return name in CLUSTER_PROVIDED.get(kind, set()) or (kind, name) in IN_EVERY_NAMESPACE

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def of_kind(self, kind: str) -> Iterator[dict[str, Any]]:
        return (o for (k, _, _), o in self.objects.items() if k == kind)


def _where(manifest: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = manifest.get("metadata") or {}
    kind = str(manifest.get("kind", ""))
    return kind, "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default"), str(meta.get("name", ""))


def pod_specs(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(path, pod spec, its template's labels) of every pod template or pod inside an object."""
    if isinstance(node, dict):
        spec = node.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
            yield path or "spec", spec, dict((node.get("metadata") or {}).get("labels") or {})
        for key, value in node.items():
            if key != "metadata":
                yield from pod_specs(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from pod_specs(value, f"{path}[{i}]")


def _pod_refs(source: str, namespace: str, spec: Mapping[str, Any]) -> Iterator[Ref]:
    if spec.get("serviceAccountName"):
        yield Ref(f"{source}.serviceAccountName", "ServiceAccount", namespace, spec["serviceAccountName"])
    if spec.get("priorityClassName"):
        yield Ref(f"{source}.priorityClassName", "PriorityClass", "", spec["priorityClassName"])
    if spec.get("runtimeClassName"):
        yield Ref(f"{source}.runtimeClassName", "RuntimeClass", "", spec["runtimeClassName"])
    for pull in spec.get("imagePullSecrets") or []:
        yield Ref(f"{source}.imagePullSecrets", "Secret", namespace, pull["name"])
    for volume in spec.get("volumes") or []:
        at = f"{source}.volumes[{volume.get('name')}]"
        if "persistentVolumeClaim" in volume:
            yield Ref(at, "PersistentVolumeClaim", namespace, volume["persistentVolumeClaim"]["claimName"])
        sources = [volume, *((volume.get("projected") or {}).get("sources") or [])]
        for entry in sources:
            for kind, block, name_key in (("Secret", "secret", "secretName"), ("ConfigMap", "configMap", "name")):
                ref = entry.get(block)
                if not isinstance(ref, dict):
                    continue
                name = str(ref.get(name_key) or ref.get("name") or "")
                optional = bool(ref.get("optional"))
                yield Ref(at, kind, namespace, name, optional=optional)
                for item in ref.get("items") or []:
                    yield Ref(at, kind, namespace, name, item["key"], optional)
    for container in [*(spec.get("initContainers") or []), *spec.get("containers", [])]:
        at = f"{source}.containers[{container.get('name')}]"
        for env in container.get("env") or []:
            value_from = env.get("valueFrom") or {}
            for kind, block in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                ref = value_from.get(block)
                if ref:
                    yield Ref(
                        f"{at}.env[{env['name']}]", kind, namespace, ref["name"], ref["key"], bool(ref.get("optional"))
                    )
        for env_from in container.get("envFrom") or []:
            for kind, block in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                ref = env_from.get(block)
                if ref:
                    yield Ref(f"{at}.envFrom", kind, namespace, ref["name"], optional=bool(ref.get("optional")))


def references(manifest: Mapping[str, Any]) -> Iterator[Ref]:
    """Every name `manifest` refers to."""
    kind, namespace, name = _where(manifest)
    source = f"{kind} {namespace}/{name}".replace(" /", " ")
    spec = manifest.get("spec") or {}
    if namespace:
        yield Ref(f"{source}.metadata.namespace", "Namespace", "", namespace)
    if kind == "PersistentVolumeClaim" and spec.get("storageClassName"):
        yield Ref(f"{source}.spec.storageClassName", "StorageClass", "", spec["storageClassName"])
    for path, pod, _ in pod_specs(manifest):
        yield from _pod_refs(f"{source}.{path}", namespace, pod)
    if kind == "HTTPRoute":
        for parent in spec.get("parentRefs") or []:
            if parent.get("kind", "Gateway") == "Gateway":
                yield Ref(
                    f"{source}.spec.parentRefs",
                    "Gateway",
                    parent.get("namespace", namespace),
                    parent["name"],
                    parent.get("sectionName"),
                )
        for rule in spec.get("rules") or []:
            for backend in rule.get("backendRefs") or []:
                target = backend.get("kind", "Service")
                yield Ref(
                    f"{source}.spec.rules.backendRefs", target, backend.get("namespace", namespace), backend["name"]
                )
    if kind == "ScaledObject":
        target = spec.get("scaleTargetRef") or {}
        yield Ref(f"{source}.spec.scaleTargetRef", target.get("kind", "Deployment"), namespace, target.get("name", ""))
        for trigger in spec.get("triggers") or []:
            auth = trigger.get("authenticationRef")
            if auth:
                yield Ref(
                    f"{source}.spec.triggers[{trigger.get('name')}]",
                    auth.get("kind", "TriggerAuthentication"),
                    "" if auth.get("kind") == "ClusterTriggerAuthentication" else namespace,
                    auth["name"],
                )


def _keys(manifest: Mapping[str, Any]) -> set[str]:
    return {*(manifest.get("data") or {}), *(manifest.get("stringData") or {}), *(manifest.get("binaryData") or {})}


def _listeners(gateway: Mapping[str, Any]) -> set[str]:
    return {listener["name"] for listener in (gateway.get("spec") or {}).get("listeners") or []}


def dangling(cluster: Cluster, refs: Sequence[Ref]) -> list[str]:
    """Each reference the cluster does not resolve, with what it names."""
    problems: list[str] = []
    for ref in refs:
        if ref.optional:
            continue
        where = f"{ref.namespace}/" if ref.namespace else ""
        if not cluster.has(ref.kind, ref.namespace, ref.name):
            problems.append(f"{ref.source} names {ref.kind} {where}{ref.name}, which nothing creates")
            continue
        target = cluster.get(ref.kind, ref.namespace, ref.name)
        if target is None or ref.key is None:
            continue
        if ref.kind == "Gateway" and ref.key not in _listeners(target):
            problems.append(f"{ref.source} names listener {ref.key} of Gateway {where}{ref.name}: not one of it")
        if ref.kind in ("Secret", "ConfigMap") and ref.key not in _keys(target):
            problems.append(f"{ref.source} reads key {ref.key} of {ref.kind} {where}{ref.name}: not in it")
    return problems


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def pool_port_problems(cluster: Cluster) -> list[str]:
    """An InferencePool whose pods serve none of its targetPorts routes every request to a closed port, and one
    that selects no pod routes nowhere."""
    problems: list[str] = []
    pods = [
        (namespace, labels, pod)
        for (kind, namespace, _), manifest in cluster.objects.items()
        if kind != "InferencePool"
        for _, pod, labels in pod_specs(manifest)
    ]
    for pool in cluster.of_kind("InferencePool"):
        _, namespace, name = _where(pool)
        selector = pool["spec"]["selector"]["matchLabels"]
        wanted = {p["number"] for p in pool["spec"]["targetPorts"]}
        selected = [pod for ns, labels, pod in pods if ns == namespace and _selects(selector, labels)]
        if not selected:
            problems.append(f"InferencePool {namespace}/{name} selects no pod the stack creates ({selector})")
        for pod in selected:
            ports = {p.get("containerPort") for c in pod["containers"] for p in c.get("ports") or []}
            if not wanted & ports:
                problems.append(
                    f"InferencePool {namespace}/{name} targets ports {sorted(wanted)}, its pods serve {sorted(ports)}"
                )
    return problems
