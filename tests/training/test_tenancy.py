"""The tenancy contract: what a member of team A tries on dev, prod, the fleet's manager and members, each refused by
the rules stated, and what the platform's own jobs, DNS and scraping need still allowed (tests/upstream/tenancy.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml

from aks_gpu_platform.components.inference.gateway import GATEWAY_NAME, GATEWAY_NAMESPACE, GATEWAY_POD_LABEL
from aks_gpu_platform.components.training.team_admission import ANCESTRY_POLICY_NAME, POLICY_NAME
from aks_gpu_platform.components.training.team_identity_policy import ADMISSION_POLICY_PREFIX as IDENTITY_POLICY_PREFIX
from aks_gpu_platform.config.gpu.scheduling import GPU_TAINT, parse_taint
from aks_gpu_platform.config.training.section import derived_team_id
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.harness.contract_stacks import contract_recording
from tests.training.test_team_access import raw_teams, two_team_config
from tests.upstream import admission_cel, gpu_visibility
from tests.upstream.rbac import Request
from tests.upstream.tenancy import (
    PSS_ENFORCE,
    Attempt,
    Endpoint,
    Refusal,
    World,
    api_refusals,
    azure_pod_security_rule,
    bound_roles,
    build_world,
    connection_refusals,
    ephemeral_container_refusals,
    pod_refusals,
    pod_security_label_rule,
    policy_refusals,
    rule_name,
    team_pod,
    widened,
    widened_rule,
)
from tools import REPO_ROOT

WORLDS = ("dev", "dev-two-teams", "prod", "fleet-manager", "fleet-krc", "fleet-jpe")
POLICY = f"ValidatingAdmissionPolicy {POLICY_NAME}"
ANCESTRY_CHECK = f"ValidatingAdmissionPolicy {ANCESTRY_POLICY_NAME} #0"
(
    GPU_CHECK,
    NODE_NAME_CHECK,
    VISIBLE_DEVICES_CHECK,
    PRIORITY_CHECK,
    CPU_POOL_CHECK,
    HOST_CHECK,
    NO_DEVICE_CHECK,
    SECCOMP_CHECK,
    APPARMOR_CHECK,
    PROC_MOUNT_CHECK,
    SYSCTL_CHECK,
    ENV_FROM_CHECK,
) = (f"{POLICY} #{i}" for i in range(12))
ON_CPU_POOL = {"pool": "cpu"}
EXPORTER_NAMESPACE = "gpu-monitoring"
KUEUE_NAMESPACE = "kueue-system"


def _fleet_parts() -> tuple[Recording, dict[str, Recording]]:
    fleet = contract_recording("fleet")
    parents = {r.urn: r.parent for r in fleet.resources}
    platforms = {p.name.rsplit("-", 1)[-1]: p.urn for p in fleet.of_type("aks-gpu-platform:index:AksGpuPlatform")}

    def owner(urn: str) -> str | None:
        while urn:
            for member, platform in platforms.items():
                if urn == platform:
                    return member
            urn = parents.get(urn, "")
        return None

    members = {m: Recording(resources=[r for r in fleet.resources if owner(r.urn) == m]) for m in platforms}
    manager = Recording(resources=[r for r in fleet.resources if owner(r.urn) is None])
    return manager, members


def identities(config: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Team -> (uid, gid) from the stack file as written: `uid`, else derived from the name; `gid`, else the uid."""
    found: dict[str, tuple[int, int]] = {}
    for t in config["aks-gpu-platform:training"]["teams"]:
        uid = t.get("uid") or derived_team_id(t["name"])
        found[t["name"]] = (uid, t.get("gid") or uid)
    return found


@cache
def world(name: str) -> World:
    if name == "dev-two-teams":
        config = two_team_config()
        return build_world(run_stack("dev", config), raw_teams(config), identities(config))
    if name.startswith("fleet-"):
        config = load_stack_file("fleet", REPO_ROOT)
        manager, members = _fleet_parts()
        return build_world(
            manager if name == "fleet-manager" else members[name[6:]], raw_teams(config), identities(config)
        )
    config = load_stack_file(name, REPO_ROOT)
    return build_world(contract_recording(name), raw_teams(config), identities(config))


