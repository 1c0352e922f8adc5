"""Azure regions where the platform can be created: a dated catalog with each region's availability zones.

Source: the ARM Locations API (`az account list-locations`) as cached by Azure Verified Modules,
Azure/terraform-azurerm-avm-utl-regions `modules/cached-data/locations.tf.json` at commit e9d62409
(2026-03-12), read 2026-12-03: every `regionType: Physical` entry, except the canary (`*euap`) and
staging (`*stg`) regions that only allow-listed subscriptions reach. `zones` is the number of
`availabilityZoneMappings`: 0 for a region without availability zones.

A region missing here is a config error with the closest names; add a row (with this source, or
your subscription's `az account list-locations`) to use a region Azure added since.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CATALOG_SOURCE = "Azure/terraform-azurerm-avm-utl-regions modules/cached-data/locations.tf.json @ e9d62409 (2026-03-12)"


@dataclass(frozen=True)
class Region:
    display_name: str
    zones: int
    """Availability zones the region offers (0: none, so pools cannot name zones)."""


REGIONS: dict[str, Region] = {
    "australiacentral": Region("Australia Central", zones=0),
    "australiacentral2": Region("Australia Central 2", zones=0),
    "australiaeast": Region("Australia East", zones=3),
    "australiasoutheast": Region("Australia Southeast", zones=0),
    "austriaeast": Region("Austria East", zones=3),
    "belgiumcentral": Region("Belgium Central", zones=3),
    "brazilsouth": Region("Brazil South", zones=3),
    "brazilsoutheast": Region("Brazil Southeast", zones=0),
    "canadacentral": Region("Canada Central", zones=3),
    "canadaeast": Region("Canada East", zones=0),
    "centralindia": Region("Central India", zones=3),
    "centralus": Region("Central US", zones=3),
    "chilecentral": Region("Chile Central", zones=3),
    "denmarkeast": Region("Denmark East", zones=3),
    "eastasia": Region("East Asia", zones=3),
    "eastus": Region("East US", zones=3),
    "eastus2": Region("East US 2", zones=3),
    "francecentral": Region("France Central", zones=3),
    "francesouth": Region("France South", zones=0),
    "germanynorth": Region("Germany North", zones=0),
    "germanywestcentral": Region("Germany West Central", zones=3),
    "indonesiacentral": Region("Indonesia Central", zones=3),
    "israelcentral": Region("Israel Central", zones=3),
    "italynorth": Region("Italy North", zones=3),
    "japaneast": Region("Japan East", zones=3),
    "japanwest": Region("Japan West", zones=3),
    "jioindiacentral": Region("Jio India Central", zones=0),
    "jioindiawest": Region("Jio India West", zones=0),
    "koreacentral": Region("Korea Central", zones=3),
    "koreasouth": Region("Korea South", zones=0),
    "malaysiawest": Region("Malaysia West", zones=3),
    "mexicocentral": Region("Mexico Central", zones=3),
    "newzealandnorth": Region("New Zealand North", zones=3),
    "northcentralus": Region("North Central US", zones=0),
    "northeurope": Region("North Europe", zones=3),
    "norwayeast": Region("Norway East", zones=3),
    "norwaywest": Region("Norway West", zones=0),
    "polandcentral": Region("Poland Central", zones=3),
    "qatarcentral": Region("Qatar Central", zones=3),
    "southafricanorth": Region("South Africa North", zones=3),
    "southafricawest": Region("South Africa West", zones=0),
    "southcentralus": Region("South Central US", zones=3),
    "southeastasia": Region("Southeast Asia", zones=3),
    "southindia": Region("South India", zones=0),
    "spaincentral": Region("Spain Central", zones=3),
    "swedencentral": Region("Sweden Central", zones=3),
    "switzerlandnorth": Region("Switzerland North", zones=3),
    "switzerlandwest": Region("Switzerland West", zones=0),
    "uaecentral": Region("UAE Central", zones=0),
    "uaenorth": Region("UAE North", zones=3),
    "uksouth": Region("UK South", zones=3),
    "ukwest": Region("UK West", zones=0),
    "westcentralus": Region("West Central US", zones=0),
    "westeurope": Region("West Europe", zones=3),
    "westindia": Region("West India", zones=0),
    "westus": Region("West US", zones=0),
    "westus2": Region("West US 2", zones=3),
    "westus3": Region("West US 3", zones=3),
}


def region(name: str) -> Region | None:
    return REGIONS.get(name)


def closest_regions(name: str, n: int = 3) -> list[str]:
    """Catalogued regions closest to `name`, by programmatic or display name (for "did you mean")."""
    wanted = name.lower().replace(" ", "")
    names = {key: key for key in REGIONS} | {r.display_name.lower().replace(" ", ""): k for k, r in REGIONS.items()}
    return list(dict.fromkeys(names[m] for m in difflib.get_close_matches(wanted, list(names), n=n, cutoff=0.8)))
