"""A modelled day of what managed Prometheus stores for a recorded stack, and the stack's recording rules evaluated
over it at their group's interval: chargeback and the team dashboard are checked against the day's truth, for every
GPU vendor and sharing mode a stack has.

The day (seconds from midnight): each team runs pods on every GPU pool it has quota on, each pod going through the
phases a Job's pod does: Pending without a node, Pending on its node (images pulling), Running, then Succeeded (the
pod object stays, as a finished Job's pods do) or deleted. `team_day` writes the scenario; `truth` what a day of it
costs, from the definitions (a device is allocated while a Running pod requests it, idle while its physical GPU
averages under the threshold), independently of the rules.

What is stored, per source (each a `History` of runs, see tests/upstream/promql.py):
- GPU exporters, scraped through the recorded PodMonitors (tests/upstream/scrape.py) at the PodMonitor's interval:
  NVIDIA's DCGM exporter as tests/upstream/gpu_metrics_world.py renders it; AMD's device-metrics-exporter from the pod
  ROCm/gpu-operator v1.5.1 internal/metricsexporter/metricsexporter.go builds (labels `daemonset-name` = the
  DeviceConfig's name, `default` in the chart's helm-charts-k8s/templates/default-deviceconfig.yaml, and
  `app.kubernetes.io/name: metrics-exporter`; container `metrics-exporter-container`; port `exporter-port` =
  the DeviceConfig's `metricsExporter.port`, read from the recorded release) with the names and labels of
  ROCm/device-metrics-exporter v1.5.1 (pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go).
  Which pod a GPU names: the kubelet's pod-resources API lists a pod's devices from admission (before its images
  are pulled) until it terminates; NVIDIA/dcgm-exporter internal/pkg/transformation/kubernetes.go (`toDeviceToPod`,
  tag 4.2.3-4.1.1) keeps one pod per device ID, so a time-sliced or MPS GPU names the last pod listed.
  A shared GPU's utilisation is what its Running pods add up to, at most 100.
- kube-state-metrics (docs/metrics/workload/pod-metrics.md), scraped every 30 s (the add-on's default interval):
  `kube_pod_container_resource_requests` (`node` once scheduled; `nvidia_com_gpu` / `amd_com_gpu`),
  `kube_pod_status_phase`, `kube_pod_owner`; per node `kube_node_labels` (allowlisted labels) and
  `kube_node_status_allocatable`.
- A series that leaves a scrape, or a rule's output, gets a staleness marker at the next scrape or evaluation
  (Prometheus v3.12.0 scrape/scrape.go, rules/group.go).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aks_gpu_platform.testing import Recording
from tests.upstream.autoscaler_template import DEVICE_PLUGIN_RESOURCES, pool_sharing, vendor_of, whole_node_gpus
from tests.upstream.azure_vm_sizes import gpus_per_vm
from tests.upstream.gpu_metrics_world import (
    CLUSTER,
    POD_MONITOR,
    GpuWorkload,
    _counters,  # pyright: ignore[reportPrivateUsage]
    _exporter_template,  # pyright: ignore[reportPrivateUsage]
    _kube_node_labels,  # pyright: ignore[reportPrivateUsage]
    dcgm_exposition,
    job_of,
    node_label,
)
from tests.upstream.promql import Evaluator, History, duration_seconds
from tests.upstream.scheduling import AGENT_POOL, RELEASE, generic_agent_pools
from tests.upstream.scrape import Container, Pod, Port, Series, pod_monitor_scrape_configs, sanitize, scrape, targets

DAY = 24 * 3600
MINUTE = 60
KSM_INTERVAL = 30
KSM_TARGET = {"job": "kube-state-metrics", "instance": "ama-metrics-ksm.kube-system.svc.cluster.local:8080"}
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
# Scrapes and events fall at different seconds of the minute, so no event coincides with a scrape or an evaluation.
KSM_OFFSET, EXPORTER_OFFSET, EVENT_SECOND = 7, 13, 20
AMD_DEVICE_CONFIG = "default"
AMD_EXPORTER_NAMESPACE_CHART = "gpu-operator-charts"
# Counters chargeback reads; an exporter that is not configured to emit one fails the build.
DAY_COUNTERS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")
BUSY, IDLE = 80.0, 1.0


def at(hours: float) -> int:
    """A time of the day, `EVENT_SECOND` past the minute."""
    return int(hours * 3600) // MINUTE * MINUTE + EVENT_SECOND


@dataclass(frozen=True)
class DayNode:
    name: str
    pool: str
    vendor: str
    gpus: int
    """Physical GPUs."""
    replicas: int
    """Devices each physical GPU is advertised as (time-slicing or MPS replicas; 1 unshared)."""
    labels: Mapping[str, str] = field(hash=False, compare=False)


@dataclass(frozen=True)
class PodDay:
    team: str
    namespace: str
    pod: str
    node: DayNode
    gpu_slots: tuple[int, ...]
    """Physical GPU index on the node of each device the pod holds."""
    utilization: float
    """What the pod drives its GPUs to while Running."""
    created: int
    scheduled: int | None
    running: int | None = None
    finished: int | None = None
    deleted: int | None = None
    stalled_slots: tuple[int, ...] = ()
    """GPUs of the pod that stay idle while it runs (a rank that waits on the others)."""

    def slot_utilization(self, gpu: int) -> float:
        return 0.0 if gpu in self.stalled_slots else self.utilization

    @property
    def devices(self) -> int:
        return len(self.gpu_slots)

    @property
    def resource(self) -> str:
        return DEVICE_PLUGIN_RESOURCES[self.node.vendor]

    def phase(self, t: float) -> str | None:
        """The pod's phase at `t`, None before it exists or once deleted."""
        if t < self.created or (self.deleted is not None and t >= self.deleted):
            return None
        if self.finished is not None and t >= self.finished:
            return "Succeeded"
        if self.running is not None and t >= self.running:
            return "Running"
        return "Pending"

    def holds_devices(self, t: float) -> bool:
        """Admitted to its node and not terminated: the kubelet lists its devices."""
        return self.scheduled is not None and t >= self.scheduled and self.phase(t) in ("Pending", "Running")

    def events(self) -> list[int]:
        return [t for t in (self.created, self.scheduled, self.running, self.finished, self.deleted) if t is not None]


