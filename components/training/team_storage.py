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
- **Pods run as the team.** An admission policy per team namespace holds every container to the team's uid and
  gid, and its volumes to claims (components/training/team_identity_policy.py).
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
from typing import Any, NamedTuple, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.managedidentity as managedidentity
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

# Released names of this module, kept importable from here; the policy lives in team_identity_policy.py.
from .team_identity_policy import ADMISSION_POLICY_PREFIX as ADMISSION_POLICY_PREFIX
from .team_identity_policy import TEAM_VOLUME_KINDS as TEAM_VOLUME_KINDS
from .team_identity_policy import identity_policy_spec as identity_policy_spec
from .team_identity_policy import team_identity_policy

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


class _LustreRoot(NamedTuple):
    """The filesystem the team directories are made on: its MGS address and the filesystem-root claim."""

    mgs_address: pulumi.Input[str]
    namespace: pulumi.Input[str]
    claim: pulumi.Input[str]


def _lustre_root(args: TeamStorageArgs) -> _LustreRoot | None:
    """The filesystem the teams' directories are on, when there is Lustre."""
    mgs = args.get("lustre_mgs_address")
    root_namespace, root_claim = args.get("lustre_root_namespace"), args.get("lustre_root_claim")
    if mgs is None:
        return None
    if root_namespace is None or root_claim is None:
        raise ValueError("TeamStorage: Lustre needs lustre_root_namespace and lustre_root_claim")
    return _LustreRoot(mgs, root_namespace, root_claim)


def _azurefile_team_class(name: str, in_cluster: pulumi.ResourceOptions) -> None:
    """Azure Files for teams, its account key kept in kube-system."""
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


def _data_grants(
    prefix: str,
    team: TeamConfig,
    identity: managedidentity.UserAssignedIdentity,
    container: storage.BlobContainer,
    azure: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """Storage Blob Data Contributor on the team's container only: to its data identity and its member groups."""
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
    return grants


def _data_service_account(
    prefix: str,
    namespace: pulumi.Input[str],
    identity: managedidentity.UserAssignedIdentity,
    in_cluster: pulumi.ResourceOptions,
) -> k8s.core.v1.ServiceAccount:
    """`team-data`: pods that run as it sign in as the team's data identity."""
    return k8s.core.v1.ServiceAccount(
        f"{prefix}-service-account",
        metadata={
            "name": TEAM_DATA,
            "namespace": namespace,
            "annotations": {"azure.workload.identity/client-id": identity.client_id},
        },
        opts=in_cluster,
    )


def _data_volume(
    prefix: str,
    team: TeamConfig,
    namespace: pulumi.Input[str],
    account: pulumi.Input[str],
    container: storage.BlobContainer,
    identity: managedidentity.UserAssignedIdentity,
    handle: ClusterHandle,
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.PersistentVolume:
    """The volume of the team's container, mounted with the pod's workload identity token, bound to its claim."""
    return k8s.core.v1.PersistentVolume(
        f"{prefix}-volume",
        metadata={"name": f"{TEAM_DATA}-{team.name}"},
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
                "volume_handle": pulumi.Output.concat(handle.resource_group_name, "#", account, "#", container.name),
                "volume_attributes": {
                    "storageaccount": account,
                    "containerName": container.name,
                    "resourcegroup": handle.resource_group_name,
                    "clientID": identity.client_id,
                    "mountWithWorkloadIdentityToken": "true",
                },
            },
        },
        opts=opts,
    )


def _data_claim(
    prefix: str, namespace: pulumi.Input[str], volume: k8s.core.v1.PersistentVolume, in_cluster: pulumi.ResourceOptions
) -> k8s.core.v1.PersistentVolumeClaim:
    """The team's `team-data` claim, on its own volume."""
    return k8s.core.v1.PersistentVolumeClaim(
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
        lustre = _lustre_root(args)
        _azurefile_team_class(name, in_cluster)
        shared = list(args.get("shared_storage_classes", []))
        locking = set(args.get("memory_locking_namespaces", []))
        self.uids = {team.name: team.run_as_user for team in settings.teams}
        self.gids = {team.name: team.run_as_group for team in settings.teams}
        self.storage_quota = {
            team.name: zero_storage_quota(refused_classes(team.name, settings.teams, shared, lustre is not None))
            for team in settings.teams
        }
        classes: dict[str, pulumi.Output[str]] = {}
        for team in settings.teams:
            team_identity_policy(name, team, team.namespace_name in locking, in_cluster)
            if lustre is not None:
                classes[team.name] = self._team_lustre_class(name, team, lustre, in_cluster)
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

    def _team_lustre_class(
        self, name: str, team: TeamConfig, lustre: _LustreRoot, in_cluster: pulumi.ResourceOptions
    ) -> pulumi.Output[str]:
        """The Job that makes the team's directory its own, then the class that mounts that directory."""
        job = self._directory_job(name, team, lustre.namespace, lustre.claim, in_cluster)
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-{team.name}-lustre",
            metadata={"name": team_lustre_class(team.name)},
            provisioner=PROVISIONER,
            parameters={
                "mgs-ip-address": lustre.mgs_address,
                "fs-name": LUSTRE_FS_NAME,
                "sub-dir": team_directory(team.name),
            },
            # Retain: deleting a claim must never delete the team's data.
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            mount_options=["noatime", "flock"],
            # The class exists once the Job has made the directory the team's (and so once the driver runs):
            # claims on it, and their pods, come after that.
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[job])),
        )
        return storage_class.metadata["name"]

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
        grants = _data_grants(prefix, team, identity, container, azure)
        in_cluster = handle.k8s_options(self)
        service_account = _data_service_account(prefix, namespace, identity, in_cluster)
        # The mount works once the identity may use the container and the pod's token is federated.
        usable = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[credential, *grants]))
        volume = _data_volume(prefix, team, namespace, account, container, identity, handle, usable)
        claim = _data_claim(prefix, namespace, volume, in_cluster)
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
