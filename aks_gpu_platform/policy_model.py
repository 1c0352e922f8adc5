"""What the platform's guardrails (policy_rules.py) read and report: a resource as Pulumi sends it (type token,
camelCase inputs, the options that guard data), facts of the stack, and each policy's verdicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AML_FILESYSTEM = "azure-native:storagecache:AmlFilesystem"
STORAGE_ACCOUNT = "azure-native:storage:StorageAccount"
REGISTRY = "azure-native:containerregistry:Registry"
LOG_ANALYTICS_WORKSPACE = "azure-native:operationalinsights:Workspace"
MONITOR_WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
NETAPP_ACCOUNT = "azure-native:netapp:Account"
NETAPP_POOL = "azure-native:netapp:CapacityPool"
NETAPP_VOLUME = "azure-native:netapp:CapacityPoolVolume"
GENERIC_RESOURCE = "azure-native:resources:Resource"  # how Flexible NetApp pools are created (newer API version)
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
STACK = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Resource:
    """What a policy may look at: the type token, the inputs and the options that guard data."""

    type: str
    name: str
    inputs: Mapping[str, Any]
    protect: bool = False
    ignore_changes: Sequence[str] = ()
    urn: str = ""


@dataclass(frozen=True)
class StackFacts:
    """Facts about the stack as a whole."""

    environment: str
    outputs: Mapping[str, Any] = field(default_factory=dict[str, Any])
    secret_outputs: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Violation:
    policy: str
    resource: str
    message: str

    def __str__(self) -> str:
        return f"[{self.policy}] {self.resource}: {self.message}"


ResourceCheck = Callable[[Resource, StackFacts], list[str]]
StackCheck = Callable[[Sequence[Resource], StackFacts], list[Violation]]


@dataclass(frozen=True)
class Policy:
    name: str
    description: str
    resource_check: ResourceCheck | None = None
    stack_check: StackCheck | None = None
    mandatory: bool = True


def field_at(value: Any, *path: str) -> Any:
    """The value at `path` of nested mappings, or None where one is missing."""
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)  # type: ignore[union-attr]
    return value