def as_team(w: World, team: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec as a member writes it for the team: its uid and gid, as docs/for-ml-teams.md says."""
    uid, gid = w.identities[team]
    context = {
        "seccompProfile": {"type": "RuntimeDefault"},
        **(spec.get("securityContext") or {}),
        "runAsUser": uid,
        "runAsGroup": gid,
        "supplementalGroupsPolicy": "Strict",
    }
    if "fsGroup" in context:
        context["fsGroup"] = gid
    contained = {
        key: [
            {**c, "securityContext": {**(c.get("securityContext") or {}), "allowPrivilegeEscalation": False}}
            for c in spec[key]
        ]
        for key in ("initContainers", "containers")
        if key in spec
    }
    return {**spec, "securityContext": context, **contained}


@pytest.fixture(params=WORLDS)
def w(request: pytest.FixtureRequest) -> World:
    return world(request.param)


def ns(w: World, team: str) -> str:
    return w.teams[team][0]


def pod_security_rule(w: World, team: str) -> str:
    """What refuses a privileged pod: Kubernetes' baseline, or where an InfiniBand team's namespace enforces
    `privileged` (IPC_LOCK), the Azure Policy baseline Gatekeeper enforces there."""
    namespace = ns(w, team)
    level = w.namespace_labels(namespace).get(PSS_ENFORCE)
    return f"PodSecurity {namespace}/baseline" if level == "baseline" else f"AzurePolicy {namespace}"


def other_team(w: World, team: str) -> str | None:
    return next((t for t in sorted(w.teams) if t != team), None)


def cpu_container() -> dict[str, Any]:
    return {"name": "work", "image": "python:3.12", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}


def gpu_container(**extra: Any) -> dict[str, Any]:
    return {"name": "train", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": "1"}}, **extra}


GPU_TOLERATION = {**parse_taint(GPU_TAINT), "operator": "Equal"}
# An NVIDIA CUDA base image: its Dockerfile sets ENV NVIDIA_VISIBLE_DEVICES=all (gitlab.com/nvidia/container-images/cuda
# dist/*/base/Dockerfile), as every nvidia/cuda and NGC framework image inherits.
CUDA_IMAGE = "nvidia/cuda:12.9.1-base-ubuntu24.04"
IMAGE_ENV = {CUDA_IMAGE: ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"]}
NO_DEVICE = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
CONFINED = {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}


def cuda_sidecar(**extra: Any) -> dict[str, Any]:
    """A container that asks for no GPU, from an image whose env sets NVIDIA_VISIBLE_DEVICES=all."""
    return {"name": "sidecar", "image": CUDA_IMAGE, "resources": {"requests": {"cpu": "1"}}, **extra}


# The GPU-visibility attacks: (what, pod spec). Each is refused by NO_DEVICE_CHECK and, without it, sees every GPU.
IMAGE_ENV_ATTACKS: list[tuple[str, dict[str, Any]]] = [
    (
        "a one-GPU pod with a second container that asks for none, from an image that sets "
        "NVIDIA_VISIBLE_DEVICES=all, sees every GPU of its node while Kueue charges one",
        {**CONFINED, "containers": [gpu_container(), cuda_sidecar()], "tolerations": [GPU_TOLERATION]},
    ),
    (
        "a one-GPU pod whose GPU-less init container runs an image that sets NVIDIA_VISIBLE_DEVICES=all",
        {
            **CONFINED,
            "initContainers": [cuda_sidecar(name="fetch")],
            "containers": [gpu_container()],
            "tolerations": [GPU_TOLERATION],
        },
    ),
    (
        "a one-GPU pod whose GPU-less container states void, then all (the later entry wins)",
        {
            **CONFINED,
            "containers": [
                gpu_container(),
                cuda_sidecar(env=[NO_DEVICE, {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
            ],
            "tolerations": [GPU_TOLERATION],
        },
    ),
]

# ConfigMaps and Secrets a team namespace could hold (the team Role creates none today; the rule must not rely on it).
ENV_SOURCES = {
    "configMap/settings": {"NVIDIA_VISIBLE_DEVICES": "all", "LOG_LEVEL": "info"},
    "configMap/split": {"DEVICES": "all"},
    "secret/tokens": {"VISIBLE_DEVICES": "all"},
}
# The envFrom attacks: (what, envFrom of the one-GPU container). Each is refused by ENV_FROM_CHECK and, without it,
# sees every GPU: the kubelet applies envFrom after the device plugin's NVIDIA_VISIBLE_DEVICES.
ENV_FROM_ATTACKS: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "a one-GPU container reads a ConfigMap that sets NVIDIA_VISIBLE_DEVICES=all",
        [{"configMapRef": {"name": "settings"}}],
    ),
    (
        "a one-GPU container forms NVIDIA_VISIBLE_DEVICES from prefix NVIDIA_VISIBLE_ and a key DEVICES",
        [
            {"prefix": "APP_", "configMapRef": {"name": "settings"}},
            {"prefix": "NVIDIA_VISIBLE_", "configMapRef": {"name": "split"}},
        ],
    ),
    (
        "a one-GPU container forms NVIDIA_VISIBLE_DEVICES from a Secret under prefix NVIDIA_",
        [{"prefix": "NVIDIA_", "secretRef": {"name": "tokens"}}],
    ),
]


def env_from_pod(env_from: list[dict[str, Any]]) -> dict[str, Any]:
    return {**CONFINED, "containers": [gpu_container(envFrom=env_from)], "tolerations": [GPU_TOLERATION]}


def debug_container(**extra: Any) -> dict[str, Any]:
    """An ephemeral container as `kubectl debug` adds it (ephemeral containers take no resources, so no GPU)."""
    context = {"allowPrivilegeEscalation": False, **extra.pop("securityContext", {})}
    return {"name": "debug", "image": CUDA_IMAGE, "securityContext": context, **extra}


ONE_GPU_POD = {**CONFINED, "containers": [gpu_container()], "tolerations": [GPU_TOLERATION]}
CPU_POD = {**CONFINED, "containers": [cpu_container()], "nodeSelector": ON_CPU_POOL}
# The ephemeral-container attacks: (what, the running pod's spec, the container added, the check that refuses it).
# Each arrives as an UPDATE of pods/ephemeralcontainers.
EPHEMERAL_ATTACKS: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (
        "a privileged ephemeral container added to a running pod owns its node",
        CPU_POD,
        debug_container(securityContext={"privileged": True}),
        HOST_CHECK,
    ),
    (
        "an ephemeral container from a CUDA image without void, added to a one-GPU pod, sees every GPU",
        ONE_GPU_POD,
        debug_container(),
        NO_DEVICE_CHECK,
    ),
    (
        "an ephemeral container with seccomp Unconfined reaches every system call of a shared kernel",
        CPU_POD,
        debug_container(securityContext={"seccompProfile": {"type": "Unconfined"}}),
        SECCOMP_CHECK,
    ),
]


# The kernel attacks: (what, pod spec, pod annotations, the check that refuses it).
KERNEL_ATTACKS: list[tuple[str, dict[str, Any], dict[str, str], str]] = [
    (
        "a pod with no seccomp profile runs Unconfined (no kubelet default) on a node other teams share",
        {"containers": [cpu_container()], "nodeSelector": ON_CPU_POOL},
        {},
        SECCOMP_CHECK,
    ),
    (
        "a pod that confines itself with RuntimeDefault but sets one container's seccomp Unconfined",
        {
            **CONFINED,
            "containers": [
                cpu_container(),
                {**cpu_container(), "name": "loose", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            ],
            "nodeSelector": ON_CPU_POOL,
        },
        {},
        SECCOMP_CHECK,
    ),
    (
        "a pod whose container's AppArmor profile is Unconfined",
        {
            **CONFINED,
            "containers": [{**cpu_container(), "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}],
            "nodeSelector": ON_CPU_POOL,
        },
        {},
        APPARMOR_CHECK,
    ),
    (
        "a pod whose AppArmor beta annotation unconfines a container",
        {**CONFINED, "containers": [cpu_container()], "nodeSelector": ON_CPU_POOL},
        {"container.apparmor.security.beta.kubernetes.io/work": "unconfined"},
        APPARMOR_CHECK,
    ),
    (
        "a pod that unmasks /proc (procMount Unmasked)",
        {
            **CONFINED,
            "containers": [{**cpu_container(), "securityContext": {"procMount": "Unmasked"}}],
            "nodeSelector": ON_CPU_POOL,
        },
        {},
        PROC_MOUNT_CHECK,
    ),
    (
        "a pod that sets an unsafe sysctl (kernel.msgmax) beside a safe one",
        {
            "securityContext": {
                **CONFINED["securityContext"],
                "sysctls": [
                    {"name": "net.ipv4.tcp_keepalive_time", "value": "600"},
                    {"name": "kernel.msgmax", "value": "65536"},
                ],
            },
            "containers": [cpu_container()],
            "nodeSelector": ON_CPU_POOL,
        },
        {},
        SYSCTL_CHECK,
    ),
]


def pod_attempt(what: str, spec: dict[str, Any], expected: Callable[[World, str], set[str]]) -> Attempt:
    return Attempt(what, lambda w, team: pod_refusals(w, ns(w, team), spec), expected)


def job(namespace: str) -> Request:
    return Request("create", "batch", "jobs", namespace=namespace)


def connect(to: Callable[[World, str], Endpoint]) -> Callable[[World, str], list[str]]:
    return lambda w, team: connection_refusals(w, team_pod(ns(w, team)), to(w, team))


def refused_everywhere(w: World, team: str, targets: list[Endpoint]) -> list[str]:
    """The rules that refuse a team pod's connection to every one of `targets`."""
    each = [set(connection_refusals(w, team_pod(ns(w, team)), to)) for to in targets]
    return sorted(set.intersection(*each)) if each else []


def egress(w: World, team: str) -> str:
    return f"NetworkPolicy {ns(w, team)}/team-egress"


def exists(namespace: str) -> Callable[[World, str], bool]:
    return lambda w, team: namespace in w.namespaces


def gateway_listeners(w: World) -> dict[str, int]:
    """Listener name -> port of the inference gateway (components/inference/gateway.py), none without models."""
    return {lst["name"]: lst["port"] for g in w.of_kind("Gateway") for lst in g["spec"]["listeners"]}


def other_listener(w: World, team: str) -> str | None:
    """A gateway listener that is not the team's own: another team's models are behind it."""
    return next((name for name in sorted(gateway_listeners(w)) if name != f"team-{team}"), None)


def gateway_listener(w: World, listener: str) -> Endpoint:
    port = gateway_listeners(w)[listener]
    return Endpoint("pod", port, namespace=GATEWAY_NAMESPACE, labels=((GATEWAY_POD_LABEL, GATEWAY_NAME),))


# A JobSet of the team that Kueue has admitted, as the API server returns it.
ADMITTED_JOBSET_OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "small-run",
    "uid": "6f1c2d3e-0000-4000-8000-000000000001",
    "controller": True,
}


