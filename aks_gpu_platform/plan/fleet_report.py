"""The offline plan of a fleet stack: the known limits it hits, then per region the vCPU quota each family needs
at peak and what each cluster costs a month."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aks_gpu_platform.config.fleet.section import FleetPlan
from aks_gpu_platform.config.known_limits import FLEET_LIMITS, PLATFORM_LIMITS, hit

from .cost import monthly_usd
from .document import plan_document, write_plan
from .estimate import FleetPart, fleet_parts
from .layout import table, wrap
from .mock_values import MockValueMarker
from .offline import run_stack
from .render import render_and_validate


def fleet_lines(parts: Sequence[FleetPart]) -> list[str]:
    """Per region the vCPU quota each family needs at peak (every pool at maxCount plus surge), and the cost."""
    lines = ["Fleet: vCPU quota at peak, per region and family (what to request before deploying)"]
    regions: dict[str, dict[str, int]] = {}
    for part in parts:
        for need in part.quota:
            family = regions.setdefault(part.region, {})
            family[need.quota] = family.get(need.quota, 0) + need.vcpus
    rows = [
        [region, quota, str(vcpus)] for region, families in sorted(regions.items()) for quota, vcpus in families.items()
    ]
    lines += table(["region", "quota", "vCPUs"], rows)
    lines.append("Fleet: monthly cost (floor = every pool at minCount, ceiling = at maxCount)")
    rows = [
        [part.owner, part.region, monthly_usd(part.estimate.floor), monthly_usd(part.estimate.ceiling)]
        for part in parts
    ]
    rows.append(
        [
            "fleet",
            "",
            monthly_usd(sum(p.estimate.floor for p in parts)),
            monthly_usd(sum(p.estimate.ceiling for p in parts)),
        ]
    )
    lines += table(["cluster", "region", "floor", "ceiling"], rows)
    unpriced = sorted({item for part in parts for item in part.estimate.unpriced})
    lines += [f"  not priced: {item}" for item in unpriced]
    return lines


def fleet_verdict_lines(plan: FleetPlan) -> list[str]:
    """The known limitations the fleet and each member platform hit (config/known_limits.py)."""
    warnings = hit(FLEET_LIMITS, plan)
    warnings += [f"member {m}: {w}" for m, cfg in plan.members.items() for w in hit(PLATFORM_LIMITS, cfg)]
    lines = ["Verdicts", *(line for w in warnings for line in wrap(f"warning: {w}", "  "))]
    return [*lines, "  no warnings"] if not warnings else lines


def fleet_main(stack: str, stack_config: dict[str, Any], plan: FleetPlan, out: Path | None, project: Path) -> int:
    """The offline plan of a fleet stack: every Kubernetes object validated, then quota and cost per region."""
    started = time.perf_counter()
    recording = run_stack(stack, stack_config, project_dir=project)
    print(
        f"evaluated fleet stack '{stack}' under Pulumi mocks in {time.perf_counter() - started:.1f}s", file=sys.stderr
    )
    marker = MockValueMarker(recording.mock_values)
    out_dir = out or project / "out" / stack
    verdicts = render_and_validate(recording, out_dir, plan.training.cluster.schema_version, marker)
    write_plan(plan_document(recording, stack, marker), out_dir)
    owners = {"manager": plan.fleet.manager.location, **{m: c.location for m, c in plan.members.items()}}
    print("\n".join(fleet_verdict_lines(plan)))
    print("\n".join(fleet_lines(fleet_parts(recording, "fleet", owners))))
    invalid = [v for v in verdicts if v.status == "invalid"]
    if invalid:
        print(f"error: {len(invalid)} Kubernetes object(s) fail the schema", file=sys.stderr)
        return 1
    return 0
