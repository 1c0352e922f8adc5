"""`make plan`: evaluate a stack offline and show what `pulumi up` would create, cost and need.

Runs the real program with the stack's real config under Pulumi mocks. The first screen comes first:
the verdicts, one line each (mandatory policy violations and invalid Kubernetes objects as errors;
advisory violations, placeholders a real deployment refuses, known limits and GPU nodes kept up around
the clock as warnings; next steps as notes), then the summary: node pools (each by its config name with
its Azure name beside it, and the price of one node with its parts), the vCPU quota each family needs at
peak, a monthly floor and ceiling, each team's quota ceiling and each model's cost, and each GPU pool's
and model's cold start, the whole path with its total first. The detail (every verdict in full, what the
estimate leaves out, the cold-start figures with their sources and switches, the component tree with
each resource's decisive settings, counts by type, Kubernetes schema verdicts, every policy verdict,
images) follows with `--detail`, and is always written to out/<stack>/plan.txt. `--format markdown`
prints the same as a pull-request comment with the detail folded away.

Writes under out/<stack>/: every rendered Kubernetes object (k8s/), the Helm values (helm/), the whole
report (plan.txt) and the machine-readable plan (plan.json, compared by `make plan-diff`). Output is
deterministic: two runs on the same tree give the same bytes. Values that only the mocks know (IDs,
principal IDs, addresses, endpoints) are shown as `<computed: origin>`.

Exit 1 on an invalid object or a mandatory policy violation, 2 on a config error.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aks_gpu_platform.config import ConfigError, PlatformConfig, load_platform_config
from aks_gpu_platform.config.fleet.section import is_fleet_stack, load_fleet
from aks_gpu_platform.config.loader import PROJECT, settings_from_runtime_config
from aks_gpu_platform.policy_rules import Policy, Violation
from aks_gpu_platform.testing import Recording, policy_verdicts
from aks_gpu_platform.testing.stack_files import load_stack_file, read_stack_yaml, secret_paths, to_runtime_config

from . import cold_start, summary
from .adapter_cost import adapter_cost_lines
from .describe import tree_lines
from .document import plan_document, write_plan
from .fleet_report import fleet_main
from .layout import DETAIL_INDENT, wrap
from .mock_values import MockValueMarker
from .model_cost import model_cost_headline, model_cost_line
from .offline import find_project, run_stack
from .render import ObjectVerdict, render_and_validate
from .screen import REPORT_FILE, render_markdown, render_text
from .verdicts import (
    LEVELS,
    Verdict,
    error_verdicts,
    image_lines,
    node_verdicts,
    placeholder_verdicts,
    platform_verdicts,
    serving_verdicts,
)


@dataclass
class Report:
    """Everything the plan shows, gathered once and rendered as text or markdown."""

    title: str
    stack: str
    costs: summary.Costs
    resource_total: int = 0
    verdicts: list[Verdict] = field(default_factory=list[Verdict])
    pool_rows: list[list[str]] = field(default_factory=list[list[str]])
    quota_rows: list[list[str]] = field(default_factory=list[list[str]])
    cost_rows: list[list[str]] = field(default_factory=list[list[str]])
    cost_notes: list[str] = field(default_factory=list[str])
    """Under the estimate on the first screen: the price basis and what the total leaves out."""
    team_lines: list[str] = field(default_factory=list[str])
    model_headlines: list[str] = field(default_factory=list[str])
    cold_start_lines: list[str] = field(default_factory=list[str])
    cost_lines: list[str] = field(default_factory=list[str])
    """Detail: each item the estimate leaves out, the usage it states."""
    model_lines: list[str] = field(default_factory=list[str])
    """Detail: each model's cost with the node price's parts, its token price and its benchmark's differences."""
    # Before `cold_start`, whose name the class body rebinds to a field.
    model_ready: list[cold_start.PoolBudget] = field(default_factory=list[cold_start.PoolBudget])
    cold_start: list[cold_start.PoolBudget] = field(default_factory=list[cold_start.PoolBudget])
    resource_counts: list[str] = field(default_factory=list[str])
    tree: list[str] = field(default_factory=list[str])
    objects: list[str] = field(default_factory=list[str])
    policies: list[str] = field(default_factory=list[str])
    images: list[str] = field(default_factory=list[str])
    outputs: str = ""
    written_to: str = ""

    def _texts(self, level: str) -> list[str]:
        return [v.text for v in self.verdicts if v.level == level]

    @property
    def errors(self) -> list[str]:
        return self._texts("error")

    @property
    def warnings(self) -> list[str]:
        return self._texts("warning")

    @property
    def notes(self) -> list[str]:
        return self._texts("note")


