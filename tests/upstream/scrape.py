"""A small, faithful model of how managed Prometheus turns a PodMonitor and a pod's /metrics into stored series.

Independent of the program's label contract: it reads the PodMonitor object as recorded and applies the
upstream semantics, so a test can ask "which labels does the scrape really store?".

Upstream, read at these versions (what Azure's metrics add-on builds on):
- Azure/prometheus-collector tag v7.1.1-main-07-21-2026-39583fd5: `otelcollector/otel-allocator` turns
  azmonitoring.coreos.com PodMonitors into scrape jobs with prometheus-operator v0.92.0's ConfigGenerator
  (`internal/watcher/promOperator.go`; no OverrideHonorLabels, no podTargetLabels, no enforced namespace label).
- prometheus-operator v0.92.0 `pkg/prometheus/promcfg.go`: `generatePodMonitorConfig`, `initRelabelings`,
  `generateRunningFilter`, `generateRelabelConfig`, `AddHonorLabels`.
- Prometheus v3.12.0 (the module Azure pins as v0.312.0): `discovery/kubernetes/pod.go` `buildPod` (meta
  labels, one target per container port), `model/relabel/relabel.go` (defaults, actions), `scrape/target.go`
  `PopulateLabels` (job and instance defaults, meta labels dropped), `scrape/scrape.go` `mutateSampleLabels`
  (honor_labels, `exported_` renaming) and `verifyLabelLimits`.
- Azure/prometheus-collector's node-exporter job: see `node_exporter_target`.
Not modelled: sharding (a hashmod into a `__tmp` label that changes no stored label), TLS and auth.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Labels = dict[str, str]

META = "__meta_kubernetes_"
RELABEL_DEFAULTS: Mapping[str, Any] = {"action": "replace", "separator": ";", "regex": "(.*)", "replacement": "$1"}


def sanitize(name: str) -> str:
    """Prometheus's (and the operator's) label-name sanitising: anything but [a-zA-Z0-9_] becomes `_`."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


# --- relabelling (model/relabel/relabel.go) ----------------------------------------------------------------


