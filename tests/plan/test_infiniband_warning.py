"""The plan warns when two teams share an InfiniBand pool: RDMA between their pods passes no NetworkPolicy."""

from __future__ import annotations

import copy

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.plan.verdicts import shared_infiniband_warnings
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tools import REPO_ROOT

TRAINING = "aks-gpu-platform:training"


def test_two_teams_with_quota_on_one_infiniband_pool_are_named_and_one_team_per_pool_is_not() -> None:
    config = load_stack_file("prod", REPO_ROOT)
    # One warning: gpua100, which both teams share too, has no InfiniBand.
    (warning,) = shared_infiniband_warnings(load_platform_config(settings_of(config)))
    assert "h100z3" in warning and "llm, vision" in warning, (
        f"prod's h100z3 carries quota of llm and vision, and only it: {warning}"
    )
    apart = copy.deepcopy(config)
    for team in apart[TRAINING]["teams"]:
        if team["name"] == "vision":
            team["quotas"] = [q for q in team["quotas"] if q["pool"] != "h100z3"]
    assert shared_infiniband_warnings(load_platform_config(settings_of(apart))) == [], (
        "with one team per InfiniBand pool nothing is shared"
    )
