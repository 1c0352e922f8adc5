"""What a person reads of `make plan`: the first screen (verdicts first, then the summary), each pool by one name,
one price per thing, cold-start lines that state the whole path, and the detail behind --detail and in plan.txt."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from aks_gpu_platform.plan.screen import REPORT_FILE
from aks_gpu_platform.testing import Recording
from tests.conftest import STACKS, plan_in_process

# A terminal's screen, give or take: dev must fit one, prod (six pools, two teams, three models) about one.
SCREEN_LINES = {"dev": 60, "prod": 84}
MONTH = 730
# Typed from config/catalog/prices.py's sources: NC4as_T4_v3 at 0.526 USD/h (eastus), a P10 managed OS disk at
# 19.71 USD a month.
T4_VM, P10_DISK = 0.526 * MONTH, 19.71
T4_NODE = T4_VM + P10_DISK


@dataclass(frozen=True)
class Printed:
    screen: str
    """`aks-gpu-platform plan` as it prints by default."""
    detail: str
    """The same with --detail."""
    written: str
    """out/<stack>/plan.txt."""


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory, recordings: dict[str, Recording]) -> dict[str, Printed]:
    found: dict[str, Printed] = {}
    for stack in STACKS:
        out = tmp_path_factory.mktemp(stack)
        screen = plan_in_process("--stack", stack, "--out", str(out))
        detail = plan_in_process("--stack", stack, "--out", str(out), "--detail")
        assert screen.returncode == detail.returncode == 0, screen.stderr + detail.stderr
        found[stack] = Printed(screen.stdout, detail.stdout, (out / REPORT_FILE).read_text())
    return found


def _section(text: str, title: str) -> list[str]:
    """The lines under a first-screen title, up to the next line that is not indented."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start + 1 : end]


@pytest.mark.parametrize("stack", STACKS)
def test_the_first_screen_fits_a_screen_and_leads_with_the_verdicts(
    printed: dict[str, Printed], stack: str, recordings: dict[str, Recording]
) -> None:
    lines = printed[stack].screen.splitlines()
    assert len(lines) <= SCREEN_LINES[stack], f"{stack}: {len(lines)} lines; a plan is read in a minute"
    headings = [i for i, line in enumerate(lines) if line and not line.startswith(" ")]
    verdicts = next(i for i in headings if lines[i].startswith("Verdicts"))
    assert all(not lines[i].startswith(("Node pools", "Monthly", "Cold start")) for i in headings if i < verdicts), (
        "nothing of the summary comes before the verdicts"
    )
    pools = next(i for i in headings if lines[i].startswith("Node pools"))
    said = [i for i, line in enumerate(lines) if re.match(r"  (error|warning|note): ", line)]
    assert said and max(said) < pools, "every verdict is read before the summary"
    assert not any("ManagedCluster platform-aks-cluster" in line for line in lines), "resources are detail"


@pytest.mark.parametrize("stack", STACKS)
def test_each_verdict_is_on_the_first_screen_once(printed: dict[str, Printed], stack: str) -> None:
    screen, detail = printed[stack].screen, printed[stack].detail
    full = detail[detail.index("  Verdicts in full:") :]
    counted = re.search(r"^Verdicts: (\w+) errors?, (\w+) warnings?, (\w+) notes?", screen, re.M)
    assert counted, screen[:500]
    warnings = len(re.findall(r"^    warning: ", full, re.M))
    placeholders = len(re.findall(r"^    warning: placeholder ", full, re.M))
    assert counted[2] == str(warnings), "the count is of every warning, each in full in the detail"
    shown = len(re.findall(r"^  warning: ", screen, re.M))
    assert shown == warnings - placeholders + (1 if placeholders else 0), (
        "one line per warning, the placeholders together on one"
    )
    for path in re.findall(r"^    warning: placeholder (\S+):", full, re.M):
        assert screen.count(path) == 1, f"placeholder {path} is named once on the first screen"


@pytest.mark.parametrize("stack", STACKS)
def test_each_pool_is_named_by_its_config_name_with_its_azure_name_beside_it_once(
    printed: dict[str, Printed], stack: str, recordings: dict[str, Recording]
) -> None:
    screen = printed[stack].screen
    agent_pools = recordings[stack].of_type("azure-native:containerservice:AgentPool")
    assert agent_pools, "every stack has a CPU pool and GPU pools"
    for pool in agent_pools:
        azure = pool.inputs["agentPoolName"]
        name = pool.inputs["nodeLabels"].get("gpu-pool") or azure[:-4]
        assert azure != name, "AgentPools carry a hash of their immutable fields in their Azure name"
        assert screen.count(azure) == 1, f"{azure}: the Azure name is shown once, beside {name}"
        assert f"{name} ({azure})" in screen, f"{azure} is shown beside its config name {name}"
        assert re.search(rf"\bpool {re.escape(name)}\b", screen), f"everything else calls it {name}"


