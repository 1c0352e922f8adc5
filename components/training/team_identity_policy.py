"""Pods in a team namespace run as the team: the admission policy that holds them to its uid and gid.

Pod Security `baseline` lets a pod run as any uid or group, so a pod could open another team's directory on a
filesystem both reach; a ValidatingAdmissionPolicy per team namespace admits a pod only when every container runs
as the team's uid and gid, with no other supplemental group and `supplementalGroupsPolicy: Strict` (groups the
image's /etc/group would add are ignored: KEP-3619, containerd 2.0, which Kubernetes 1.36 nodes run), and without
privilege escalation (setuid binaries) or added capabilities; its volumes are claims and the kinds Pod Security
`restricted` allows (no inline NFS). The storage the team's identity owns: components/training/team_storage.py.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.training.section import TeamConfig

ADMISSION_POLICY_PREFIX = "team-storage-identity"
# Volume kinds a team pod may use: Pod Security `restricted`'s list. `baseline` also allows inline nfs, iscsi,
# cephfs...: an NFS export open to the node subnet (NetApp Files, Blob NFS) would be mounted past every claim.
# Inline csi is `restricted`'s too, but the Azure Files and Blob drivers accept inline (ephemeral) volumes that name
# a share or container and a key Secret, and older Files driver releases read that Secret from a namespace the pod
# names: an inline volume reaches storage past the claims and quotas. Only the Secrets Store driver is left: it
# reads the SecretProviderClass from the pod's own namespace (kubernetes-sigs/secrets-store-csi-driver
# pkg/secrets-store/nodeserver.go at b151e713, NodePublishVolume: getSecretProviderItem(..., podNamespace)) and
# mounts a tmpfs of the secrets that class names, with the pod's own service account token.
TEAM_VOLUME_KINDS = (
    "persistentVolumeClaim",
    "ephemeral",
    "configMap",
    "secret",
    "emptyDir",
    "projected",
    "downwardAPI",
)
TEAM_INLINE_CSI_DRIVERS = ("secrets-store.csi.k8s.io",)


def _container_is(field: str, value: int) -> str:
    """CEL: container `c` runs with `field` = value, set on the container or inherited from the pod."""
    return (
        f"(has(c.securityContext) && has(c.securityContext.{field})) ? c.securityContext.{field} == {value} : "
        f"(has(object.spec.securityContext) && has(object.spec.securityContext.{field}) && "
        f"object.spec.securityContext.{field} == {value})"
    )


def _every_container(condition: str) -> str:
    """CEL: `condition` on `c` holds for every container, init container and ephemeral container. One `all()` per
    list: they are lists of different types (Container, EphemeralContainer), which CEL does not concatenate."""
    return " && ".join(
        [
            f"object.spec.containers.all(c, {condition})",
            *(
                f"(!has(object.spec.{kind}) || object.spec.{kind}.all(c, {condition}))"
                for kind in ("initContainers", "ephemeralContainers")
            ),
        ]
    )


def _pod_field_absent_or(field: str, condition: str) -> str:
    return (
        f"!has(object.spec.securityContext) || !has(object.spec.securityContext.{field}) || "
        f"object.spec.securityContext.{field}{condition}"
    )


def _forbidden(expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def _pods_and_ephemeral_containers() -> dict[str, Any]:
    """Pod creation, and the update that adds an ephemeral container: it arrives by an UPDATE of the
    pods/ephemeralcontainers subresource (the object is the whole Pod), which the `pods` rule does not match."""
    return {
        "resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]},
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods/ephemeralcontainers"],
                "operations": ["UPDATE"],
            },
        ]
    }


def _runs_as_team(team: TeamConfig, memory_locking: bool, why: str) -> list[dict[str, str]]:
    """Every container's uid and gid are the team's (uid 0 too, where memory locking needs root)."""
    uid, gid = team.run_as_user, team.run_as_group
    run_as = _container_is("runAsUser", uid)
    if memory_locking:
        run_as = f"({run_as}) || ({_container_is('runAsUser', 0)})"
    return [
        _forbidden(_every_container(run_as), f"set securityContext.runAsUser: {uid} (pod or every container): {why}"),
        _forbidden(
            _every_container(_container_is("runAsGroup", gid)),
            f"set securityContext.runAsGroup: {gid} (pod or every container): {why}",
        ),
    ]


def _joins_only_team_group(gid: int) -> list[dict[str, str]]:
    """The pod's processes join no group but the team's: not by supplementalGroups, fsGroup, nor /etc/group."""
    return [
        _forbidden(
            _pod_field_absent_or("supplementalGroups", f".all(g, g == {gid})"),
            f"supplementalGroups may hold only {gid}: another group would open another team's data",
        ),
        _forbidden(
            _pod_field_absent_or("fsGroup", f" == {gid}"),
            f"fsGroup may only be {gid}: it is a group the pod's processes join",
        ),
        _forbidden(
            "has(object.spec.securityContext) && "
            "has(object.spec.securityContext.supplementalGroupsPolicy) && "
            "object.spec.securityContext.supplementalGroupsPolicy == 'Strict'",
            "set securityContext.supplementalGroupsPolicy: Strict: without it the image's /etc/group "
            "can add any group to the pod's processes",
        ),
    ]


def _keeps_its_identity(memory_locking: bool) -> dict[str, str]:
    """No container escalates privileges or adds a capability (but IPC_LOCK, as root, where memory locking)."""
    added_ok = (
        "c.securityContext.capabilities.add.all(x, x == 'IPC_LOCK')"
        if memory_locking
        else "size(c.securityContext.capabilities.add) == 0"
    )
    # Root keeps containerd's default capabilities (SETUID, DAC_OVERRIDE, NET_RAW...) unless it drops them:
    # IPC_LOCK must be all it holds.
    root_drops_all = (
        f" && (!({_container_is('runAsUser', 0)}) || (has(c.securityContext.capabilities) && "
        "has(c.securityContext.capabilities.drop) && 'ALL' in c.securityContext.capabilities.drop))"
        if memory_locking
        else ""
    )
    return _forbidden(
        _every_container(
            "has(c.securityContext) && has(c.securityContext.allowPrivilegeEscalation) && "
            "c.securityContext.allowPrivilegeEscalation == false && "
            "(!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "
            f"{added_ok})" + root_drops_all
        ),
        "set allowPrivilegeEscalation: false and add no capabilities in every container"
        + (" but IPC_LOCK (as root, with drop: [ALL])" if memory_locking else "")
        + ": a setuid binary or another capability would change the process's identity",
    )


def _mounts_only_claims() -> dict[str, str]:
    """Volumes are claims and the kinds of TEAM_VOLUME_KINDS: no inline volume reaches shared storage."""
    return _forbidden(
        "!has(object.spec.volumes) || object.spec.volumes.all(v, "
        + " || ".join(f"has(v.{kind})" for kind in TEAM_VOLUME_KINDS)
        + " || (has(v.csi) && v.csi.driver in ["
        + ", ".join(f"'{driver}'" for driver in TEAM_INLINE_CSI_DRIVERS)
        + "]))",
        f"volumes in a team namespace are one of {', '.join(TEAM_VOLUME_KINDS)}, or csi with the "
        f"driver {', '.join(TEAM_INLINE_CSI_DRIVERS)}: an inline nfs, Azure Files or Blob volume reaches "
        "storage past the claims and quotas that keep teams apart; mount shared storage through a claim",
    )


def identity_policy_spec(team: TeamConfig, memory_locking: bool = False) -> dict[str, Any]:
    """The admission policy of one team namespace: pods run as the team's uid and gid, and only as them.

    `memory_locking` (a team with quota on an InfiniBand pool): NCCL over RDMA pins memory, which takes IPC_LOCK, and a
    capability reaches only a root process (Kubernetes sets no ambient capabilities; AKS's containerd sets no
    LimitMEMLOCK). There a container may also run as uid 0 and add IPC_LOCK, and nothing else: its group stays the
    team's, its only mounts are the team's claims (the zero quotas), so root reaches no other team's directory."""
    why = f"team {team.name}'s pods run as uid {team.run_as_user}, gid {team.run_as_group}, which own its data"
    if memory_locking:
        why += " (root with IPC_LOCK only, for RDMA)"
    return {
        "failurePolicy": "Fail",
        "matchConstraints": _pods_and_ephemeral_containers(),
        "validations": [
            *_runs_as_team(team, memory_locking, why),
            *_joins_only_team_group(team.run_as_group),
            _keeps_its_identity(memory_locking),
            _mounts_only_claims(),
        ],
    }


def team_identity_policy(name: str, team: TeamConfig, memory_locking: bool, in_cluster: pulumi.ResourceOptions) -> None:
    """The team's identity policy, bound to its namespace: denies what it refuses."""
    policy_name = f"{ADMISSION_POLICY_PREFIX}-{team.name}"
    policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        f"{name}-{team.name}-identity",
        metadata={"name": policy_name},
        spec=identity_policy_spec(team, memory_locking),  # type: ignore[arg-type]
        opts=in_cluster,
    )
    k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        f"{name}-{team.name}-identity-binding",
        metadata={"name": policy_name},
        spec={
            "policy_name": policy.metadata["name"],
            "validation_actions": ["Deny"],
            "match_resources": {
                "namespace_selector": {"match_labels": {"kubernetes.io/metadata.name": team.namespace_name}}
            },
        },
        opts=in_cluster,
    )
