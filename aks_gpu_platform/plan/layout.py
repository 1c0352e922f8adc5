"""How the plan's text is laid out: the line width, wrapped and one-line text, tables, folded markdown."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

WIDTH = 110
"""Longest line the text report prints (a PR comment and a terminal both show it unwrapped)."""
DETAIL_INDENT = "    "
CUT = " ..."


def wrap(text: str, indent: str = "", hang: str = "    ") -> list[str]:
    """Lines of at most WIDTH characters (a single longer token, e.g. a query, is split)."""
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + hang,
        break_on_hyphens=False,
        break_long_words=True,
    ) or [indent]


def wrap_all(lines: Sequence[str], indent: str = DETAIL_INDENT) -> list[str]:
    return [wrapped for line in lines for wrapped in wrap(line, indent)]


def one_line(text: str, indent: str = "") -> str:
    """`text` on one line of at most WIDTH characters: cut at a word with ` ...` where it is longer."""
    line = indent + " ".join(text.split())
    if len(line) <= WIDTH:
        return line
    return line[: WIDTH - len(CUT) + 1].rsplit(" ", 1)[0] + CUT


def table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cells(row: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"

    return [cells(header), "|" + "---|" * len(header), *(cells(row) for row in rows)]


def details(summary: str, lines: Sequence[str]) -> list[str]:
    """A folded markdown block holding `lines` as preformatted text."""
    body = textwrap.dedent("\n".join(lines)).splitlines()
    return [f"<details><summary>{summary}</summary>", "", "```text", *body, "```", "", "</details>", ""]