def test_one_t4_node_has_one_price_stated_once_with_its_parts(printed: dict[str, Printed]) -> None:
    screen = printed["dev"].screen
    (row,) = [line for line in _section(screen, "Node pools") if line.lstrip().startswith("gput4 ")]
    assert row.split()[-3:] == [f"${T4_VM:,.2f}", f"${P10_DISK:,.2f}", f"${T4_NODE:,.2f}"], (
        f"a T4 node a month is its VM and its managed OS disk, stated once: {row}"
    )
    assert screen.count(f"${T4_NODE:,.2f}") == 1, "the unit price is stated once; other lines count nodes of it"
    node = f"${T4_NODE:,.0f}"
    held = [line for line in screen.splitlines() if "kept up" in line]
    assert len(held) == 4 and all(node in line for line in held), (
        f"each node the sample and the model keep up costs one T4 node, in the warning and in the estimate: {held}"
    )
    text = " ".join(screen.split())
    model = re.search(r"Model qwen-0-5b: 1-2 replicas of 1 x T4 on gput4 \(1 node each\): (\$[\d,]+)-(\$[\d,]+)", text)
    assert model, text
    assert model.groups() == (node, f"${2 * T4_NODE:,.0f}"), "a replica holding a T4 node costs that node"
    team = (
        f"Team ml: quota ceiling ${2 * T4_VM:,.0f}/month for 2 GPUs held all month, the GPU-hours chargeback bills; "
        f"their nodes' OS disks add ${2 * P10_DISK:,.0f} (estimate): ${2 * T4_NODE:,.0f} in all"
    )
    assert team in text, f"two T4 GPUs held cost two nodes, the part chargeback bills named: {text}"
    assert f"${T4_VM:,.0f}/month" not in text and f"${T4_VM:,.0f}-" not in text, (
        "no line prices a T4 node at its VM alone"
    )


@pytest.mark.parametrize("stack", STACKS)
def test_the_detail_flag_prints_the_rest_and_plan_txt_holds_it(printed: dict[str, Printed], stack: str) -> None:
    run = printed[stack]
    assert run.written == run.detail, f"{REPORT_FILE} holds what --detail prints"
    screen, detail = run.screen.splitlines(), run.detail.splitlines()
    head = " ".join(" ".join(screen[: screen.index("")]).split())
    assert f"/{REPORT_FILE} or --detail" in head, f"the first screen says where the detail is: {head}"
    body = screen[screen.index("") :]
    assert detail[detail.index("") :][: len(body)] == body, "--detail starts with the first screen"
    for heading in (
        "  Verdicts in full:",
        "  Cold start of pool ",
        "  Resources:",
        "  Policy verdicts",
        "  Images (each with its digest",
    ):
        assert heading in run.detail and heading not in run.screen, f"{heading.strip()} is detail, behind --detail"
    assert "ManagedCluster platform-aks-cluster" in run.detail, "the detail lists every resource"


def test_a_cold_start_line_states_the_whole_path_with_its_total_first(printed: dict[str, Printed]) -> None:
    lines = " ".join(printed["dev"].screen.split())
    found = re.search(
        r"pool gput4, pending GPU pod to running job: ([\d.]+)-([\d.]+) s \+ (\d) unknown: ([^:]+?) model ", lines
    )
    assert found, lines[lines.index("Cold start") :]
    low, high, unknown, stages = float(found[1]), float(found[2]), int(found[3]), found[4]
    # The T4 path, typed from its sources: the autoscaler's 30 s, the node's bootstrap up to 413 s (the blog's 510 s
    # p95 minus its 97 s container start), the driver inside it, and the workload image 11-97 s (pre-pulled).
    assert (low, high) == (30 + 11, 30 + 413 + 97), "the total adds every stage: a node alone may take 413 s"
    order = ["autoscaler reacts 30 s", "VM + node bootstrap <= 413 s", "driver 0 s", "platform node agents unknown"]
    order += ["workload image 11-97 s", "weights unknown"]
    assert stages.rstrip(" ,") == ", ".join(order), "every stage from pending pod to running job, in order"
    assert unknown == sum("unknown" in stage for stage in order), "the total says how many stages are unknown"
