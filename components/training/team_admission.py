"""What the API server refuses in team namespaces, whoever creates the pod: the GPU and priority boundaries.

GPUs are handed out by the device plugins, but on a GPU node the NVIDIA container runtime and an image's
`NVIDIA_VISIBLE_DEVICES=all` expose every GPU of the node to a container that asked for none (NVIDIA/k8s-device-plugin
README, "Shared Access to GPUs" and the container toolkit's `accept-nvidia-visible-devices-envvar-when-unprivileged`).
A team pod reaches a GPU node only by tolerating the GPU taint, or by naming the node (`spec.nodeName` skips the
scheduler and its NoSchedule taints). So in every namespace labelled as a team's, a ValidatingAdmissionPolicy
refuses a pod (and, for an early message, a Job or JobSet template) that

- tolerates a taint of the GPU pools (`sku=gpu:NoSchedule`, a pool's own taints, the vendors' `nvidia.com/gpu` and
  `amd.com/gpu` keys, or every taint through `operator: Exists` without a key) or selects GPU nodes by their labels,
  without asking for a GPU (`nvidia.com/gpu` or `amd.com/gpu`);
- names its node;
- sets `NVIDIA_VISIBLE_DEVICES` itself (with the toolkit's default, the variable picks devices the plugin did not
  allocate);
- asks for no GPU and does not select the CPU pool (`pool: cpu`): Kueue tries a team's flavors in order, and a
  GPU-less pod set that outgrew the CPU flavor's quota would be given a GPU flavor and its tolerations;
- uses a `system-*` PriorityClass (these preempt any other pod; Kubernetes accepts them in every namespace since
  1.17, kubernetes/kubernetes plugin/pkg/admission/priority/admission.go). A ResourceQuota per team namespace with
  `pods: 0` in that PriorityClass scope refuses the same pods again (components/training/team_tenancy.py), so the
  boundary
  holds if the policy is removed.

Pods are the boundary: JobSet creates Jobs and the Job controller creates the pods, and Kueue injects its flavor's
node labels and tolerations into the Job's template when it admits the job (pkg/controller/jobframework
RunWithPodSetsInfo, v0.19.2) before any pod exists, so the pods carry what Kueue added and still meet the rule
(a GPU flavor is assigned only to a pod set that asks for GPUs: every GPU flavor meters them). The policy follows
kubernetes v1.36 staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating; its CEL uses only the
standard macros and the Kubernetes list library's `sum()` (pkg/cel/library/lists.go).
"""

from collections.abc import Iterable, Sequence
from typing import Any

