"""Azure Managed Lustre SKUs (size rules and throughput) and the subnet each capacity needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

AmlfsSkuName = Literal[
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
    "AMLFS-Durable-Premium-40": AmlfsSku(min_tib=48, max_tib=768, step_tib=48, mbps_per_tib=40),
    "AMLFS-Durable-Premium-125": AmlfsSku(min_tib=16, max_tib=128, step_tib=16, mbps_per_tib=125),
    "AMLFS-Durable-Premium-250": AmlfsSku(min_tib=8, max_tib=128, step_tib=8, mbps_per_tib=250),
    "AMLFS-Durable-Premium-500": AmlfsSku(min_tib=4, max_tib=128, step_tib=4, mbps_per_tib=500),
}

# Largest capacity (TiB) each subnet prefix holds; above 400 TiB a /22 is assumed.
_SUBNET_BY_CAPACITY: list[tuple[int, int]] = [(16, 27), (40, 26), (92, 25), (196, 24), (400, 23)]


def required_subnet_prefix(capacity_tib: int) -> int:
    """The longest prefix (smallest subnet) Azure accepts for a filesystem of capacity_tib."""
    for limit, prefix in _SUBNET_BY_CAPACITY:
        if capacity_tib <= limit:
            return prefix
    return 22
