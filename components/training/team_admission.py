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


def _every_container(condition: str) -> str:
    """CEL over pod spec `s`: `condition` (over container `c`) holds for every container, init and ephemeral one (as
    pod-security-admission policy/visitor.go visitContainers walks them)."""
    return (
        f"(s.containers.all(c, {condition}) && (!has(s.initContainers) || s.initContainers.all(c, {condition})) && "
        f"(!has(s.ephemeralContainers) || s.ephemeralContainers.all(c, {condition})))"
    )


def _sets_visible_devices() -> str:
    """CEL over container `c`: its env names NVIDIA_VISIBLE_DEVICES."""
    return f"(has(c.env) && c.env.exists(e, e.name == {_quote(VISIBLE_DEVICES_ENV)}))"


def _env_from_may_set_visible_devices() -> str:
    """CEL over container `c`: an envFrom source could hold NVIDIA_VISIBLE_DEVICES. The kubelet names each key of a
    ConfigMap or Secret `prefix + key` (kubernetes v1.36 pkg/kubelet/kubelet_pods.go makeEnvironmentVariables), so
    any prefix that is a prefix of the variable's name, none included, can form it; the object it reads is not
    known at admission."""
    prefix = "(has(f.prefix) ? f.prefix : '')"
    return f"(has(c.envFrom) && c.envFrom.exists(f, {_quote(VISIBLE_DEVICES_ENV)}.startsWith({prefix})))"


def _gpu_containers_leave_visible_devices() -> str:
    """CEL over pod spec `s`: no container that asks for GPUs sets NVIDIA_VISIBLE_DEVICES (the plugin's value)."""
    return _every_container(f"({container_gpus(GPU_RESOURCES)}) == 0 || !{_sets_visible_devices()}")


def _gpu_containers_read_no_env_from_that_may_set_visible_devices() -> str:
    """CEL over pod spec `s`: no container that asks for GPUs takes NVIDIA_VISIBLE_DEVICES from a ConfigMap or
    Secret: the kubelet lists envFrom after the plugin's env, so its value would win. A GPU-less container's own
    `env` entry comes after envFrom and wins over it, so the void rule holds there whatever envFrom holds."""
    return _every_container(f"({container_gpus(GPU_RESOURCES)}) == 0 || !{_env_from_may_set_visible_devices()}")


def _gpu_less_containers_see_no_device() -> str:
    """CEL over pod spec `s`: in a pod that asks for a GPU, every container that asks for none sets
    NVIDIA_VISIBLE_DEVICES, and only to `void` (a later duplicate or a valueFrom would win over an earlier value)."""
    void = (
        f"c.env.all(e, e.name != {_quote(VISIBLE_DEVICES_ENV)} || "
        f"(has(e.value) && e.value == {_quote(NO_VISIBLE_DEVICES)}))"
    )
    each = f"({container_gpus(GPU_RESOURCES)}) > 0 || ({_sets_visible_devices()} && {void})"
    return f"(!{_asks_gpus()} || {_every_container(each)})"


# pod-security-admission v0.36.2 policy/check_seccompProfile_baseline.go validSeccomp.
VALID_SECCOMP = ("RuntimeDefault", "Localhost")
# policy/check_appArmorProfile.go allowedProfileType, and for the beta annotations allowedAnnotationValue.
VALID_APPARMOR = ("RuntimeDefault", "Localhost")
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
# policy/check_sysctls.go sysctlsAllowedV1Dot32 (the set from Kubernetes 1.32 on; AKS creates no older minor here).
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
)


def _in(values: Sequence[str]) -> str:
    return "[" + ", ".join(_quote(v) for v in values) + "]"


def _seccomp_confined() -> str:
    """CEL over pod spec `s`: Pod Security restricted's seccomp rule (policy/check_seccompProfile_restricted.go
    seccompProfileRestricted_1_19): the pod's profile, if set, is RuntimeDefault or Localhost, and so is each
    container's own, or, where a container sets none, the pod's. Windows pods are not exempted: no pool runs them."""
    pod_set = "(has(s.securityContext) && has(s.securityContext.seccompProfile))"
    pod_valid = f"s.securityContext.seccompProfile.type in {_in(VALID_SECCOMP)}"
    own = "(has(c.securityContext) && has(c.securityContext.seccompProfile))"
    container = f"({own} ? c.securityContext.seccompProfile.type in {_in(VALID_SECCOMP)} : ({pod_set} && {pod_valid}))"
    return f"((!{pod_set} || {pod_valid}) && {_every_container(container)})"


