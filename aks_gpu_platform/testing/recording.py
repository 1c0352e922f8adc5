"""What a program registered under the recording mocks: its resources, invokes and stack outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Shorter computed strings ("", "1") are too common to tell apart from real values.
MIN_MOCK_VALUE_LENGTH = 4


@dataclass
class RecordedResource:
    """One registration: what the program asked Pulumi to create, with its options."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    protect: bool
    ignore_changes: list[str]
    replace_on_changes: list[str]
    delete_before_replace: bool
    retain_on_delete: bool
    depends_on: list[str]
    deleted_with: str
    provider: str
    aliases: list[str] = field(default_factory=list)
    """Types this resource was formerly known as (the provider SDK classes alias every older API version)."""
    alias_specs: list[dict[str, Any]] = field(default_factory=list)
    """Every alias as sent to the engine: `urn`, or `name`/`type`/`parentUrn`/`noParent` (empty = unchanged)."""
    after_create_hooks: list[str] = field(default_factory=list)
    """Resource hooks the engine runs once this resource is created, before releasing its dependents."""
    delete_before_replace_defined: bool = False
    """True when the program set `delete_before_replace` (True or False); False leaves it to the provider."""


@dataclass
class Recording:
    """Everything one program run registered and invoked, in registration order.

    Registration order follows the SDK's asyncio scheduling and differs between runs; anything
    printed or written should use `in_urn_order()`.
    """

    resources: list[RecordedResource] = field(default_factory=list)
    invokes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stack_outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    mock_values: dict[str, str] = field(default_factory=dict)
    """Strings only the mocks made up (IDs, addresses, GUIDs, endpoints) -> where each came from,
    e.g. `monitoring-workspace.metrics.prometheusQueryEndpoint`. A real deployment has other values."""

    def in_urn_order(self) -> list[RecordedResource]:
        """Every resource, sorted by URN: the same order on every run."""
        return sorted(self.resources, key=lambda r: r.urn)

    def note_mock_value(self, value: str, origin: str) -> None:
        """Remember a made-up value; of several origins the smallest wins, so runs agree."""
        if len(value) < MIN_MOCK_VALUE_LENGTH:
            return
        known = self.mock_values.get(value)
        if known is None or origin < known:
            self.mock_values[value] = origin

    def of_type(self, type_token: str) -> list[RecordedResource]:
        """Every resource of one Pulumi type, e.g. `azure-native:containerservice:AgentPool`."""
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str, name_contains: str = "") -> RecordedResource:
        """The single resource of `type_token` whose logical name contains `name_contains`.

        Raises AssertionError naming the candidates when there are none or several, so a test
        that expects exactly one resource fails with what was found instead.
        """
        found = [r for r in self.of_type(type_token) if name_contains in r.name]
        if len(found) != 1:
            names = [r.name for r in found]
            raise AssertionError(f"expected one {type_token} named *{name_contains}*, found {names}")
        return found[0]

    def by_urn(self, urn: str) -> RecordedResource:
        """The resource with this URN (a `parent` or `depends_on` entry); KeyError if none."""
        for r in self.resources:
            if r.urn == urn:
                return r
        raise KeyError(urn)

    def kubernetes_objects(self) -> list[RecordedResource]:
        """Plain Kubernetes objects (not Helm releases, not providers)."""
        return [
            r
            for r in self.resources
            if r.type.startswith("kubernetes:")
            and r.custom
            and "helm.sh" not in r.type
            and r.type != "pulumi:providers:kubernetes"
        ]
