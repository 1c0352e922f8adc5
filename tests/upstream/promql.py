"""A small PromQL evaluator over modelled series: which series, with which labels and values, does a query return?

It follows Prometheus's instant-query semantics for the subset the platform uses (selectors and matchers,
aggregations with by/without, label_replace, vector matching with on/ignoring/group_left/group_right, the
set operators) and fails loudly on anything else. Labels a query groups or matches on must exist on every series
it groups or matches (otherwise Prometheus silently merges or drops series); each miss is recorded in `problems`.

A world holds two kinds of series:
- `History`: samples over time, as a scrape or a recording rule stores them. A query is evaluated at an instant
  `at` (Prometheus v3.12.0 `promql/engine.go`): an instant selector takes each series' latest sample in
  (at - 5m, at], none if that sample is a staleness marker (`model/value.StaleNaN`, written when a series leaves a
  scrape or a rule's output); a range selector `[d]` takes the samples in (at - d, at] (left-open since
  Prometheus 3.0), markers excluded; `sum/avg/min/max/count/last/present_over_time` reduce them and `rate`,
  `increase`, `delta` extrapolate as `promql/functions.go` does; series without samples in the window are left
  out.
- `Series`: one value and no history, for questions about labels (which labels an alert fires with). It stands
  for a gauge that has always had that value: `avg/min/max/last_over_time` return it, `rate`, `increase`,
  `delta`... return 0; `sum_over_time` and `count_over_time` depend on how many samples there were and refuse.
  In such worlds a filtering comparison (`>` without `bool`) keeps every series, as if the threshold were
  crossed, unless `thresholds_crossed=False` makes it filter as Prometheus does.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

from tests.upstream.scrape import Labels, Series, expand

LOOKBACK_SECONDS = 300.0
"""Prometheus's default lookback delta: an instant selector sees a sample up to 5 minutes old."""
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    """A PromQL duration (`5m`, `1h30m`, `24h`) in seconds."""
    parts = re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise SyntaxError(f"bad duration {text!r}")
    return sum(int(n) * UNITS[u] for n, u in parts)


@dataclass
class Run:
    """`count` samples of one value, `step` seconds apart from `start` (integer seconds); value None: a marker."""

    start: int
    step: int
    count: int
    value: float | None

    @property
    def last(self) -> int:
        return self.start + self.step * (self.count - 1)


@dataclass
class Window:
    """The samples of one series in a range, as the `*_over_time` functions and `extrapolatedRate` read them."""

    count: int
    total: float
    low: float
    high: float
    first: tuple[int, float]
    last: tuple[int, float]
    resets: float
    """Sum of the values before each counter reset (a value lower than the one before it)."""


