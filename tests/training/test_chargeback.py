"""Team views and chargeback over a modelled day (tests/upstream/metrics_day.py): the recorded chargeback rules
evaluated every
minute on the series managed Prometheus stores (GPU exporters through the recorded PodMonitors, kube-state-metrics,
Kueue through the recorded ServiceMonitor), and the team dashboard's queries on the recorded series at the end of the
day, checked against the day's truth.

The contract "every vendor and sharing mode counted" runs here over dev, prod, each fleet member, a stack with an
AMD pool beside NVIDIA's and one with time-sliced and MPS pools: device-hours (nvidia.com/gpu or amd.com/gpu: a GPU,
a MIG slice or a shared replica) allocated and idle per team and pool match the day, in the same unit."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from aks_gpu_platform.components.monitoring import metrics_labels as labels
from aks_gpu_platform.components.monitoring import recording_rules as rr
from aks_gpu_platform.components.monitoring.grafana import DASHBOARDS_DIR
from aks_gpu_platform.config.catalog.prices import VM_HOURLY
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from tests.harness.contract_stacks import (
    DAY_STACKS,
    chargeback_group,
    contract_day,
    contract_recording,
    day_with,
    platform_recording,
)
from tests.upstream.autoscaler_template import DEVICE_PLUGIN_RESOURCES, whole_node_gpus
from tests.upstream.gpu_metrics_world import SERVICE_MONITOR, kueue_scrape_problems
from tests.upstream.metrics_day import DAY, Day, evaluate_group, team_quotas, tolerance, truth
from tests.upstream.promql import Evaluator, History, duration_seconds, matches, selectors
from tests.upstream.scheduling import AGENT_POOL

CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
IDLE_THRESHOLD = "monitoring.alerts.thresholds.idleUtilizationPercent"


def idle_threshold(rules: list[dict[str, Any]]) -> float:
    (idle,) = [r for r in rules if r["record"] == rr.GPUS_IDLE]
    found = re.search(r"< bool ([0-9.]+)", idle["expression"])
    assert found, f"the idle rule compares utilisation with {IDLE_THRESHOLD}"
    return float(found.group(1))


def by_team_pool(day: Day, record: str) -> dict[tuple[str, str], float]:
    return {(s.labels["team"], s.labels["gpu_pool"]): s.value for s in day.at_end(record)}


def mismatches(day: Day, rules: list[dict[str, Any]]) -> list[str]:
    """Where the day's recorded device-hours differ from its truth by more than the rules' resolution allows."""
    expected = truth(day.pods, idle_threshold(rules))
    slack = tolerance(day.pods, duration_seconds(rr.IDLE_WINDOW))
    found: list[str] = []
    for record, column in ((rr.GPU_HOURS_ALLOCATED, 0), (rr.GPU_HOURS_IDLE, 1)):
        recorded = by_team_pool(day, record)
        for key, figures in sorted(expected.items()):
            got = recorded.get(key, 0.0)
            if abs(got - figures[column]) > slack[key]:
                found.append(f"{record} {key}: {got:.2f} device-hours, the day had {figures[column]:.2f}")
        found += [f"{record} {key}: {recorded[key]:.2f} for no pod of the day" for key in set(recorded) - set(expected)]
    return found


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_the_chargeback_rules_group_and_match_on_labels_the_series_have(stack: str) -> None:
    day = contract_day(stack)
    assert day.problems == [], f"{stack}: chargeback rules group or match on labels the series lack: {day.problems}"


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_device_hours_allocated_and_idle_over_a_day_match_what_each_team_held(stack: str) -> None:
    """Allocated: requested by a Running pod (not one still Pending, nor one that finished); idle: allocated while its
    GPU averages under the threshold; summed over the 24 hours before the end of the day."""
    day = contract_day(stack)
    rules, _ = chargeback_group(day.recording)
    expected = truth(day.pods, idle_threshold(rules))
    assert all(allocated > 0 and idle > 0 for allocated, idle in expected.values()), "the day exercises every pool"
    assert {pool for _, pool in expected} == {p.node.pool for p in day.pods}
    problems = mismatches(day, rules)
    assert not problems, f"{stack}: teams are charged for what they did not hold, or not for what they did:\n" + (
        "\n".join(problems)
    )


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_idle_device_hours_never_exceed_allocated_ones(stack: str) -> None:
    """One unit for both: waste is part of what a team holds, on shared and AMD pools too."""
    day = contract_day(stack)
    allocated, idle = by_team_pool(day, rr.GPU_HOURS_ALLOCATED), by_team_pool(day, rr.GPU_HOURS_IDLE)
    for key, hours in idle.items():
        assert hours <= allocated.get(key, 0.0) + 0.1, f"{key}: {hours:.2f} idle of {allocated.get(key, 0):.2f} held"


def test_the_contract_catches_chargeback_that_counts_only_nvidia_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """The motivating defect: `resource="nvidia_com_gpu"` left AMD teams at zero allocated hours."""
    recording = platform_recording("amd")
    rules, interval = chargeback_group(recording)
    monkeypatch.setattr(rr, "GPU_RESOURCES_STORED", ("nvidia_com_gpu",))
    nvidia_only = rr.chargeback_rules(*_arguments(recording, rules))
    problems = mismatches(day_with(recording, nvidia_only, interval), rules)
    assert any("mi300x" in p and rr.GPU_HOURS_ALLOCATED in p for p in problems), problems


def test_the_contract_catches_idle_hours_in_physical_gpus_on_a_shared_pool() -> None:
    """The motivating defect: idle counted the physical GPUs DCGM names a pod on (one per shared GPU) while
    allocated counted the replicas requested."""
    recording = platform_recording("shared-gpus")
    rules, interval = chargeback_group(recording)
    teams, prices, threshold, _ = _arguments(recording, rules)
    unshared = rr.chargeback_rules(teams, prices, threshold)  # every pool read as unshared
    problems = mismatches(day_with(recording, unshared, interval), rules)
    assert any(rr.GPU_HOURS_IDLE in p for p in problems), problems


def _arguments(
    recording: Recording, rules: list[dict[str, Any]]
) -> tuple[dict[str, str], dict[str, tuple[float, bool]], int, list[str]]:
    """What the recorded chargeback group was rendered from: teams, prices, threshold and shared pools."""
    teams = {
        q.inputs["metadata"]["name"]: q.inputs["spec"]["namespaceSelector"]["matchLabels"][
            "kubernetes.io/metadata.name"
        ]
        for q in recording.of_type(CLUSTER_QUEUE)
    }
    (price_rule,) = [r for r in rules if r["record"] == rr.GPU_PRICE]
    prices = {
        pool: (float(usd), estimate == "true")
        for usd, pool, estimate in re.findall(
            r'vector\(([0-9.e+-]+)\), "gpu_pool", "([^"]+)", "", ""\), "estimate", "(\w+)"', price_rule["expression"]
        )
    }
    (idle,) = [r for r in rules if r["record"] == rr.GPUS_IDLE]
    shared = re.findall(r'gpu_pool=~"([^"]+)"', idle["expression"])
    return teams, prices, int(idle_threshold(rules)), shared[0].split("|") if shared else []


def _pool_sizes(recording: Recording) -> dict[str, dict[str, Any]]:
    return {p.inputs["nodeLabels"].get("gpu-pool"): p.inputs for p in recording.of_type(AGENT_POOL)}


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_daily_cost_is_device_hours_at_the_pools_list_price(stack: str) -> None:
    """A device-hour costs the VM-hour shared by the devices one node advertises (GPUs, MIG slices, replicas)."""
    day = contract_day(stack)
    pools = _pool_sizes(day.recording)
    for hours_name, cost_name in (
        (rr.GPU_HOURS_ALLOCATED, rr.GPU_COST_ALLOCATED),
        (rr.GPU_HOURS_IDLE, rr.GPU_COST_IDLE),
    ):
        hours, costs = by_team_pool(day, hours_name), by_team_pool(day, cost_name)
        priced = {key for key in hours if pools[key[1]]["vmSize"] in VM_HOURLY}
        assert priced and set(costs) == priced, (
            f"every team and pool with {hours_name} on a size with a list price is priced; the others show hours only"
        )
        for (team, pool), usd in costs.items():
            per_device_hour = VM_HOURLY[pools[pool]["vmSize"]].usd / whole_node_gpus(pools[pool], day.recording)
            assert usd == pytest.approx(hours[(team, pool)] * per_device_hour, rel=1e-3), (
                f"{team} on {pool}: a device-hour costs the VM's hourly list price over the devices of a node"
            )
    estimates = {s.labels["estimate"] for s in day.at_end(rr.GPU_COST_ALLOCATED)}
    assert estimates <= {"true", "false"} and estimates, "each cost says whether its price is an estimate"


def _dashboard(name: str) -> dict[str, Any]:
    return json.loads((DASHBOARDS_DIR / f"{name}.json").read_text())


def _empty_selectors(evaluator: Evaluator, query: str) -> list[str]:
    """Selectors of `query` no stored series matches; a MIG slice's selector is exempt in a world without MIG."""
    empty: list[str] = []
    has_mig = any(s.labels.get(labels.MIG_INSTANCE) for s in evaluator.world)
    for selector in selectors(query):
        if not has_mig and (labels.MIG_INSTANCE, "!=", "") in selector.matchers:
            continue
        matchers = [*selector.matchers, *([("__name__", "=", selector.metric)] if selector.metric else [])]
        if not any(matches(s.labels, matchers) for s in evaluator.candidates(selector)):
            empty.append(f"{selector.metric}{selector.matchers}")
    return empty


