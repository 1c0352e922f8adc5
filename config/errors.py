"""One readable error for every bad config: field path, given value, what is allowed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pulumi
from pydantic import ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

FIELD_ERROR = "platform_field"


class ConfigError(pulumi.RunError):
    """Raised before any resource exists; the Pulumi CLI prints it without a traceback."""

    def __init__(self, problems: list[str], source: str = "stack config") -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid {source} ({len(problems)} problem(s)):\n{lines}")


def field_error(field: str, value: Any, allowed: str) -> PydanticCustomError:
    """An error for a cross-field rule that names the offending sub-field.

    Raise it from a model validator; `format_problem` appends `field` to the model's path.
    """
    return PydanticCustomError(
        FIELD_ERROR,
        "{allowed}",
        {"field": field, "value": _short(value), "allowed": allowed},
    )


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_path(loc: Iterable[int | str]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.startswith("function-") or part in {"tagged-union", "literal"}:
            continue
        else:
            path += f".{part}" if path else str(part)
    return path or "(root)"


def format_problem(error: ErrorDetails, prefix: str = "") -> str:
    loc: tuple[int | str, ...] = tuple(error["loc"])
    if prefix:
        loc = (prefix, *loc)
    ctx = error.get("ctx") or {}
    if error["type"] == FIELD_ERROR:
        path = format_path((*loc, ctx["field"])) if ctx.get("field") else format_path(loc)
        return f"{path}: got {ctx['value']}; {ctx['allowed']}"
    if error["type"] == "missing":
        return f"{format_path(loc)}: required setting is missing"
    if error["type"] == "extra_forbidden":
        return f"{format_path(loc)}: unknown key (check the spelling against the config reference)"
    message = error["msg"].removeprefix("Value error, ")
    return f"{format_path(loc)}: got {_short(error.get('input'))}; {message}"


def problems_from(err: ValidationError, prefix: str = "") -> list[str]:
    return [format_problem(e, prefix) for e in err.errors(include_url=False)]
