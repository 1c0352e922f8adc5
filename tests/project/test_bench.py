"""The plan-speed bench: its generated large config, its baselines, its arithmetic and the deploy critical path."""

from __future__ import annotations

import itertools

import pytest

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.loader import settings_from_runtime_config
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import to_runtime_config
from tools.bench import (
    SCALED_TARGETS,
    bare_runner,
    critical_path,
    decompose,
    duration,
    large_config,
    marginal_per_pool,
    shaped_runner,
    super_linear,
)


def test_large_config_is_a_valid_sixteen_pool_stack_with_scaled_targets() -> None:
    encoded, _ = to_runtime_config(large_config(16), "aks-gpu-platform")
    cfg = load_platform_config(settings_from_runtime_config(encoded))
    assert len(cfg.gpu_pools) == 16, "the bench's large case must really carry 16 GPU pools"
    assert len({p.name for p in cfg.gpu_pools}) == 16, "pool names must be distinct"
    assert len(cfg.autoscaling.targets) == SCALED_TARGETS >= 2, "and several KEDA-scaled Deployments"


def test_shaped_baseline_registers_exactly_what_the_program_registered(dev_recording: Recording) -> None:
    replay = {r.urn: r for r in shaped_runner(dev_recording, "dev")().resources}
    assert set(replay) == {r.urn for r in dev_recording.resources}, "same resources, names, types and parents"
    assert dev_recording.resources, "a replay of nothing would match trivially"
    for r in dev_recording.resources:
        twin = replay[r.urn]
        assert (twin.inputs, twin.provider, twin.deleted_with, twin.protect, twin.aliases) == (
            r.inputs,
            r.provider,
            r.deleted_with,
            r.protect,
            r.aliases,
        ), f"{r.name}: the baseline must pay for the same inputs and options as the program"
        assert sorted(twin.depends_on) == sorted(r.depends_on), f"{r.name}: and wait for the same resources"


def test_bare_baseline_registers_the_same_custom_resources_flat(dev_recording: Recording) -> None:
    replay = sorted(bare_runner(dev_recording, "dev")().resources, key=lambda r: (r.type, r.name))
    customs = sorted((r for r in dev_recording.resources if r.custom), key=lambda r: (r.type, r.name))
    assert [(r.type, r.name, r.inputs, r.aliases) for r in replay] == [
        (r.type, r.name, r.inputs, r.aliases) for r in customs
    ], "bare registers every custom resource with its inputs and the SDK classes' aliases"
    assert sum(len(r.aliases) for r in replay) > len(replay), "the aliases (most of the SDK's cost) are replayed"
    assert not any(r.depends_on or r.provider for r in replay), "and nothing of the program's shape"
    assert len({r.parent for r in replay}) == 1, "every registration sits at the stack root"


def test_decomposition_splits_the_program_time_exactly() -> None:
    parts = list(decompose(program_s=2.0, bare_s=1.2, shaped_s=1.5).values())
    assert parts == pytest.approx([1.2, 0.3, 0.5]), "SDK resources, SDK shape, our own code"
    assert sum(decompose(1.0, 0.8, 1.1).values()) == pytest.approx(1.0), "noise shows as a negative part, not lost"


def test_growth_check_flags_pools_that_get_dearer() -> None:
    steps = marginal_per_pool({4: 1.0, 8: 1.2, 16: 1.6})
    assert [(a, b) for a, b, _ in steps] == [(4, 8), (8, 16)]
    assert [cost for *_, cost in steps] == pytest.approx([0.05, 0.05]), "seconds per added pool"
    assert not super_linear(steps), "a constant cost per pool is linear"
    assert super_linear(marginal_per_pool({4: 1.0, 8: 1.2, 16: 3.0})), "a pool costing 4x more later is not"
    assert not super_linear(marginal_per_pool({4: 1.0, 8: 1.1, 16: 1.5}), floor=0.05), "the noise floor absorbs jitter"


def test_slow_independent_resources_stay_off_the_cluster_chain(prod_recording: Recording) -> None:
    cluster = prod_recording.one("azure-native:containerservice:ManagedCluster")
    _, waits_for = critical_path(prod_recording, cluster.urn)
    slow = {"azure-native:storagecache:AmlFilesystem", "azure-native:dashboard:Grafana"}
    assert not slow & {r.type for r in waits_for}, "the cluster must not wait for Lustre or Grafana"
    assert not any("registry" in r.type.lower() for r in waits_for), "nor for the registry"


def test_critical_path_is_a_real_dependency_chain(prod_recording: Recording) -> None:
    total, chain = critical_path(prod_recording)
    assert total == sum(duration(r) for r in chain), "the path's length is the sum of its create times"
    for before, after in itertools.pairwise(chain):
        assert (
            before.urn in after.depends_on
            or after.provider.startswith(before.urn)
            or any(dep == before.parent for dep in after.depends_on)
        ), f"{after.name} must depend on {before.name}"
