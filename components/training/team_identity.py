"""The identity policy of a team namespace (TeamStorage binds one per team): its pods run as the team's uid and gid
and only as them, join no other group, gain no identity on the way, and reach storage only through claims.

Each rule is a ValidatingAdmissionPolicy validation over the Pod under admission (`object`), in CEL.
"""

from typing import Any

from aks_gpu_platform.config.training.section import TeamConfig

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


def _run_as_team_rules(team: TeamConfig, memory_locking: bool) -> list[dict[str, Any]]:
    """Every container runs as the team's uid (or, `memory_locking`, as root) and as its gid."""
    uid, gid = team.run_as_user, team.run_as_group
    why = f"team {team.name}'s pods run as uid {uid}, gid {gid}, which own its data"
    run_as = _container_is("runAsUser", uid)
    if memory_locking:
        run_as = f"({run_as}) || ({_container_is('runAsUser', 0)})"
        why += " (root with IPC_LOCK only, for RDMA)"
    return [
        {
            "expression": _every_container(run_as),
            "message": f"set securityContext.runAsUser: {uid} (pod or every container): {why}",
            "reason": "Forbidden",
        },
        {
            "expression": _every_container(_container_is("runAsGroup", gid)),
            "message": f"set securityContext.runAsGroup: {gid} (pod or every container): {why}",
            "reason": "Forbidden",
        },
    ]


def _team_group_rules(gid: int) -> list[dict[str, Any]]:
    """The pod's processes join no group but `gid`: supplemental groups, fsGroup, and none from the image."""
    return [
        {
            "expression": _pod_field_absent_or("supplementalGroups", f".all(g, g == {gid})"),
            "message": f"supplementalGroups may hold only {gid}: another group would open another team's data",
            "reason": "Forbidden",
        },
        {
            "expression": _pod_field_absent_or("fsGroup", f" == {gid}"),
            "message": f"fsGroup may only be {gid}: it is a group the pod's processes join",
            "reason": "Forbidden",
        },
        {
            "expression": "has(object.spec.securityContext) && "
            "has(object.spec.securityContext.supplementalGroupsPolicy) && "
            "object.spec.securityContext.supplementalGroupsPolicy == 'Strict'",
            "message": "set securityContext.supplementalGroupsPolicy: Strict: without it the image's /etc/group "
            "can add any group to the pod's processes",
            "reason": "Forbidden",
        },
    ]


def _no_escalation_rule(memory_locking: bool) -> dict[str, Any]:
    """No container escalates privileges or adds a capability (`memory_locking`: but IPC_LOCK, as root holding
    nothing else)."""
    added_ok = "size(c.securityContext.capabilities.add) == 0"
    if memory_locking:
        added_ok = "c.securityContext.capabilities.add.all(x, x == 'IPC_LOCK')"
    # Root keeps containerd's default capabilities (SETUID, DAC_OVERRIDE, NET_RAW...) unless it drops them: IPC_LOCK
    # must be all it holds.
    root_drops_all = (
        f" && (!({_container_is('runAsUser', 0)}) || (has(c.securityContext.capabilities) && "
        "has(c.securityContext.capabilities.drop) && 'ALL' in c.securityContext.capabilities.drop))"
    )
    return {
        "expression": _every_container(
            "has(c.securityContext) && has(c.securityContext.allowPrivilegeEscalation) && "
            "c.securityContext.allowPrivilegeEscalation == false && "
            "(!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "
            f"{added_ok})" + (root_drops_all if memory_locking else "")
        ),
        "message": "set allowPrivilegeEscalation: false and add no capabilities in every container"
        + (" but IPC_LOCK (as root, with drop: [ALL])" if memory_locking else "")
        + ": a setuid binary or another capability would change the process's identity",
        "reason": "Forbidden",
    }


def identity_policy_spec(team: TeamConfig, memory_locking: bool = False) -> dict[str, Any]:
    """The admission policy of one team namespace: pods run as the team's uid and gid, and only as them.

    `memory_locking` (a team with quota on an InfiniBand pool): NCCL over RDMA pins memory, which takes IPC_LOCK, and a
    capability reaches only a root process (Kubernetes sets no ambient capabilities; AKS's containerd sets no
    LimitMEMLOCK). There a container may also run as uid 0 and add IPC_LOCK, and nothing else: its group stays the
    team's, its only mounts are the team's claims (the zero quotas), so root reaches no other team's directory."""
    return {
        "failurePolicy": "Fail",
        # An ephemeral container arrives by an UPDATE of the pods/ephemeralcontainers subresource (the object is
        # the whole Pod), which the `pods` rule does not match.
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]},
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["pods/ephemeralcontainers"],
                    "operations": ["UPDATE"],
                },
            ]
        },
        "validations": [
            *_run_as_team_rules(team, memory_locking),
            *_team_group_rules(team.run_as_group),
            _no_escalation_rule(memory_locking),
            _volume_kinds_rule(),
        ],
    }


def _volume_kinds_rule() -> dict[str, str]:
    """Volumes are claims or the kinds TEAM_VOLUME_KINDS and TEAM_INLINE_CSI_DRIVERS name."""
    return {
        "expression": "!has(object.spec.volumes) || object.spec.volumes.all(v, "
        + " || ".join(f"has(v.{kind})" for kind in TEAM_VOLUME_KINDS)
        + " || (has(v.csi) && v.csi.driver in ["
        + ", ".join(f"'{driver}'" for driver in TEAM_INLINE_CSI_DRIVERS)
        + "]))",
        "message": f"volumes in a team namespace are one of {', '.join(TEAM_VOLUME_KINDS)}, or csi with the "
        f"driver {', '.join(TEAM_INLINE_CSI_DRIVERS)}: an inline nfs, Azure Files or Blob volume reaches "
        "storage past the claims and quotas that keep teams apart; mount shared storage through a claim",
        "reason": "Forbidden",
    }
