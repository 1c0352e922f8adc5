"""GPU observability under mocks: registry, Container Insights, managed Prometheus, DCGM exporter, Grafana, alerts."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.monitoring import metrics_labels
from aks_gpu_platform.components.monitoring.registry import Registry, RegistryArgs
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.monitoring.section import RegistryConfig
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording
from tests.conftest import STACKS, assert_rejected, cluster_handle, set_path, settings_of
from tests.upstream.artifact_cache import cached_upstream
from tests.upstream.gpu_metrics_world import GpuWorkload, MetricsWorld, build_world, default_value, panel_query
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.promql import Evaluator, matches, selectors
from tests.upstream.scheduling import node_templates
from tests.upstream.scrape import Series, node_exporter_target, scrape
from tools import REPO_ROOT

REGISTRY = "azure-native:containerregistry:Registry"
ROLE = "azure-native:authorization:RoleAssignment"
CLUSTER = "azure-native:containerservice:ManagedCluster"
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
DCR = "azure-native:monitor:DataCollectionRule"
DCRA = "azure-native:monitor:DataCollectionRuleAssociation"
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
ACR_PULL = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
GRAFANA_ADMIN = "22926164-76b3-42b3-bc55-97df8dab3e41"
MONITORING_DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"


def _role(recording: Recording, guid: str) -> list[RecordedResource]:
    return [r for r in recording.of_type(ROLE) if r.inputs["roleDefinitionId"].endswith(guid)]


def _ids(recording: Recording) -> tuple[str, str]:
    return recording.one(WORKSPACE).outputs["id"], recording.one(CLUSTER).outputs["id"]


@pytest.mark.parametrize("stack", STACKS)
def test_registry_is_premium_without_admin_user_or_anonymous_pull(recordings: dict[str, Recording], stack: str) -> None:
    registry = recordings[stack].one(REGISTRY).inputs
    assert registry["sku"] == {"name": "Premium"}, "private endpoints and artifact cache need Premium"
    assert registry["adminUserEnabled"] is False, "a shared admin password defeats Entra ID access control"
    assert registry["anonymousPullEnabled"] is False


@pytest.mark.parametrize("stack", STACKS)
def test_dcgm_image_is_cached_from_nvidia_into_the_registry(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    registry = recording.one(REGISTRY).outputs["name"]
    for rule in recording.of_type("azure-native:containerregistry:CacheRule"):
        assert rule.inputs["registryName"] == registry, f"{rule.name} must live in our registry"
    image = recording.one(RELEASE, "dcgm").inputs["values"]["image"]
    upstream = cached_upstream(f"{image['repository']}:{image['tag']}", recording)
    assert upstream is not None, f"the exporter must pull a repository a cache rule serves: {image['repository']}"
    assert upstream.startswith("nvcr.io/nvidia/k8s/dcgm-exporter:"), (
        f"the cache must fetch NVIDIA's exporter: {upstream}"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_kubelet_identity_may_pull_from_the_registry(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    (grant,) = _role(recording, ACR_PULL)
    # The identity the nodes really pull as is the one the cluster reports, not whatever the program created.
    running = recording.one(CLUSTER).outputs["identityProfile"]["kubeletidentity"]["objectId"]
    kubelet = recording.one("azure-native:managedidentity:UserAssignedIdentity", "kubelet")
    assert grant.inputs["principalId"] == running, "AcrPull must go to the kubelet identity the cluster runs with"
    assert running == kubelet.outputs["principalId"], "the cluster must run with the kubelet identity we brought"
    assert recording.stack_outputs["kubeletIdentityObjectId"] == running, "the exported ID is the one nodes use"
    assert grant.inputs["scope"] == recording.one(REGISTRY).outputs["id"], "AcrPull on the registry only"


def test_prod_registry_is_private_and_protected(prod_recording: Recording) -> None:
    r = prod_recording
    registry = r.one(REGISTRY)
    assert registry.inputs["publicNetworkAccess"] == "Disabled"
    assert registry.protect, "the registry is stateful; prod refuses to delete it"
    endpoint = r.one("azure-native:network:PrivateEndpoint", "registry").inputs
    assert endpoint["subnet"]["id"] == r.one("azure-native:network:Subnet", "private-endpoints").outputs["id"]
    (connection,) = endpoint["privateLinkServiceConnections"]
    assert connection["privateLinkServiceId"] == registry.outputs["id"]
    assert connection["groupIds"] == ["registry"]
    zone = r.one("azure-native:privatedns:PrivateZone", "registry")
    assert zone.inputs["privateZoneName"] == "privatelink.azurecr.io"
    link = r.one("azure-native:privatedns:VirtualNetworkLink", "registry").inputs
    assert link["virtualNetwork"]["id"] == r.one("azure-native:network:VirtualNetwork").outputs["id"], (
        "nodes resolve the registry's private address only from a linked VNet"
    )
    group = r.one("azure-native:network:PrivateDnsZoneGroup", "registry").inputs
    assert group["privateDnsZoneConfigs"][0]["privateDnsZoneId"] == zone.outputs["id"]


def test_prod_refuses_to_delete_the_stored_gpu_metrics(prod_recording: Recording, dev_recording: Recording) -> None:
    # The workspace holds the GPU and cluster metrics history (chargeback, capacity): no redeploy brings it back.
    assert prod_recording.one(WORKSPACE).protect, "prod's Azure Monitor workspace must be protected from deletion"
    assert not dev_recording.one(WORKSPACE).protect, "dev is torn down freely: its workspace is not protected"


def test_dev_registry_is_public_without_a_private_endpoint(dev_recording: Recording) -> None:
    assert dev_recording.one(REGISTRY).inputs["publicNetworkAccess"] == "Enabled"
    assert dev_recording.of_type("azure-native:network:PrivateEndpoint") == []
    assert not dev_recording.one(REGISTRY).protect


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_sends_logs_to_the_workspace_and_runs_managed_prometheus(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    workspace = recording.one("azure-native:operationalinsights:Workspace")
    cluster = recording.one(CLUSTER)
    oms = cluster.inputs["addonProfiles"]["omsagent"]
    assert oms["enabled"] is True
    assert oms["config"]["logAnalyticsWorkspaceResourceID"] == workspace.outputs["id"]
    assert oms["config"]["useAADAuth"] == "true", "Container Insights authenticates with managed identity"
    assert recording.resources.index(workspace) < recording.resources.index(cluster), "the add-on needs the workspace"
    metrics = cluster.inputs["azureMonitorProfile"]["metrics"]
    assert metrics["enabled"] is True, "managed Prometheus must run on the cluster"
    assert "nodes=[pool" in metrics["kubeStateMetrics"]["metricLabelsAllowlist"], (
        "the not-reporting alert joins GPU nodes by their pool label"
    )
    logs_rule = next(d for d in recording.of_type(DCR) if "container-insights" in d.name).inputs
    assert logs_rule["destinations"]["logAnalytics"][0]["workspaceResourceId"] == workspace.outputs["id"]


@pytest.mark.parametrize("stack", STACKS)
def test_prometheus_pipeline_ends_in_the_workspace_and_starts_at_the_cluster(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    workspace_id, cluster_id = _ids(recording)
    rule = next(d for d in recording.of_type(DCR) if "prometheus" in d.name)
    assert rule.inputs["dataSources"]["prometheusForwarder"][0]["streams"] == ["Microsoft-PrometheusMetrics"]
    assert rule.inputs["destinations"]["monitoringAccounts"][0]["accountResourceId"] == workspace_id
    assert rule.inputs["dataFlows"][0]["destinations"] == [rule.inputs["destinations"]["monitoringAccounts"][0]["name"]]
    endpoint = recording.one("azure-native:monitor:DataCollectionEndpoint")
    assert rule.inputs["dataCollectionEndpointId"] == endpoint.outputs["id"]
    associations = recording.of_type(DCRA)
    assert {a.inputs["resourceUri"] for a in associations} == {cluster_id}, "every association targets the cluster"
    assert rule.outputs["id"] in {a.inputs.get("dataCollectionRuleId") for a in associations}


@pytest.mark.parametrize("stack", STACKS)
def test_agent_reads_its_configuration_through_the_endpoint_association(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    endpoint = recording.one("azure-native:monitor:DataCollectionEndpoint")
    (link,) = [a for a in recording.of_type(DCRA) if a.inputs.get("dataCollectionEndpointId")]
    # "The DCR association name must be configurationAccessEndpoint" (MicrosoftDocs/azure-docs
    # articles/azure-monitor/containers/container-insights-enable-aks.md, private link section, read 2026-12-02).
    assert link.inputs["associationName"] == "configurationAccessEndpoint", "any other name is rejected by Azure"
    assert link.inputs["dataCollectionEndpointId"] == endpoint.outputs["id"]
    assert link.inputs["resourceUri"] == recording.one(CLUSTER).outputs["id"], "the cluster's agent reads through it"
    assert "dataCollectionRuleId" not in link.inputs, "an endpoint association carries no rule"


@pytest.mark.parametrize("stack", STACKS)
def test_recording_and_alert_rule_groups_are_scoped_to_workspace_and_cluster(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    workspace_id, cluster_id = _ids(recording)
    groups = recording.of_type(RULE_GROUP)
    platform = [g for g in groups if "-slo" not in g.name]  # besides one SLO alert group per served model
    assert len(platform) == 5, (
        "node, Kubernetes and chargeback recording rules, the GPU alerts and the GPU health alerts"
    )
    for group in groups:
        assert group.inputs["scopes"] == [workspace_id, cluster_id], f"{group.name} must evaluate our workspace"
        assert group.inputs["clusterName"] == recording.one(CLUSTER).outputs["name"]
    records = {r.get("record") for g in groups for r in g.inputs["rules"]}
    for name in (
        "instance:node_cpu_utilisation:rate5m",
        "node_namespace_pod_container:container_memory_working_set_bytes",
        "namespace_workload_pod:kube_pod_owner:relabel",
    ):
        assert name in records, f"the standard dashboards query {name}"


# One node's node-exporter /metrics, the series the recording rules read (prometheus/node_exporter collectors:
# cpu `node_cpu_seconds_total{cpu,mode}`, loadavg, meminfo `node_memory_<field>_bytes`, vmstat, diskstats and netdev
# `{device}`).
NODE_EXPORTER_METRICS = "\n".join(
    [
        *(f'node_cpu_seconds_total{{cpu="{c}",mode="{m}"}} 100' for c in "01" for m in ("idle", "iowait", "user")),
        "node_load1 0.5",
        *(f"node_memory_{f}_bytes 1e9" for f in ("MemAvailable", "MemTotal", "Buffers", "Cached", "MemFree", "Slab")),
        "node_vmstat_pgmajfault 12",
        'node_disk_io_time_seconds_total{device="nvme0n1"} 40',
        'node_disk_io_time_weighted_seconds_total{device="nvme0n1"} 90',
        *(
            f'node_network_{direction}_{kind}_total{{device="{d}"}} 1000'
            for direction in ("receive", "transmit")
            for kind in ("bytes", "drop")
            for d in ("eth0", "lo")
        ),
    ]
)


def test_node_recording_rules_read_what_managed_prometheus_stores_from_the_node_exporter(
    dev_recording: Recording,
) -> None:
    cluster = dev_recording.one(CLUSTER).outputs["name"]
    nodes = [f"aks-{t.pool}-31415926-vmss000000" for t in node_templates(dev_recording)]
    world: list[Series] = []
    for i, node in enumerate(nodes):
        config, target = node_exporter_target(node, f"10.224.0.{i + 4}")
        world += scrape(target, config, NODE_EXPORTER_METRICS, {"cluster": cluster}).series
    assert {s.labels["job"] for s in world} == {"node"}, "the add-on's own job name for the node exporter"
    evaluator = Evaluator(world)
    known = {s.name for s in world}
    rules = [r for g in dev_recording.of_type(RULE_GROUP) for r in g.inputs["rules"] if "record" in r]
    node_rules = [r for r in rules if r["record"].startswith(("instance", ":node_memory"))]
    assert len(node_rules) >= 12, "Microsoft's node recording rules"
    for rule in node_rules:
        read = {sel.metric for sel in selectors(rule["expression"])}
        assert read <= known, (
            f"{rule['record']} reads {read - known}: not stored from the node exporter (minimal ingestion profile)"
        )
        for selector in selectors(rule["expression"]):
            assert evaluator.select(selector), (
                f"{rule['record']}: {selector.metric}{selector.matchers} selects none of the node exporter's series "
                'as managed Prometheus labels them (job="node")'
            )
        recorded = evaluator.vector(rule["expression"])
        assert {s.labels.get("instance") for s in recorded} <= {*nodes, None} and recorded, (
            f"{rule['record']} records nothing from the node exporter as managed Prometheus labels it "
            f'(job="node"): the Kubernetes dashboards\' node panels stay empty'
        )
        if rule["record"].startswith("instance"):
            assert {s.labels["instance"] for s in recorded} == set(nodes), f"{rule['record']}: one per node"
        for s in recorded:
            evaluator.add(Series({**s.labels, "__name__": rule["record"]}, s.value))
        known.add(rule["record"])
    assert evaluator.problems == [], evaluator.problems


def _alerts(recording: Recording) -> dict[str, dict[str, Any]]:
    group = recording.one(RULE_GROUP, "gpu-alerts")
    return {r["alert"]: r for r in group.inputs["rules"]}


def test_gpu_alerts_cover_faults_heat_memory_waste_and_silence(prod_recording: Recording) -> None:
    alerts = _alerts(prod_recording)
    assert "DCGM_FI_DEV_XID_ERRORS" in alerts["GpuXidError"]["expression"]
    assert alerts["GpuTemperatureHigh"]["expression"] == "DCGM_FI_DEV_GPU_TEMP > 83", "prod's threshold is 83 C"
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in alerts["GpuDoubleBitEccErrors"]["expression"]
    assert alerts["GpuMemoryNearlyFull"]["expression"].endswith("> 95")
    assert "DCGM_FI_DEV_FB_FREE" in alerts["GpuMemoryNearlyFull"]["expression"]
    assert alerts["GpuAllocatedButIdle"]["expression"].endswith("[60m])) < 5"), "prod: under 5 % for 60 min"
    assert 'label_pool="gpu"' in alerts["GpuNodeNotReportingMetrics"]["expression"]
    action_group = prod_recording.one("azure-native:monitor:ActionGroup")
    assert alerts, "the GPU alert group must hold rules"
    for name, rule in alerts.items():
        assert rule["actions"] == [{"actionGroupId": action_group.outputs["id"]}], f"{name} must notify someone"
    receivers = [r["emailAddress"] for r in action_group.inputs["emailReceivers"]]
    assert receivers == ["gpu-oncall@example.com", "ml-platform@example.com"], "receivers come from config"


def test_exporter_collects_every_counter_the_alerts_read(dev_recording: Recording) -> None:
    counters = dev_recording.one("kubernetes:core/v1:ConfigMap", "dcgm-counters")
    listed = {line.split(",")[0] for line in counters.inputs["data"]["platform-counters.csv"].splitlines()}
    used = {m for rule in _alerts(dev_recording).values() for m in re.findall(r"DCGM_FI_\w+", rule["expression"])}
    assert used <= listed, f"alerts on {used - listed} would never fire"
    values = dev_recording.one(RELEASE, "dcgm").inputs["values"]
    assert values["extraConfigMapVolumes"][0]["configMap"]["name"] == counters.inputs["metadata"]["name"]
    assert values["arguments"][1] == values["extraVolumeMounts"][0]["mountPath"]


@pytest.mark.parametrize("stack", STACKS)
def test_dcgm_exporter_runs_on_gpu_nodes_with_the_registry_image(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    release = recording.one(RELEASE, "dcgm")
    values = release.inputs["values"]
    login_server = recording.one(REGISTRY).outputs["loginServer"]
    assert login_server.endswith(".azurecr.io")
    assert values["image"]["repository"].split("/")[0] == login_server, "the image must come from our registry"
    tag = re.fullmatch(r"\d+\.\d+\.\d+-(\d+\.\d+\.\d+)-[a-z0-9.]+(@sha256:[0-9a-f]{64})?", values["image"]["tag"])
    assert tag and tag[1] == release.inputs["version"], "pin the tag of the pinned chart's exporter release"
    assert release.inputs["repositoryOpts"]["repo"] == "https://nvidia.github.io/dcgm-exporter/helm-charts"
    assert re.fullmatch(r"\d+\.\d+\.\d+", release.inputs["version"]), "pin the chart"
    gpu_nodes = [n for n in node_templates(recording) if n.gpu]
    assert gpu_nodes, f"{stack} has GPU pools"
    for node in gpu_nodes:
        assert pod_fits_node(values, dict(node.labels), list(node.taints)), (
            f"the exporter must run on every node of GPU pool {node.pool}, or its GPUs report nothing"
        )
    cpu_nodes = [n for n in node_templates(recording) if not n.gpu and not n.system]
    assert cpu_nodes and not any(pod_fits_node(values, dict(n.labels), list(n.taints)) for n in cpu_nodes), (
        "the exporter needs a GPU: it must not land on the CPU pool"
    )
    assert set(values["resources"]) == {"requests", "limits"}
    assert values["serviceMonitor"] == {"enabled": False}, "monitoring.coreos.com is ignored by managed Prometheus"
    assert release.deleted_with == recording.one(CLUSTER).urn


@pytest.mark.parametrize("stack", STACKS)
def test_pod_monitor_selects_the_exporter_pods_after_the_crd_exists(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    release = recording.one(RELEASE, "dcgm")
    monitor = recording.one(POD_MONITOR, "dcgm")
    spec = monitor.inputs["spec"]
    # The chart labels its pods app.kubernetes.io/name=<nameOverride>, app.kubernetes.io/instance=<release name>.
    pod_labels = {
        "app.kubernetes.io/name": release.inputs["values"]["nameOverride"],
        "app.kubernetes.io/instance": release.inputs["name"],
    }
    assert spec["selector"]["matchLabels"] == pod_labels, "a selector that misses the pods scrapes nothing"
    assert monitor.inputs["metadata"]["namespace"] == release.inputs["namespace"]
    assert spec["namespaceSelector"]["matchNames"] == [release.inputs["namespace"]]
    (endpoint,) = spec["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics"
    interval = load_platform_config(settings_of(_stack_file(stack))).monitoring.dcgm_exporter.scrape_interval_seconds
    assert endpoint["interval"] == f"{interval}s"
    prometheus_link = recording.one(DCRA, "prometheus-dcra")
    assert {recording.one(CLUSTER).urn, prometheus_link.urn} <= set(monitor.depends_on), (
        "the PodMonitor CRD is installed by the managed Prometheus add-on"
    )
    assert monitor.provider.startswith(recording.one("pulumi:providers:kubernetes").urn)


def _stack_file(stack: str) -> dict[str, Any]:
    from aks_gpu_platform.testing.stack_files import load_stack_file

    return load_stack_file(stack, REPO_ROOT)


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_reads_the_workspace_and_admin_groups_administer_it(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    workspace_id, _ = _ids(recording)
    grafana = recording.one("azure-native:dashboard:Grafana")
    integrations = grafana.inputs["properties"]["grafanaIntegrations"]["azureMonitorWorkspaceIntegrations"]
    assert integrations == [{"azureMonitorWorkspaceResourceId": workspace_id}]
    grafana_principal = grafana.outputs["identity"]["principalId"]
    # KEDA identities hold the same role on the workspace; exactly one grant is Grafana's.
    (reader,) = [r for r in _role(recording, MONITORING_DATA_READER) if r.inputs["principalId"] == grafana_principal]
    assert reader.inputs["scope"] == workspace_id, "Grafana queries PromQL with its own identity"
    # The deploying identity holds Grafana Admin too (components/monitoring/grafana.py); the groups are the rest.
    admins = [a for a in _role(recording, GRAFANA_ADMIN) if a.inputs["principalId"] != _guid_of_deployer(recording)]
    cluster_admins = recording.one(CLUSTER).inputs["aadProfile"]["adminGroupObjectIDs"]
    assert sorted(a.inputs["principalId"] for a in admins) == sorted(cluster_admins), "reuse the cluster's admins"
    assert admins, "both stacks name admin groups; Grafana without an admin cannot be configured"
    for admin in admins:
        assert admin.inputs["principalType"] == "Group"
        assert admin.inputs["scope"] == grafana.outputs["id"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_role_assignment_names_its_principal_type(recordings: dict[str, Recording], stack: str) -> None:
    grants = recordings[stack].of_type(ROLE)
    assert grants, "the stack grants roles (AcrPull, Grafana, KEDA...)"
    for grant in grants:
        assert grant.inputs.get("principalType") in {"ServicePrincipal", "Group", "User"}, (
            f"{grant.name}: without principalType a fresh identity fails on replication delay"
        )


@pytest.mark.parametrize("stack", STACKS)
def test_stack_exports_the_query_endpoint_for_autoscaling(recordings: dict[str, Recording], stack: str) -> None:
    recording = recordings[stack]
    workspace = recording.one(WORKSPACE)
    assert recording.stack_outputs["monitorWorkspaceId"] == workspace.outputs["id"]
    endpoint = recording.stack_outputs["prometheusQueryEndpoint"]
    assert endpoint == workspace.outputs["metrics"]["prometheusQueryEndpoint"]
    assert endpoint.endswith(".prometheus.monitor.azure.com")
    assert recording.stack_outputs["registryLoginServer"] == recording.one(REGISTRY).outputs["loginServer"]


@pytest.fixture(scope="module")
def operator_recording() -> Recording:
    """dev with the GPU Operator running the DCGM exporter."""
    config = _stack_file("dev")
    config["aks-gpu-platform:gpuStack"] = {"mode": "gpuOperator", "operatorDcgm": True}
    return run_stack("dev", config)


def test_gpu_operator_mode_scrapes_the_operators_exporter(operator_recording: Recording) -> None:
    recording = operator_recording
    assert [r for r in recording.of_type(RELEASE) if "dcgm" in r.name] == [], "never two exporters on one GPU"
    monitor = recording.one(POD_MONITOR, "dcgm").inputs
    assert monitor["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter"}
    assert monitor["metadata"]["namespace"] == "gpu-operator"


def test_pod_monitor_waits_for_whatever_creates_its_namespace(
    recordings: dict[str, Recording], operator_recording: Recording
) -> None:
    for stack, recording in {**recordings, "gpu-operator": operator_recording}.items():
        monitor = recording.one(POD_MONITOR, "dcgm")
        namespace = monitor.inputs["metadata"]["namespace"]
        creators = [
            r.urn
            for r in recording.resources
            if (r.type == "kubernetes:core/v1:Namespace" and r.inputs["metadata"]["name"] == namespace)
            or (r.type == RELEASE and r.inputs.get("createNamespace") and r.inputs["namespace"] == namespace)
        ]
        assert creators, f"{stack}: nothing creates namespace {namespace}"
        by_urn = {r.urn: r for r in recording.resources}
        waits_for: set[str] = set()
        pending = list(monitor.depends_on)
        while pending:
            urn = pending.pop()
            if urn not in waits_for:
                waits_for.add(urn)
                pending += by_urn[urn].depends_on if urn in by_urn else []
        assert set(creators) & waits_for, (
            f"{stack}: a PodMonitor sent before namespace {namespace} exists fails the first `pulumi up`"
        )


def test_operator_exporter_feeds_every_gpu_health_alert(operator_recording: Recording) -> None:
    world = build_world(operator_recording, WORKLOADS)
    rules = operator_recording.one(RULE_GROUP, "gpu-health").inputs["rules"]
    dcgm_rules = [r for r in rules if "DCGM_FI_" in r["expression"]]
    assert dcgm_rules, "the health group reads DCGM counters"
    for rule in dcgm_rules:
        assert _selects(world, rule["expression"]) == [], (
            f"{rule['alert']} reads counters the operator's exporter never collects: that GPU fault goes unseen"
        )
        fired = Evaluator(world.series).vector(rule["expression"])
        for label in re.findall(r"\$labels\.(\w+)", rule["annotations"]["description"]):
            assert all(s.labels.get(label) for s in fired), f"{rule['alert']}: $labels.{label} would render empty"


def test_registry_builds_directly_from_its_validated_settings(build: Callable[[Callable[[], Any]], Recording]) -> None:
    def registry(settings: dict[str, Any]) -> Registry:
        args: RegistryArgs = {
            "cluster": cluster_handle(),
            "base_name": "aks-x",
            "settings": validate_section(RegistryConfig, settings, source="monitoring.registry"),
            "kubelet_identity_object_id": "00000000-0000-4000-8000-000000000001",
            "private_endpoints_subnet_id": "subnet",
            "vnet_id": "vnet",
        }
        return Registry("acr", args)

    recording = build(lambda: registry({}))
    assert recording.one(REGISTRY).inputs["registryName"] == "acraksx", "the default name is alphanumeric"
    assert recording.of_type("azure-native:network:PrivateEndpoint") == [], "public by default"
    with pytest.raises(ConfigError) as caught:
        build(lambda: registry({"name": "no-dashes-allowed"}))
    assert "name:" in str(caught.value), "the settings are validated once, with the field named, before any resource"


BROKEN = [
    ("bad receiver email", "alerts.emailReceivers.0.email", "oncall-at-example", "email address"),
    ("temperature above 100 C", "alerts.thresholds.gpuTemperatureCelsius", 150, "less than or equal to 100"),
    ("memory threshold below 50%", "alerts.thresholds.memoryUsedPercent", 10, "greater than or equal to 50"),
    ("idle utilisation above 50%", "alerts.thresholds.idleUtilizationPercent", 80, "less than or equal to 50"),
    ("scrape every 5 s", "dcgmExporter.scrapeIntervalSeconds", 5, "greater than or equal to 15"),
    ("scrape every 10 min", "dcgmExporter.scrapeIntervalSeconds", 600, "less than or equal to 300"),
    ("registry name with dashes", "registry.name", "acr-aks-dev", "pattern"),
    ("unpinned image tag", "dcgmExporter.imageTag", "latest", "pattern"),
]


@pytest.mark.parametrize(("why", "path", "value", "hint"), BROKEN, ids=[b[0] for b in BROKEN])
def test_invalid_monitoring_setting_is_rejected_naming_the_field(
    stack_config: Callable[[str], dict[str, Any]], why: str, path: str, value: Any, hint: str
) -> None:
    settings = settings_of(stack_config("dev"))
    set_path(settings["monitoring"], path, value)
    assert_rejected(settings, why, "monitoring." + re.sub(r"\.(\d+)", r"[\1]", path), hint)


def test_duplicate_receiver_names_are_rejected(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    receivers = settings["monitoring"]["alerts"]["emailReceivers"]
    receivers.append({**receivers[0], "email": "other@example.com"})
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert "monitoring.alerts.emailReceivers[1].name:" in str(caught.value)


DASHBOARD = Path(__file__).parents[2] / "components" / "monitoring" / "dashboards" / "gpu-overview.json"


def test_gpu_dashboard_queries_dcgm_metrics() -> None:
    board = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"):
        assert any(metric in q for q in queries), f"the GPU dashboard must chart {metric}"
    assert board["templating"]["list"][0]["type"] == "datasource", "importers pick their Prometheus data source"


def test_gpu_operator_without_its_dcgm_keeps_our_exporter(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = stack_config("dev")
    config["aks-gpu-platform:gpuStack"] = {"mode": "gpuOperator", "operatorDcgm": False}
    recording = run_stack("dev", config)
    release = recording.one(RELEASE, "dcgm")
    selector = recording.one(POD_MONITOR, "dcgm").inputs["spec"]["selector"]["matchLabels"]
    assert selector["app.kubernetes.io/instance"] == release.inputs["name"], "GPUs must never go unobserved"


# --- What the scrape really stores: the recorded PodMonitor applied to what the exporter exposes ---------------
# tests/upstream/scrape.py models prometheus-operator's PodMonitor -> scrape config and Prometheus's scrape;
# tests/upstream/gpu_metrics_world.py renders DCGM exporter /metrics as upstream does. The checks below evaluate the
# recorded alert expressions and the dashboard's queries over those series (tests/upstream/promql.py).

WORKLOADS = (
    GpuWorkload("serving", "llm-7d9f8c6b5d-x2x9z", utilization=80.0),
    GpuWorkload("serving", "llm-7d9f8c6b5d-q8w4p", gpus=2, utilization=60.0),
    GpuWorkload("batch", "trainer-0", container="trainer", utilization=2.0),
)
# MIG slices on two nodes: one reports its engine's activity, one whose DCGM has no profiling module reports none.
MIG_SLICES = (
    GpuWorkload("batch", "notebook-0", utilization=1.0, mig_profile="1g.10gb"),
    GpuWorkload("batch", "filler-0", utilization=70.0),
    GpuWorkload("batch", "notebook-unprofiled-0", utilization=1.0, mig_profile="1g.10gb"),
)
UNPROFILED = "notebook-unprofiled-0"


def _unprofiled_slice_reads_nothing(counter: str, holder: GpuWorkload | None) -> float | None:
    if counter == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and holder is not None and holder.pod == UNPROFILED:
        return None
    return default_value(counter, holder)


GPU_ALERTS = {
    "GpuXidError",
    "GpuDoubleBitEccErrors",
    "GpuTemperatureHigh",
    "GpuMemoryNearlyFull",
    "GpuAllocatedButIdle",
    "GpuNodeNotReportingMetrics",
    "GpuMigUtilizationNotReported",
    "DcgmExporterDown",
}
WORLDS = ("dev", "prod", "gpu-operator")


@pytest.fixture(scope="module")
def scraped(
    recordings: dict[str, Recording], operator_recording: Recording
) -> dict[str, tuple[Recording, MetricsWorld]]:
    """Each stack's series, with one GPU node gone silent and three pods holding GPUs."""
    stacks = {**recordings, "gpu-operator": operator_recording}
    return {
        name: (
            r,
            build_world(
                r, WORKLOADS + MIG_SLICES, silent_nodes=1, nodes_per_pool=5, value_of=_unprofiled_slice_reads_nothing
            ),
        )
        for name, r in stacks.items()
    }