def _gather_verdicts(
    report: Report,
    cfg: PlatformConfig,
    recording: Recording,
    objects: Sequence[ObjectVerdict],
    policies: Sequence[tuple[Policy, Sequence[Violation]]],
    marker: MockValueMarker,
    secrets: Sequence[str],
) -> None:
    costs = report.costs
    report.verdicts = error_verdicts(policies, objects, cfg.cluster.schema_version, marker)
    report.verdicts += placeholder_verdicts(cfg, secrets)
    report.verdicts += platform_verdicts(cfg, recording)
    report.verdicts += node_verdicts(costs.pools, costs.held, costs.unknown, costs.region)
    report.verdicts += serving_verdicts(cfg)
    report.verdicts.sort(key=lambda v: LEVELS.index(v.level))  # stable: errors, then warnings, then notes


def _summarize(report: Report, cfg: PlatformConfig) -> None:
    costs = report.costs
    report.pool_rows = summary.pool_rows(costs)
    report.quota_rows = summary.quota_rows(costs)
    report.cost_rows = summary.cost_rows(costs.estimate)
    report.cost_notes = [summary.price_basis(costs.estimate), summary.left_out(costs.estimate)]
    report.team_lines = [summary.team_line(team) for team in costs.teams]
    report.model_headlines = [model_cost_headline(model) for model in costs.models]
    report.cold_start = cold_start.budgets(cfg, costs.pools)
    report.model_ready = cold_start.models_ready(cfg)
    report.cold_start_lines = summary.cold_start_lines(report.cold_start, cfg.inference.models, report.model_ready)
    report.cost_lines = summary.left_out_lines(costs.estimate)
    report.model_lines = [model_cost_line(model) for model in costs.models]
    report.model_lines += adapter_cost_lines(cfg.inference.models, costs.models)


def _object_lines(objects: Sequence[ObjectVerdict], schema: str) -> list[str]:
    by_status = Counter(v.status for v in objects)
    lines = wrap(
        f"{len(objects)} Kubernetes objects against the upstream OpenAPI schema {schema} (strict): "
        + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
        + " (custom resources have no upstream schema; the component tests check them)",
        "  ",
    )
    for v in objects:
        detail = f"  {v.detail}" if v.status == "invalid" else ""
        lines += wrap(f"{v.status:15s} {v.kind}/{v.name}{detail}", DETAIL_INDENT)
    return lines


def _describe_resources(
    report: Report,
    cfg: PlatformConfig,
    recording: Recording,
    objects: Sequence[ObjectVerdict],
    policies: Sequence[tuple[Policy, Sequence[Violation]]],
    marker: MockValueMarker,
) -> None:
    counts = Counter(r.type for r in recording.resources if r.custom)
    report.resource_counts = [f"{DETAIL_INDENT}{n:3d}  {t}" for t, n in sorted(counts.items())]
    report.tree = tree_lines(recording, marker, DETAIL_INDENT)
    report.objects = _object_lines(objects, cfg.cluster.schema_version)
    for policy, violations in policies:
        status = "pass" if not violations else ("FAIL" if policy.mandatory else "advisory")
        report.policies += wrap(f"{status:8s} {policy.name}: {policy.description}", DETAIL_INDENT)
    report.images = image_lines(recording)
    report.outputs = "Stack outputs: " + ", ".join(
        f"{k}{' (secret)' if k in recording.secret_outputs else ''}" for k in sorted(recording.stack_outputs)
    )


def build_report(
    stack: str,
    cfg: PlatformConfig,
    recording: Recording,
    verdicts: Sequence[ObjectVerdict],
    policies: Sequence[tuple[Policy, Sequence[Violation]]],
    marker: MockValueMarker,
    out_dir: Path,
    secrets: Sequence[str] = (),
) -> Report:
    """The plan of `stack`: its verdicts, its summary, and the detail of every resource."""
    total = sum(r.custom for r in recording.resources)
    title = f"Plan for stack '{stack}' ({cfg.location}): {total} resources, evaluated offline"
    report = Report(title, stack, summary.stack_costs(recording, cfg), total)
    _gather_verdicts(report, cfg, recording, verdicts, policies, marker, secrets)
    _summarize(report, cfg)
    _describe_resources(report, cfg, recording, verdicts, policies, marker)
    shown, here = out_dir.resolve(), Path.cwd()
    report.written_to = str(shown.relative_to(here) if shown.is_relative_to(here) else shown)
    return report


