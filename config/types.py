"""Reusable constrained types for config fields."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from .errors import number_for_text_error

Zone = Literal["1", "2", "3"]

DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DnsLabel = Annotated[
    str,
    StringConstraints(pattern=DNS_LABEL_PATTERN, max_length=63),
    Field(description="DNS label: lowercase letters, digits and '-', starting and ending alphanumeric, 1-63 long"),
]

POOL_NAME_PATTERN = r"^[a-z][a-z0-9]{0,11}$"
PoolName = Annotated[
    str,
    StringConstraints(pattern=POOL_NAME_PATTERN),
    Field(description="AKS pool name: lowercase letter first, then lowercase letters or digits, 1-12 long"),
]
# Separately managed pools get a 4-character hash of the fields Azure cannot change in place
# appended (components/cluster/agent_pools.py), so the configured name has 8 of AKS's 12 characters.
HASHED_POOL_NAME_MAX = 8
HashedPoolName = Annotated[
    str,
    StringConstraints(pattern=rf"^[a-z][a-z0-9]{{0,{HASHED_POOL_NAME_MAX - 1}}}$"),
    Field(description="lowercase letter first, then lowercase letters or digits, 1-8 long (AKS adds a 4-char hash)"),
]

AZURE_RESOURCE_ID = re.compile(r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[^/]+/providers/[A-Za-z.]+/.+$")
GUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
Guid = Annotated[str, StringConstraints(pattern=GUID)]
EntraObjectId = Annotated[
    str,
    StringConstraints(pattern=GUID),
    # Entra ID tokens carry object IDs in lower case and Kubernetes RBAC compares group names byte for byte
    # (kubernetes pkg/registry/rbac/validation/rule.go, appliesToUser): a RoleBinding to an upper-case ID binds no one.
    AfterValidator(str.lower),
]


def _ipv4_network(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"must be an IPv4 CIDR with no host bits set, e.g. 10.40.0.0/16 ({exc})") from None
    return str(network)


def _ipv4_address(value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ValueError("must be an IPv4 address, e.g. 172.16.0.10") from None


def _resource_id(value: str) -> str:
    if not AZURE_RESOURCE_ID.match(value):
        raise ValueError(
            "must be an Azure resource ID: "
            "/subscriptions/<guid>/resourceGroups/<rg>/providers/<namespace>/<type>/<name>"
        )
    return value


Cidr = Annotated[str, AfterValidator(_ipv4_network)]
IPv4 = Annotated[str, AfterValidator(_ipv4_address)]
ResourceId = Annotated[str, AfterValidator(_resource_id)]

AzureName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")]


def _minor_as_text(value: object) -> object:
    # YAML reads an unquoted 1.30 as the number 1.3; AKS minors have two digits, so 1.3 was "1.30".
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise number_for_text_error(f'kubernetesVersion: "{value:.2f}"')
    return value


KubernetesMinor = Annotated[
    str,
    BeforeValidator(_minor_as_text),
    StringConstraints(pattern=r"^1\.[0-9]{2}$"),
]
