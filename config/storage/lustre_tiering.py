"""Tiered checkpoints on Azure Managed Lustre: hot on the filesystem, exported to Blob, imported back on demand.

Azure runs one Blob integration job per filesystem at a time: "No more than one Blob Integration job (Manual
Export, Auto Export, Import) can be run at a time" (MicrosoftDocs/azure-stack-docs azure-managed-lustre/
auto-export.md, doc date 2024-06-06). Auto-export runs continuously once enabled, so a one-off import can only
start while auto-export is paused: the deploy that carries an import sets the auto-export job's admin status to
Disable first and starts the import after it (components/storage/lustre_tiering.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from ..base import ConfigModel

BLOB_PREFIX = r"^/[^\s]*$"
BlobPrefix = Annotated[str, StringConstraints(pattern=BLOB_PREFIX)]
ConflictResolution = Literal["Fail", "Skip", "OverwriteIfDirty", "OverwriteAlways"]


class LustreImportJobConfig(ConfigModel):
    """A one-off import from the HSM container into the filesystem (e.g. restore checkpoints onto a new one)."""

    prefixes: list[BlobPrefix] = Field(
        min_length=1,
        max_length=100,
        description="Blob paths to import, each starting with /; at most 100 per job (Azure's limit)",
    )
    conflict_resolution: ConflictResolution = Field(
        default="Skip",
        description="What happens when a path already exists on Lustre: Skip keeps the filesystem's copy "
        "(a newer checkpoint is never overwritten), OverwriteIfDirty replaces changed or never-imported files",
    )
    maximum_errors: int = Field(
        default=0, ge=-1, description="Errors tolerated before the job stops: 0 the service default, -1 no limit"
    )

    @property
    def job_name(self) -> str:
        """A job runs once: its name carries a hash of its settings, so a changed import is a new job."""
        digest = hashlib.sha256(json.dumps(self.as_settings(), sort_keys=True).encode()).hexdigest()
        return f"import-{digest[:8]}"
