"""A Pulumi project's program evaluated under the recording mocks of `aks_gpu_platform.testing`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aks_gpu_platform.testing import Recording, evaluate, evaluate_stack_file, program_from_file
from aks_gpu_platform.testing.runtime import project_entry

from .recording_cache import cached


def find_project(start: Path | None = None) -> Path:
    """The folder of the nearest `Pulumi.yaml` at or above `start` (default: the working directory), as the
    Pulumi CLI finds its project."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise FileNotFoundError(
        f"no Pulumi.yaml in {here} or any folder above it: run it in your Pulumi project or pass --project-dir"
    )


def run_stack(
    stack: str, config: dict[str, Any] | None = None, preview: bool = False, project_dir: Path | None = None
) -> Recording:
    """Evaluate the project's program with `Pulumi.<stack>.yaml`, or with `config` (YAML-shaped) instead.

    The project is `project_dir`, else the nearest `Pulumi.yaml` at or above the working directory.
    """
    project = (project_dir or find_project()).resolve()
    if config is None:
        return cached(lambda: evaluate_stack_file(stack, project_dir=project, preview=preview), project, stack, preview)
    name, entry = project_entry(project)
    return cached(
        lambda: evaluate(program_from_file(entry), config, stack=stack, project=name, preview=preview),
        project,
        stack,
        preview,
        config,
    )
