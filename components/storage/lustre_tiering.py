"""Tiered checkpoints: training writes checkpoints to Lustre (hot), auto-export copies them to the HSM Blob
container (durable, cheap), and an import job brings a Blob prefix back (restore onto a new filesystem, or
after a purge).

One Blob job per filesystem at a time (config/storage/lustre_tiering.py quotes Azure): when a deploy carries an import
and auto-export is on, the auto-export job is set to admin status Disable (the documented way to stop it,
`AutoExportJobAdminStatus`) and the import is created after that update; the next deploy without the import
enables auto-export again. Auto-export copies new and changed files only; it does not sync renames, permission
changes or deletions (auto-export.md), so checkpoints are written once under new names.
"""

import pulumi
import pulumi_azure_native.storagecache as storagecache

from aks_gpu_platform.config.storage.section import LustreConfig


def blob_jobs(
    name: str,
    cfg: LustreConfig,
    filesystem_name: pulumi.Input[str],
    resource_group_name: pulumi.Input[str],
    location: pulumi.Input[str],
    tags: dict[str, str],
    parent: pulumi.Resource,
) -> list[pulumi.CustomResource]:
    """The filesystem's auto-export job and one-off import job, ordered so they never run together."""
    jobs: list[pulumi.CustomResource] = []
    importing = cfg.blob.import_job
    export: storagecache.AutoExportJob | None = None
    if cfg.blob.auto_export:
        export = storagecache.AutoExportJob(
            f"{name}-auto-export",
            resource_group_name=resource_group_name,
            location=location,
            aml_filesystem_name=filesystem_name,
            auto_export_job_name="checkpoints",
            auto_export_prefixes=[cfg.blob.auto_export_prefix],
            # Paused while this deploy imports: Azure runs one Blob job at a time.
            admin_status=(
                storagecache.AutoExportJobAdminStatus.DISABLE
                if importing is not None
                else storagecache.AutoExportJobAdminStatus.ENABLE
            ),
            tags=tags,
            # Not under the protected filesystem, so auto-export can be switched off on its own.
            opts=pulumi.ResourceOptions(parent=parent, protect=False),
        )
        jobs.append(export)
    if importing is not None:
        jobs.append(
            storagecache.ImportJob(
                f"{name}-import",
                resource_group_name=resource_group_name,
                location=location,
                aml_filesystem_name=filesystem_name,
                # A new name for changed settings: a job runs once, so a changed import is a new job.
                import_job_name=importing.job_name,
                import_prefixes=list(importing.prefixes),
                conflict_resolution_mode=storagecache.ConflictResolutionMode(importing.conflict_resolution),
                maximum_errors=importing.maximum_errors,
                tags=tags,
                # Starts only once auto-export is paused.
                opts=pulumi.ResourceOptions(parent=parent, depends_on=[export] if export is not None else []),
            )
        )
    return jobs