def _pools(recording: Recording) -> list[dict[str, Any]]:
    pools = [{**p.inputs, "agentPoolName": p.outputs["name"]} for p in recording.of_type(AGENT_POOL)]
    return pools + generic_agent_pools(recording)


def gpu_nodes(recording: Recording, pool: Mapping[str, Any], count: int) -> list[DayNode]:
    """`count` nodes of a GPU pool, named as AKS names VMSS nodes, with the labels the pool gives its nodes."""
    gpus = gpus_per_vm(str(pool["vmSize"]))
    assert gpus, f"{pool['vmSize']}: not a GPU size"
    assert not pool.get("gpuInstanceProfile"), "MIG slices are not modelled by the day"
    devices = whole_node_gpus(pool, recording)
    labels = dict(pool.get("nodeLabels") or {})
    return [
        DayNode(
            f"aks-{pool['agentPoolName']}-12345678-vmss{i:06d}",
            labels["gpu-pool"],
            vendor_of(pool),
            gpus,
            devices // gpus,
            labels,
        )
        for i in range(count)
    ]


def team_quotas(recording: Recording) -> dict[str, tuple[str, list[str]]]:
    """Team (ClusterQueue) -> (namespace, the GPU pools it has quota on)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for queue in recording.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"):
        spec = queue.inputs["spec"]
        namespace = spec["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        pools = [
            flavor["name"]
            for group in spec["resourceGroups"]
            for flavor in group["flavors"]
            if any(
                r["name"] in DEVICE_PLUGIN_RESOURCES.values() and float(r["nominalQuota"]) > 0
                for r in flavor["resources"]
            )
        ]
        found[queue.inputs["metadata"]["name"]] = (namespace, pools)
    return found


def team_day(recording: Recording) -> list[PodDay]:
    """Per team and GPU pool it has quota on, on nodes of its own within the pool's maxCount:
    - unshared pool: on nodes of four GPUs or more, `stalled` (two devices, one of them idle) from 06:00 to 18:00;
      `train` (two devices where a node has two GPUs) created at 00:00, scheduled at 01:00, pulling
      images until 03:00, busy until 15:00, then Succeeded, deleted at 20:00; `eval` (one device) idle from 05:10 to
      the end of the day (from 15:10 when the team has one single-GPU node); `queued` (one device) Pending without a
      node all day;
    - shared pool (one device per pod, on one GPU): `busy` and `quiet` share it from 02:00 to 14:00 (the GPU is busy,
      so neither is idle; `busy` Pending on the node from 01:00), then `idle-a` and `idle-b`, both idle, from 15:00
      to the end of the day."""
    pools = {str((p.get("nodeLabels") or {}).get("gpu-pool")): p for p in _pools(recording)}
    teams = sorted(team_quotas(recording).items())
    pods: list[PodDay] = []
    for pool_name, pool in pools.items():
        users = [(team, namespace) for team, (namespace, team_pools) in teams if pool_name in team_pools]
        if not users:
            continue
        capacity = int(pool["maxCount"])
        shared = pool_sharing(pool, recording).replicas > 1
        probe = gpu_nodes(recording, pool, 1)[0]
        per_team = 1 if shared or probe.gpus >= 3 or capacity < 2 * len(users) else 2
        assert per_team * len(users) <= capacity, f"{pool_name}: the day needs more nodes than maxCount"
        nodes = gpu_nodes(recording, pool, per_team * len(users))
        for k, (team, namespace) in enumerate(users):
            mine = nodes[k * per_team : (k + 1) * per_team]

            def pod(
                name: str,
                node: DayNode,
                slots: tuple[int, ...],
                util: float,
                times: tuple[int | None, ...],
                team: str = team,
                namespace: str = namespace,
                pool_name: str = pool_name,
            ) -> PodDay:
                return PodDay(team, namespace, f"{team}-{pool_name}-{name}", node, slots, util, *times)  # pyright: ignore[reportArgumentType]

            if shared:
                pods += [
                    pod("busy-0-a1b2c", mine[0], (0,), BUSY, (at(1), at(1), at(2), at(14))),
                    pod("quiet-0-d3e4f", mine[0], (0,), 0.0, (at(2), at(2), at(2), at(14))),
                    pod("idle-0-g5h6i", mine[0], (0,), IDLE, (at(15), at(15), at(15))),
                    pod("idle-1-j7k8l", mine[0], (0,), IDLE, (at(15), at(15), at(15))),
                ]
                continue
            two = tuple(range(min(2, mine[0].gpus)))
            if mine[0].gpus >= 4:
                # A two-rank job with one rank stalled: one of its two devices idles.
                pods.append(
                    replace(
                        pod("stalled-0-r5s6t", mine[0], (2, 3), BUSY, (at(6), at(6), at(6), at(18))),
                        stalled_slots=(3,),
                    )
                )
            if mine[0].gpus >= 3:
                eval_node, eval_slot, eval_start = mine[0], mine[0].gpus - 1, at(5 + 1 / 6)
            elif len(mine) == 2:
                eval_node, eval_slot, eval_start = mine[1], 0, at(5 + 1 / 6)
            else:
                eval_node, eval_slot, eval_start = mine[0], 0, at(15 + 1 / 6)
            pods += [
                pod("train-0-x7k2p", mine[0], two, BUSY, (at(0), at(1), at(3), at(15), at(20))),
                pod("eval-q9z8w", eval_node, (eval_slot,), IDLE, (eval_start, eval_start, eval_start)),
                pod("queued-m3n4b", eval_node, (eval_slot,), BUSY, (at(4), None)),
            ]
    return pods


# --- truth ----------------------------------------------------------------------------------------------------


def _gpu_utilization(pods: Sequence[PodDay], node: DayNode, gpu: int, t: float) -> float:
    return min(
        100.0,
        sum(p.slot_utilization(gpu) for p in pods if p.node == node and gpu in p.gpu_slots and p.phase(t) == "Running"),
    )


def truth(pods: Sequence[PodDay], idle_threshold: float) -> dict[tuple[str, str], tuple[float, float]]:
    """(team, pool) -> (device-hours allocated, device-hours idle) over the day, from the definitions."""
    result: dict[tuple[str, str], tuple[float, float]] = {}
    moments = sorted({0, DAY, *(t for p in pods for t in p.events() if t < DAY)})
    for p in pods:
        key = (p.team, p.node.pool)
        allocated, idle = result.get(key, (0.0, 0.0))
        for start, end in itertools.pairwise(moments):
            if p.phase(start) != "Running":
                continue
            hours = (end - start) / 3600
            allocated += p.devices * hours
            for gpu in p.gpu_slots:
                if _gpu_utilization(pods, p.node, gpu, start) < idle_threshold:
                    idle += hours
        result[key] = (allocated, idle)
    return result


def tolerance(pods: Sequence[PodDay], window_seconds: float) -> dict[tuple[str, str], float]:
    """How far a rule-based figure may stray from the truth: each change of a device's state is seen up to a
    utilisation window, a scrape and an evaluation late."""
    slack: dict[tuple[str, str], float] = {}
    for p in pods:
        key = (p.team, p.node.pool)
        changes = len([t for t in (p.running, p.finished, p.deleted) if t is not None and t < DAY])
        slack[key] = slack.get(key, 0.0) + p.devices * changes * (window_seconds + 2 * MINUTE) / 3600
    return slack


# --- stored series ----------------------------------------------------------------------------------------------


class Store:
    """Series keyed by label set, sampled at an interval over spans of unchanged content."""

    def __init__(self) -> None:
        self.histories: dict[frozenset[tuple[str, str]], History] = {}

    def record(self, spans: Iterable[tuple[int, int, list[Series]]], interval: int, offset: int) -> None:
        """Each span (start, end, what one scrape returns) sampled at offset + k*interval in [start, end)."""
        previous: set[frozenset[tuple[str, str]]] = set()
        for start, end, series in spans:
            first = start + (offset - start) % interval
            count = 0 if first >= end else (end - 1 - first) // interval + 1
            if count == 0:
                continue
            current: set[frozenset[tuple[str, str]]] = set()
            for s in series:
                key = frozenset(s.labels.items())
                current.add(key)
                self.histories.setdefault(key, History(dict(s.labels))).extend(first, interval, count, s.value)
            for key in previous - current:
                self.histories[key].append(first, None, interval)  # staleness marker
            previous = current

    def series(self) -> list[History]:
        return list(self.histories.values())


def _spans(events: Iterable[int]) -> list[tuple[int, int]]:
    moments = sorted({0, DAY + 1, *(t for t in events if 0 < t <= DAY)})
    return list(itertools.pairwise(moments))


def _exporter_value(counter: str, holder: GpuWorkload | None) -> float:
    if counter == "DCGM_FI_DEV_GPU_UTIL":
        return holder.utilization if holder else 0.0
    if counter == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
        return holder.utilization / 100 if holder else 0.0
    return {"DCGM_FI_DEV_FB_USED": 70000.0, "DCGM_FI_DEV_FB_FREE": 10000.0, "DCGM_FI_DEV_GPU_TEMP": 65.0}.get(
        counter, 1.0
    )


def _holders(pods: Sequence[PodDay], node: DayNode, t: float) -> list[tuple[int, GpuWorkload | None]]:
    """Per physical GPU: the pod the exporter names (the last one listed on a shared GPU) and the GPU's utilisation."""
    gpus: list[tuple[int, GpuWorkload | None]] = []
    for gpu in range(node.gpus):
        holding = sorted(
            (p for p in pods if p.node == node and gpu in p.gpu_slots and p.holds_devices(t)), key=lambda p: p.pod
        )
        util = _gpu_utilization(pods, node, gpu, t)
        named = holding[-1] if holding else None
        gpus.append((gpu, GpuWorkload(named.namespace, named.pod, utilization=util) if named else None))
    return gpus


