"""A small PromQL evaluator over modelled series: which series, with which labels, does a query return?

It follows Prometheus's instant-query semantics for the subset the platform uses (selectors and matchers,
aggregations with by/without, label_replace, vector matching with on/ignoring/group_left/group_right, the
set operators) and fails loudly on anything else. Series carry one value and no history, so:
- a range function returns the series' value (`*_over_time`) or 0 (`rate`, `increase`...);
- a filtering comparison (`>` without `bool`) keeps every series, as if the threshold were crossed:
  the question is which labels an alert fires with, not whether a fixture crosses a threshold.
Labels a query groups or matches on must exist on every series it groups or matches (otherwise
Prometheus silently merges or drops series); each miss is recorded in `problems`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from tests.scrape_model import Labels, Series, expand

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

    walk(Parser(query).parse())
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
    """Evaluates queries over a fixed set of series; label problems collect in `problems`."""

    def __init__(self, world: Sequence[Series]) -> None:
        self.world = list(world)
        self.problems: list[str] = []

    def evaluate(self, query: str) -> list[Series] | float:
        result = self.eval(Parser(query).parse())
        if isinstance(result, str):
            raise TypeError("a query must return a vector or a scalar")
        return result

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

    def select(self, selector: Selector) -> list[Series]:
        matchers = list(selector.matchers)
        if selector.metric is not None:
            matchers.append(("__name__", "=", selector.metric))
        return [Series(dict(s.labels), s.value) for s in self.world if matches(s.labels, matchers)]

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
            keeps_value = name.endswith("_over_time") and name != "count_over_time"
            return [Series(_without_name(s.labels), s.value if keeps_value else 0.0) for s in self.select(arg)]
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
                    out.append(Series(dict(s.labels), s.value))  # the threshold is assumed crossed
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
