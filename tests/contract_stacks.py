"""The stacks every contract runs over: dev, prod, the fleet, and the variants that change what a contract sees
(an AMD pool beside NVIDIA's, time-sliced and MPS pools). Evaluated once per process."""

from __future__ import annotations

from functools import cache

from aks_gpu_platform.testing import Recording
from tools.offline import run_stack

CONTRACT_STACKS = ("dev", "prod", "fleet", "amd", "shared-gpus")


@cache
def contract_recording(stack: str) -> Recording:
    if stack == "amd":
        from tests.test_amd_gpu import amd_variant

        return run_stack("dev", amd_variant())
    if stack == "shared-gpus":
        from tests.test_scheduling import variant_config

        return run_stack("dev", variant_config("shared-gpus"))
    return run_stack(stack)
