"""The SDK's check for unknown values, without the reference cycle each call of it leaves behind.

pulumi 3.272.0 `sdk/python/lib/pulumi/runtime/rpc.py` `contains_unknowns` defines a recursive
closure on every call: the function holds the cell that holds the function, a cycle only the
cyclic collector frees. Output plumbing calls it for nearly every value (about 32,000 times in
the prod stack), so it leaves some 190,000 objects, nearly all of an evaluation's cyclic garbage
(about 200 others remain), and freeing them took about a third of each evaluation. An offline evaluation swaps in
this loop, which answers the same question, for its own duration only: a real `pulumi up` runs
the SDK untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pulumi.runtime import known_types, rpc


def contains_unknowns(value: Any) -> bool:
    """Whether `value` or anything in its dicts and lists is unknown: the SDK's answer, also on self-references."""
    seen: set[int] = set()
    pending = [value]
    while pending:
        item = pending.pop()
        if known_types.is_unknown(item):
            return True
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            # dict.values: an input type whose field is named `values` (a selector requirement) shadows the method.
            pending.extend(dict.values(item))  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(item, list):
            pending.extend(item)  # pyright: ignore[reportUnknownArgumentType]
    return False


@contextmanager
def acyclic_unknowns_check() -> Iterator[None]:
    """Let the SDK use `contains_unknowns` above while the block runs; its own function is back afterwards."""
    sdk_check = rpc.contains_unknowns
    rpc.contains_unknowns = contains_unknowns
    try:
        yield
    finally:
        rpc.contains_unknowns = sdk_check
