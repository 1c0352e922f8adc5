"""The numbers and names docs/for-ml-teams.md gives a team member are the ones the platform produces for dev.

Each is read from what makes it: the stack's outputs, the validated config, the plan's cost and cold-start
models, the dashboards the platform installs. A page that drifts from them sends a researcher to the wrong
cluster, the wrong pool or the wrong expectation.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aks_gpu_platform.config import PlatformConfig, load_platform_config
from aks_gpu_platform.config.training import gpus_per_node
from aks_gpu_platform.plan import cold_start, cost
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT

PAGE = " ".join((REPO_ROOT / "docs" / "for-ml-teams.md").read_text().split())  # as read, lines joined
DASHBOARDS = REPO_ROOT / "components" / "dashboards"


def dev_config() -> PlatformConfig:
    return load_platform_config(settings_of(load_stack_file("dev", REPO_ROOT)))


def test_the_credentials_command_names_the_dev_outputs(dev_recording: Recording) -> None:
    outputs = dev_recording.stack_outputs
    expected = f"--resource-group {outputs['resourceGroupName']} --name {outputs['clusterName']}"
    assert expected in PAGE, f"`az aks get-credentials` must use dev's resourceGroupName and clusterName: {expected}"
    assert "`resourceGroupName` and `clusterName` outputs" in PAGE, "the page says which outputs to read"


def test_the_pool_table_is_the_teams_pools_with_their_capacity_and_quota(dev_recording: Recording) -> None:
    cfg = dev_config()
    (team,) = cfg.training.teams
    pools = {p.name: p for p in cfg.gpu_pools}
    assert dev_recording.stack_outputs["trainingTeams"][team.name]["gpuPools"] == [q.pool for q in team.quotas]
    for quota in team.quotas:
        pool = pools[quota.pool]
        sku = pool.sku
        gpu = f"{sku.gpu_model} {sku.gpu_memory_gib} GB"
        row = f"| `{pool.name}` | {gpu} | {gpus_per_node(pool)} | {pool.max_count} | {quota.gpus} GPUs |"
        assert row in PAGE, f"the page's row for {pool.name} must read: {row}"


def test_the_quota_ceiling_is_the_plans(dev_recording: Recording) -> None:
    (ceiling,) = cost.team_quota_ceilings(dev_recording, cost.pool_capacities(dev_recording))
    expected = f"{cost.monthly_usd(ceiling.monthly)}/month for {ceiling.gpus} T4s"
    assert expected in PAGE, f"the cost a team reads is the plan's quota ceiling: {expected}"


def test_the_cold_start_figures_are_the_plans(dev_recording: Recording) -> None:
    (budget,) = cold_start.budgets(dev_config(), cost.pool_capacities(dev_recording))
    figures = {stage.name: stage.figure for stage in budget.stages}
    react, boot = figures["autoscaler reacts"], figures["VM + node bootstrap"]
    assert f"reacts in about {react.high_s:g} s" in PAGE, "the autoscaler's delay as the plan states it"
    assert f"in up to {boot.high_s:g} s" in PAGE, "the VM and node bootstrap bound as the plan states it"


def test_the_scale_down_delay_is_the_clusters() -> None:
    minutes = dev_config().cluster.autoscaler_profile.scale_down_unneeded_minutes
    assert f"removes it, {minutes} minutes after its last pod ends" in PAGE


def test_the_dashboard_panels_the_page_names_exist() -> None:
    titles: set[str] = set()

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            titles.add(panel.get("title", ""))
            walk(panel.get("panels", []))

    dashboards = [json.loads(p.read_text()) for p in DASHBOARDS.glob("*.json")]
    for board in dashboards:
        walk(board.get("panels", []))
    named = re.findall(r"panel \*([^*]+)\*", PAGE) + re.findall(r"\*([^*]+)\*, panel", PAGE)
    boards = {b["title"] for b in dashboards}
    assert named, "the page names the panels to read"
    missing = [n for n in named if n not in titles and n not in boards]
    assert not missing, f"the page names panels the dashboards do not have: {missing}"
