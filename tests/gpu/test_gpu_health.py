"""GPU health, detected and acted on: the alert group fires on the series the cluster really stores, and NVSentinel
(with cert-manager) is installed so that its pods fit the nodes they target and its values reach the components
that read them.

Facts spelled out here, not imported from the code under test:
- NPD's GPU condition types (MicrosoftDocs/azure-aks-docs node-problem-detector.md and aks-managed-gpu-nodes.md,
  snapshot 2026-08-21).
- kube-state-metrics node series `kube_node_status_condition{node,condition,status}`, `kube_node_spec_taint{node,key}`,
  and the cordon taint node.kubernetes.io/unschedulable (tests/upstream/gpu_metrics_world.py `node_state_series`).
- NVSentinel at lalitadithya/NVSentinel@e002c5dc (v1.19.0): fault-quarantine's default rule set for
  kubernetes-object-monitor is `event.agent == 'kubernetes-object-monitor' && event.isFatal == true`
  (charts/fault-quarantine/values.yaml); the labeler marks `driver.installed=true` on nodes labelled
  `nvidia.com/gpu.present=true` when run with --assume-driver-installed (labeler/pkg/labeler/labeler.go
  getDriverLabelForNode); fault-quarantine and node-drainer read `global.dryRun` (templates/deployment.yaml).
- dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv names every field the exporter knows how to collect
  (enabled or commented out).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.components.monitoring import metrics_labels
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.gpu.scheduling import cpu_node_selector
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, settings_of
from tests.upstream.gpu_metrics_world import build_world, node_state_series
from tests.upstream.promql import Evaluator, matches, selectors
from tests.upstream.scheduling import node_templates, scheduling_check
from tests.upstream.scrape import Series
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
CLUSTER = "azure-native:containerservice:ManagedCluster"
NPD_FATAL = {
    "GPUMissing",
    "XIDErrors",
    "NVLinkStatusInactive",
    "IBLinkFlapping",
    "UnhealthyNvidiaDevicePlugin",
    "UnhealthyNvidiaDCGMServices",
}
NPD_WARNING = {"GPUClockThrottling"}
# NVIDIA/dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv: the health fields it can collect.
EXPORTER_HEALTH_FIELDS = {
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}


def _health_rules(recording: Recording) -> list[dict[str, Any]]:
    rules = recording.one(RULE_GROUP, "gpu-health").inputs["rules"]
    assert rules, "the GPU health group holds rules"
    return rules


def test_prod_plan_has_the_health_alert_group_notifying_the_gpu_action_group(prod_recording: Recording) -> None:
    group = prod_recording.one(RULE_GROUP, "gpu-health").inputs
    workspace = prod_recording.one("azure-native:monitor:AzureMonitorWorkspace").outputs["id"]
    cluster = prod_recording.one(CLUSTER).outputs
    assert group["scopes"] == [workspace, cluster["id"]], "evaluated against our workspace, for our cluster"
    assert group["clusterName"] == cluster["name"]
    action_group = prod_recording.one("azure-native:monitor:ActionGroup").outputs["id"]
    for rule in group["rules"]:
        assert rule["actions"] == [{"actionGroupId": action_group}], f"{rule['alert']} must reach on-call"
        assert rule["enabled"] is True
    expressions = " ".join(r["expression"] for r in group["rules"])
    for condition in NPD_FATAL | NPD_WARNING:
        assert re.search(rf"condition=~\"[^\"]*\b{condition}\b", expressions), f"no alert watches {condition}"


@pytest.fixture(scope="module")
def health_world(prod_recording: Recording) -> tuple[list[Series], list[str], str]:
    """prod's DCGM series plus node state: one GPU node missing a GPU, one throttling, one cordoned; a cordoned CPU
    node that the GPU cordon alert must ignore."""
    world = build_world(prod_recording)
    nodes = world.gpu_nodes
    cpu = "aks-cpu-12345678-vmss000000"
    faults = {nodes[0]: "GPUMissing", nodes[1]: "GPUClockThrottling"}
    series = [
        *world.series,
        *node_state_series(prod_recording, [*nodes, cpu], sorted(NPD_FATAL | NPD_WARNING), faults, [nodes[2], cpu]),
        Series(
            {"cluster": prod_recording.one(CLUSTER).outputs["name"], "__name__": "kube_node_labels", "node": cpu}
            | {"label_pool": "cpu", "job": "kube-state-metrics"},
            1.0,
        ),
    ]
    return series, nodes, cpu


def _crossing(fired: list[Series]) -> list[Series]:
    """The model keeps every series through `== 1`; Prometheus keeps those whose value is 1."""
    return [s for s in fired if s.value == 1.0]


def test_every_health_alert_fires_with_the_labels_its_description_names(
    prod_recording: Recording, health_world: tuple[list[Series], list[str], str]
) -> None:
    series, _, _ = health_world
    for rule in _health_rules(prod_recording):
        evaluator = Evaluator(series)
        fired = evaluator.vector(rule["expression"])
        for selector in selectors(rule["expression"]):
            wanted = [*selector.matchers, *([("__name__", "=", selector.metric)] if selector.metric else [])]
            assert any(matches(s.labels, wanted) for s in series), f"{rule['alert']}: {selector.metric} never exists"
        assert evaluator.problems == [], f"{rule['alert']} groups or matches on labels the series lack"
        assert fired, f"{rule['alert']} can never fire on the series the cluster stores"
        for label in re.findall(r"\$labels\.(\w+)", rule["annotations"]["description"]):
            assert all(s.labels.get(label) for s in fired), f"{rule['alert']}: $labels.{label} would render empty"


def test_condition_alerts_name_exactly_the_faulty_node_and_condition(
    prod_recording: Recording, health_world: tuple[list[Series], list[str], str]
) -> None:
    series, nodes, cpu = health_world
    rules = {r["alert"]: r for r in _health_rules(prod_recording)}
    fault = _crossing(Evaluator(series).vector(rules["GpuNodeFaultCondition"]["expression"]))
    assert {(s.labels["node"], s.labels["condition"]) for s in fault} == {(nodes[0], "GPUMissing")}, (
        "the page must name the broken node and what NPD found, and no healthy node"
    )
    throttled = _crossing(Evaluator(series).vector(rules["GpuNodeClockThrottling"]["expression"]))
    assert {(s.labels["node"], s.labels["condition"]) for s in throttled} == {(nodes[1], "GPUClockThrottling")}
    cordoned = Evaluator(series).vector(rules["GpuNodeCordoned"]["expression"])
    assert {s.labels["node"] for s in cordoned} == {nodes[2]}, "a cordoned CPU node is not a GPU health problem"
    assert cpu not in {s.labels["node"] for s in fault + throttled}


def test_dcgm_health_alerts_read_counters_our_exporter_collects(prod_recording: Recording) -> None:
    counters = prod_recording.one("kubernetes:core/v1:ConfigMap", "dcgm-counters").inputs["data"]
    collected = {line.split(",")[0] for line in next(iter(counters.values())).splitlines()}
    used = {m for rule in _health_rules(prod_recording) for m in re.findall(r"DCGM_FI_\w+", rule["expression"])}
    assert used, "the health group reads DCGM counters"
    assert used <= collected, f"alerts on {used - collected} would never fire: add them to the exporter's counters"
    assert used <= EXPORTER_HEALTH_FIELDS, f"{used - EXPORTER_HEALTH_FIELDS} are not fields dcgm-exporter 4.8.2 knows"
    assert metrics_labels.NODE == "Hostname", "the health alerts name the node by the exporter's Hostname label"


def test_remediation_release_is_pinned_and_installed_after_cert_manager(prod_recording: Recording) -> None:
    releases = {r.inputs["chart"]: r for r in prod_recording.of_type(RELEASE)}
    nvsentinel, cert_manager = releases["oci://ghcr.io/nvidia/nvsentinel"], releases["cert-manager"]
    assert nvsentinel.inputs["version"] == "v1.19.0" and cert_manager.inputs["version"] == "v1.21.1"
    assert cert_manager.inputs["repositoryOpts"]["repo"] == "https://charts.jetstack.io"
    assert cert_manager.inputs["values"]["crds"]["enabled"] is True, "NVSentinel's Certificates need the CRDs"
    assert cert_manager.urn in nvsentinel.depends_on, "Certificates and Issuers before cert-manager fail the install"
    # mongodb-store's values hard-code the namespace `nvsentinel` in the MongoDB exporter's URI.
    assert nvsentinel.inputs["namespace"] == "nvsentinel"
    (namespace,) = [n for n in prod_recording.of_type(NAMESPACE) if n.inputs["metadata"]["name"] == "nvsentinel"]
    assert namespace.urn in nvsentinel.depends_on
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged", (
        "the syslog monitor mounts the host journal and the metadata collector runs on the host network"
    )
    assert nvsentinel.inputs["values"]["podMonitor"]["enabled"] is False, "monitoring.coreos.com has no CRD on AKS"
    assert nvsentinel.deleted_with == prod_recording.one(CLUSTER).urn


def _values(recording: Recording) -> dict[str, Any]:
    return recording.one(RELEASE, "nvsentinel").inputs["values"]


def test_dry_run_switch_reaches_quarantine_and_drain(
    prod_recording: Recording, stack_config: Callable[[str], dict[str, Any]]
) -> None:
    assert _values(prod_recording)["global"]["dryRun"] is False, "prod acts on faults"
    config = stack_config("prod")
    config[PREFIX + "gpuHealth"]["remediation"]["dryRun"] = True
    values = _values(run_stack("prod", config))
    assert values["global"]["dryRun"] is True, "global.dryRun is what fault-quarantine and node-drainer read"
    assert values["global"]["faultQuarantine"]["enabled"] and values["global"]["nodeDrainer"]["enabled"], (
        "dry run still runs both, logging what they would cordon and drain"
    )


def test_each_configured_condition_becomes_a_fatal_event_that_cordons(prod_recording: Recording) -> None:
    values = _values(prod_recording)
    policies = values["kubernetes-object-monitor"]["policies"]
    configured = set(
        load_platform_config(settings_of(load_stack_file("prod", REPO_ROOT))).gpu_health.remediation.conditions
    )
    assert configured >= NPD_FATAL, "by default every fatal NPD condition drains the node"
    seen: set[str] = set()
    for policy in policies:
        (condition,) = re.findall(r'c\.type == "(\w+)"', policy["predicate"]["expression"])
        assert 'c.status == "True"' in policy["predicate"]["expression"], "only a True condition is a fault"
        assert policy["resource"] == {"group": "", "version": "v1", "kind": "Node"}
        # fault-quarantine's rule set for this monitor matches fatal events only.
        assert policy["healthEvent"]["isFatal"] is True, f"{condition} would be logged but never cordon"
        seen.add(condition)
    assert seen == configured, "one policy per configured condition, none other (NotReady is AKS auto-repair's)"
    assert not seen & NPD_WARNING, "throttling slows a node without breaking it: alert, never drain"
    drain = values["node-drainer"]
    assert drain["userNamespaces"] == [{"name": "*", "mode": "DeleteAfterTimeout"}]
    assert drain["deleteAfterTimeoutMinutes"] == 120, "prod gives training jobs the upgrade drain's time to checkpoint"
    assert re.fullmatch(drain["systemNamespaces"], "gpu-monitoring"), "node agents are never drained"


def test_the_labeler_will_mark_every_gpu_node_for_the_node_agents(prod_recording: Recording) -> None:
    """The agents' nodeSelectors name labels the labeler writes; the check leaves them out, this proves they come."""
    values = _values(prod_recording)
    assert values["labeler"]["assumeDriverInstalled"] is True, "AKS installs the driver: there is no driver pod"
    nodes = node_templates(prod_recording)
    gpu = [n for n in nodes if n.gpu]
    assert gpu
    for node in gpu:
        # labeler.go getDriverLabelForNode: assumeDriverInstalled && nvidia.com/gpu.present == "true" -> "true".
        assert node.labels.get("nvidia.com/gpu.present") == "true", f"{node.pool}: no driver.installed, no monitor"
    for node in nodes:
        if not node.gpu:
            assert "nvidia.com/gpu.present" not in node.labels, "GPU agents must stay off CPU and system nodes"
    key, value = values["fault-quarantine"]["gpuNodeLabel"].split("=")
    assert all(n.labels.get(key) == value for n in gpu), "the circuit breaker must count every GPU node"
    assert not any(n.labels.get(key) == value for n in nodes if not n.gpu)


