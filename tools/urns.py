"""Which resources of a deployed stack a new program run takes over: by URN, or through aliases.

The engine, not the SDK, turns alias specs into URNs. This module resolves them the way
pulumi/pulumi `pkg/resource/deploy/step_generator.go` does (`generateAliases`,
`collapseAliasToUrn`, `inheritedChildAlias`): resources in registration order; a resource's
candidates are its URN, then each alias spec collapsed to a URN, then the URNs inherited from the
alias its parent matched; the first candidate found among the old URNs is taken, and a match
through an alias is remembered for the resource's children.

URNs are rebuilt as the engine forms them (`resource.NewURN`): the type is the parent's whole
qualified type chain, then `$`, then the resource's type; a root-stack parent adds nothing. Pulumi's
MockMonitor shortens the chain to the parent's last type, so the mocks' URNs are not used as such.

`python -m tools.urns --stack dev` prints the URNs a stack registers (the fixtures of
tests/platform/test_urns.py are that output for the last release).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass, field

from aks_gpu_platform.config.loader import PROJECT
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording


def engine_urns(recording: Recording, stack: str, project: str = PROJECT) -> dict[str, str]:
    """Mock URN -> the URN the engine gives the same registration (parents registered before children)."""
    found: dict[str, str] = {}
    for resource in recording.resources:
        parent = found.get(resource.parent, "") if resource.parent else ""
        chain = f"{qualified_type(parent)}${resource.type}" if parent else resource.type
        found[resource.urn] = f"urn:pulumi:{stack}::{project}::{chain}::{resource.name}"
    return found


def qualified_type(urn: str) -> str:
    return urn.split("::")[2]


def urn_name(urn: str) -> str:
    return urn.split("::", 3)[3]


@dataclass
class Takeover:
    """The outcome of running a program against a deployed stack's URNs."""

    stack: str
    reached: dict[str, str] = field(default_factory=dict)
    """Old URN -> the new URN that takes it over."""
    claimed_twice: list[str] = field(default_factory=list)
    """Old URNs that two new resources claim (the engine rejects the update)."""

    def missing(self, olds: Iterable[str]) -> list[str]:
        """Old URNs no new resource reaches: the engine would delete them and create new ones."""
        return sorted(set(olds) - set(self.reached))


def takeover(recording: Recording, olds: Iterable[str], stack: str, project: str = PROJECT) -> Takeover:
    """Resolve every registered resource against the old URNs as the engine's step generator does."""
    old_urns = set(olds)
    result = Takeover(stack)
    matched_alias: dict[str, str] = {}  # new URN -> the old URN it took over through an alias

    def make(parent: str, type_: str, name: str) -> str:
        chain = f"{qualified_type(parent)}${type_}" if parent else type_
        return f"urn:pulumi:{stack}::{project}::{chain}::{name}"

    def collapse(spec: dict[str, object], resource: RecordedResource, parent: str) -> str:
        if spec.get("urn"):
            return str(spec["urn"])
        spec_parent = str(spec.get("parentUrn") or "")
        spec_parent = engine.get(spec_parent, spec_parent)
        spec_parent = matched_alias.get(spec_parent, spec_parent) if spec_parent else parent
        if spec.get("noParent"):
            spec_parent = ""
        return make(spec_parent, str(spec.get("type") or resource.type), str(spec.get("name") or resource.name))

    def inherited(child_type: str, child_name: str, parent_name: str, parent_alias: str) -> str:
        name = child_name
        if child_name.startswith(parent_name):
            name = urn_name(parent_alias) + child_name[len(parent_name) :]
        return make(parent_alias, child_type, name)

    engine = engine_urns(recording, stack, project)
    for resource in recording.resources:
        urn = engine[resource.urn]
        parent = engine.get(resource.parent, "") if resource.parent else ""
        candidates = [urn]
        aliases = [collapse(spec, resource, parent) for spec in resource.alias_specs]
        candidates += aliases
        if parent in matched_alias:
            parent_alias = matched_alias[parent]
            candidates.append(inherited(resource.type, resource.name, urn_name(parent), parent_alias))
            for alias in aliases:
                alias_type = qualified_type(alias).rsplit("$", 1)[-1]
                candidates.append(inherited(alias_type, urn_name(alias), urn_name(parent), parent_alias))
        for candidate in candidates:
            if candidate not in old_urns:
                continue
            if candidate in result.reached:
                result.claimed_twice.append(candidate)
            result.reached[candidate] = urn
            if candidate != urn:
                matched_alias[urn] = candidate
            break
    return result


def registered_urns(recording: Recording, stack: str) -> list[str]:
    """The engine-form URNs of everything a run registered, in registration order."""
    return list(engine_urns(recording, stack).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stack", default="dev")
    args = parser.parse_args()
    print("\n".join(registered_urns(run_stack(args.stack), args.stack)))


if __name__ == "__main__":
    main()
