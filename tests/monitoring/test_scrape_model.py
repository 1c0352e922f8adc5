"""The scrape and PromQL models behave as upstream does: the label tests are only as good as these oracles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.upstream.promql import Evaluator, selectors
from tests.upstream.scrape import (
    Container,
    Pod,
    Port,
    ScrapeRejected,
    Series,
    node_exporter_target,
    parse_exposition,
    pod_monitor_scrape_configs,
    relabel,
    scrape,
    targets,
)

EXPORTER = Pod(
    "gpu-monitoring",
    "dcgm-exporter-abcde",
    {"app.kubernetes.io/name": "dcgm-exporter"},
    "aks-gpu-1",
    "10.244.1.7",
    (Container("exporter", (Port("metrics", 9400),)),),
)


def _monitor(**endpoint: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "gpu-monitoring", "name": "dcgm"},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}},
            "podMetricsEndpoints": [{"port": "metrics", **endpoint}],
        },
    }


def _stored(exposition: str, **endpoint: Any) -> dict[str, str]:
    (config,) = pod_monitor_scrape_configs(_monitor(**endpoint))
    (target,) = targets(config, [EXPORTER])
    (series,) = scrape(target, config, exposition, {"cluster": "aks"}).series
    return series.labels


def test_the_add_ons_node_exporter_job_stores_job_node_and_the_node_name() -> None:
    # nodeexporterDefaultDs.yml at v7.1.1-main-07-21-2026-39583fd5: `job_name: node`, instance <- $$NODE_NAME$$.
    config, target = node_exporter_target("aks-system-1-vmss000000", "10.224.0.4")
    assert target.labels["__address__"] == "10.224.0.4:19100", "the node's IP and the add-on's node-exporter port"
    assert target.public_labels == {"job": "node", "instance": "aks-system-1-vmss000000", "metrics_path": "/metrics"}
    stored = scrape(target, config, "node_load1 0.4\nnode_netstat_Tcp_RetransSegs 3", {"cluster": "aks"}).series
    assert [s.name for s in stored] == ["node_load1"], "the minimal ingestion profile keeps only its listed metrics"


def test_a_pod_monitor_target_carries_the_scraped_pods_own_names() -> None:
    (config,) = pod_monitor_scrape_configs(_monitor())
    (target,) = targets(config, [EXPORTER])
    assert target.public_labels == {
        "namespace": "gpu-monitoring",
        "pod": "dcgm-exporter-abcde",
        "container": "exporter",
        "endpoint": "metrics",
        "job": "gpu-monitoring/dcgm",  # promcfg.go: <namespace>/<name> unless jobLabel or a relabeling says otherwise
        "instance": "10.244.1.7:9400",  # target.go: instance defaults to the address
    }


def test_without_honor_labels_a_clashing_exposed_label_is_stored_as_exported() -> None:
    labels = _stored('m{namespace="serving",pod="llm-1",gpu="0"} 1')
    assert (labels["namespace"], labels["exported_namespace"]) == ("gpu-monitoring", "serving")
    assert (labels["pod"], labels["exported_pod"]) == ("dcgm-exporter-abcde", "llm-1")
    assert labels["gpu"] == "0" and labels["cluster"] == "aks", "labels without a clash keep their name"


def test_an_already_exported_name_pushes_the_clash_one_prefix_further() -> None:
    labels = _stored('m{pod="a",exported_pod="b"} 1')
    assert (labels["pod"], labels["exported_pod"], labels["exported_exported_pod"]) == ("dcgm-exporter-abcde", "b", "a")


def test_with_honor_labels_the_exposed_value_wins_and_missing_ones_come_from_the_target() -> None:
    labels = _stored('m{namespace="serving"} 1', honorLabels=True)
    assert labels["namespace"] == "serving" and "exported_namespace" not in labels
    assert labels["pod"] == "dcgm-exporter-abcde", "a label the exporter does not expose comes from the target"


def test_an_empty_exposed_value_is_no_label_and_clashes_with_nothing() -> None:
    labels = _stored('m{namespace=""} 1')
    assert labels["namespace"] == "gpu-monitoring" and "exported_namespace" not in labels


def test_endpoint_relabelings_run_after_the_operators_own() -> None:
    relabeling = {"action": "replace", "targetLabel": "job", "replacement": "dcgm-exporter"}
    labels = _stored("m 1", relabelings=[relabeling])
    assert labels["job"] == "dcgm-exporter", "a user relabeling overrides the generated <namespace>/<name> job"


def test_the_selector_and_port_decide_which_pods_are_targets() -> None:
    (config,) = pod_monitor_scrape_configs(_monitor())
    other_labels = Pod("gpu-monitoring", "x", {"app.kubernetes.io/name": "other"}, "n", "10.0.0.1", EXPORTER.containers)
    other_port = Pod("gpu-monitoring", "y", EXPORTER.labels, "n", "10.0.0.2", (Container("c", (Port("http", 80),)),))
    other_namespace = Pod("default", "z", EXPORTER.labels, "n", "10.0.0.3", EXPORTER.containers)
    finished = Pod("gpu-monitoring", "w", EXPORTER.labels, "n", "10.0.0.4", EXPORTER.containers, phase="Succeeded")
    found = targets(config, [EXPORTER, other_labels, other_port, other_namespace, finished])
    assert [t.pod.name for t in found] == [EXPORTER.name], "only running, selected pods on the named port"


def test_label_limit_rejects_the_whole_scrape() -> None:
    monitor = _monitor()
    monitor["spec"]["labelLimit"] = 63
    (config,) = pod_monitor_scrape_configs(monitor)
    (target,) = targets(config, [EXPORTER])
    labels = lambda n: ",".join(f'l{i}="v"' for i in range(n))  # noqa: E731
    # 6 target labels + __name__ join the exposed ones before the limit is checked.
    assert len(scrape(target, config, f"m{{{labels(56)}}} 1", {}).series) == 1
    with pytest.raises(ScrapeRejected):
        scrape(target, config, f"m{{{labels(57)}}} 1", {})


def test_relabel_follows_prometheus_defaults_and_go_expansion() -> None:
    labels = {"a": "x-1", "b": "y"}
    assert relabel(labels, [{"source_labels": ["a"], "regex": "x-(.*)", "target_label": "c"}]) == {**labels, "c": "1"}
    assert relabel(labels, [{"source_labels": ["a", "b"], "target_label": "c", "replacement": "${1}z"}]) == {
        **labels,
        "c": "x-1;yz",
    }
    assert relabel(labels, [{"target_label": "a", "replacement": ""}]) == {"b": "y"}, "empty replacement deletes"
    assert relabel(labels, [{"action": "keep", "source_labels": ["b"], "regex": "y|z"}]) == labels
    assert relabel(labels, [{"action": "drop", "source_labels": ["b"], "regex": "y"}]) is None


def test_exposition_parser_reads_labels_and_escapes() -> None:
    (sample,) = parse_exposition('# HELP m x\nm{a="1",b="q\\"uote"} 2.5\n')
    assert sample.labels == {"__name__": "m", "a": "1", "b": 'q"uote'} and sample.value == 2.5


# --- PromQL model ---------------------------------------------------------------------------------------------

WORLD = [
    Series({"__name__": "u", "node": "n1", "gpu": "0", "pod": "a"}, 10.0),
    Series({"__name__": "u", "node": "n1", "gpu": "1"}, 30.0),
    Series({"__name__": "u", "node": "n2", "gpu": "0", "pod": "b"}, 50.0),
    Series({"__name__": "k", "node": "n1", "pool": "gpu"}, 1.0),
    Series({"__name__": "k", "node": "n3", "pool": "gpu"}, 1.0),
]


def test_promql_selectors_aggregations_and_set_operators() -> None:
    e = Evaluator(WORLD)
    assert e.evaluate('avg(u{pod=~"a|b"})') == [Series({}, 30.0)]
    assert e.evaluate('u{pod!=""} > 99') == [s for s in WORLD if s.labels.get("pod")], "comparisons keep every series"
    by_node = e.evaluate("max by (node) (u)")
    assert by_node == [Series({"node": "n1"}, 30.0), Series({"node": "n2"}, 50.0)]
    silent = e.evaluate("max by (node) (k) unless on (node) max by (node) (u)")
    assert silent == [Series({"node": "n3"}, 1.0)]
    assert e.problems == []


def test_promql_records_grouping_on_a_label_some_series_lack() -> None:
    e = Evaluator(WORLD)
    e.evaluate("sum by (pod) (u)")
    assert len(e.problems) == 1 and "pod" in e.problems[0], "a GPU without the label would merge into one group"


def test_promql_vector_matching_keeps_lhs_labels_and_label_replace_copies() -> None:
    e = Evaluator(WORLD)
    ratio = e.vector("u / on (node, gpu) u")
    assert {tuple(sorted(s.labels)) for s in ratio} == {("gpu", "node")}, "one-to-one `on` keeps only the on labels"
    renamed = e.vector('label_replace(k, "host", "$1", "node", "(.*)")')
    assert [s.labels["host"] for s in renamed] == ["n1", "n3"]
    assert [s.metric for s in selectors('a{x="1"} / on (y) b[5m]')] == ["a", "b"]
