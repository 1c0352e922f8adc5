"""Mark the values that exist only under the offline mocks (IDs, GUIDs, addresses, endpoints).

The plan runs the program against recording mocks (aks_gpu_platform/testing/mocks.py), which invent what Azure
would compute: resource IDs in a made-up subscription, principal IDs, the Lustre MGS address,
the Prometheus query endpoint. Printed or written as they are, they look like real values, so
everything the plan shows passes through `MockValueMarker`, which replaces each such value with
`<computed: origin>`, where origin names the resource output (or function result) it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
IPV4 = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,3}){3}$")
# Values this long with a separator (IDs, URLs, host names) are specific enough to find inside
# other strings, e.g. a subscription GUID inside a role definition ID the program built from it.
DISTINCTIVE_LENGTH = 12


def computed_placeholder(origin: str) -> str:
    return f"<computed: {origin}>"


def distinctive(value: str) -> bool:
    """Specific enough to be found inside other strings without false hits."""
    if GUID.match(value) or IPV4.match(value):
        return True
    return len(value) >= DISTINCTIVE_LENGTH and any(separator in value for separator in "/.:")


class MockValueMarker:
    """Replaces mock-made values, whole or inside longer strings, with `<computed: origin>`."""

    def __init__(self, mock_values: Mapping[str, str]) -> None:
        self._whole = {value: computed_placeholder(origin) for value, origin in mock_values.items()}
        # Longest first, so an ID wins over the subscription GUID inside it.
        inner = sorted((v for v in mock_values if distinctive(v)), key=lambda v: (-len(v), v))
        self._inner = re.compile("|".join(re.escape(v) for v in inner)) if inner else None

    def text(self, value: str) -> str:
        whole = self._whole.get(value)
        if whole is not None:
            return whole
        if self._inner is None:
            return value
        return self._inner.sub(lambda match: self._whole[match.group(0)], value)

    def value(self, value: Any) -> Any:
        """`value` with every string marked, map keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value