def _selects(world: MetricsWorld, query: str) -> list[str]:
    """Selectors of `query` that match no stored series (each one is a panel or alert that can never show data)."""
    empty: list[str] = []
    for selector in selectors(query):
        matchers = [*selector.matchers, *([("__name__", "=", selector.metric)] if selector.metric else [])]
        if not any(matches(s.labels, matchers) for s in world.series):
            empty.append(f"{selector.metric}{selector.matchers}")
    return empty


@pytest.mark.parametrize("stack", WORLDS)
def test_pod_monitor_scrapes_every_exporter_pod_and_nothing_else(
    scraped: dict[str, tuple[Recording, MetricsWorld]], stack: str
) -> None:
    _, world = scraped[stack]
    assert world.exporter_pods, "every reporting GPU node runs an exporter"
    scraped_pods = sorted(s.labels["pod"] for s in world.of("up"))
    assert scraped_pods == sorted(p.name for p in world.exporter_pods), (
        "one target per exporter pod: a selector or port that misses them leaves GPUs unobserved, "
        "one that catches other pods mixes their metrics in"
    )


def stored_series_labels(held_by_pod: bool, mig_slice: bool = False) -> frozenset[str]:
    """What the label contract (metrics_labels.py) says a stored per-GPU DCGM series carries besides `__name__`:
    the exporter's GPU labels, its pod labels when a pod holds the GPU and a MIG slice's instance labels, each under
    the name it is stored as, plus the target's labels and the cluster."""
    exposed = (
        metrics_labels.DCGM_GPU_LABELS
        + (metrics_labels.DCGM_POD_LABELS if held_by_pod else ())
        + ((metrics_labels.MIG_INSTANCE, metrics_labels.MIG_PROFILE) if mig_slice else ())
    )
    stored = {metrics_labels.stored_name(label) for label in exposed}
    return frozenset(stored | metrics_labels.TARGET_LABELS | {metrics_labels.CLUSTER})