def plan_summary(
    recording: Recording, cfg: PlatformConfig | None = None, report: Report | None = None
) -> dict[str, Any]:
    """What a reviewer compares between two plans: vCPU quota per family at peak, monthly floor and ceiling, what
    is billed but has no price, each team's quota ceiling (its GPU-hours); with `cfg` each model's cost, with
    `report` its verdicts (errors and warnings). A report's figures are reused, not computed again."""
    costs = report.costs if report is not None else summary.stack_costs(recording, cfg)
    document: dict[str, Any] = {
        "quota": {n.quota: n.vcpus for n in costs.quota},
        "monthly": {"floor": round(costs.estimate.floor, 2), "ceiling": round(costs.estimate.ceiling, 2)},
        "unpriced": sorted(set(costs.estimate.unpriced)),
        "teams": {
            t.team: {"gpus": t.gpus, "monthly": round(t.monthly, 2), "estimate": t.estimate} for t in costs.teams
        },
    }
    if cfg is not None:
        document["models"] = {
            m.model: {"floor": m.floor, "ceiling": m.ceiling, "estimate": m.estimate} for m in costs.models
        }
    if report is not None:
        document["verdicts"] = {"errors": report.errors, "warnings": report.warnings}
    return document


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default out/<stack>)")
    parser.add_argument(
        "--config-file", type=Path, default=None, help="stack YAML to use instead of Pulumi.<stack>.yaml"
    )
    parser.add_argument("--format", choices=("text", "markdown"), default="text", help="report format")
    parser.add_argument(
        "--detail", action="store_true", help="print the detail after the first screen (always in <out>/plan.txt)"
    )
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the Pulumi project to plan (default: the folder of the nearest Pulumi.yaml at or above this one)",
    )
    return parser.parse_args(argv)


def _plan(options: argparse.Namespace, project: Path, stack_config: dict[str, Any], cfg: PlatformConfig) -> int:
    """Plan an evaluated platform stack: render and check its objects, write the files, print the report."""
    out_dir: Path = options.out or project / "out" / options.stack
    started = time.perf_counter()
    recording = run_stack(options.stack, stack_config, project_dir=project)
    # Timing varies run to run, so it goes to stderr and stdout stays comparable.
    print(
        f"evaluated stack '{options.stack}' under Pulumi mocks in {time.perf_counter() - started:.1f}s", file=sys.stderr
    )
    marker = MockValueMarker(recording.mock_values)
    objects = render_and_validate(recording, out_dir, cfg.cluster.schema_version, marker)
    policies = policy_verdicts(recording, cfg.environment)
    secrets = secret_paths(stack_config)
    report = build_report(options.stack, cfg, recording, objects, policies, marker, out_dir, secrets)
    budget_rows = [cold_start.as_document(b) for b in report.cold_start]
    summary_document = plan_summary(recording, cfg, report)
    write_plan(plan_document(recording, options.stack, marker, summary_document, budget_rows, stack_config), out_dir)
    (out_dir / REPORT_FILE).write_text(render_text(report, detail=True))
    sys.stdout.write(render_markdown(report) if options.format == "markdown" else render_text(report, options.detail))
    invalid = [v for v in objects if v.status == "invalid"]
    if invalid:
        print(f"error: {len(invalid)} Kubernetes object(s) fail the schema", file=sys.stderr)
    mandatory = [v for policy, vs in policies if policy.mandatory for v in vs]
    if mandatory:
        print(f"error: {len(mandatory)} mandatory policy violation(s)", file=sys.stderr)
    return 1 if invalid or mandatory else 0


def main(argv: list[str] | None = None) -> int:
    options = _arguments(argv)
    try:
        project = options.project_dir or find_project()
        stack_config = (
            load_stack_file(options.stack, project)
            if options.config_file is None
            else read_stack_yaml(options.config_file)
        )
        settings = settings_from_runtime_config(to_runtime_config(stack_config, PROJECT)[0])
        if is_fleet_stack(settings):
            return fleet_main(options.stack, stack_config, load_fleet(settings), options.out, project)
        return _plan(options, project, stack_config, load_platform_config(settings))
    except (ConfigError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from .cli import ending_process

    status = main()
    ending_process()
    sys.exit(status)
