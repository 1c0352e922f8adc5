"""Fuzzed stack configs either validate or fail with the one clean ConfigError naming a field.

Hypothesis mutates the real dev and prod configs (wrong types, out-of-range numbers, unknown
enum values, missing and extra keys, reshaped lists) and checks that nothing else escapes,
and that a broken config stops the program before any resource is registered.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, runtime
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import STACKS, settings_of
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
# Every problem starts with the path of the field it is about: `cluster.apiServer.authorizedIpRanges[0]: ...`.
PROBLEM = re.compile(r"^(\(root\)|[\w-]+(\.[\w-]+|\[\d+\])*): \S")
keys = st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True)

BASE = {stack: settings_of(load_stack_file(stack, REPO_ROOT)) for stack in STACKS}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.sampled_from([0, -1, 1, 1001, 2**31, 0.5, -0.1, float("inf")]),
    st.text(max_size=12),
    st.sampled_from(["", "Premium", "premium", "1.33", "10.0.0.0/33", "Standard_", "prod", "-", "1"]),
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=6
)


def _paths(node: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found: list[tuple[str | int, ...]] = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _paths(child, (*prefix, i))
    return found


PATHS = {stack: _paths(BASE[stack]) for stack in STACKS}


def _parent(root: Any, path: tuple[str | int, ...]) -> Any:
    node = root
    for part in path[:-1]:
        node = node[part]
    return node


@st.composite
def mutated(draw: st.DrawFn, stack: str) -> dict[str, Any]:
    settings_copy = copy.deepcopy(BASE[stack])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(PATHS[stack]))
        try:
            parent = _parent(settings_copy, path)
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or reshaped this branch
        if isinstance(parent, str):
            continue  # an earlier mutation turned an ancestor into a string: indexing it reads a character
        kind = draw(st.sampled_from(["replace", "delete", "extra", "wrap", "stringify", "empty"]))
        if kind == "replace":
            parent[path[-1]] = draw(values)
        elif kind == "delete":
            del parent[path[-1]]
        elif kind == "extra" and isinstance(current, dict):
            current[draw(keys)] = draw(values)
        elif kind == "wrap":
            parent[path[-1]] = [current]
        elif kind == "stringify":
            parent[path[-1]] = str(current)
        elif kind == "empty":
            parent[path[-1]] = type(current)() if isinstance(current, dict | list | str) else None
    return settings_copy


def _check(settings_value: dict[str, Any]) -> None:
    try:
        load_platform_config(settings_value)
    except ConfigError as err:
        assert err.problems, "a ConfigError lists at least one problem"
        for problem in err.problems:
            assert PROBLEM.match(problem), f"problem does not start with a field path: {problem!r}"


@pytest.mark.parametrize("stack", STACKS)
def test_fuzzed_configs_validate_or_name_a_field(stack: str) -> None:
    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(mutated(stack))
    def run(settings_value: dict[str, Any]) -> None:
        _check(settings_value)  # any exception other than ConfigError fails the test

    run()


@pytest.mark.parametrize("stack", STACKS)
def test_fuzzed_top_level_keys(stack: str) -> None:
    @given(st.dictionaries(st.sampled_from([*BASE[stack], "unknownSection", "gpuPool"]), values, max_size=4))
    def run(overrides: dict[str, Any]) -> None:
        _check({**BASE[stack], **overrides})

    run()


BROKEN = {
    "cpu pool maxCount below minCount": ("cpuPool", {"vmSize": "Standard_D4ds_v5", "minCount": 5, "maxCount": 2}),
    "unknown upgrade tier": ("upgrade", {"tier": "Gold"}),
    "gpu pools not a list": ("gpuPools", {"name": "gput4"}),
    "extra cluster key": ("cluster", None),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_config_registers_no_resource(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    key, value = BROKEN[case]
    if value is None:
        config[PREFIX + key]["publicNetworkAccess"] = True
    else:
        config[PREFIX + key] = value
    created: list[Recording] = []

    def recording() -> Recording:
        created.append(Recording())
        return created[-1]

    monkeypatch.setattr(runtime, "Recording", recording)
    with pytest.raises(ConfigError) as raised:
        run_stack("dev", config)
    assert any(p.startswith(key) for p in raised.value.problems), raised.value.problems
    assert len(created) == 1 and created[0].resources == [], "validation must come before the first resource"
