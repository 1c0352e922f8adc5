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
- sets `NVIDIA_VISIBLE_DEVICES` itself on a container that asks for GPUs (with the toolkit's default, the variable
  picks devices the plugin did not allocate), in `env` or through an `envFrom` whose prefix could form the name
  (the kubelet applies envFrom after the plugin's env);
- asks for a GPU in one container and leaves another (init containers too) that asks for none without
  `NVIDIA_VISIBLE_DEVICES=void`: that container gets no device from the plugin, so the runtime reads the variable
  from its image, and every `nvidia/cuda` image sets `all` (see "Which GPUs a container sees" below);
- asks for no GPU and does not select the CPU pool (`pool: cpu`): Kueue tries a team's flavors in order, and a
  GPU-less pod set that outgrew the CPU flavor's quota would be given a GPU flavor and its tolerations;
- widens its kernel surface on nodes other teams share: no seccomp profile, or `Unconfined` (Pod Security
  `restricted`'s rule: the kubelet's default is Unconfined, and AKS offers `seccompDefault` only in preview API
  versions), an AppArmor profile other than RuntimeDefault or Localhost, an unmasked /proc, or a sysctl outside
  the safe set (Pod Security `baseline`'s rules). A team namespace whose NCCL pods add IPC_LOCK enforces Pod
  Security `privileged`, so these are checked here for every team namespace alike;
- uses a `system-*` PriorityClass (these preempt any other pod; Kubernetes accepts them in every namespace since
  1.17, kubernetes/kubernetes plugin/pkg/admission/priority/admission.go). A ResourceQuota per team namespace with
  `pods: 0` in that PriorityClass scope refuses the same pods again (components/training/team_tenancy.py), so the
  boundary
  holds if the policy is removed.

Every container rule covers init and ephemeral containers; ephemeral ones are added by an UPDATE of the
`pods/ephemeralcontainers` subresource (`kubectl debug`), which the policy matches beside the creations.

Pods are the boundary: JobSet creates Jobs and the Job controller creates the pods, and Kueue injects its flavor's
node labels and tolerations into the Job's template when it admits the job (pkg/controller/jobframework
RunWithPodSetsInfo, v0.19.2) before any pod exists, so the pods carry what Kueue added and still meet the rule
(a GPU flavor is assigned only to a pod set that asks for GPUs: every GPU flavor meters them). The policy follows
kubernetes v1.36 staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating; its CEL uses only the
standard macros and the Kubernetes list library's `sum()` (pkg/cel/library/lists.go).

Which GPUs a container sees. The device plugin answers an allocation only for containers that ask for GPUs: with
the `envvar` strategy (the device plugin chart's default, NVIDIA/k8s-device-plugin v0.20.0 internal/plugin/server.go
getAllocateResponse) it sets `NVIDIA_VISIBLE_DEVICES` to the allocated IDs, which the kubelet puts before the pod
spec's own env and the runtime lays over the image's, so the spec's value wins, then the plugin's, then the image's.
The container toolkit reads the final value (NVIDIA/nvidia-container-toolkit v1.20.0 internal/config/image/
cuda_image.go VisibleDevices): `all` is every GPU of the node, also in an unprivileged container, since
`accept-nvidia-visible-devices-envvar-when-unprivileged` defaults to true (api/config/v1/config.go GetDefault);
`void` (or unset, or empty) is none, the runtime then acting as runc. The toolkit's setting lives on the node: AKS
writes it in devicePlugin and aksManaged modes and offers no way to change it, and the GPU Operator's CDI mode
(v26.7.0) leaves it at the default for its `nvidia` RuntimeClass, which any pod may name. So the rule is admission's,
the same in every GPU mode: a container that asks for no GPU, in a pod that runs on a GPU node, states `void`,
which beats its image. `none` would still inject the driver and its control devices; only `void` is accepted.
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
from .pod_security_cel import (
    APPARMOR_ANNOTATIONS,
    SAFE_SYSCTLS,
    apparmor_confined,
    cel_list,
    cel_string,
    every_container,
    proc_masked,
    safe_sysctls,
    seccomp_confined,
    stays_off_the_host,
)

POLICY_NAME = "team-pod-boundary"
# The PriorityClasses Kubernetes creates for the cluster's own pods (scheduling/v1 SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
GPU_RESOURCES = (GPU_RESOURCE, AMD_GPU_RESOURCE)
# Taint keys that mark GPU nodes whatever their value: the vendors' resource names, as their operators and AKS's
# GPU docs taint GPU pools.
GPU_TAINT_KEYS = GPU_RESOURCES
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
# The toolkit's "no device, act as runc" value (internal/config/image/devices.go NewVisibleDevices).
NO_VISIBLE_DEVICES = "void"
MESSAGE_PREFIX = "team namespaces run pods on GPU nodes only through the queue: "
# Other teams' pods run on the same nodes, under the same kernel.
KERNEL_MESSAGE_PREFIX = "team pods share their node's kernel with other teams: "


def gpu_taints(pools: Iterable[GpuPoolConfig]) -> list[dict[str, str]]:
    """Every taint only GPU nodes carry: the GPU taint and each pool's own (Spot's also marks CPU Spot nodes)."""
    taints = dict.fromkeys([GPU_TAINT, *(t for pool in pools for t in gpu_pool_taints(pool) if t != SPOT_TAINT)])
    return [parse_taint(t) for t in taints]


def _tolerates(taint: dict[str, str]) -> str:
    """CEL: toleration `t` tolerates `taint` (k8s.io/api core/v1 toleration.go ToleratesTaint): the effect is empty
    or equal; an empty key with Exists matches every key; Exists ignores the value, Equal (the default) compares it."""
    effect = f"(!has(t.effect) || t.effect == '' || t.effect == {cel_string(taint['effect'])})"
    exists = "(has(t.operator) && t.operator == 'Exists')"
    value = f"{exists} || (has(t.value) ? t.value : '') == {cel_string(taint.get('value', ''))}"
    key = f"(!has(t.key) || t.key == '') ? {exists} : (t.key == {cel_string(taint['key'])} && ({value}))"
    return f"({effect} && ({key}))"


def _tolerates_gpu(pools: Sequence[GpuPoolConfig]) -> str:
    """CEL over pod spec `s`: some toleration tolerates a GPU taint, or any taint keyed by a vendor's resource."""
    vendor_keys = cel_list(GPU_TAINT_KEYS)
    terms = [_tolerates(taint) for taint in gpu_taints(pools)] + [f"(has(t.key) && t.key in {vendor_keys})"]
    return f"(has(s.tolerations) && s.tolerations.exists(t, {' || '.join(terms)}))"


def _selects_gpu_nodes() -> str:
    """CEL over pod spec `s`: a nodeSelector or required node affinity term on the labels only GPU nodes carry."""
    any_value = [GPU_POOL_NAME_LABEL_KEY, GPU_MODEL_LABEL_KEY, AMD_NFD_LABEL[0]]
    exact = {GPU_POOL_LABEL_KEY: GPU_POOL_LABEL_VALUE, AMD_VENDOR_LABEL[0]: AMD_VENDOR_LABEL[1]}
    keys = cel_list(any_value)
    by_selector = " || ".join(
        [
            f"(k in {keys})",
            *(f"(k == {cel_string(k)} && s.nodeSelector[k] == {cel_string(v)})" for k, v in exact.items()),
        ]
    )
    by_term = " || ".join(
        [
            f"(e.key in {keys} && e.operator in ['In', 'Exists'])",
            *(
                f"(e.key == {cel_string(k)} && e.operator == 'In' && has(e.values) && {cel_string(v)} in e.values)"
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


def _sets_visible_devices() -> str:
    """CEL over container `c`: its env names NVIDIA_VISIBLE_DEVICES."""
    return f"(has(c.env) && c.env.exists(e, e.name == {cel_string(VISIBLE_DEVICES_ENV)}))"


def _env_from_may_set_visible_devices() -> str:
    """CEL over container `c`: an envFrom source could hold NVIDIA_VISIBLE_DEVICES. The kubelet names each key of a
    ConfigMap or Secret `prefix + key` (kubernetes v1.36 pkg/kubelet/kubelet_pods.go makeEnvironmentVariables), so
    any prefix that is a prefix of the variable's name, none included, can form it; the object it reads is not
    known at admission."""
    prefix = "(has(f.prefix) ? f.prefix : '')"
    return f"(has(c.envFrom) && c.envFrom.exists(f, {cel_string(VISIBLE_DEVICES_ENV)}.startsWith({prefix})))"


def _gpu_containers_leave_visible_devices() -> str:
    """CEL over pod spec `s`: no container that asks for GPUs sets NVIDIA_VISIBLE_DEVICES (the plugin's value)."""
    return every_container(f"({container_gpus(GPU_RESOURCES)}) == 0 || !{_sets_visible_devices()}")


def _gpu_containers_read_no_env_from_that_may_set_visible_devices() -> str:
    """CEL over pod spec `s`: no container that asks for GPUs takes NVIDIA_VISIBLE_DEVICES from a ConfigMap or
    Secret: the kubelet lists envFrom after the plugin's env, so its value would win. A GPU-less container's own
    `env` entry comes after envFrom and wins over it, so the void rule holds there whatever envFrom holds."""
    return every_container(f"({container_gpus(GPU_RESOURCES)}) == 0 || !{_env_from_may_set_visible_devices()}")


def _gpu_less_containers_see_no_device() -> str:
    """CEL over pod spec `s`: in a pod that asks for a GPU, every container that asks for none sets
    NVIDIA_VISIBLE_DEVICES, and only to `void` (a later duplicate or a valueFrom would win over an earlier value)."""
    void = (
        f"c.env.all(e, e.name != {cel_string(VISIBLE_DEVICES_ENV)} || "
        f"(has(e.value) && e.value == {cel_string(NO_VISIBLE_DEVICES)}))"
    )
    each = f"({container_gpus(GPU_RESOURCES)}) > 0 || ({_sets_visible_devices()} && {void})"
    return f"(!{_asks_gpus()} || {every_container(each)})"


# The pod specs of the object under admission: a Pod's own, a Job's template, each replicated Job's template.
POD_SPECS = (
    "object.kind == 'Pod' ? [object.spec] : "
    "object.kind == 'Job' ? [object.spec.template.spec] : "
    "object.spec.replicatedJobs.map(r, r.template.spec.template.spec)"
)


EPHEMERAL_CONTAINERS_RULE = {"api_groups": [""], "api_versions": ["v1"], "resources": ["pods/ephemeralcontainers"]}


def _message(why: str, fix: str, prefix: str = MESSAGE_PREFIX) -> str:
    return f"{prefix}{why}; {fix}"


def _every_spec(condition: str) -> str:
    """CEL: `condition` (over pod spec `s`) holds for every pod spec of the object (POD_SPECS)."""
    return f"variables.specs.all(s, {condition})"


def _forbidden(expression: str, message: str) -> dict[str, Any]:
    """A validation: what the object must meet, and what the API server answers when it does not."""
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def _gpu_node_rules(pools: Sequence[GpuPoolConfig]) -> list[dict[str, Any]]:
    """A pod reaches a GPU node only through its GPU request: no GPU tolerations or selectors without one, and no
    node named past the scheduler."""
    return [
        _forbidden(
            _every_spec(f"{_asks_gpus()} || !({_tolerates_gpu(pools)} || {_selects_gpu_nodes()})"),
            _message(
                "a pod that tolerates the GPU taint or selects GPU nodes must ask for a GPU "
                f"({' or '.join(GPU_RESOURCES)}), or on a GPU node it would see GPUs outside the team's quota",
                "drop the tolerations and GPU node selectors (Kueue adds them when it admits a GPU job)",
            ),
        ),
        # The scheduler binds through pods/binding, which this policy does not match.
        _forbidden(
            _every_spec("!has(s.nodeName)"),
            _message("spec.nodeName skips the scheduler and the GPU taint", "let the scheduler place the pod"),
        ),
    ]


def _plugin_sets_visible_devices_rule() -> dict[str, Any]:
    """A container that asks for GPUs leaves NVIDIA_VISIBLE_DEVICES to the device plugin."""
    return _forbidden(
        _every_spec(_gpu_containers_leave_visible_devices()),
        _message(
            f"{VISIBLE_DEVICES_ENV} set on a container that asks for GPUs picks GPUs the device plugin did not "
            "allocate",
            f"ask for GPUs through resources.limits ({GPU_RESOURCE}) and leave the variable to the plugin",
        ),
    )


def _system_priority_rule() -> dict[str, Any]:
    """No pod in the system PriorityClasses (system_priority_quota_spec refuses them again)."""
    return _forbidden(
        _every_spec(f"!has(s.priorityClassName) || !(s.priorityClassName in {cel_list(SYSTEM_PRIORITY_CLASSES)})"),
        f"team namespaces may not use {' or '.join(SYSTEM_PRIORITY_CLASSES)}: they preempt other teams' "
        "and the cluster's own pods; job priority is Kueue's WorkloadPriorityClass",
    )


def _cpu_pool_rule() -> dict[str, Any]:
    """A pod that asks for no GPU selects the CPU pool."""
    # Kueue tries a team's flavors in order: a GPU-less pod set that outgrew the CPU pool's quota would get a GPU
    # flavor's tolerations. Selecting the CPU pool leaves it the CPU flavor alone.
    return _forbidden(
        _every_spec(
            f"{_asks_gpus()} || (has(s.nodeSelector) && "
            f"{cel_string(GPU_POOL_LABEL_KEY)} in s.nodeSelector && "
            f"s.nodeSelector[{cel_string(GPU_POOL_LABEL_KEY)}] == {cel_string(CPU_POOL_LABEL_VALUE)})"
        ),
        _message(
            "a pod that asks for no GPU runs on the CPU pool, where the team's CPU quota meters it",
            f"add nodeSelector {GPU_POOL_LABEL_KEY}: {CPU_POOL_LABEL_VALUE} to the pod template",
        ),
    )


def _host_rule() -> dict[str, Any]:
    """Nothing of the node: host namespaces, privileged containers, hostPath volumes, host ports."""
    # Pod Security enforces this at `baseline`, but a namespace whose NCCL pods add IPC_LOCK enforces `privileged` and
    # leaves it to Azure Policy, whose Gatekeeper webhook fails open (Azure/AKS#4326) and acts only once its
    # assignments have synced. From the node's network a pod reaches IMDS and every node port past the team's egress
    # policy (Cilium does not police host-network pods).
    return _forbidden(
        _every_spec(stays_off_the_host()),
        _message(
            "host network, PID or IPC namespaces, privileged containers, hostPath volumes and host ports "
            "reach the node, the instance metadata service and other teams' pods past every team boundary",
            "drop them: ranks talk over the pod network and RDMA devices come from the device plugin",
        ),
    )


def _gpu_less_containers_rule() -> dict[str, Any]:
    """Beside a container that asks for GPUs, every other one states NVIDIA_VISIBLE_DEVICES=void."""
    return _forbidden(
        _every_spec(_gpu_less_containers_see_no_device()),
        _message(
            "a container that asks for no GPU, beside one that does, sees every GPU of the node when its "
            f"image sets {VISIBLE_DEVICES_ENV}=all (every nvidia/cuda image does)",
            f"set env {VISIBLE_DEVICES_ENV}={NO_VISIBLE_DEVICES} on each such container, init containers "
            "too, or give it a GPU of its own",
        ),
    )


def _kernel_rules() -> list[dict[str, Any]]:
    """Pod Security's kernel-surface checks: seccomp, AppArmor, /proc and sysctls."""
    return [
        _forbidden(
            _every_spec(seccomp_confined()),
            _message(
                "a pod without a seccomp profile runs Unconfined (the nodes set no default) and reaches every "
                "system call of a kernel other teams share",
                "set securityContext.seccompProfile.type: RuntimeDefault on the pod (or Localhost)",
                KERNEL_MESSAGE_PREFIX,
            ),
        ),
        _forbidden(
            f"{_every_spec(apparmor_confined())} && ({APPARMOR_ANNOTATIONS})",
            _message(
                "an Unconfined AppArmor profile lifts the runtime's limits on /proc, /sys and mounts",
                "leave appArmorProfile unset or RuntimeDefault",
                KERNEL_MESSAGE_PREFIX,
            ),
        ),
        _forbidden(
            _every_spec(proc_masked()),
            _message(
                "procMount Unmasked shows the node's /proc paths the runtime masks",
                "leave procMount unset",
                KERNEL_MESSAGE_PREFIX,
            ),
        ),
        _forbidden(
            _every_spec(safe_sysctls()),
            _message(
                "a sysctl outside Kubernetes' safe set changes the kernel for every pod of the node",
                f"use only {', '.join(SAFE_SYSCTLS)}",
                KERNEL_MESSAGE_PREFIX,
            ),
        ),
    ]


def _env_from_rule() -> dict[str, Any]:
    """No envFrom on a container that asks for GPUs could set NVIDIA_VISIBLE_DEVICES."""
    return _forbidden(
        _every_spec(_gpu_containers_read_no_env_from_that_may_set_visible_devices()),
        _message(
            f"envFrom on a container that asks for GPUs can set {VISIBLE_DEVICES_ENV} (the kubelet applies it "
            "after the device plugin's value) and pick GPUs the plugin did not allocate",
            f"give each envFrom a prefix that cannot begin {VISIBLE_DEVICES_ENV} (e.g. APP_), or use env",
        ),
    )


def pod_boundary_policy_spec(pools: Sequence[GpuPoolConfig]) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy spec (API field names): what no pod in a team namespace may do."""
    resources = [
        {"api_groups": [""], "api_versions": ["v1"], "resources": ["pods"]},
        {"api_groups": ["batch"], "api_versions": ["v1"], "resources": ["jobs"]},
        {"api_groups": ["jobset.x-k8s.io"], "api_versions": ["v1alpha2"], "resources": ["jobsets"]},
    ]
    return {
        "failure_policy": "Fail",
        # Creation, and the one update that adds a container. Pods are the boundary, and team members cannot update
        # pods (components/training/team_tenancy.py); the controllers that do (the Job controller removing its
        # tracking finalizer) must never be refused for a pod that predates a rule. A Job or JobSet template changed
        # later still makes its pods meet the rule. Ephemeral containers arrive only through the
        # `pods/ephemeralcontainers` subresource (an UPDATE whose object is the whole Pod), which a `pods` rule does
        # not match (apiserver pkg/admission/plugin/webhook/predicates/rules/rules.go resource: "pods/*" or the
        # subresource by name); the pod is checked again with them.
        "match_constraints": {
            "resource_rules": [
                *({**rule, "operations": ["CREATE"]} for rule in resources),
                {**EPHEMERAL_CONTAINERS_RULE, "operations": ["UPDATE"]},
            ],
        },
        "variables": [{"name": "specs", "expression": POD_SPECS}],
        "validations": [
            *_gpu_node_rules(pools),
            _plugin_sets_visible_devices_rule(),
            _system_priority_rule(),
            _cpu_pool_rule(),
            _host_rule(),
            _gpu_less_containers_rule(),
            *_kernel_rules(),
            _env_from_rule(),
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
    resources = [
        {"api_groups": ["batch"], "api_versions": ["v1"], "resources": ["jobs"]},
        {"api_groups": ["jobset.x-k8s.io"], "api_versions": ["v1alpha2"], "resources": ["jobsets"]},
    ]
    return {
        "failure_policy": "Fail",
        "match_constraints": {
            "resource_rules": [{**rule, "operations": ["CREATE", "UPDATE"]} for rule in resources],
        },
        "variables": _ancestry_variables(controller_namespaces),
        "validations": [
            _forbidden(
                "variables.platformController || variables.controllers.all(u, u in variables.controllersBefore)",
                "team namespaces run Jobs and JobSets only through the queue: a controller ownerReference "
                "makes Kueue run the job as part of an admitted one, outside the team's quota; "
                "submit it as a job of its own with the team's queue label",
            )
        ],
    }


def _ancestry_variables(controller_namespaces: Sequence[str]) -> list[dict[str, str]]:
    """The controllers' UIDs the object names now and named before, and whether a platform controller asks."""
    accounts = cel_list([f"system:serviceaccount:{n}:" for n in controller_namespaces])
    return [
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
    ]