def eight_gpu_job(namespace: str, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Job of eight GPUs, on the GPU taint it asks for, with no queue label."""
    pod = {"containers": [gpu_container(resources={"limits": {"nvidia.com/gpu": "8"}})], "restartPolicy": "Never"}
    pod["tolerations"] = [GPU_TOLERATION]
    metadata: dict[str, Any] = {"name": "big-run", "namespace": namespace}
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": {"spec": pod}}}


def under_admitted_jobset(kind: str) -> Callable[[World, str], list[str]]:
    def refusals(w: World, team: str) -> list[str]:
        job_obj = eight_gpu_job(ns(w, team), [ADMITTED_JOBSET_OWNER])
        if kind == "Job":
            return policy_refusals(w, ns(w, team), job_obj, "batch", "jobs")
        replicated = [{"name": "big", "replicas": 1, "template": {"spec": job_obj["spec"]}}]
        jobset = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": job_obj["metadata"],
            "spec": {"replicatedJobs": replicated},
        }
        return policy_refusals(w, ns(w, team), jobset, "jobset.x-k8s.io", "jobsets")

    return refusals


ATTEMPTS: list[Attempt] = [
    pod_attempt(
        "a CPU-only pod that tolerates the GPU taint and selects a GPU pool lands on a GPU node",
        {"containers": [cpu_container()], "tolerations": [GPU_TOLERATION], "nodeSelector": {"gpu-pool": "gput4"}},
        lambda w, team: {GPU_CHECK},
    ),
    pod_attempt(
        "a CPU-only pod that tolerates every taint (operator Exists, no key) lands on a GPU node",
        {"containers": [cpu_container()], "tolerations": [{"operator": "Exists"}]},
        lambda w, team: {GPU_CHECK},
    ),
    pod_attempt(
        "a GPU-less pod that selects a GPU pool by its node label",
        {"containers": [cpu_container()], "nodeSelector": {**ON_CPU_POOL, "gpu-pool": "gput4"}},
        lambda w, team: {GPU_CHECK},
    ),
    pod_attempt(
        "a GPU-less pod that requires GPU nodes by affinity on the GPU model",
        {
            "containers": [cpu_container()],
            "nodeSelector": ON_CPU_POOL,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu-model", "operator": "Exists"}]}]
                    }
                }
            },
        },
        lambda w, team: {GPU_CHECK},
    ),
    pod_attempt(
        "a pod that names a GPU node skips the scheduler and the taint",
        {"containers": [cpu_container()], "nodeName": "aks-gput4-12345678-vmss000000", "nodeSelector": ON_CPU_POOL},
        lambda w, team: {NODE_NAME_CHECK},
    ),
    pod_attempt(
        "a one-GPU pod that sets NVIDIA_VISIBLE_DEVICES=all sees every GPU of its node",
        {"containers": [gpu_container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])]},
        lambda w, team: {VISIBLE_DEVICES_CHECK},
    ),
    *(pod_attempt(what, spec, lambda w, team: {NO_DEVICE_CHECK}) for what, spec in IMAGE_ENV_ATTACKS),
    *(
        pod_attempt(what, env_from_pod(env_from), lambda w, team: {ENV_FROM_CHECK})
        for what, env_from in ENV_FROM_ATTACKS
    ),
    *(
        Attempt(
            what,
            lambda w, team, spec=spec, ephemeral=ephemeral: ephemeral_container_refusals(
                w, ns(w, team), spec, [ephemeral]
            ),
            lambda w, team, check=check: {check},
        )
        for what, spec, ephemeral, check in EPHEMERAL_ATTACKS
    ),
    *(
        Attempt(
            what,
            lambda w, team, spec=spec, annotations=annotations: pod_refusals(w, ns(w, team), spec, annotations),
            lambda w, team, check=check: {check},
        )
        for what, spec, annotations, check in KERNEL_ATTACKS
    ),
    *(
        pod_attempt(
            f"a {priority} pod preempts other teams' pods",
            {"containers": [cpu_container()], "priorityClassName": priority, "nodeSelector": ON_CPU_POOL},
            lambda w, team: {PRIORITY_CHECK, f"ResourceQuota {ns(w, team)}/no-system-priority"},
        )
        for priority in ("system-node-critical", "system-cluster-critical")
    ),
    pod_attempt(
        "a GPU-less pod that does not select the CPU pool could be given a GPU flavor by Kueue",
        {"containers": [cpu_container()]},
        lambda w, team: {CPU_POOL_CHECK},
    ),
    pod_attempt(
        "a privileged pod owns its node",
        {"containers": [{**cpu_container(), "securityContext": {"privileged": True}}], "nodeSelector": ON_CPU_POOL},
        lambda w, team: {pod_security_rule(w, team)},
    ),
    *(
        pod_attempt(
            f"a pod with {what} reaches its node past the egress policy, whatever the namespace's Pod Security level",
            {"containers": [gpu_container(**container)], **spec},
            lambda w, team: {HOST_CHECK},
        )
        for what, spec, container in (
            ("the node's network (IMDS, node ports)", {"hostNetwork": True}, {}),
            ("the node's PID namespace", {"hostPID": True}, {}),
            ("a hostPath volume of the node's root", {"volumes": [{"name": "node", "hostPath": {"path": "/"}}]}, {}),
            ("a host port", {}, {"ports": [{"containerPort": 8080, "hostPort": 8080}]}),
        )
    ),
    Attempt(
        "a bare pod bypasses the queue",
        lambda w, team: api_refusals(w, w.teams[team][1], Request("create", "", "pods", namespace=ns(w, team))),
        lambda w, team: {"RBAC"},
    ),
    Attempt(
        "a Job in kube-system runs as any service account there",
        lambda w, team: api_refusals(w, w.teams[team][1], job("kube-system")),
        lambda w, team: {"RBAC"},
    ),
    Attempt(
        "a member reads the platform's pods and logs in kube-system",
        lambda w, team: api_refusals(w, w.teams[team][1], Request("get", "", "pods", "kube-system", "log")),
        lambda w, team: {"RBAC"},
    ),
    Attempt(
        "a Job in another team's namespace runs on its quota",
        lambda w, team: api_refusals(w, w.teams[team][1], job(ns(w, other_team(w, team) or team))),
        lambda w, team: {"RBAC"},
        applies=lambda w, team: other_team(w, team) is not None,
    ),
    *(
        Attempt(
            f"a {kind} that names the team's admitted JobSet as its controller runs without queueing, on no quota",
            under_admitted_jobset(kind),
            lambda w, team: {ANCESTRY_CHECK},
        )
        for kind in ("Job", "JobSet")
    ),
    Attempt(
        "a pod reads the kubelet identity's token from IMDS",
        connect(lambda w, team: Endpoint("external", 80, address="169.254.169.254")),
        lambda w, team: {egress(w, team)},
    ),
    Attempt(
        "a pod speaks NFS or LNet to a file server that trusts the node subnet, past its team's directory",
        lambda w, team: refused_everywhere(
            w, team, [Endpoint("external", 2049, address=a) for _, a in w.storage_servers]
        ),
        lambda w, team: {egress(w, team)},
        applies=lambda w, team: bool(w.storage_servers),
    ),
    Attempt(
        "a pod talks to the WireServer",
        connect(lambda w, team: Endpoint("external", 80, address="168.63.129.16")),
        lambda w, team: {egress(w, team)},
    ),
    Attempt(
        "a pod lists every team's pods from the DCGM exporter",
        connect(
            lambda w, team: Endpoint(
                "pod", 9400, namespace=EXPORTER_NAMESPACE, labels=(("app.kubernetes.io/name", "dcgm-exporter"),)
            )
        ),
        lambda w, team: {egress(w, team), f"NetworkPolicy {EXPORTER_NAMESPACE}/platform-ingress"},
        applies=exists(EXPORTER_NAMESPACE),
    ),
    Attempt(
        "a pod calls Kueue's webhook and metrics directly",
        connect(
            lambda w, team: Endpoint(
                "pod", 9443, namespace=KUEUE_NAMESPACE, labels=(("control-plane", "controller-manager"),)
            )
        ),
        lambda w, team: {egress(w, team), f"NetworkPolicy {KUEUE_NAMESPACE}/platform-ingress"},
        applies=exists(KUEUE_NAMESPACE),
    ),
    Attempt(
        "a pod reads a node's kubelet or node exporter (AKS's host-network DCGM exporter too)",
        connect(lambda w, team: Endpoint("node", 10250, address="10.224.0.4")),
        lambda w, team: {egress(w, team)},
    ),
    Attempt(
        "a pod calls a model on another team's gateway listener",
        connect(lambda w, team: gateway_listener(w, other_listener(w, team) or "")),
        lambda w, team: {egress(w, team), f"NetworkPolicy {GATEWAY_NAMESPACE}/team-listeners"},
        applies=lambda w, team: other_listener(w, team) is not None,
    ),
    Attempt(
        "a pod calls a model server directly, past the gateway's listeners",
        connect(
            lambda w, team: Endpoint("pod", 8000, namespace="models", labels=(("app.kubernetes.io/name", "vllm"),))
        ),
        lambda w, team: {egress(w, team), "NetworkPolicy models/from-inference-gateway"},
        applies=exists("models"),
    ),
    Attempt(
        "a pod connects to another team's ranks",
        connect(lambda w, team: team_pod(ns(w, other_team(w, team) or team))),
        lambda w, team: {egress(w, team), f"NetworkPolicy {ns(w, other_team(w, team) or team)}/team-isolation"},
        applies=lambda w, team: other_team(w, team) is not None,
    ),
]
"""Storage attempts (a claim on a shared Files class, another team's Lustre directory) are added here as rows."""


Outcome = tuple[str, Attempt, set[str]]
"""A team, an attempt of its member, and the rules that refuse it (each a Refusal with its grounds)."""


def outcomes(w: World, attempts: list[Attempt] | None = None) -> list[Outcome]:
    """Every attempt that applies, evaluated once per team."""
    return [
        (team, attempt, set(attempt.refusals(w, team)))
        for team in sorted(w.teams)
        for attempt in (ATTEMPTS if attempts is None else attempts)
        if attempt.applies(w, team)
    ]


def grounds(refusal: str) -> frozenset[str]:
    assert isinstance(refusal, Refusal), f"{refusal}: a refusal must name the rules it rests on"
    return refusal.grounds


def failures(w: World, evaluated: list[Outcome] | None = None) -> list[str]:
    """The attempts not refused by every rule stated for them. `evaluated`: refusals already known (the rule
    stated may depend on the world: an InfiniBand team's namespace is guarded by Azure Policy, not its label)."""
    found: list[str] = []
    for team, attempt, refused in outcomes(w) if evaluated is None else evaluated:
        wanted = attempt.expected(w, team)
        if not wanted <= refused:
            found.append(
                f"{team}: {attempt.what}: must be refused by {sorted(wanted - refused)} (got {sorted(refused)})"
            )
    return found


def test_the_cluster_enforces_network_policy_with_cilium_whose_semantics_the_model_follows(w: World) -> None:
    assert w.policy_engine == ("cilium", "cilium"), (
        f"the model reads ipBlock as outside the cluster only, as Cilium does; the cluster runs {w.policy_engine}"
    )


def test_every_attempt_of_a_team_member_is_refused_by_each_rule_stated_for_it(w: World) -> None:
    assert w.teams and all(w.of_kind("Namespace") for _ in w.teams), "the world renders its team namespaces"
    problems = failures(w)
    assert not problems, "a member of one team crosses a boundary:\n" + "\n".join(problems)


def example_jobset() -> dict[str, Any]:
    (jobset,) = [
        d
        for d in yaml.safe_load_all((REPO_ROOT / "examples/team-jobset/jobset.yaml").read_text())
        if d and d["kind"] == "JobSet"
    ]
    return jobset


def gpu_flavors(w: World) -> list[dict[str, Any]]:
    """The rendered ResourceFlavors of GPU pools (those with node taints Kueue adds tolerations for)."""
    found = [f["spec"] for f in w.of_kind("ResourceFlavor") if f["spec"].get("nodeTaints")]
    assert found, "the world renders Kueue's GPU flavors"
    return found


def kueue_admitted(pod_spec: dict[str, Any], flavor: dict[str, Any]) -> dict[str, Any]:
    """The pod spec after Kueue admitted its job on a GPU flavor: the flavor's node labels and tolerations added
    (jobframework RunWithPodSetsInfo, v0.19.2)."""
    return {
        **pod_spec,
        "nodeSelector": {**(pod_spec.get("nodeSelector") or {}), **flavor["nodeLabels"]},
        "tolerations": [*(pod_spec.get("tolerations") or []), *flavor["tolerations"]],
    }


def test_the_documented_team_jobset_and_its_pods_are_admitted_in_every_team_namespace(w: World) -> None:
    jobset = example_jobset()
    for team, (namespace, _) in w.teams.items():
        submitted = {**jobset, "metadata": {**jobset["metadata"], "namespace": namespace}}
        assert not policy_refusals(w, namespace, submitted, "jobset.x-k8s.io", "jobsets"), (
            f"{team}: the guide's JobSet must be accepted as written"
        )
        for replicated in jobset["spec"]["replicatedJobs"]:
            # Written for dev's team ml; another team sets its own uid and gid (trainingTeams), as the guide says.
            spec = as_team(w, team, replicated["template"]["spec"]["template"]["spec"])
            assert not pod_refusals(w, namespace, spec), f"{team}: the JobSet's pods must be created before admission"
            for flavor in gpu_flavors(w):
                assert not pod_refusals(w, namespace, kueue_admitted(spec, flavor)), (
                    f"{team}: the pods Kueue places on a GPU flavor (its tolerations and labels added) must be admitted"
                )


def test_a_gpu_less_job_on_the_cpu_pool_is_admitted_in_every_team_namespace(w: World) -> None:
    """Copying a dataset into the team's claim is a Job without GPUs: it runs, on the CPU pool."""
    spec = {**CONFINED, "containers": [cpu_container()], "nodeSelector": ON_CPU_POOL, "restartPolicy": "Never"}
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": spec}}}
    for team, (namespace, _) in w.teams.items():
        assert not policy_refusals(w, namespace, job, "batch", "jobs"), f"{team}: a CPU job must be accepted"
        assert not pod_refusals(w, namespace, as_team(w, team, spec)), f"{team}: its pod must be admitted"


def test_the_job_controller_still_removes_finalizers_from_pods_that_predate_a_rule(w: World) -> None:
    """An UPDATE of an existing pod (the Job controller's tracking finalizer) is never refused, whatever the pod is."""
    old = {"containers": [cpu_container()], "tolerations": [GPU_TOLERATION], "nodeName": "aks-gput4-0"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": []}, "spec": old}
    for team, (namespace, _) in w.teams.items():
        assert not policy_refusals(w, namespace, pod, "", "pods", "UPDATE"), (
            f"{team}: refusing the update would leave the Job's pod terminating forever"
        )


def ancestry_policy(w: World) -> dict[str, Any]:
    (policy,) = [p for p in w.of_kind("ValidatingAdmissionPolicy") if p["metadata"]["name"] == ANCESTRY_POLICY_NAME]
    operations = {op for rule in policy["spec"]["matchConstraints"]["resourceRules"] for op in rule["operations"]}
    assert operations == {"CREATE", "UPDATE"}, (
        f"the policy must act on updates too: a Job's ownerReferences stay mutable after creation ({operations})"
    )
    return policy


def test_a_member_cannot_hang_a_suspended_job_under_an_admitted_jobset_later(w: World) -> None:
    policy = ancestry_policy(w)
    for team, (namespace, _) in w.teams.items():
        queued = eight_gpu_job(namespace, [])
        adopted = eight_gpu_job(namespace, [ADMITTED_JOBSET_OWNER])
        assert admission_cel.verdict(policy, adopted, old=queued) is not None, (
            f"{team}: a member patching a controller reference onto a suspended Job would have Kueue leave it to run "
            "as part of the admitted JobSet, outside the team's quota"
        )
        relabelled = {**adopted, "metadata": {**adopted["metadata"], "labels": {"note": "x"}}}
        assert admission_cel.verdict(policy, relabelled, old=adopted) is None, (
            f"{team}: a member may still label a child Job whose controller reference it did not change"
        )


def test_the_jobset_controller_multikueue_and_the_garbage_collector_still_manage_team_jobs(w: World) -> None:
    policy = ancestry_policy(w)
    controllers = {
        "the JobSet controller creating its Jobs": "system:serviceaccount:jobset-system:jobset-controller-manager",
        "MultiKueue copying a job to a fleet member": "system:serviceaccount:kueue-system:multikueue-manager",
    }
    for team, (namespace, _) in w.teams.items():
        child = eight_gpu_job(namespace, [ADMITTED_JOBSET_OWNER])
        for what, user in controllers.items():
            assert admission_cel.verdict(policy, child, user=user) is None, f"{team}: {what} must be admitted"
        orphaned = eight_gpu_job(namespace, [])
        gc = "system:serviceaccount:kube-system:generic-garbage-collector"
        assert admission_cel.verdict(policy, orphaned, old=child, user=gc) is None, (
            f"{team}: the garbage collector orphaning a Job (removing its controller reference) must pass"
        )


def test_team_pods_still_resolve_names_reach_their_ranks_the_internet_and_private_endpoints(w: World) -> None:
    for team, (namespace, _) in w.teams.items():
        source = team_pod(namespace)
        for why, to in (
            ("DNS through CoreDNS", Endpoint("pod", 53, "UDP", "kube-system", (("k8s-app", "kube-dns"),))),
            ("NCCL and rendezvous between ranks", team_pod(namespace)),
            ("datasets and packages outside the cluster", Endpoint("external", 443, address="20.60.0.10")),
            *(
                (f"the private endpoint {name} in the VNet", Endpoint("external", 443, address=address))
                for name, address in w.private_endpoints
            ),
        ):
            assert not connection_refusals(w, source, to), f"{team}: {why} must stay reachable"


def test_managed_prometheus_and_the_api_servers_tunnel_still_reach_platform_and_team_pods(w: World) -> None:
    """ama-metrics scrapes from kube-system; the API server calls webhooks through konnectivity agents there."""
    scraper = Endpoint("pod", 0, namespace="kube-system", labels=(("rsName", "ama-metrics"),))
    tunnel = Endpoint("pod", 0, namespace="kube-system", labels=(("app", "konnectivity-agent"),))
    targets = [(EXPORTER_NAMESPACE, 9400, scraper), (KUEUE_NAMESPACE, 8443, scraper), (KUEUE_NAMESPACE, 9443, tunnel)]
    targets += [("jobset-system", 9443, tunnel), *((n, 8080, scraper) for n, _ in w.teams.values())]
    for namespace, port, source in targets:
        if namespace not in w.namespaces:
            continue
        to = Endpoint("pod", port, namespace=namespace, labels=(("app", "x"),))
        assert not connection_refusals(w, source, to), f"{source.labels[0][1]} must reach {namespace}:{port}"


def _binds_members(w: World, binding: dict[str, Any]) -> bool:
    members = {g for _, groups in w.teams.values() for g in groups}
    return any(s.get("name") in members for s in binding.get("subjects") or [])


def _removable(obj: dict[str, Any], team_namespaces: set[str]) -> bool:
    """The policy's binding, and the team namespaces' quotas other than the storage one."""
    name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
    if obj.get("kind") == "ValidatingAdmissionPolicyBinding":
        return name in (POLICY_NAME, ANCESTRY_POLICY_NAME)
    return obj.get("kind") == "ResourceQuota" and namespace in team_namespaces and name != "storage"


def boundary_rules(w: World) -> list[tuple[str, Callable[[World], object]]]:
    """Every rule the boundaries rest on, each with a way to remove (or, for a RoleBinding, widen) it."""
    removals: list[tuple[str, Callable[[World], object]]] = []
    team_namespaces = {n for n, _ in w.teams.values()}
    for i, obj in enumerate(w.objects):
        kind, namespace = obj.get("kind"), obj["metadata"].get("namespace")
        if kind == "ValidatingAdmissionPolicy" and obj["metadata"]["name"] in (POLICY_NAME, ANCESTRY_POLICY_NAME):
            for j in range(len(obj["spec"]["validations"])):
                removals.append(
                    (f"{rule_name(obj)} #{j}", lambda x, i=i, j=j: x.objects[i]["spec"]["validations"].pop(j))
                )
        elif _removable(obj, team_namespaces):
            removals.append((rule_name(obj), lambda x, i=i: x.objects.pop(i)))
        elif kind == "NetworkPolicy" and obj["metadata"]["name"] in (
            "team-egress",
            "team-isolation",
            "platform-ingress",
        ):
            if obj["metadata"]["name"] == "team-isolation" and len(w.teams) < 2:
                continue  # guards a team from other teams: a world of one team has no one to refuse
            if obj["metadata"]["name"] == "platform-ingress" and namespace not in (EXPORTER_NAMESPACE, KUEUE_NAMESPACE):
                continue  # the attempts reach the exporter and Kueue; the other platform namespaces share the rule
            removals.append((rule_name(obj), lambda x, i=i: x.objects.pop(i)))
        elif kind == "RoleBinding" and namespace in team_namespaces and _binds_members(w, obj):
            assert len(bound_roles(w.objects, obj)) == 1, f"{rule_name(obj)} binds one Role of its namespace"
            removals.append(
                (widened_rule(obj), lambda x, i=i: x.objects.__setitem__(slice(None), widened(x.objects, i)))
            )
        elif kind == "Namespace" and obj["metadata"]["name"] in team_namespaces:
            labels = obj["metadata"].get("labels") or {}
            if labels.get(PSS_ENFORCE) != "baseline":  # an InfiniBand team's: Azure Policy's baseline guards it
                removals.append(
                    (
                        azure_pod_security_rule(obj["metadata"]["name"]),
                        lambda x, n=obj["metadata"]["name"]: setattr(
                            x, "pod_security", tuple(a for a in x.pod_security if not a.covers(n))
                        ),
                    )
                )
                continue
            removals.append(
                (
                    pod_security_label_rule(obj["metadata"]["name"]),
                    lambda x, i=i: x.objects[i]["metadata"]["labels"].pop("pod-security.kubernetes.io/enforce"),
                )
            )
    return removals


def _selectors(w: World) -> list[dict[str, Any]]:
    """Every namespaceSelector the admission and network layers match namespace labels with."""
    found = [
        (b["spec"].get("matchResources") or {}).get("namespaceSelector") or {}
        for b in w.of_kind("ValidatingAdmissionPolicyBinding")
    ]
    for policy in w.of_kind("NetworkPolicy"):
        for rule in [*(policy["spec"].get("ingress") or []), *(policy["spec"].get("egress") or [])]:
            found += [
                p["namespaceSelector"]
                for p in [*(rule.get("from") or []), *(rule.get("to") or [])]
                if "namespaceSelector" in p
            ]
    return found


def _selector_keys(selector: dict[str, Any]) -> set[str]:
    return set(selector.get("matchLabels") or {}) | {e["key"] for e in selector.get("matchExpressions") or []}


def unneeded_rules(w: World, attempts: list[Attempt] | None = None) -> list[str]:
    """The boundary rules whose removal lets no attempt through. Each attempt is evaluated once, with every rule that
    refuses it and each refusal's grounds; removing a rule withdraws the refusals that rest on it alone. What the
    attempts state may follow the world (which layer guards an InfiniBand namespace), so it is read from the world
    without the rule."""
    evaluated = outcomes(w, attempts)
    assert not failures(w, evaluated), "the contract holds before anything is removed"
    pod_security_selectors = [s for s in _selectors(w) if PSS_ENFORCE in _selector_keys(s)]
    assert not pod_security_selectors, (
        f"a selector reads the Pod Security label ({pod_security_selectors}): removing the label would change more "
        "than the namespace's level, which the grounds do not model"
    )
    unneeded: list[str] = []
    for label, remove in boundary_rules(w):
        smaller = w.copy()
        remove(smaller)
        left = [
            (team, attempt, {r for r in refused if label not in grounds(r)}) for team, attempt, refused in evaluated
        ]
        if not failures(smaller, left):
            unneeded.append(f"without {label} no attempt gets through: the rule is untested or not needed")
    return unneeded


def test_removing_any_one_boundary_rule_lets_some_attempt_through(w: World) -> None:
    kinds = {label.split(" ", 1)[0] for label, _ in boundary_rules(w)}
    assert {
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ResourceQuota",
        "NetworkPolicy",
    } <= kinds, f"every layer of the boundary must be rendered here, got {sorted(kinds)}"
    unneeded = unneeded_rules(w)
    assert not unneeded, "\n".join(unneeded)


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet-krc", "fleet-jpe"])
def test_every_team_meters_cpu_and_memory_and_gpu_less_jobs_are_held_to_the_cpu_pools_quota(stack: str) -> None:
    """Kueue counts only covered resources (IgnoreUndeclared): unmetered CPU would let a team fill any node."""
    from tests.harness.contract_stacks import platform_recording
    from tests.training.test_example_training_job import KUEUE, admit, quantity

    recording = platform_recording(stack)
    flavors = {f.inputs["metadata"]["name"]: f.inputs["spec"] for f in recording.of_type(KUEUE + "ResourceFlavor")}
    for queue in recording.of_type(KUEUE + "ClusterQueue"):
        spec, team = queue.inputs["spec"], queue.inputs["metadata"]["name"]
        ((group),) = spec["resourceGroups"]
        assert {"cpu", "memory"} <= set(group["coveredResources"]), f"{team}: CPU and memory must be metered"
        cpu_flavor = group["flavors"][0]
        assert flavors[cpu_flavor["name"]] == {"nodeLabels": {"pool": "cpu"}}, (
            f"{team}: the first flavor is the CPU pool's, untainted, so GPU-less jobs get no GPU tolerations"
        )
        for flavor in group["flavors"][1:]:
            quota = {r["name"]: quantity(r["nominalQuota"]) for r in flavor["resources"]}
            gpus = sum(v for k, v in quota.items() if k.endswith("/gpu"))
            assert gpus == 0 or (quota["cpu"] > 0 and quota["memory"] > 0), (
                f"{team}/{flavor['name']}: GPUs come with their nodes' CPU and memory, or no GPU job is admitted"
            )
        namespace = spec["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        local = next(
            r.inputs["metadata"]["name"]
            for r in recording.of_type(KUEUE + "LocalQueue")
            if r.inputs["metadata"]["namespace"] == namespace
        )
        limit = {r["name"]: quantity(r["nominalQuota"]) for r in cpu_flavor["resources"]}
        pod = {"spec": {"nodeSelector": {"pool": "cpu"}, "containers": [cpu_container()]}}
        assert admit(recording, local, namespace, pod, 2) == cpu_flavor["name"], (
            f"{team}: a small GPU-less job runs on the CPU pool's flavor"
        )
        too_many = int(limit["cpu"]) + 1
        assert admit(recording, local, namespace, pod, too_many) is None, (
            f"{team}: {too_many} CPUs exceed the team's CPU quota on the CPU pool: Kueue must hold the job"
        )


def test_every_rendered_scrape_job_still_reaches_its_targets_through_the_network_policies(w: World) -> None:
    """The platform-ingress and team-isolation policies admit managed Prometheus, or a dashboard goes blank."""
    from tests.upstream.scrape import SCRAPER_NAMESPACE, scraped_pods

    scraper = Endpoint("pod", 0, namespace=SCRAPER_NAMESPACE, labels=(("rsName", "ama-metrics"),))
    monitors = [o for o in w.objects if o.get("kind") in ("PodMonitor", "ServiceMonitor")]
    checked = 0
    for monitor in monitors:
        for namespaces, labels in scraped_pods(monitor):
            for namespace in namespaces or sorted({n for n, _ in w.teams.values()} | w.namespaces):
                target = Endpoint("pod", 0, namespace=namespace, labels=tuple(labels.items()))
                refused = connection_refusals(w, scraper, target)
                assert not refused, f"{rule_name(monitor)} cannot scrape {namespace}: {refused}"
                checked += 1
    assert checked or not monitors, "the monitors' targets were checked"


def _nccl_pod(w: World, team: str, run_as: int, added: list[str], drop: tuple[str, ...] = ("ALL",)) -> dict[str, Any]:
    spec = as_team(w, team, {"containers": [cpu_container()], "nodeSelector": ON_CPU_POOL, "restartPolicy": "Never"})
    (container,) = spec["containers"]
    context = {**container["securityContext"], "runAsUser": run_as, "capabilities": {"add": added, "drop": list(drop)}}
    return {**spec, "containers": [{**container, "securityContext": context}]}


def test_an_infiniband_team_locks_memory_as_root_with_ipc_lock_and_nothing_more() -> None:
    """NCCL over RDMA pins memory: IPC_LOCK, which only a root process holds. prod's teams have InfiniBand quota."""
    prod = world("prod")
    for team in prod.teams:
        namespace = ns(prod, team)
        refused = pod_refusals(prod, namespace, _nccl_pod(prod, team, 0, ["IPC_LOCK"]))
        assert not refused, f"{team}: an NCCL rank as root with IPC_LOCK must be admitted, else RDMA jobs never start"
        refused = pod_refusals(prod, namespace, _nccl_pod(prod, team, 0, ["IPC_LOCK", "SYS_ADMIN"]))
        assert refused, f"{team}: any capability beyond IPC_LOCK must be refused (SYS_ADMIN mounts any filesystem)"
        refused = pod_refusals(prod, namespace, _nccl_pod(prod, team, 0, ["IPC_LOCK"], drop=()))
        assert refused, f"{team}: root that drops nothing keeps SETUID, DAC_OVERRIDE and NET_RAW beside IPC_LOCK"
        refused = pod_refusals(prod, namespace, _nccl_pod(prod, team, 0, ["IPC_LOCK"], drop=("NET_RAW",)))
        assert refused, f"{team}: root that drops only NET_RAW keeps SETUID and DAC_OVERRIDE beside IPC_LOCK"
    dev = world("dev")
    for team in dev.teams:
        refused = pod_refusals(dev, ns(dev, team), _nccl_pod(dev, team, 0, ["IPC_LOCK"]))
        assert refused, f"{team}: without InfiniBand quota a team's pods never run as root"


def test_the_rule_removal_check_reports_a_binding_that_a_second_identical_binding_makes_redundant() -> None:
    """The check must fail on a redundant rule: with the team policy bound twice, removing one binding lets nothing
    through, and the check has to say so (a refusal kept by the other binding must not count as withdrawn)."""
    w = world("dev").copy()
    (binding,) = [b for b in w.of_kind("ValidatingAdmissionPolicyBinding") if b["metadata"]["name"] == POLICY_NAME]
    w.objects.append({**binding, "metadata": {**binding["metadata"], "name": f"{POLICY_NAME}-again"}})
    unneeded = unneeded_rules(w)
    assert unneeded == [
        f"without ValidatingAdmissionPolicyBinding {POLICY_NAME} no attempt gets through: "
        "the rule is untested or not needed"
    ], f"only the doubled binding is redundant, got {unneeded}"


def test_the_rule_removal_check_reports_a_rule_no_attempt_states() -> None:
    """The check must fail on a rule no attempt rests on: without the priority attempts' quota, the quota that
    refuses system priorities is untested."""
    w = world("dev")
    attempts = [
        Attempt(a.what, a.refusals, lambda w, team: {PRIORITY_CHECK}) if "preempts" in a.what else a for a in ATTEMPTS
    ]
    unneeded = unneeded_rules(w, attempts)
    (team_namespace,) = [n for n, _ in w.teams.values()]
    assert unneeded == [
        f"without ResourceQuota {team_namespace}/no-system-priority no attempt gets through: "
        "the rule is untested or not needed"
    ], f"only the quota is left unstated, got {unneeded}"


def without_check(w: World, check: str) -> World:
    """The world with one validation of the team policy taken out."""
    index = int(check.rsplit("#", 1)[1])
    smaller = w.copy()
    (policy,) = [p for p in smaller.of_kind("ValidatingAdmissionPolicy") if p["metadata"]["name"] == POLICY_NAME]
    policy["spec"]["validations"].pop(index)
    return smaller


GPU_MODES = ("devicePlugin", "aksManaged", "gpuOperator")


def on_gpu_node(
    mode: str, spec: dict[str, Any], sources: dict[str, dict[str, str]] | None = None
) -> dict[str, set[str]]:
    """The GPUs each container sees on an eight-GPU node of `mode`. Under the GPU Operator containerd's default
    runtime is runc, which reads no env: the attacker names the operator's `nvidia` RuntimeClass, as any pod may."""
    placed = {**spec, "runtimeClassName": "nvidia"} if mode == "gpuOperator" else spec
    return gpu_visibility.gpus_seen(gpu_visibility.node(mode), placed, IMAGE_ENV, sources)


@pytest.mark.parametrize("what, spec", IMAGE_ENV_ATTACKS, ids=[w[:60] for w, _ in IMAGE_ENV_ATTACKS])
def test_a_gpu_less_container_beside_a_gpu_one_is_refused_and_without_the_rule_sees_every_gpu(
    what: str, spec: dict[str, Any]
) -> None:
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            pod = as_team(w, team, spec)
            assert NO_DEVICE_CHECK in pod_refusals(w, ns(w, team), pod), f"{name}/{team}: {what}: must be refused"
            assert not pod_refusals(without_check(w, NO_DEVICE_CHECK), ns(w, team), pod), (
                f"{name}/{team}: {what}: only the no-device rule refuses it"
            )
    for mode in GPU_MODES:
        seen = on_gpu_node(mode, spec)
        assert max(len(gpus) for gpus in seen.values()) == 8, f"{mode}: {what}: admitted, it would see all eight GPUs"


def test_the_same_pods_with_void_on_the_gpu_less_containers_are_admitted_and_see_only_their_allocation() -> None:
    """The fix the refusal names, and the ordinary pods, pass: each container sees what it asked for, in every mode."""
    fixed = {
        **CONFINED,
        "initContainers": [cuda_sidecar(name="fetch", env=[NO_DEVICE])],
        "containers": [gpu_container(), cuda_sidecar(env=[{"name": "LOG", "value": "1"}, NO_DEVICE])],
        "tolerations": [GPU_TOLERATION],
    }
    one_gpu = {"containers": [gpu_container(image=CUDA_IMAGE)], "tolerations": [GPU_TOLERATION]}
    cpu_only = {"containers": [cpu_container()], "nodeSelector": ON_CPU_POOL}
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            for what, spec in (("the fixed pod", fixed), ("a one-GPU pod", one_gpu), ("a CPU-only pod", cpu_only)):
                assert not pod_refusals(w, ns(w, team), as_team(w, team, spec)), f"{name}/{team}: {what} is admitted"
    for mode in GPU_MODES:
        assert {c: len(g) for c, g in on_gpu_node(mode, fixed).items()} == {"fetch": 0, "train": 1, "sidecar": 0}, (
            f"{mode}: the GPU container sees its one GPU, the others none"
        )
        assert {c: len(g) for c, g in on_gpu_node(mode, one_gpu).items()} == {"train": 1}, (
            f"{mode}: a one-GPU container from a CUDA image sees its one GPU: the plugin's answer beats the image"
        )


def test_the_toolkit_model_reads_the_variable_as_its_source_does() -> None:
    """Boundary values of internal/config/image/cuda_image.go at v1.20.0, so the attacks above rest on them."""
    n = gpu_visibility.node("devicePlugin")

    def devices(value: str | None, **node: Any) -> list[str]:
        env = {} if value is None else {"NVIDIA_VISIBLE_DEVICES": value}
        return gpu_visibility.toolkit_devices(replace(n, **node), env, {}, [], privileged=False)

    assert devices("all") == ["all"] and devices("GPU-3") == ["GPU-3"]
    assert devices(None) == devices("") == devices("void") == devices("none") == []
    assert devices("GPU-1,void") == [], "void anywhere in the list wins"
    assert devices("all", accept_envvar_unprivileged=False) == [], "the setting AKS does not let us change"
    annotated = gpu_visibility.toolkit_devices(
        n, {"NVIDIA_VISIBLE_DEVICES": "all"}, {"cdi.k8s.io/x": "g=GPU-2"}, [], False
    )
    assert annotated == ["g=GPU-2"], "CDI annotations come before the variable"


@pytest.mark.parametrize("what, spec, annotations, check", KERNEL_ATTACKS, ids=[a[0][:60] for a in KERNEL_ATTACKS])
def test_each_kernel_rule_refuses_its_attack_in_every_team_namespace_and_alone_guards_infiniband_teams(
    what: str, spec: dict[str, Any], annotations: dict[str, str], check: str
) -> None:
    """prod's teams have InfiniBand quota: their namespaces enforce Pod Security `privileged`, so without the rule
    the pod is admitted there and runs on GPU nodes other teams share."""
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            pod = as_team(w, team, spec)
            if "seccompProfile" not in str(spec):  # as_team confines the pod as the guide says; this one does not
                context = {k: v for k, v in pod["securityContext"].items() if k != "seccompProfile"}
                pod = {**pod, "securityContext": context}
            assert check in pod_refusals(w, ns(w, team), pod, annotations), f"{name}/{team}: {what}: must be refused"
            if name == "prod":
                assert not pod_refusals(without_check(w, check), ns(w, team), pod, annotations), (
                    f"{team}: {what}: in an InfiniBand namespace the rule is the only guard"
                )


@pytest.mark.parametrize("what, env_from", ENV_FROM_ATTACKS, ids=[a[0][:60] for a in ENV_FROM_ATTACKS])
def test_envfrom_that_could_set_visible_devices_on_a_gpu_container_is_refused_and_without_the_rule_sees_every_gpu(
    what: str, env_from: list[dict[str, Any]]
) -> None:
    spec = env_from_pod(env_from)
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            pod = as_team(w, team, spec)
            assert ENV_FROM_CHECK in pod_refusals(w, ns(w, team), pod), f"{name}/{team}: {what}: must be refused"
            assert not pod_refusals(without_check(w, ENV_FROM_CHECK), ns(w, team), pod), (
                f"{name}/{team}: {what}: only the envFrom rule refuses it"
            )
    for mode in ("devicePlugin", "aksManaged"):  # the GPU Operator's CDI strategies set no env to override
        seen = gpu_visibility.gpus_seen(gpu_visibility.node(mode), spec, IMAGE_ENV, ENV_SOURCES)
        assert len(seen["train"]) == 8, f"{mode}: {what}: admitted, it would see all eight GPUs"


def test_envfrom_that_cannot_form_the_variable_and_void_after_envfrom_on_a_gpu_less_container_are_admitted() -> None:
    """A prefix that cannot begin NVIDIA_VISIBLE_DEVICES passes on a GPU container; on a GPU-less one, its own
    `env` void comes after envFrom, so a ConfigMap that says `all` changes nothing."""
    spec = {
        **CONFINED,
        "containers": [
            gpu_container(envFrom=[{"prefix": "APP_", "configMapRef": {"name": "settings"}}]),
            cuda_sidecar(envFrom=[{"configMapRef": {"name": "settings"}}], env=[NO_DEVICE]),
        ],
        "tolerations": [GPU_TOLERATION],
    }
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            assert not pod_refusals(w, ns(w, team), as_team(w, team, spec)), f"{name}/{team}: admitted"
    for mode in GPU_MODES:
        seen = on_gpu_node(mode, spec, ENV_SOURCES)
        assert {c: len(g) for c, g in seen.items()} == {"train": 1, "sidecar": 0}, f"{mode}: {seen}"
    without_void = {
        **spec,
        "containers": [spec["containers"][0], cuda_sidecar(envFrom=[{"configMapRef": {"name": "settings"}}])],
    }
    assert len(on_gpu_node("devicePlugin", without_void, ENV_SOURCES)["sidecar"]) == 8, (
        "the void entry is what keeps the ConfigMap's `all` out"
    )


def without_ephemeral_match(w: World) -> World:
    """The world with the team policy matching no pods/ephemeralcontainers update."""
    smaller = w.copy()
    (policy,) = [p for p in smaller.of_kind("ValidatingAdmissionPolicy") if p["metadata"]["name"] == POLICY_NAME]
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    rules[:] = [r for r in rules if "pods/ephemeralcontainers" not in r["resources"]]
    return smaller


@pytest.mark.parametrize("what, spec, ephemeral, check", EPHEMERAL_ATTACKS, ids=[a[0][:60] for a in EPHEMERAL_ATTACKS])
def test_an_ephemeral_container_is_held_to_every_container_rule_through_the_subresource_update(
    what: str, spec: dict[str, Any], ephemeral: dict[str, Any], check: str
) -> None:
    """prod's InfiniBand namespaces enforce Pod Security `privileged`: there the policy alone refuses the update."""
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            pod = as_team(w, team, spec)
            assert not pod_refusals(w, ns(w, team), pod), f"{name}/{team}: the running pod itself is admitted"
            assert check in ephemeral_container_refusals(w, ns(w, team), pod, [ephemeral]), (
                f"{name}/{team}: {what}: must be refused"
            )
            if name == "prod":
                for smaller in (without_check(w, check), without_ephemeral_match(w)):
                    assert not ephemeral_container_refusals(smaller, ns(w, team), pod, [ephemeral]), (
                        f"{team}: {what}: the rule, through its match on the subresource, is the only guard"
                    )
    if check == NO_DEVICE_CHECK:
        for mode in GPU_MODES:
            placed = {**spec, "ephemeralContainers": [ephemeral]}
            assert len(on_gpu_node(mode, placed)["debug"]) == 8, f"{mode}: {what}: admitted, it sees every GPU"


def test_a_confined_ephemeral_container_with_void_is_added_to_a_gpu_pod_and_sees_no_gpu() -> None:
    ephemeral = debug_container(env=[NO_DEVICE])
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            pod = as_team(w, team, ONE_GPU_POD)
            assert not ephemeral_container_refusals(w, ns(w, team), pod, [ephemeral]), f"{name}/{team}: admitted"
    for mode in GPU_MODES:
        seen = on_gpu_node(mode, {**ONE_GPU_POD, "ephemeralContainers": [ephemeral]})
        assert {c: len(g) for c, g in seen.items()} == {"train": 1, "debug": 0}, f"{mode}: {seen}"


def test_an_ephemeral_container_as_root_with_an_added_capability_is_refused_by_the_team_identity_policy() -> None:
    """The identity policy (components/training/team_identity_policy.py) holds ephemeral containers to the team's
    uid and to no added capability, through its match on the subresource update."""
    ephemeral = debug_container(securityContext={"runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}})
    for name in ("dev", "prod"):
        w = world(name)
        for team in w.teams:
            pod = as_team(w, team, CPU_POD)
            identity = f"ValidatingAdmissionPolicy {IDENTITY_POLICY_PREFIX}-{team}"
            refused = set(ephemeral_container_refusals(w, ns(w, team), pod, [ephemeral]))
            # #5: no added capability (an InfiniBand team's root may add IPC_LOCK alone, so uid 0 alone is no test).
            assert f"{identity} #5" in refused, f"{name}/{team}: refused, got {sorted(refused)}"
            smaller = w.copy()
            (policy,) = [p for p in smaller.of_kind("ValidatingAdmissionPolicy") if rule_name(p) == identity]
            rules = policy["spec"]["matchConstraints"]["resourceRules"]
            rules[:] = [r for r in rules if "pods/ephemeralcontainers" not in r["resources"]]
            left = {r for r in ephemeral_container_refusals(smaller, ns(w, team), pod, [ephemeral]) if identity in r}
            assert not left, f"{name}/{team}: without its match on the subresource, the identity policy never sees it"
