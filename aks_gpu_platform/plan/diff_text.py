"""A plan diff as a reviewer reads it: the quota and cost deltas first, then each change, its order and notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .diff import ABSENT, EntityChange, FigureChange, PlanDiff, PropertyChange, value_text


def _signed(amount: float, unit: str = "") -> str:
    sign = "+" if amount >= 0 else "-"
    return f"{sign}${abs(amount):,.0f}{unit}" if unit else f"{sign}{abs(amount):,.0f}"


def _money_delta(figure: FigureChange, diff: PlanDiff) -> str:
    """The change of a monthly figure; where the change adds something unpriced, a known $0 would be false."""
    if not diff.unpriced_added:
        return _signed(figure.delta, "/month")
    return "unpriced" if figure.delta == 0 else f"{_signed(figure.delta, '/month')} + unpriced"


def summary_lines(diff: PlanDiff) -> list[str]:
    """The quota and cost deltas a reviewer reads first."""
    if diff.summary_missing:
        return ["Quota and cost: a plan without a summary (made before plans carried one); compare the plans below."]
    lines: list[str] = []
    money = {c.name: c for c in diff.monthly}
    if money:
        parts = [f"{name} {_money_delta(money[name], diff)}" for name in ("floor", "ceiling") if name in money]
        totals = ", ".join(f"{name} ${money[name].after or 0:,.0f}" for name in ("floor", "ceiling") if name in money)
        lines.append(f"Monthly cost: {', '.join(parts)} (now {totals})")
    if diff.unpriced_added:
        lines.append("Unpriced (no price known, not in the figures): " + "; ".join(diff.unpriced_added))
    if diff.quota:
        lines.append(
            "vCPU quota at peak: "
            + "; ".join(
                f"{c.name} {c.before or 0:,.0f} -> {c.after or 0:,.0f} ({_signed(c.delta)})" for c in diff.quota
            )
        )
    else:
        lines.append("vCPU quota at peak: unchanged")
    lines += [
        f"Team {c.name}: {_team_figure(c.before)} -> {_team_figure(c.after)}{_delta(c, 'monthly')}" for c in diff.teams
    ]
    lines += [f"Model {c.name}: {_model_figure(c.before)} -> {_model_figure(c.after)}" for c in diff.models]
    lines += [f"New {v}" for v in diff.verdicts_added]
    lines += [f"Gone {v}" for v in diff.verdicts_removed]
    if diff.summary_parts_missing:
        lines.append(f"Not compared (a plan made before plans carried them): {', '.join(diff.summary_parts_missing)}")
    return lines


def _estimate(figures: Mapping[str, Any]) -> str:
    return " (estimate)" if figures.get("estimate") else ""


def _team_figure(figures: Mapping[str, Any] | None) -> str:
    if figures is None:
        return "no team"
    return f"quota {figures['gpus']} GPUs, ceiling ${figures['monthly']:,.0f}/month{_estimate(figures)}"


def _model_figure(figures: Mapping[str, Any] | None) -> str:
    if figures is None:
        return "no model"
    if figures.get("floor") is None or figures.get("ceiling") is None:
        return "unpriced"
    return f"floor ${figures['floor']:,.0f}, ceiling ${figures['ceiling']:,.0f}/month{_estimate(figures)}"


def _delta(change: EntityChange, figure: str) -> str:
    before = (change.before or {}).get(figure) or 0
    after = (change.after or {}).get(figure) or 0
    return f" ({_signed(after - before, '/month')})"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


DIFF_CONTEXT = 12
"""Characters kept on each side of the part of a long value that differs."""


def _common_start(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _differing(before: str, after: str, width: int) -> tuple[str, str]:
    """The two texts cut to the part that differs: the common prefix and suffix elided with `...` (keeping
    `DIFF_CONTEXT` characters of each), so the change is what shows, never a shared opening. The two sides share
    `2 * width` characters: a short side (an insertion's) leaves its room to the other, cut at its end."""
    prefix = _common_start(before, after)
    suffix = _common_start(before[prefix:][::-1], after[prefix:][::-1])
    start = max(prefix - DIFF_CONTEXT, 0)
    bodies = [text[start : min(len(text) - suffix + DIFF_CONTEXT, len(text))] for text in (before, after)]
    room = {i: max(width, 2 * width - len(bodies[1 - i])) for i in (0, 1)}

    def shown(i: int, text: str) -> str:
        body = bodies[i]
        cut = len(body) > room[i]
        body = body[: room[i]] if cut else body
        return ("..." if start else "") + body + ("..." if cut or start + len(body) < len(text) else "")

    return shown(0, before), shown(1, after)


def show_change(prop: PropertyChange, width: int = 60) -> str:
    """`path: before -> after` as a reviewer reads it: a long value shows the part that differs; an element or
    key present on one side only reads `added` or `removed`."""
    if prop.before == ABSENT:
        return f"{prop.path}: added {_cut(value_text(prop.after), 2 * width)}"
    if prop.after == ABSENT:
        return f"{prop.path}: removed {_cut(value_text(prop.before), 2 * width)}"
    before, after = value_text(prop.before), value_text(prop.after)
    if len(before) > width or len(after) > width:
        before, after = _differing(before, after, width)
    return f"{prop.path}: {before} -> {after}"


MAX_CHANGES_SHOWN = 12


def render(diff: PlanDiff, title: str, markdown: bool = False) -> str:
    counts = ", ".join(f"{len(diff.of(op))} to {op}" for op in ("create", "update", "replace", "delete"))
    lines = [f"## {title}" if markdown else title, "", f"{counts}; {diff.unchanged} unchanged", ""]
    lines += [f"- {line}" if markdown else line for line in summary_lines(diff)] + [""]
    if markdown and diff.changes:
        lines.append("```text")
    for change in diff.changes:
        order = f" ({change.order})" if change.order else ""
        lines.append(f"{change.op}{order} {change.type} {change.name}")
        for prop in change.changes[:MAX_CHANGES_SHOWN]:
            forced = f"  [forces replacement: {prop.replaces}]" if prop.replaces else ""
            forced = f"  [refused by Azure: {prop.refused}]" if prop.refused else forced
            lines.append(f"    {show_change(prop)}{forced}")
        if len(change.changes) > MAX_CHANGES_SHOWN:
            lines.append(f"    ... and {len(change.changes) - MAX_CHANGES_SHOWN} more")
        if change.order_why:
            lines.append(f"    order: {change.order_why}")
        lines.extend(f"    note: {note}" for note in change.notes)
        lines.extend(f"    caused by: {cause}" for cause in change.causes)
    if markdown and diff.changes:
        lines.append("```")
    if diff.outputs_changed:
        lines += ["", "Stack outputs that change: " + ", ".join(diff.outputs_changed)]
    if diff.config_changes:
        lines += ["", "Stack config that changes:", *(["```text"] if markdown else [])]
        lines += [f"  {show_change(c)}" for c in diff.config_changes] + (["```"] if markdown else [])
    if diff.refused:
        names = ", ".join(c.name for c in diff.refused)
        lines += ["", f"Refused: Azure rejects the update of {names}; `pulumi up` would stop halfway."]
    if not diff.changes and not diff.outputs_changed:
        lines.append("No changes.")
    return "\n".join(lines) + "\n"