@pytest.mark.parametrize("stack", WORLDS)
def test_label_contract_names_the_labels_the_scrape_stores(
    scraped: dict[str, tuple[Recording, MetricsWorld]], stack: str
) -> None:
    _, world = scraped[stack]
    utilization = world.of("DCGM_FI_DEV_GPU_UTIL")
    held = [s for s in utilization if metrics_labels.WORKLOAD_POD in s.labels]
    free = [s for s in utilization if metrics_labels.WORKLOAD_POD not in s.labels]
    assert held and free, "the world has GPUs held by pods and GPUs nobody holds"
    for series in held:
        assert set(series.labels) - {"__name__"} == stored_series_labels(held_by_pod=True)
        slots = world.placement[series.labels[metrics_labels.WORKLOAD_POD]]
        assert (series.labels[metrics_labels.NODE], int(series.labels[metrics_labels.GPU])) in slots, (
            "the workload labels must name the pod that holds this very GPU"
        )
        assert series.labels["namespace"] != series.labels[metrics_labels.WORKLOAD_NAMESPACE], (
            "plain namespace is the exporter's: a query on it never finds the workload"
        )
    for series in free:
        assert set(series.labels) - {"__name__"} == stored_series_labels(held_by_pod=False)
    (up, *_) = world.of("up")
    assert set(up.labels) - {"__name__"} == metrics_labels.TARGET_LABELS | {metrics_labels.CLUSTER}
    assert up.labels["job"] == metrics_labels.SCRAPE_JOB, "the PodMonitor's relabeling names the job"


