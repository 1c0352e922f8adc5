"""The machine-readable plan (`out/<stack>/plan.json`): every registered resource keyed by URN.

Each resource carries its type, name, parent, the inputs the program sends (map keys sorted,
values only the mocks know replaced by `<computed: origin>`, provider secrets withheld) and the
options that decide how Pulumi changes it (protect, ignoreChanges, replaceOnChanges,
deleteBeforeReplace: null when the program leaves it to the provider); `summary` holds the vCPU
quota per family and the monthly floor and ceiling. Two of these files, from two git refs, are what
`make plan-diff` compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aks_gpu_platform.testing import RecordedResource, Recording

from .mock_values import MockValueMarker

PLAN_FORMAT = "aks-gpu-platform/plan/v1"
PLAN_FILE = "plan.json"
WITHHELD = "<secret: withheld>"
# Provider inputs that carry credentials (the cluster's kubeconfig).
SECRET_PROVIDER_INPUTS = frozenset({"kubeconfig"})


class PlanFileError(Exception):
    """A plan.json that is missing, unreadable or of another format."""


def _provider_urn(reference: str) -> str | None:
    """A provider reference is `<urn>::<id>`; the ID is the mocks', so only the URN is kept."""
    return reference.rsplit("::", 1)[0] if reference else None


def _inputs(resource: RecordedResource, marker: MockValueMarker) -> dict[str, Any]:
    inputs = {k: v for k, v in resource.inputs.items() if not k.startswith("__")}
    if resource.type.startswith("pulumi:providers:"):
        inputs = {k: WITHHELD if k in SECRET_PROVIDER_INPUTS else v for k, v in inputs.items()}
    return marker.value(inputs)


def resource_entry(resource: RecordedResource, marker: MockValueMarker) -> dict[str, Any]:
    return {
        "type": resource.type,
        "name": resource.name,
        "parent": resource.parent or None,
        "custom": resource.custom,
        "inputs": _inputs(resource, marker) if resource.custom else {},
        "options": {
            "protect": resource.protect,
            "ignoreChanges": sorted(resource.ignore_changes),
            "replaceOnChanges": sorted(resource.replace_on_changes),
            "deleteBeforeReplace": resource.delete_before_replace if resource.delete_before_replace_defined else None,
            "retainOnDelete": resource.retain_on_delete,
            "dependsOn": sorted(set(resource.depends_on)),
            "deletedWith": resource.deleted_with or None,
            "provider": _provider_urn(resource.provider),
        },
    }


def plan_document(
    recording: Recording,
    stack: str,
    marker: MockValueMarker | None = None,
    summary: dict[str, Any] | None = None,
    cold_start: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`summary`: the figures a reviewer compares (vCPU quota per family, monthly floor and ceiling); `cold_start`:
    the per-GPU-pool cold-start budget (aks_gpu_platform/plan/cold_start.py), when computed; `config`: the stack
    file's `config` map the plan ran with (secure values withheld), from which a diff names the key behind a change."""
    marker = marker or MockValueMarker(recording.mock_values)
    return {
        **({"coldStart": cold_start} if cold_start is not None else {}),
        **({"config": _withhold_secure(config)} if config is not None else {}),
        "format": PLAN_FORMAT,
        "stack": stack,
        "summary": summary or {},
        "resources": {r.urn: resource_entry(r, marker) for r in recording.in_urn_order()},
        "outputs": {
            name: WITHHELD if name in recording.secret_outputs else marker.value(value)
            for name, value in sorted(recording.stack_outputs.items())
        },
    }


def _withhold_secure(value: Any) -> Any:
    """The stack config with every `secure:` value (Pulumi's encrypted form) replaced by WITHHELD."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:  # pyright: ignore[reportUnknownArgumentType]
            return WITHHELD
        return {k: _withhold_secure(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_withhold_secure(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def dumps(document: dict[str, Any]) -> str:
    """Stable text: sorted keys, one layout, a final newline; equal plans give equal bytes."""
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_plan(document: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / PLAN_FILE
    path.write_text(dumps(document))
    return path


def read_plan(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise PlanFileError(f"no plan at {path}") from err
    except (OSError, json.JSONDecodeError) as err:
        raise PlanFileError(f"cannot read {path}: {err}") from err
    if not isinstance(document, dict) or document.get("format") != PLAN_FORMAT:  # pyright: ignore[reportUnknownMemberType]
        raise PlanFileError(f"{path} is not a {PLAN_FORMAT} plan")
    return document  # pyright: ignore[reportUnknownVariableType]
