"""Every add-on is described once (components/<concern>/addons.py, listed in components/addons.py), and what the
platform keeps about add-ons comes from those descriptors: the namespaces the pod security policy and GPU remediation
leave alone, the Grafana dashboards, the Docker Hub warnings of `make plan`, the tables of docs/charts.md and the
chart and release readers of tests/upstream. A made-up add-on, listed for one test, shows up in each of them."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from aks_gpu_platform.components import addons
from aks_gpu_platform.components.monitoring.grafana import FOLDER_UID
from aks_gpu_platform.components.shared.addon import AddOn, Board, Chart, Dashboard, Readiness
from aks_gpu_platform.plan import verdicts
from aks_gpu_platform.testing import Recording, evaluate
from aks_gpu_platform.testing.runtime import program_from_file, project_entry
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.platform.test_namespace_pod_security import NAMESPACE, RELEASE, STACKS, recording
from tests.upstream.release_contract import RELEASE_READERS
from tests.upstream.scheduling import CHART_READERS
from tools import REPO_ROOT, charts_doc, team_pools

POLICY_ASSIGNMENT = "azure-native:authorization:PolicyAssignment"
DASHBOARD = "grafana:oss/dashboard:Dashboard"
ENFORCE = "pod-security.kubernetes.io/enforce"

MADE_UP_BOARD = {"uid": "tiny-exporter", "title": "Tiny exporter", "templating": {"list": []}, "panels": []}
MADE_UP = AddOn(
    name="tiny-exporter",
    summary="a made-up exporter of one metric",
    namespace="tiny-exporter",
    pod_security="privileged",
    undrained=True,
    charts=(
        Chart(
            "oci://registry.example/charts/tiny-exporter",
            "0.1.0",
            source="example/tiny-exporter tag `v0.1.0`",
            templates_read="`charts/tiny-exporter/templates/daemonset.yaml`",
            readiness=Readiness("70 s: readiness after 10 s", docker_hub_images=("docker.io/example/tiny:0.1.0",)),
        ),
    ),
    dashboards=(Dashboard("`tiny-exporter`", lambda cfg: [Board("tiny-exporter-dashboard", MADE_UP_BOARD)]),),
)


def missing_readers(described: tuple[AddOn, ...]) -> list[str]:
    """Charts of `described` whose templates no reader of tests/upstream has read at the pinned version."""
    missing: list[str] = []
    for addon in described:
        for chart in addon.charts:
            for kind, readers in (("chart", CHART_READERS), ("release", RELEASE_READERS)):
                reader = readers.get(chart.reference)
                if reader is None or chart.version not in reader.versions:
                    missing.append(f"{addon.name}: no {kind} reader of {chart.reference} {chart.version}")
    return missing


def _chart_and_addon(release: Any) -> Iterator[tuple[Chart, AddOn]]:
    reference, version = str(release.inputs["chart"]), str(release.inputs.get("version"))
    for addon in addons.ADDONS:
        yield from ((c, addon) for c in addon.charts if (c.reference, c.version) == (reference, version))


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_is_an_add_ons_chart_at_its_pin_in_its_namespace(stack: str) -> None:
    """A chart installed past the descriptors would be missing from the namespace lists, the docs and the readers."""
    undescribed: list[str] = []
    for release in recording(stack).of_type(RELEASE):
        found = list(_chart_and_addon(release))
        namespace = str(release.inputs.get("namespace"))
        if not found:
            undescribed.append(f"{release.name}: {release.inputs['chart']} {release.inputs.get('version')}")
        elif found[0][1].configured_namespace is None and namespace != found[0][1].namespace:
            undescribed.append(f"{release.name}: installs into {namespace}, its add-on names {found[0][1].namespace}")
    assert not undescribed, "describe the add-on (docs/architecture.md, 'Adding an add-on'):\n" + "\n".join(undescribed)


@pytest.mark.parametrize("stack", STACKS)
def test_each_add_on_namespace_enforces_the_level_its_descriptor_names(stack: str) -> None:
    """The pod security policy leaves these namespaces to that level: it must be the one the stack creates."""
    levels = {a.namespace: a.pod_security for a in addons.ADDONS if a.configured_namespace is None}
    wrong = [
        f"{name}: created enforcing {labels.get(ENFORCE)!r}, its add-on names {levels[name]!r}"
        for ns in recording(stack).of_type(NAMESPACE)
        if (name := str(ns.inputs["metadata"]["name"])) in levels
        and (labels := ns.inputs["metadata"].get("labels") or {}).get(ENFORCE) != levels[name]
    ]
    assert not wrong, "\n".join(wrong)


def test_every_described_chart_has_its_readers_at_its_pin() -> None:
    assert not missing_readers(addons.ADDONS), "read the chart's templates at the pin: tests/upstream/scheduling.py "
    "and tests/upstream/release_contract.py"


def test_docs_charts_md_holds_the_tables_of_the_descriptors() -> None:
    page = charts_doc.PAGE.read_text()
    assert charts_doc.page_with(page, addons.ADDONS) == page, f"docs/charts.md is stale: run `{charts_doc.REGENERATE}`"


def test_the_platform_folder_holds_the_add_ons_dashboards_and_no_other(recordings: dict[str, Recording]) -> None:
    """One way to a dashboard of the platform folder: its add-on's descriptor."""
    for stack, stack_recording in recordings.items():
        boards = [d.inputs for d in stack_recording.of_type(DASHBOARD) if d.inputs["folder"] == FOLDER_UID]
        in_folder = {json.loads(b["configJson"])["uid"] for b in boards}
        cfg = team_pools.stack_config(stack)
        described = {b.json["uid"] for a in addons.ADDONS for d in a.dashboards for b in d.boards(cfg)}
        assert "aks-gpu-overview" in described, f"{stack}: the GPU overview is the DCGM exporter's"
        assert in_folder == described, f"{stack}: the platform folder holds {in_folder}, the add-ons {described}"


