"""Storage section: Azure Managed Lustre with Blob integration and storage classes."""

from __future__ import annotations

from .base import ConfigModel


class StorageConfig(ConfigModel):
    lustre_enabled: bool = False
