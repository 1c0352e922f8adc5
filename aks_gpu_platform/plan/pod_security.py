"""Pod Security admission on one pod: what a namespace's `pod-security.kubernetes.io/enforce` level refuses.

Written from kubernetes/pod-security-admission v0.36.2 (Kubernetes 1.36) policy/check_*.go, each check at the
version the API server applies for `enforce-version: latest`. Baseline: hostProcess, host namespaces, privileged,
baseline capabilities, hostPath volumes, host ports, host probes and lifecycle hooks (1.34), AppArmor, SELinux
(container_engine_t from 1.31), /proc mount (user-namespace pods exempt from 1.35), baseline seccomp, sysctls (the
1.32 safe set). Restricted adds: volume types, allowPrivilegeEscalation, runAsNonRoot and runAsUser (user-namespace
pods exempt from 1.35), restricted seccomp, restricted capabilities, restricted /proc mount; the Windows exemptions of
1.25 for the container-level ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from aks_gpu_platform.components.training.pod_security_cel import APPARMOR_ANNOTATION_PREFIX
from aks_gpu_platform.components.training.pod_security_cel import SAFE_SYSCTLS as TEAM_SAFE_SYSCTLS

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")
DEFAULT_LEVEL = "privileged"
"""No label: the API server's own default (AdmissionConfiguration defaults.enforce)."""

