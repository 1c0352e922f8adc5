"""The name limits of the systems that read the names our objects carry, and the names a chart derives from its
release name.

- Kubernetes (kubernetes/kubernetes v1.36 staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go):
  a DNS-1123 label is `[a-z0-9]([-a-z0-9]*[a-z0-9])?` of at most 63 (IsDNS1123Label; Namespace, Service and most
  names a pod's hostname or a DNS record is made of), a DNS-1123 subdomain at most 253 (IsDNS1123Subdomain; most
  object names), a label value at most 63 of `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?` (IsValidLabelValue).
- Helm (helm/helm v3.17.0 pkg/chartutil/validate_name.go ValidateReleaseName): a release name matches the subdomain
  pattern and holds at most 53 characters (maxReleaseNameLen: 63 less 10 a chart may append).
- pulumi-kubernetes v4.32.0 provider/pkg/provider/helm_release.go assignNameIfAutonameable: a Release without a
  name is named `<logical name>-` plus 8 random hex characters (resource.NewUniqueHex's default length).
- The `inferencepool` chart of gateway-api-inference-extension v1.5.0 (config/charts/inferencepool/templates and
  config/charts/epplib/templates/_helpers.tpl): the InferencePool is named after the release; every object of the
  picker after `<release, lower-cased, trimmed, truncated to 40>-epp` (Deployment, Service, ConfigMap,
  ServiceAccount, the Istio DestinationRule, Roles and RoleBindings `-sa` and `-non-sa`, `-leader-election` with more
  than one replica); its pods carry the label `inferencepool: <that name>`.
- Labels the API server and controllers add from names (label values, at most 63): a Job's pods get `job-name` and
  `batch.kubernetes.io/job-name` with the Job's name (kubernetes v1.36 pkg/registry/batch/job/strategy.go
  generateSelector); a StatefulSet's pods get `controller-revision-hash: <StatefulSet name>-<hash>`, the hash a
  uint32's decimal digits through rand.SafeEncodeString, at most 10 characters (pkg/controller/history
  controller_history.go ControllerRevisionName, HashControllerRevision; pkg/controller/statefulset). A
  LeaderWorkerSet's leader StatefulSet is named after it, each group's workers after the group's leader pod,
  `<name>-<group index>` (kubernetes-sigs/lws v0.10.0 pkg/controllers/leaderworkerset_controller.go and
  pod_controller.go).
- A Service's name is a DNS-1035 label: it starts with a letter (pkg/apis/core/validation ValidateServiceName,
  apimachinery IsDNS1035Label).
- Grafana: a dashboard uid holds at most 40 characters (grafana pkg/util/shortid_generator.go MaxUIDLength); one uid
  names one dashboard of the instance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tests.upstream.serving import picker_name

DNS_LABEL_MAX, DNS_SUBDOMAIN_MAX, LABEL_VALUE_MAX = 63, 253, 63
HELM_RELEASE_MAX = 53
PULUMI_AUTONAME_SUFFIX = 9  # "-" + 8 hex
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
REVISION_HASH_MAX = 10
GRAFANA_UID_MAX = 40
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
INFERENCE_POOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"


def dns_label_problem(name: str) -> str | None:
    if len(name) > DNS_LABEL_MAX or not DNS_LABEL.match(name):
        return f"{name!r} is not a DNS-1123 label (at most {DNS_LABEL_MAX} of [a-z0-9-], alphanumeric ends)"
    return None


def dns_1035_problem(name: str) -> str | None:
    if len(name) > DNS_LABEL_MAX or not DNS_1035_LABEL.match(name):
        return f"{name!r} is not a DNS-1035 label (at most {DNS_LABEL_MAX} of [a-z0-9-], starting with a letter)"
    return None


def job_pod_labels(job: str) -> dict[str, str]:
    """The labels the API server gives a Job's pods."""
    return {"job-name": job, "batch.kubernetes.io/job-name": job}


def leader_worker_set_revision_labels(name: str, groups: int) -> dict[str, str]:
    """StatefulSet -> the longest `controller-revision-hash` its pods can carry, for a LeaderWorkerSet of `groups`."""
    statefulsets = [name, *(f"{name}-{group}" for group in range(groups))]
    return {sts: f"{sts}-{'x' * REVISION_HASH_MAX}" for sts in statefulsets}


def grafana_uid_problem(uid: str) -> str | None:
    if not uid or len(uid) > GRAFANA_UID_MAX:
        return f"Grafana refuses dashboard uid {uid!r} ({len(uid)} characters; at most {GRAFANA_UID_MAX})"
    return None


def dns_subdomain_problem(name: str) -> str | None:
    if len(name) > DNS_SUBDOMAIN_MAX or not DNS_SUBDOMAIN.match(name):
        return f"{name!r} is not a DNS-1123 subdomain (at most {DNS_SUBDOMAIN_MAX})"
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > LABEL_VALUE_MAX or not LABEL_VALUE.match(value):
        return f"label value {value!r} is not valid (at most {LABEL_VALUE_MAX} of [A-Za-z0-9-_.], alphanumeric ends)"
    return None


def helm_release_problem(name: str) -> str | None:
    if not name or len(name) > HELM_RELEASE_MAX or not DNS_SUBDOMAIN.match(name):
        return f"Helm refuses release name {name!r} ({len(name)} characters; at most {HELM_RELEASE_MAX})"
    return None


def release_name(inputs: Mapping[str, Any], logical_name: str) -> str:
    """The name Helm sees: the one given, else Pulumi's autoname at its longest."""
    given = inputs.get("name")
    return given if isinstance(given, str) and given else f"{logical_name}-{'f' * (PULUMI_AUTONAME_SUFFIX - 1)}"


def inference_pool_chart_objects(release: str, values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of each namespaced object the inferencepool chart renders for `release`."""
    epp = picker_name(release)
    extension = values.get("inferenceExtension") or {}
    objects = [
        ("InferencePool", release),
        ("ConfigMap", epp),
        ("Deployment", epp),
        ("Service", epp),
        ("ServiceAccount", epp),
        ("Role", f"{epp}-sa"),
        ("RoleBinding", f"{epp}-sa"),
        ("Role", f"{epp}-non-sa"),
        ("RoleBinding", f"{epp}-non-sa"),
    ]
    if (values.get("provider") or {}).get("name") == "istio":
        objects.append(("DestinationRule", epp))
    if int(extension.get("replicas", 1)) > 1:
        objects += [("Role", f"{epp}-leader-election"), ("RoleBinding", f"{epp}-leader-election-binding")]
    return objects
