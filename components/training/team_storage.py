"""Each team's data is its own: a directory on Lustre only its pods can open, and no claim on storage shared
across teams.

The boundaries, and the driver behaviour each rests on:

- **Its own Lustre directory.** A StorageClass per team, `lustre-team-<team>`, mounts `teams/<team>` through the
  Lustre CSI driver's `sub-dir` parameter (kubernetes-sigs/azurelustre-csi-driver docs/driver-parameters.md, and
  pkg/azurelustre/nodeserver.go NodePublishVolume, which mounts `<mgs>@tcp:/lustrefs/<sub-dir>`; main at
  26f644207f30, the code behind the pinned 0.6.0 chart). The team's claim is on that class, so a pod that mounts
  it sees its team's directory and nothing above it. The sub-dir is a literal per class, not the driver's
  `${pvc.metadata.namespace}` template: a template the driver could not fill would mount one shared directory.
- **The directory belongs to the team.** The driver creates a missing sub-dir as root with mode 0775
  (pkg/util/util.go MakeDir), which a team's non-root pods could not write. A one-shot Job, run before the
  team's claim exists, creates `teams/<team>` owned by the team's uid and gid, mode 2770 (setgid: files stay in
  the team's group), through the filesystem-root claim of the platform's training namespace. It runs as root,
  which root squash maps to nobody unless the nodes are exempt (`rootSquash.noSquashNidLists`, docs/security.md).
- **Pods run as the team.** Pod Security `baseline` lets a pod run as any uid or group, so a pod could open
  another team's directory on a filesystem both reach; a ValidatingAdmissionPolicy per team namespace admits a
  pod only when every container runs as the team's uid and gid, with no other supplemental group and
  `supplementalGroupsPolicy: Strict` (groups the image's /etc/group would add are ignored: KEP-3619, containerd
  2.0, which Kubernetes 1.36 nodes run), and without privilege escalation (setuid binaries) or added
  capabilities; its volumes are claims and the kinds Pod Security `restricted` allows (no inline NFS).
- **No claim on a class that shares one account, one key or the filesystem root.** Azure Files and Blob CSI
  classes reuse one matching storage account for every claim and, by default, store its key as a Secret in the
  claim's namespace (azurefile-csi-driver docs/driver-parameters.md at 7b5ae18e74f0 and blob-csi-driver's at
  0744a60b3930, `secretNamespace` default: the claim's namespace): a pod mounting that Secret reaches every
  share in the account. A team namespace's storage quota is zero on each such class, and on the other teams'
  Lustre classes and the filesystem-root class. Teams keep `azurefile-team` (Azure Files with
  `secretNamespace: kube-system`: the key never lands where a team's pod can mount it) and Azure Disk classes
  (one disk per claim).
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.storage as storage
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import cpu_node_selector
from aks_gpu_platform.config.training.section import TeamConfig, TrainingConfig

from ..shared import roles
from ..shared.context import ClusterHandle
from ..shared.workload_identity import federated_identity
from ..storage.blob_classes import PROVISIONER as BLOB_PROVISIONER
from ..storage.lustre import LUSTRE_FS_NAME, PROVISIONER

TEAM_DIRECTORY_ROOT = "teams"
TEAM_LUSTRE_CLASS_PREFIX = "lustre-team-"
# Azure Files for teams: the account key Secret stays in kube-system, which no team can read.
AZUREFILE_PROVISIONER = "file.csi.azure.com"
AZUREFILE_TEAM_CLASS = "azurefile-team"
KEY_SECRET_NAMESPACE = "kube-system"
# Classes AKS creates whose claims share one storage account and keep its key in the claim's namespace
# (learn.microsoft.com/azure/aks/azure-files-csi and azure-blob-csi, "built-in storage classes"; azurefile and
# azurefile-premium are the in-tree names AKS keeps, served by the same CSI driver).
AKS_SHARED_CLASSES = (
    "azurefile",
    "azurefile-premium",
    "azurefile-csi",
    "azurefile-csi-premium",
    "azureblob-fuse-premium",
    "azureblob-nfs-premium",
)
# The directory Job's image: a shell with mkdir, chown and chmod, already pulled for the AMD registry Job.
DIRECTORY_JOB_IMAGE = "mcr.microsoft.com/azure-cli:2.74.0-azurelinux3.0"
ROOT_MOUNT = "/mnt/lustre"
TEAM_DIRECTORY_MODE = "2770"
ADMISSION_POLICY_PREFIX = "team-storage-identity"
# checkov skips, each with its reason (tests/platform/test_checkov.py reads them from the object).
DIRECTORY_JOB_CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=MCR's Azure CLI image is pinned by release and OS tag; a digest pins one arch",
    "checkov.io/skip2": "CKV_K8S_23=root is what may create teams/<team> and give it to the team's uid (chown)",
    "checkov.io/skip3": "CKV_K8S_40=runs as root for chown; team pods run as their high team uid",
    "checkov.io/skip4": "CKV_K8S_25=adds only CHOWN, FOWNER, DAC_OVERRIDE (for mkdir, chown, chmod) to ALL dropped",
}
# Each team's Blob data: a container in the Lustre HSM account, mounted through the claim `team-data` by pods that
# run as the service account `team-data`, whose Entra ID identity holds Storage Blob Data Contributor on that
# container only. blob-csi-driver docs/workload-identity-static-pv-mount.md (main at 0744a60b3930): with
# `mountWithWorkloadIdentityToken: "true"` (from driver v1.27.0) the driver mounts with the pod's own workload
# identity token and never reads the account key, so the data role on one container is all the pod gets.
TEAM_DATA = "team-data"
TEAM_DATA_NOMINAL_SIZE = "1Ti"  # Blob has no size; the claim counts this against the team's storage quota
BLOB_DATA_MOUNT_OPTIONS = ["-o allow_other", "--file-cache-timeout-in-seconds=120", "--cancel-list-on-mount-seconds=10"]
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


def team_lustre_class(team: str) -> str:
    """The StorageClass that mounts the team's own directory."""
    return f"{TEAM_LUSTRE_CLASS_PREFIX}{team}"


