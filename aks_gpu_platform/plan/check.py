"""`aks-gpu-platform check`: will the cluster of this stack take a Job, JobSet, Pod or Deployment, offline.

    aks-gpu-platform check --stack dev jobset.yaml [more.yaml ...]

Evaluates the stack as `plan` does (the same evaluation and recording cache) and says, for each Job, JobSet, Pod and
Deployment in the manifests, one line per check, PASS or FAIL with what to change:

- admission: the ValidatingAdmissionPolicies the stack binds to the object's namespace (team-pod-boundary, the
  team's identity policy, job ancestry, fleet limits), on the object and on the pods it makes;
- pod-security: the namespace's `pod-security.kubernetes.io/enforce` level (pod_security.py);
- queue: the `kueue.x-k8s.io/queue-name` label names a LocalQueue of the namespace, and the job's total requests
  fit the ClusterQueue's nominal quota of a flavor Kueue can assign (kueue v0.19.2 flavor assignment: a pod set
  takes the first flavor, in the resource group's order, whose node labels its node selector admits, whose
  taints it or the flavor tolerates, and whose nominal quota covers it; borrowing from the cohort not counted);
- node-fit: each pod, with what Kueue injects from its flavor, fits an empty node of a pool it selects and
  tolerates: requests within the VM size's allocatable (capacity less AKS's kube-reserved and eviction threshold,
  MicrosoftDocs azure-aks-docs articles/aks/node-resource-reservations.md, AKS 1.29 and later), and the job's pods
  within the pool's maximum node count;
- scale-from-zero: such a pool has nodes, or the cluster autoscaler can add one: the node it imagines for a pool at
  zero (kubernetes/autoscaler cluster-autoscaler-1.36.1 cloudprovider/azure azure_template.go: the pool's
  nodeLabels and nodeTaints, the size's capacity and the scale set's node-template resource tags) fits the pod.

Exit 0 when every check passes, 1 on any FAIL, 2 on bad input (an unreadable manifest, an unknown stack).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.config.gpu.scheduling import parse_taint, selects_node, tolerates_taints
from aks_gpu_platform.testing import Recording

from . import pod_security
from .cluster_view import DEFAULT_MAX_PODS, Pool, Stack, stack_view
from .manifests import (
    CHECKED_KINDS,
    QUEUE_LABEL,
    ManifestError,
    PodSet,
    Workload,
    parse_quantity,
    pod_requests,
    read_manifests,
    show_amount,
)
from .offline import find_project, run_stack

MANAGED_NAMESPACE_LABEL = "kueue.x-k8s.io/managed-namespace"
# The kinds the platform's Kueue manages (components/training/queues.py FRAMEWORKS): batch/job, jobset.
QUEUED_KINDS = ("Job", "JobSet")
CHECKS = ("admission", "pod-security", "queue", "node-fit", "scale-from-zero")


# ---------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Verdict:
    workload: str
    check: str
    passed: bool
    reason: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} {self.workload} {self.check}: {self.reason}"


def _pod(pod_set: PodSet, spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": dict(pod_set.metadata), "spec": dict(spec or pod_set.spec)}


def check_admission(job: Workload, stack: Stack, injected: Sequence[Mapping[str, Any]]) -> Verdict:
    labels = stack.namespaces.get(job.namespace)
    if labels is None:
        return Verdict(job.title, "admission", False, _unknown_namespace(job.namespace, stack))
    refusals: list[str] = []
    candidates: list[tuple[str, Mapping[str, Any]]] = [("", job.obj)] if job.kind != "Deployment" else []
    candidates += [
        (f"{pod_set.name}: ", _pod(pod_set, spec)) for pod_set, spec in zip(job.pod_sets, injected, strict=True)
    ]
    if job.kind == "Pod":
        candidates = candidates[:1]
    checked: list[str] = []
    seen: set[tuple[str, str]] = set()  # a Job refused for a rule has pods refused for it too: say it once
    for policy in stack.policies:
        for prefix, obj in candidates:
            if not policy.applies(obj, labels):
                continue
            checked.append(policy.name)
            refusal = policy.refusal(obj)
            if refusal is not None and (policy.name, refusal) not in seen:
                seen.add((policy.name, refusal))
                refusals.append(f"{prefix}{policy.name}: {refusal}")
    if refusals:
        return Verdict(job.title, "admission", False, "; ".join(refusals))
    names = ", ".join(sorted(set(checked))) or "none bound to this namespace"
    return Verdict(job.title, "admission", True, f"admitted by {names}")


def _unknown_namespace(namespace: str, stack: Stack) -> str:
    teams = sorted(n for n, labels in stack.namespaces.items() if any(k.endswith("/team") for k in labels))
    return f"namespace {namespace} is not one this stack creates" + (
        f"; team namespaces: {', '.join(teams)}" if teams else ""
    )


def check_pod_security(job: Workload, stack: Stack) -> Verdict:
    labels = stack.namespaces.get(job.namespace)
    if labels is None:
        return Verdict(job.title, "pod-security", False, _unknown_namespace(job.namespace, stack))
    level = pod_security.enforced_level(labels)
    found = [
        f"{pod_set.name}: {why}"
        for pod_set in job.pod_sets
        for why in pod_security.violations(level, pod_set.metadata, pod_set.spec)
    ]
    if found:
        return Verdict(job.title, "pod-security", False, f"namespace enforces {level}: " + "; ".join(found))
    return Verdict(job.title, "pod-security", True, f"meets {level}, the level {job.namespace} enforces")


def _flavor_admits(flavor: Mapping[str, Any], spec: Mapping[str, Any]) -> str | None:
    """Why Kueue would not assign this flavor to the pod set (None: it may): the pod's node selector and required
    affinity, on the keys of the flavor's node labels, and the flavor's taints against the pod's and the flavor's
    tolerations (kueue pkg/scheduler/flavorassigner flavorassigner.go checkFlavorForPodSets)."""
    flavor_spec = flavor.get("spec") or {}
    node_labels: Mapping[str, str] = flavor_spec.get("nodeLabels") or {}
    selector = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k in node_labels}
    if any(node_labels[k] != v for k, v in selector.items()):
        return "its node labels do not match the pod's nodeSelector"
    if not selects_node({"affinity": spec.get("affinity") or {}}, {**node_labels, **_wildcard(spec, node_labels)}):
        return "its node labels do not match the pod's node affinity"
    taints = [f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in flavor_spec.get("nodeTaints") or []]
    tolerating = {"tolerations": [*(spec.get("tolerations") or []), *(flavor_spec.get("tolerations") or [])]}
    if not tolerates_taints(tolerating, taints):
        return "the pod does not tolerate its taints"
    return None


def _wildcard(spec: Mapping[str, Any], node_labels: Mapping[str, str]) -> dict[str, str]:
    """Affinity on keys the flavor does not set is left to the scheduler: give those keys the values asked for."""
    terms = (
        (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"))
        or {}
    ).get("nodeSelectorTerms") or []
    found: dict[str, str] = {}
    for term in terms:
        for expression in term.get("matchExpressions") or []:
            if expression["key"] not in node_labels and expression.get("operator") == "In":
                found[expression["key"]] = expression["values"][0]
    return found


def _inject(spec: Mapping[str, Any], flavor: Mapping[str, Any] | None) -> dict[str, Any]:
    """The pod spec after Kueue admitted the job on `flavor` (jobframework RunWithPodSetsInfo: node labels merged
    into nodeSelector, the flavor's tolerations appended)."""
    if flavor is None:
        return dict(spec)
    flavor_spec = flavor.get("spec") or {}
    return {
        **spec,
        "nodeSelector": {**(spec.get("nodeSelector") or {}), **(flavor_spec.get("nodeLabels") or {})},
        "tolerations": [*(spec.get("tolerations") or []), *(flavor_spec.get("tolerations") or [])],
    }


def _quota(cluster_queue: Mapping[str, Any]) -> tuple[list[tuple[str, dict[str, Fraction]]], set[str]]:
    """The flavors of the ClusterQueue in order, each with its nominal quota, and every covered resource."""
    flavors: list[tuple[str, dict[str, Fraction]]] = []
    covered: set[str] = set()
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        covered.update(group.get("coveredResources") or [])
        for flavor in group.get("flavors") or []:
            nominal = {str(r["name"]): parse_quantity(r.get("nominalQuota", 0)) for r in flavor.get("resources") or []}
            flavors.append((str(flavor["name"]), nominal))
    return flavors, covered


@dataclass
class QueueOutcome:
    verdict: Verdict
    specs: list[dict[str, Any]]
    """Each pod set's spec as its pods would run: with the assigned flavor's node labels and tolerations."""
    queued: bool


def _cluster_queue(job: Workload, stack: Stack, as_written: list[dict[str, Any]]) -> str | QueueOutcome:
    """The ClusterQueue the job's queue label leads to, or the outcome when it leads to none."""
    labels = stack.namespaces.get(job.namespace) or {}
    local_queues = sorted(q for (ns, q) in stack.local_queues if ns == job.namespace)
    queue = job.queue
    if job.kind not in QUEUED_KINDS:
        why = "not queued: Kueue meters only Jobs and JobSets on this platform"
        return QueueOutcome(Verdict(job.title, "queue", True, why), as_written, False)
    if queue is None:
        if MANAGED_NAMESPACE_LABEL in labels:
            add = f"add `{QUEUE_LABEL}: {local_queues[0]}` to metadata.labels" if local_queues else "name a LocalQueue"
            why = f"no {QUEUE_LABEL} label: Kueue keeps the {job.kind} suspended in {job.namespace}; {add}"
            return QueueOutcome(Verdict(job.title, "queue", False, why), as_written, False)
        return QueueOutcome(Verdict(job.title, "queue", True, "not queued: no team queue here"), as_written, False)
    cluster_queue_name = stack.local_queues.get((job.namespace, queue))
    if cluster_queue_name is None:
        named = f" (its queues: {', '.join(local_queues)})" if local_queues else ""
        why = f"{QUEUE_LABEL}: {queue} names no LocalQueue of namespace {job.namespace}{named}"
        return QueueOutcome(Verdict(job.title, "queue", False, why), as_written, True)
    return cluster_queue_name


@dataclass
class _FlavorChoice:
    chosen: str | None
    """The first flavor whose quota, less what the job's earlier pod sets took, covers the whole pod set."""
    eligible: str | None
    """The first flavor that would take one pod: where the pods would run were the job admitted."""
    misses: list[str]
    """Why each flavor before the chosen one was passed over."""


def _choose_flavor(
    spec: Mapping[str, Any],
    per_pod: Mapping[str, Fraction],
    total: Mapping[str, Fraction],
    quota: tuple[list[tuple[str, dict[str, Fraction]]], set[str]],
    used: Mapping[str, Mapping[str, Fraction]],
    stack: Stack,
) -> _FlavorChoice:
    """Kueue's flavor assignment for one pod set: the flavors in order, each admitting the pod and with room."""
    flavors, covered = quota
    choice = _FlavorChoice(None, None, [])
    for flavor_name, nominal in flavors:
        refused = _flavor_admits(stack.flavors.get(flavor_name) or {}, spec)
        if refused is not None:
            choice.misses.append(f"{flavor_name}: {refused}")
            continue
        if all(v <= nominal.get(k, Fraction(0)) for k, v in per_pod.items() if k in covered):
            choice.eligible = choice.eligible or flavor_name  # one pod fits: the flavor Kueue would use with room
        taken = used.get(flavor_name, {})
        short = [
            f"{show_amount(k, v)} {k} (quota {show_amount(k, nominal.get(k, Fraction(0)))}"
            + (f", {show_amount(k, taken[k])} taken by other pod sets" if taken.get(k) else "")
            + ")"
            for k, v in sorted(total.items())
            if k in covered and v + taken.get(k, Fraction(0)) > nominal.get(k, Fraction(0))
        ]
        if short:
            choice.misses.append(f"{flavor_name}: needs {', '.join(short)}")
            continue
        choice.chosen = flavor_name
        break
    return choice


def check_queue(job: Workload, stack: Stack) -> QueueOutcome:
    as_written = [dict(p.spec) for p in job.pod_sets]
    cluster_queue_name = _cluster_queue(job, stack, as_written)
    if isinstance(cluster_queue_name, QueueOutcome):
        return cluster_queue_name
    quota = _quota(stack.cluster_queues.get(cluster_queue_name) or {})
    used: dict[str, dict[str, Fraction]] = {}
    specs: list[dict[str, Any]] = []
    assigned: list[str] = []
    over: list[str] = []
    for pod_set in job.pod_sets:
        per_pod = pod_requests(pod_set.spec, job.title)
        # quotaCheckStrategy IgnoreUndeclared (components/training/queues.py): what no group covers is not metered.
        total = {k: v * pod_set.count for k, v in per_pod.items() if v}
        choice = _choose_flavor(pod_set.spec, per_pod, total, quota, used, stack)
        if choice.chosen is None:
            pods = f"{pod_set.name} ({pod_set.count} pod{'s' if pod_set.count != 1 else ''})"
            asked = ", ".join(f"{show_amount(k, v)} {k}" for k, v in sorted(total.items()))
            over.append(
                f"{pods} ask for {asked} in total, more than any flavor of ClusterQueue {cluster_queue_name} gives "
                f"({'; '.join(choice.misses)})"
            )
        else:
            for k, v in total.items():
                used.setdefault(choice.chosen, {})[k] = used.get(choice.chosen, {}).get(k, Fraction(0)) + v
        # Were it admitted: the nodes checks look at the pods on the flavor Kueue would pick with room to spare.
        flavor = choice.chosen or choice.eligible
        specs.append(_inject(pod_set.spec, stack.flavors.get(flavor) if flavor else None))
        assigned.append(f"{pod_set.name} on flavor {choice.chosen}")
    if over:
        why = "; ".join(over) + ": Kueue keeps it pending forever; ask for less per pod, or for fewer pods"
        return QueueOutcome(Verdict(job.title, "queue", False, why), specs, True)
    why = f"LocalQueue {job.queue} -> ClusterQueue {cluster_queue_name}, within nominal quota: {', '.join(assigned)}"
    return QueueOutcome(Verdict(job.title, "queue", True, why), specs, True)


def _why_not(spec: Mapping[str, Any], requests: Mapping[str, Fraction], pool: Pool) -> list[str]:
    reasons: list[str] = []
    if not selects_node(spec, pool.labels):
        reasons.append("its node labels do not match the pod's nodeSelector/affinity")
    untolerated = [t for t in pool.taints if not tolerates_taints(spec, [t])]
    if untolerated:
        reasons.append(f"taint {', '.join(untolerated)} not tolerated")
    reasons += [
        f"{show_amount(k, v)} {k} > {show_amount(k, pool.allocatable.get(k, Fraction(0)))} allocatable"
        for k, v in sorted(requests.items())
        if v > pool.allocatable.get(k, Fraction(0))
    ]
    return reasons


def _pods_per_node(requests: Mapping[str, Fraction], allocatable: Mapping[str, Fraction]) -> int:
    per = [math.floor(allocatable.get(k, Fraction(0)) / v) for k, v in requests.items() if v > 0]
    return min([*per, int(allocatable.get("pods", DEFAULT_MAX_PODS))])


def fitting_pools(spec: Mapping[str, Any], requests: Mapping[str, Fraction], stack: Stack) -> list[Pool]:
    return [p for p in stack.pools if not _why_not(spec, requests, p)]


def _toleration_hint(job: Workload, spec: Mapping[str, Any], requests: Mapping[str, Fraction], stack: Stack) -> str:
    """What to add when a pool would fit but for its taints."""
    for pool in stack.pools:
        if pool.system or not selects_node(spec, pool.labels):
            continue
        if any(v > pool.allocatable.get(k, Fraction(0)) for k, v in requests.items()):
            continue
        missing = [parse_taint(t) for t in pool.taints if not tolerates_taints(spec, [t])]
        tolerations = ", ".join(
            f"{{key: {t['key']}, operator: Equal, value: {t['value']}, effect: {t['effect']}}}" for t in missing
        )
        queued = (
            " (a Job or JobSet gets it from Kueue when it names its team's LocalQueue)"
            if job.kind
            in (
                "Job",
                "JobSet",
            )
            else ""
        )
        return f"; to run on pool {pool.config_name}, add tolerations [{tolerations}]{queued}"
    return ""


def check_node_fit(job: Workload, stack: Stack, specs: Sequence[Mapping[str, Any]]) -> Verdict:
    found: list[str] = []
    failures: list[str] = []
    for pod_set, spec in zip(job.pod_sets, specs, strict=True):
        requests = pod_requests(spec, job.title)
        pools = fitting_pools(spec, requests, stack)
        if not pools:
            why = "; ".join(
                f"{p.config_name} ({p.vm_size}): {', '.join(_why_not(spec, requests, p))}" for p in stack.pools
            )
            failures.append(f"{pod_set.name} fit no pool: {why}{_toleration_hint(job, spec, requests, stack)}")
            continue
        roomy = [p for p in pools if math.ceil(pod_set.count / _pods_per_node(requests, p.allocatable)) <= p.max_count]
        if not roomy:
            pool = pools[0]
            per_node = _pods_per_node(requests, pool.allocatable)
            failures.append(
                f"{pod_set.name} need {math.ceil(pod_set.count / per_node)} nodes of pool {pool.config_name} "
                f"({per_node} pod{'s' if per_node != 1 else ''} a node), more than its {pool.max_count} at most"
            )
            continue
        found.append(f"{pod_set.name} on {', '.join(f'{p.config_name} ({p.vm_size})' for p in roomy)}")
    if failures:
        return Verdict(job.title, "node-fit", False, "; ".join(failures))
    return Verdict(job.title, "node-fit", True, "; ".join(found))


def check_scale_from_zero(job: Workload, stack: Stack, specs: Sequence[Mapping[str, Any]]) -> Verdict:
    found: list[str] = []
    failures: list[str] = []
    for pod_set, spec in zip(job.pod_sets, specs, strict=True):
        requests = pod_requests(spec, job.title)
        pools = fitting_pools(spec, requests, stack)
        if not pools:
            failures.append(f"{pod_set.name}: no pool to grow (see node-fit)")
            continue
        warm = [p for p in pools if p.always_has_nodes]
        if warm:
            found.append(f"{pod_set.name}: pool {warm[0].config_name} keeps at least {warm[0].min_count} node(s)")
            continue
        growable: list[Pool] = []
        why: list[str] = []
        for pool in pools:
            if not pool.autoscaled or pool.max_count == 0:
                why.append(f"{pool.config_name} is at 0 nodes and not autoscaled")
                continue
            short = [
                f"{show_amount(k, v)} {k} > the template's {show_amount(k, pool.template_capacity.get(k, Fraction(0)))}"
                for k, v in sorted(requests.items())
                if v > pool.template_capacity.get(k, Fraction(0))
            ]
            if not selects_node(spec, pool.template_labels):
                short.append(
                    "the pod selects a node label the autoscaler's template of the pool lacks (select the pool's "
                    "nodeLabels, not the labels AKS adds at boot)"
                )
            if short:
                why.append(f"{pool.config_name}: {', '.join(short)}")
            else:
                growable.append(pool)
        if growable:
            found.append(
                f"{pod_set.name}: the autoscaler can add a node to {', '.join(p.config_name for p in growable)}"
            )
        else:
            failures.append(f"{pod_set.name} stay pending at zero nodes: {'; '.join(why)}")
    if failures:
        return Verdict(job.title, "scale-from-zero", False, "; ".join(failures))
    return Verdict(job.title, "scale-from-zero", True, "; ".join(found))


def check_workload(job: Workload, stack: Stack) -> list[Verdict]:
    queue = check_queue(job, stack)
    return [
        check_admission(job, stack, queue.specs),
        check_pod_security(job, stack),
        queue.verdict,
        check_node_fit(job, stack, queue.specs),
        check_scale_from_zero(job, stack, queue.specs),
    ]


def check_manifests(workloads: Iterable[Workload], recording: Recording) -> list[Verdict]:
    stack = stack_view(recording)
    return [verdict for job in workloads for verdict in check_workload(job, stack)]


def _lines(verdicts: Iterable[Verdict]) -> Iterator[str]:
    for verdict in verdicts:
        yield verdict.line()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="aks-gpu-platform check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", default="dev", help="the stack whose cluster would run the manifests")
    parser.add_argument("--project-dir", type=Path, default=None, help="folder of Pulumi.yaml (default: nearest)")
    parser.add_argument("manifests", nargs="+", type=Path, metavar="MANIFEST.yaml")
    options = parser.parse_args(argv)
    try:
        workloads = read_manifests(options.manifests)
        if not workloads:
            raise ManifestError(f"no {', '.join(CHECKED_KINDS)} in {', '.join(map(str, options.manifests))}")
        project = (options.project_dir or find_project()).resolve()
        if not (project / f"Pulumi.{options.stack}.yaml").is_file():
            raise ManifestError(f"no stack file Pulumi.{options.stack}.yaml in {project}")
        recording = run_stack(options.stack, project_dir=project)
        verdicts = check_manifests(workloads, recording)
    except (ManifestError, FileNotFoundError, ConfigError) as error:
        sys.stderr.write(f"aks-gpu-platform check: {error}\n")
        return 2
    for line in _lines(verdicts):
        sys.stdout.write(line + "\n")
    failed = sum(not v.passed for v in verdicts)
    sys.stdout.write(f"{len(verdicts) - failed} passed, {failed} failed\n")
    return 1 if failed else 0
