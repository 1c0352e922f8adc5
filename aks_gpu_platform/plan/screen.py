"""The plan as a person reads it: the first screen (verdicts one line each, then the summary), then the detail,
as text for a terminal or as markdown for a pull-request comment (the detail folded away)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import cold_start
from .layout import details, md_table, one_line, table, wrap, wrap_all
from .summary import COST_HEADER, POOL_HEADER, QUOTA_HEADER
from .verdicts import LEVELS, Verdict

if TYPE_CHECKING:
    from .report import Report

REPORT_FILE = "plan.txt"
"""The whole text report, first screen and detail, beside plan.json."""

POOLS_TITLE = "Node pools (config name, its Azure agent-pool name beside it) and what one node costs a month:"
QUOTA_TITLE = "vCPU quota at peak (maxCount plus upgrade surge; Spot pools count as low-priority):"
COST_TITLE = "Monthly estimate (floor: what bills from creation, GPU nodes workloads keep up; ceiling: maxCount):"
COLD_START_TITLE = "Cold start, the whole path, its total first (unknown: no published upper bound):"
COLD_START_HEADER = ["stage", "time", "see"]
SWITCH_HEADER = ["switch", "now", "stage", "off", "on"]


def placeholder_line(placeholders: Sequence[Verdict]) -> str:
    """Every placeholder on one line: how many `pulumi up` refuses, and each path."""
    refused = sum(v.deployed for v in placeholders)
    paths = [v.placeholder if v.deployed else f"{v.placeholder} (section off)" for v in placeholders]
    return (
        f"{len(placeholders)} placeholder{'s' if len(placeholders) > 1 else ''} to replace (`pulumi up` refuses "
        f"the {refused} that would reach Azure): {', '.join(paths)}"
    )


def screen_verdicts(verdicts: Sequence[Verdict]) -> list[tuple[str, str, bool]]:
    """(level, text, cut to one line?) per first-screen verdict: each verdict's text to be cut to a line, and every
    placeholder on one line, wrapped rather than cut (each is a field to fill in), at the first one's place."""
    placeholders = [v for v in verdicts if v.placeholder]
    shown: list[tuple[str, str, bool]] = []
    for v in verdicts:
        if not v.placeholder:
            shown.append((v.level, v.text, True))
        elif v is placeholders[0]:
            shown.append((v.level, placeholder_line(placeholders), False))
    return shown


def verdict_count(verdicts: Sequence[Verdict]) -> str:
    counts = [(level, sum(v.level == level for v in verdicts)) for level in LEVELS]
    return ", ".join(f"{n or 'no'} {level}{'' if n == 1 else 's'}" for level, n in counts)


def detail_pointer(report: Report, detail: bool) -> str:
    where = f"{report.written_to}/{REPORT_FILE}"
    if detail:
        return f"The detail follows the summary; it is also in {where}."
    return f"Detail (verdicts in full, cost notes, cold-start sources, resources, images): {where} or --detail."


def _screen_verdict_lines(report: Report) -> list[str]:
    lines = [f"Verdicts: {verdict_count(report.verdicts)} (one line each; in full in the detail)"]
    for level, text, cut in screen_verdicts(report.verdicts):
        lines += [one_line(f"{level}: {text}", "  ")] if cut else wrap(f"{level}: {text}", "  ")
    return lines


def first_screen(report: Report, detail: bool = False) -> list[str]:
    """The verdicts and the summary: what a reader needs before any resource."""
    lines = [report.title, *wrap(detail_pointer(report, detail)), "", *_screen_verdict_lines(report), ""]
    lines += [POOLS_TITLE, *table(POOL_HEADER, report.pool_rows)]
    lines += [QUOTA_TITLE, *table(QUOTA_HEADER, report.quota_rows)]
    lines += [COST_TITLE, *table(COST_HEADER, report.cost_rows)]
    notes = [*report.cost_notes, *report.team_lines, *report.model_headlines]
    lines += [wrapped for note in notes for wrapped in wrap(note, "  ")]
    if report.cold_start_lines:
        lines += [COLD_START_TITLE, *(wrapped for line in report.cold_start_lines for wrapped in wrap(line, "  "))]
    return lines


def _cold_start_rows(budget: cold_start.PoolBudget) -> list[list[str]]:
    return [[s.name, cold_start.seconds(s.figure), f"[{i}]"] for i, s in enumerate(budget.stages, 1)] + [
        ["total", cold_start.total(budget), ""]
    ]


