"""Azure Managed Lustre as of late 2026: the AMLFS-20 tier, the CSI driver's startup taint, and tiered checkpoints
(auto-export to Blob, one-off imports back) that never run two Blob jobs at once.

Facts spelled out here:
- AMLFS-Durable-Premium-20: 96 TiB increments, 2,000 MB/s each (MicrosoftDocs/azure-stack-docs
  azure-managed-lustre/mlperf-storage-v3-results.md, 2026-09-01); subnet table up to 400 TiB (amlfs-prerequisites.md).
- "No more than one Blob Integration job (Manual Export, Auto Export, Import) can be run at a time"
  (azure-managed-lustre/auto-export.md); auto-export is stopped by setting its admin status to Disable.
- The CSI node plugin removes `azurelustre.csi.azure.com/agent-not-ready:NoSchedule` from its node once ready
  (kubernetes-sigs/azurelustre-csi-driver docs/driver-parameters.md); AKS pool taints "can only be added, updated,
  or removed completely using the AKS API" (use-node-taints.md), node initialization taints can be removed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.catalog.lustre_skus import AMLFS_SKUS, required_subnet_prefix
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, settings_of
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import release_pod_templates
from tools import REPO_ROOT

PREFIX = "aks-gpu-platform:"
FILESYSTEM = "azure-native:storagecache:AmlFilesystem"
AUTO_EXPORT = "azure-native:storagecache:AutoExportJob"
IMPORT = "azure-native:storagecache:ImportJob"
STARTUP_TAINT = "azurelustre.csi.azure.com/agent-not-ready=:NoSchedule"


def _amlfs20(capacity: int, subnet: str = "10.40.8.0/24") -> dict[str, Any]:
    """dev with Lustre on, on the AMLFS-20 tier."""
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    lustre = config[PREFIX + "storage"]["lustre"]
    lustre.update({"enabled": True, "sku": "AMLFS-Durable-Premium-20", "capacityTiB": capacity})
    config[PREFIX + "network"]["subnets"]["lustre"] = subnet
    return config


def test_an_amlfs20_capacity_off_the_96_tib_step_is_rejected_naming_the_field() -> None:
    assert_rejected(
        settings_of(_amlfs20(100)), "AMLFS-20 grows in 96 TiB steps", "storage.lustre.capacityTiB", "steps of 96 TiB"
    )
    assert_rejected(settings_of(_amlfs20(48)), "one increment is the least", "storage.lustre.capacityTiB", "96-")


def test_a_valid_amlfs20_filesystem_plans() -> None:
    recording = run_stack("dev", _amlfs20(192))
    filesystem = recording.one(FILESYSTEM).inputs
    assert filesystem["sku"] == {"name": "AMLFS-Durable-Premium-20"}
    assert filesystem["storageCapacityTiB"] == 192
    assert AMLFS_SKUS["AMLFS-Durable-Premium-20"].throughput_mbps(192) <= 2 * 2000, (
        "never promise more than 2,000 MB/s per 96 TiB increment"
    )


def test_large_amlfs20_filesystems_need_larger_subnets() -> None:
    assert required_subnet_prefix(400) == 23, "the published table's last row"
    assert [required_subnet_prefix(c) for c in (480, 800, 960, 25632)] == [22, 22, 21, 16], (
        "beyond the table every doubling of capacity doubles the addresses"
    )
    assert_rejected(
        settings_of(_amlfs20(480, subnet="10.40.16.0/23")),
        "480 TiB does not fit a /23",
        "network.subnets.lustre",
        "needs a /22 or larger",
    )
    run_stack("dev", _amlfs20(480, subnet="10.40.16.0/22"))


def test_the_startup_taint_as_a_pool_taint_is_rejected() -> None:
    settings = settings_of(load_stack_file("dev", REPO_ROOT))
    settings["gpuPools"][0]["taints"] = [STARTUP_TAINT]
    assert_rejected(
        settings,
        "AKS keeps pool taints; the driver could never lift it",
        "gpuPools[0].taints[0]",
        "node initialization taint",
    )


def test_a_node_born_with_the_startup_taint_gets_the_csi_plugin_and_no_workload(prod_recording: Recording) -> None:
    pods, _ = release_pod_templates(prod_recording)
    (csi,) = [p for p in pods if "CSI node" in p.source]
    gpu_node_labels = {"pool": "gpu", "gpu-pool": "h100z1", "kubernetes.azure.com/accelerator": "nvidia"}
    taints = ["sku=gpu:NoSchedule", STARTUP_TAINT]
    assert pod_fits_node(csi.spec, gpu_node_labels, taints), (
        "the node plugin must start on a node that waits for it, or the taint is never lifted"
    )
    # A training pod tolerates the GPU pools (the gpuTolerations output) and must wait for the driver.
    workload = {"nodeSelector": {"pool": "gpu"}, "tolerations": prod_recording.stack_outputs["gpuTolerations"]}
    assert not pod_fits_node(workload, gpu_node_labels, taints), "workloads wait until Lustre is ready"
    assert pod_fits_node(workload, gpu_node_labels, taints[:1]), "and land once the plugin removed the taint"


def test_prod_auto_exports_checkpoints_without_an_import(prod_recording: Recording) -> None:
    (export,) = prod_recording.of_type(AUTO_EXPORT)
    assert export.inputs["adminStatus"] == "Enable" and export.inputs["autoExportPrefixes"] == ["/checkpoints"]
    assert not prod_recording.of_type(IMPORT)


def _with_import(stack: str, prefixes: list[str]) -> Recording:
    config = copy.deepcopy(load_stack_file(stack, REPO_ROOT))
    lustre = config[PREFIX + "storage"]["lustre"]
    lustre["enabled"] = True
    lustre["blob"]["importJob"] = {"prefixes": prefixes}
    return run_stack(stack, config)


def test_an_import_pauses_auto_export_first_one_blob_job_at_a_time() -> None:
    recording = _with_import("prod", ["/checkpoints/run-42"])
    (export,) = recording.of_type(AUTO_EXPORT)
    (job,) = recording.of_type(IMPORT)
    assert export.inputs["adminStatus"] == "Disable", "auto-export never finishes: it must be paused for the import"
    assert export.urn in job.depends_on, "the import starts only after the pause is applied"
    assert job.inputs["importPrefixes"] == ["/checkpoints/run-42"]
    assert job.inputs["conflictResolutionMode"] == "Skip", "a newer checkpoint on Lustre is never overwritten"
    assert job.inputs["amlFilesystemName"] == recording.one(FILESYSTEM).outputs["name"], "the filesystem's own jobs"


def test_without_auto_export_the_import_runs_alone_and_a_new_import_is_a_new_job() -> None:
    first = _with_import("dev", ["/datasets/v2"])
    assert not first.of_type(AUTO_EXPORT)
    (job,) = first.of_type(IMPORT)
    assert job.depends_on == [] or all("AutoExportJob" not in d for d in job.depends_on)
    (again,) = _with_import("dev", ["/datasets/v2"]).of_type(IMPORT)
    (other,) = _with_import("dev", ["/datasets/v3"]).of_type(IMPORT)
    assert again.inputs["importJobName"] == job.inputs["importJobName"], "the same import is not run twice"
    assert other.inputs["importJobName"] != job.inputs["importJobName"], "a job runs once: new prefixes, new job"


def test_import_prefixes_must_be_blob_paths() -> None:
    config = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    config[PREFIX + "storage"]["lustre"]["blob"]["importJob"] = {"prefixes": ["datasets"]}
    assert_rejected(settings_of(config), "paths start with /", "storage.lustre.blob.importJob.prefixes[0]", "'^/")


PUBLISHED = json.loads(((Path(__file__).parent.parent / "fixtures") / "amlfs_published_sizes.json").read_text())


def _published_max_tib(sku: dict[str, Any]) -> int:
    """The largest whole step within the published maximum: Azure takes only whole steps."""
    limit = int(sku["max_pib"] * PUBLISHED["tib_per_pib"])
    return limit - limit % sku["step_tib"]


@pytest.mark.parametrize("name", sorted(PUBLISHED["skus"]))
def test_the_catalog_allows_each_tier_up_to_microsofts_published_maximum(name: str) -> None:
    published, rules = PUBLISHED["skus"][name], AMLFS_SKUS[name]
    assert (rules.min_tib, rules.step_tib, rules.mbps_per_tib) == (
        published["min_tib"],
        published["step_tib"],
        published["mbps_per_tib"],
    )
    assert rules.max_tib == _published_max_tib(published), (
        f"{name}: Azure deploys up to {published['max_pib']} PiB ({PUBLISHED['source']['table_date']}); a lower "
        "maximum refuses sizes users can buy, a higher one lets a plan pass that Azure rejects"
    )


def test_a_filesystem_at_the_largest_published_size_validates_and_one_step_more_is_refused() -> None:
    name = "AMLFS-Durable-Premium-40"
    largest = _published_max_tib(PUBLISHED["skus"][name])
    prefix = required_subnet_prefix(largest)

    def settings(capacity: int) -> dict[str, Any]:
        config = _amlfs20(capacity, subnet=f"10.40.64.0/{prefix}")
        config[PREFIX + "storage"]["lustre"]["sku"] = name
        return settings_of(config)

    load_platform_config(settings(largest))
    assert_rejected(
        settings(largest + 48), "one step past the maximum", "storage.lustre.capacityTiB", f"48-{largest} TiB"
    )
