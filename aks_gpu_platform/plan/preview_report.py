"""Markdown report of a `pulumi preview --json`: what would change, and the replacement guard's verdict.

    pulumi preview --stack prod --json > preview.json
    python -m aks_gpu_platform.plan.preview_report preview.json --stack prod >> "$GITHUB_STEP_SUMMARY"

One preview feeds both the report an approver reads (the job summary before the prod approval gate,
the pull request) and the guard; the exit code is the guard's (1 when a stateful or protected resource
would be replaced or deleted, 2 on unreadable input).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .replacement_guard import findings, read_preview, type_of

# Order in which an approver wants to read the steps: destruction first.
OP_ORDER = ("delete", "replace", "delete-replaced", "create-replacement", "update", "create", "read", "import")


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _changed(step: Mapping[str, Any]) -> str:
    keys = [str(k) for k in step.get("diffs") or []] or sorted(str(k) for k in (step.get("detailedDiff") or {}))
    return ", ".join(f"`{k}`" for k in keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")


# pulumi-kubernetes marks the cluster unreachable and diffs client-side in previews (provider.go, Configure).
UNREACHABLE = "cluster is unreachable"


def cluster_unreachable(preview: Mapping[str, Any]) -> bool:
    """True when the Kubernetes provider could not reach the API server during the preview."""
    return any(UNREACHABLE in str(d.get("message", "")) for d in preview.get("diagnostics") or [])


def report(preview: Mapping[str, Any], stack: str) -> str:
    steps = [s for s in preview.get("steps") or [] if s.get("op") not in (None, "same")]
    summary = preview.get("changeSummary") or {}
    counts = ", ".join(f"{op} {n}" for op, n in sorted(summary.items())) or "no steps"
    lines = [f"### Preview of `{stack}`", "", f"Changes: {counts}.", ""]
    if cluster_unreachable(preview):
        lines += [
            "> The API server did not admit this runner (authorized IP ranges): the Kubernetes objects were "
            "diffed client-side, without the server's dry run. Azure resources are exact. See docs/delivery.md.",
            "",
        ]
    guard = findings(preview)
    if guard:
        lines += [f"**Replacement guard: {len(guard)} stateful or protected resource(s) would be destroyed.**", ""]
        lines += [f"- `{f.op}` `{f.urn}`: {f.why_guarded}; {f.cause}" for f in guard]
        lines += [
            "",
            "Revert the change, add an alias, or rerun the guard with `--allow URN` if the loss is intended.",
            "",
        ]
    else:
        lines += ["Replacement guard: no stateful or protected resource is replaced or deleted.", ""]
    if steps:
        rank = {op: i for i, op in enumerate(OP_ORDER)}
        steps.sort(key=lambda s: (rank.get(str(s.get("op")), len(OP_ORDER)), str(s.get("urn"))))
        lines += ["| op | type | name | changed |", "| --- | --- | --- | --- |"]
        lines += [
            f"| {s.get('op')} | `{type_of(s)}` | `{_name(str(s.get('urn', '')))}` | {_changed(s)} |" for s in steps
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preview", type=Path, help="output of `pulumi preview --json`")
    parser.add_argument("--stack", required=True)
    options = parser.parse_args(argv)
    preview = read_preview(options.preview)
    if preview is None:
        return 2
    print(report(preview, options.stack), end="")
    return 1 if findings(preview) else 0


if __name__ == "__main__":
    sys.exit(main())