def _cold_start_sources(budget: cold_start.PoolBudget) -> list[str]:
    """Each stage's figure: what it is, where it was published and when."""
    return (
        [
            f"[{i}] {s.figure.note}{'; ' if s.figure.note else ''}{s.figure.source} ({s.figure.published.isoformat()})"
            for i, s in enumerate(budget.stages, 1)
        ]
        + [f"{e.switch} costs: {e.cost}" for e in budget.effects]
        + budget.notes
    )


def _switch_rows(budget: cold_start.PoolBudget) -> list[list[str]]:
    return [
        [e.switch, "on" if e.on else "off", e.stage, cold_start.seconds(e.before), cold_start.seconds(e.after)]
        for e in budget.effects
    ]


def _cold_start_title(budget: cold_start.PoolBudget) -> str:
    return f"Cold start of pool {budget.pool} ({budget.vm_size}): pending GPU pod to a running job"


def _model_ready_title(budget: cold_start.PoolBudget) -> str:
    return f"Model ready for {budget.pool} ({budget.vm_size}): a new replica on a new node to its first token"


def _budget_lines(budget: cold_start.PoolBudget, title: str) -> list[str]:
    lines = [f"  {title}:", *table(COLD_START_HEADER, _cold_start_rows(budget), "    ")]
    if budget.effects:
        lines += table(SWITCH_HEADER, _switch_rows(budget), "    ")
    return lines + [line for n in _cold_start_sources(budget) for line in wrap(n, "      ")]


def _cold_start_detail(report: Report) -> list[str]:
    lines = [line for b in report.cold_start for line in _budget_lines(b, _cold_start_title(b))]
    return lines + [line for b in report.model_ready for line in _budget_lines(b, _model_ready_title(b))]


def _full_verdicts(report: Report) -> list[str]:
    return [line for v in report.verdicts for line in wrap(f"{v.level}: {v.text}", "    ")]


def render_text(report: Report, detail: bool = False) -> str:
    """The first screen; with `detail`, everything after it."""
    lines = first_screen(report, detail)
    if detail:
        lines += ["", "Detail", "  Verdicts in full:", *_full_verdicts(report)]
        lines += ["  Cost, what the estimate leaves out and each model in full:"]
        lines += wrap_all([*report.cost_lines, *report.model_lines])
        lines += [*_cold_start_detail(report), "  Resources:", *report.tree]
        lines += ["  Resources by type:", *report.resource_counts, *report.objects]
        lines += ["  Policy verdicts (the rules `pulumi preview --policy-pack policy` runs):", *report.policies]
        lines += ["  Images (each with its digest, or unpinned and why):", *wrap_all(report.images)]
        lines += wrap(report.outputs, "  ")
        lines.append(f"  Rendered objects, Helm values, plan.json and {REPORT_FILE} written to {report.written_to}")
    return "\n".join(lines) + "\n"


def _md_verdicts(report: Report) -> list[str]:
    lines = [f"#### Verdicts: {verdict_count(report.verdicts)} (one line each; in full below)", ""]
    lines += [
        f"- **{level}**: {one_line(text) if cut else text}" for level, text, cut in screen_verdicts(report.verdicts)
    ]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    """The first screen as markdown; the detail folded in `<details>` blocks."""
    lines = [f"### {report.title}", "", *_md_verdicts(report)]
    lines += [f"#### {POOLS_TITLE.rstrip(':')}", "", *md_table(POOL_HEADER, report.pool_rows), ""]
    lines += [f"#### {QUOTA_TITLE.rstrip(':')}", "", *md_table(QUOTA_HEADER, report.quota_rows), ""]
    lines += [f"#### {COST_TITLE.rstrip(':')}", "", *md_table(COST_HEADER, report.cost_rows), ""]
    lines += [f"- {note}" for note in [*report.cost_notes, *report.team_lines, *report.model_headlines]] + [""]
    if report.cold_start_lines:
        lines += [f"#### {COLD_START_TITLE.rstrip(':')}", "", *(f"- {line}" for line in report.cold_start_lines), ""]
    lines += details("Verdicts in full", _full_verdicts(report))
    lines += details(
        "What the estimate leaves out, each model in full", wrap_all([*report.cost_lines, *report.model_lines])
    )
    lines += details("Cold start: each stage's source, each switch", _cold_start_detail(report))
    lines += details(f"Resources ({report.resource_total}) by component", report.tree)
    lines += details("Resources by type", report.resource_counts)
    lines += details("Kubernetes objects", report.objects)
    lines += details("Policy verdicts", report.policies)
    lines += details("Images (each with its digest, or unpinned and why)", report.images)
    lines += [report.outputs, ""]
    return "\n".join(lines)