def test_every_remediation_pod_fits_the_nodes_it_targets(prod_recording: Recording) -> None:
    check = scheduling_check(prod_recording, ["h100z1", "h100z2", "h100z3"])
    sources = " ".join(p.source for p in check.pods)
    for pod in (
        "platform-connectors DaemonSet",
        "syslog-health-monitor DaemonSet",
        "metadata-collector DaemonSet",
        "fault-quarantine Deployment",
        "node-drainer Deployment",
        "kubernetes-object-monitor Deployment",
        "mongodb StatefulSet",
        "cert-manager: webhook Deployment",
    ):
        assert pod in sources, f"the check must see the {pod}"
    assert "gpu-health-monitor" not in sources, "no DCGM host engine to watch in devicePlugin mode"
    assert not check.problems(), "\n".join(check.problems())


def test_gpu_operator_mode_watches_its_dcgm_and_finds_drivers_itself(prod_recording: Recording) -> None:
    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    config[PREFIX + "gpuStack"] = {"mode": "gpuOperator", "operatorDcgm": True, "smokeTest": True}
    recording = run_stack("prod", config)
    values = _values(recording)
    assert values["global"]["gpuHealthMonitor"]["enabled"] is True, "the operator's DCGM service is the source"
    assert values["labeler"]["assumeDriverInstalled"] is False, "the operator's driver pods mark ready nodes"
    check = scheduling_check(recording, ["h100z1", "h100z2", "h100z3"])
    assert "gpu-health-monitor DaemonSet" in " ".join(p.source for p in check.pods)
    assert not check.problems(), "\n".join(check.problems())


