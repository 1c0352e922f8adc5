"""gpuStack.mode aksManaged: AKS installs the driver, device plugin and DCGM exporter; the platform creates fixed-size
pools with the managed GPU profile, installs neither plugin nor exporter, and scrapes AKS's exporter with the same
label contract as the other modes. What the preview does not support is a config error naming the field.

Upstream facts, spelled out here rather than taken from the code under test:
- agentPools body: `gpuProfile.nvidia.managementMode` Managed/Unmanaged (default Unmanaged) and `migStrategy`
  None/Single/Mixed (MicrosoftDocs/azure-aks-docs articles/aks/aks-managed-gpu-nodes.md, doc date 2026-07-02);
  2026-08-01 is the first stable API with `nvidia`, `migStrategy` is preview-only (azure-mgmt-containerservice
  41.8.0 / 41.9.0b1 changelogs).
- AKS runs `dcgm-exporter ... --address ":19400"` on the node and labels it kubernetes.azure.com/dcgm-exporter=enabled
  (Azure/AgentBaker cse_config.sh, 2026-08-21).
- Managed Prometheus's built-in `dcgmexporter` target is on by default and is switched off by `dcgmexporter = false`
  in section `default-scrape-settings-enabled` of ConfigMap kube-system/ama-metrics-settings-configmap, schema v1
  (Azure/prometheus-collector tomlparser-default-scrape-settings.go, configmaps/ama-metrics-settings-configmap*.yaml).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.components.gpu.aks_managed import managed_pool_name
from aks_gpu_platform.components.gpu.node_pool import azure_pool_name
from aks_gpu_platform.components.monitoring import metrics_labels
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.render import render_and_validate
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, cluster_handle, settings_of, without_models
from tests.monitoring.test_gpu_monitoring import stored_series_labels
from tests.upstream.gpu_metrics_world import GpuWorkload, MetricsWorld, build_world
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.promql import Evaluator, matches, selectors
from tests.upstream.scheduling import generic_agent_pools, node_templates, scheduling_check
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
RELEASE = "kubernetes:helm.sh/v3:Release"
AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC = "azure-native:resources:Resource"
POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
MANAGED_NODE_LABEL = ("kubernetes.azure.com/dcgm-exporter", "enabled")
AKS_EXPORTER_PORT = 19400


def managed_config() -> dict[str, Any]:
    """dev on AKS-managed GPU: the T4 pool fixed at one node, plus a fixed A100 pool cut into MIG3g slices."""
    config = without_models(copy.deepcopy(load_stack_file("dev", REPO_ROOT)))
    config[PREFIX + "gpuStack"] = {"mode": "aksManaged", "smokeTest": True}
    config[PREFIX + "gpuPools"] = [
        {"name": "gput4", "vmSize": "Standard_NC4as_T4_v3", "zones": ["1"], "minCount": 1, "maxCount": 1},
        {
            "name": "a100mig",
            "vmSize": "Standard_NC24ads_A100_v4",
            "zones": ["1"],
            "minCount": 1,
            "maxCount": 1,
            "migProfile": "MIG3g",
        },
    ]
    # No per-pod GPU series (no KEDA), no autoscaler (admission books existing nodes).
    config[PREFIX + "autoscaling"]["sampleInference"]["enabled"] = False
    config[PREFIX + "training"]["admission"] = {"provisioningClass": "check-capacity.autoscaling.x-k8s.io"}
    config[PREFIX + "training"]["teams"][0]["quotas"] = [{"pool": "gput4", "gpus": 1}]
    return config


@pytest.fixture(scope="module")
def managed() -> Recording:
    return run_stack("dev", managed_config())


def _managed_pools(recording: Recording) -> list[Any]:
    pools = [
        r
        for r in recording.of_type(GENERIC)
        if r.inputs.get("resourceType") == "agentPools"
        and r.inputs.get("resourceProviderNamespace") == "Microsoft.ContainerService"
    ]
    assert pools, "aksManaged pools are agentPools of the generic ARM resource"
    return pools


def test_pools_carry_the_managed_gpu_profile_at_an_api_version_that_has_it(managed: Recording) -> None:
    pools = {r.inputs["properties"]["nodeLabels"]["gpu-pool"]: r for r in _managed_pools(managed)}
    assert set(pools) == {"gput4", "a100mig"}
    assert not [r for r in managed.of_type(AGENT_POOL) if (r.inputs.get("nodeLabels") or {}).get("pool") == "gpu"], (
        "no GPU pool may also exist as an AgentPool of the pinned SDK, whose API has no managementMode"
    )
    t4, mig = pools["gput4"].inputs, pools["a100mig"].inputs
    assert t4["properties"]["gpuProfile"] == {"driver": "Install", "nvidia": {"managementMode": "Managed"}}, (
        "Managed must be explicit: the API default is Unmanaged (driver only)"
    )
    assert t4["apiVersion"] == "2026-08-01", "the first stable API version with gpuProfile.nvidia"
    assert mig["properties"]["gpuProfile"]["nvidia"] == {
        "managementMode": "Managed",
        "migStrategy": "Single",
        "migProfiles": ["MIG3g"],
    }, "Single keeps MIG slices as nvidia.com/gpu, which the quotas count; its one partition is in migProfiles"
    assert "gpuInstanceProfile" not in mig["properties"], "the spec makes it mutually exclusive with migProfiles"
    assert mig["apiVersion"].endswith("-preview"), "migStrategy exists only in preview API versions"
    for pool in (t4, mig):
        properties = pool["properties"]
        assert properties["enableAutoScaling"] is False, "no cluster autoscaler on managed GPU pools in preview"
        assert properties["count"] == 1, "the fixed node count of the config"
        assert pool["parentResourcePath"] == f"managedClusters/{managed.stack_outputs['clusterName']}"


def test_a_managed_pool_is_the_same_pool_as_the_sdks_agent_pool(managed: Recording, dev_recording: Recording) -> None:
    """The generic body spells ARM properties by hand: they must equal what the SDK's AgentPool sends for the same
    pool in the other modes (vmSize, zones, OS, disk, labels, taints, subnet, version, upgrade settings, tags)."""
    (sdk,) = [r for r in dev_recording.of_type(AGENT_POOL) if (r.inputs.get("nodeLabels") or {}).get("pool") == "gpu"]
    (ours,) = [r for r in _managed_pools(managed) if r.inputs["properties"]["nodeLabels"]["gpu-pool"] == "gput4"]
    differ = {"count", "minCount", "maxCount", "enableAutoScaling", "gpuProfile", "agentPoolName"}
    differ |= {"resourceName", "resourceGroupName"}
    expected = {k: v for k, v in sdk.inputs.items() if k not in differ}
    assert expected, "the SDK's AgentPool has properties to compare"
    got = {k: v for k, v in ours.inputs["properties"].items() if k not in differ}
    assert got == expected, "a managed pool must be the same pool as in devicePlugin mode, GPU profile aside"
    assert ours.inputs["resourceGroupName"] == sdk.inputs["resourceGroupName"]


def test_moving_a_pool_to_managed_mode_makes_a_new_pool() -> None:
    cfg = load_platform_config(settings_of(managed_config()))
    pool = cfg.gpu_pools[0]
    assert managed_pool_name(pool) != azure_pool_name(pool, "devicePlugin"), (
        "AKS cannot switch an existing pool to managed GPU: the move must create a new pool, not update one"
    )
    assert len(managed_pool_name(pool)) <= 12, "AKS pool names have at most 12 characters"


def test_no_device_plugin_or_exporter_release_exists(managed: Recording) -> None:
    charts = {r.inputs["chart"] for r in managed.of_type(RELEASE)}
    assert charts, "other releases (Kueue) still install"
    assert not charts & {"nvidia-device-plugin", "gpu-operator", "dcgm-exporter"}, (
        "AKS runs the device plugin and the exporter itself; a second one would fight it for the GPUs and the port"
    )


def test_the_pod_monitor_targets_aks_exporter_on_every_managed_node(managed: Recording) -> None:
    monitor = managed.one(POD_MONITOR).inputs
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    anchors = [
        d
        for d in managed.of_type(DAEMON_SET)
        if d.inputs["spec"]["template"]["metadata"]["labels"] == monitor["spec"]["selector"]["matchLabels"]
    ]
    assert len(anchors) == 1, "the PodMonitor selects exactly the scrape anchor's pods"
    anchor = anchors[0].inputs
    assert anchor["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    pod = anchor["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True, "only a host-network pod has the node's IP, where AKS's exporter listens"
    ports = {p["name"]: p["containerPort"] for c in pod["containers"] for p in c.get("ports", [])}
    assert ports.get(endpoint["port"]) == AKS_EXPORTER_PORT, "the monitor's port must be AKS's exporter port"
    gpu_nodes = [n for n in node_templates(managed) if n.gpu]
    assert len(gpu_nodes) == 2
    for node in gpu_nodes:
        assert node.labels.get(MANAGED_NODE_LABEL[0]) == MANAGED_NODE_LABEL[1], "AKS labels every managed node"
        assert pod_fits_node(pod, node.labels, node.taints), f"every managed node reports metrics ({node.pool})"
    cpu = [n for n in node_templates(managed) if not n.gpu and not n.system]
    assert cpu and not any(pod_fits_node(pod, n.labels, n.taints) for n in cpu), "no exporter runs on CPU nodes"


def test_the_agents_own_dcgm_target_is_switched_off(managed: Recording, dev_recording: Recording) -> None:
    (settings,) = [
        r for r in managed.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == "ama-metrics-settings-configmap"
    ]
    assert settings.inputs["metadata"]["namespace"] == "kube-system"
    data = settings.inputs["data"]
    assert data["schema-version"] == "v1"
    toml = dict(
        (k.strip(), v.strip())
        for k, v in (line.split("=", 1) for line in data["default-scrape-settings-enabled"].splitlines())
    )
    assert toml == {"dcgmexporter": "false"}, (
        "the built-in target keeps only cluster/instance/gpu/job: left on it would double every GPU series without a "
        "node; no other target is named, so the agent keeps its defaults for them"
    )
    assert not [
        r for r in dev_recording.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == "ama-metrics-settings-configmap"
    ], "in the other modes nothing else scrapes port 19400: the agent's settings stay untouched"


WORKLOADS = (GpuWorkload("serving", "llm-0", utilization=80.0), GpuWorkload("batch", "trainer-0", utilization=2.0))


@pytest.fixture(scope="module")
def world(managed: Recording) -> MetricsWorld:
    return build_world(managed, WORKLOADS, silent_nodes=1)


def test_the_scrape_stores_the_label_contract_without_pod_labels(world: MetricsWorld) -> None:
    utilization = world.of("DCGM_FI_DEV_GPU_UTIL")
    assert utilization, "AKS's exporter is scraped"
    for series in utilization:
        assert set(series.labels) - {"__name__"} == stored_series_labels(held_by_pod=False), (
            "the same labels as our exporter's free GPUs: AKS's exporter has no pod mapping"
        )
    targets = world.of("up")
    assert {s.labels["instance"].rsplit(":", 1)[1] for s in targets} == {str(AKS_EXPORTER_PORT)}
    assert {s.labels["job"] for s in targets} == {metrics_labels.SCRAPE_JOB}, "the alerts watch this job"


# Alerts that cannot fire on AKS-managed pools, and why (docs/gpu-operations.md lists them).
SILENT_IN_AKS_MANAGED = {
    "GpuAllocatedButIdle": "AKS's exporter has no pod mapping, so no series names a pod",
    "GpuDoubleBitEccErrors": "ECC counters are not in AKS's packaged counters file",
    "GpuThermalThrottling": "violation counters are not in AKS's packaged counters file",
    "GpuPowerThrottling": "violation counters are not in AKS's packaged counters file",
    "GpuNvlinkErrors": "NVLink error counters are not in AKS's packaged counters file",
}


def _dcgm_rules(recording: Recording) -> list[dict[str, Any]]:
    rules = [r for g in recording.of_type(RULE_GROUP) for r in g.inputs["rules"] if "alert" in r]
    return [r for r in rules if "DCGM_" in r["expression"] or r["expression"].startswith("up{")]


def test_dcgm_alerts_fire_with_their_labels_except_the_documented_gaps(managed: Recording, world: MetricsWorld) -> None:
    rules = _dcgm_rules(managed)
    assert {r["alert"] for r in rules} >= set(SILENT_IN_AKS_MANAGED), "the gaps are alerts the platform has"
    for rule in rules:
        evaluator = Evaluator(world.series)
        fired = evaluator.vector(rule["expression"])
        empty = [
            s
            for s in selectors(rule["expression"])
            if not any(
                matches(x.labels, [*s.matchers, *([("__name__", "=", s.metric)] if s.metric else [])])
                for x in world.series
            )
        ]
        if rule["alert"] == "GpuMigUtilizationNotReported":
            assert not fired, "no MIG instance in this world, so none lacks its utilisation"
            continue
        if rule["alert"] in SILENT_IN_AKS_MANAGED:
            assert not fired or empty, f"{rule['alert']} is documented as silent here, yet it would fire"
            continue
        assert evaluator.problems == [], f"{rule['alert']}: {evaluator.problems}"
        assert fired and not empty, f"{rule['alert']} must work on AKS's exporter with the same label contract"
        for label in re.findall(r"\$labels\.(\w+)", rule["annotations"]["description"]):
            assert all(s.labels.get(label) for s in fired), f"{rule['alert']}: $labels.{label} would render empty"


def test_managed_variant_plans_with_pods_that_fit_and_schema_valid_objects(managed: Recording, tmp_path: Any) -> None:
    check = scheduling_check(managed, [])
    assert check.pods and len([n for n in check.user_nodes if n.gpu]) == 2
    assert not check.problems(), "\n".join(check.problems())
    verdicts = render_and_validate(managed, tmp_path, "1.33.0")
    invalid = [f"{v.kind}/{v.name}: {v.detail}" for v in verdicts if v.status == "invalid"]
    assert verdicts and not invalid, invalid
    assert generic_agent_pools(managed), "the check saw the managed pools"


# --- what the preview does not support: config errors naming the field ----------------------------------------


def _settings() -> dict[str, Any]:
    return settings_of(managed_config())


def test_an_autoscaled_managed_pool_is_rejected_naming_its_max_count() -> None:
    settings = _settings()
    settings["gpuPools"][0]["minCount"] = 0
    assert_rejected(
        settings, "no cluster autoscaler in preview", "gpuPools[0].maxCount", "set minCount equal to maxCount"
    )


def test_keda_targets_on_managed_gpu_are_rejected() -> None:
    settings = _settings()
    settings["autoscaling"]["sampleInference"]["enabled"] = True
    assert_rejected(settings, "no pod mapping", "autoscaling.sampleInference.enabled", "no pod mapping")
    settings = _settings()
    settings["autoscaling"]["targets"] = [
        {
            "namespace": "serving",
            "deployment": "llm",
            "minReplicas": 1,
            "maxReplicas": 2,
            "targetUtilizationPercent": 70,
        }
    ]
    assert_rejected(settings, "no pod mapping", "autoscaling.targets", "devicePlugin or gpuOperator")


def test_scale_up_admission_on_managed_gpu_is_rejected() -> None:
    settings = _settings()
    settings["training"]["admission"] = {"provisioningClass": "best-effort-atomic-scale-up.autoscaling.x-k8s.io"}
    assert_rejected(settings, "no autoscaler to scale up", "training.admission.provisioningClass", "check-capacity")


def test_the_policy_pack_checks_managed_pools_like_agent_pools(managed: Recording) -> None:
    from aks_gpu_platform.policy_model import Resource, StackFacts
    from aks_gpu_platform.policy_rules import check_gpu_pool_taint_and_label, check_prod_encryption_at_host

    (pool,) = [r for r in _managed_pools(managed) if r.inputs["properties"]["nodeLabels"]["gpu-pool"] == "gput4"]
    resource = Resource(pool.type, pool.name, pool.inputs)
    assert check_gpu_pool_taint_and_label(resource, StackFacts("dev")) == []
    untainted = copy.deepcopy(pool.inputs)
    untainted["properties"]["nodeTaints"] = []
    problems = check_gpu_pool_taint_and_label(Resource(pool.type, pool.name, untainted), StackFacts("dev"))
    assert problems and "sku=gpu:NoSchedule" in problems[0], "a managed GPU pool without the GPU taint is caught"
    assert check_prod_encryption_at_host(resource, StackFacts("prod")), "prod host encryption applies to it too"


def test_the_pool_built_directly_keeps_spot_and_leaves_the_version_to_auto_upgrade(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:

    from aks_gpu_platform.components.gpu.aks_managed import ManagedGpuNodePool
    from aks_gpu_platform.config.gpu.section import GpuPoolConfig

    pool = GpuPoolConfig.model_validate(
        {"name": "spot", "vmSize": "Standard_NC4as_T4_v3", "zones": ["1"], "minCount": 2, "maxCount": 2}
        | {"priority": "Spot", "spot": {"evictionPolicy": "Delete", "maxPrice": -1}}
    )

    def program() -> None:
        handle = cluster_handle(tags={"project": "t"})
        ManagedGpuNodePool(
            "gpu-spot",
            {
                "pool": pool,
                "cluster": handle,
                "nodes_subnet_id": "subnet",
                "kubernetes_version": "1.36",
                "tracks_versions": True,
            },
        )

    recording = build(program)
    (resource,) = _managed_pools(recording)
    properties = resource.inputs["properties"]
    assert (properties["scaleSetPriority"], properties["scaleSetEvictionPolicy"]) == ("Spot", "Delete")
    assert properties["count"] == 2 and properties["tags"] == {"project": "t"}
    assert resource.ignore_changes == ["properties.orchestratorVersion"], (
        "with an auto-upgrade channel AKS moves the version; re-sending the pinned one would be a downgrade"
    )
    (node,) = [n for n in node_templates(recording) if n.gpu]
    assert node.spot and "sku=gpu:NoSchedule" in node.taints, "AKS adds Spot's taint to managed pools too"
    assert recording.one("azure-native:containerservice:ManagedCluster").urn in resource.depends_on


def test_the_plans_quota_counts_the_managed_pools(managed: Recording) -> None:
    from aks_gpu_platform.plan.cost import pool_capacities, quota_needs

    pools = {p.labels.get("gpu-pool"): p for p in pool_capacities(managed) if p.labels.get("pool") == "gpu"}
    assert set(pools) == {"gput4", "a100mig"}, "GPU quota is asked for every GPU pool, managed ones included"
    assert (pools["gput4"].min_count, pools["gput4"].max_count) == (1, 1), "a fixed pool runs its count"
    needs, _ = quota_needs(list(pool_capacities(managed)))
    assert any(p.startswith("gput4") for n in needs for p in n.pools), "its vCPUs are in the quota table"