def team_directory(team: str) -> str:
    """The team's directory, relative to the filesystem root."""
    return f"{TEAM_DIRECTORY_ROOT}/{team}"


def team_container(team: str) -> str:
    """The team's Blob container in the HSM account."""
    return f"team-{team}"


def zero_storage_quota(classes: Sequence[str]) -> dict[str, str]:
    """ResourceQuota `hard` entries that refuse every claim on these classes."""
    hard: dict[str, str] = {}
    for storage_class in sorted(set(classes)):
        hard[f"{storage_class}.storageclass.storage.k8s.io/requests.storage"] = "0"
        hard[f"{storage_class}.storageclass.storage.k8s.io/persistentvolumeclaims"] = "0"
    return hard


def refused_classes(team: str, teams: Sequence[TeamConfig], shared_classes: Sequence[str], lustre: bool) -> list[str]:
    """Classes a team's namespace may not claim: those shared across teams, and the other teams' Lustre classes."""
    others = [team_lustre_class(t.name) for t in teams if t.name != team] if lustre else []
    return sorted({*AKS_SHARED_CLASSES, *shared_classes, *others})


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


def identity_policy_spec(team: TeamConfig, memory_locking: bool = False) -> dict[str, Any]:
    """The admission policy of one team namespace: pods run as the team's uid and gid, and only as them.

    `memory_locking` (a team with quota on an InfiniBand pool): NCCL over RDMA pins memory, which takes IPC_LOCK, and a
    capability reaches only a root process (Kubernetes sets no ambient capabilities; AKS's containerd sets no
    LimitMEMLOCK). There a container may also run as uid 0 and add IPC_LOCK, and nothing else: its group stays the
    team's, its only mounts are the team's claims (the zero quotas), so root reaches no other team's directory."""
    uid, gid = team.run_as_user, team.run_as_group
    why = f"team {team.name}'s pods run as uid {uid}, gid {gid}, which own its data"
    run_as = _container_is("runAsUser", uid)
    added_ok = "size(c.securityContext.capabilities.add) == 0"
    if memory_locking:
        run_as = f"({run_as}) || ({_container_is('runAsUser', 0)})"
        added_ok = "c.securityContext.capabilities.add.all(x, x == 'IPC_LOCK')"
        why += " (root with IPC_LOCK only, for RDMA)"
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
            {
                "expression": _every_container(
                    "has(c.securityContext) && has(c.securityContext.allowPrivilegeEscalation) && "
                    "c.securityContext.allowPrivilegeEscalation == false && "
                    "(!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "
                    f"{added_ok})"
                    + (
                        # Root keeps containerd's default capabilities (SETUID, DAC_OVERRIDE, NET_RAW...) unless it
                        # drops them: IPC_LOCK must be all it holds.
                        f" && (!({_container_is('runAsUser', 0)}) || (has(c.securityContext.capabilities) && "
                        "has(c.securityContext.capabilities.drop) && 'ALL' in c.securityContext.capabilities.drop))"
                        if memory_locking
                        else ""
                    )
                ),
                "message": "set allowPrivilegeEscalation: false and add no capabilities in every container"
                + (" but IPC_LOCK (as root, with drop: [ALL])" if memory_locking else "")
                + ": a setuid binary or another capability would change the process's identity",
                "reason": "Forbidden",
            },
            {
                "expression": "!has(object.spec.volumes) || object.spec.volumes.all(v, "
                + " || ".join(f"has(v.{kind})" for kind in TEAM_VOLUME_KINDS)
                + " || (has(v.csi) && v.csi.driver in ["
                + ", ".join(f"'{driver}'" for driver in TEAM_INLINE_CSI_DRIVERS)
                + "]))",
                "message": f"volumes in a team namespace are one of {', '.join(TEAM_VOLUME_KINDS)}, or csi with the "
                f"driver {', '.join(TEAM_INLINE_CSI_DRIVERS)}: an inline nfs, Azure Files or Blob volume reaches "
                "storage past the claims and quotas that keep teams apart; mount shared storage through a claim",
                "reason": "Forbidden",
            },
        ],
    }


