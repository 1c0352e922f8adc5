"""List prices for the plan's monthly estimate, kept as data: each row with its region, source and date.

Rows are keyed by region (`region -> item -> Price`). A stack is priced from its own region's rows;
where its region has none, a row of another region stands in and every cost line it feeds says so
("eastus price, no koreacentral source"); where no region has one, the line is named as unpriced.

What is here, honestly: no Korea Central (`koreacentral`) list price could be read while this table
was written (no network; the Retail Prices API, https://prices.azure.com/api/retail/prices, was out of
reach, and the dated published copies found offline, SkyPilot's generated Azure catalog and a 2026-11-09
capture of the API, cover US regions only). The VM rows are East US (`eastus`) Linux pay-as-you-go
list prices; Korea Central list prices differ (usually higher). Rows whose source names no region are
kept under `unstated`. Rows marked `estimate` come from a secondary source or a figure that could not be
checked against a dated copy at all. docs/plan.md shows the API query that fills in Korea Central rows.

Usage-priced services (log and metric ingestion, Grafana users, storage transactions, egress) are never
counted in the floor or ceiling; the plan states their estimated volume where the stack fixes it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
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


# Spot (scaleSetPriority Spot) hourly prices, East US Linux, from the same SkyPilot copy's SpotPrice column. Spot
# prices move with spare capacity: these are that copy's figures, not a promise. Sizes whose copy gives a Spot price
# equal to on-demand (the H100 sizes) or none are left out: a Spot pool of them is priced at on-demand, as an estimate.
SPOT_HOURLY: dict[str, Price] = {
    "Standard_NC4as_T4_v3": _eastus(0.062699),
    "Standard_NC8as_T4_v3": _eastus(0.089638),
    "Standard_NC16as_T4_v3": _eastus(0.143517),
    "Standard_NC64as_T4_v3": _eastus(0.518758),
    "Standard_NV36ads_A10_v5": _eastus(0.8),
    "Standard_NV36adms_A10_v5": _eastus(1.13),
    "Standard_NV72ads_A10_v5": _eastus(1.63),
    "Standard_NC24ads_A100_v4": _eastus(0.444433),
    "Standard_NC48ads_A100_v4": _eastus(0.888866),
    "Standard_NC96ads_A100_v4": _eastus(1.777732),
    "Standard_ND96asr_v4": _eastus(2.99167),
    "Standard_ND96amsr_A100_v4": _eastus(3.6047),
}


def vm_hour_price(vm_size: str, spot: bool = False) -> Price | None:
    """One VM-hour of `vm_size`; for a Spot pool its sourced Spot price, else on-demand marked as an estimate
    (Spot never bills more than on-demand: Azure evicts a Spot VM whose price would exceed it)."""
    on_demand = VM_HOURLY.get(vm_size)
    if not spot or on_demand is None:
        return on_demand
    return SPOT_HOURLY.get(vm_size) or replace(on_demand, estimate=True)


def gpu_hour_price(vm_size: str, gpus_per_vm: int, spot: bool = False) -> Price | None:
    """List price of one GPU-hour on `vm_size`: the VM's hourly price shared by its GPUs (None when unpriced).

    Chargeback bills a team for the GPUs it holds, so a GPU-hour carries its share of the whole VM
    (CPU, memory, disks and network included); on a Spot pool, of the Spot VM-hour."""
    vm = vm_hour_price(vm_size, spot)
    if vm is None or gpus_per_vm <= 0:
        return None
    return Price(round(vm.usd / gpus_per_vm, 4), "hour", vm.region, vm.source, vm.read_on, vm.estimate)


GLOBAL = "global"
"""A row the source gives as the same price in every region."""
UNSTATED = "unstated"
"""A row whose source names no region."""
EASTUS = "eastus"

RegionalTable = dict[str, dict[str, Price]]
"""region -> item -> price."""

VM_HOURLY_BY_REGION: RegionalTable = {EASTUS: VM_HOURLY}
SPOT_HOURLY_BY_REGION: RegionalTable = {EASTUS: SPOT_HOURLY}

# AKS cluster management fee per cluster-hour (https://azure.microsoft.com/pricing/details/kubernetes-service/).
# Standard's 0.10 is quoted from that page by a secondary source (techmarmot.com, AKS pricing tiers, read
# 2026-12-02) without a region; Premium's 0.60 (Standard plus Long Term Support) could not be read offline.
_AKS_PAGE = "https://azure.microsoft.com/pricing/details/kubernetes-service/"
AKS_TIER_HOURLY: RegionalTable = {
    GLOBAL: {
        "Free": Price(
            0.0, "hour", GLOBAL, "https://learn.microsoft.com/azure/aks/free-standard-pricing-tiers", _CATALOG_READ
        ),
    },
    UNSTATED: {
        "Standard": Price(0.10, "hour", UNSTATED, _AKS_PAGE, _CATALOG_READ, estimate=True),
        "Premium": Price(0.60, "hour", UNSTATED, _AKS_PAGE, _CATALOG_READ, estimate=True),
    },
}

# Managed OS disks: AKS uses Premium SSD on sizes that support it (every size in the catalogs), billed per
# disk size tier; P10 covers up to 128 GiB at 19.71 USD a month (mattrobinsonsre/terrapod issue #1007,
# 2026-07-22, region not stated). Larger disks fall in dearer tiers that are not in this table.
MANAGED_OS_DISK_MONTHLY: RegionalTable = {
    UNSTATED: {
        "P10 (128 GiB)": Price(
            19.71, "month", UNSTATED, "https://github.com/mattrobinsonsre/terrapod/issues/1007", _CATALOG_READ, True
        ),
    },
}
MANAGED_OS_DISK_TIERS: dict[int, str] = {128: "P10 (128 GiB)"}
"""Largest disk size in GiB each priced tier covers."""

# Container registry per day (https://azure.microsoft.com/pricing/details/container-registry/): the MS Learn
# SKU page (container-registry-skus) gives Basic at 0.167 USD a day without a region; Premium's 1.667 could
# not be checked against a dated copy of the pricing page offline.
REGISTRY_DAILY: RegionalTable = {
    UNSTATED: {
        "Basic": Price(
            0.167,
            "day",
            UNSTATED,
            "https://learn.microsoft.com/azure/container-registry/container-registry-skus",
            _CATALOG_READ,
        ),
        "Premium": Price(
            1.667,
            "day",
            UNSTATED,
            "https://azure.microsoft.com/pricing/details/container-registry/",
            _CATALOG_READ,
            True,
        ),
    },
}

# Private endpoints bill per hour plus data processed (https://azure.microsoft.com/pricing/details/private-link/).
PRIVATE_ENDPOINT_HOURLY: RegionalTable = {
    UNSTATED: {
        "endpoint": Price(
            0.01, "hour", UNSTATED, "https://azure.microsoft.com/pricing/details/private-link/", _CATALOG_READ, True
        ),
    },
}

# Azure NetApp Files capacity pools bill the provisioned size per GiB-hour by service level
# (https://azure.microsoft.com/pricing/details/netapp/). The one figure read offline is Microsoft's worked
# example for Premium, "$0.000403 per GiB/hour (pricing depending on the region)" (learn.microsoft.com/azure/
# azure-netapp-files/azure-netapp-files-cost-model, read 2026-12-02): an example, not a region's list price.
# Standard, Ultra and Flexible (capacity plus throughput per MiB/s-hour) have no row.
NETAPP_POOL_GIB_HOURLY: RegionalTable = {
    UNSTATED: {
        "Premium": Price(
            0.000403,
            "hour",
            UNSTATED,
            "https://learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-cost-model",
            _CATALOG_READ,
            estimate=True,
        ),
    },
}

# Azure Managed Lustre bills the provisioned capacity per GiB-hour by throughput tier
# (https://azure.microsoft.com/pricing/details/managed-lustre/); Managed Grafana Standard bills per instance-hour
# (two Standard units for X1) plus zone redundancy and active users (https://azure.microsoft.com/pricing/details/
# managed-grafana/); Defender for Containers bills per vCore-hour of the protected nodes
# (https://azure.microsoft.com/pricing/details/defender-for-cloud/); a Standard load balancer and its outbound
# public IP bill per hour and rule; a private DNS zone per zone-month. No dated copy of any of these prices, for
# any region, could be read offline, so these tables have no rows yet: the plan names each as unpriced.
AMLFS_TIB_MONTHLY: RegionalTable = {}
GRAFANA_INSTANCE_HOURLY: RegionalTable = {}
DEFENDER_CONTAINERS_VCORE_HOURLY: RegionalTable = {}
OUTBOUND_LOAD_BALANCER_HOURLY: RegionalTable = {}
PRIVATE_DNS_ZONE_MONTHLY: RegionalTable = {}

PRICE_TABLES: dict[str, RegionalTable] = {
    "VM": VM_HOURLY_BY_REGION,
    "Spot VM": SPOT_HOURLY_BY_REGION,
    "AKS tier": AKS_TIER_HOURLY,
    "managed OS disk": MANAGED_OS_DISK_MONTHLY,
    "container registry": REGISTRY_DAILY,
    "private endpoint": PRIVATE_ENDPOINT_HOURLY,
    "NetApp Files pool": NETAPP_POOL_GIB_HOURLY,
    "Managed Lustre": AMLFS_TIB_MONTHLY,
    "Managed Grafana": GRAFANA_INSTANCE_HOURLY,
    "Defender for Containers": DEFENDER_CONTAINERS_VCORE_HOURLY,
    "outbound load balancer": OUTBOUND_LOAD_BALANCER_HOURLY,
    "private DNS zone": PRIVATE_DNS_ZONE_MONTHLY,
}
"""Every table, by what it prices (the tests hold each row to its region, source and date)."""

_STAND_INS = (GLOBAL, EASTUS, UNSTATED)
"""Where a row is looked for when the stack's region has none, in this order; each use but GLOBAL is marked."""


def regional_price(table: RegionalTable, item: str, region: str) -> Price | None:
    """The row for `item` in `region`, else a stand-in from another region (the caller marks it), else None."""
    for where in (region, *_STAND_INS):
        price = table.get(where, {}).get(item)
        if price is not None:
            return price
    return None


def region_note(price: Price, region: str) -> str:
    """Empty when `price` is `region`'s own (or the same everywhere); otherwise what it stands in for."""
    if price.region in (region, GLOBAL):
        return ""
    if price.region == UNSTATED:
        return f"price without a stated region, no {region} source"
    return f"{price.region} price, no {region} source"
