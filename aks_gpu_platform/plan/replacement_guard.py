"""Fail a pull request whose `pulumi preview --json` would replace or delete a stateful resource.

    pulumi preview --stack prod --json > preview.json
    python -m aks_gpu_platform.plan.replacement_guard preview.json [--allow URN ...]

Reads the JSON digest the CLI prints (`steps[]` with `op`, `urn`, `oldState`/`newState`,
`replaceReasons`, `detailedDiff`; `changeSummary`) and exits 1 when the cluster, Lustre, a
storage account, a registry, a GPU pool or any protected resource would be replaced or deleted,
printing what and why. It also exits 1 on an update Azure refuses (a node pool moved to another subnet),
which would stop `pulumi up` halfway. `--allow` accepts such a step for one URN on purpose.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from aks_gpu_platform.policy_model import AGENT_POOL, AML_FILESYSTEM, MANAGED_CLUSTER, REGISTRY, STORAGE_ACCOUNT
from aks_gpu_platform.policy_rules import is_gpu_pool

from .replacement import refused_update

# Each loses data or running workloads when destroyed.
STATEFUL_TYPES: dict[str, str] = {
    MANAGED_CLUSTER: "the cluster runs every workload; replacing it drops them all and changes its identity",
    AML_FILESYSTEM: "Lustre holds training data and checkpoints that are lost with it",
    STORAGE_ACCOUNT: "the storage account holds data that is lost with it",
    REGISTRY: "the registry holds every image the cluster pulls",
}
GPU_POOL_REASON = "the GPU pool's nodes run training jobs that would be killed, and capacity may not come back"
PROTECTED_REASON = "the resource is protected (protect=True)"

# Steps that destroy the existing cloud resource (a replace is a create plus a delete of the old one).
DESTRUCTIVE_OPS = frozenset({"delete", "replace", "create-replacement", "delete-replaced"})


@dataclass(frozen=True)
class Finding:
    urn: str
    type: str
    op: str
    why_guarded: str
    cause: str

    def __str__(self) -> str:
        return f"{self.op:18s} {self.urn}\n    guarded: {self.why_guarded}\n    cause:   {self.cause}"


def type_of(step: Mapping[str, Any]) -> str:
    """The resource type: from the step's states, else from the URN (`...::parent$type::name`)."""
    for key in ("newState", "oldState"):
        state = step.get(key) or {}
        if state.get("type"):
            return str(state["type"])
    if step.get("type"):
        return str(step["type"])
    parts = str(step.get("urn", "")).split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def _inputs(step: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("oldState", "newState"):
        inputs = (step.get(key) or {}).get("inputs")
        if inputs:
            return inputs
    return {}


def why_guarded(step: Mapping[str, Any]) -> str | None:
    type_token = type_of(step)
    if type_token in STATEFUL_TYPES:
        return STATEFUL_TYPES[type_token]
    if type_token == AGENT_POOL and is_gpu_pool(_inputs(step)):
        return GPU_POOL_REASON
    if (step.get("oldState") or {}).get("protect"):
        return PROTECTED_REASON
    return None


def cause_of(step: Mapping[str, Any]) -> str:
    op = step.get("op")
    if op == "delete":
        return "the resource is no longer in the program (or its name/parent changed without an alias)"
    keys = [str(k) for k in step.get("replaceReasons") or step.get("keys") or []]
    diff = step.get("detailedDiff") or {}
    keys += [
        path for path, d in diff.items() if str((d or {}).get("kind", "")).endswith("-replace") and path not in keys
    ]
    if keys:
        return "changing " + ", ".join(keys) + " forces a replacement"
    return "the provider requires a replacement (no property named)"


def refused(step: Mapping[str, Any]) -> Finding | None:
    """An in-place update the provider would send and Azure refuses (a pool moved to another subnet)."""
    entry = {"type": type_of(step), "inputs": _inputs(step)}
    paths = [str(path) for path in (step.get("detailedDiff") or {})] + [str(k) for k in step.get("diffs") or []]
    why = next((w for path in paths if (w := refused_update(entry, path))), None)
    if why is None:
        return None
    return Finding(str(step.get("urn", "")), entry["type"], "update", why, "changing " + ", ".join(sorted(set(paths))))


def findings(preview: Mapping[str, Any], allowed: Sequence[str] = ()) -> list[Finding]:
    seen: set[str] = set()
    found: list[Finding] = []
    for step in preview.get("steps") or []:
        op = str(step.get("op", ""))
        urn = str(step.get("urn", ""))
        if op == "update" and urn not in allowed and (refusal := refused(step)) is not None:
            seen.add(urn)
            found.append(refusal)
            continue
        if op not in DESTRUCTIVE_OPS or urn in seen or urn in allowed:
            continue
        reason = why_guarded(step)
        if reason is None:
            continue
        seen.add(urn)
        found.append(Finding(urn, type_of(step), op, reason, cause_of(step)))
    return found


def read_preview(path: Path) -> dict[str, Any] | None:
    """`pulumi preview --json` output from a file (or `-`, standard input); None after saying why it is unusable."""
    try:
        preview = json.loads(sys.stdin.read() if str(path) == "-" else path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        print(f"error: cannot read the preview JSON: {err}", file=sys.stderr)
        return None
    if not isinstance(preview, dict):
        print("error: the preview JSON must be an object with a `steps` list", file=sys.stderr)
        return None
    return cast(dict[str, Any], preview)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preview", type=Path, help="output of `pulumi preview --json` ('-' for stdin)")
    parser.add_argument("--allow", action="append", default=[], metavar="URN", help="accept this URN's step")
    options = parser.parse_args(argv)
    preview = read_preview(options.preview)
    if preview is None:
        return 2
    found = findings(preview, options.allow)
    summary = preview.get("changeSummary") or {}
    print("Change summary: " + (", ".join(f"{k}={v}" for k, v in sorted(summary.items())) or "none"))
    if not found:
        print("Replacement guard: no stateful or protected resource is replaced or deleted.")
        return 0
    print(f"Replacement guard: {len(found)} stateful or protected resource(s) would be destroyed:")
    for finding in found:
        print(f"  {finding}")
    print("Revert the change, add an alias, or rerun with --allow URN if the loss is intended.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