def _panel_query(target: dict[str, Any], cluster: str, team: str) -> str:
    return target["expr"].replace("$cluster", cluster).replace("$team", team)


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_every_team_dashboard_panel_shows_each_team_at_the_end_of_the_day(stack: str) -> None:
    day = contract_day(stack)
    assert day.evaluator is not None
    cluster = day.recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    board = _dashboard("gpu-teams")
    for variable in (v for v in board["templating"]["list"] if v["type"] == "query"):
        metric, label = re.fullmatch(r"label_values\((\S+),\s*(\w+)\)", variable["definition"]).groups()  # type: ignore[union-attr]
        assert any(s.labels.get(label) for s in day.at_end(metric)), f"${variable['name']} lists nothing"
    targets = [(p["title"], t) for p in board["panels"] for t in p.get("targets", [])]
    assert len(targets) >= 15
    # GPU_I_ID is the label contract's MIG instance label: absent on a whole GPU, which is what GPU_I_ID="" selects.
    known = {label for s in day.evaluator.world for label in s.labels} | {labels.MIG_INSTANCE}
    for team in {p.team for p in day.pods}:
        for title, target in targets:
            query = _panel_query(target, cluster, team)
            day.evaluator.problems.clear()
            shown = day.at_end(query)
            assert _empty_selectors(day.evaluator, query) == [], f"{title}: a selector matches nothing"
            assert day.evaluator.problems == [], f"{title}: {day.evaluator.problems}"
            assert shown, f"{stack}: {title} shows no data for team {team}"
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")):
                assert all(s.labels.get(label) for s in shown), f"{title}: legend {{{{{label}}}}} renders empty"
            used = {m[0] for sel in selectors(query) for m in sel.matchers}
            assert used <= known, f"{title} filters on {used - known}, labels no stored series has"


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_the_teams_panels_show_the_days_figures(stack: str) -> None:
    """What a team reads: its devices held at the end of the day, and its device-hours over the day, every vendor."""
    day = contract_day(stack)
    cluster = day.recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    rules, _ = chargeback_group(day.recording)
    expected = truth(day.pods, idle_threshold(rules))
    slack = tolerance(day.pods, duration_seconds(rr.IDLE_WINDOW))
    panels = {p["title"]: p for p in _dashboard("gpu-teams")["panels"]}
    for team in {p.team for p in day.pods}:
        held = sum(p.devices for p in day.pods if p.team == team and p.phase(DAY) == "Running")
        (allocated,) = panels["GPUs allocated per team"]["targets"]
        shown = day.at_end(_panel_query(allocated, cluster, team))
        assert [s.value for s in shown] == [held], f"{team} holds {held} devices at midnight"
        hours_target, idle_target = panels["GPU-hours per team, per day"]["targets"]
        for target, column in ((hours_target, 0), (idle_target, 1)):
            ((shown_hours),) = day.at_end(_panel_query(target, cluster, team))
            want = sum(figures[column] for (t, _), figures in expected.items() if t == team)
            allowed = sum(s for (t, _), s in slack.items() if t == team)
            assert abs(shown_hours.value - want) <= allowed, (
                f"{team}: the panel shows {shown_hours.value:.2f} device-hours, the day had {want:.2f}"
            )