from aks_gpu_platform.config.gpu.scheduling import (
    AMD_GPU_RESOURCE,
    AMD_NFD_LABEL,
    AMD_VENDOR_LABEL,
    CPU_POOL_LABEL_VALUE,
    GPU_MODEL_LABEL_KEY,
    GPU_POOL_LABEL_KEY,
    GPU_POOL_LABEL_VALUE,
    GPU_POOL_NAME_LABEL_KEY,
    GPU_RESOURCE,
    GPU_TAINT,
    SPOT_TAINT,
    gpu_pool_taints,
    parse_taint,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig

from ..shared.cel import container_gpus

POLICY_NAME = "team-pod-boundary"
# The PriorityClasses Kubernetes creates for the cluster's own pods (scheduling/v1 SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
GPU_RESOURCES = (GPU_RESOURCE, AMD_GPU_RESOURCE)
# Taint keys that mark GPU nodes whatever their value: the vendors' resource names, as their operators and AKS's
# GPU docs taint GPU pools.
GPU_TAINT_KEYS = GPU_RESOURCES
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
MESSAGE_PREFIX = "team namespaces run pods on GPU nodes only through the queue: "


def gpu_taints(pools: Iterable[GpuPoolConfig]) -> list[dict[str, str]]:
    """Every taint only GPU nodes carry: the GPU taint and each pool's own (Spot's also marks CPU Spot nodes)."""
    taints = dict.fromkeys([GPU_TAINT, *(t for pool in pools for t in gpu_pool_taints(pool) if t != SPOT_TAINT)])
    return [parse_taint(t) for t in taints]


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _tolerates(taint: dict[str, str]) -> str:
    """CEL: toleration `t` tolerates `taint` (k8s.io/api core/v1 toleration.go ToleratesTaint): the effect is empty
    or equal; an empty key with Exists matches every key; Exists ignores the value, Equal (the default) compares it."""
    effect = f"(!has(t.effect) || t.effect == '' || t.effect == {_quote(taint['effect'])})"
    exists = "(has(t.operator) && t.operator == 'Exists')"
    value = f"{exists} || (has(t.value) ? t.value : '') == {_quote(taint.get('value', ''))}"
    key = f"(!has(t.key) || t.key == '') ? {exists} : (t.key == {_quote(taint['key'])} && ({value}))"
    return f"({effect} && ({key}))"


def _tolerates_gpu(pools: Sequence[GpuPoolConfig]) -> str:
    """CEL over pod spec `s`: some toleration tolerates a GPU taint, or any taint keyed by a vendor's resource."""
    vendor_keys = "[" + ", ".join(_quote(k) for k in GPU_TAINT_KEYS) + "]"
    terms = [_tolerates(taint) for taint in gpu_taints(pools)] + [f"(has(t.key) && t.key in {vendor_keys})"]
    return f"(has(s.tolerations) && s.tolerations.exists(t, {' || '.join(terms)}))"


def _selects_gpu_nodes() -> str:
    """CEL over pod spec `s`: a nodeSelector or required node affinity term on the labels only GPU nodes carry."""
    any_value = [GPU_POOL_NAME_LABEL_KEY, GPU_MODEL_LABEL_KEY, AMD_NFD_LABEL[0]]
    exact = {GPU_POOL_LABEL_KEY: GPU_POOL_LABEL_VALUE, AMD_VENDOR_LABEL[0]: AMD_VENDOR_LABEL[1]}
    keys = "[" + ", ".join(_quote(k) for k in any_value) + "]"
    by_selector = " || ".join(
        [f"(k in {keys})", *(f"(k == {_quote(k)} && s.nodeSelector[k] == {_quote(v)})" for k, v in exact.items())]
    )
    by_term = " || ".join(
        [
            f"(e.key in {keys} && e.operator in ['In', 'Exists'])",
            *(
                f"(e.key == {_quote(k)} && e.operator == 'In' && has(e.values) && {_quote(v)} in e.values)"
                for k, v in exact.items()
            ),
        ]
    )
    required = "s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    return (
        f"((has(s.nodeSelector) && s.nodeSelector.exists(k, {by_selector})) || "
        f"(has(s.affinity) && has(s.affinity.nodeAffinity) && has({required}) && "
        f"{required}.nodeSelectorTerms.exists(term, has(term.matchExpressions) && "
        f"term.matchExpressions.exists(e, {by_term}))))"
    )


def _asks_gpus() -> str:
    """CEL over pod spec `s`: a container or init container asks for a GPU of either vendor."""
    one = container_gpus(GPU_RESOURCES)
    init = f"(has(s.initContainers) && s.initContainers.exists(c, {one} > 0))"
    return f"(s.containers.exists(c, {one} > 0) || {init})"


def _containers_set_visible_devices() -> str:
    env = f"has(c.env) && c.env.exists(e, e.name == {_quote(VISIBLE_DEVICES_ENV)})"
    init = f"(has(s.initContainers) && s.initContainers.exists(c, {env}))"
    return f"(s.containers.exists(c, {env}) || {init})"


# The pod specs of the object under admission: a Pod's own, a Job's template, each replicated Job's template.
POD_SPECS = (
    "object.kind == 'Pod' ? [object.spec] : "
    "object.kind == 'Job' ? [object.spec.template.spec] : "
    "object.spec.replicatedJobs.map(r, r.template.spec.template.spec)"
)


def _stays_off_the_host() -> str:
    """CEL over pod spec `s`: none of Pod Security baseline's host checks fails (host namespaces, privileged,
    hostPath volumes, host ports; kubernetes v1.36 staging/src/k8s.io/pod-security-admission/policy
    check_host_namespaces.go, check_privileged.go, check_hostPath_volumes.go, check_hostPorts.go)."""
    container = (
        "(!has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged) && "
        "(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
    )
    host = " && ".join(f"(!has(s.{k}) || !s.{k})" for k in ("hostNetwork", "hostPID", "hostIPC"))
    return (
        f"({host} && (!has(s.volumes) || s.volumes.all(v, !has(v.hostPath))) && s.containers.all(c, {container}) && "
        f"(!has(s.initContainers) || s.initContainers.all(c, {container})))"
    )


