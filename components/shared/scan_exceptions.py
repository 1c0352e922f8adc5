"""Checks of checkov's ARM scan that a resource fails on purpose, declared beside the resource with the reason.

A component module calls `arm_scan_exception(...)` at import, next to the class that creates the
resource; `tools/arm.py` writes the reasons into the exported template in checkov's own skip syntax,
so the scan reports them as skipped with the reason. `when` limits an exception to resources whose
recorded inputs show the choice it explains (dev's public registry, say), so a stack that does not
make that choice is still checked. Nothing here reaches Azure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Inputs = Mapping[str, Any]


@dataclass(frozen=True)
class ScanException:
    type_token: str
    check_id: str
    reason: str
    when: Callable[[Inputs], bool] | None


_EXCEPTIONS: dict[tuple[str, str], ScanException] = {}


def arm_scan_exception(
    type_token: str, check_id: str, reason: str, when: Callable[[Inputs], bool] | None = None
) -> None:
    """Every `type_token` resource (with inputs matching `when`) fails `check_id` on purpose, for `reason`."""
    if len(reason) < 40:
        raise ValueError(f"{type_token} {check_id}: a skipped check needs a real reason, got {reason!r}")
    _EXCEPTIONS[(type_token, check_id)] = ScanException(type_token, check_id, reason, when)


def arm_scan_exceptions(type_token: str, inputs: Inputs) -> dict[str, str]:
    """The checks this resource skips, with their reasons."""
    return {
        e.check_id: e.reason
        for e in _EXCEPTIONS.values()
        if e.type_token == type_token and (e.when is None or e.when(inputs))
    }