def directory_job_name(team: TeamConfig) -> str:
    """A Job runs once: its name carries what it sets, so a changed uid, gid or mode is a new Job."""
    settings = {"dir": team_directory(team.name), "uid": team.run_as_user, "gid": team.run_as_group}
    settings["mode"] = TEAM_DIRECTORY_MODE
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
    return f"team-dir-{team.name}"[:53] + f"-{digest}"


def directory_script(team: TeamConfig) -> str:
    """Create the team's directory, owned by the team, then the same again: a rerun repairs ownership and mode."""
    root = f"{ROOT_MOUNT}/{TEAM_DIRECTORY_ROOT}"
    path = f"{ROOT_MOUNT}/{team_directory(team.name)}"
    return (
        "set -eu\n"
        f"mkdir -p {path}\n"
        # Teams traverse teams/ to their own directory and list nothing else there.
        f"chown 0:0 {root} && chmod 0711 {root}\n"
        f"chown {team.run_as_user}:{team.run_as_group} {path}\n"
        f"chmod {TEAM_DIRECTORY_MODE} {path}\n"
        f"stat -c '%U:%G %a %n' {path}\n"
    )


@dataclass(frozen=True)
class TeamContainer:
    """A team's Blob container, for what else reads it (a model streamed from it: components/inference/
    blob_weights.py)."""

    account: pulumi.Input[str]
    """The storage account holding it."""
    name: pulumi.Output[str]
    """The container's name (`team-<team>`)."""
    id: pulumi.Output[str]
    """Its ARM ID: the scope of a grant on this container only."""


