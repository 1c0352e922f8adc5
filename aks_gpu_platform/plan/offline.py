"""This repository's program (`__main__.py`) evaluated under the recording mocks of `aks_gpu_platform.testing`."""

from __future__ import annotations

from typing import Any

from aks_gpu_platform.testing import Recording, evaluate, evaluate_stack_file, program_from_file

from . import REPO_ROOT
from .recording_cache import cached


def run_stack(stack: str, config: dict[str, Any] | None = None, preview: bool = False) -> Recording:
    """Evaluate `__main__.py` with `Pulumi.<stack>.yaml`, or with `config` (YAML-shaped) instead."""
    if config is None:
        return cached(lambda: evaluate_stack_file(stack, project_dir=REPO_ROOT, preview=preview), stack, preview)
    return cached(
        lambda: evaluate(program_from_file(REPO_ROOT / "__main__.py"), config, stack=stack, preview=preview),
        stack,
        preview,
        config,
    )
