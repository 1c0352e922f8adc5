"""GPU sharing per pool: what the device plugin is told, what nodes advertise, and what quotas, the autoscaler's
templates and cost count.

The plugin is modelled from NVIDIA/k8s-device-plugin v0.20.0 (api/config/v1, the chart's templates) in
tests/upstream/autoscaler_template.py, independently of the helpers that write its configuration; the GPU Operator chart
from NVIDIA/gpu-operator v26.7.0 (templates/clusterpolicy.yaml, templates/plugin_config.yaml).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import pytest

from aks_gpu_platform.components.monitoring.recording_rules import GPU_PRICE
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog.prices import HOURS_PER_MONTH, VM_HOURLY
from aks_gpu_platform.plan import cost
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, settings_of, without_models
from tests.gpu.test_scheduling import variant_config
from tests.upstream.autoscaler_template import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    plugin_configs,
    pool_sharing,
    scale_from_zero_problems,
    shared_pool_fill_problems,
    whole_node_gpus,
)
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import AGENT_POOL, RELEASE, node_templates
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
GPU = "nvidia.com/gpu"
DEV = settings_of(without_models(load_stack_file("dev", REPO_ROOT)))  # shared pools serve no model


def _dev_with(**pool_changes: Any) -> dict[str, Any]:
    settings = copy.deepcopy(DEV)
    settings["gpuPools"][0].update(pool_changes)
    return settings


def _operator_time_sliced_mig(config: dict[str, Any]) -> None:
    """The GPU Operator with an A100 cut into two MIG3g slices, each time-sliced twice: 4 devices per node."""
    config[PREFIX + "gpuPools"] = [
        {
            "name": "a100ts",
            "vmSize": "Standard_NC24ads_A100_v4",
            "zones": ["1"],
            "minCount": 0,
            "maxCount": 2,
            "migProfile": "MIG3g",
            "sharing": {"mode": "timeSlicing", "replicas": 2},
        }
    ]
    config[PREFIX + "gpuStack"] = {"mode": "gpuOperator", "operatorDcgm": True, "smokeTest": True}
    config[PREFIX + "autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0  # the team holds the pool
    for team in config[PREFIX + "training"]["teams"]:
        team["quotas"] = [{"pool": "a100ts", "gpus": 8}]


@pytest.fixture(scope="module")
def shared() -> Recording:
    return run_stack("dev", variant_config("shared-gpus"))


@pytest.fixture(scope="module")
def operator_shared() -> Recording:
    config = without_models(copy.deepcopy(load_stack_file("dev", REPO_ROOT)))
    _operator_time_sliced_mig(config)
    return run_stack("dev", config)


def _pool(recording: Recording, name: str) -> dict[str, Any]:
    (pool,) = [
        p.inputs for p in recording.of_type(AGENT_POOL) if (p.inputs.get("nodeLabels") or {}).get("gpu-pool") == name
    ]
    return pool


# ---------------------------------------------------------------- config rules


def test_mps_on_a_mig_pool_is_refused() -> None:
    settings = _dev_with(vmSize="Standard_NC24ads_A100_v4", migProfile="MIG3g", sharing={"mode": "mps", "replicas": 2})
    assert_rejected(
        settings, "the plugin does not support MPS on MIG devices", "gpuPools[0].sharing.mode", "timeSlicing"
    )


@pytest.mark.parametrize("check", ["dcgmDiag", "ncclAllReduce"])
def test_whole_node_validation_on_a_shared_pool_is_refused(check: str) -> None:
    settings = _dev_with(sharing={"mode": "timeSlicing", "replicas": 2}, validation={check: True})
    assert_rejected(
        settings,
        "a shared node refuses a container more than one shared device, so the check could never hold its GPUs",
        f"gpuPools[0].validation.{check}",
        "unshared",
    )


def test_a_shared_pool_needs_at_least_two_replicas() -> None:
    settings = _dev_with(sharing={"mode": "timeSlicing", "replicas": 1})
    assert_rejected(settings, "the plugin refuses fewer than 2 replicas", "gpuPools[0].sharing.replicas", "2")


def test_aks_managed_pools_cannot_share() -> None:
    settings = _dev_with(minCount=1, maxCount=1, sharing={"mode": "timeSlicing", "replicas": 2})
    settings["gpuStack"] = {"mode": "aksManaged", "smokeTest": True}
    assert_rejected(settings, "AKS configures its managed device plugin itself", "gpuPools[0].sharing", "devicePlugin")


def test_team_quotas_count_shared_devices() -> None:
    """2 T4 nodes time-sliced 4 ways advertise 8 nvidia.com/gpu: a team may hold all 8, not 9."""
    settings = _dev_with(maxCount=2, sharing={"mode": "timeSlicing", "replicas": 4})
    settings["autoscaling"]["sampleInference"]["scaling"]["minReplicas"] = 0  # nothing else kept on the pool
    settings["training"]["teams"][0]["quotas"][0]["gpus"] = 8
    load_platform_config(settings)
    settings["training"]["teams"][0]["quotas"][0]["gpus"] = 9
    assert_rejected(settings, "quota beyond what the nodes advertise", "training.teams[0].quotas[0].gpus", "at most 8")


# ---------------------------------------------------------------- what the plugin is told, what nodes advertise


def test_each_shared_pool_runs_the_plugin_config_of_its_sharing(shared: Recording) -> None:
    t4, a100 = _pool(shared, "gput4"), _pool(shared, "a100mps")
    assert pool_sharing(t4, shared).replicas == 4 and pool_sharing(a100, shared).replicas == 2, (
        "the config a node's label selects must replicate each GPU as the pool's sharing says"
    )
    assert pool_sharing(t4, shared).one_device_per_container, (
        "time-slicing must refuse requests above one shared device (two turns of one GPU are not two GPUs)"
    )
    configs, default = plugin_configs(shared)
    assert default is not None and pool_sharing({"agentPoolName": "unlabelled"}, shared).replicas == 1, (
        f"a node without the label must fall back to a config that shares nothing: {default} of {sorted(configs)}"
    )
    assert whole_node_gpus(t4, shared) == 4 and whole_node_gpus(a100, shared) == 2, "1 T4 x 4, 1 A100 x 2"


def test_unshared_stacks_keep_the_plugin_without_configs(dev_recording: Recording) -> None:
    configs, default = plugin_configs(dev_recording)
    assert not configs and default is None, "a stack without sharing must not change the plugin's values"
    assert not any(
        DEVICE_PLUGIN_CONFIG_LABEL in (p.inputs.get("nodeLabels") or {}) for p in dev_recording.of_type(AGENT_POOL)
    )


def _device_plugin_values(recording: Recording) -> dict[str, Any]:
    (release,) = [r for r in recording.of_type(RELEASE) if r.inputs["chart"] == "nvidia-device-plugin"]
    return release.inputs["values"]


def test_the_mps_control_daemon_runs_on_mps_nodes_and_nowhere_else(shared: Recording) -> None:
    """The chart's MPS control daemon DaemonSet selects `nvidia.com/mps.capable=true` plus our nodeSelector,
    affinity and tolerations (templates/daemonset-mps-control-daemon.yml at v0.20.0). The plugin on an MPS node
    waits for it; on a time-sliced node it would switch the GPUs to EXCLUSIVE_PROCESS (cmd/mps-control-daemon)."""
    values = _device_plugin_values(shared)
    daemon = {
        "nodeSelector": {"nvidia.com/mps.capable": "true", **(values.get("nodeSelector") or {})},
        "affinity": values["affinity"],
        "tolerations": values["tolerations"],
    }
    nodes = {n.labels.get("gpu-pool"): n for n in node_templates(shared) if n.labels.get("gpu-pool")}
    assert pod_fits_node(daemon, nodes["a100mps"].labels, nodes["a100mps"].taints), "MPS pool: the daemon must run"
    assert not pod_fits_node(daemon, nodes["gput4"].labels, nodes["gput4"].taints), "time-sliced pool: never"


def test_the_plugin_keeps_its_capabilities_dropped_with_a_config_map(shared: Recording) -> None:
    """With a ConfigMap the chart adds CAP_SYS_ADMIN unless deviceListStrategy is a string without volume-mounts
    and migStrategy is none (_helpers.tpl requiresCapSysAdmin at v0.20.0)."""
    values = _device_plugin_values(shared)
    assert values["config"]["map"], "the shared stack must ship plugin configs"
    strategy = values.get("deviceListStrategy")
    assert isinstance(strategy, str) and "volume-mounts" not in strategy, (
        "otherwise every GPU node runs the plugin with CAP_SYS_ADMIN"
    )


def test_the_operator_ships_the_configs_its_nodes_select(operator_shared: Recording) -> None:
    (release,) = [r for r in operator_shared.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator"]
    config = release.inputs["values"]["devicePlugin"]["config"]
    # templates/plugin_config.yaml: a ConfigMap only with create and data; clusterpolicy.yaml: config only with name.
    assert config.get("create") and config.get("data") and config.get("name"), f"ConfigMap and ClusterPolicy: {config}"
    pool = _pool(operator_shared, "a100ts")
    assert pool["nodeLabels"][DEVICE_PLUGIN_CONFIG_LABEL] in config["data"], "the node label names a shipped config"
    assert "nvidia.com/mps.capable" not in pool["nodeLabels"], "under the operator its gpu-feature-discovery owns it"
    assert whole_node_gpus(pool, operator_shared) == 4, "1 A100 x 2 MIG3g slices x 2 time-slicing replicas"
    assert not scale_from_zero_problems(operator_shared, set()), "the MIG and time-sliced pool scales from zero"


# ---------------------------------------------------------------- scale from zero, quotas, cost


def _without_gpu_tags(recording: Recording) -> Recording:
    stripped: list[RecordedResource] = []
    for original in recording.resources:
        r = copy.deepcopy(original)
        if r.type == AGENT_POOL:
            r.inputs["tags"] = {
                k: v for k, v in (r.inputs.get("tags") or {}).items() if not k.endswith("nvidia.com_gpu")
            }
        stripped.append(r)
    return Recording(resources=stripped)


def test_shared_pools_scale_from_zero_for_their_whole_quota_only_with_the_device_tag(shared: Recording) -> None:
    """At zero the autoscaler's template takes whole GPUs from the SKU: without the tag it believes a T4 node
    holds one one-device pod, so the team's 8-pod job wants 8 nodes of a 2-node pool and never provisions."""
    assert not shared_pool_fill_problems(shared), "with the tag, 8 pods fit the 2 nodes the template now offers"
    problems = shared_pool_fill_problems(_without_gpu_tags(shared))
    assert any("gput4" in p for p in problems) and any("a100mps" in p for p in problems), (
        f"the check must fail both shared pools without their tag: {problems}"
    )


