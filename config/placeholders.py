"""Placeholder values that must never reach a real deployment.

The stack files ship with stand-ins: hand-made object IDs (00000000-0000-4000-8000-...),
documentation IP ranges (RFC 5737 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24; RFC 3849
2001:db8::/32) and example domains (RFC 2606 example.com/.net/.org, the .example and .invalid
top-level domains). Azure accepts most of them: a cluster admin group that names nobody, an API
server nobody can reach, alerts mailed to nowhere. A real `pulumi preview` / `pulumi up` refuses
them before any resource is registered; the offline plan (Pulumi mocks) lists them as warnings.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, cast

from .errors import ConfigError, format_path
from .platform import PlatformConfig

Path = tuple[str | int, ...]

OBJECT_ID = "object ID"
IP_RANGE = "documentation IP range"
EXAMPLE_DOMAIN = "example domain"

GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
EMBEDDED_IPV4 = re.compile(r"(?<![0-9.])[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?:/[0-9]{1,2})?(?![0-9.])")
HOST_NAME = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
DOCUMENTATION_IPV4 = tuple(ipaddress.IPv4Network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
DOCUMENTATION_IPV6 = (ipaddress.IPv6Network("2001:db8::/32"),)
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org")
RESERVED_TOP_LEVEL_DOMAINS = ("example", "invalid")
# Among a GUID's 32 hex digits, 8 equal in a row (00000000-..., ...-000000000001) or at most 6 distinct ones
# (12121212-..., 11111111-2222-3333-..., deadbeef-dead-...) mark a hand-made ID.
LONGEST_RUN = 8
FEWEST_SYMBOLS = 6

WHY = {
    OBJECT_ID: "a placeholder object ID names nobody in Entra ID",
    IP_RANGE: "a documentation range (RFC 5737 / RFC 3849) that no real client comes from",
    EXAMPLE_DOMAIN: "an example domain (RFC 2606) that reaches nobody",
}
# What to put instead, by the field's own name; the kind's advice otherwise.
INSTEAD_BY_FIELD = {
    "hpcCacheProviderObjectId": (
        "the object ID of your tenant's 'HPC Cache Resource Provider' service principal (it differs per tenant; "
        "its app ID 4392ab71-2ce2-4b0d-8770-b352745c73f5 does not): "
        'az ad sp list --display-name "HPC Cache Resource Provider" --query "[0].id" -o tsv'
    ),
    "adminGroupObjectIds": (
        "the object ID of an existing Entra ID group: az ad group show --group <name> --query id -o tsv"
    ),
    "members": ("the object ID of the team's Entra ID group: az ad group show --group <name> --query id -o tsv"),
    "tenantId": "your tenant ID (az account show --query tenantId -o tsv), or leave it out for the deployer's tenant",
    "authorizedIpRanges": (
        "the public ranges allowed to reach the API server: your office or VPN egress range and the address "
        "`pulumi up` runs from (as a /32)"
    ),
    "email": "a mailbox your on-call team reads",
}
INSTEAD_BY_KIND = {
    OBJECT_ID: "the real ID from your tenant or subscription",
    IP_RANGE: "an address range of your own network",
    EXAMPLE_DOMAIN: "a real address or host name",
}


@dataclass(frozen=True)
class Placeholder:
    """One stand-in value in the config: where it is, what it is, what to put instead."""

    path: str
    """Field path as in config errors, e.g. cluster.entraId.adminGroupObjectIds[0]."""
    value: str
    kind: str
    instead: str
    deployed: bool
    """False when its section is switched off, so nothing of it reaches Azure (yet)."""

    def problem(self) -> str:
        return f"{self.path}: got {self.value!r}; {WHY[self.kind]}; put {self.instead}"


def find_placeholders(cfg: PlatformConfig) -> list[Placeholder]:
    """Every placeholder in the validated config (defaults included), in field order."""
    switched_off = _switched_off(cfg)
    found: list[Placeholder] = []
    for path, text in _strings(cfg.model_dump(mode="json", by_alias=True), ()):
        for kind in _kinds(text):
            field = next((p for p in reversed(path) if isinstance(p, str)), "")
            instead = INSTEAD_BY_FIELD.get(field, INSTEAD_BY_KIND[kind])
            deployed = not any(path[: len(off)] == off for off in switched_off)
            found.append(Placeholder(format_path(path), text, kind, instead, deployed))
    return found


def refuse_placeholders(cfg: PlatformConfig) -> None:
    """Raise one ConfigError listing every placeholder that would reach Azure."""
    problems = [p.problem() for p in find_placeholders(cfg) if p.deployed]
    if problems:
        raise ConfigError(problems, source="stack config for a real deployment")


def _switched_off(cfg: PlatformConfig) -> list[Path]:
    """Sections whose settings create nothing while switched off."""
    off: list[Path] = []
    if cfg.storage.lustre is not None and not cfg.storage.lustre.enabled:
        off.append(("storage", "lustre"))
    if not cfg.security.defender.enabled:
        off.append(("security", "defender"))
    if not cfg.training.enabled:
        off.append(("training",))
    if not cfg.autoscaling.sample_inference.enabled:
        off.append(("autoscaling", "sampleInference"))
    return off


def _strings(node: Any, path: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in cast(dict[str, Any], node).items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(cast(list[Any], node)):
            yield from _strings(value, (*path, i))


def _kinds(text: str) -> list[str]:
    kinds: list[str] = []
    if any(_placeholder_guid(g) for g in GUID.findall(text)):
        kinds.append(OBJECT_ID)
    if any(_documentation_range(candidate) for candidate in [text, *EMBEDDED_IPV4.findall(text)]):
        kinds.append(IP_RANGE)
    if any(_example_host(host) for host in HOST_NAME.findall(text)):
        kinds.append(EXAMPLE_DOMAIN)
    return kinds


def _placeholder_guid(guid: str) -> bool:
    """A GUID typed by hand, not generated. Entra ID object, tenant and subscription IDs are random (122 random
    bits), so each rule matches a generated one with a chance under 1 in 3 million."""
    digits = guid.replace("-", "").lower()
    pairs = list(pairwise(digits))
    # Mostly repeats and counting up (0->1 ... e->f): aaaabbbb-0000-cccc-1111-dddd2222eeee (Microsoft Learn's
    # example IDs), 12345678-90ab-cdef-....
    patterned = sum(b == a or int(b, 16) == int(a, 16) + 1 for a, b in pairs)
    longest_run = max(len(run.group(0)) for run in re.finditer(r"(.)\1*", digits))
    return longest_run >= LONGEST_RUN or len(set(digits)) <= FEWEST_SYMBOLS or patterned > len(pairs) // 2


def _documentation_range(text: str) -> bool:
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return False
    if isinstance(network, ipaddress.IPv4Network):
        return any(network.subnet_of(doc) for doc in DOCUMENTATION_IPV4)
    return any(network.subnet_of(doc) for doc in DOCUMENTATION_IPV6)


def _example_host(host: str) -> bool:
    name = host.lower().rstrip(".")
    labels = name.split(".")
    return labels[-1] in RESERVED_TOP_LEVEL_DOMAINS or any(name == d or name.endswith(f".{d}") for d in EXAMPLE_DOMAINS)