def expand(template: str, match: re.Match[str]) -> str:
    """Go's Regexp.Expand: `$1`, `${1}`, `$name`, `${name}`, `$$`; an unknown group expands to nothing."""

    def group(name: str) -> str:
        try:
            value = match.group(int(name) if name.isdigit() else name)
        except (IndexError, re.error):
            return ""
        return value or ""

    out: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if char != "$" or i + 1 == len(template):
            out.append(char)
            i += 1
            continue
        nxt = template[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "{":
            end = template.find("}", i + 2)
            if end < 0:
                out.append(char)
                i += 1
                continue
            out.append(group(template[i + 2 : end]))
            i = end + 1
        else:
            name = re.match(r"[A-Za-z0-9_]*", template[i + 1 :])
            assert name is not None
            if not name.group(0):
                out.append(char)
                i += 1
                continue
            out.append(group(name.group(0)))
            i += 1 + len(name.group(0))
    return "".join(out)


def relabel(labels: Mapping[str, str], configs: Iterable[Mapping[str, Any]]) -> Labels | None:
    """Apply Prometheus relabel configs (YAML keys); None when the target or sample is dropped."""
    lb = dict(labels)
    for given in configs:
        cfg = {**RELABEL_DEFAULTS, **given}
        action = str(cfg["action"]).lower()
        regex = re.compile(f"^(?:{cfg['regex']})$")
        value = str(cfg["separator"]).join(lb.get(name, "") for name in cfg.get("source_labels", []))
        target = cfg.get("target_label", "")
        if action == "keep" and not regex.match(value):
            return None
        if action == "drop" and regex.match(value):
            return None
        if action == "keepequal" and lb.get(target, "") != value:
            return None
        if action == "dropequal" and lb.get(target, "") == value:
            return None
        if action == "replace":
            match = regex.match(value)
            if match is None:
                continue
            name = expand(target, match)
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
                continue
            result = expand(str(cfg["replacement"]), match)
            if result:
                lb[name] = result
            else:
                lb.pop(name, None)
        elif action in ("lowercase", "uppercase"):
            lb[target] = value.lower() if action == "lowercase" else value.upper()
        elif action == "labelmap":
            for name, label_value in list(lb.items()):
                match = regex.match(name)
                if match:
                    lb[expand(str(cfg["replacement"]), match)] = label_value
        elif action == "labeldrop":
            lb = {k: v for k, v in lb.items() if not regex.match(k)}
        elif action == "labelkeep":
            lb = {k: v for k, v in lb.items() if regex.match(k)}
        elif action not in ("keep", "drop", "keepequal", "dropequal"):
            raise NotImplementedError(f"relabel action {action!r} is not modelled")
        lb = {k: v for k, v in lb.items() if v != ""}  # labels.Builder drops empty values
    return lb


# --- PodMonitor -> scrape config (prometheus-operator v0.92.0 promcfg.go) -----------------------------------


@dataclass(frozen=True)
class ScrapeConfig:
    job_name: str
    honor_labels: bool
    namespaces: tuple[str, ...] | None
    """Namespaces the pod discovery watches; None: all."""
    metrics_path: str
    interval: str
    relabel_configs: list[dict[str, Any]]
    metric_relabel_configs: list[dict[str, Any]]
    label_limit: int = 0
    label_name_length_limit: int = 0
    label_value_length_limit: int = 0


def _operator_relabelings(items: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """generateRelabelConfig: the CR's camelCase RelabelConfig into Prometheus YAML keys, action lowercased."""
    keys = {
        "sourceLabels": "source_labels",
        "separator": "separator",
        "targetLabel": "target_label",
        "regex": "regex",
        "modulus": "modulus",
        "replacement": "replacement",
        "action": "action",
    }
    out: list[dict[str, Any]] = []
    for item in items or []:
        unknown = set(item) - set(keys)
        assert not unknown, f"RelabelConfig has no field(s) {unknown}; the CRD would reject the monitor"
        converted = {keys[k]: v for k, v in item.items() if v not in (None, "", [])}
        if "action" in converted:
            converted["action"] = str(converted["action"]).lower()
        out.append(converted)
    return out


def pod_monitor_scrape_configs(monitor: Mapping[str, Any]) -> list[ScrapeConfig]:
    """The scrape jobs the operator generates for one PodMonitor object (one per podMetricsEndpoint)."""
    namespace = monitor["metadata"]["namespace"]
    name = monitor["metadata"]["name"]
    spec = monitor["spec"]
    selector = spec.get("selector") or {}
    ns_selector = spec.get("namespaceSelector") or {}
    namespaces = None if ns_selector.get("any") else tuple(ns_selector.get("matchNames") or [namespace])
    configs: list[ScrapeConfig] = []
    for index, ep in enumerate(spec.get("podMetricsEndpoints") or []):
        relabelings: list[dict[str, Any]] = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
        if ep.get("filterRunning", True):
            relabelings.append({"action": "drop", "source_labels": [f"{META}pod_phase"], "regex": "(Failed|Succeeded)"})
        for key in sorted(selector.get("matchLabels") or {}):
            value = selector["matchLabels"][key]
            relabelings.append(
                {
                    "action": "keep",
                    "source_labels": [f"{META}pod_label_{sanitize(key)}", f"{META}pod_labelpresent_{sanitize(key)}"],
                    "regex": f"({value});true",
                }
            )
        for expression in selector.get("matchExpressions") or []:
            key, operator = sanitize(expression["key"]), expression["operator"]
            values = "|".join(expression.get("values") or [])
            both = [f"{META}pod_label_{key}", f"{META}pod_labelpresent_{key}"]
            present = [f"{META}pod_labelpresent_{key}"]
            relabelings.append(
                {
                    "In": {"action": "keep", "source_labels": both, "regex": f"({values});true"},
                    "NotIn": {"action": "drop", "source_labels": both, "regex": f"({values});true"},
                    "Exists": {"action": "keep", "source_labels": present, "regex": "true"},
                    "DoesNotExist": {"action": "drop", "source_labels": present, "regex": "true"},
                }[operator]
            )
        port = ep.get("port")
        if port:
            relabelings.append({"action": "keep", "source_labels": [f"{META}pod_container_port_name"], "regex": port})
        elif ep.get("portNumber"):
            relabelings.append(
                {
                    "action": "keep",
                    "source_labels": [f"{META}pod_container_port_number"],
                    "regex": str(ep["portNumber"]),
                }
            )
        relabelings += [
            {"source_labels": [f"{META}namespace"], "target_label": "namespace"},
            {"source_labels": [f"{META}pod_container_name"], "target_label": "container"},
            {"source_labels": [f"{META}pod_name"], "target_label": "pod"},
        ]
        for label in spec.get("podTargetLabels") or []:
            relabelings.append(
                {
                    "source_labels": [f"{META}pod_label_{sanitize(label)}"],
                    "target_label": sanitize(label),
                    "regex": "(.+)",
                    "replacement": "${1}",
                }
            )
        relabelings.append({"target_label": "job", "replacement": f"{namespace}/{name}"})
        if spec.get("jobLabel"):
            relabelings.append(
                {
                    "source_labels": [f"{META}pod_label_{sanitize(spec['jobLabel'])}"],
                    "target_label": "job",
                    "regex": "(.+)",
                    "replacement": "${1}",
                }
            )
        if port:
            relabelings.append({"target_label": "endpoint", "replacement": port})
        relabelings += _operator_relabelings(ep.get("relabelings"))
        configs.append(
            ScrapeConfig(
                job_name=f"podMonitor/{namespace}/{name}/{index}",
                honor_labels=bool(ep.get("honorLabels", False)),
                namespaces=namespaces,
                metrics_path=ep.get("path") or "/metrics",
                interval=ep.get("interval") or "30s",
                relabel_configs=relabelings,
                metric_relabel_configs=_operator_relabelings(ep.get("metricRelabelings")),
                label_limit=int(spec.get("labelLimit") or 0),
                label_name_length_limit=int(spec.get("labelNameLengthLimit") or 0),
                label_value_length_limit=int(spec.get("labelValueLengthLimit") or 0),
            )
        )
    return configs


# --- discovery and targets (discovery/kubernetes/pod.go, scrape/target.go) ----------------------------------


@dataclass(frozen=True)
class Port:
    name: str
    number: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class Container:
    name: str
    ports: tuple[Port, ...] = ()


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    labels: Mapping[str, str]
    node: str
    ip: str
    containers: tuple[Container, ...]
    phase: str = "Running"


@dataclass
class ScrapeTarget:
    labels: Labels
    """Labels after relabelling; `__`-prefixed ones (address, scheme...) never reach a series."""

    @property
    def public_labels(self) -> Labels:
        return {k: v for k, v in self.labels.items() if not k.startswith("__")}


@dataclass
class Target(ScrapeTarget):
    """A target found by pod discovery."""

    pod: Pod


def discovered(pod: Pod) -> list[Labels]:
    """The pod role's target groups: one label set per container port (a port-less container gets one)."""
    common: Labels = {
        f"{META}namespace": pod.namespace,
        f"{META}pod_name": pod.name,
        f"{META}pod_ip": pod.ip,
        f"{META}pod_ready": "true",
        f"{META}pod_phase": pod.phase,
        f"{META}pod_node_name": pod.node,
        f"{META}pod_host_ip": "10.224.0.4",
        f"{META}pod_uid": f"uid-{pod.name}",
    }
    for key, value in pod.labels.items():
        common[f"{META}pod_label_{sanitize(key)}"] = value
        common[f"{META}pod_labelpresent_{sanitize(key)}"] = "true"
    found: list[Labels] = []
    for container in pod.containers:
        base = {**common, f"{META}pod_container_name": container.name, f"{META}pod_container_init": "false"}
        if not container.ports:
            found.append({**base, "__address__": pod.ip})
        for port in container.ports:
            found.append(
                {
                    **base,
                    "__address__": f"{pod.ip}:{port.number}",
                    f"{META}pod_container_port_name": port.name,
                    f"{META}pod_container_port_number": str(port.number),
                    f"{META}pod_container_port_protocol": port.protocol,
                }
            )
    return found


def populate(config: ScrapeConfig, found: Labels) -> Labels | None:
    """PopulateLabels for one discovered target: scrape defaults, relabelling, meta labels gone, instance."""
    labels = {
        **found,
        "job": config.job_name,
        "__scrape_interval__": config.interval,
        "__metrics_path__": config.metrics_path,
        "__scheme__": "http",
    }
    relabelled = relabel(labels, config.relabel_configs)
    if relabelled is None:
        return None
    relabelled = {k: v for k, v in relabelled.items() if not k.startswith("__meta_")}
    relabelled.setdefault("instance", relabelled["__address__"])
    return relabelled


def targets(config: ScrapeConfig, pods: Iterable[Pod]) -> list[Target]:
    """Every discovered pod target the scrape config keeps."""
    result: list[Target] = []
    for pod in pods:
        if config.namespaces is not None and pod.namespace not in config.namespaces:
            continue
        for meta in discovered(pod):
            labels = populate(config, meta)
            if labels is not None:
                result.append(Target(labels, pod))
    return result


# --- managed Prometheus's own node-exporter job ------------------------------------------------------------
# Azure/prometheus-collector tag v7.1.1-main-07-21-2026-39583fd5 (commit 39583fd5): the add-on's ama-metrics-node
# DaemonSet runs MODE=advanced with NODE_EXPORTER_TARGETPORT 19100 and MINIMAL_INGESTION_PROFILE=true
# (otelcollector/deploy/addon-chart/azure-monitor-metrics-addon/templates/ama-metrics-daemonset.yaml). On a Linux
# node it then scrapes the node exporter with otelcollector/configmapparser/default-prom-configs/
# nodeexporterDefaultDs.yml: job_name `node`, one static target $$NODE_IP$$:$$NODE_EXPORTER_TARGETPORT$$, instance
# replaced by $$NODE_NAME$$, `metrics_path` copied from __metrics_path__, label limits 63/511/1023
# (otelcollector/shared/configmap/mp/prometheus-config-merger.go fills the placeholders). The minimal ingestion
# profile keeps only `nodeexporterRegex_minimal_mac` (shared/configmap/mp/tomlparser-default-targets-metrics-keep-
# list.go), appended after the (empty) user keep list as a metric relabelling `keep` on __name__
# (AppendMetricRelabelConfig).
NODE_EXPORTER_PORT = 19100
NODE_EXPORTER_MINIMAL_METRICS = (
    "node_filesystem_readonly|node_memory_MemTotal_bytes|node_cpu_seconds_total|node_memory_MemAvailable_bytes"
    "|node_memory_Buffers_bytes|node_memory_Cached_bytes|node_memory_MemFree_bytes|node_memory_Slab_bytes"
    "|node_filesystem_avail_bytes|node_filesystem_size_bytes|node_time_seconds|node_exporter_build_info|node_load1"
    "|node_vmstat_pgmajfault|node_network_receive_bytes_total|node_network_transmit_bytes_total"
    "|node_network_receive_drop_total|node_network_transmit_drop_total|node_disk_io_time_seconds_total"
    "|node_disk_io_time_weighted_seconds_total|node_load5|node_load15|node_disk_read_bytes_total"
    "|node_disk_written_bytes_total|node_uname_info|kubernetes_build_info|node_boot_time_seconds"
)


def node_exporter_target(node: str, node_ip: str) -> tuple[ScrapeConfig, ScrapeTarget]:
    """The `node` job one node's ama-metrics-node pod runs against the node exporter on that node."""
    config = ScrapeConfig(
        job_name="node",
        honor_labels=False,
        namespaces=None,
        metrics_path="/metrics",
        interval="30s",
        relabel_configs=[
            {"source_labels": ["__metrics_path__"], "regex": "(.*)", "target_label": "metrics_path"},
            {"source_labels": ["__address__"], "replacement": node, "target_label": "instance"},
        ],
        metric_relabel_configs=[
            {"source_labels": ["__name__"], "action": "keep", "regex": f"|{NODE_EXPORTER_MINIMAL_METRICS}"}
        ],
        label_limit=63,
        label_name_length_limit=511,
        label_value_length_limit=1023,
    )
    labels = populate(config, {"__address__": f"{node_ip}:{NODE_EXPORTER_PORT}"})
    assert labels is not None, "a static target has no relabelling that drops it"
    return config, ScrapeTarget(labels)


# --- the scrape itself (scrape/scrape.go) -------------------------------------------------------------------


@dataclass
class Series:
    labels: Labels
    value: float

    @property
    def name(self) -> str:
        return self.labels["__name__"]


_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def parse_exposition(text: str) -> list[Series]:
    """The Prometheus text format: `name{label="value",...} value` lines; comments and blank lines skipped."""
    samples: list[Series] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        labels: Labels = {"__name__": match["name"]}
        body = match["labels"] or ""
        position = 0
        while position < len(body):
            label = _LABEL.match(body, position)
            assert label, f"bad label syntax at {body[position:]!r}"
            labels[label.group(1)] = re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), label[2])
            position = label.end()
        samples.append(Series({k: v for k, v in labels.items() if v != ""}, float(match["value"])))
    return samples


