"""Team views and chargeback: the recorded recording rules and the team dashboard evaluated over the series managed
Prometheus stores (DCGM through the recorded PodMonitor, kube-state-metrics, Kueue through the recorded
ServiceMonitor), the Grafana objects `pulumi up` creates, and how they authenticate."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from aks_gpu_platform.components import recording_rules as rr
from aks_gpu_platform.components.grafana_dashboards import DASHBOARDS_DIR
from aks_gpu_platform.config.gpu_catalog import gpu_sku
from aks_gpu_platform.config.prices import VM_HOURLY
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS
from tests.gpu_metrics_world import (
    SERVICE_MONITOR,
    GpuWorkload,
    build_world,
    kube_state_pod_series,
    kueue_scrape_problems,
    kueue_series,
)
from tests.promql_model import Evaluator, matches, selectors
from tests.scrape_model import Series

RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
AGENT_POOL = "azure-native:containerservice:AgentPool"
BUSY, IDLE = 80.0, 1.0


def _teams(recording: Recording) -> dict[str, str]:
    """Team (ClusterQueue) -> namespace, as the recorded ClusterQueues admit them."""
    return {
        q.inputs["metadata"]["name"]: q.inputs["spec"]["namespaceSelector"]["matchLabels"][
            "kubernetes.io/metadata.name"
        ]
        for q in recording.of_type(CLUSTER_QUEUE)
    }


def _workloads(recording: Recording) -> list[GpuWorkload]:
    """Per team: a busy two-GPU Job pod and an idle one-GPU Job pod in the team's namespace."""
    out: list[GpuWorkload] = []
    for team, namespace in sorted(_teams(recording).items()):
        out.append(GpuWorkload(namespace, f"{team}-pretrain-0-x7k2p", gpus=2, utilization=BUSY))
        out.append(GpuWorkload(namespace, f"{team}-eval-q9z8w", gpus=1, utilization=IDLE))
    return out


def _record(series: list[Series], rules: list[dict[str, Any]]) -> tuple[list[Series], list[str]]:
    """Evaluates recording rules in order, as one group does, adding each rule's output to the world."""
    world = list(series)
    problems: list[str] = []
    for rule in rules:
        evaluator = Evaluator(world)
        out = evaluator.vector(rule["expression"])
        problems += [f"{rule['record']}: {p}" for p in evaluator.problems]
        problems += [f"{rule['record']}: selects nothing: {e}" for e in _empty_selectors(world, rule["expression"])]
        world += [Series({**s.labels, **rule.get("labels", {}), "__name__": rule["record"]}, s.value) for s in out]
    return world, problems


def _empty_selectors(world: list[Series], query: str) -> list[str]:
    empty: list[str] = []
    for selector in selectors(query):
        matchers = [*selector.matchers, *([("__name__", "=", selector.metric)] if selector.metric else [])]
        if not any(matches(s.labels, matchers) for s in world):
            empty.append(f"{selector.metric}{selector.matchers}")
    return empty


@pytest.fixture(scope="module")
def team_worlds(
    recordings: dict[str, Recording],
) -> dict[str, tuple[Recording, list[Series], dict[str, list[tuple[str, int]]]]]:
    """Each stack's stored series with every team running a busy and an idle GPU pod, after the chargeback rules."""
    worlds: dict[str, tuple[Recording, list[Series], dict[str, list[tuple[str, int]]]]] = {}
    for stack, recording in recordings.items():
        workloads = _workloads(recording)
        world = build_world(recording, workloads)
        series = [*world.series, *kube_state_pod_series(recording, world, workloads), *kueue_series(recording)]
        rules = recording.one(RULE_GROUP, "chargeback").inputs["rules"]
        recorded, problems = _record(series, rules)
        assert problems == [], f"{stack}: chargeback rules group or match on labels the series lack: {problems}"
        worlds[stack] = (recording, recorded, world.placement)
    return worlds


def _pool_of_node(series: list[Series], node: str) -> str:
    """The `gpu-pool` label kube-state-metrics reports for the node."""
    (pool,) = {
        s.labels["label_gpu_pool"]
        for s in series
        if s.labels["__name__"] == "kube_node_labels" and s.labels["node"] == node
    }
    return pool


def _by_team_pool(series: list[Series], name: str) -> dict[tuple[str, str], float]:
    return {(s.labels["team"], s.labels["gpu_pool"]): s.value for s in series if s.labels["__name__"] == name}


@pytest.mark.parametrize("stack", STACKS)
def test_allocated_and_idle_gpus_are_counted_per_team_and_pool(team_worlds: dict[str, Any], stack: str) -> None:
    recording, series, placement = team_worlds[stack]
    team_of = {ns: team for team, ns in _teams(recording).items()}
    allocated: dict[tuple[str, str], float] = {}
    idle: dict[tuple[str, str], float] = {}
    for workload in _workloads(recording):
        for node, _ in placement[workload.pod]:
            key = (team_of[workload.namespace], _pool_of_node(series, node))
            allocated[key] = allocated.get(key, 0) + 1
            idle[key] = idle.get(key, 0) + (workload.utilization < 5)
    assert _by_team_pool(series, rr.GPUS_ALLOCATED) == allocated, (
        "a team is charged for exactly the GPUs its running pods request, on the pool they run on"
    )
    assert {k: v for k, v in _by_team_pool(series, rr.GPUS_IDLE).items() if v} == {
        k: v for k, v in idle.items() if v
    }, "idle means held by the team and under the idle threshold: busy GPUs must not be charged as waste"