class TeamStorageArgs(TypedDict):
    settings: TrainingConfig
    """The validated `training` section: the teams, their uids, gids and member groups."""
    namespaces: Mapping[str, pulumi.Input[str]]
    """Team name -> namespace name (an output of the namespace, so objects wait for it)."""
    cluster: ClusterHandle
    """The cluster the classes, Jobs and policies go to; its OIDC issuer signs the teams' data identities."""
    shared_storage_classes: NotRequired[Sequence[str]]
    """The platform's own classes whose claims share one account or the filesystem root (the Blob classes, the
    filesystem-root Lustre class): team namespaces get a zero quota on each, beside AKS's built-in shared ones."""
    lustre_mgs_address: NotRequired[pulumi.Input[str]]
    """With Lustre: the filesystem's MGS address, which each team's class mounts."""
    lustre_root_namespace: NotRequired[pulumi.Input[str]]
    """With Lustre: namespace of the filesystem-root claim the directory Jobs mount."""
    lustre_root_claim: NotRequired[pulumi.Input[str]]
    """With Lustre: the filesystem-root claim (the platform's training claim)."""
    memory_locking_namespaces: NotRequired[Sequence[str]]
    """Team namespaces whose NCCL pods lock memory for RDMA (root with IPC_LOCK only; cluster/azure_policy.py)."""
    data_account_name: NotRequired[pulumi.Input[str]]
    """The storage account each team gets a Blob container in (the Lustre HSM account, in the cluster's resource
    group); none: no per-team Blob data."""