def _amd_exposition(node: DayNode, gpus: Sequence[tuple[int, GpuWorkload | None]]) -> str:
    lines: list[str] = []
    for metric in (
        "gpu_gfx_activity",
        "gpu_used_vram",
        "gpu_free_vram",
        "gpu_junction_temperature",
        "gpu_package_power",
    ):
        for index, holder in gpus:
            labels = {"card_model": "MI300X", "gpu_id": str(index), "hostname": node.name, "serial_number": f"S{index}"}
            if holder is not None:
                labels.update({"namespace": holder.namespace, "pod": holder.pod, "container": holder.container})
            value = {"gpu_gfx_activity": holder.utilization if holder else 0.0, "gpu_used_vram": 150000.0}.get(
                metric, 46000.0 if metric == "gpu_free_vram" else 1.0
            )
            body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines.append(f"{metric}{{{body}}} {value}")
    return "\n".join(lines) + "\n"


def _amd_exporter_pod(recording: Recording, node: DayNode, ip: str) -> Pod:
    (release,) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == AMD_EXPORTER_NAMESPACE_CHART]
    port = int(release.inputs["values"]["deviceConfig"]["spec"]["metricsExporter"]["port"])
    labels = {"daemonset-name": AMD_DEVICE_CONFIG, "app.kubernetes.io/name": "metrics-exporter"}
    container = Container("metrics-exporter-container", (Port("exporter-port", port),))
    return Pod(
        release.inputs["namespace"],
        f"{AMD_DEVICE_CONFIG}-metrics-exporter-{ip.rsplit('.', 1)[-1]}",
        labels,
        node.name,
        ip,
        (container,),
    )


