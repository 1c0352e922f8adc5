"""List prices for the plan's monthly estimate, kept as data: each with its region, source and date.

What is here, honestly: Azure's retail prices could not be read for Korea Central while this table
was written (no network; the Retail Prices API, https://prices.azure.com/api/retail/prices, was out of
reach). The VM rows are East US (`eastus`) Linux pay-as-you-go list prices from published copies of
that API's answers; Korea Central list prices differ (usually higher). Rows marked `estimate` come
from a secondary source or a figure that could not be checked against a dated copy at all. Replace
rows with Korea Central figures from the Retail Prices API (docs/plan.md shows the query) and update
`region`/`read_on`; the plan prints whatever region and date the rows carry.

Usage-priced services (log and metric ingestion, Grafana users, storage transactions, egress) and
services without a price here (Azure Managed Lustre) are listed by the plan as not included, never
counted as zero.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

HOURS_PER_MONTH = 730
"""Azure's pricing calculator month."""
DAYS_PER_MONTH = HOURS_PER_MONTH / 24

PriceUnit = Literal["hour", "day", "month"]


@dataclass(frozen=True)
class Price:
    """One list price in USD and where it was read."""

    usd: float
    unit: PriceUnit
    region: str
    source: str
    read_on: datetime.date
    estimate: bool = False
    """True when the figure is not from a dated copy of Azure's own price list for this item."""

    @property
    def monthly(self) -> float:
        """USD for one unit running the whole month."""
        if self.unit == "hour":
            return self.usd * HOURS_PER_MONTH
        if self.unit == "day":
            return self.usd * DAYS_PER_MONTH
        return self.usd


# SkyPilot's Azure catalog, generated from the Retail Prices API (Linux, pay-as-you-go, per region):
# skypilot-org/skypilot-catalog catalogs/v6/azure/vms.csv at 098741e7 (undated generation), read 2026-12-02.
_SKYPILOT = "https://github.com/skypilot-org/skypilot-catalog/blob/098741e7/catalogs/v6/azure/vms.csv"
# Retail Prices API answers published 2026-11-09 (datareceipts/data-receipts 109-gpu-pricing: hyperscalers.json,
# compare.json, README); newer than the SkyPilot copy where both list a size, so preferred there.
_RECEIPTS = "https://github.com/datareceipts/data-receipts/tree/main/109-gpu-pricing"
_CATALOG_READ = datetime.date(2026, 12, 2)
_RECEIPTS_READ = datetime.date(2026, 11, 9)


def _eastus(usd: float, source: str = _SKYPILOT, read_on: datetime.date = _CATALOG_READ) -> Price:
    return Price(usd, "hour", "eastus", source, read_on)


def _ddsv5(vcpus: int) -> Price:
    # The catalog lists D32ds_v5 1.808, D48ds_v5 2.712 and D96ds_v5 5.424 USD/h: 0.0565 per vCPU-hour.
    # The smaller sizes are priced at that rate, hence estimates.
    return Price(
        round(0.0565 * vcpus, 4), "hour", "eastus", _SKYPILOT, _CATALOG_READ, estimate=vcpus not in (32, 48, 96)
    )


VM_HOURLY: dict[str, Price] = {
    "Standard_D2ds_v5": _ddsv5(2),
    "Standard_D4ds_v5": _ddsv5(4),
    "Standard_D8ds_v5": _ddsv5(8),
    "Standard_D16ds_v5": _ddsv5(16),
    "Standard_D32ds_v5": _ddsv5(32),
    "Standard_D48ds_v5": _ddsv5(48),
    "Standard_D64ds_v5": _ddsv5(64),
    "Standard_D96ds_v5": _ddsv5(96),
    "Standard_NC4as_T4_v3": _eastus(0.526),
    "Standard_NC8as_T4_v3": _eastus(0.752),
    "Standard_NC16as_T4_v3": _eastus(1.204),
    "Standard_NC64as_T4_v3": _eastus(4.352),
    "Standard_NV36ads_A10_v5": _eastus(3.2),
    "Standard_NV36adms_A10_v5": _eastus(4.52),
    "Standard_NV72ads_A10_v5": _eastus(6.52),
    "Standard_NC24ads_A100_v4": _eastus(3.673, _RECEIPTS, _RECEIPTS_READ),
    "Standard_NC48ads_A100_v4": _eastus(9.554, _RECEIPTS, _RECEIPTS_READ),
    "Standard_NC96ads_A100_v4": _eastus(19.108, _RECEIPTS, _RECEIPTS_READ),
    "Standard_NC40ads_H100_v5": _eastus(6.98, _RECEIPTS, _RECEIPTS_READ),
    "Standard_NC80adis_H100_v5": _eastus(17.64, _RECEIPTS, _RECEIPTS_READ),
    # compare.json: 3.3996 USD per GPU-hour x 8 GPUs.
    "Standard_ND96asr_v4": _eastus(27.197, _RECEIPTS, _RECEIPTS_READ),
    "Standard_ND96amsr_A100_v4": _eastus(32.77),
    # README: 12.29 USD per GPU-hour x 8; the SkyPilot copy has the same 98.32.
    "Standard_ND96isr_H100_v5": _eastus(98.32, _RECEIPTS, _RECEIPTS_READ),
    # Standard_ND96isr_H200_v5: no published price found offline; pools of it are left out of the estimate.
}


