"""One readable error for every bad config: field path, given value, what is allowed and why."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import pulumi
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from .field_paths import Bounds, FieldAt, field_at, keys_of, model_at

FIELD_ERROR = "platform_field"
# A YAML number where the model wants text (e.g. `kubernetesVersion: 1.30` read as 1.3).
NUMBER_FOR_TEXT = "number_for_text"
# Quoted text where the model wants a number (e.g. `maxCount: "4"`).
TEXT_FOR_NUMBER = "text_for_number"

_BOUND_ERRORS = frozenset(
    {
        "greater_than_equal",
        "greater_than",
        "less_than_equal",
        "less_than",
        "too_short",
        "too_long",
        "string_too_short",
        "string_too_long",
    }
)


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


def number_for_text_error(text: str) -> PydanticCustomError:
    """Raise from a before-validator when YAML turned a text value into a number; `text` is the fix."""
    return PydanticCustomError(NUMBER_FOR_TEXT, "a number where text belongs; quote it: {text}", {"text": text})


def text_for_number_error(text: str, whole: bool) -> PydanticCustomError:
    """Raise from a before-validator when a number field (`whole`: integers only) was given text."""
    return PydanticCustomError(TEXT_FOR_NUMBER, "text where a number belongs: {text}", {"text": text, "whole": whole})


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number_fix(key: str, text: str, whole: bool) -> str:
    kind = "a whole number" if whole else "a number"
    try:
        number = float(text.strip())
    except ValueError:
        return f"{kind} belongs here, written without quotes (e.g. {key}: 3)"
    if whole and not number.is_integer():
        return f"{kind} belongs here, written without quotes"
    written = str(int(number)) if number.is_integer() else f"{number:g}"
    return (
        f"write the number without quotes: {key}: {written} "
        "(`pulumi config set --path` stores whole numbers as numbers; add `--type float` for decimals)"
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


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


def _leaf_key(loc: Iterable[int | str]) -> str:
    keys = [p for p in loc if isinstance(p, str) and not p.startswith("function-")]
    return keys[-1] if keys else "value"


def _described(found: FieldAt | None) -> str:
    description = found.info.description if found is not None else None
    return f" ({description.rstrip('.')})" if description else ""


def _allowed_range(bounds: Bounds, error_type: str) -> str | None:
    """'must be from 4 to 24' from the field's own bounds, so the message shows the whole range."""
    if error_type in {"too_short", "too_long", "string_too_short", "string_too_long"}:
        what = "characters" if error_type.startswith("string") else "entries"
        low, high = bounds.min_length, bounds.max_length
        if low is not None and high is not None:
            return f"must have {low} to {high} {what}"
        if low is not None:
            return f"must have at least {low} {what}"
        return f"must have at most {high} {what}" if high is not None else None
    if bounds.ge is not None and bounds.le is not None:
        return f"must be from {bounds.ge:g} to {bounds.le:g}"
    low = f"at least {bounds.ge:g}" if bounds.ge is not None else None
    low = f"above {bounds.gt:g}" if bounds.gt is not None else low
    high = f"at most {bounds.le:g}" if bounds.le is not None else None
    high = f"below {bounds.lt:g}" if bounds.lt is not None else high
    parts = [p for p in (low, high) if p]
    return f"must be {' and '.join(parts)}" if parts else None


def _unknown_key(loc: tuple[int | str, ...], model: type[BaseModel] | None) -> str:
    key = str(loc[-1])
    where = model_at(model, loc[:-1]) if model is not None else None
    if where is None:
        return "unknown key (check the spelling against docs/config-reference.md)"
    known = sorted(keys_of(where))
    by_lower = {k.lower(): k for k in known}
    close = [by_lower[m] for m in difflib.get_close_matches(key.lower(), list(by_lower), n=2, cutoff=0.6)]
    if close:
        return f"unknown key; did you mean {' or '.join(close)}?"
    return f"unknown key; keys here: {', '.join(known)} (docs/config-reference.md)"


def format_problem(error: ErrorDetails, prefix: str = "", model: type[BaseModel] | None = None) -> str:
    """One line for one pydantic error; with `model`, the field's description explains bounds and formats."""
    own_loc: tuple[int | str, ...] = tuple(error["loc"])
    loc = (prefix, *own_loc) if prefix else own_loc
    ctx = error.get("ctx") or {}
    given = error.get("input")
    kind = error["type"]
    found = field_at(model, own_loc) if model is not None else None
    if kind == FIELD_ERROR:
        path = format_path((*loc, ctx["field"])) if ctx.get("field") else format_path(loc)
        return f"{path}: got {ctx['value']}; {ctx['allowed']}"
    path = format_path(loc)
    if kind == "missing":
        return f"{path}: required setting is missing{_described(found)}"
    if kind == "extra_forbidden":
        return f"{path}: {_unknown_key(own_loc, model)}"
    if kind == NUMBER_FOR_TEXT:
        return f"{path}: got {_number_text(given)} (a number); quote it: {ctx['text']}"
    if kind == TEXT_FOR_NUMBER:
        return f"{path}: got {_short(given)} (text); {_number_fix(_leaf_key(loc), str(given), ctx['whole'])}"
    if kind == "string_type" and _is_number(given):
        return f'{path}: got {_number_text(given)} (a number); quote it: {_leaf_key(loc)}: "{_number_text(given)}"'
    if kind == "string_type" and isinstance(given, dict) and "secure" in given:
        return (
            f"{path}: got an encrypted secret (secure:) that was never decrypted; read the stack through the Pulumi "
            "CLI or `make plan`, which substitute it"
        )
    message = error["msg"].removeprefix("Value error, ")
    if kind in _BOUND_ERRORS | {"string_pattern_mismatch"} and found is not None:
        # pydantic's own sentence stays (people search for it); the field's range and reason follow.
        allowed = _allowed_range(found.bounds, kind) if kind in _BOUND_ERRORS else None
        reason = [p for p in (allowed, found.info.description) if p]
        if reason:
            return f"{path}: got {_short(given)}; {message} ({'; '.join(r.rstrip('.') for r in reason)})"
    return f"{path}: got {_short(given)}; {message}"


def problems_from(err: ValidationError, prefix: str = "", model: type[BaseModel] | None = None) -> list[str]:
    return [format_problem(e, prefix, model) for e in err.errors(include_url=False)]