def _message(why: str, fix: str) -> str:
    return f"{MESSAGE_PREFIX}{why}; {fix}"


def pod_boundary_policy_spec(pools: Sequence[GpuPoolConfig]) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy spec (API field names): what no pod in a team namespace may do."""
    system = "[" + ", ".join(_quote(p) for p in SYSTEM_PRIORITY_CLASSES) + "]"
    resources = [
        {"api_groups": [""], "api_versions": ["v1"], "resources": ["pods"]},
        {"api_groups": ["batch"], "api_versions": ["v1"], "resources": ["jobs"]},
        {"api_groups": ["jobset.x-k8s.io"], "api_versions": ["v1alpha2"], "resources": ["jobsets"]},
    ]
    return {
        "failure_policy": "Fail",
        # Creation only. Pods are the boundary, and team members cannot update pods
        # (components/training/team_tenancy.py);
        # the controllers that do (the Job controller removing its tracking finalizer) must never be refused for a
        # pod that predates a rule. A Job or JobSet template changed later still makes its pods meet the rule.
        "match_constraints": {
            "resource_rules": [{**rule, "operations": ["CREATE"]} for rule in resources],
        },
        "variables": [{"name": "specs", "expression": POD_SPECS}],
        "validations": [
            {
                "expression": (
                    f"variables.specs.all(s, {_asks_gpus()} || !({_tolerates_gpu(pools)} || {_selects_gpu_nodes()}))"
                ),
                "message": _message(
                    "a pod that tolerates the GPU taint or selects GPU nodes must ask for a GPU "
                    f"({' or '.join(GPU_RESOURCES)}), or on a GPU node it would see GPUs outside the team's quota",
                    "drop the tolerations and GPU node selectors (Kueue adds them when it admits a GPU job)",
                ),
                "reason": "Forbidden",
            },
            {
                # The scheduler binds through pods/binding, which this policy does not match.
                "expression": "variables.specs.all(s, !has(s.nodeName))",
                "message": _message(
                    "spec.nodeName skips the scheduler and the GPU taint", "let the scheduler place the pod"
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"variables.specs.all(s, !{_containers_set_visible_devices()})",
                "message": _message(
                    f"{VISIBLE_DEVICES_ENV} set on a container picks GPUs the device plugin did not allocate",
                    f"ask for GPUs through resources.limits ({GPU_RESOURCE}) and leave the variable to the plugin",
                ),
                "reason": "Forbidden",
            },
            {
                "expression": (
                    f"variables.specs.all(s, !has(s.priorityClassName) || !(s.priorityClassName in {system}))"
                ),
                "message": (
                    f"team namespaces may not use {' or '.join(SYSTEM_PRIORITY_CLASSES)}: they preempt other teams' "
                    "and the cluster's own pods; job priority is Kueue's WorkloadPriorityClass"
                ),
                "reason": "Forbidden",
            },
            {
                # Kueue tries a team's flavors in order: a GPU-less pod set that outgrew the CPU pool's quota would
                # get a GPU flavor's tolerations. Selecting the CPU pool leaves it the CPU flavor alone.
                "expression": (
                    f"variables.specs.all(s, {_asks_gpus()} || (has(s.nodeSelector) && "
                    f"{_quote(GPU_POOL_LABEL_KEY)} in s.nodeSelector && "
                    f"s.nodeSelector[{_quote(GPU_POOL_LABEL_KEY)}] == {_quote(CPU_POOL_LABEL_VALUE)}))"
                ),
                "message": _message(
                    "a pod that asks for no GPU runs on the CPU pool, where the team's CPU quota meters it",
                    f"add nodeSelector {GPU_POOL_LABEL_KEY}: {CPU_POOL_LABEL_VALUE} to the pod template",
                ),
                "reason": "Forbidden",
            },
            {
                # Pod Security enforces this at `baseline`, but a namespace whose NCCL pods add IPC_LOCK enforces
                # `privileged` and leaves it to Azure Policy, whose Gatekeeper webhook fails open (Azure/AKS#4326)
                # and acts only once its assignments have synced. From the node's network a pod reaches IMDS and
                # every node port past the team's egress policy (Cilium does not police host-network pods).
                "expression": f"variables.specs.all(s, {_stays_off_the_host()})",
                "message": _message(
                    "host network, PID or IPC namespaces, privileged containers, hostPath volumes and host ports "
                    "reach the node, the instance metadata service and other teams' pods past every team boundary",
                    "drop them: ranks talk over the pod network and RDMA devices come from the device plugin",
                ),
                "reason": "Forbidden",
            },
        ],
    }


def system_priority_quota_spec() -> dict[str, Any]:
    """A ResourceQuota spec: no pod at all in the system PriorityClasses (Kubernetes' documented way to keep critical
    priorities to kube-system, concepts/policy/resource-quotas.md "Limit Priority Class consumption by default")."""
    return {
        "hard": {"pods": "0"},
        "scope_selector": {
            "match_expressions": [
                {"scope_name": "PriorityClass", "operator": "In", "values": list(SYSTEM_PRIORITY_CLASSES)}
            ]
        },
    }


ANCESTRY_POLICY_NAME = "team-job-ancestry"
KUEUE_PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
_CONTROLLER_UIDS = "{0}.metadata.ownerReferences.filter(r, has(r.controller) && r.controller).map(r, r.uid)"


def job_ancestry_policy_spec(controller_namespaces: Sequence[str]) -> dict[str, Any]:
    """A ValidatingAdmissionPolicy spec: in a team namespace only the platform's controllers give a Job or JobSet a
    controlling owner.

    Kueue leaves a Job or JobSet unsuspended when a controller reference leads to a Kueue-managed job whose workload
    is admitted: it runs as part of that job, on no quota of its own (kubernetes-sigs/kueue v0.19.2,
    pkg/controller/jobframework utils.go WorkloadShouldBeSuspended and reconciler.go FindAncestorJobManagedByKueue /
    shouldSuspendChildJob, where "same-namespace ownership spoofing is out of scope"). A member who has one admitted
    JobSet could otherwise add Jobs of any size under it. The JobSet controller (its child Jobs) and Kueue's
    MultiKueue account (jobs copied to a fleet member) act from `controller_namespaces`; nobody else may add a
    controller reference, at creation or later (a Job's metadata stays mutable). Removing one (the garbage
    collector orphaning a Job) is always allowed.
    """
    accounts = "[" + ", ".join(_quote(f"system:serviceaccount:{n}:") for n in controller_namespaces) + "]"
    resources = [
        {"api_groups": ["batch"], "api_versions": ["v1"], "resources": ["jobs"]},
        {"api_groups": ["jobset.x-k8s.io"], "api_versions": ["v1alpha2"], "resources": ["jobsets"]},
    ]
    return {
        "failure_policy": "Fail",
        "match_constraints": {
            "resource_rules": [{**rule, "operations": ["CREATE", "UPDATE"]} for rule in resources],
        },
        "variables": [
            {
                "name": "controllers",
                "expression": f"has(object.metadata.ownerReferences) ? {_CONTROLLER_UIDS.format('object')} : []",
            },
            {
                "name": "controllersBefore",
                "expression": (
                    "request.operation == 'UPDATE' && has(oldObject.metadata.ownerReferences) ? "
                    f"{_CONTROLLER_UIDS.format('oldObject')} : []"
                ),
            },
            {
                "name": "platformController",
                "expression": f"{accounts}.exists(p, request.userInfo.username.startsWith(p))",
            },
        ],
        "validations": [
            {
                "expression": (
                    "variables.platformController || variables.controllers.all(u, u in variables.controllersBefore)"
                ),
                "message": (
                    "team namespaces run Jobs and JobSets only through the queue: a controller ownerReference "
                    "makes Kueue run the job as part of an admitted one, outside the team's quota; "
                    "submit it as a job of its own with the team's queue label"
                ),
                "reason": "Forbidden",
            }
        ],
    }
