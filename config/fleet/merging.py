"""How a fleet member's settings follow from the stack's shared ones: the member's overrides merged in, upgrades
owned by the Fleet, each team's quotas on the member's own pools, and admission on quota alone. Each step returns the
settings to validate and the problems found in them, named by the path the stack file writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..upgrade.section import FLEET_MEMBER_CHANNELS


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; lists and scalars of the override replace the base's."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_settings(merged[key], value)  # type: ignore[arg-type]
        else:
            merged[key] = value
    return merged


def mapping_of(value: Any) -> dict[str, Any]:
    """A YAML mapping as a dict ({} for anything else: the models report what is wrong with it)."""
    return dict(cast(Mapping[str, Any], value)) if isinstance(value, Mapping) else {}


def mappings_of(value: Any) -> list[dict[str, Any]]:
    return [mapping_of(item) for item in cast(list[Any], value)] if isinstance(value, list) else []


def own_quotas(values: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[int, list[int]], list[str]]:
    """The member's settings with each team's quotas on the pools this member has (a pool only one member has is
    that member's, the region-pinning pool); the original index of each kept quota; teams left with none."""
    training = mapping_of(values.get("training"))
    teams = mappings_of(training.get("teams"))
    pools = {str(p.get("name")) for p in mappings_of(values.get("gpuPools"))}
    kept: dict[int, list[int]] = {}
    problems: list[str] = []
    for i, team in enumerate(teams):
        quotas = mappings_of(team.get("quotas"))
        kept[i] = [j for j, q in enumerate(quotas) if q.get("pool") in pools]
        if quotas and not kept[i]:
            problems.append(
                f"training.teams[{i}].quotas: got pools {[q.get('pool') for q in quotas]}; {path} has none of them "
                f"({sorted(pools)}): MultiKueue mirrors every team's queue on every member, so give the team a quota "
                "on one of this member's pools (gpus: 0 is allowed)"
            )
            continue
        teams[i] = {**team, "quotas": [quotas[j] for j in kept[i]]}
    if "teams" in training:
        training["teams"] = teams
    return {**values, "training": training}, kept, problems


def fleet_owned_upgrades(
    values: dict[str, Any], path: str, shared_upgrade: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """A member's settings with Fleet as the owner of its upgrades (FLEET_MEMBER_CHANNELS), and what contradicts it."""
    upgrade = mapping_of(values.get("upgrade"))
    problems: list[str] = []
    if upgrade.get("owner", "fleet") != "fleet":
        problems.append(
            f"{path}.upgrade.owner: got {upgrade['owner']!r}; a Fleet member's upgrades are the Fleet's (fleet.updates)"
        )
    for key, off in FLEET_MEMBER_CHANNELS.items():
        if key in upgrade and upgrade[key] != off:
            where = f"upgrade.{key}" if key in shared_upgrade else f"{path}.upgrade.{key}"
            problems.append(
                f"{where}: got {upgrade[key]!r}; members of a fleet keep it {off!r} (Fleet's auto-upgrade profiles "
                "drive them in stages; an AKS channel left on upgrades a member outside them, whichever runs first); "
                "set the manager's channels under fleet.manager.upgrade"
            )
    upgrade = {k: v for k, v in upgrade.items() if k not in FLEET_MEMBER_CHANNELS} | {"owner": "fleet"}
    return {**values, "upgrade": upgrade}, problems


def dispatch_without_provisioning(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Members admit on quota alone. A ProvisioningRequest check on a member scales GPU nodes up for every copy
    MultiKueue offers it, before any member admits: with copies on every member, one job would cost every region."""
    training = mapping_of(values.get("training"))
    admission = mapping_of(training.get("admission"))
    problems: list[str] = []
    if admission.get("provisioningRequest") is True:
        problems.append(
            "training.admission.provisioningRequest: got True; in a fleet members admit on quota alone and only the "
            "member that wins the job scales up (a ProvisioningRequest would bring GPU nodes up in every region a "
            "copy reaches); leave it unset"
        )
    admission["provisioningRequest"] = False
    return {**values, "training": {**training, "admission": admission}}, problems
