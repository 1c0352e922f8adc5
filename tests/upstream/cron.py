"""When a Kubernetes CronJob runs: its `schedule` read as the CronJob controller reads it, and the longest wait between
two runs.

Follows robfig/cron v3.0.1, the parser Kubernetes' CronJob controller calls (`cron.ParseStandard`,
kubernetes/kubernetes pkg/controller/cronjob/utils.go):
- parser.go `ParseStandard`: five fields, minute 0-59, hour 0-23, day of month 1-31, month 1-12 (or JAN-DEC), day
  of week 0-6 (or SUN-SAT); or a descriptor `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`,
  `@hourly`, `@every <duration>`;
- parser.go `getField`/`getRange`: a field is a comma-separated list of `*` (or `?`), `a`, `a-b`, each optionally
  `/step`; `a/step` means `a-max/step`; a value outside the field's range, a start past the end, or a step below 1 is
  refused;
- parser.go `getRange` (tag v3.0.1): `*` and `?` set the star bit, and a step above 1 clears it
  (`if step > 1 { extra = 0 }`), so `*/2` is a restricted field, `*/1` still a star;
- spec.go `dayMatches`: when day of month or day of week carries the star bit, a day must match both; when both are
  restricted, either.
`TZ=`/`CRON_TZ=` prefixes are not modelled (the CronJob API refuses them in `schedule`; `timeZone` is the field).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from itertools import pairwise

FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 6))
NAMES = {
    "month": {
        m: i
        for i, m in enumerate(
            ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1
        )
    },
    "day of week": {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
}
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
DURATION_UNITS = {"h": 3600, "m": 60, "s": 1}


class CronError(ValueError):
    pass


@dataclass(frozen=True)
class Field:
    values: frozenset[int]
    star: bool
    """Written as `*` or `?` (day-of-month and day-of-week matching depends on it)."""


def _number(text: str, name: str) -> int:
    named = NAMES.get(name, {}).get(text.lower())
    if named is not None:
        return named
    if not text.isdigit():
        raise CronError(f"{name}: {text!r} is not a number")
    return int(text)


def parse_field(text: str, name: str, low: int, high: int) -> Field:
    values: set[int] = set()
    star = False
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = _number(step_text, "step") if step_text else 1
        if step < 1:
            raise CronError(f"{name}: step {step} must be at least 1")
        if span in ("*", "?"):
            start, end = low, high
            star = star or step == 1
        else:
            first, dash, last = span.partition("-")
            start = _number(first, name)
            end = _number(last, name) if dash else (high if step_text else start)
        if start < low or end > high or start > end:
            raise CronError(f"{name}: {part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return Field(frozenset(values), star)


@dataclass(frozen=True)
class Schedule:
    minute: Field
    hour: Field
    day_of_month: Field
    month: Field
    day_of_week: Field
    every_seconds: int | None = None

    def runs_on(self, day: dt.date) -> bool:
        if day.month not in self.month.values:
            return False
        in_month = day.day in self.day_of_month.values
        in_week = day.isoweekday() % 7 in self.day_of_week.values
        if self.day_of_month.star or self.day_of_week.star:
            return in_month and in_week
        return in_month or in_week

    def longest_gap_seconds(self, start: dt.date = dt.date(2027, 1, 1), days: int = 2 * 366) -> int:
        """The longest time between two consecutive runs over `days` days (two years: every month and weekday)."""
        if self.every_seconds is not None:
            return self.every_seconds
        times = sorted(h * 3600 + m * 60 for h in self.hour.values for m in self.minute.values)
        runs = [i * 86400 + t for i in range(days) for t in times if self.runs_on(start + dt.timedelta(days=i))]
        if len(runs) < 2:
            raise CronError(f"runs {len(runs)} time(s) in {days} days")
        return max(b - a for a, b in pairwise(runs))


def parse(schedule: str) -> Schedule:
    text = schedule.strip()
    if text.startswith("@every "):
        parts = re.fullmatch(r"((?:\d+[hms])+)", text.removeprefix("@every ").strip())
        if not parts:
            raise CronError(f"{schedule!r}: @every takes a duration such as 1h30m")
        seconds = sum(int(n) * DURATION_UNITS[u] for n, u in re.findall(r"(\d+)([hms])", parts.group(1)))
        star = Field(frozenset(), True)
        return Schedule(star, star, star, star, star, every_seconds=seconds)
    if text.startswith("@"):
        if text not in DESCRIPTORS:
            raise CronError(f"{schedule!r}: unknown descriptor")
        text = DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != len(FIELDS):
        raise CronError(f"{schedule!r}: expected {len(FIELDS)} fields, found {len(fields)}")
    minute, hour, day_of_month, month, day_of_week = (
        parse_field(f, name, low, high) for f, (name, low, high) in zip(fields, FIELDS, strict=True)
    )
    return Schedule(minute, hour, day_of_month, month, day_of_week)