def _apparmor_confined() -> str:
    """CEL over pod spec `s` and the object: Pod Security baseline's AppArmor rule (policy/check_appArmorProfile.go):
    the pod's and each container's profile type, where set, is RuntimeDefault or Localhost; on a Pod, the beta
    annotations are empty, `runtime/default` or `localhost/...`."""
    pod = (
        "(!has(s.securityContext) || !has(s.securityContext.appArmorProfile) || "
        f"s.securityContext.appArmorProfile.type in {_in(VALID_APPARMOR)})"
    )
    container = (
        "(!has(c.securityContext) || !has(c.securityContext.appArmorProfile) || "
        f"c.securityContext.appArmorProfile.type in {_in(VALID_APPARMOR)})"
    )
    return f"({pod} && {_every_container(container)})"


# On a Pod only: Jobs' and JobSets' pods are checked when the Job controller creates them.
APPARMOR_ANNOTATIONS = (
    "object.kind != 'Pod' || !has(object.metadata.annotations) || object.metadata.annotations.all(k, "
    f"!k.startsWith({_quote(APPARMOR_ANNOTATION_PREFIX)}) || object.metadata.annotations[k] in ['', 'runtime/default'] "
    "|| object.metadata.annotations[k].startsWith('localhost/'))"
)


def _proc_masked() -> str:
    """CEL over pod spec `s`: Pod Security baseline's procMount rule from 1.35 (policy/check_procMount_baseline.go
    procMount1_35baseline): every container's procMount is Default, unless the pod runs in a user namespace."""
    container = (
        "(!has(c.securityContext) || !has(c.securityContext.procMount) || c.securityContext.procMount == 'Default')"
    )
    return f"((has(s.hostUsers) && !s.hostUsers) || {_every_container(container)})"


def _safe_sysctls() -> str:
    """CEL over pod spec `s`: Pod Security baseline's sysctls rule (policy/check_sysctls.go): only the safe set."""
    return (
        "(!has(s.securityContext) || !has(s.securityContext.sysctls) || "
        f"s.securityContext.sysctls.all(x, x.name in {_in(SAFE_SYSCTLS)}))"
    )


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
    return f"({host} && (!has(s.volumes) || s.volumes.all(v, !has(v.hostPath))) && {_every_container(container)})"


EPHEMERAL_CONTAINERS_RULE = {"api_groups": [""], "api_versions": ["v1"], "resources": ["pods/ephemeralcontainers"]}


def _message(why: str, fix: str, prefix: str = MESSAGE_PREFIX) -> str:
    return f"{prefix}{why}; {fix}"


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
                "expression": f"variables.specs.all(s, {_gpu_containers_leave_visible_devices()})",
                "message": _message(
                    f"{VISIBLE_DEVICES_ENV} set on a container that asks for GPUs picks GPUs the device plugin did not "
                    "allocate",
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
            {
                "expression": f"variables.specs.all(s, {_gpu_less_containers_see_no_device()})",
                "message": _message(
                    "a container that asks for no GPU, beside one that does, sees every GPU of the node when its "
                    f"image sets {VISIBLE_DEVICES_ENV}=all (every nvidia/cuda image does)",
                    f"set env {VISIBLE_DEVICES_ENV}={NO_VISIBLE_DEVICES} on each such container, init containers "
                    "too, or give it a GPU of its own",
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"variables.specs.all(s, {_seccomp_confined()})",
                "message": _message(
                    "a pod without a seccomp profile runs Unconfined (the nodes set no default) and reaches every "
                    "system call of a kernel other teams share",
                    "set securityContext.seccompProfile.type: RuntimeDefault on the pod (or Localhost)",
                    KERNEL_MESSAGE_PREFIX,
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"variables.specs.all(s, {_apparmor_confined()}) && ({APPARMOR_ANNOTATIONS})",
                "message": _message(
                    "an Unconfined AppArmor profile lifts the runtime's limits on /proc, /sys and mounts",
                    "leave appArmorProfile unset or RuntimeDefault",
                    KERNEL_MESSAGE_PREFIX,
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"variables.specs.all(s, {_proc_masked()})",
                "message": _message(
                    "procMount Unmasked shows the node's /proc paths the runtime masks",
                    "leave procMount unset",
                    KERNEL_MESSAGE_PREFIX,
                ),
                "reason": "Forbidden",
            },
            {
                "expression": f"variables.specs.all(s, {_safe_sysctls()})",
                "message": _message(
                    "a sysctl outside Kubernetes' safe set changes the kernel for every pod of the node",
                    f"use only {', '.join(SAFE_SYSCTLS)}",
                    KERNEL_MESSAGE_PREFIX,
                ),
                "reason": "Forbidden",
            },
            {
                "expression": (
                    f"variables.specs.all(s, {_gpu_containers_read_no_env_from_that_may_set_visible_devices()})"
                ),
                "message": _message(
                    f"envFrom on a container that asks for GPUs can set {VISIBLE_DEVICES_ENV} (the kubelet applies it "
                    "after the device plugin's value) and pick GPUs the plugin did not allocate",
                    f"give each envFrom a prefix that cannot begin {VISIBLE_DEVICES_ENV} (e.g. APP_), or use env",
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