class History:
    """A series' samples over time, stored as runs of one value (what a scrape of an unchanged target or a rule
    with an unchanged result stores every interval)."""

    def __init__(self, labels: Labels) -> None:
        self.labels = labels
        self.runs: list[Run] = []
        self.starts: list[int] = []

    @property
    def name(self) -> str:
        return self.labels["__name__"]

    def extend(self, start: int, step: int, count: int, value: float | None) -> None:
        """`count` samples of `value` from `start`, `step` apart, after every sample already stored."""
        if count <= 0:
            return
        assert not self.runs or start > self.runs[-1].last, "samples are appended in time order"
        tail = self.runs[-1] if self.runs else None
        if tail is not None and tail.value == value and tail.step == step and tail.last + step == start:
            tail.count += count
            return
        self.runs.append(Run(start, step, count, value))
        self.starts.append(start)

    def append(self, at: int, value: float | None, step: int) -> None:
        self.extend(at, step, 1, value)

    def latest(self, at: float, lookback: float = LOOKBACK_SECONDS) -> float | None:
        """The instant value at `at`, or None (no sample in the lookback, or the latest is a staleness marker)."""
        i = bisect.bisect_right(self.starts, at) - 1
        if i < 0:
            return None
        run = self.runs[i]
        t = run.start + run.step * min(run.count - 1, int((at - run.start) // run.step))
        if t <= at - lookback:
            return None
        return run.value

    def window(self, at: float, seconds: float) -> Window | None:
        """The samples in (at - seconds, at], staleness markers left out; None when there are none."""
        lo, hi = at - seconds, at
        i = max(0, bisect.bisect_right(self.starts, lo) - 1)
        found: Window | None = None
        previous: float | None = None
        for run in self.runs[i:]:
            if run.start > hi:
                break
            if run.value is None or run.last <= lo:
                continue
            first_i = 0 if run.start > lo else int((lo - run.start) // run.step) + 1
            last_i = min(run.count - 1, int((hi - run.start) // run.step))
            if first_i > last_i:
                continue
            n, v = last_i - first_i + 1, run.value
            first, last = (run.start + run.step * first_i, v), (run.start + run.step * last_i, v)
            if found is None:
                found = Window(n, n * v, v, v, first, last, 0.0)
            else:
                found.count += n
                found.total += n * v
                found.low, found.high = min(found.low, v), max(found.high, v)
                found.last = last
                if previous is not None and v < previous:
                    found.resets += previous
            previous = v
        return found


def extrapolated_rate(window: Window, start: float, end: float, counter: bool, per_second: bool) -> float | None:
    """Prometheus v3.12.0 promql/functions.go `extrapolatedRate`: `rate`, `increase` (counter) and `delta`."""
    if window.count < 2:
        return None
    result = window.last[1] - window.first[1] + (window.resets if counter else 0.0)
    sampled = window.last[0] - window.first[0]
    average = sampled / (window.count - 1)
    threshold = average * 1.1
    to_start, to_end = window.first[0] - start, end - window.last[0]
    if to_start >= threshold:
        to_start = average / 2
    if counter and result > 0 and window.first[1] >= 0:
        to_start = min(to_start, sampled * (window.first[1] / result))
    if to_end >= threshold:
        to_end = average / 2
    factor = (sampled + to_start + to_end) / sampled
    if per_second:
        factor /= end - start
    return result * factor


@cache
def parse(query: str) -> Any:
    return Parser(query).parse()


_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>==|!=|<=|>=|=~|!~|[-+*/%^<>=(){},])
)""",
    re.VERBOSE,
)
AGGREGATIONS = {"sum", "avg", "min", "max", "count", "group", "topk", "bottomk", "stddev", "stdvar"}
SET_OPS = {"and", "or", "unless"}
COMPARISONS = {"==", "!=", "<", ">", "<=", ">="}
ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if b else math.nan,
    "%": lambda a, b: math.fmod(a, b) if b else math.nan,
    "^": lambda a, b: a**b,
}
# Lowest binding first.
PRECEDENCE = [{"or"}, {"and", "unless"}, COMPARISONS, {"+", "-"}, {"*", "/", "%"}, {"^"}]


@dataclass
class Token:
    kind: str
    text: str


def tokenize(query: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    query = query.rstrip()
    while position < len(query):
        match = _TOKEN.match(query, position)
        if not match or match.end() == position:
            raise SyntaxError(f"cannot read PromQL at {query[position:]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append(Token(kind, match.group(kind)))
        position = match.end()
    return tokens


@dataclass
class Selector:
    metric: str | None
    matchers: list[tuple[str, str, str]]
    range: str | None = None


@dataclass
class Number:
    value: float


@dataclass
class String:
    value: str


@dataclass
class Call:
    function: str
    args: list[Any]


@dataclass
class Aggregate:
    op: str
    grouping: list[str] | None
    without: bool
    args: list[Any]


@dataclass
class Binary:
    op: str
    lhs: Any
    rhs: Any
    returns_bool: bool = False
    on: list[str] | None = None
    ignoring: list[str] = field(default_factory=list[str])
    card: str = "one"
    include: list[str] = field(default_factory=list[str])


@dataclass
class Negate:
    expr: Any


class Parser:
    def __init__(self, query: str) -> None:
        self.tokens = tokenize(query)
        self.i = 0

    def peek(self, offset: int = 0) -> Token | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self, text: str | None = None) -> Token:
        token = self.peek()
        if token is None or (text is not None and token.text != text):
            raise SyntaxError(f"expected {text!r}, got {token.text if token else 'end'!r}")
        self.i += 1
        return token

    def parse(self) -> Any:
        expr = self.binary(0)
        if self.peek() is not None:
            raise SyntaxError(f"unexpected {self.peek()!r}")
        return expr

    def binary(self, level: int) -> Any:
        if level == len(PRECEDENCE):
            return self.unary()
        lhs = self.binary(level + 1)
        while (token := self.peek()) is not None and token.text in PRECEDENCE[level]:
            self.take()
            node = Binary(token.text, lhs, None)
            if (nxt := self.peek()) is not None and nxt.text == "bool":
                self.take()
                node.returns_bool = True
            if (nxt := self.peek()) is not None and nxt.text in ("on", "ignoring"):
                self.take()
                names = self.label_list()
                if nxt.text == "on":
                    node.on = names
                else:
                    node.ignoring = names
            if (nxt := self.peek()) is not None and nxt.text in ("group_left", "group_right"):
                self.take()
                node.card = "left" if nxt.text == "group_left" else "right"
                if (paren := self.peek()) is not None and paren.text == "(":
                    node.include = self.label_list()
            # ^ is right-associative; the others left.
            node.rhs = self.binary(level) if token.text == "^" else self.binary(level + 1)
            lhs = node
        return lhs

    def unary(self) -> Any:
        token = self.peek()
        if token is not None and token.text in ("-", "+"):
            self.take()
            inner = self.unary()
            return Negate(inner) if token.text == "-" else inner
        return self.primary()

    def label_list(self) -> list[str]:
        self.take("(")
        names: list[str] = []
        while (token := self.peek()) is not None and token.text != ")":
            names.append(self.take().text)
            if (comma := self.peek()) is not None and comma.text == ",":
                self.take()
        self.take(")")
        return names

    def args(self) -> list[Any]:
        self.take("(")
        args: list[Any] = []
        while (token := self.peek()) is not None and token.text != ")":
            args.append(self.binary(0))
            if (comma := self.peek()) is not None and comma.text == ",":
                self.take()
        self.take(")")
        return args

    def primary(self) -> Any:
        token = self.take()
        if token.kind == "number":
            return Number(float(token.text))
        if token.kind == "string":
            return String(_unquote(token.text))
        if token.text == "(":
            inner = self.binary(0)
            self.take(")")
            return self.with_range(inner)
        if token.text == "{":
            self.i -= 1
            return self.selector(None)
        if token.kind != "ident":
            raise SyntaxError(f"unexpected {token.text!r}")
        nxt = self.peek()
        if token.text in AGGREGATIONS and nxt is not None and nxt.text in ("by", "without", "("):
            grouping: list[str] | None = None
            without = False
            if nxt.text in ("by", "without"):
                without = self.take().text == "without"
                grouping = self.label_list()
            args = self.args()
            if (after := self.peek()) is not None and after.text in ("by", "without"):
                without = self.take().text == "without"
                grouping = self.label_list()
            return Aggregate(token.text, grouping, without, args)
        if nxt is not None and nxt.text == "(":
            return Call(token.text, self.args())
        return self.selector(token.text)

    def selector(self, metric: str | None) -> Any:
        matchers: list[tuple[str, str, str]] = []
        if (token := self.peek()) is not None and token.text == "{":
            self.take()
            while (token := self.peek()) is not None and token.text != "}":
                name = self.take().text
                op = self.take().text
                if op not in ("=", "!=", "=~", "!~"):
                    raise SyntaxError(f"bad matcher operator {op!r}")
                value = self.take()
                if value.kind != "string":
                    raise SyntaxError(f"matcher value must be a string, got {value.text!r}")
                matchers.append((name, op, _unquote(value.text)))
                if (comma := self.peek()) is not None and comma.text == ",":
                    self.take()
            self.take("}")
        return self.with_range(Selector(metric, matchers))

    def with_range(self, node: Any) -> Any:
        token = self.peek()
        if token is None or token.kind != "range":
            return node
        self.take()
        if ":" in token.text:
            raise NotImplementedError("subqueries are not modelled")
        if not isinstance(node, Selector):
            raise SyntaxError("a range applies to a selector only")
        node.range = token.text[1:-1]
        if (nxt := self.peek()) is not None and nxt.text in ("offset", "@"):
            raise NotImplementedError("offset/@ are not modelled")
        return node


def _unquote(text: str) -> str:
    if text.startswith("`"):
        return text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text[1:-1])


def selectors(query: str) -> list[Selector]:
    """Every series selector in a query, in order."""
    found: list[Selector] = []

    def walk(node: Any) -> None:
        if isinstance(node, Selector):
            found.append(node)
        elif isinstance(node, Call | Aggregate):
            for arg in node.args:
                walk(arg)
        elif isinstance(node, Binary):
            walk(node.lhs)
            walk(node.rhs)
        elif isinstance(node, Negate):
            walk(node.expr)

    walk(Parser(query).parse())  # a fresh tree: the cached one is shared
    return found


def matches(labels: Labels, matchers: Sequence[tuple[str, str, str]]) -> bool:
    """Prometheus matcher semantics: a missing label equals ""; regexes are fully anchored."""
    for name, op, value in matchers:
        actual = labels.get(name, "")
        if op == "=" and actual != value:
            return False
        if op == "!=" and actual == value:
            return False
        if op in ("=~", "!~") and (re.fullmatch(value, actual) is not None) != (op == "=~"):
            return False
    return True


class Evaluator:
    """Evaluates queries over series (and histories, at the instant `at`); label problems collect in `problems`."""

    def __init__(
        self, world: Sequence[Series | History], at: float = 0.0, thresholds_crossed: bool | None = None
    ) -> None:
        self.world: list[Series | History] = []
        self.by_name: dict[str, list[Series | History]] = {}
        self.unnamed: list[Series | History] = []
        self.problems: list[str] = []
        self.at = at
        for series in world:
            self.add(series)
        has_history = any(isinstance(s, History) for s in self.world)
        self.thresholds_crossed = not has_history if thresholds_crossed is None else thresholds_crossed

    def add(self, series: Series | History) -> None:
        self.world.append(series)
        name = series.labels.get("__name__")
        (self.by_name.setdefault(name, []) if name else self.unnamed).append(series)

    def candidates(self, selector: Selector) -> list[Series | History]:
        if selector.metric is not None:
            return self.by_name.get(selector.metric, [])
        for name, op, value in selector.matchers:
            if name == "__name__" and op == "=":
                return self.by_name.get(value, [])
        return self.world

    def evaluate(self, query: str) -> list[Series] | float:
        result = self.eval(parse(query))
        if isinstance(result, str):
            raise TypeError("a query must return a vector or a scalar")
        return result

    def evaluate_at(self, query: str, at: float) -> list[Series]:
        """The query's result as a vector at the instant `at`."""
        self.at = at
        return self.vector(query)

    def vector(self, query: str) -> list[Series]:
        """The query's result as a vector (a scalar becomes one series without labels)."""
        result = self.evaluate(query)
        return result if isinstance(result, list) else [Series({}, float(result))]

    def eval(self, node: Any) -> Any:
        if isinstance(node, Number):
            return node.value
        if isinstance(node, String):
            return node.value
        if isinstance(node, Selector):
            return self.select(node)
        if isinstance(node, Negate):
            value = self.eval(node.expr)
            if isinstance(value, float):
                return -value
            return [Series(_without_name(s.labels), -s.value) for s in value]
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Aggregate):
            return self.aggregate(node)
        if isinstance(node, Binary):
            return self.binary(node)
        raise TypeError(node)

    def _matching(self, selector: Selector) -> list[Series | History]:
        matchers = list(selector.matchers)
        if selector.metric is not None:
            matchers.append(("__name__", "=", selector.metric))
        return [s for s in self.candidates(selector) if matches(s.labels, matchers)]

    def select(self, selector: Selector) -> list[Series]:
        found: list[Series] = []
        for s in self._matching(selector):
            if isinstance(s, Series):
                found.append(Series(dict(s.labels), s.value))
            elif (value := s.latest(self.at)) is not None:
                found.append(Series(dict(s.labels), value))
        return found

    def over_time(self, name: str, selector: Selector) -> list[Series]:
        """A range function over each matching series' samples in the selector's window."""
        assert selector.range is not None
        seconds = duration_seconds(selector.range)
        counter = name in ("rate", "irate", "increase", "delta", "idelta", "deriv")
        reduce: dict[str, Callable[[Window], float]] = {
            "sum_over_time": lambda w: w.total,
            "avg_over_time": lambda w: w.total / w.count,
            "min_over_time": lambda w: w.low,
            "max_over_time": lambda w: w.high,
            "count_over_time": lambda w: float(w.count),
            "last_over_time": lambda w: w.last[1],
            "present_over_time": lambda w: 1.0,
        }
        if not counter and name not in reduce:
            raise NotImplementedError(f"function {name} is not modelled")
        if name in ("irate", "idelta", "deriv"):
            raise NotImplementedError(f"{name} is not modelled")
        out: list[Series] = []
        for s in self._matching(selector):
            labels = _without_name(s.labels)
            if isinstance(s, Series):
                if name in ("sum_over_time", "count_over_time"):
                    raise TypeError(f"{name} depends on the samples in the range: give the series a History")
                out.append(Series(labels, 0.0 if counter else (1.0 if name == "present_over_time" else s.value)))
                continue
            window = s.window(self.at, seconds)
            if window is None:
                continue
            if counter:
                value = extrapolated_rate(window, self.at - seconds, self.at, name != "delta", name == "rate")
                if value is not None:
                    out.append(Series(labels, value))
            else:
                out.append(Series(labels, reduce[name](window)))
        return out

    def need(self, labels: Sequence[str], series: Sequence[Series], where: str) -> None:
        for s in series:
            missing = [label for label in labels if label not in s.labels]
            if missing:
                self.problems.append(f"{where}: {missing} missing on {s.labels.get('__name__', '')}{s.labels}")

    def call(self, node: Call) -> Any:
        name = node.function
        if name == "vector":
            return [Series({}, float(self.eval(node.args[0])))]
        if name == "label_replace":
            vector, dst, replacement, src, regex = (self.eval(a) for a in node.args)
            if src:  # an empty source reads "" on every series: the idiom for a constant label
                self.need([src], vector, f"label_replace source {src}")
            result: list[Series] = []
            for s in vector:
                match = re.fullmatch(regex, s.labels.get(src, ""))
                labels = dict(s.labels)
                if match:
                    value = expand(replacement, match)
                    if value:
                        labels[dst] = value
                    else:
                        labels.pop(dst, None)
                result.append(Series(labels, s.value))
            return result
        if name.endswith("_over_time") or name in ("rate", "irate", "increase", "delta", "idelta", "deriv"):
            (arg,) = node.args
            if not isinstance(arg, Selector) or arg.range is None:
                raise TypeError(f"{name} needs a range selector")
            return self.over_time(name, arg)
        if name == "histogram_quantile":
            quantile, buckets = (self.eval(a) for a in node.args)
            self.need(["le"], buckets, "histogram_quantile")
            groups: dict[tuple[tuple[str, str], ...], list[Series]] = {}
            for s in buckets:
                key = tuple(sorted((k, v) for k, v in _without_name(s.labels).items() if k != "le"))
                groups.setdefault(key, []).append(s)
            quantiles: list[Series] = []
            for key, members in groups.items():
                ordered = sorted(members, key=lambda s: float(s.labels.get("le", "nan")))
                rank = float(quantile) * ordered[-1].value
                upper = next((float(s.labels["le"]) for s in ordered if s.value >= rank), math.nan)
                quantiles.append(Series(dict(key), upper))
            return quantiles
        if name in ("abs", "ceil", "floor", "round"):
            function: Callable[[float], float] = {"abs": abs, "ceil": math.ceil, "floor": math.floor, "round": round}[
                name
            ]
            return [Series(_without_name(s.labels), float(function(s.value))) for s in self.eval(node.args[0])]
        raise NotImplementedError(f"function {name} is not modelled")

    def aggregate(self, node: Aggregate) -> list[Series]:
        args = [self.eval(a) for a in node.args]
        vector: list[Series] = args[-1]
        grouping = node.grouping or []
        if node.grouping is not None and not node.without:
            self.need(grouping, vector, f"{node.op} by ({', '.join(grouping)})")

        def key(s: Series) -> tuple[tuple[str, str], ...]:
            if node.without:
                return tuple(sorted((k, v) for k, v in _without_name(s.labels).items() if k not in grouping))
            return tuple(sorted((k, v) for k, v in s.labels.items() if k in grouping))

        groups: dict[tuple[tuple[str, str], ...], list[Series]] = {}
        for s in vector:
            groups.setdefault(key(s), []).append(s)
        if node.op in ("topk", "bottomk"):
            k = int(args[0])
            kept: list[Series] = []
            for members in groups.values():
                ordered = sorted(members, key=lambda s: s.value, reverse=node.op == "topk")
                kept += ordered[:k]
            return kept
        reduce: dict[str, Callable[[list[float]], float]] = {
            "sum": sum,
            "avg": lambda v: sum(v) / len(v),
            "min": min,
            "max": max,
            "count": lambda v: float(len(v)),
            "group": lambda v: 1.0,
        }
        if node.op not in reduce:
            raise NotImplementedError(f"aggregation {node.op} is not modelled")
        return [Series(dict(k), reduce[node.op]([s.value for s in members])) for k, members in groups.items()]

    def binary(self, node: Binary) -> Any:
        lhs: Any = self.eval(node.lhs)
        rhs: Any = self.eval(node.rhs)
        op = node.op
        if isinstance(lhs, float) and isinstance(rhs, float):
            if op in COMPARISONS:
                return float(_compare(op, lhs, rhs))
            return ARITHMETIC[op](lhs, rhs)
        if isinstance(lhs, float) or isinstance(rhs, float):
            if op in SET_OPS:
                raise TypeError("set operators need two vectors")
            scalar_left = isinstance(lhs, float)
            vector = cast(list[Series], rhs if scalar_left else lhs)
            scalar = float(lhs if isinstance(lhs, float) else rhs)
            out: list[Series] = []
            for s in vector:
                a, b = (scalar, s.value) if scalar_left else (s.value, scalar)
                if op in COMPARISONS and not node.returns_bool:
                    if self.thresholds_crossed or _compare(op, a, b):
                        out.append(Series(dict(s.labels), s.value))
                elif op in COMPARISONS:
                    out.append(Series(_without_name(s.labels), float(_compare(op, a, b))))
                else:
                    out.append(Series(_without_name(s.labels), ARITHMETIC[op](a, b)))
            return out
        return self.match(node, lhs, rhs)

    def match(self, node: Binary, lhs: list[Series], rhs: list[Series]) -> list[Series]:
        op = node.op
        if node.on is not None:
            self.need(node.on, lhs, f"{op} on ({', '.join(node.on)}) left side")
            self.need(node.on, rhs, f"{op} on ({', '.join(node.on)}) right side")

        def signature(s: Series) -> tuple[tuple[str, str], ...]:
            if node.on is not None:
                return tuple(sorted((k, v) for k, v in s.labels.items() if k in node.on))
            return tuple(sorted((k, v) for k, v in _without_name(s.labels).items() if k not in node.ignoring))

        if op in SET_OPS:
            right = {signature(s) for s in rhs}
            if op == "and":
                return [s for s in lhs if signature(s) in right]
            if op == "unless":
                return [s for s in lhs if signature(s) not in right]
            left = {signature(s) for s in lhs}
            return lhs + [s for s in rhs if signature(s) not in left]

        one, many, many_is_left = (rhs, lhs, True) if node.card != "right" else (lhs, rhs, False)
        by_signature: dict[tuple[tuple[str, str], ...], Series] = {}
        for s in one:
            if signature(s) in by_signature:
                self.problems.append(f"{op}: several series on the 'one' side share {dict(signature(s))}")
            by_signature[signature(s)] = s
        if node.card == "one":
            seen: set[tuple[tuple[str, str], ...]] = set()
            for s in many:
                if signature(s) in seen:
                    self.problems.append(f"{op}: many-to-one matching without group_left for {dict(signature(s))}")
                seen.add(signature(s))
        drop_name = op in ARITHMETIC or node.returns_bool
        out: list[Series] = []
        for s in many:
            other = by_signature.get(signature(s))
            if other is None:
                continue
            a, b = (s, other) if many_is_left else (other, s)
            labels = _without_name(s.labels) if drop_name else dict(s.labels)
            if node.card == "one":
                if node.on is not None:
                    labels = {k: v for k, v in labels.items() if k in node.on}
                else:
                    labels = {k: v for k, v in labels.items() if k not in node.ignoring}
            for name in node.include:
                if other.labels.get(name):
                    labels[name] = other.labels[name]
                else:
                    labels.pop(name, None)
            if op in COMPARISONS and not node.returns_bool:
                if self.thresholds_crossed or _compare(op, a.value, b.value):
                    out.append(Series(labels, a.value))
            elif op in COMPARISONS:
                out.append(Series(labels, float(_compare(op, a.value, b.value))))
            else:
                out.append(Series(labels, ARITHMETIC[op](a.value, b.value)))
        return out


def _compare(op: str, a: float, b: float) -> bool:
    return {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]


def _without_name(labels: Labels) -> Labels:
    return {k: v for k, v in labels.items() if k != "__name__"}
