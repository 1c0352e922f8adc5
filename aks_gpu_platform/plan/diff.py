"""What changes between two plans (`plan.json`), URN by URN: what a change creates, deletes, updates (which inputs,
before and after) and replaces, in which order Pulumi would replace, what a reviewer must weigh (quota held during a
replacement, jobs a GPU pool drains), and the quota, cost, verdict, team, model and config figures before and after.

Whether a change replaces, and in which order, follows each provider (replacement.py). Changes under a path in
ignoreChanges are not changes. Values only the mocks know are compared as their `<computed: origin>` placeholders,
so they never show up as changes by themselves. `diff_command.py` plans the two trees; `diff_text.py` prints the diff.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from aks_gpu_platform.config.catalog.vm_sizes import vcpus_and_quota_family

from . import cost
from .replacement import Order, covered, refused_update, replace_reason, replacement_order, same_target

Op = Literal["create", "update", "replace", "delete"]
ABSENT = "<absent>"


@dataclass(frozen=True)
class PropertyChange:
    path: str
    before: Any
    after: Any
    replaces: str | None
    """Why this change forces a replacement; None when Pulumi updates in place."""
    refused: str | None = None
    """Why Azure refuses this in-place update (the deploy would fail halfway); None when it accepts it."""


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    name: str
    op: Op
    changes: tuple[PropertyChange, ...] = ()
    order: Order | None = None
    order_why: str = ""
    notes: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()
    """The stack-config keys whose change this resource's change follows from, where the plans tell."""


@dataclass(frozen=True)
class FigureChange:
    """A summary figure of the plan (a vCPU quota, the monthly floor or ceiling) before and after."""

    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float:
        return (self.after or 0) - (self.before or 0)


@dataclass(frozen=True)
class EntityChange:
    """A team's (GPUs of nominal quota, monthly ceiling) or a model's (monthly floor and ceiling) figures, before and
    after; None on the side that lacks the team or model."""

    name: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None


@dataclass(frozen=True)
class PlanDiff:
    changes: list[ResourceChange]
    unchanged: int
    outputs_changed: list[str]
    quota: list[FigureChange] = field(default_factory=lambda: list[FigureChange]())
    monthly: list[FigureChange] = field(default_factory=lambda: list[FigureChange]())
    summary_missing: bool = False
    """The base plan predates summaries: quota and cost deltas cannot be shown."""
    unpriced_added: list[str] = field(default_factory=lambda: list[str]())
    """Items the head plan bills but cannot price that the base did not have: not in the cost figures."""
    verdicts_added: list[str] = field(default_factory=lambda: list[str]())
    """Errors and warnings of the head plan the base did not have (`error: ...`, `warning: ...`)."""
    verdicts_removed: list[str] = field(default_factory=lambda: list[str]())
    teams: list[EntityChange] = field(default_factory=lambda: list[EntityChange]())
    models: list[EntityChange] = field(default_factory=lambda: list[EntityChange]())
    config_changes: list[PropertyChange] = field(default_factory=lambda: list[PropertyChange]())
    """What differs between the stack configs the two plans ran with (empty when a plan predates carrying it)."""
    summary_parts_missing: tuple[str, ...] = ()
    """Parts of the summary the base plan predates (verdicts, models, teams, config): not compared."""

    def of(self, op: Op) -> list[ResourceChange]:
        return [c for c in self.changes if c.op == op]

    @property
    def refused(self) -> list[ResourceChange]:
        """Changes Azure would refuse: the plan must not be applied as it is."""
        return [c for c in self.changes if any(p.refused for p in c.changes)]


# What identifies an element of a list of objects, most specific first: a container, a pool, a team, a Prometheus
# rule (record or alert), a Kueue flavor, a toleration (key and effect). A list whose elements all carry one of these,
# each value once, is compared element by element by it, so an insertion reads as one insertion.
LIST_KEYS: tuple[tuple[str, ...], ...] = (
    ("name",),
    ("record",),
    ("alert",),
    ("pool",),
    ("team",),
    ("key", "effect"),
    ("key",),
    ("type",),
)


def _list_key(*lists: Sequence[Any]) -> tuple[str, ...] | None:
    """The fields that tell apart the elements of each of `lists`, or None (matched by position and content)."""
    items = [item for each in lists for item in each]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for fields in LIST_KEYS:
        keyed = [[tuple(item.get(f) for f in fields) for item in each] for each in lists]
        if all(isinstance(v, str) for each in keyed for key in each for v in key) and all(
            len(set(each)) == len(each) for each in keyed
        ):
            return fields
    return None


