"""The example training scripts stop together and checkpoint one step when one rank gets SIGTERM.

Kubernetes signals each pod of a preempted or drained job on its own; a rank that leaves the loop alone
leaves the others blocked in the next gradient all-reduce until NCCL's timeout, holding every GPU, and
its checkpoint is of a step the others never reached. The scripts run here as two ranks in separate
processes on a stand-in for torch whose collectives wait for every rank (tests/fixtures/fake_torch).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import REPO_ROOT

FAKE_TORCH = Path(__file__).parent.parent / "fixtures" / "fake_torch"
TEAM_JOBSET = REPO_ROOT / "examples" / "team-jobset" / "jobset.yaml"
TRAIN_PY = REPO_ROOT / "examples" / "training-job" / "train.py"
SIGTERM_EXIT = 143  # 128 + SIGTERM: the Job must not count a stopped rank as a completed index


def team_jobset_script() -> str:
    jobset = next(d for d in yaml.safe_load_all(TEAM_JOBSET.read_text()) if d and d["kind"] == "JobSet")
    (container,) = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
    return container["args"][0].split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]


SCRIPTS = {"team-jobset": team_jobset_script, "training-job": TRAIN_PY.read_text}


def run_ranks(script: str, tmp_path: Path, sigterm_at: str | None, steps: int = 400) -> list[subprocess.Popen[str]]:
    (tmp_path / "train.py").write_text(script)
    dist = tmp_path / "dist"
    dist.mkdir(exist_ok=True)
    for stale in dist.iterdir():
        stale.unlink()
    ranks = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(FAKE_TORCH),
            "RANK": str(rank),
            "LOCAL_RANK": "0",
            "WORLD_SIZE": "2",
            "CHECKPOINT_DIR": str(tmp_path / "ckpt"),
            "CHECKPOINT_EVERY": "100",
            "STEPS": str(steps),
            "FAKE_DIST_DIR": str(dist),
            "FAKE_SIGTERM_AT": sigterm_at or "",
        }
        ranks.append(
            subprocess.Popen(
                [sys.executable, str(tmp_path / "train.py")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in ranks:
        process.wait(timeout=60)
    return ranks


def checkpoint_step(tmp_path: Path) -> int:
    (stored,) = [p for p in (tmp_path / "ckpt").iterdir() if p.suffix == ".pt"]
    return int(json.loads(stored.read_text())["step"])


@pytest.mark.parametrize("example", sorted(SCRIPTS))
def test_a_sigterm_on_one_rank_stops_every_rank_at_the_same_step(example: str, tmp_path: Path) -> None:
    ranks = run_ranks(SCRIPTS[example](), tmp_path, sigterm_at="1:75")
    errors = "\n".join(p.stderr.read() if p.stderr else "" for p in ranks)
    codes = [p.returncode for p in ranks]
    assert codes == [SIGTERM_EXIT, SIGTERM_EXIT], (
        f"{example}: every rank must stop after one of them is signalled, and say it was stopped (exit 143), "
        f"not leave the others waiting in a collective: exit codes {codes}\n{errors}"
    )
    done = [int((tmp_path / "dist" / f"steps.{rank}").read_text()) for rank in range(2)]
    assert done[0] == done[1], f"{example}: both ranks ran the same number of steps before stopping: {done}"
    assert 0 < done[0] < 400, f"{example}: the job stopped early, on the signal: {done}"
    saved = checkpoint_step(tmp_path)
    assert saved in (done[0], done[0] - 1), (
        f"{example}: the checkpoint is of the step every rank reached ({done[0]} steps run), not another: {saved}"
    )


@pytest.mark.parametrize("example", sorted(SCRIPTS))
def test_a_resubmitted_job_resumes_from_the_checkpoint(example: str, tmp_path: Path) -> None:
    run_ranks(SCRIPTS[example](), tmp_path, sigterm_at="1:75")
    stopped_at = checkpoint_step(tmp_path)
    ranks = run_ranks(SCRIPTS[example](), tmp_path, sigterm_at=None, steps=stopped_at + 20)
    assert [p.returncode for p in ranks] == [0, 0], [p.stderr.read() if p.stderr else "" for p in ranks]
    done = [int((tmp_path / "dist" / f"steps.{rank}").read_text()) for rank in range(2)]
    assert done[0] == done[1] <= 21, f"{example}: the second run continues from the checkpoint: {done} steps"