class ScrapeRejected(AssertionError):
    """The scrape fails as a whole (a label limit): Prometheus stores none of its samples."""


@dataclass
class ScrapeResult:
    series: list[Series] = field(default_factory=list[Series])
    up: Series | None = None


def scrape(
    target: ScrapeTarget, config: ScrapeConfig, exposition: str, external_labels: Mapping[str, str]
) -> ScrapeResult:
    """mutateSampleLabels + metric relabelling + label limits, then the agent's external labels (`cluster`)."""
    target_labels = target.public_labels
    result = ScrapeResult()
    for sample in parse_exposition(exposition):
        labels = dict(sample.labels)
        if config.honor_labels:
            for name, value in target_labels.items():
                labels.setdefault(name, value)
        else:
            clashes = sorted(((n, labels[n]) for n in target_labels if labels.get(n)), key=lambda c: len(c[0]))
            labels.update(target_labels)
            for name, value in clashes:
                renamed = name
                while True:
                    renamed = "exported_" + renamed
                    if not labels.get(renamed):
                        labels[renamed] = value
                        break
        relabelled = relabel(labels, config.metric_relabel_configs)
        if relabelled is None:
            continue
        if config.label_limit and len(relabelled) > config.label_limit:
            raise ScrapeRejected(f"label_limit exceeded: {sample.name} has {len(relabelled)} labels")
        for name, value in relabelled.items():
            if config.label_name_length_limit and len(name) > config.label_name_length_limit:
                raise ScrapeRejected(f"label_name_length_limit exceeded by {name}")
            if config.label_value_length_limit and len(value) > config.label_value_length_limit:
                raise ScrapeRejected(f"label_value_length_limit exceeded by {name}")
        result.series.append(Series({**external_labels, **relabelled}, sample.value))
    result.up = Series({**external_labels, **target_labels, "__name__": "up"}, 1.0)
    return result


# --- who the scraper connects to (for the network policy contract) -------------------------------------------

# Managed Prometheus's collectors (ama-metrics) run in kube-system: every scrape is a connection from there.
SCRAPER_NAMESPACE = "kube-system"


def scraped_pods(monitor: Mapping[str, Any]) -> list[tuple[tuple[str, ...] | None, dict[str, str]]]:
    """Per scrape job of a PodMonitor or ServiceMonitor: the namespaces its targets are in (None: all) and the pod
    labels its selector requires (a ServiceMonitor selects Services; their pods' labels are not recorded: {})."""
    spec = monitor["spec"]
    selector = spec.get("namespaceSelector") or {}
    namespaces = (
        None if selector.get("any") else tuple(selector.get("matchNames") or [monitor["metadata"]["namespace"]])
    )
    labels = dict((spec.get("selector") or {}).get("matchLabels") or {}) if monitor["kind"] == "PodMonitor" else {}
    endpoints = spec.get("podMetricsEndpoints") or spec.get("endpoints") or []
    return [(namespaces, labels) for _ in endpoints]