def _element(path: str, fields: tuple[str, ...], item: Mapping[str, Any]) -> str:
    return f"{path}[{','.join(f'{f}={item[f]}' for f in fields)}]"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _list_leaves(before: Sequence[Any], after: Sequence[Any], path: str) -> Iterator[tuple[str, Any, Any]]:
    """Lists of objects with a stable key are matched by it; other lists by their longest common run of equal
    elements (difflib), so an element inserted or removed anywhere is one change, not a change of every index
    after it."""
    fields = _list_key(before, after)
    if fields is not None:
        old = {tuple(item[f] for f in fields): item for item in before}
        new = {tuple(item[f] for f in fields): item for item in after}
        for key in [*old, *(k for k in new if k not in old)]:
            item = old.get(key) or new[key]
            yield from _leaves(old.get(key, ABSENT), new.get(key, ABSENT), _element(path, fields, item))
        return
    matcher = difflib.SequenceMatcher(None, [_canonical(v) for v in before], [_canonical(v) for v in after], False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                yield from _leaves(before[i1 + offset], after[j1 + offset], f"{path}[{j1 + offset}]")
            continue
        for index in range(i1, i2):
            yield f"{path}[{index}]", before[index], ABSENT
        for index in range(j1, j2):
            yield f"{path}[{index}]", ABSENT, after[index]


def _leaves(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, before, after) of every difference; ABSENT on the side that lacks a key or list element."""
    if isinstance(before, dict) and isinstance(after, dict):
        before_map: Mapping[str, Any] = before
        after_map: Mapping[str, Any] = after
        for key in sorted(set(before_map) | set(after_map)):
            child = f"{path}.{key}" if path else key
            yield from _leaves(before_map.get(key, ABSENT), after_map.get(key, ABSENT), child)
    elif isinstance(before, list) and isinstance(after, list):
        yield from _list_leaves(before, after, path)  # pyright: ignore[reportUnknownArgumentType]
    elif before != after:
        yield path, before, after


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[PropertyChange]:
    ignored = after["options"].get("ignoreChanges") or []
    replace_on = after["options"].get("replaceOnChanges") or []
    found: list[PropertyChange] = []
    for path, old, new in _leaves(before["inputs"], after["inputs"]):
        if covered(path, ignored):
            continue
        replaces = replace_reason(after["type"], path, replace_on)
        refused = None if replaces else refused_update(after, path)
        found.append(PropertyChange(path, old, new, replaces, refused))
    for option in ("protect", "retainOnDelete", "deleteBeforeReplace", "ignoreChanges", "replaceOnChanges"):
        old, new = before["options"].get(option), after["options"].get(option)
        if old != new:
            found.append(PropertyChange(f"(option) {option}", old, new, None))
    return found


def _protected_note(entry: Mapping[str, Any]) -> tuple[str, ...]:
    if entry["options"].get("protect"):
        return ("protected: `pulumi up` refuses to delete it until protect is removed",)
    return ()


AGENT_POOL = "azure-native:containerservice:AgentPool"
CAPACITY_PATHS = ("maxCount", "vmSize")


def _pool_vcpus(inputs: Mapping[str, Any]) -> tuple[int, str] | None:
    """(vCPUs at maxCount, quota family) of an AgentPool's inputs; None for a size the catalog lacks."""
    found = vcpus_and_quota_family(str(inputs.get("vmSize", "")))
    if found is None:
        return None
    per_node, family = found
    return per_node * int(inputs.get("maxCount") or inputs.get("count") or 0), family


def _pool_gpus(inputs: Mapping[str, Any]) -> int:
    """GPU devices of an AgentPool at maxCount as Kueue's quotas count them: shared replicas or MIG slices where
    its nodes advertise those, else whole GPUs (0 for a CPU pool)."""
    capacity = cost.agent_pool_capacity(inputs)
    return capacity.gpu_devices_per_vm * capacity.max_count


def _team_quotas(resources: Mapping[str, Any], flavor: str) -> list[str]:
    """`team N GPUs` for each ClusterQueue with nominal GPU quota on the Kueue flavor `flavor`."""
    found: list[str] = []
    for entry in resources.values():
        if not entry["type"].endswith(":ClusterQueue"):
            continue
        spec = entry["inputs"].get("spec") or {}
        for group in spec.get("resourceGroups") or []:
            for each in group.get("flavors") or []:
                if each.get("name") != flavor:
                    continue
                gpus = [r["nominalQuota"] for r in each.get("resources") or [] if r["name"].endswith("/gpu")]
                if gpus:
                    found.append(f"{entry['inputs']['metadata']['name']} {gpus[0]}")
    return found


def _pool_notes(
    before: Mapping[str, Any], after: Mapping[str, Any], change: ResourceChange, head: Mapping[str, Any]
) -> tuple[str, ...]:
    """What a reviewer of an AgentPool change must weigh: the quota held during a replacement, the jobs a GPU
    pool's replacement drains, and the team quotas a change of capacity is measured against."""
    notes: list[str] = []
    old_in, new_in = before["inputs"], after["inputs"]
    old_vcpus, new_vcpus = _pool_vcpus(old_in), _pool_vcpus(new_in)
    if change.op == "replace" and change.order == "create-before-delete" and old_vcpus and new_vcpus:
        families = {old_vcpus[1], new_vcpus[1]}
        notes.append(
            f"quota peak during the replacement: old {old_vcpus[0]} + new {new_vcpus[0]} = "
            f"{old_vcpus[0] + new_vcpus[0]} vCPUs at maxCount ({' and '.join(sorted(families))}) while both pools "
            "exist; the quota summary above counts only the new pool"
        )
    if change.op == "replace" and _pool_gpus(old_in):
        drain = (old_in.get("upgradeSettings") or {}).get("drainTimeoutInMinutes", 30)
        notes.append(
            f"GPU pool replaced: running jobs on {old_in.get('agentPoolName')} are evicted when the old pool is "
            f"deleted; each pod gets its termination grace period to checkpoint, a node's drain waits up to "
            f"{drain} min (upgradeSettings.drainTimeoutInMinutes), and Kueue requeues the jobs for the new pool"
        )
    old_gpus, new_gpus = _pool_gpus(old_in), _pool_gpus(new_in)
    if (any(p.path in CAPACITY_PATHS for p in change.changes) or old_gpus != new_gpus) and (old_gpus or new_gpus):
        flavor = (new_in.get("nodeLabels") or {}).get("gpu-pool")
        quotas = _team_quotas(head["resources"], flavor) if flavor else []
        held = f"team quotas on it: {', '.join(quotas)}" if quotas else "no team quota on it"
        notes.append(f"GPU capacity {old_gpus} -> {new_gpus} (maxCount x GPU devices per node); {held}")
    return tuple(notes)


JOB = "kubernetes:batch/v1:Job"


def _job_notes(after: Mapping[str, Any]) -> tuple[str, ...]:
    """A replaced Job runs again: one whose pods request GPUs brings up a GPU node where none is running."""
    spec = after["inputs"].get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    gpus = sum(
        int(limits.get(resource) or 0)
        for container in pod.get("containers") or []
        for limits in [(container.get("resources") or {}).get("limits") or {}]
        for resource in cost.GPU_RESOURCE_NAMES
        if not isinstance(limits.get(resource), str) or str(limits.get(resource)).isdigit()
    )
    if not gpus:
        return ()
    pods = int(spec.get("parallelism") or 1)
    return (
        f"the replacement Job runs again: {pods} pod(s) of {gpus} GPU each, so the autoscaler starts a GPU node on "
        "a pool scaled to zero and it bills until the Job ends and the node scales down",
    )


def _updated(urn: str, base: Mapping[str, Any], head: Mapping[str, Any]) -> ResourceChange | None:
    """The change of a resource both plans hold: replaced when a changed path forces it, else updated in place;
    None when nothing that counts changed."""
    before, after = base["resources"][urn], head["resources"][urn]
    found = _changes(before, after)
    if not found:
        return None
    if any(c.replaces for c in found):
        order, why = replacement_order(before, after)
        change = ResourceChange(
            urn, after["type"], after["name"], "replace", tuple(found), order, why, _protected_note(before)
        )
    else:
        change = ResourceChange(urn, after["type"], after["name"], "update", tuple(found))
    if after["type"] == AGENT_POOL:
        change = replace(change, notes=change.notes + _pool_notes(before, after, change, head))
    if after["type"] == JOB and change.op == "replace":
        change = replace(change, notes=change.notes + _job_notes(after))
    return change


def _created_and_deleted(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ResourceChange]:
    """Resources only one plan holds; a created one that addresses a deleted one's cloud object says so."""
    created = [urn for urn in sorted(new) if urn not in old and new[urn]["custom"]]
    deleted = [urn for urn in sorted(old) if urn not in new and old[urn]["custom"]]
    changes: list[ResourceChange] = []
    for urn in created:
        twin = next((d for d in deleted if same_target(old[d], new[urn])), None)
        notes = (
            (
                f"same cloud object as deleted {old[twin]['name']}: without `aliases` Pulumi creates this URN (which "
                "takes over the existing object) and then deletes the old URN, deleting the object",
            )
            if twin
            else ()
        )
        changes.append(ResourceChange(urn, new[urn]["type"], new[urn]["name"], "create", notes=notes))
    for urn in deleted:
        changes.append(
            ResourceChange(urn, old[urn]["type"], old[urn]["name"], "delete", notes=_protected_note(old[urn]))
        )
    return changes


def _summary_figures(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, Any]:
    """The PlanDiff fields that compare the two plans' summaries."""
    old_summary, new_summary = base.get("summary") or {}, head.get("summary") or {}
    old_verdicts, new_verdicts = _verdicts(old_summary), _verdicts(new_summary)
    missing = tuple(
        part for part in ("verdicts", "teams", "models") if part not in old_summary or part not in new_summary
    )
    missing += () if "config" in base and "config" in head else ("config",)
    return {
        "quota": _figures(old_summary.get("quota") or {}, new_summary.get("quota") or {}),
        "monthly": _figures(old_summary.get("monthly") or {}, new_summary.get("monthly") or {}, keep_equal=True),
        "summary_missing": not old_summary or not new_summary,
        "unpriced_added": _unpriced_added(old_summary, new_summary),
        "verdicts_added": [v for v in new_verdicts if v not in old_verdicts] if "verdicts" in old_summary else [],
        "verdicts_removed": [v for v in old_verdicts if v not in new_verdicts] if "verdicts" in new_summary else [],
        "teams": _entity_changes(old_summary.get("teams"), new_summary.get("teams")),
        "models": _entity_changes(old_summary.get("models"), new_summary.get("models")),
        "summary_parts_missing": missing,
    }


def diff_plans(base: Mapping[str, Any], head: Mapping[str, Any]) -> PlanDiff:
    old, new = base["resources"], head["resources"]
    both = [urn for urn in sorted(set(old) & set(new)) if new[urn]["custom"]]
    updated = [_updated(urn, base, head) for urn in both]
    changes = [c for c in updated if c is not None] + _created_and_deleted(old, new)
    old_out, new_out = base.get("outputs") or {}, head.get("outputs") or {}
    outputs_changed = sorted(k for k in set(old_out) | set(new_out) if old_out.get(k, ABSENT) != new_out.get(k, ABSENT))
    rank = {"replace": 0, "delete": 1, "create": 2, "update": 3}
    changes.sort(key=lambda c: (rank[c.op], c.type, c.urn))
    config_changes = [PropertyChange(p, b, a, None) for p, b, a in _leaves(base.get("config"), head.get("config"))]
    if "config" in base and "config" in head:
        changes = [replace(c, causes=_causes(c, config_changes)) for c in changes]
    else:
        config_changes = []
    unchanged = sum(c is None for c in updated)
    return PlanDiff(changes, unchanged, outputs_changed, config_changes=config_changes, **_summary_figures(base, head))


def _verdicts(summary: Mapping[str, Any]) -> list[str]:
    found = summary.get("verdicts") or {}
    return [f"error: {v}" for v in found.get("errors") or []] + [f"warning: {v}" for v in found.get("warnings") or []]


def _entity_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[EntityChange]:
    """Per team (model) whose figures differ, before and after; nothing when either plan lacks them."""
    if before is None or after is None:
        return []
    names = sorted(set(before) | set(after))
    return [EntityChange(n, before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)]


_ENTITY = re.compile(r"\[[^\]=]+=([^\],]+)(?:,[^\]]*)?\]")


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text) is not None