# check_capabilities_baseline.go capabilities_allowed_1_0.
BASELINE_CAPABILITIES = frozenset(
    (
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    )
)
# check_seLinuxOptions.go selinuxAllowedTypes1_31.
SELINUX_TYPES = frozenset(("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"))
# check_sysctls.go sysctlsAllowedV1Dot32: the set team-pod-boundary holds team pods to.
SAFE_SYSCTLS = frozenset(TEAM_SAFE_SYSCTLS)
# check_restrictedVolumes.go: the inline volume sources restricted allows.
RESTRICTED_VOLUMES = frozenset(
    (
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    )
)
SECCOMP_CONFINED = ("RuntimeDefault", "Localhost")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def enforced_level(namespace_labels: Mapping[str, str]) -> str:
    return namespace_labels.get(ENFORCE_LABEL, DEFAULT_LEVEL)


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """visitor.go visitContainers: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _context(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return container.get("securityContext") or {}


def _pod_context(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec.get("securityContext") or {}


def _user_namespace(spec: Mapping[str, Any]) -> bool:
    """relaxPolicyForUserNamespacePod: `hostUsers: false` runs the pod in a user namespace."""
    return spec.get("hostUsers") is False


def _windows(spec: Mapping[str, Any]) -> bool:
    return (spec.get("os") or {}).get("name") == "windows"


def _named(names: list[str]) -> str:
    return ", ".join(names)


def _offenders(spec: Mapping[str, Any], bad: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    return [str(c.get("name")) for c in _containers(spec) if bad(c)]


def _baseline(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    pod = _pod_context(spec)
    if (pod.get("windowsOptions") or {}).get("hostProcess") or _offenders(
        spec, lambda c: bool((_context(c).get("windowsOptions") or {}).get("hostProcess"))
    ):
        found.append("hostProcess: Windows host processes are not allowed")
    if hosts := [k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]:
        found.append(f"host namespaces: {', '.join(f'{k}=true' for k in hosts)}")
    if names := _offenders(spec, lambda c: bool(_context(c).get("privileged"))):
        found.append(f"privileged: containers {_named(names)} set securityContext.privileged=true")
    added = {
        str(c.get("name")): sorted(
            {str(a) for a in (_context(c).get("capabilities") or {}).get("add") or []} - BASELINE_CAPABILITIES
        )
        for c in _containers(spec)
    }
    if extra := {n: caps for n, caps in added.items() if caps}:
        found.append("capabilities: " + "; ".join(f"container {n} adds {', '.join(c)}" for n, c in extra.items()))
    if volumes := [str(v.get("name")) for v in spec.get("volumes") or [] if "hostPath" in v]:
        found.append(f"hostPath volumes: {_named(volumes)}")
    if names := _offenders(spec, lambda c: any(p.get("hostPort") for p in c.get("ports") or [])):
        found.append(f"hostPort: containers {_named(names)} set a hostPort")
    if names := _offenders(spec, _sets_probe_host):
        found.append(f"probe or lifecycle host: containers {_named(names)} set .host on a probe or lifecycle hook")
    found += _apparmor(meta, spec)
    if _selinux_bad(pod) or _offenders(spec, lambda c: _selinux_bad(_context(c))):
        found.append("seLinuxOptions: only the container_* types and no user or role")
    if not _user_namespace(spec) and (
        names := _offenders(spec, lambda c: _context(c).get("procMount", "Default") != "Default")
    ):
        found.append(f"procMount: containers {_named(names)} unmask /proc")
    if (pod.get("seccompProfile") or {}).get("type") == "Unconfined" or _offenders(
        spec, lambda c: (_context(c).get("seccompProfile") or {}).get("type") == "Unconfined"
    ):
        found.append("seccompProfile: Unconfined is not allowed")
    if sysctls := [str(s.get("name")) for s in pod.get("sysctls") or [] if s.get("name") not in SAFE_SYSCTLS]:
        found.append(f"sysctls: {_named(sysctls)} outside the safe set")
    return found


def _sets_probe_host(container: Mapping[str, Any]) -> bool:
    handlers: list[Mapping[str, Any]] = [container.get(p) or {} for p in PROBES]
    lifecycle = container.get("lifecycle") or {}
    handlers += [lifecycle.get("postStart") or {}, lifecycle.get("preStop") or {}]
    return any((h.get(kind) or {}).get("host") for h in handlers for kind in ("httpGet", "tcpSocket"))


def _selinux_bad(context: Mapping[str, Any]) -> bool:
    options = context.get("seLinuxOptions")
    if not options:
        return False
    return options.get("type", "") not in SELINUX_TYPES or bool(options.get("user")) or bool(options.get("role"))


def _apparmor(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    def bad(context: Mapping[str, Any]) -> bool:
        profile = context.get("appArmorProfile")
        return bool(profile) and profile.get("type") not in SECCOMP_CONFINED

    annotations: Mapping[str, str] = meta.get("annotations") or {}
    bad_annotations = [
        k
        for k, v in annotations.items()
        if k.startswith(APPARMOR_ANNOTATION_PREFIX)
        and v not in ("", "runtime/default")
        and not v.startswith("localhost/")
    ]
    if bad(_pod_context(spec)) or _offenders(spec, lambda c: bad(_context(c))) or bad_annotations:
        return ["appArmorProfile: only RuntimeDefault or Localhost"]
    return []


def _restricted(spec: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    pod = _pod_context(spec)
    if volumes := [
        str(v.get("name")) for v in spec.get("volumes") or [] if not (set(v) - {"name"}) <= RESTRICTED_VOLUMES
    ]:
        found.append(f"volume types: {_named(volumes)} use a volume type restricted refuses")
    windows = _windows(spec)
    if not windows and (names := _offenders(spec, lambda c: _context(c).get("allowPrivilegeEscalation") is not False)):
        found.append(f"allowPrivilegeEscalation != false: set it to false in containers {_named(names)}")
    if not _user_namespace(spec):
        pod_non_root = pod.get("runAsNonRoot")
        explicit = _offenders(spec, lambda c: _context(c).get("runAsNonRoot") is False)
        implicit = _offenders(spec, lambda c: "runAsNonRoot" not in _context(c) and pod_non_root is not True)
        if pod_non_root is False or explicit or implicit:
            found.append(
                "runAsNonRoot != true: set securityContext.runAsNonRoot: true on the pod"
                + (f" (containers {_named(explicit)} set false)" if explicit else "")
            )
        if pod.get("runAsUser") == 0 or _offenders(spec, lambda c: _context(c).get("runAsUser") == 0):
            found.append("runAsUser=0: run as a non-zero user")
    if not windows:
        pod_type = (pod.get("seccompProfile") or {}).get("type")
        pod_bad = pod_type is not None and pod_type not in SECCOMP_CONFINED

        def seccomp_bad(c: Mapping[str, Any]) -> bool:
            own = (_context(c).get("seccompProfile") or {}).get("type")
            return own not in SECCOMP_CONFINED if own is not None else pod_type not in SECCOMP_CONFINED

        if pod_bad or (names := _offenders(spec, seccomp_bad)):
            found.append("seccompProfile: set securityContext.seccompProfile.type: RuntimeDefault on the pod")
        drops = _offenders(spec, lambda c: "ALL" not in ((_context(c).get("capabilities") or {}).get("drop") or []))
        adds = _offenders(
            spec,
            lambda c: bool(set((_context(c).get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}),
        )
        if drops:
            found.append(f"capabilities: drop ALL in containers {_named(drops)}")
        if adds:
            found.append(f"capabilities: containers {_named(adds)} add more than NET_BIND_SERVICE")
    if not _user_namespace(spec) and (
        names := _offenders(spec, lambda c: _context(c).get("procMount", "Default") != "Default")
    ):
        found.append(f"procMount: containers {_named(names)} unmask /proc")
    return found


def violations(level: str, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    """Why a namespace enforcing `level` refuses a pod with this metadata and spec (empty: admitted)."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}: one of {', '.join(LEVELS)}")
    if level == "privileged":
        return []
    found = _baseline(meta, spec)
    if level == "restricted":
        found += [v for v in _restricted(spec) if v not in found]
    return found