@pytest.mark.parametrize("stack", WORLDS)
def test_every_gpu_alert_fires_with_the_labels_its_description_names(
    scraped: dict[str, tuple[Recording, MetricsWorld]], stack: str
) -> None:
    recording, world = scraped[stack]
    rules = [r for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if "alert" in r]
    assert {r["alert"] for r in rules} == GPU_ALERTS
    for rule in rules:
        evaluator = Evaluator(world.series)
        fired = evaluator.vector(rule["expression"])
        assert _selects(world, rule["expression"]) == [], f"{rule['alert']} selects series that never exist"
        assert evaluator.problems == [], f"{rule['alert']} groups or matches on labels the series lack"
        assert fired, f"{rule['alert']} can never fire on the series the scrape stores"
        for label in re.findall(r"\$labels\.(\w+)", rule["annotations"]["description"]):
            assert all(s.labels.get(label) for s in fired), (
                f"{rule['alert']}: $labels.{label} would render empty; on-call gets no node, GPU or pod"
            )


@pytest.mark.parametrize("stack", WORLDS)
def test_idle_alert_names_each_pod_holding_a_gpu_and_no_free_gpu(
    scraped: dict[str, tuple[Recording, MetricsWorld]], stack: str
) -> None:
    recording, world = scraped[stack]
    (rule,) = [
        r for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if r.get("alert") == "GpuAllocatedButIdle"
    ]
    fired = Evaluator(world.series).vector(rule["expression"])
    holders = {(s.labels[metrics_labels.WORKLOAD_NAMESPACE], s.labels[metrics_labels.WORKLOAD_POD]) for s in fired}
    assert holders == {(w.namespace, w.pod) for w in WORKLOADS + MIG_SLICES if w.pod != UNPROFILED}, (
        "an idle check must look at held GPUs and MIG slices only, and never at a slice that reports no activity"
    )