def test_remediation_off_installs_nothing_but_alerts_stay(dev_recording: Recording) -> None:
    charts = {r.inputs["chart"] for r in dev_recording.of_type(RELEASE)}
    assert not charts & {"cert-manager", "oci://ghcr.io/nvidia/nvsentinel"}
    assert not any("nvidia.com/gpu.present" in n.labels for n in node_templates(dev_recording)), (
        "pool labels change only when remediation needs them"
    )
    assert _health_rules(dev_recording), "detection does not depend on remediation"


def test_the_alert_group_can_be_switched_off(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = stack_config("dev")
    config[PREFIX + "gpuHealth"] = {"alerts": {"enabled": False}}
    groups = [g.name for g in run_stack("dev", config).of_type(RULE_GROUP)]
    assert groups and not [g for g in groups if "gpu-health" in g]


@pytest.mark.parametrize(
    ("condition", "hint"),
    [("GPUClockThrottling", "alerts, never drains"), ("GpuMelted", "fatal NPD GPU conditions")],
)
def test_remediation_conditions_are_checked(condition: str, hint: str) -> None:
    settings = settings_of(load_stack_file("prod", REPO_ROOT))
    settings["gpuHealth"]["remediation"]["conditions"] = [condition]
    assert_rejected(settings, "only fatal NPD conditions drain", "gpuHealth.remediation.conditions[0]", hint)


def test_the_drain_leaves_every_platform_namespace_alone_and_drains_team_work() -> None:
    """A drain must not evict the platform's own controllers, agents and validation Jobs (they are what replaces and
    checks the node), yet must evict training work. Platform namespaces are read from the plan: every release's
    namespace and every Job the platform runs outside team namespaces."""
    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    config[PREFIX + "gpuPools"][0]["validation"] = {"dcgmDiag": True}
    recording = run_stack("prod", config)
    pattern = _values(recording)["node-drainer"]["systemNamespaces"]
    teams = {
        r.inputs["metadata"]["name"]
        for r in recording.of_type(NAMESPACE)
        if "kueue.x-k8s.io/managed-namespace" in (r.inputs["metadata"].get("labels") or {})
    }
    # NVSentinel drains GPU nodes: a Job held to the CPU pool (a team's directory Job) is never on one.
    jobs = {
        r.inputs["metadata"]["namespace"]
        for r in recording.kubernetes_objects()
        if r.type.endswith(":Job")
        and (r.inputs["spec"]["template"]["spec"].get("nodeSelector") or {}) != cpu_node_selector()
    }
    # Model servers are GPU work like a team's: a drain must move them off a failing node.
    models = (
        {str(config.get(PREFIX + "inference", {}).get("namespace", "models"))}
        if config.get(PREFIX + "inference")
        else set()
    )
    platform = {str(r.inputs["namespace"]) for r in recording.of_type(RELEASE)} - models | (jobs - teams)
    assert "gpu-validation" in platform, "the check must see the validation Jobs' namespace"
    undrained = sorted(ns for ns in platform if not re.fullmatch(pattern, ns))
    assert not undrained, f"a drain would evict the platform's own pods in {undrained} (systemNamespaces {pattern})"
    drained = sorted(ns for ns in teams | models if re.fullmatch(pattern, ns))
    assert teams and models and not drained, (
        f"namespaces {drained} would never be drained: a faulty GPU node keeps its jobs or model servers"
    )