def exporter_series(recording: Recording, pods: Sequence[PodDay], nodes: Sequence[DayNode], store: Store) -> None:
    cluster = recording.one(CLUSTER).outputs["name"]
    monitors = {m.inputs["metadata"]["name"]: m for m in recording.of_type(POD_MONITOR)}
    namespace, exporter_labels, container, port = _exporter_template(recording)
    counters = _counters(recording)
    assert set(DAY_COUNTERS) <= set(counters), "the exporter must emit the utilisation and memory counters"
    exporter_node_label = node_label(recording)
    for i, node in enumerate(nodes):
        ip = f"10.244.{i}.7"
        if node.vendor == "amd":
            (config,) = pod_monitor_scrape_configs(monitors["amd-device-metrics-exporter"].inputs)
            exporter = _amd_exporter_pod(recording, node, ip)
        else:
            (config,) = pod_monitor_scrape_configs(monitors["dcgm-exporter"].inputs)
            exporter = Pod(
                namespace,
                f"dcgm-exporter-{i:05d}",
                exporter_labels,
                node.name,
                ip,
                (Container(container, (Port("metrics", port),)),),
            )
        (target,) = targets(config, [exporter])
        spans: list[tuple[int, int, list[Series]]] = []
        for start, end in _spans(t for p in pods if p.node == node for t in p.events()):
            gpus = _holders(pods, node, start)
            if node.vendor == "amd":
                exposition = _amd_exposition(node, gpus)
            else:
                exposition = dcgm_exposition(node.name, gpus, counters, _exporter_value, exporter_node_label)
            result = scrape(target, config, exposition, {"cluster": cluster})
            assert result.up is not None
            spans.append((start, end, [*result.series, result.up]))
        store.record(spans, int(duration_seconds(config.interval)), EXPORTER_OFFSET)


