"""Known limitations (config/known_limits.py): a config that hits one gets its warning among the plan's verdicts, a
config that does not gets none, for the platform and the fleet stack."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config.known_limits import FLEET_LIMITS, PLATFORM_LIMITS
from tests.conftest import plan_in_process
from tests.gpu.test_aks_managed import managed_config

LIMIT_NAMES = [limit.name for limit in [*PLATFORM_LIMITS, *FLEET_LIMITS]]


def test_every_known_limit_has_one_name_and_a_sentence() -> None:
    assert len(set(LIMIT_NAMES)) == len(LIMIT_NAMES), f"a name the plan prints twice is ambiguous: {LIMIT_NAMES}"
    for limit in [*PLATFORM_LIMITS, *FLEET_LIMITS]:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", limit.name), limit.name
        assert len(limit.sentence.split()) >= 8, f"{limit.name}: say what does not work and what to do"


def _verdicts(stdout: str) -> str:
    """The plan's verdict block, its wrapped lines joined."""
    block = stdout.split("Verdicts", 1)[1].split("\n\n", 1)[0]
    return " ".join(block.split())


def _known_limits(stdout: str) -> set[str]:
    return set(re.findall(r"warning: (?:member \S+: )?known limit ([a-z0-9-]+):", _verdicts(stdout)))


def _plan(config: dict[str, Any], stack: str, tmp_path: Path) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    result = plan_in_process("--stack", stack, "--config-file", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_plan_names_the_idle_gap_of_aks_managed_gpus_and_not_elsewhere(tmp_path: Path) -> None:
    from tests.gpu.test_scheduling import variant_config

    assert "aks-managed-idle-unseen" in _known_limits(_plan(managed_config(), "dev", tmp_path / "managed"))
    plain = variant_config("gpu-operator-mig")
    assert "aks-managed-idle-unseen" not in _known_limits(_plan(plain, "dev", tmp_path / "operator")), (
        "the GPU Operator maps pods"
    )


def test_the_plan_says_team_pods_pull_any_public_image_when_there_are_teams(tmp_path: Path) -> None:
    config = managed_config()  # dev without models, which name teams
    training = next(k for k in config if k.endswith(":training"))
    assert config[training]["teams"], "dev has teams"
    assert "team-images-unrestricted" in _known_limits(_plan(config, "dev", tmp_path / "teams"))
    config[training]["teams"] = []
    assert "team-images-unrestricted" not in _known_limits(_plan(config, "dev", tmp_path / "no-teams")), (
        "without teams no team pod pulls anything"
    )


@pytest.mark.parametrize(("selection", "expected"), [("Latest", True), ("Consistent", False)])
def test_the_fleet_plan_says_node_image_runs_stay_consistent_when_latest_is_asked(
    tmp_path: Path, selection: str, expected: bool
) -> None:
    from aks_gpu_platform.testing.stack_files import load_stack_file
    from tools import REPO_ROOT

    config = copy.deepcopy(load_stack_file("fleet", REPO_ROOT))
    config["aks-gpu-platform:fleet"]["updates"]["nodeImageSelection"] = selection
    found = "fleet-node-image-channel-consistent" in _known_limits(_plan(config, "fleet", tmp_path))
    assert found == expected, f"nodeImageSelection {selection}: the NodeImage channel runs Consistent regardless"


def test_the_plan_says_the_slo_alert_is_an_upper_bound_where_models_are_served(tmp_path: Path) -> None:
    from aks_gpu_platform.testing.stack_files import load_stack_file
    from tools import REPO_ROOT

    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    assert config["aks-gpu-platform:inference"]["models"], "the dev stack serves a model"
    assert "served-model-slo-upper-bound" in _known_limits(_plan(config, "dev", tmp_path / "served"))
    config["aks-gpu-platform:inference"]["models"] = []
    found = _known_limits(_plan(config, "dev", tmp_path / "none"))
    assert "served-model-slo-upper-bound" not in found, "no model, no SLO alert"


def test_the_plan_says_the_streamer_version_is_the_image_s_where_weights_stream_from_blob() -> None:
    from aks_gpu_platform.config import load_platform_config
    from aks_gpu_platform.config.known_limits import hit
    from aks_gpu_platform.testing.stack_files import load_stack_file
    from tests.conftest import settings_of
    from tests.inference.test_blob_weights import dev_streamed_config
    from tools import REPO_ROOT

    name = "streamed-weights-version-unpinned"
    streamed = load_platform_config(settings_of(dev_streamed_config()))
    assert any(w.startswith(f"known limit {name}:") for w in hit(PLATFORM_LIMITS, streamed))
    hub_only = load_platform_config(settings_of(copy.deepcopy(load_stack_file("dev", REPO_ROOT))))
    assert not any(name in w for w in hit(PLATFORM_LIMITS, hub_only)), "Hub weights are read without the streamer"
