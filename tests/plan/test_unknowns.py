"""The offline evaluator's check for unknown values: the SDK's answers, without the SDK's garbage."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pulumi
import pulumi_azure_native.resources as resources
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulumi.output import UNKNOWN
from pulumi.runtime import known_types, rpc

from aks_gpu_platform.testing import Recording, evaluate, unknowns
from aks_gpu_platform.testing.unknowns import contains_unknowns

SDK_CHECK = rpc.contains_unknowns

LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3), st.just(UNKNOWN))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=2), inner, max_size=4)),
    max_leaves=25,
)


@given(VALUES, st.booleans())
def test_the_loop_answers_as_the_sdk_does(value: Any, self_reference: bool) -> None:
    if self_reference and isinstance(value, (list, dict)):
        # Outputs may hold a structure twice or in itself: both must still terminate, with the same answer.
        if isinstance(value, list):
            value.append(value)
        else:
            value["self"] = value
    assert contains_unknowns(value) == SDK_CHECK(value), f"the swapped-in check must answer as the SDK's: {value!r}"


@contextmanager
def _collector_off() -> Iterator[None]:
    while gc.collect():  # earlier tests' garbage, and what its finalizers leave in turn
        pass
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _cyclic_garbage(check: Callable[[Any], bool]) -> int:
    value = {"a": [1, {"b": "c"}], "d": UNKNOWN}
    with _collector_off():
        for _ in range(100):
            check(value)
        return gc.collect()


def test_the_sdk_check_still_leaves_cycles_and_the_loop_leaves_none() -> None:
    assert _cyclic_garbage(contains_unknowns) == 0, "the loop must leave nothing for the cyclic collector"
    assert _cyclic_garbage(SDK_CHECK) >= 100, (
        "the pinned pulumi SDK's contains_unknowns no longer leaves a cycle per call: "
        "delete aks_gpu_platform/testing/unknowns.py and its use in runtime.evaluate"
    )


def _program_with_a_computed_input() -> None:
    group = resources.ResourceGroup("group", location="koreacentral")
    # What a provider leaves unknown in a preview: a property computed on create.
    computed = pulumi.Output.from_input({"ids": [group.id, UNKNOWN]})
    resources.ResourceGroup("second", location="koreacentral", tags=computed.apply(lambda v: {"ids": str(v)}))
    resources.ResourceGroup("third", location="koreacentral", tags={"group": group.name})


def _inputs_shown(recording: Recording) -> dict[str, str]:
    """Each resource's inputs as text, every unknown (a new object per evaluation) written the same way."""
    shown = lambda v: "<unknown>" if known_types.is_unknown(v) else repr(v)  # noqa: E731
    return {r.name: json.dumps(r.inputs, sort_keys=True, default=shown) for r in recording.resources}


def test_an_evaluation_records_the_same_with_either_check(monkeypatch: pytest.MonkeyPatch) -> None:
    swapped = _inputs_shown(evaluate(_program_with_a_computed_input, preview=True))
    monkeypatch.setattr(unknowns, "contains_unknowns", SDK_CHECK)  # the evaluator now swaps in the SDK's own
    untouched = _inputs_shown(evaluate(_program_with_a_computed_input, preview=True))
    assert swapped == untouched, "the swap must not change what a preview records"
    assert json.loads(swapped["second"])["tags"] == "<unknown>", "tags computed from an unknown stay unknown"
    assert json.loads(swapped["third"])["tags"] == {"group": "group"}, "tags from known values are recorded"
    assert rpc.contains_unknowns is SDK_CHECK, "after an evaluation the SDK has its own check back"


def test_a_failing_program_gives_the_sdk_its_check_back() -> None:
    seen: list[Callable[[Any], bool]] = []

    def failing() -> None:
        seen.append(rpc.contains_unknowns)
        raise RuntimeError("program error")

    with pytest.raises(Exception, match="program error"):
        evaluate(failing)
    assert seen == [contains_unknowns], "during an evaluation the loop is in place"
    assert rpc.contains_unknowns is SDK_CHECK, "a failed evaluation must not leave the SDK patched"


def test_an_sdk_output_type_with_a_field_named_values_is_walked() -> None:
    """The Kubernetes SDK's NodeSelectorRequirement is a dict with a `values` field: a stack whose outputs hold a
    required node affinity must evaluate, and an unknown inside such an object is still found."""
    from pulumi_kubernetes.core.v1 import outputs

    requirement = outputs.NodeSelectorRequirement(key="gpu-pool", operator="In", values=["gput4b"])
    assert isinstance(requirement, dict) and requirement.values == ["gput4b"], "the field shadows dict.values"
    assert contains_unknowns({"affinity": [requirement]}) is False
    assert contains_unknowns({"affinity": [{"requirement": requirement, "later": UNKNOWN}]}) is True