def kube_state_series(recording: Recording, pods: Sequence[PodDay], nodes: Sequence[DayNode], store: Store) -> None:
    cluster = recording.one(CLUSTER).outputs["name"]
    target = {"cluster": cluster, **KSM_TARGET}
    for p in pods:
        spans: list[tuple[int, int, list[Series]]] = []
        for start, end in _spans(p.events()):
            phase = p.phase(start)
            if phase is None:
                spans.append((start, end, []))
                continue
            pod = {**target, "namespace": p.namespace, "pod": p.pod, "uid": f"uid-{p.pod}"}
            request = {
                **pod,
                "__name__": "kube_pod_container_resource_requests",
                "container": "main",
                "resource": sanitize(p.resource),
                "unit": "integer",
            }
            if p.scheduled is not None and start >= p.scheduled:
                request["node"] = p.node.name
            owner = {"owner_kind": "Job", "owner_name": job_of(p.pod), "owner_is_controller": "true"}
            series = [Series(request, float(p.devices)), Series({**pod, "__name__": "kube_pod_owner", **owner}, 1.0)]
            series += [
                Series({**pod, "__name__": "kube_pod_status_phase", "phase": ph}, 1.0 if ph == phase else 0.0)
                for ph in POD_PHASES
            ]
            spans.append((start, end, series))
        store.record(spans, KSM_INTERVAL, KSM_OFFSET)
    node_series = _kube_node_labels(recording, [(n.name, n.labels) for n in nodes], cluster)
    for node in nodes:
        labels = {**target, "__name__": "kube_node_status_allocatable", "node": node.name}
        labels.update({"resource": sanitize(DEVICE_PLUGIN_RESOURCES[node.vendor]), "unit": "integer"})
        node_series.append(Series(labels, float(node.gpus * node.replicas)))
    store.record([(0, DAY + 1, node_series)], KSM_INTERVAL, KSM_OFFSET)