def _causes(change: ResourceChange, config: Sequence[PropertyChange]) -> tuple[str, ...]:
    """The config keys behind a resource change: a changed key whose pool, team or model (the list element it sits
    in) the resource is named after or its changed values name, or whose new value its changed values hold; else
    the one config change, when there is only one."""
    seen = " ".join([change.name, *(f"{value_text(p.before)} {value_text(p.after)}" for p in change.changes)])
    found: list[str] = []
    for item in config:
        entities = _ENTITY.findall(item.path)
        value = item.after if item.after != ABSENT else item.before
        named = any(_mentions(seen, e) for e in entities)
        # An element added or removed whole (a pool, a team) also shows through its settings: a Spot pool's
        # `priority: Spot` as the Spot toleration it adds to every GPU workload.
        words = [v for v in value.values() if isinstance(v, str)] if isinstance(value, dict) else [value_text(value)]
        valued = any(len(w) >= 4 and not w.isdigit() and _mentions(seen.lower(), w.lower()) for w in words)
        if named or valued:
            found.append(f"{item.path} ({_what(item)})")
    if not found and len(config) == 1:
        # Nothing names the resource, but nothing else changed: a name hashed from the config (the GPU smoke test's).
        found.append(f"{config[0].path} ({_what(config[0])}; the only config change)")
    return tuple(found)


def _what(item: PropertyChange) -> str:
    return "added" if item.before == ABSENT else "removed" if item.after == ABSENT else "changed"


def _unpriced_added(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What the head bills without a price that the base did not; nothing when the base's plan predates the list
    (its items cannot be told from new ones)."""
    if "unpriced" not in before:
        return []
    return sorted(set(after.get("unpriced") or []) - set(before["unpriced"]))


def _figures(before: Mapping[str, float], after: Mapping[str, float], keep_equal: bool = False) -> list[FigureChange]:
    names = sorted(set(before) | set(after))
    changes = [FigureChange(n, before.get(n), after.get(n)) for n in names]
    return [c for c in changes if keep_equal or c.before != c.after]


def value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
