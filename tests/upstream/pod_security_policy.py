"""A model of Azure Policy's pod security baseline initiative as the add-on's Gatekeeper applies it to one pod.

The initiative (tests/fixtures/azure_policy/PSPBaselineStandard-1.4.0.json, from Azure/azure-policy at the commit it
names) assigns five policies with fixed and passed-through parameters. Each acts on kind Pod, in the namespaces the
assignment covers (`namespaces` empty: all; minus `excludedNamespaces`). Their rules, per the pod-security-policy
templates of open-policy-agent/gatekeeper-library the Azure templates follow (library/pod-security-policy/
{privileged-containers,host-network-ports,host-namespaces,capabilities,host-filesystem}/template.yaml):
- NoPrivilegedContainers: a container, init or ephemeral container with securityContext.privileged true;
- BlockUsingHostNetwork: spec.hostNetwork while allowHostNetwork is false; a hostPort outside [minPort, maxPort];
- BlockUsingHostProcessIDAndIPC: spec.hostPID or spec.hostIPC;
- ContainerCapabilities: capabilities.add beyond allowedCapabilities (case-insensitive, `*` allows all); a
  requiredDropCapabilities entry not dropped (unless ALL is);
- NoHostPathVolume: a hostPath volume whose path no allowedHostPaths entry prefixes.
With effect Deny the API server refuses the pod (a DaemonSet or Job then never gets one); with Audit it is admitted
and reported non-compliant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aks_gpu_platform.testing import Recording

INITIATIVE = json.loads(
    (Path(__file__).parent.parent / "fixtures" / "azure_policy" / "PSPBaselineStandard-1.4.0.json").read_text()
)
POLICY_ASSIGNMENT = "azure-native:authorization:PolicyAssignment"
MEMBERS = {m["policyDefinitionId"]: m for m in INITIATIVE["policyDefinitions"]}


@dataclass(frozen=True)
class Assignment:
    """One policy assignment as Gatekeeper sees it: which namespaces, which effect, which rules with what values."""

    name: str
    effect: str
    namespaces: tuple[str, ...]
    excluded: tuple[str, ...]
    rules: tuple[tuple[str, Mapping[str, Any]], ...]

    def covers(self, namespace: str) -> bool:
        return namespace not in self.excluded and (not self.namespaces or namespace in self.namespaces)


def assignments(recording: Recording) -> list[Assignment]:
    """The pod security assignments a stack makes (an assignment of anything else is an error: not modelled)."""
    found: list[Assignment] = []
    defaults = {k: v["defaultValue"] for k, v in INITIATIVE["parameters"].items() if "defaultValue" in v}
    for resource in recording.of_type(POLICY_ASSIGNMENT):
        inputs = resource.inputs
        given = {k: v.get("value") for k, v in (inputs.get("parameters") or {}).items()}
        definition = str(inputs["policyDefinitionId"])
        if definition == INITIATIVE["id"]:
            values = {**defaults, **given}
            rules = tuple(
                (
                    m["policyDefinitionReferenceId"],
                    {**m["fixed"], **{k: values[v] for k, v in m.get("fromInitiative", {}).items()}},
                )
                for m in INITIATIVE["policyDefinitions"]
            )
        elif definition in MEMBERS:
            values = given
            rules = ((MEMBERS[definition]["policyDefinitionReferenceId"], given),)
        else:
            raise AssertionError(f"{resource.name}: {definition} is not a policy this model knows")
        found.append(
            Assignment(
                resource.name,
                str(values.get("effect", defaults["effect"])).capitalize(),
                tuple(values.get("namespaces") or ()),
                tuple(values.get("excludedNamespaces", defaults["excludedNamespaces"])),
                rules,
            )
        )
    return found


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for key in ("containers", "initContainers", "ephemeralContainers") for c in spec.get(key) or []]


def violations(rule: str, values: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    """Why one of the initiative's policies finds the pod non-compliant (empty: compliant)."""
    containers = _containers(spec)
    if rule == "NoPrivilegedContainers":
        return [f"{c['name']}: privileged" for c in containers if (c.get("securityContext") or {}).get("privileged")]
    if rule == "BlockUsingHostNetwork":
        found = ["hostNetwork"] if spec.get("hostNetwork") and not values["allowHostNetwork"] else []
        low, high = values["minPort"], values["maxPort"]
        ports = [p.get("hostPort") for c in containers for p in c.get("ports") or []]
        return found + [f"hostPort {p}" for p in ports if p and not low <= p <= high]
    if rule == "BlockUsingHostProcessIDAndIPC":
        return [key for key in ("hostPID", "hostIPC") if spec.get(key)]
    if rule == "ContainerCapabilities":
        allowed = {c.lower() for c in values["allowedCapabilities"]}
        must_drop = {c.lower() for c in values["requiredDropCapabilities"]}
        found = []
        for container in containers:
            capabilities = (container.get("securityContext") or {}).get("capabilities") or {}
            added = {c.lower() for c in capabilities.get("add") or []}
            dropped = {c.lower() for c in capabilities.get("drop") or []}
            if "*" not in allowed and added - allowed:
                found.append(f"{container['name']}: adds {sorted(added - allowed)}")
            if must_drop - dropped and "all" not in dropped:
                found.append(f"{container['name']}: does not drop {sorted(must_drop - dropped)}")
        return found
    if rule == "NoHostPathVolume":
        prefixes = [p["pathPrefix"] for p in values["allowedHostPaths"]["paths"]]
        paths = [v["hostPath"]["path"] for v in spec.get("volumes") or [] if "hostPath" in v]
        return [f"hostPath {p}" for p in paths if not any(p.startswith(prefix) for prefix in prefixes)]
    raise AssertionError(f"{rule}: not a policy of the initiative")


@dataclass(frozen=True)
class Verdict:
    denied: list[str]
    audited: list[str]


def admission(found: Sequence[Assignment], namespace: str, spec: Mapping[str, Any]) -> Verdict:
    """What the assignments do to a pod with `spec` created in `namespace`."""
    denied: list[str] = []
    audited: list[str] = []
    for assignment in found:
        if not assignment.covers(namespace):
            continue
        for rule, values in assignment.rules:
            problems = [f"{assignment.name} {rule}: {p}" for p in violations(rule, values, spec)]
            (denied if assignment.effect == "Deny" else audited).extend(problems)
    return Verdict(denied, audited)