def test_kueue_panels_count_the_leader_only() -> None:
    day = contract_day("prod")
    board = _dashboard("gpu-teams")
    (target,) = next(p for p in board["panels"] if p["title"] == "Admitted active workloads per ClusterQueue")[
        "targets"
    ]
    cluster = day.recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    shown = day.at_end(_panel_query(target, cluster, ".+"))
    assert shown and all(s.value == 1.0 for s in shown), (
        "with two Kueue replicas both export metrics; summing the follower's too would double every queue"
    )


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet"])
def test_managed_prometheus_can_scrape_every_kueue_controller(stack: str) -> None:
    for monitor in contract_recording(stack).of_type(SERVICE_MONITOR):
        (endpoint,) = monitor.inputs["spec"]["endpoints"]
        problems = kueue_scrape_problems(endpoint)
        assert not problems, f"every Kueue target would be down and every Kueue panel empty: {problems}"


def test_plan_shows_each_teams_monthly_quota_ceiling() -> None:
    from aks_gpu_platform.plan.cost import pool_capacities, team_quota_ceilings

    recording = contract_recording("prod")
    ceilings = {c.team: c for c in team_quota_ceilings(recording, pool_capacities(recording))}
    queues = recording.of_type(CLUSTER_QUEUE)
    assert set(ceilings) == {q.inputs["metadata"]["name"] for q in queues}, "every team's quota has a ceiling"
    pools = _pool_sizes(recording)
    for queue in queues:
        expected = 0.0
        for flavor in queue.inputs["spec"]["resourceGroups"][0]["flavors"]:
            devices = sum(
                r["nominalQuota"] for r in flavor["resources"] if r["name"] in DEVICE_PLUGIN_RESOURCES.values()
            )
            if not devices:
                continue  # the CPU pool's flavor: no GPU-hour in the ceiling
            pool = pools[flavor["name"]]
            expected += devices * VM_HOURLY[pool["vmSize"]].usd / whole_node_gpus(pool, recording) * 730
        ceiling = ceilings[queue.inputs["metadata"]["name"]]
        assert ceiling.monthly == pytest.approx(expected, rel=1e-3), "quota devices x device-hour list price x 730 h"