@dataclass
class Day:
    """A recorded stack's day: the scenario, the stored series, and the rules' outputs."""

    recording: Recording
    pods: list[PodDay]
    world: list[History]
    problems: list[str] = field(default_factory=list[str])
    evaluator: Evaluator | None = None

    def at_end(self, query: str) -> list[Series]:
        assert self.evaluator is not None
        return self.evaluator.evaluate_at(query, DAY)


def evaluate_group(
    world: list[History], rules: Sequence[Mapping[str, Any]], interval: int, until: int = DAY
) -> tuple[Evaluator, list[str]]:
    """Evaluates a rule group every `interval` s up to `until`, as Prometheus's rules manager does: the rules in
    order, each seeing the outputs earlier rules wrote at the same evaluation (rules/group.go `Eval`)."""
    evaluator = Evaluator(world, thresholds_crossed=False)
    recorded: dict[str, dict[frozenset[tuple[str, str]], History]] = {rule["record"]: {} for rule in rules}
    last: dict[str, set[frozenset[tuple[str, str]]]] = {rule["record"]: set() for rule in rules}
    for t in range(interval, until + 1, interval):
        for rule in rules:
            outputs = evaluator.evaluate_at(rule["expression"], t)
            current: set[frozenset[tuple[str, str]]] = set()
            for s in outputs:
                labels = {**s.labels, **rule.get("labels", {}), "__name__": rule["record"]}
                key = frozenset(labels.items())
                current.add(key)
                history = recorded[rule["record"]].get(key)
                if history is None:
                    history = recorded[rule["record"]][key] = History(labels)
                    evaluator.add(history)
                history.append(t, s.value, interval)
            for key in last[rule["record"]] - current:
                recorded[rule["record"]][key].append(t, None, interval)
            last[rule["record"]] = current
    problems = sorted(set(evaluator.problems))
    return evaluator, problems


def build_day(recording: Recording, rules: Sequence[Mapping[str, Any]], interval: int) -> Day:
    """The day of `team_day` stored, and a rule group evaluated over it every `interval` seconds."""
    pods = team_day(recording)
    nodes = sorted({p.node for p in pods}, key=lambda n: n.name)
    store = Store()
    exporter_series(recording, pods, nodes, store)
    kube_state_series(recording, pods, nodes, store)
    day = Day(recording, pods, store.series())
    day.evaluator, day.problems = evaluate_group(day.world, rules, interval)
    return day


def group_interval(text: str) -> int:
    """An ISO 8601 duration of whole minutes (`PT1M`, `PT5M`), as Azure's rule groups take it, in seconds."""
    match = re.fullmatch(r"PT(\d+)M", text)
    assert match, f"rule group interval {text!r}"
    return int(match.group(1)) * MINUTE