@pytest.fixture(scope="module")
def with_made_up() -> Recording:
    """prod, evaluated (not from the recording cache) with the made-up add-on listed."""
    name, entry = project_entry(REPO_ROOT)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(addons, "ADDONS", (*addons.ADDONS, MADE_UP))
        return evaluate(program_from_file(entry), load_stack_file("prod", REPO_ROOT), stack="prod", project=name)


def test_a_made_up_add_on_is_left_out_of_the_pod_security_policy(with_made_up: Recording) -> None:
    (baseline,) = [
        p for p in with_made_up.of_type(POLICY_ASSIGNMENT) if p.inputs["policyAssignmentName"].endswith("baseline")
    ]
    assert "tiny-exporter" in baseline.inputs["parameters"]["excludedNamespaces"]["value"]


def test_a_made_up_add_on_is_never_drained(with_made_up: Recording) -> None:
    drainer = with_made_up.one(RELEASE, "nvsentinel").inputs["values"]["node-drainer"]
    assert re.fullmatch(drainer["systemNamespaces"], "tiny-exporter"), drainer["systemNamespaces"]


def test_a_made_up_add_on_gets_its_dashboard_in_the_platform_folder(with_made_up: Recording) -> None:
    (dashboard,) = [d for d in with_made_up.of_type(DASHBOARD) if d.name == "platform-tiny-exporter-dashboard"]
    assert json.loads(dashboard.inputs["configJson"])["uid"] == "tiny-exporter"
    assert dashboard.inputs["folder"] == FOLDER_UID


def test_a_made_up_add_on_has_its_rows_in_docs_charts_md() -> None:
    page = charts_doc.page_with(charts_doc.PAGE.read_text(), (*addons.ADDONS, MADE_UP))
    assert "| `tiny-exporter` | a made-up exporter of one metric | `tiny-exporter` | `privileged` | left alone" in page
    assert "| `tiny-exporter` | `0.1.0` | `oci://registry.example/charts/tiny-exporter` |" in page
    assert "| `tiny-exporter` | 300 s (default) | 70 s: readiness after 10 s |" in page


def test_the_plan_names_a_made_up_add_ons_docker_hub_pulls(with_made_up: Recording) -> None:
    nvsentinel = with_made_up.one(RELEASE, "nvsentinel")
    tiny = dataclasses.replace(
        nvsentinel, name="tiny", inputs={**nvsentinel.inputs, "chart": MADE_UP.chart().reference, "version": "0.1.0"}
    )
    assert verdicts.docker_hub_warnings(Recording(resources=[tiny])) == []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(addons, "ADDONS", (*addons.ADDONS, MADE_UP))
        (warning,) = verdicts.docker_hub_warnings(Recording(resources=[tiny]))
    assert warning.startswith("release tiny pulls 1 images") and "docker.io/example/tiny:0.1.0" in warning


def test_a_made_up_add_on_without_readers_is_named() -> None:
    assert missing_readers((MADE_UP,)) == [
        "tiny-exporter: no chart reader of oci://registry.example/charts/tiny-exporter 0.1.0",
        "tiny-exporter: no release reader of oci://registry.example/charts/tiny-exporter 0.1.0",
    ]
