"""Azure Managed Lustre SKUs (size rules and throughput) and the subnet each capacity needs.

AMLFS-Durable-Premium-20: "Capacity increments by tier: 96, 48, 16, 8, and 4 TiB" for tiers 20, 40, 125, 250
and 500, and "Each capacity increment provides 2,000 MB/s" (MicrosoftDocs/azure-stack-docs
azure-managed-lustre/mlperf-storage-v3-results.md, doc date 2026-09-01): 2000/96 = 20.8 MB/s per TiB, kept as 20
(the catalog's whole MB/s per TiB, rounded down so a throughput target is never promised short). Its minimum
and maximum are not published: one increment (96 TiB) is the minimum, and the maximum is the largest size
Microsoft has published running, 25,632 TiB (the same MLPerf runs); larger needs a support request.

Tiers 40 to 500: minimum, step and maximum from Microsoft's table in Azure/ai-infrastructure-on-azure
storage_references/aks/shared_storage/README.md ("Available SKUs", commit a01b0731; the maximums last changed
2025-07-24): 12.5 PiB, 4 PiB, 2 PiB and 1 PiB. The maximum kept is the largest whole step within it (12.5 PiB is
12,800 TiB, not a multiple of 48: 12,768). Microsoft Learn's older table (create-file-system-portal.md, ms.date
2024-11-11) stopped at 768 and 128 TiB, with larger sizes on request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

AmlfsSkuName = Literal[
    "AMLFS-Durable-Premium-20",
    "AMLFS-Durable-Premium-40",
    "AMLFS-Durable-Premium-125",
    "AMLFS-Durable-Premium-250",
    "AMLFS-Durable-Premium-500",
]


@dataclass(frozen=True)
class AmlfsSku:
    """Capacity rules of one SKU: a filesystem is min..max TiB in whole steps, billed for all of it."""

    min_tib: int
    max_tib: int
    step_tib: int
    mbps_per_tib: int

    def sizes(self) -> range:
        return range(self.min_tib, self.max_tib + 1, self.step_tib)

    def allows(self, capacity_tib: int) -> bool:
        return self.min_tib <= capacity_tib <= self.max_tib and capacity_tib % self.step_tib == 0

    def throughput_mbps(self, capacity_tib: int) -> int:
        """Aggregate throughput: capacity x the SKU's MB/s per TiB."""
        return capacity_tib * self.mbps_per_tib

    def smallest_size_for(self, target_mbps: int) -> int | None:
        """Smallest allowed capacity that reaches target_mbps, or None if even max cannot."""
        needed = max(self.min_tib, math.ceil(target_mbps / self.mbps_per_tib))
        size = math.ceil(needed / self.step_tib) * self.step_tib
        return size if size <= self.max_tib else None


AMLFS_SKUS: dict[str, AmlfsSku] = {
    # Unpublished min/max: one 96 TiB increment .. the largest published deployment (see the module docstring).
    "AMLFS-Durable-Premium-20": AmlfsSku(min_tib=96, max_tib=25632, step_tib=96, mbps_per_tib=20),
    # Published maximums (see the module docstring), each the largest whole step within it.
    "AMLFS-Durable-Premium-40": AmlfsSku(min_tib=48, max_tib=12768, step_tib=48, mbps_per_tib=40),
    "AMLFS-Durable-Premium-125": AmlfsSku(min_tib=16, max_tib=4096, step_tib=16, mbps_per_tib=125),
    "AMLFS-Durable-Premium-250": AmlfsSku(min_tib=8, max_tib=2048, step_tib=8, mbps_per_tib=250),
    "AMLFS-Durable-Premium-500": AmlfsSku(min_tib=4, max_tib=1024, step_tib=4, mbps_per_tib=500),
}

# Largest capacity (TiB) each subnet prefix holds (MicrosoftDocs azure-managed-lustre amlfs-prerequisites.md;
# the published table stops at 400 TiB).
_SUBNET_BY_CAPACITY: list[tuple[int, int]] = [(16, 27), (40, 26), (92, 25), (196, 24), (400, 23)]
_PUBLISHED_LIMIT_TIB, _PUBLISHED_LIMIT_PREFIX = _SUBNET_BY_CAPACITY[-1]

# The CSI node plugin lifts this taint from its node once Lustre is ready (kubernetes-sigs/azurelustre-csi-driver
# docs/driver-parameters.md `--remove-not-ready-taint`, default true); it never adds it.
LUSTRE_STARTUP_TAINT_KEY = "azurelustre.csi.azure.com/agent-not-ready"


def required_subnet_prefix(capacity_tib: int) -> int:
    """The longest prefix (smallest subnet) Azure accepts for a filesystem of capacity_tib.

    Above the published 400 TiB the table's own rule is continued, conservatively: every doubling of capacity
    doubles the addresses (one bit shorter), so 800 TiB needs a /22, AMLFS-40's 12,768 TiB a /18 and AMLFS-20's
    25,632 TiB a /16. Azure's
    `getRequiredAmlFSSubnetsSize` action gives the exact figure; a smaller subnet it accepts can be handed in.
    """
    for limit, prefix in _SUBNET_BY_CAPACITY:
        if capacity_tib <= limit:
            return prefix
    return _PUBLISHED_LIMIT_PREFIX - math.ceil(math.log2(capacity_tib / _PUBLISHED_LIMIT_TIB))