def test_kueue_quota_on_a_shared_pool_is_what_its_nodes_advertise(shared: Recording) -> None:
    nominal: dict[str, int] = {}
    for queue in shared.of_type(CLUSTER_QUEUE):
        for group in queue.inputs["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    if resource["name"] == GPU:
                        nominal[flavor["name"]] = nominal.get(flavor["name"], 0) + int(resource["nominalQuota"])
    for name in ("gput4", "a100mps"):
        pool = _pool(shared, name)
        advertised = int(pool["maxCount"]) * whole_node_gpus(pool, shared)
        assert nominal[name] == advertised, f"{name}: the team holds the whole pool, counted in shared devices"


def test_a_team_holding_whole_shared_pools_is_charged_what_their_nodes_cost(shared: Recording) -> None:
    """Priced per shared device (the VM-hour over the devices a node advertises), a team holding every device of a
    pool pays exactly the pool's nodes at maxCount: not replicas times more."""
    pools = cost.pool_capacities(shared)
    (ceiling,) = cost.team_quota_ceilings(shared, pools)
    nodes = {"gput4": ("Standard_NC4as_T4_v3", 2), "a100mps": ("Standard_NC24ads_A100_v4", 1)}
    expected = sum(VM_HOURLY[size].usd * count * HOURS_PER_MONTH for size, count in nodes.values())
    assert ceiling.gpus == 10 and math.isclose(ceiling.monthly, expected, rel_tol=1e-3), (
        f"{ceiling.gpus} devices at ${ceiling.monthly:,.0f}/month, the nodes cost ${expected:,.0f}"
    )


def test_chargeback_prices_a_shared_device_hour_at_its_share_of_the_vm(shared: Recording) -> None:
    """Chargeback multiplies the nvidia.com/gpu a pod requests by this price: a node's devices for an hour must
    cost that node's hour, whatever the sharing."""
    (group,) = [g for g in shared.of_type(RULE_GROUP) if "chargeback" in g.name]
    (price_rule,) = [r for r in group.inputs["rules"] if r["record"] == GPU_PRICE]
    for name, size in (("gput4", "Standard_NC4as_T4_v3"), ("a100mps", "Standard_NC24ads_A100_v4")):
        found = re.search(rf'vector\(([0-9.]+)\), "gpu_pool", "{name}"', price_rule["expression"])
        assert found, f"{name}: no price series in {price_rule['expression']}"
        node_hour = float(found.group(1)) * whole_node_gpus(_pool(shared, name), shared)
        assert math.isclose(node_hour, VM_HOURLY[size].usd, rel_tol=1e-3), (
            f"{name}: its devices for an hour are charged ${node_hour:.3f}, the VM costs ${VM_HOURLY[size].usd}"
        )
