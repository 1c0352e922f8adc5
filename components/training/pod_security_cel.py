"""CEL over the pod specs of an object under admission: the quoting and container walk the team pod boundary's rules
are written with, and the Pod Security checks it restates for every team namespace.

Pod Security enforces these checks at `baseline` (seccomp at `restricted`), but a team namespace whose NCCL pods add
IPC_LOCK enforces `privileged`, so the boundary (components/training/team_admission.py) checks them itself. Each
follows the kubernetes/pod-security-admission v0.36.2 file it names.
"""

from collections.abc import Sequence

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


def cel_string(value: str) -> str:
    """`value` as a CEL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_list(values: Sequence[str]) -> str:
    """`values` as a CEL list of string literals."""
    return "[" + ", ".join(cel_string(v) for v in values) + "]"


def every_container(condition: str) -> str:
    """CEL over pod spec `s`: `condition` (over container `c`) holds for every container, init and ephemeral one (as
    pod-security-admission policy/visitor.go visitContainers walks them)."""
    return (
        f"(s.containers.all(c, {condition}) && (!has(s.initContainers) || s.initContainers.all(c, {condition})) && "
        f"(!has(s.ephemeralContainers) || s.ephemeralContainers.all(c, {condition})))"
    )


def seccomp_confined() -> str:
    """CEL over pod spec `s`: Pod Security restricted's seccomp rule (policy/check_seccompProfile_restricted.go
    seccompProfileRestricted_1_19): the pod's profile, if set, is RuntimeDefault or Localhost, and so is each
    container's own, or, where a container sets none, the pod's. Windows pods are not exempted: no pool runs them."""
    pod_set = "(has(s.securityContext) && has(s.securityContext.seccompProfile))"
    pod_valid = f"s.securityContext.seccompProfile.type in {cel_list(VALID_SECCOMP)}"
    own = "(has(c.securityContext) && has(c.securityContext.seccompProfile))"
    container = (
        f"({own} ? c.securityContext.seccompProfile.type in {cel_list(VALID_SECCOMP)} : ({pod_set} && {pod_valid}))"
    )
    return f"((!{pod_set} || {pod_valid}) && {every_container(container)})"


def apparmor_confined() -> str:
    """CEL over pod spec `s` and the object: Pod Security baseline's AppArmor rule (policy/check_appArmorProfile.go):
    the pod's and each container's profile type, where set, is RuntimeDefault or Localhost; on a Pod, the beta
    annotations are empty, `runtime/default` or `localhost/...`."""
    pod = (
        "(!has(s.securityContext) || !has(s.securityContext.appArmorProfile) || "
        f"s.securityContext.appArmorProfile.type in {cel_list(VALID_APPARMOR)})"
    )
    container = (
        "(!has(c.securityContext) || !has(c.securityContext.appArmorProfile) || "
        f"c.securityContext.appArmorProfile.type in {cel_list(VALID_APPARMOR)})"
    )
    return f"({pod} && {every_container(container)})"


# On a Pod only: Jobs' and JobSets' pods are checked when the Job controller creates them.
APPARMOR_ANNOTATIONS = (
    "object.kind != 'Pod' || !has(object.metadata.annotations) || object.metadata.annotations.all(k, "
    f"!k.startsWith({cel_string(APPARMOR_ANNOTATION_PREFIX)}) || "
    "object.metadata.annotations[k] in ['', 'runtime/default'] "
    "|| object.metadata.annotations[k].startsWith('localhost/'))"
)


def proc_masked() -> str:
    """CEL over pod spec `s`: Pod Security baseline's procMount rule from 1.35 (policy/check_procMount_baseline.go
    procMount1_35baseline): every container's procMount is Default, unless the pod runs in a user namespace."""
    container = (
        "(!has(c.securityContext) || !has(c.securityContext.procMount) || c.securityContext.procMount == 'Default')"
    )
    return f"((has(s.hostUsers) && !s.hostUsers) || {every_container(container)})"


def safe_sysctls() -> str:
    """CEL over pod spec `s`: Pod Security baseline's sysctls rule (policy/check_sysctls.go): only the safe set."""
    return (
        "(!has(s.securityContext) || !has(s.securityContext.sysctls) || "
        f"s.securityContext.sysctls.all(x, x.name in {cel_list(SAFE_SYSCTLS)}))"
    )


def stays_off_the_host() -> str:
    """CEL over pod spec `s`: none of Pod Security baseline's host checks fails (host namespaces, privileged,
    hostPath volumes, host ports; kubernetes v1.36 staging/src/k8s.io/pod-security-admission/policy
    check_host_namespaces.go, check_privileged.go, check_hostPath_volumes.go, check_hostPorts.go)."""
    container = (
        "(!has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged) && "
        "(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
    )
    host = " && ".join(f"(!has(s.{k}) || !s.{k})" for k in ("hostNetwork", "hostPID", "hostIPC"))
    return f"({host} && (!has(s.volumes) || s.volumes.all(v, !has(v.hostPath))) && {every_container(container)})"