@pytest.mark.parametrize("stack", STACKS)
def test_daily_cost_is_gpu_hours_at_the_pools_list_price(team_worlds: dict[str, Any], stack: str) -> None:
    recording, series, _ = team_worlds[stack]
    sizes = {p.inputs["nodeLabels"].get("gpu-pool"): p.inputs["vmSize"] for p in recording.of_type(AGENT_POOL)}
    for hours_name, cost_name in (
        (rr.GPU_HOURS_ALLOCATED, rr.GPU_COST_ALLOCATED),
        (rr.GPU_HOURS_IDLE, rr.GPU_COST_IDLE),
    ):
        hours = _by_team_pool(series, hours_name)
        costs = _by_team_pool(series, cost_name)
        assert hours and set(costs) == set(hours), f"every team and pool with {hours_name} must be priced"
        for (team, pool), usd in costs.items():
            sku = gpu_sku(sizes[pool])
            assert sku is not None
            per_gpu_hour = VM_HOURLY[sizes[pool]].usd / sku.gpus_per_vm
            assert usd == pytest.approx(hours[(team, pool)] * per_gpu_hour, rel=1e-3), (
                f"{team} on {pool}: a GPU-hour costs the VM's hourly list price shared by its GPUs"
            )
    estimates = {s.labels["estimate"] for s in series if s.labels["__name__"] == rr.GPU_COST_ALLOCATED}
    assert estimates <= {"true", "false"} and estimates, "each cost says whether its price is an estimate"


def _dashboard(name: str) -> dict[str, Any]:
    return json.loads((DASHBOARDS_DIR / f"{name}.json").read_text())


@pytest.mark.parametrize("stack", STACKS)
def test_every_team_dashboard_panel_returns_data_for_each_team(team_worlds: dict[str, Any], stack: str) -> None:
    recording, series, _ = team_worlds[stack]
    cluster = recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    board = _dashboard("gpu-teams")
    known = {label for s in series for label in s.labels}
    for variable in (v for v in board["templating"]["list"] if v["type"] == "query"):
        metric, label = re.fullmatch(r"label_values\((\S+),\s*(\w+)\)", variable["definition"]).groups()  # type: ignore[union-attr]
        assert any(s.labels.get(label) for s in series if s.labels["__name__"] == metric), (
            f"${variable['name']} lists nothing"
        )
    targets = [(p["title"], t) for p in board["panels"] for t in p.get("targets", [])]
    assert len(targets) >= 15
    for team in _teams(recording):
        for title, target in targets:
            query = target["expr"].replace("$cluster", cluster).replace("$team", team)
            evaluator = Evaluator(series)
            shown = evaluator.vector(query)
            assert _empty_selectors(series, query) == [], f"{title}: a selector matches nothing"
            assert evaluator.problems == [], f"{title}: {evaluator.problems}"
            assert shown, f"{title} shows no data for team {team}"
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")):
                assert all(s.labels.get(label) for s in shown), f"{title}: legend {{{{{label}}}}} renders empty"
            used = {m[0] for sel in selectors(query) for m in sel.matchers}
            assert used <= known, f"{title} filters on {used - known}, labels no stored series has"


def test_kueue_panels_count_the_leader_only(team_worlds: dict[str, Any]) -> None:
    recording, series, _ = team_worlds["prod"]
    board = _dashboard("gpu-teams")
    (target,) = next(p for p in board["panels"] if p["title"] == "Admitted active workloads per ClusterQueue")[
        "targets"
    ]
    cluster = recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    shown = Evaluator(series).vector(target["expr"].replace("$cluster", cluster).replace("$team", ".+"))
    assert shown and all(s.value == 1.0 for s in shown), (
        "with two Kueue replicas both export metrics; summing the follower's too would double every queue"
    )


def test_plan_shows_each_teams_monthly_quota_ceiling(recordings: dict[str, Recording]) -> None:
    from tools.cost import pool_capacities, team_quota_ceilings

    recording = recordings["prod"]
    ceilings = {c.team: c for c in team_quota_ceilings(recording, pool_capacities(recording))}
    assert set(ceilings) == set(_teams(recording)), "every team's quota has a ceiling"
    sizes = {p.inputs["nodeLabels"].get("gpu-pool"): p.inputs["vmSize"] for p in recording.of_type(AGENT_POOL)}
    for queue in recording.of_type(CLUSTER_QUEUE):
        expected = 0.0
        for flavor in queue.inputs["spec"]["resourceGroups"][0]["flavors"]:
            gpus = next(r["nominalQuota"] for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
            sku = gpu_sku(sizes[flavor["name"]])
            assert sku is not None
            expected += gpus * VM_HOURLY[sizes[flavor["name"]]].usd / sku.gpus_per_vm * 730
        ceiling = ceilings[queue.inputs["metadata"]["name"]]
        assert ceiling.monthly == pytest.approx(expected, rel=1e-3), "quota GPUs x GPU-hour list price x 730 h"


@pytest.mark.parametrize("stack", STACKS)
def test_managed_prometheus_can_scrape_every_kueue_controller(recordings: dict[str, Recording], stack: str) -> None:
    (monitor,) = recordings[stack].of_type(SERVICE_MONITOR)
    (endpoint,) = monitor.inputs["spec"]["endpoints"]
    problems = kueue_scrape_problems(endpoint)
    assert not problems, f"every Kueue target would be down and every Kueue panel empty: {problems}"