def gpu_hour_price(vm_size: str, gpus_per_vm: int) -> Price | None:
    """List price of one GPU-hour on `vm_size`: the VM's hourly price shared by its GPUs (None when unpriced).

    Chargeback bills a team for the GPUs it holds, so a GPU-hour carries its share of the whole VM
    (CPU, memory, disks and network included)."""
    vm = VM_HOURLY.get(vm_size)
    if vm is None or gpus_per_vm <= 0:
        return None
    return Price(round(vm.usd / gpus_per_vm, 4), "hour", vm.region, vm.source, vm.read_on, vm.estimate)


# AKS cluster management fee per cluster-hour (https://azure.microsoft.com/pricing/details/kubernetes-service/).
# Standard's 0.10 is quoted from that page by a secondary source (techmarmot.com, AKS pricing tiers, read
# 2026-12-02); Premium's 0.60 (Standard plus Long Term Support) could not be read offline.
_AKS_PAGE = "https://azure.microsoft.com/pricing/details/kubernetes-service/"
AKS_TIER_HOURLY: dict[str, Price] = {
    "Free": Price(
        0.0, "hour", "global", "https://learn.microsoft.com/azure/aks/free-standard-pricing-tiers", _CATALOG_READ
    ),
    "Standard": Price(0.10, "hour", "global", _AKS_PAGE, _CATALOG_READ, estimate=True),
    "Premium": Price(0.60, "hour", "global", _AKS_PAGE, _CATALOG_READ, estimate=True),
}

# Managed OS disks: AKS uses Premium SSD on sizes that support it (every size in the catalogs), billed per
# disk size tier; P10 covers up to 128 GiB at 19.71 USD a month (mattrobinsonsre/terrapod issue #1007,
# 2026-07-22, region not stated). Larger disks fall in dearer tiers that are not in this table.
MANAGED_OS_DISK_MONTHLY: dict[int, Price] = {
    128: Price(
        19.71, "month", "unstated", "https://github.com/mattrobinsonsre/terrapod/issues/1007", _CATALOG_READ, True
    ),
}

# Container registry per day (https://azure.microsoft.com/pricing/details/container-registry/): the MS Learn
# SKU page (container-registry-skus) gives Basic at 0.167 USD a day; Premium's 1.667 could not be checked
# against a dated copy of the pricing page offline.
REGISTRY_DAILY: dict[str, Price] = {
    "Basic": Price(
        0.167,
        "day",
        "global",
        "https://learn.microsoft.com/azure/container-registry/container-registry-skus",
        _CATALOG_READ,
    ),
    "Premium": Price(
        1.667, "day", "global", "https://azure.microsoft.com/pricing/details/container-registry/", _CATALOG_READ, True
    ),
}

# Private endpoints bill per hour plus data processed (https://azure.microsoft.com/pricing/details/private-link/).
PRIVATE_ENDPOINT_HOURLY = Price(
    0.01, "hour", "global", "https://azure.microsoft.com/pricing/details/private-link/", _CATALOG_READ, estimate=True
)

# Azure Managed Lustre bills the provisioned capacity per GiB-hour by throughput tier
# (https://azure.microsoft.com/pricing/details/managed-lustre/); no dated copy of those prices could be read
# offline, so the table has no rows and the plan names Lustre among what the estimate leaves out.
AMLFS_TIB_MONTHLY: dict[str, Price] = {}

# Billed by use, so never part of a floor or ceiling here; the plan lists the ones the stack creates.
USAGE_PRICED: dict[str, str] = {
    "azure-native:operationalinsights:Workspace": "Log Analytics: per GB ingested and retained",
    "azure-native:monitor:AzureMonitorWorkspace": "Managed Prometheus: per sample ingested and query",
    "azure-native:dashboard:Grafana": "Managed Grafana: per instance-hour and active user (no price in the table)",
    "azure-native:storage:StorageAccount": "Blob storage: per GB stored and per transaction",
}