@pytest.mark.parametrize("stack", WORLDS)
def test_not_reporting_alert_names_exactly_the_silent_gpu_nodes(
    scraped: dict[str, tuple[Recording, MetricsWorld]], stack: str
) -> None:
    recording, world = scraped[stack]
    (rule,) = [
        r
        for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"]
        if r.get("alert") == "GpuNodeNotReportingMetrics"
    ]
    fired = Evaluator(world.series).vector(rule["expression"])
    assert world.silent_nodes, "one GPU node sends nothing in this world"
    assert sorted(s.labels["node"] for s in fired) == sorted(world.silent_nodes), (
        "the node join must pair DCGM's Hostname with kube-state-metrics' node, or every GPU node looks silent"
    )


@pytest.mark.parametrize("stack", WORLDS)
def test_exporter_down_alert_watches_the_up_series_of_every_exporter_target(
    scraped: dict[str, tuple[Recording, MetricsWorld]], stack: str
) -> None:
    recording, world = scraped[stack]
    (rule,) = [
        r for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if r.get("alert") == "DcgmExporterDown"
    ]
    watched = Evaluator(world.series).vector(rule["expression"])
    assert sorted(s.labels["pod"] for s in watched) == sorted(p.name for p in world.exporter_pods), (
        "the alert's job selector must match the job the PodMonitor gives every exporter target"
    )
    # Without the job relabeling the operator names the job <namespace>/<monitor>: the alert would watch nothing.
    unrelabelled = copy.deepcopy(recording)
    monitor = unrelabelled.one(POD_MONITOR, "dcgm")
    for endpoint in monitor.inputs["spec"]["podMetricsEndpoints"]:
        endpoint.pop("relabelings", None)
    assert Evaluator(build_world(unrelabelled, WORKLOADS).series).vector(rule["expression"]) == [], (
        "the relabeling, not luck, is what the alert depends on"
    )


