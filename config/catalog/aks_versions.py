"""The Kubernetes minors AKS creates clusters on, per support plan, as of a date.

Source: the "AKS Kubernetes release calendar" and "LTS versions" tables of
https://learn.microsoft.com/azure/aks/supported-kubernetes-versions
(MicrosoftDocs/azure-aks-docs, articles/aks/supported-kubernetes-versions.md, page dated
2026-08-05, repository snapshot fb060abe of 2026-08-21), read on 2026-12-02 (CATALOG_CHECKED_ON).

What the page says and how the catalog reads it:
- AKS offers a minor from its GA month (the table gives months; a region can lag a release by up
  to 10 business days, so GA counts from the last day of that month).
- Standard plan (`KubernetesOfficial`): about 12 months of community support, until the "End of
  life" column (the last day of the month unless the table gives a day). After it the minor is in
  platform support, where "Cluster creation: Not supported".
- `AKSLongTermSupport` (Premium tier): every minor from 1.29 on has an LTS track, a further year
  until "LTS End of life"; an LTS cluster can be created on the minor until then.

Which date the config checks against: CATALOG_CHECKED_ON, not the clock. A build (tests, the
offline plan, CI) then gives the same verdict on any day, and an old commit stays reproducible;
a minor ageing out shows up when the catalog is re-read and its date moved. A real run under the
Pulumi engine additionally checks today's date (config/loader.py), so a deploy never starts on a
minor AKS has stopped creating since the catalog was read.
"""

from __future__ import annotations

import calendar
import datetime
from dataclasses import dataclass
from typing import Literal

SupportPlan = Literal["KubernetesOfficial", "AKSLongTermSupport"]

CATALOG_SOURCE = "https://learn.microsoft.com/azure/aks/supported-kubernetes-versions"
CATALOG_CHECKED_ON = datetime.date(2026, 12, 2)

# AKS's own default for a new cluster is N-1 (the page's "Azure portal and CLI versions"): with
# 1.37 the newest GA minor, 1.36. It is inside both plans' windows until mid-2027.
DEFAULT_KUBERNETES_MINOR = "1.36"


def _month_end(year: int, month: int) -> datetime.date:
    return datetime.date(year, month, calendar.monthrange(year, month)[1])


@dataclass(frozen=True)
class AksMinor:
    """One Kubernetes minor on AKS: when it became GA and when each support plan ends."""

    generally_available: datetime.date
    """Last day of the "AKS GA" month: AKS creates clusters on the minor from then on."""
    community_support_end: datetime.date
    """"End of life": the last day the standard plan (KubernetesOfficial) creates clusters on it."""
    lts_end: datetime.date
    """"LTS End of life": the last day AKSLongTermSupport covers (and creates) it."""

    def support_end(self, plan: SupportPlan) -> datetime.date:
        return self.lts_end if plan == "AKSLongTermSupport" else self.community_support_end

    def creatable(self, plan: SupportPlan, on: datetime.date) -> bool:
        return self.generally_available <= on <= self.support_end(plan)


def _minor(ga: tuple[int, int], community_end: datetime.date, lts_end: tuple[int, int]) -> AksMinor:
    return AksMinor(_month_end(*ga), community_end, _month_end(*lts_end))


# minor: AKS GA month, end of community support, end of LTS (release calendar + LTS table).
AKS_MINORS: dict[str, AksMinor] = {
    "1.29": _minor((2024, 3), _month_end(2025, 3), (2026, 4)),
    "1.30": _minor((2024, 7), datetime.date(2025, 8, 22), (2026, 7)),
    "1.31": _minor((2024, 11), datetime.date(2025, 11, 1), (2026, 11)),
    "1.32": _minor((2025, 4), _month_end(2026, 3), (2027, 3)),
    "1.33": _minor((2025, 6), _month_end(2026, 7), (2027, 7)),
    "1.34": _minor((2025, 11), _month_end(2026, 11), (2027, 11)),
    "1.35": _minor((2026, 3), _month_end(2027, 3), (2028, 3)),
    "1.36": _minor((2026, 6), _month_end(2027, 6), (2028, 6)),
    "1.37": _minor((2026, 10), _month_end(2027, 10), (2028, 10)),
}


def _minor_key(minor: str) -> tuple[int, int]:
    major, _, rest = minor.partition(".")
    return int(major), int(rest)


def creatable_minors(plan: SupportPlan, on: datetime.date) -> list[str]:
    """Minors AKS creates a cluster on under `plan` on date `on`, oldest first."""
    return sorted((m for m, row in AKS_MINORS.items() if row.creatable(plan, on)), key=_minor_key)


def why_not_creatable(minor: str, plan: SupportPlan, on: datetime.date) -> str | None:
    """None when AKS creates `minor` under `plan` on `on`; otherwise the reason and what is allowed."""
    allowed = creatable_minors(plan, on)
    row = AKS_MINORS.get(minor)
    if row is None:
        reason = f"{minor} is not in the AKS version catalog (config/catalog/aks_versions.py, {CATALOG_SOURCE})"
    elif row.creatable(plan, on):
        return None
    elif on < row.generally_available:
        reason = f"{minor} is not generally available on AKS before {row.generally_available.isoformat()}"
    else:
        ended = "long-term support" if plan == "AKSLongTermSupport" else "community support"
        reason = f"{plan} stopped creating clusters on {minor} when its {ended} ended on {row.support_end(plan)}"
        if plan == "KubernetesOfficial" and row.creatable("AKSLongTermSupport", on):
            reason += " (AKSLongTermSupport on the Premium tier still covers it)"
    return f"{reason}; as of {on.isoformat()} AKS creates {plan} clusters on {allowed}"
