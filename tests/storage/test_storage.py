"""Storage under mocks: the Lustre filesystem with Blob HSM, its CSI driver and claim, the Blob classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.components.shared.roles import propagation_seconds
from aks_gpu_platform.components.storage.lustre import CSI_DRIVER_VERSION, LustreStorage, LustreStorageArgs
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.lustre_skus import AMLFS_SKUS, required_subnet_prefix
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.storage.section import LustreConfig
from aks_gpu_platform.plan.describe import describe
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from tests.conftest import STACKS, assert_rejected, cluster_handle, settings_of
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import node_templates
from tools import REPO_ROOT
from tools.bench import critical_path, duration

FILESYSTEM = "azure-native:storagecache:AmlFilesystem"
ACCOUNT = "azure-native:storage:StorageAccount"
CONTAINER = "azure-native:storage:BlobContainer"
ROLE = "azure-native:authorization:RoleAssignment"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
POD = "kubernetes:core/v1:Pod"
RELEASE = "kubernetes:helm.sh/v3:Release"
SCHEMA = "1.33.0"


def _validated(settings: dict[str, Any]) -> LustreConfig:
    return validate_section(LustreConfig, settings, source="storage.lustre")


def _lustre_settings(stack_config: Callable[[str], dict[str, Any]], stack: str) -> dict[str, Any]:
    return settings_of(stack_config(stack))["storage"]["lustre"]


@pytest.fixture(scope="module")
def dev_with_lustre() -> Recording:
    from aks_gpu_platform.testing.stack_files import load_stack_file

    config = load_stack_file("dev", REPO_ROOT)
    config["aks-gpu-platform:storage"]["lustre"]["enabled"] = True
    return run_stack("dev", config)


def test_prod_filesystem_is_a_valid_zonal_size_with_a_maintenance_window(prod_recording: Recording) -> None:
    fs = prod_recording.one(FILESYSTEM)
    i = fs.inputs
    sku = AMLFS_SKUS[i["sku"]["name"]]
    assert sku.allows(int(i["storageCapacityTiB"])), "Azure rejects a capacity off the SKU's steps"
    assert len(i["zones"]) == 1, "a filesystem lives in exactly one zone"
    assert i["maintenanceWindow"] == {"dayOfWeek": "Sunday", "timeOfDayUTC": "17:00"}, "Azure requires the window"
    assert i["rootSquashSettings"]["mode"] == "RootOnly", "root in a container must not own the data"
    assert fs.protect, "prod must refuse to replace a filesystem that cannot be resized and holds the data"
    subnet = prod_recording.one("azure-native:network:Subnet", "lustre")
    assert i["filesystemSubnet"] == subnet.outputs["id"], "the filesystem goes into the dedicated Lustre subnet"


def test_prod_hsm_uses_the_data_and_logging_containers_of_a_protected_locked_down_account(
    prod_recording: Recording,
) -> None:
    hsm = prod_recording.one(FILESYSTEM).inputs["hsm"]["settings"]
    data = prod_recording.one(CONTAINER, "hsm-data")
    logging = prod_recording.one(CONTAINER, "logging")
    assert hsm["container"] == data.outputs["id"], "imports and exports go to the data container"
    assert hsm["loggingContainer"] == logging.outputs["id"], "HSM logs go to their own container"
    assert hsm["importPrefix"] == "/datasets"
    account = prod_recording.one(ACCOUNT)
    assert account.protect, "the account holds the cold copy of the data and the checkpoints"
    a = account.inputs
    assert (a["enableHttpsTrafficOnly"], a["minimumTlsVersion"], a["allowBlobPublicAccess"]) == (True, "TLS1_2", False)
    assert data.inputs["accountName"] == logging.inputs["accountName"] == account.outputs["name"]
    service = prod_recording.one("azure-native:storage:BlobServiceProperties").inputs
    assert service["isVersioningEnabled"] is True, "versioning keeps overwritten checkpoints"
    assert service["deleteRetentionPolicy"] == {"enabled": True, "days": 30}, "soft delete undoes deletions"


def test_lustre_service_is_granted_the_account_before_the_filesystem_exists(
    prod_recording: Recording, stack_config: Callable[[str], dict[str, Any]]
) -> None:
    principal = _lustre_settings(stack_config, "prod")["hpcCacheProviderObjectId"]
    account = prod_recording.one(ACCOUNT)
    grants = [r for r in prod_recording.of_type(ROLE) if r.inputs["principalId"] == principal]
    roles = sorted(r.inputs["roleDefinitionId"].rsplit("/", 1)[-1] for r in grants)
    assert roles == sorted(["17d1049b-9a84-46fb-8f53-869881c3d3ab", "ba92f5b4-2d11-453d-a403-e96b0029c9fe"]), (
        "HSM needs Storage Account Contributor and Storage Blob Data Contributor"
    )
    assert all(r.inputs["scope"] == account.outputs["id"] for r in grants), "grants stay on the one account"
    assert all(r.inputs["principalType"] == "ServicePrincipal" for r in grants)
    fs = prod_recording.one(FILESYSTEM)
    assert {r.urn for r in grants} <= set(fs.depends_on), "Azure fails the creation if the grants come later"


@pytest.mark.parametrize("stack", STACKS)
def test_a_new_filesystem_waits_until_its_grants_have_taken_effect(
    stack: str, prod_recording: Recording, dev_with_lustre: Recording
) -> None:
    recording = {"prod": prod_recording, "dev": dev_with_lustre}[stack]
    fs = recording.one(FILESYSTEM)
    grants = [r for r in recording.of_type(ROLE) if r.urn in fs.depends_on]
    assert len(grants) == 2, "the filesystem waits for both HSM grants"
    for grant in grants:
        assert grant.after_create_hooks, f"{grant.name}: a new grant must hold the filesystem until it takes effect"
        waited = propagation_seconds(grant.after_create_hooks)
        assert waited >= 300, (
            f"{grant.name} holds the filesystem {waited}s; Azure Managed Lustre documents up to five minutes before "
            "the grants take effect, and creation fails without them"
        )
    total, chain = critical_path(recording, fs.urn)
    assert any(r.type == ROLE and duration(r) >= 300 for r in chain), "the first deploy's filesystem waits the time"
    assert total >= 300 + duration(fs), "the wait lies on the filesystem's path, not beside it"


@pytest.mark.parametrize(("seconds", "hooks"), [(0, 0), (900, 2)])
def test_the_grant_propagation_wait_follows_config(
    build: Callable[[Callable[[], Any]], Recording],
    stack_config: Callable[[str], dict[str, Any]],
    seconds: int,
    hooks: int,
) -> None:
    settings = _lustre_settings(stack_config, "dev")
    settings["roleAssignmentPropagationSeconds"] = seconds

    def program() -> None:
        LustreStorage(
            "lustre",
            {"cluster": cluster_handle(), "lustre_subnet_id": "subnet-id", "settings": _validated(settings)},
        )

    grants = build(program).of_type(ROLE)
    assert len(grants) == 2
    assert sum(len(g.after_create_hooks) for g in grants) == hooks, "0 switches the wait off"
    assert all(propagation_seconds(g.after_create_hooks) == seconds for g in grants), f"each grant waits {seconds}s"


def test_the_propagation_hook_waits_its_time_and_never_in_previews(
    build: Callable[[Callable[[], Any]], Recording], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import pulumi

    from aks_gpu_platform.components.shared import roles as roles_module

    hooks: list[pulumi.ResourceHook] = []
    build(lambda: hooks.append(roles_module.propagation_wait("lustre-hsm", 300)))  # type: ignore[func-returns-value]
    assert len(hooks) == 1 and hooks[0] is not None
    hook = hooks[0]
    assert hook.opts is None or not hook.opts.on_dry_run, "a preview must not sleep"
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(roles_module.asyncio, "sleep", fake_sleep)
    args = pulumi.ResourceHookArgs(urn="urn:grant", id="id", name="grant", type=ROLE)
    result = hook.callback(args)
    assert result is not None, "the hook is a coroutine: the engine awaits it without blocking the program"
    loop = asyncio.new_event_loop()  # not asyncio.run: it would unset the loop the Pulumi runtime keeps using
    try:
        loop.run_until_complete(result)  # type: ignore[arg-type]
    finally:
        loop.close()
    assert slept == [300], "the hook holds the grant's dependents for the configured time"
    assert roles_module.propagation_wait("none", 0) is None, "0 seconds registers no hook at all"


def test_prod_auto_exports_checkpoints_back_to_blob(prod_recording: Recording) -> None:
    job = prod_recording.one("azure-native:storagecache:AutoExportJob")
    assert job.inputs["autoExportPrefixes"] == ["/checkpoints"]
    assert job.inputs["amlFilesystemName"] == prod_recording.one(FILESYSTEM).outputs["name"]
    assert not job.protect, "auto-export can be switched off without unprotecting the filesystem"


def test_storage_class_mounts_the_filesystem_by_its_mgs_address(prod_recording: Recording) -> None:
    fs = prod_recording.one(FILESYSTEM)
    sc = prod_recording.one(STORAGE_CLASS, "lustre-storage-class")
    mgs = fs.outputs["clientInfo"]["mgsAddress"]
    assert mgs and sc.inputs["parameters"] == {"mgs-ip-address": mgs, "fs-name": "lustrefs"}, (
        "the class must point at the filesystem's own management service"
    )
    assert sc.inputs["provisioner"] == "azurelustre.csi.azure.com"
    assert sc.inputs["reclaimPolicy"] == "Retain", "Delete would wipe training data with a claim"
    assert sc.inputs["mountOptions"] == ["noatime", "flock"]
    assert prod_recording.stack_outputs["lustreMgsAddress"] == mgs


def test_training_claim_is_read_write_many_on_the_lustre_class(prod_recording: Recording) -> None:
    sc = prod_recording.one(STORAGE_CLASS, "lustre-storage-class")
    pvc = prod_recording.one(PVC, "lustre")
    spec = pvc.inputs["spec"]
    assert spec["accessModes"] == ["ReadWriteMany"], "every GPU pod of a job mounts the same data"
    assert spec["storageClassName"] == sc.inputs["metadata"]["name"]
    assert pvc.inputs["metadata"]["namespace"] == prod_recording.stack_outputs["lustreNamespace"] == "training"
    assert prod_recording.stack_outputs["lustrePvcName"] == pvc.inputs["metadata"]["name"] == "lustre-pvc"
    labels = prod_recording.one("kubernetes:core/v1:Namespace", "training").inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline", "privileged pods stay out of training"


def test_csi_driver_is_pinned_and_its_node_plugin_runs_on_gpu_nodes(prod_recording: Recording) -> None:
    release = prod_recording.one(RELEASE, "lustre")
    assert release.inputs["version"] == CSI_DRIVER_VERSION and release.inputs["chart"].startswith("oci://")
    node_plugin = {"tolerations": release.inputs["values"]["node"]["tolerations"]}
    user_nodes = [n for n in node_templates(prod_recording) if not n.system]
    assert any(n.gpu for n in user_nodes), "prod has GPU pools"
    for node in user_nodes:
        assert pod_fits_node(node_plugin, dict(node.labels), list(node.taints)), (
            f"the CSI node plugin must run on pool {node.pool}, or its pods cannot mount Lustre"
        )
    for kind in (STORAGE_CLASS, PVC):
        name = "lustre-storage-class" if kind == STORAGE_CLASS else "lustre"
        assert release.urn in prod_recording.one(kind, name).depends_on, "claims bind only once the driver runs"


@pytest.mark.parametrize("stack", STACKS)
def test_in_cluster_storage_objects_use_the_cluster_provider_and_die_with_it(
    recordings: dict[str, Recording], stack: str
) -> None:
    recording = recordings[stack]
    cluster = recording.one("azure-native:containerservice:ManagedCluster")
    provider = recording.one("pulumi:providers:kubernetes")
    objects = recording.of_type(STORAGE_CLASS) + recording.of_type(PVC) + recording.of_type(RELEASE)
    assert objects
    for r in objects:
        assert r.provider.startswith(provider.urn), f"{r.name} must target the platform's cluster"
        assert r.deleted_with == cluster.urn, f"{r.name} goes away with the cluster, not one by one"


@pytest.mark.parametrize("stack", STACKS)
def test_blob_classes_are_standard_and_premium(recordings: dict[str, Recording], stack: str) -> None:
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in recordings[stack].of_type(STORAGE_CLASS)}
    standard, premium = classes["blob-standard"], classes["blob-premium"]
    assert standard["provisioner"] == premium["provisioner"] == "blob.csi.azure.com"
    assert standard["parameters"]["skuName"].startswith("Standard_"), "bulk data belongs on cheap standard blob"
    assert premium["parameters"]["skuName"].startswith("Premium_"), "small files need premium transactions"
    assert standard["reclaimPolicy"] == premium["reclaimPolicy"] == "Retain"


def test_dev_plans_without_lustre(dev_recording: Recording) -> None:
    assert dev_recording.of_type(FILESYSTEM) == [], "dev switches Lustre off to save its full-size bill"
    # The one claim left is the served model's weights cache, on a Blob class (components/inference/weights_cache.py).
    claims = dev_recording.of_type(PVC)
    lustre_claims = [c for c in claims if not str(c.inputs["spec"].get("storageClassName", "")).startswith("blob-")]
    assert dev_recording.of_type(ACCOUNT) == [] and lustre_claims == []
    assert "lustreMgsAddress" not in dev_recording.stack_outputs
    dev_recording.one("azure-native:containerservice:ManagedCluster")
    classes = sorted(r.inputs["metadata"]["name"] for r in dev_recording.of_type(STORAGE_CLASS))
    assert classes == ["azurefile-team", "blob-premium", "blob-standard"], (
        "the Blob classes and the teams' Azure Files class do not need Lustre"
    )


def test_dev_with_lustre_on_is_small_unprotected_and_verifiable(dev_with_lustre: Recording) -> None:
    fs = dev_with_lustre.one(FILESYSTEM)
    assert fs.inputs["storageCapacityTiB"] == 4 and not fs.protect, "dev is the smallest size and disposable"
    pod = dev_with_lustre.one(POD, "verification")
    spec = pod.inputs["spec"]
    mount = spec["containers"][0]["volumeMounts"][0]
    assert mount["mountPath"] == "/mnt/lustre"
    claim = dev_with_lustre.one(PVC, "lustre").inputs["metadata"]
    assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["name"]
    assert pod.inputs["metadata"]["namespace"] == claim["namespace"]
    sc = spec["securityContext"]
    container = spec["containers"][0]["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert spec["containers"][0]["resources"]["limits"], "a test pod must not starve training pods"


def test_dev_hsm_account_stays_public_without_a_private_endpoint(dev_with_lustre: Recording) -> None:
    account = dev_with_lustre.one("azure-native:storage:StorageAccount").inputs
    assert account["publicNetworkAccess"] == "Enabled" and "networkRuleSet" not in account, (
        "dev keeps blob.publicNetworkAccess at its default: no private endpoint to pay for"
    )
    assert (account["minimumTlsVersion"], account["enableHttpsTrafficOnly"]) == ("TLS1_2", True), "TLS 1.2+ anyway"
    assert not [r.name for r in dev_with_lustre.of_type("azure-native:network:PrivateEndpoint") if "lustre" in r.name]


def test_every_storage_object_passes_the_strict_schema(prod_recording: Recording, dev_with_lustre: Recording) -> None:
    for recording in (prod_recording, dev_with_lustre):
        storage_objects = [
            r
            for r in recording.kubernetes_objects()
            if r.name.removeprefix("platform-").startswith(("lustre-", "blob-classes-"))
        ]
        assert len(storage_objects) >= 5
        for r in storage_objects:
            status, detail = validate_object(kubernetes_object(r), SCHEMA)
            assert status == "valid", f"{r.name}: {detail}"


def test_plan_shows_size_throughput_and_that_resizing_means_a_new_filesystem(prod_recording: Recording) -> None:
    line = describe(prod_recording.one(FILESYSTEM))
    assert "64 TiB AMLFS-Durable-Premium-250" in line
    assert "throughput=16000 MB/s" in line, "64 TiB x 250 MB/s per TiB"
    assert "resize = new filesystem + copy" in line and "[protected]" in line


def test_customer_managed_key_sets_identity_and_key(
    build: Callable[[Callable[[], Any]], Recording], stack_config: Callable[[str], dict[str, Any]]
) -> None:
    settings = _lustre_settings(stack_config, "prod")
    base = "/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/sec/providers"
    settings["encryption"] = {
        "keyUrl": "https://kv-aksgpu.vault.azure.net/keys/amlfs",
        "keyVaultId": f"{base}/Microsoft.KeyVault/vaults/kv-aksgpu",
        "userAssignedIdentityId": f"{base}/Microsoft.ManagedIdentity/userAssignedIdentities/id-amlfs",
    }

    def program() -> None:
        LustreStorage(
            "lustre",
            {
                "cluster": cluster_handle(),
                "lustre_subnet_id": "subnet-id",
                "private_endpoints_subnet_id": "pe-subnet-id",
                "vnet_id": "vnet-id",
                "settings": _validated(settings),
            },
        )

    i = build(program).one(FILESYSTEM).inputs
    assert i["encryptionSettings"]["keyEncryptionKey"] == {
        "keyUrl": settings["encryption"]["keyUrl"],
        "sourceVault": {"id": settings["encryption"]["keyVaultId"]},
    }
    assert i["identity"] == {
        "type": "UserAssigned",
        "userAssignedIdentities": [settings["encryption"]["userAssignedIdentityId"]],
    }, "the filesystem reads its key as this identity"


def test_subnet_sizes_follow_capacity() -> None:
    assert [required_subnet_prefix(c) for c in (4, 16, 20, 40, 44, 92, 96, 196, 200, 400)] == [
        27,
        27,
        26,
        26,
        25,
        25,
        24,
        24,
        23,
        23,
    ]


def _enabled_dev(stack_config: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    settings = settings_of(stack_config("dev"))
    settings["storage"]["lustre"]["enabled"] = True
    return settings


def _lustre(settings: dict[str, Any]) -> dict[str, Any]:
    return settings["storage"]["lustre"]


def _large_on_small_subnet(settings: dict[str, Any]) -> None:
    _lustre(settings)["capacityTiB"] = 48
    settings["network"]["subnets"]["lustre"] = "10.40.8.0/26"


# (why, how to break an enabled dev config, field path that must be named, text the message must contain)
BROKEN: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    (
        "capacity off the SKU's steps",
        lambda s: _lustre(s).update(capacityTiB=10),
        "storage.lustre.capacityTiB",
        "steps of 4 TiB",
    ),
    (
        "capacity below the SKU minimum",
        lambda s: _lustre(s).update(sku="AMLFS-Durable-Premium-40", capacityTiB=24),
        "storage.lustre.capacityTiB",
        "48-12768 TiB",
    ),
    (
        "subnet too small for the capacity",
        _large_on_small_subnet,
        "network.subnets.lustre",
        "needs a /25",
    ),
    (
        "missing maintenance window",
        lambda s: _lustre(s).pop("maintenanceWindow"),
        "storage.lustre.maintenanceWindow",
        "missing",
    ),
    (
        "maintenance time that is not HH:MM",
        lambda s: _lustre(s)["maintenanceWindow"].update(timeOfDayUtc="2am"),
        "storage.lustre.maintenanceWindow.timeOfDayUtc",
        "pattern",
    ),
    (
        "CPU pool on an OS the Lustre client does not support",
        lambda s: s["cpuPool"].update(osSku="AzureLinux"),
        "cpuPool.osSku",
        "must run Ubuntu",
    ),
    (
        "GPU pool on an OS the Lustre client does not support",
        lambda s: s["gpuPools"][0].update(osSku="AzureLinux"),
        "gpuPools[0].osSku",
        "must run Ubuntu",
    ),
    (
        "size too slow for the throughput target",
        lambda s: _lustre(s).update(throughputTargetMBps=10000),
        "storage.lustre.capacityTiB",
        "capacityTiB 20 would",
    ),
    (
        "throughput no size of the SKU reaches",
        # 512,500 MB/s: past AMLFS-125's 4,096 TiB x 125 and every other tier's maximum but AMLFS-20's.
        lambda s: _lustre(s).update(sku="AMLFS-Durable-Premium-125", capacityTiB=16, throughputTargetMBps=512500),
        "storage.lustre.capacityTiB",
        "AMLFS-Durable-Premium-20 at 25632 TiB",
    ),
    ("unknown SKU", lambda s: _lustre(s).update(sku="AMLFS-Premium-1000"), "storage.lustre.sku", "AMLFS-Durable"),
    (
        "same container for data and logs",
        lambda s: _lustre(s)["blob"].update(loggingContainer="lustre-data"),
        "storage.lustre.blob.loggingContainer",
        "differ",
    ),
    (
        "premium class on a standard SKU",
        lambda s: s["storage"]["blobClasses"]["premium"].update(skuName="Standard_LRS"),
        "storage.blobClasses.premium.skuName",
        "Premium_",
    ),
]


@pytest.mark.parametrize(("why", "breaker", "field", "hint"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_storage_setting_is_rejected_naming_the_field(
    stack_config: Callable[[str], dict[str, Any]],
    why: str,
    breaker: Callable[[dict[str, Any]], None],
    field: str,
    hint: str,
) -> None:
    settings = _enabled_dev(stack_config)
    breaker(settings)
    assert_rejected(settings, why, field, hint)


def test_existing_lustre_subnet_is_checked_against_the_capacity(
    stack_config: Callable[[str], dict[str, Any]],
) -> None:
    settings = _enabled_dev(stack_config)
    base = "/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/hub/providers/Microsoft.Network"
    settings["network"] = {
        "existingSubnets": {
            "vnetId": f"{base}/virtualNetworks/spoke",
            "nodesSubnetId": f"{base}/virtualNetworks/spoke/subnets/nodes",
            "lustreSubnetId": f"{base}/virtualNetworks/spoke/subnets/lustre",
            "privateEndpointsSubnetId": f"{base}/virtualNetworks/spoke/subnets/pe",
            "nodesSubnetCidr": "10.60.0.0/22",
            "lustreSubnetCidr": "10.60.8.0/27",
        }
    }
    _lustre(settings)["capacityTiB"] = 32
    with pytest.raises(ConfigError) as caught:
        load_platform_config(settings)
    assert "network.existingSubnets.lustreSubnetCidr:" in str(caught.value), str(caught.value)


def test_unsupported_os_is_fine_while_lustre_is_off(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    settings["cpuPool"]["osSku"] = "AzureLinux"
    lustre = load_platform_config(settings).storage.lustre
    assert lustre is None or not lustre.enabled, "only pools that mount Lustre are bound"


def test_a_private_hsm_account_without_its_network_fails_naming_both_args(
    build: Callable[[Callable[[], Any]], Recording], stack_config: Callable[[str], dict[str, Any]]
) -> None:
    settings = _lustre_settings(stack_config, "prod")
    assert settings["blob"]["publicNetworkAccess"] is False, "prod keeps the HSM account private"

    def program() -> None:
        args: LustreStorageArgs = {
            "cluster": cluster_handle(),
            "lustre_subnet_id": "subnet-id",
            "settings": _validated(settings),
        }
        LustreStorage("lustre", args)

    with pytest.raises(ValueError, match="private_endpoints_subnet_id and vnet_id"):
        build(program)