def test_every_dashboard_query_returns_series_with_the_labels_it_shows(
    scraped: dict[str, tuple[Recording, MetricsWorld]],
) -> None:
    recording, world = scraped["dev"]
    cluster = recording.one(CLUSTER).outputs["name"]
    board = json.loads(DASHBOARD.read_text())
    variables = [v for v in board["templating"]["list"] if v["type"] == "query"]
    assert variables, "the dashboard filters by cluster"
    for variable in variables:
        metric, label = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"]).groups()  # type: ignore[union-attr]
        assert all(s.labels.get(label) for s in world.of(metric)), (
            f"${variable['name']} lists {label}, absent on {metric}"
        )
    targets = [t for panel in board["panels"] for t in panel.get("targets", [])]
    assert targets, "the dashboard has panels with queries"
    known = stored_series_labels(held_by_pod=True, mig_slice=True) | {"__name__"}
    for target in targets:
        query = panel_query(board, target["expr"], cluster)
        evaluator = Evaluator(world.series)
        shown = evaluator.vector(query)
        assert _selects(world, query) == [], f"{target['expr']}: a selector matches nothing"
        assert evaluator.problems == [], f"{target['expr']}: {evaluator.problems}"
        assert shown, f"{target['expr']} shows no data on a cluster with GPUs"
        legend = re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", ""))
        for label in legend:
            assert all(s.labels.get(label) for s in shown), f"{target['expr']}: legend {{{{{label}}}}} renders empty"
        used = {m[0] for sel in selectors(query) for m in sel.matchers} | set(legend)
        assert used <= known, f"{target['expr']} uses {used - known}, labels the label contract says do not exist"


def test_disabling_alerts_leaves_no_alert_rule_that_can_fire(
    dev_recording: Recording, stack_config: Callable[[str], dict[str, Any]]
) -> None:
    default_rules = [r for r in dev_recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if "alert" in r]
    assert default_rules and all(r["enabled"] is True for r in default_rules), "alerts are on by default"
    config = stack_config("dev")
    config["aks-gpu-platform:monitoring"]["alerts"]["enabled"] = False
    recording = run_stack("dev", config)
    alert_rules = [r for g in recording.of_type(RULE_GROUP) for r in g.inputs["rules"] if "alert" in r]
    health = {r["alert"] for r in recording.one(RULE_GROUP, "gpu-health").inputs["rules"]}
    assert health, "the GPU health group holds alerts too"
    slo = {r["alert"] for g in recording.of_type(RULE_GROUP) if "-slo" in g.name for r in g.inputs["rules"]}
    assert {r["alert"] for r in alert_rules} == GPU_ALERTS | health | slo, "the rules stay, ready to switch back on"
    assert all(r["enabled"] is False for r in alert_rules), "alerts.enabled: false must stop every alert firing"
    recording_rules = [r for g in recording.of_type(RULE_GROUP) for r in g.inputs["rules"] if "record" in r]
    assert recording_rules and all(r.get("enabled", True) for r in recording_rules), "dashboards keep their data"


