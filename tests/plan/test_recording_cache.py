"""The on-disk recordings the test session shares: read back only for the same sources, never for a failure."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.plan import recording_cache
from aks_gpu_platform.plan.recording_cache import RECORDING_CACHE, cached, source_fingerprint
from aks_gpu_platform.testing import Recording, evaluate_stack_file
from tests.conftest import prune
from tools import REPO_ROOT


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(RECORDING_CACHE, str(tmp_path / "recordings"))
    return tmp_path / "recordings"


def _counting(evaluate: Callable[[], Recording]) -> tuple[Callable[[], Recording], list[int]]:
    calls: list[int] = []

    def counted() -> Recording:
        calls.append(1)
        return evaluate()

    return counted, calls


def test_a_stored_recording_reads_back_as_the_evaluation_it_stands_for(cache_dir: Path) -> None:
    evaluate, calls = _counting(lambda: evaluate_stack_file("dev", project_dir=REPO_ROOT))
    first = cached(evaluate, REPO_ROOT, "dev", "read-back")
    again = cached(evaluate, REPO_ROOT, "dev", "read-back")
    assert calls == [1], "the second call must read the stored recording, or the session evaluates twice"
    assert again == first, "a read-back recording must hold every resource, option, output and mock value"
    assert again is not first, "each caller gets its own copy: a test that edits one cannot change another's"


def test_another_key_evaluates_again(cache_dir: Path) -> None:
    evaluate, calls = _counting(Recording)
    cached(evaluate, REPO_ROOT, "dev", {"aks-gpu-platform:cluster": {"name": "a"}})
    cached(evaluate, REPO_ROOT, "dev", {"aks-gpu-platform:cluster": {"name": "b"}})
    cached(evaluate, REPO_ROOT, "prod", {"aks-gpu-platform:cluster": {"name": "a"}})
    assert len(calls) == 3, "a different stack or config is a different evaluation"


def test_two_callers_of_one_key_at_once_evaluate_it_once(cache_dir: Path) -> None:
    # Threads stand in for the two pytest workers: each call opens the lock file itself, and flock locks
    # of separate opens exclude each other within one process as between two.
    def slow() -> Recording:
        time.sleep(0.5)
        return Recording()

    evaluate, calls = _counting(slow)
    callers = [threading.Thread(target=cached, args=(evaluate, REPO_ROOT, "dev", "at-once")) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert calls == [1], "the second caller waits for the first one's recording instead of evaluating it again"


def test_a_failed_evaluation_is_raised_every_time_and_not_stored(cache_dir: Path) -> None:
    def refuse() -> Recording:
        raise ConfigError(["cluster.name: got ''"])

    evaluate, calls = _counting(refuse)
    for _ in range(2):
        with pytest.raises(ConfigError):
            cached(evaluate, REPO_ROOT, "dev", "broken")
    assert len(calls) == 2, "a config error must be raised by the evaluation itself on every call"
    assert not any(cache_dir.rglob("*.pickle.z")), "nothing may be stored for a failed evaluation"


def test_an_empty_setting_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RECORDING_CACHE, "")
    evaluate, calls = _counting(Recording)
    cached(evaluate, REPO_ROOT, "dev", "off")
    cached(evaluate, REPO_ROOT, "dev", "off")
    assert len(calls) == 2, "with the cache off (engine stand-ins, determinism checks) every call evaluates"


@pytest.fixture
def source_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of what an evaluation reads, standing in for the repository."""
    root = tmp_path / "repo"
    for folder in ("components", "config"):
        shutil.copytree(REPO_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "aks_gpu_platform", root / "aks_gpu_platform", symlinks=True)
    for name in ("__main__.py", "Pulumi.yaml", "Pulumi.dev.yaml", "pyproject.toml"):
        shutil.copy(REPO_ROOT / name, root / name)
    folders = [root / "aks_gpu_platform", root / "components", root / "config"]
    monkeypatch.setattr(recording_cache, "_package_folders", lambda: folders)
    source_fingerprint.cache_clear()
    yield root
    source_fingerprint.cache_clear()


@pytest.mark.parametrize(
    "edited",
    [
        "components/gpu/nvidia_stack.py",
        "components/monitoring/dashboards/gpu-overview.json",
        "config/catalog/gpu_sizes.py",
        "aks_gpu_platform/testing/mocks.py",
        "Pulumi.dev.yaml",
        "pyproject.toml",
    ],
)
def test_an_edit_the_evaluation_reads_makes_a_new_key(source_copy: Path, edited: str) -> None:
    before = source_fingerprint(source_copy)
    path = source_copy / edited
    path.write_text(path.read_text() + "\n# edited\n")
    source_fingerprint.cache_clear()
    assert source_fingerprint(source_copy) != before, f"after an edit to {edited} a stored recording would be stale"


def test_bytecode_and_files_outside_the_program_keep_the_key(source_copy: Path) -> None:
    before = source_fingerprint(source_copy)
    (source_copy / "components" / "__pycache__").mkdir(exist_ok=True)
    (source_copy / "components" / "__pycache__" / "gpu_stack.cpython-311.pyc").write_bytes(b"\0")
    (source_copy / "README.md").write_text("docs only")
    source_fingerprint.cache_clear()
    assert source_fingerprint(source_copy) == before, (
        "bytecode and docs do not change an evaluation; the cache must survive them"
    )


def test_prune_keeps_only_the_current_sources(tmp_path: Path) -> None:
    current = tmp_path / source_fingerprint(REPO_ROOT)
    stale = tmp_path / "0123456789abcdef01234567"
    for folder in (current, stale):
        folder.mkdir()
        (folder / "x.pickle.z").write_bytes(b"")
    prune(tmp_path, [REPO_ROOT])
    assert current.is_dir(), "the current sources' recordings are the ones the session reads"
    assert not stale.exists(), "recordings of older sources can never be read again and only fill the disk"