class TeamStorage(pulumi.ComponentResource):
    """Per team: a Lustre class on its own directory, made the team's by a Job; pods held to its uid and gid."""

    lustre_classes: pulumi.Output[dict[str, str]]
    """Team name -> the StorageClass of its Lustre directory (empty without Lustre), once the directory is the
    team's."""
    storage_quota: dict[str, dict[str, str]]
    """Team name -> ResourceQuota `hard` entries refusing the classes shared across teams."""
    uids: dict[str, int]
    """Team name -> the uid (and, under `gids`, the gid) its pods must run as."""
    gids: dict[str, int]
    """Team name -> the gid its pods must run as."""
    data: pulumi.Output[dict[str, dict[str, str]]]
    """Team name -> its Blob data: `account`, `container`, `claim` and `serviceAccount` (the pods that mount the
    claim run as it), `clientId` of its identity; empty without a data account."""

    def __init__(self, name: str, args: TeamStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:TeamStorage", name, None, opts)
        settings, handle = args["settings"], args["cluster"]
        in_cluster = handle.k8s_options(self)
        mgs = args.get("lustre_mgs_address")
        root_namespace, root_claim = args.get("lustre_root_namespace"), args.get("lustre_root_claim")
        lustre = mgs is not None
        if lustre and (root_namespace is None or root_claim is None):
            raise ValueError("TeamStorage: Lustre needs lustre_root_namespace and lustre_root_claim")

        k8s.storage.v1.StorageClass(
            f"{name}-azurefile",
            metadata={"name": AZUREFILE_TEAM_CLASS},
            provisioner=AZUREFILE_PROVISIONER,
            parameters={"skuName": "Standard_LRS", "secretNamespace": KEY_SECRET_NAMESPACE},
            # Retain: deleting a claim must not delete the share and its checkpoints.
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            allow_volume_expansion=True,
            # AKS's azurefile-csi options: SMB shows every file with one mode, so any uid of the claim's pods writes;
            # the boundary is the share, which only claims in its own namespace mount (the key stays in kube-system).
            mount_options=["dir_mode=0777", "file_mode=0777", "mfsymlinks", "actimeo=30", "nosharesock"],
            opts=in_cluster,
        )

        classes: dict[str, pulumi.Output[str]] = {}
        shared = list(args.get("shared_storage_classes", []))
        locking = set(args.get("memory_locking_namespaces", []))
        self.storage_quota, self.uids, self.gids = {}, {}, {}
        for team in settings.teams:
            self.uids[team.name], self.gids[team.name] = team.run_as_user, team.run_as_group
            self.storage_quota[team.name] = zero_storage_quota(
                refused_classes(team.name, settings.teams, shared, lustre)
            )
            policy_name = f"{ADMISSION_POLICY_PREFIX}-{team.name}"
            policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{team.name}-identity",
                metadata={"name": policy_name},
                spec=identity_policy_spec(team, team.namespace_name in locking),  # type: ignore[arg-type]
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
            if mgs is None or root_namespace is None or root_claim is None:
                continue
            job = self._directory_job(name, team, root_namespace, root_claim, in_cluster)
            storage_class = k8s.storage.v1.StorageClass(
                f"{name}-{team.name}-lustre",
                metadata={"name": team_lustre_class(team.name)},
                provisioner=PROVISIONER,
                parameters={"mgs-ip-address": mgs, "fs-name": LUSTRE_FS_NAME, "sub-dir": team_directory(team.name)},
                # Retain: deleting a claim must never delete the team's data.
                reclaim_policy="Retain",
                volume_binding_mode="Immediate",
                mount_options=["noatime", "flock"],
                # The class exists once the Job has made the directory the team's (and so once the driver runs):
                # claims on it, and their pods, come after that.
                opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[job])),
            )
            classes[team.name] = storage_class.metadata["name"]
        self.lustre_classes = pulumi.Output.all(**classes) if classes else pulumi.Output.from_input({})
        data: dict[str, pulumi.Output[dict[str, str]]] = {}
        self._containers: dict[str, TeamContainer] = {}
        account = args.get("data_account_name")
        if account is not None:
            for team in settings.teams:
                data[team.name] = self._team_data(name, team, args["namespaces"][team.name], account, handle)
        self.data = pulumi.Output.all(**data) if data else pulumi.Output.from_input({})
        self.register_outputs(
            {
                "data": self.data,
                "lustre_classes": self.lustre_classes,
                "storage_quota": self.storage_quota,
                "uids": self.uids,
                "gids": self.gids,
            }
        )

    def containers(self) -> dict[str, TeamContainer]:
        """Team name -> its Blob container; empty without a data account. Not an output of the component: what
        the platform's other stages read (a model streamed from a team's container)."""
        return dict(self._containers)

    def _team_data(
        self,
        name: str,
        team: TeamConfig,
        namespace: pulumi.Input[str],
        account: pulumi.Input[str],
        handle: ClusterHandle,
    ) -> pulumi.Output[dict[str, str]]:
        """The team's container, the identity its `team-data` service account signs in as, their grants on that
        container only, and a claim that mounts it."""
        prefix = f"{name}-{team.name}-data"
        container = storage.BlobContainer(
            prefix,
            resource_group_name=handle.resource_group_name,
            account_name=account,
            container_name=team_container(team.name),
            public_access=storage.PublicAccess.NONE,
            # The team's datasets and results: a replacement would empty it.
            opts=pulumi.ResourceOptions(parent=self, protect=handle.protect),
        )
        self._containers[team.name] = TeamContainer(account, container.name, container.id)
        azure = pulumi.ResourceOptions(parent=self)
        identity, credential = federated_identity(
            f"{prefix}-identity",
            f"{prefix}-credential",
            handle=handle,
            namespace=team.namespace_name,
            service_account=TEAM_DATA,
            opts=azure,
        )
        grants: list[pulumi.Resource] = [
            roles.assign_role(
                f"{prefix}-identity-reader-writer",
                role_guid=roles.STORAGE_BLOB_DATA_CONTRIBUTOR,
                principal_id=identity.principal_id,
                scope=container.id,
                opts=azure,
            )
        ]
        # Members upload and download with their own sign-in (`az storage blob ... --auth-mode login`).
        grants += [
            roles.assign_role(
                f"{prefix}-members-{group}",
                role_guid=roles.STORAGE_BLOB_DATA_CONTRIBUTOR,
                principal_id=group,
                principal_type=authorization.PrincipalType.GROUP,
                scope=container.id,
                opts=azure,
            )
            for group in team.members
        ]
        in_cluster = handle.k8s_options(self)
        service_account = k8s.core.v1.ServiceAccount(
            f"{prefix}-service-account",
            metadata={
                "name": TEAM_DATA,
                "namespace": namespace,
                "annotations": {"azure.workload.identity/client-id": identity.client_id},
            },
            opts=in_cluster,
        )
        volume_name = f"{TEAM_DATA}-{team.name}"
        volume = k8s.core.v1.PersistentVolume(
            f"{prefix}-volume",
            metadata={"name": volume_name},
            spec={
                "capacity": {"storage": TEAM_DATA_NOMINAL_SIZE},
                "access_modes": ["ReadWriteMany"],
                "persistent_volume_reclaim_policy": "Retain",
                "storage_class_name": "",
                "mount_options": BLOB_DATA_MOUNT_OPTIONS,
                # Only the team's own claim binds it: another namespace's claim naming this volume stays Pending.
                "claim_ref": {"namespace": namespace, "name": TEAM_DATA},
                "csi": {
                    "driver": BLOB_PROVISIONER,
                    # Unique per container in the cluster (the driver's volume ID: rg#account#container).
                    "volume_handle": pulumi.Output.concat(
                        handle.resource_group_name, "#", account, "#", container.name
                    ),
                    "volume_attributes": {
                        "storageaccount": account,
                        "containerName": container.name,
                        "resourcegroup": handle.resource_group_name,
                        "clientID": identity.client_id,
                        "mountWithWorkloadIdentityToken": "true",
                    },
                },
            },
            # The mount works once the identity may use the container and the pod's token is federated.
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[credential, *grants])),
        )
        claim = k8s.core.v1.PersistentVolumeClaim(
            f"{prefix}-claim",
            metadata={"name": TEAM_DATA, "namespace": namespace},
            spec={
                "access_modes": ["ReadWriteMany"],
                "storage_class_name": "",
                "volume_name": volume.metadata["name"],
                "resources": {"requests": {"storage": TEAM_DATA_NOMINAL_SIZE}},
            },
            opts=in_cluster,
        )
        return pulumi.Output.all(
            account=account,
            container=container.name,
            claim=claim.metadata["name"],
            serviceAccount=service_account.metadata["name"],
            clientId=identity.client_id,
        )

    def _directory_job(
        self,
        name: str,
        team: TeamConfig,
        namespace: pulumi.Input[str],
        claim: pulumi.Input[str],
        in_cluster: pulumi.ResourceOptions,
    ) -> k8s.batch.v1.Job:
        container: Mapping[str, Any] = {
            "name": "directory",
            "image": mirrored(DIRECTORY_JOB_IMAGE),
            "image_pull_policy": "Always",
            "command": ["sh", "-c", directory_script(team)],
            "volume_mounts": [{"name": "lustre", "mount_path": ROOT_MOUNT}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
            # Root for chown, nothing else: every other capability dropped.
            "security_context": {
                "run_as_user": 0,
                "allow_privilege_escalation": False,
                "read_only_root_filesystem": True,
                "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "DAC_OVERRIDE"]},
            },
        }
        return k8s.batch.v1.Job(
            f"{name}-{team.name}-directory",
            metadata={
                "name": directory_job_name(team),
                "namespace": namespace,
                "annotations": DIRECTORY_JOB_CHECKOV_SKIPS,
            },
            spec={
                "backoff_limit": 3,
                "template": {
                    "metadata": {"annotations": DIRECTORY_JOB_CHECKOV_SKIPS},
                    "spec": {
                        "node_selector": cpu_node_selector(),
                        "restart_policy": "Never",
                        "automount_service_account_token": False,
                        "security_context": {"seccomp_profile": {"type": "RuntimeDefault"}},
                        "containers": [container],  # type: ignore[list-item]
                        "volumes": [{"name": "lustre", "persistent_volume_claim": {"claim_name": claim}}],
                    },
                },
            },
            opts=in_cluster,
        )
