"""The contract "every vendor and sharing mode counted" beyond chargeback (tests/training/test_chargeback.py holds the
figures): every GPU query of the stacks (recording and alert rules, both dashboards) that selects one vendor's device
resource selects the other's too, and every GPU overview panel, evaluated at the end of each contract stack's
modelled day, counts the AMD pool's GPUs or says that it shows NVIDIA's only."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from aks_gpu_platform.components.monitoring import metrics_labels as labels
from aks_gpu_platform.components.monitoring.grafana import DASHBOARDS_DIR
from aks_gpu_platform.config.gpu.scheduling import AMD_GPU_RESOURCE, GPU_RESOURCE
from tests.harness.contract_stacks import CONTRACT_STACKS, DAY_STACKS, RULE_GROUP, contract_day, contract_recording
from tests.upstream.gpu_metrics_world import panel_query
from tests.upstream.metrics_day import DAY
from tests.upstream.promql import Evaluator, selectors
from tests.upstream.scrape import sanitize

# kube-state-metrics stores extended resources sanitised; Kueue's metrics carry them as written.
VENDOR_RESOURCES = (
    (sanitize(GPU_RESOURCE), sanitize(AMD_GPU_RESOURCE)),
    (GPU_RESOURCE, AMD_GPU_RESOURCE),
)
NVIDIA_ONLY = "NVIDIA only"


def _admits(op: str, value: str, name: str) -> bool:
    if op in ("=", "!="):
        return (value == name) == (op == "=")
    return (re.fullmatch(value, name) is not None) == (op == "=~")


def vendor_problems(where: str, query: str) -> list[str]:
    """A `resource` matcher that admits one vendor's device resource must admit the other's."""
    problems: list[str] = []
    for selector in selectors(query):
        for name, op, value in selector.matchers:
            if name != "resource":
                continue
            for pair in VENDOR_RESOURCES:
                admitted = [resource for resource in pair if _admits(op, value, resource)]
                if 0 < len(admitted) < len(pair):
                    problems.append(f"{where}: {selector.metric}{{resource{op}{value!r}}} counts {admitted} of {pair}")
    return problems


def _dashboard_queries() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for path in sorted(DASHBOARDS_DIR.glob("*.json")):
        board = json.loads(path.read_text())
        found += [
            (f"{path.name}: {p['title']}", panel_query(board, t["expr"], "$cluster"))
            for p in board["panels"]
            for t in p.get("targets", [])
        ]
    return found


@pytest.mark.parametrize("stack", CONTRACT_STACKS)
def test_every_gpu_query_selects_both_vendors_devices(stack: str) -> None:
    recording = contract_recording(stack)
    queries = [
        (f"{group.name} {rule.get('record') or rule.get('alert')}", rule["expression"])
        for group in recording.of_type(RULE_GROUP)
        for rule in group.inputs["rules"]
    ]
    assert any("chargeback" in where for where, _ in queries), "the scan must see the chargeback rules"
    problems = [p for where, query in [*queries, *_dashboard_queries()] for p in vendor_problems(where, query)]
    assert not problems, "a query that names nvidia.com/gpu alone leaves AMD pools out:\n" + "\n".join(problems)


def test_the_vendor_check_catches_an_nvidia_only_query() -> None:
    """The motivating defect: chargeback selected `resource="nvidia_com_gpu"`, and AMD teams held nothing."""
    query = 'sum(kube_pod_container_resource_requests{job="kube-state-metrics", resource="nvidia_com_gpu"})'
    assert vendor_problems("chargeback", query)
    both = query.replace('resource="nvidia_com_gpu"', 'resource=~"nvidia_com_gpu|amd_com_gpu"')
    assert not vendor_problems("chargeback", both)


def _overview() -> dict[str, Any]:
    return json.loads((DASHBOARDS_DIR / "gpu-overview.json").read_text())


def _shown(evaluator: Evaluator, query: str) -> list[tuple[tuple[tuple[str, str], ...], float]]:
    return sorted((tuple(sorted(s.labels.items())), round(s.value, 6)) for s in evaluator.evaluate_at(query, DAY))


@pytest.mark.parametrize("stack", DAY_STACKS)
def test_every_gpu_overview_panel_counts_every_vendors_gpus_or_says_which(stack: str) -> None:
    day = contract_day(stack)
    assert day.evaluator is not None
    cluster = day.recording.one("azure-native:containerservice:ManagedCluster").outputs["name"]
    has_amd = any(p.node.vendor == "amd" for p in day.pods)
    without_amd = Evaluator([s for s in day.evaluator.world if s.labels.get("job") != labels.AMD_SCRAPE_JOB])
    overview = _overview()
    for panel in overview["panels"]:
        for target in panel.get("targets", []):
            query = panel_query(overview, target["expr"], cluster)
            shown = _shown(day.evaluator, query)
            assert shown, f"{stack}: {panel['title']} shows nothing at the end of the day"
            if has_amd and shown == _shown(without_amd, query):
                assert NVIDIA_ONLY in panel.get("description", ""), (
                    f"{panel['title']} reads the same without the AMD pool's GPUs: count them or say "
                    f"'{NVIDIA_ONLY}' in its description"
                )
