"""Every name a stack generates fits every system that reads it (tests/upstream/names.py for Kubernetes, Helm, Pulumi's
autonaming and the inferencepool chart; AZURE_LIMITS below for the Azure resources we name), and no two objects of
one kind in one namespace of one cluster share a name once a chart has truncated it."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.harness.contract_stacks import CONTRACT_STACKS, contract_recording
from tests.upstream.names import (
    INFERENCE_POOL_CHART,
    dns_1035_problem,
    dns_label_problem,
    dns_subdomain_problem,
    grafana_uid_problem,
    helm_release_problem,
    inference_pool_chart_objects,
    job_pod_labels,
    label_value_problem,
    leader_worker_set_revision_labels,
    release_name,
)
from tests.upstream.references import CLUSTER_SCOPED, pod_specs
from tests.upstream.scheduling import RELEASE
from tests.upstream.serving import picker_name

# Azure's naming rules for the resources we name (learn.microsoft.com/azure/azure-resource-manager/management/
# resource-name-rules; AKS node pools: learn.microsoft.com/azure/aks/create-node-pools "Linux node pool names",
# 1-12 lowercase alphanumerics starting with a letter; action group short names: azure-monitor/alerts/
# action-groups, at most 12). (type, name input) -> (pattern with its length).
AZURE_LIMITS: dict[tuple[str, str], str] = {
    ("azure-native:containerservice:ManagedCluster", "resourceName"): r"[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?",
    ("azure-native:containerservice:AgentPool", "agentPoolName"): r"[a-z][a-z0-9]{0,11}",
    ("azure-native:managedidentity:UserAssignedIdentity", "resourceName"): r"[A-Za-z0-9][A-Za-z0-9_-]{2,127}",
    ("azure-native:managedidentity:FederatedIdentityCredential", "federatedIdentityCredentialResourceName"): (
        r"[A-Za-z0-9][A-Za-z0-9_-]{2,119}"
    ),
    ("azure-native:storage:StorageAccount", "accountName"): r"[a-z0-9]{3,24}",
    ("azure-native:storage:BlobContainer", "containerName"): r"(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]",
    ("azure-native:containerregistry:Registry", "registryName"): r"[A-Za-z0-9]{5,50}",
    ("azure-native:network:VirtualNetwork", "virtualNetworkName"): r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}[A-Za-z0-9_]",
    ("azure-native:network:Subnet", "subnetName"): r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?",
    ("azure-native:operationalinsights:Workspace", "workspaceName"): r"[A-Za-z0-9][A-Za-z0-9-]{2,61}[A-Za-z0-9]",
    ("azure-native:dashboard:Grafana", "workspaceName"): r"[A-Za-z0-9][A-Za-z0-9-]{0,21}[A-Za-z0-9]",
    ("azure-native:monitor:ActionGroup", "groupShortName"): r".{1,12}",
    ("azure-native:authorization:PolicyAssignment", "policyAssignmentName"): r"[^<>*%&:\\?.+/]{1,64}",
}
# Kinds whose names Kubernetes validates as DNS labels (pkg/apis/core/validation ValidateNamespaceName; a Service's,
# ValidateServiceName, is a DNS-1035 label, checked apart) and kinds whose names are path segments (rbac).
LABEL_NAMED = {"Namespace"}
DASHBOARD = "grafana:oss/dashboard:Dashboard"
PATH_SEGMENT_NAMED = {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def _labels(manifest: Mapping[str, Any], groups: int = 1) -> Iterator[tuple[str, str]]:
    """(where, value) of every label value and label selector value in an object, with those Kubernetes adds from
    its name; `groups`: the most replicas a LeaderWorkerSet may be scaled to."""
    meta = manifest.get("metadata") or {}
    for key, value in (meta.get("labels") or {}).items():
        yield f"metadata.labels[{key}]", str(value)
    for path, _, labels in pod_specs(manifest):
        for key, value in labels.items():
            yield f"{path}.labels[{key}]", str(value)
    selector = (manifest.get("spec") or {}).get("selector") or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        yield f"spec.selector[{key}]", str(value)
    name = str(meta.get("name", ""))
    if manifest.get("kind") == "Job":
        for key, value in job_pod_labels(name).items():
            yield f"its pods' labels[{key}] (added by the API server)", value
    if manifest.get("kind") == "LeaderWorkerSet":
        groups = max(groups, int((manifest.get("spec") or {}).get("replicas") or 1))
        for sts, value in leader_worker_set_revision_labels(name, groups).items():
            yield f"StatefulSet {sts}'s pods' labels[controller-revision-hash]", value


def _scaled_maxima(recording: Recording) -> dict[tuple[str, str, str], int]:
    """(namespace, kind, name) -> the most replicas a ScaledObject may give it."""
    found: dict[tuple[str, str, str], int] = {}
    for manifest in map(kubernetes_object, recording.kubernetes_objects()):
        if manifest.get("kind") == "ScaledObject":
            target = manifest["spec"]["scaleTargetRef"]
            key = (str(manifest["metadata"].get("namespace")), str(target.get("kind")), str(target["name"]))
            found[key] = int(manifest["spec"].get("maxReplicaCount", 100))
    return found


def _objects(recording: Recording) -> list[tuple[str, dict[str, Any]]]:
    """(cluster, manifest) of every object the stack creates, with those the inferencepool chart renders."""
    found = [(r.provider, kubernetes_object(r)) for r in recording.kubernetes_objects()]
    for release in recording.of_type(RELEASE):
        if release.inputs.get("chart") != INFERENCE_POOL_CHART:
            continue
        name, namespace = release_name(release.inputs, release.name), str(release.inputs.get("namespace"))
        values = release.inputs.get("values") or {}
        for kind, object_name in inference_pool_chart_objects(name, values):
            labels = {"inferencepool": picker_name(name)} if kind == "Deployment" else {}
            meta = {"name": object_name, "namespace": namespace, "labels": labels}
            found.append((release.provider, {"kind": kind, "metadata": meta}))
    return found


def name_problems(recording: Recording) -> list[str]:
    problems: list[str] = []
    seen: Counter[tuple[str, str, str, str]] = Counter()
    maxima = _scaled_maxima(recording)
    for cluster, manifest in _objects(recording):
        kind, meta = str(manifest.get("kind")), manifest.get("metadata") or {}
        name = str(meta.get("name", ""))
        namespace = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
        seen[(cluster, kind, namespace, name)] += 1
        where = f"{kind} {namespace}/{name}"
        if kind == "Service":
            problem = dns_1035_problem(name)
        elif kind in LABEL_NAMED:
            problem = dns_label_problem(name)
        else:
            problem = None if kind in PATH_SEGMENT_NAMED else dns_subdomain_problem(name)
        if problem:
            problems.append(f"{where}: {problem}")
        # Container names are DNS labels (kubernetes v1.36 pkg/apis/core/validation/validation.go
        # validateContainerCommon): a model's staging Job names one after each adapter.
        for at, spec, _ in pod_specs(manifest):
            for key in ("initContainers", "containers"):
                for container in spec.get(key) or []:
                    if problem := dns_label_problem(str(container.get("name", ""))):
                        problems.append(f"{where} {at}.{key}: {problem}")
        groups = maxima.get((namespace, kind, name), 1)
        labels = _labels(manifest, groups)
        problems += [f"{where} {at}: {p}" for at, value in labels if (p := label_value_problem(value))]
    problems += [
        f"{kind} {namespace}/{name} is created {count} times in one cluster (after the chart's truncation)"
        for (_, kind, namespace, name), count in seen.items()
        if count > 1
    ]
    for release in recording.of_type(RELEASE):
        if problem := helm_release_problem(release_name(release.inputs, release.name)):
            problems.append(f"Release {release.name}: {problem}")
    uids: Counter[tuple[str, str]] = Counter()
    for dashboard in recording.of_type(DASHBOARD):
        uid = str(json.loads(str(dashboard.inputs["configJson"])).get("uid", ""))
        uids[(dashboard.provider, uid)] += 1
        if problem := grafana_uid_problem(uid):
            problems.append(f"Dashboard {dashboard.name}: {problem}")
    problems += [f"dashboard uid {uid!r} names {count} dashboards" for (_, uid), count in uids.items() if count > 1]
    for resource in recording.resources:
        for (type_token, key), pattern in AZURE_LIMITS.items():
            value = resource.inputs.get(key)
            if resource.type == type_token and isinstance(value, str) and not re.fullmatch(pattern, value):
                problems.append(f"{type_token} {resource.name}: {key} {value!r} breaks Azure's rule {pattern}")
    return problems


@pytest.mark.parametrize("stack", CONTRACT_STACKS)
def test_every_generated_name_fits_every_system_that_reads_it(stack: str) -> None:
    assert name_problems(contract_recording(stack)) == []


def _planted(change: Any) -> list[str]:
    planted = copy.deepcopy(contract_recording("dev"))
    change(planted)
    return name_problems(planted)


def _long_namespace(recording: Recording) -> None:
    (namespace, *_) = [r for r in recording.kubernetes_objects() if r.inputs.get("kind") == "Namespace"]
    namespace.inputs["metadata"]["name"] = "n" * 64


def _long_label(recording: Recording) -> None:
    (claim, *_) = [r for r in recording.kubernetes_objects() if r.inputs.get("kind") == "PersistentVolumeClaim"]
    claim.inputs["metadata"]["labels"]["app.kubernetes.io/instance"] = "m" * 64


def _long_release(recording: Recording) -> None:
    (release, *_) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == INFERENCE_POOL_CHART]
    release.inputs["name"] = "r" * 54


def _twin_picker(recording: Recording) -> None:
    (release, *_) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == INFERENCE_POOL_CHART]
    twin = copy.deepcopy(release)
    release.inputs["name"] = "p" * 40 + "-one"
    twin.inputs["name"] = "p" * 40 + "-two"
    recording.resources.append(twin)


def _long_pool(recording: Recording) -> None:
    (pool, *_) = recording.of_type("azure-native:containerservice:AgentPool")
    pool.inputs["agentPoolName"] = "gpua100feb123"


def _kind(recording: Recording, kind: str) -> list[Any]:
    return [r for r in recording.kubernetes_objects() if r.inputs.get("kind") == kind]


def _long_job(recording: Recording) -> None:
    (job, *_) = [j for j in _kind(recording, "Job") if j.inputs["metadata"]["name"].startswith("weights-stage-")]
    job.inputs["metadata"]["name"] = "weights-stage-" + "j" * 50


def _long_group(recording: Recording) -> None:
    (deployment, *_) = [d for d in _kind(recording, "Deployment") if d.inputs["metadata"]["namespace"] == "models"]
    group = copy.deepcopy(deployment)
    group.inputs["kind"] = "LeaderWorkerSet"
    group.inputs["metadata"]["name"] = "g" * 52
    group.inputs["spec"] = {"replicas": 1}
    recording.resources.append(group)


def _long_container(recording: Recording) -> None:
    (job, *_) = [j for j in _kind(recording, "Job") if j.inputs["metadata"]["name"].startswith("weights-stage-")]
    (download,) = job.inputs["spec"]["template"]["spec"]["containers"]
    job.inputs["spec"]["template"]["spec"]["initContainers"] = [{**download, "name": "adapter-" + "c" * 56}]


def _digit_service(recording: Recording) -> None:
    (release, *_) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == INFERENCE_POOL_CHART]
    release.inputs["name"] = "7b-chat"


def _twin_dashboard(recording: Recording) -> None:
    (dashboard, *_) = recording.of_type(DASHBOARD)
    twin = copy.deepcopy(dashboard)
    twin.name += "-twin"
    recording.resources.append(twin)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_long_namespace, "n" * 64),
        (_long_label, "m" * 64),
        (_long_release, "r" * 54),
        (_twin_picker, "p" * 40 + "-epp"),
        (_long_pool, "gpua100feb123"),
        (_long_job, "weights-stage-" + "j" * 50),
        (_long_group, "g" * 52 + "-0-"),
        (_long_container, "adapter-" + "c" * 56),
        (_digit_service, "'7b-chat-epp' is not a DNS-1035 label"),
        (_twin_dashboard, "names 2 dashboards"),
    ],
)
def test_a_planted_name_past_a_limit_is_caught(change: Any, named: str) -> None:
    problems = _planted(change)
    assert problems and all(named in p for p in problems), problems
