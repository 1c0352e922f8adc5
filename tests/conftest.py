"""Shared fixtures: each stack is evaluated once per test session; components build on fresh mocks."""

from __future__ import annotations

import copy
import io
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s
import pytest
from hypothesis import settings as hypothesis_settings

from aks_gpu_platform.components.shared.context import ClusterHandle
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.plan import report as plan
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.recording_cache import RECORDING_CACHE, source_fingerprint
from aks_gpu_platform.testing import Recording, evaluate
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.harness.checkov_scan import prune_reports
from tools import REPO_ROOT

STACKS = ("dev", "prod")


def prune(root: Path, projects: Iterable[Path]) -> None:
    """Drop what earlier sources stored; only the current sources' recordings of `projects` can be read again."""
    if not root.is_dir():
        return
    keep = {source_fingerprint(project.resolve()) for project in projects}
    for entry in root.iterdir():
        if entry.name not in keep:
            shutil.rmtree(entry, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Share stack evaluations between the workers, the subprocesses and the next run (plan/recording_cache.py).

    An empty AKS_GPU_PLATFORM_RECORDING_CACHE turns the cache off; a folder given there is used instead.
    """
    folder = os.environ.setdefault(RECORDING_CACHE, str(REPO_ROOT / "out" / "recordings"))
    if folder and not hasattr(config, "workerinput"):
        prune(Path(folder), [REPO_ROOT])
        prune_reports(Path(folder))


# The files whose tests run real commands in fresh processes, 10-20 s each. pytest-xdist hands files to its
# workers in collection order: these go first, so the end of the run is made of short files on both workers.
RUN_FIRST = ("test_wheel.py", "test_packaging.py", "test_examples.py", "test_plan.py", "test_plan_diff.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in RUN_FIRST)  # a stable sort: the rest keep their order


@pytest.fixture(scope="session")
def dev_recording() -> Recording:
    return run_stack("dev")


@pytest.fixture(scope="session")
def prod_recording() -> Recording:
    return run_stack("prod")


@pytest.fixture(scope="session")
def recordings(dev_recording: Recording, prod_recording: Recording) -> dict[str, Recording]:
    return {"dev": dev_recording, "prod": prod_recording}


@pytest.fixture
def stack_config() -> Callable[[str], dict[str, Any]]:
    """A deep copy of a stack's YAML config that a test may break."""
    return lambda stack: copy.deepcopy(load_stack_file(stack, REPO_ROOT))


@pytest.fixture
def build() -> Callable[[Callable[[], Any]], Recording]:
    """Run a snippet that creates components directly, on fresh recording mocks."""
    return lambda program: evaluate(program)


def settings_of(config: dict[str, Any]) -> dict[str, Any]:
    """YAML-shaped platform settings (project prefix stripped) from a stack's config map."""
    prefix = "aks-gpu-platform:"
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}


def without_models(config: dict[str, Any]) -> dict[str, Any]:
    """`config` (a stack's config map) without its served models: for variants that reshape the pools or teams the
    models name. The models' own rules against pools and teams are tests/inference/test_models_config.py's."""
    config.pop("aks-gpu-platform:inference", None)
    return config


def set_path(settings: dict[str, Any], path: str, value: Any) -> None:
    """Set `a.b.0.c` in YAML-shaped settings, creating missing mappings on the way."""
    node: Any = settings
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[parts[-1]] = value


def assert_rejected(settings: dict[str, Any], why: str, field: str, hint: str) -> ConfigError:
    """Loading `settings` fails with the project's ConfigError naming `field` and saying what is allowed."""
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    message = str(caught.value)
    assert f"{field}:" in message, f"{why}: the message must name {field}, got:\n{message}"
    assert hint in message, f"{why}: the message must say what is allowed ({hint!r}), got:\n{message}"
    return caught.value


@dataclass(frozen=True)
class PlanRun:
    returncode: int
    stdout: str
    stderr: str


def plan_in_process(*args: str) -> PlanRun:
    """`aks-gpu-platform plan ARGS` run in this process: its exit status and output, without a new interpreter.

    The tests that check the plan's determinism run the real command in fresh processes; the others need
    only what it prints and returns.
    """
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = plan.main(list(args))
    return PlanRun(code, out.getvalue(), err.getvalue())


# Fuzzing stays fast on small CI runners: modest example counts, no per-example deadline.
# HYPOTHESIS_PROFILE=thorough runs many more examples locally.
hypothesis_settings.register_profile("default", max_examples=60, deadline=None)
hypothesis_settings.register_profile("thorough", max_examples=1000, deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def cluster_handle(name: str = "aks", protect: bool = False, tags: Mapping[str, str] | None = None) -> ClusterHandle:
    """A ClusterHandle on a mocked cluster, for components built directly (call inside a mocked program)."""
    cluster = containerservice.ManagedCluster(
        name, resource_group_name="rg-test", oidc_issuer_profile={"enabled": True}
    )
    provider = k8s.Provider(f"{name}-k8s", kubeconfig="{}")
    return ClusterHandle(
        resource_group_name="rg-test",
        location="koreacentral",
        tags=dict(tags) if tags is not None else {"environment": "test"},
        cluster=cluster,
        cluster_name=cluster.name,
        cluster_id=cluster.id,
        provider=provider,
        oidc_issuer_url=cluster.oidc_issuer_profile.apply(lambda p: (p.issuer_url if p else None) or ""),
        protect=protect,
    )