@pytest.mark.parametrize("stack", STACKS)
def test_dashboards_are_created_in_grafana_with_the_deployers_entra_token(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    grafana = recording.one("azure-native:dashboard:Grafana")
    (provider,) = recording.of_type("pulumi:providers:grafana")
    assert provider.inputs["url"] == grafana.outputs["properties"]["endpoint"], "the provider must talk to our instance"
    audiences = [a.get("endpoint") for token, a in recording.invokes if token.endswith(":getClientToken")]
    # Managed Grafana's data plane accepts Entra tokens for this audience only (how-to-authenticate-data-plane-api).
    assert audiences == ["https://dashboard.azure.com"], "a token for ARM's audience is refused by Grafana"
    boards = {
        json.loads(d.inputs["configJson"])["uid"]: d for d in recording.of_type("grafana:oss/dashboard:Dashboard")
    }
    for path in sorted(DASHBOARD.parent.glob("*.json")):
        uid = json.loads(path.read_text())["uid"]
        assert uid in boards, f"{path.name} must be created by pulumi up, not imported by hand"
        deployed, committed = json.loads(boards[uid].inputs["configJson"]), json.loads(path.read_text())
        assert _without_constants(deployed) == _without_constants(committed), "deployed = committed"
        assert boards[uid].provider.startswith(provider.urn), "dashboards go through the Grafana provider"
    (admin,) = [
        r
        for r in _role(recording, GRAFANA_ADMIN)
        if r.inputs["scope"] == grafana.outputs["id"] and r.inputs["principalId"] == _guid_of_deployer(recording)
    ]
    for board in boards.values():
        assert admin.urn in board.depends_on, "writing before the deployer's Grafana grant exists is refused"
    assert admin.after_create_hooks, "the grant must have propagated before the first write"


def _without_constants(board: dict[str, Any]) -> dict[str, Any]:
    """The dashboard apart from its hidden constants' values, which the program sets from the stack's config."""
    stripped = copy.deepcopy(board)
    for variable in stripped["templating"]["list"]:
        if variable["type"] == "constant":
            variable.pop("query", None)
            variable.pop("current", None)
    return stripped


def test_the_idle_panel_counts_what_the_idle_alert_fires_on(stack_config: Callable[[str], dict[str, Any]]) -> None:
    """The overview's idle count and the idle alert (and chargeback) use the stack's idle threshold and window: an
    operator who raises the threshold sees the same GPUs idle on the dashboard as the alert names."""
    config = stack_config("dev")
    thresholds = config["aks-gpu-platform:monitoring"]["alerts"].setdefault("thresholds", {})
    thresholds.update(idleUtilizationPercent=50, idleMinutes=30)
    recording = run_stack("dev", config)
    cluster = recording.one(CLUSTER).outputs["name"]
    workloads = (
        GpuWorkload("serving", "llm-0", utilization=80.0),
        GpuWorkload("batch", "loader-0", utilization=30.0),
        GpuWorkload("batch", "trainer-0", utilization=2.0),
    )
    world = build_world(recording, workloads)
    (rule,) = [
        r for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if r.get("alert") == "GpuAllocatedButIdle"
    ]
    fired = Evaluator(world.series, thresholds_crossed=False).vector(rule["expression"])
    assert len(fired) == 2, "at 50 % the GPUs at 30 % and 2 % are idle"
    boards = [json.loads(d.inputs["configJson"]) for d in recording.of_type("grafana:oss/dashboard:Dashboard")]
    (board,) = [b for b in boards if b["uid"] == json.loads(DASHBOARD.read_text())["uid"]]
    (panel,) = [p for p in board["panels"] if p["title"].startswith("GPUs allocated but idle")]
    (target,) = panel["targets"]
    (shown,) = Evaluator(world.series, thresholds_crossed=False).vector(panel_query(board, target["expr"], cluster))
    assert shown.value == len(fired), f"the panel counts {shown.value} idle GPUs where the alert fires for {len(fired)}"


def _guid_of_deployer(recording: Recording) -> str:
    """The objectId the mocked getClientConfig answers (aks_gpu_platform/testing/mocks.py)."""
    from aks_gpu_platform.testing.mocks import _guid  # pyright: ignore[reportPrivateUsage]

    return _guid("deployer/object")


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_metrics_are_scraped_from_the_charts_metrics_service(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    monitor = recording.one("kubernetes:azmonitoring.coreos.com/v1:ServiceMonitor")
    kueue = recording.one(RELEASE, "kueue")
    spec = monitor.inputs["spec"]
    # kubernetes-sigs/kueue v0.19.2 charts/kueue templates/_helpers.tpl kueue.metricsService.labels and
    # templates/manager/auth_proxy_service.yaml: the metrics Service's labels and its port name.
    assert spec["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "kueue",
        "app.kubernetes.io/instance": kueue.inputs["name"],
        "app.kubernetes.io/component": "metrics-service",
    }, "a selector that misses the metrics Service scrapes nothing"
    assert (
        monitor.inputs["metadata"]["namespace"]
        == kueue.inputs["namespace"]
        == spec["namespaceSelector"]["matchNames"][0]
    )
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] == "https" and endpoint["scheme"] == "https", "Kueue serves metrics over TLS only"
    assert endpoint["bearerTokenFile"].endswith("serviceaccount/token"), "Kueue authorises every /metrics caller"
    assert {recording.one(CLUSTER).urn, recording.one(DCRA, "prometheus-dcra").urn, kueue.urn} <= set(
        monitor.depends_on
    ), "the ServiceMonitor CRD comes with the add-on and the namespace with the release"
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["metrics"]["enableClusterQueueResources"] is True, "quota used per ClusterQueue needs it"


# --- MIG slices: DCGM reports DCGM_FI_DEV_GPU_UTIL per GPU, not per MIG instance -------------------------------------


@pytest.mark.parametrize(("stack", "profile"), [("gpu-operator-mig", "3g.40gb"), ("dev", None)], ids=["mig", "whole"])
def test_a_teams_idle_device_alerts_and_its_team_panel_shows_its_utilisation(stack: str, profile: str | None) -> None:
    """A team holding one idle and one busy device, MIG slices or whole GPUs: the idle alert names the idle pod and
    only it, and the teams dashboard shows the team's utilisation (chargeback bills the idle slice either way)."""
    from tests.harness.contract_stacks import platform_recording
    from tests.upstream.metrics_day import team_quotas

    recording = platform_recording(stack)
    team, (namespace, _) = sorted(team_quotas(recording).items())[0]
    idle = GpuWorkload(namespace, f"{team}-idle-0", utilization=1.0, mig_profile=profile)
    busy = GpuWorkload(namespace, f"{team}-busy-0", utilization=80.0, mig_profile=profile)
    world = build_world(recording, (idle, busy))
    (rule,) = [
        r for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if r.get("alert") == "GpuAllocatedButIdle"
    ]
    fired = Evaluator(world.series, thresholds_crossed=False).vector(rule["expression"])
    assert {s.labels[metrics_labels.WORKLOAD_POD] for s in fired} == {idle.pod}, (
        f"only the idle {'MIG slice' if profile else 'GPU'} alerts: {[s.labels for s in fired]}"
    )
    cluster = recording.one(CLUSTER).outputs["name"]
    team_info = Series({"__name__": "team_namespace:info", "team": team, "namespace": namespace}, 1.0)
    board = json.loads((DASHBOARD.parent / "gpu-teams.json").read_text())
    (panel,) = [p for p in board["panels"] if p["title"] == "GPU utilisation per team"]
    (target,) = panel["targets"]
    query = panel_query(board, target["expr"], cluster).replace("$team", team)
    shown = Evaluator([*world.series, team_info]).vector(query)
    assert [s.value for s in shown] == [pytest.approx((idle.utilization + busy.utilization) / 2)], (
        f"the team's panel must show its devices' utilisation, not {[(s.labels, s.value) for s in shown]}"
    )


def _fired(recording: Recording, world: MetricsWorld, alert: str) -> list[Series]:
    (rule,) = [r for r in recording.one(RULE_GROUP, "gpu-alerts").inputs["rules"] if r.get("alert") == alert]
    return Evaluator(world.series, thresholds_crossed=False).vector(rule["expression"])


def _profiling_reads(ratio: float | None) -> Callable[[str, GpuWorkload | None], float | None]:
    """DCGM's values with DCGM_FI_PROF_GR_ENGINE_ACTIVE reading `ratio` on every device (None: not reported)."""

    def value_of(counter: str, holder: GpuWorkload | None) -> float | None:
        return ratio if counter == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else default_value(counter, holder)

    return value_of


@pytest.mark.parametrize("ratio", [0.0, None], ids=["profiling-reads-0", "profiling-not-loaded"])
def test_a_busy_whole_gpu_is_not_idle_whatever_its_profiling_field_reads(ratio: float | None) -> None:
    """A whole GPU is judged by DCGM_FI_DEV_GPU_UTIL: the profiling field can read 0 on a busy GPU
    (NVIDIA/dcgm-exporter issue 662) or be missing; the idle alert, the dashboards' utilisation and idle count
    follow GPU_UTIL, and an idle GPU beside it still alerts."""
    from tests.harness.contract_stacks import platform_recording

    recording = platform_recording("dev")
    busy = GpuWorkload("batch", "busy-0", utilization=99.0)
    idle = GpuWorkload("batch", "idle-0", utilization=1.0)
    world = build_world(recording, (busy, idle), value_of=_profiling_reads(ratio))
    fired = _fired(recording, world, "GpuAllocatedButIdle")
    assert {s.labels[metrics_labels.WORKLOAD_POD] for s in fired} == {idle.pod}, [s.labels for s in fired]
    cluster = recording.one(CLUSTER).outputs["name"]
    board = json.loads(DASHBOARD.read_text())
    per_pod = "avg by (exported_namespace, exported_pod)"
    (expr,) = [t["expr"] for p in board["panels"] for t in p.get("targets", []) if t["expr"].startswith(per_pod)]
    shown = Evaluator(world.series).vector(panel_query(board, expr, cluster))
    assert sorted(s.value for s in shown) == [1.0, 99.0], [(s.labels, s.value) for s in shown]
    (idle_panel,) = [p for p in board["panels"] if p["title"].startswith("GPUs allocated but idle")]
    (counted,) = Evaluator(world.series, thresholds_crossed=False).vector(
        panel_query(board, idle_panel["targets"][0]["expr"], cluster)
    )
    assert counted.value == 1, "the overview counts the idle GPU only"


def test_a_mig_node_without_per_instance_utilisation_raises_its_own_alert() -> None:
    """MIG slices are judged by DCGM_FI_PROF_GR_ENGINE_ACTIVE only; where the profiling module is not loaded the
    idle alert cannot see them, so a node that reports MIG instances without that field alerts instead."""
    from tests.harness.contract_stacks import platform_recording

    recording = platform_recording("gpu-operator-mig")
    idle = GpuWorkload("batch", "idle-0", utilization=1.0, mig_profile="3g.40gb")
    busy = GpuWorkload("batch", "busy-0", utilization=80.0, mig_profile="3g.40gb")
    reported = build_world(recording, (idle, busy))
    assert {s.labels[metrics_labels.WORKLOAD_POD] for s in _fired(recording, reported, "GpuAllocatedButIdle")} == {
        idle.pod
    }, "the idle MIG slice alerts, the busy one does not"
    assert _fired(recording, reported, "GpuMigUtilizationNotReported") == [], "every slice reports its engine"
    unreported = build_world(recording, (idle, busy), value_of=_profiling_reads(None))
    assert _fired(recording, unreported, "GpuAllocatedButIdle") == [], "no slice reads 0 for want of the field"
    missing = _fired(recording, unreported, "GpuMigUtilizationNotReported")
    nodes = {node for node, _ in unreported.placement[idle.pod] + unreported.placement[busy.pod]}
    assert {s.labels[metrics_labels.NODE] for s in missing} == nodes, [s.labels for s in missing]


def test_a_teams_own_dashboard_shows_each_rank_of_one_job_so_a_straggler_stands_out() -> None:
    """Both ranks of the team page's example are pods of one Job (`train-node-0`): a per-job average hides the
    straggler, so the team's board has a per-pod panel with one series per rank, and none of another team's."""
    from aks_gpu_platform.components.monitoring.grafana import team_dashboard
    from tests.harness.contract_stacks import platform_recording

    recording = platform_recording("prod")
    (team, other) = ("llm", "vision")
    ranks = (
        GpuWorkload("team-llm", "train-node-0-0-abcde", utilization=90.0),
        GpuWorkload("team-llm", "train-node-0-1-fghij", utilization=20.0),
    )
    outsider = GpuWorkload("team-vision", "train-node-0-0-klmno", utilization=55.0)
    world = build_world(recording, (*ranks, outsider))
    cluster = recording.one(CLUSTER).outputs["name"]
    info = [
        Series({"__name__": "team_namespace:info", "team": t, "namespace": f"team-{t}"}, 1.0) for t in (team, other)
    ]
    board = team_dashboard(json.loads((DASHBOARD.parent / "gpu-teams.json").read_text()), team)
    per_pod = [
        p
        for p in board["panels"]
        for t in p.get("targets", [])
        if "DCGM_FI_DEV_GPU_UTIL" in t["expr"] and "{{exported_pod}}" in t.get("legendFormat", "")
    ]
    assert per_pod, "the team's dashboard has a GPU utilisation panel with one series per pod"
    (target,) = per_pod[0]["targets"]
    query = panel_query(board, target["expr"], cluster).replace("$team", team)
    shown = {s.labels["exported_pod"]: s.value for s in Evaluator([*world.series, *info]).vector(query)}
    assert shown == {r.pod: pytest.approx(r.utilization) for r in ranks}, (
        f"each rank of team {team}'s job is its own series, and no other team's pod is: {shown}"
    )
