"""A model of Kubernetes Pod Security admission as the API server enforces a namespace's level on one pod.

Written from kubernetes/kubernetes v1.36 staging/src/k8s.io/pod-security-admission/policy (the checks of the
`baseline` level: check_privileged.go, check_hostNamespaces.go, check_hostPathVolumes.go, check_hostPorts.go,
check_capabilities_baseline.go; `restricted` adds check_capabilities_restricted.go, check_allowPrivilegeEscalation.go,
check_runAsNonRoot.go, check_seccompProfile_restricted.go) and admission/admission.go (the level is read from the
namespace's `pod-security.kubernetes.io/enforce` label; no label is `privileged`, the API server's default). Checks
about SELinux, AppArmor, /proc mounts, sysctls and Windows host processes are left out: no pod the platform renders
or documents sets them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

ENFORCE = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")
# check_capabilities_baseline.go: capabilities a container may add under baseline.
BASELINE_CAPABILITIES = frozenset(
    {
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
    }
)


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _baseline(spec: Mapping[str, Any]) -> list[str]:
    refused: list[str] = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            refused.append(f"host namespaces ({key}=true)")
    if any("hostPath" in v for v in spec.get("volumes") or []):
        refused.append("hostPath volumes")
    for c in _containers(spec):
        context = c.get("securityContext") or {}
        if context.get("privileged"):
            refused.append(f"privileged ({c['name']})")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            refused.append(f"hostPort ({c['name']})")
        added = {str(a).upper() for a in (context.get("capabilities") or {}).get("add") or []}
        if added - BASELINE_CAPABILITIES:
            refused.append(f"non-default capabilities {sorted(added - BASELINE_CAPABILITIES)} ({c['name']})")
    return refused


def _restricted(spec: Mapping[str, Any]) -> list[str]:
    refused: list[str] = []
    pod_context = spec.get("securityContext") or {}
    for c in _containers(spec):
        context = c.get("securityContext") or {}
        capabilities = context.get("capabilities") or {}
        if "ALL" not in [str(d).upper() for d in capabilities.get("drop") or []]:
            refused.append(f"unrestricted capabilities: drop ALL ({c['name']})")
        if {str(a).upper() for a in capabilities.get("add") or []} - {"NET_BIND_SERVICE"}:
            refused.append(f"unrestricted capabilities: add ({c['name']})")
        if context.get("allowPrivilegeEscalation") is not False:
            refused.append(f"allowPrivilegeEscalation != false ({c['name']})")
        if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
            refused.append(f"runAsNonRoot != true ({c['name']})")
        seccomp = (context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            refused.append(f"seccompProfile ({c['name']})")
    return refused


def violations(level: str, spec: Mapping[str, Any]) -> list[str]:
    """Why the API server refuses a pod with `spec` in a namespace enforcing `level` (empty: admitted)."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    if level == "privileged":
        return []
    found = _baseline(spec)
    return found + _restricted(spec) if level == "restricted" else found


def enforced_level(namespace_labels: Mapping[str, str]) -> str:
    return namespace_labels.get(ENFORCE, "privileged")
