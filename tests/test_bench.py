"""The plan-speed bench: its generated large config and the deploy critical path."""

from __future__ import annotations

import itertools

from config import load_platform_config
from config.loader import settings_from_runtime_config
from tools.bench import critical_path, duration, large_config
from tools.offline import Recording
from tools.stack_files import to_runtime_config


def test_large_config_is_a_valid_sixteen_pool_stack() -> None:
    encoded, _ = to_runtime_config(large_config(16), "aks-gpu-platform")
    cfg = load_platform_config(settings_from_runtime_config(encoded))
    assert len(cfg.gpu_pools) == 16, "the bench's large case must really carry 16 GPU pools"
    assert len({p.name for p in cfg.gpu_pools}) == 16, "pool names must be distinct"


def test_critical_path_runs_through_the_cluster(prod_recording: Recording) -> None:
    total, chain = critical_path(prod_recording)
    types = [r.type for r in chain]
    assert "azure-native:containerservice:ManagedCluster" in types, "nothing deploys before the cluster exists"
    assert total == sum(duration(r) for r in chain), "the path's length is the sum of its create times"
    for before, after in itertools.pairwise(chain):
        assert (
            before.urn in after.depends_on
            or after.provider.startswith(before.urn)
            or any(dep == before.parent for dep in after.depends_on)
        ), f"{after.name} must depend on {before.name}"