# --- MIG slices: DCGM reports no DCGM_FI_DEV_GPU_UTIL per MIG instance ---------------------------------------------


def _mig_world(recording: Recording, gpu_util_on_slices: float | None) -> list[History]:
    """Ten minutes of one MIG node: `busy` holds slice 1 of GPU 0 and keeps it at 80 %, `idle` holds slice 2 and
    leaves it at 0 %, both Running. What the GPU Operator's exporter stores for a MIG slice (DCGM exporter
    internal/pkg/collector: one series per GPU instance, `GPU_I_ID`/`GPU_I_PROFILE`, the slice's pod under the label
    contract): DCGM_FI_PROF_GR_ENGINE_ACTIVE as a 0-1 ratio; DCGM_FI_DEV_GPU_UTIL is not supported per MIG instance
    (NVIDIA/dcgm-exporter issues #50, #430: absent; #216: reported as 0), so `gpu_util_on_slices` is None or 0."""
    cluster = recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    (pool,) = [p for p in recording.of_type(AGENT_POOL) if (p.inputs.get("nodeLabels") or {}).get("gpu-pool")]
    pool_name = pool.inputs["nodeLabels"]["gpu-pool"]
    ((team, (namespace, _)),) = [(t, q) for t, q in team_quotas(recording).items() if pool_name in q[1]]
    node = f"aks-{pool.outputs['name']}-12345678-vmss000000"
    world: list[History] = []

    def stored(labels: dict[str, str], value: float, step: int) -> None:
        history = History({"cluster": cluster, **labels})
        history.extend(0, step, 600 // step + 1, value)
        world.append(history)

    ksm = {"job": "kube-state-metrics"}
    stored({"__name__": "kube_node_labels", **ksm, "node": node, "label_gpu_pool": pool_name}, 1.0, 30)
    for instance, (pod, ratio) in enumerate((("busy", 0.8), ("idle", 0.0)), start=1):
        pod_name = f"{team}-{pod}-0-a1b2c"
        where = {"namespace": namespace, "pod": pod_name}
        stored({"__name__": "kube_pod_status_phase", **ksm, **where, "phase": "Running"}, 1.0, 30)
        request = {**ksm, **where, "container": "main", "node": node, "resource": "nvidia_com_gpu"}
        stored({"__name__": "kube_pod_container_resource_requests", **request}, 1.0, 30)
        dcgm = {
            "job": "dcgm-exporter",
            "namespace": "gpu-operator",
            "pod": "nvidia-dcgm-exporter-x1y2z",
            "gpu": "0",
            "GPU_I_ID": str(instance),
            "GPU_I_PROFILE": "3g.40gb",
            labels.NODE: node,
            labels.WORKLOAD_NAMESPACE: namespace,
            labels.WORKLOAD_POD: pod_name,
        }
        stored({"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", **dcgm}, ratio, 30)
        if gpu_util_on_slices is not None:
            stored({"__name__": "DCGM_FI_DEV_GPU_UTIL", **dcgm}, gpu_util_on_slices, 30)
    return world


def _time_sliced_mig() -> Recording:
    from tests.gpu.test_scheduling import variant_config

    config = variant_config("gpu-operator-mig")
    (pool,) = config["aks-gpu-platform:gpuPools"]
    pool["sharing"] = {"mode": "timeSlicing", "replicas": 2}
    return run_stack("dev", config)


@pytest.mark.parametrize("sharing", ["unshared", "time-sliced"])
@pytest.mark.parametrize("gpu_util_on_slices", [None, 0.0], ids=["absent", "zero"])
def test_a_mig_slice_is_idle_only_while_its_own_engine_is(gpu_util_on_slices: float | None, sharing: str) -> None:
    """A team on a MIG pool is charged idle hours for the slice it leaves idle, never for the slice it keeps busy,
    whichever way the exporter leaves DCGM_FI_DEV_GPU_UTIL out for MIG, with the slices time-sliced or not."""
    recording = platform_recording("gpu-operator-mig") if sharing == "unshared" else _time_sliced_mig()
    rules, interval = chargeback_group(recording)
    world = _mig_world(recording, gpu_util_on_slices)
    evaluator, problems = evaluate_group(world, rules, interval, until=600)
    assert not problems, problems
    allocated = {s.labels["team"]: s.value for s in evaluator.evaluate_at(rr.GPUS_ALLOCATED, 600)}
    idle = {s.labels["team"]: s.value for s in evaluator.evaluate_at(rr.GPUS_IDLE, 600)}
    assert allocated and set(allocated.values()) == {2.0}, f"both slices are held by Running pods: {allocated}"
    assert idle == dict.fromkeys(allocated, 1.0), (
        f"one slice idle, one at 80 %: the team pays one idle device, not {idle} (MIG utilisation unread)"
    )
