"""Render `Pulumi.e2e.yaml` into the stack file of one end-to-end run, validated before anything is created.

    python -m tools.e2e_stack --run-id 12345678901 --admin-group-id <guid> \\
        --hpc-cache-provider-object-id <guid> --authorized-ip-range 198.51.100.7/32

writes `Pulumi.e2e-12345678901.yaml`. Names Azure wants unique across all subscriptions (registry,
storage account, Grafana) and those unique per subscription (resource group) carry the run id;
the rest live inside the run's resource group. Exit 2 with the field path on an invalid result.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.loader import PROJECT, settings_from_runtime_config
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.testing.stack_files import read_stack_yaml, to_runtime_config

from . import REPO_ROOT

TEMPLATE = REPO_ROOT / "Pulumi.e2e.yaml"
STACK_PREFIX = "e2e-"
RUN_ID = re.compile(r"^[0-9]{1,13}$")  # the storage account name leaves room for 13 digits


def stack_name(run_id: str) -> str:
    return f"{STACK_PREFIX}{run_id}"


def render(
    template: dict[str, Any],
    run_id: str,
    admin_group_ids: list[str],
    hpc_cache_provider_object_id: str,
    authorized_ip_ranges: list[str],
    location: str | None = None,
) -> dict[str, Any]:
    """The template's config map with this run's names, identities and API server ranges."""
    if not RUN_ID.match(run_id):
        raise ValueError(f"run id {run_id!r}: must be 1-13 digits (GitHub's run id)")
    config = copy.deepcopy(template)

    def section(key: str) -> dict[str, Any]:
        return config[f"{PROJECT}:{key}"]

    section("resourceGroup")["name"] = f"rg-aksgpu-e2e-{run_id}"
    section("tags")["e2eRun"] = run_id
    cluster = section("cluster")
    cluster["name"] = cluster["dnsPrefix"] = f"aks-gpu-e2e-{run_id}"
    cluster["entraId"]["adminGroupObjectIds"] = list(admin_group_ids)
    cluster["apiServer"]["authorizedIpRanges"] = list(authorized_ip_ranges)
    monitoring = section("monitoring")
    monitoring["registry"]["name"] = f"acraksgpue2e{run_id}"
    monitoring["grafana"]["name"] = f"graf-e2e-{run_id}"
    lustre = section("storage")["lustre"]
    lustre["blob"]["accountName"] = f"stlustree2e{run_id}"
    lustre["hpcCacheProviderObjectId"] = hpc_cache_provider_object_id
    if location:
        config["azure-native:location"] = config[f"{PROJECT}:location"] = location
    return config


def validate(config: dict[str, Any]) -> PlatformConfig:
    """The validated platform settings, or the ConfigError `pulumi up` would raise before any resource exists."""
    encoded, _ = to_runtime_config(config, PROJECT)
    return load_platform_config(settings_from_runtime_config(encoded))


def write_stack_file(path: Path, config: dict[str, Any]) -> None:
    """Write the config map, keeping other top-level keys (an `encryptionsalt`) already in the file."""
    document: dict[str, Any] = {}
    if path.is_file():
        document = yaml.safe_load(path.read_text()) or {}
    document["config"] = config
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-id", required=True, help="GitHub run id; the stack is e2e-<run id>")
    parser.add_argument("--admin-group-id", action="append", required=True, help="Entra ID group (repeatable)")
    parser.add_argument("--hpc-cache-provider-object-id", required=True, help="tenant's HPC Cache Resource Provider")
    parser.add_argument("--authorized-ip-range", action="append", required=True, help="CIDR (repeatable)")
    parser.add_argument("--location", default=None, help="Azure region (default: the template's)")
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT)
    options = parser.parse_args(argv)
    try:
        config = render(
            read_stack_yaml(options.template),
            options.run_id,
            options.admin_group_id,
            options.hpc_cache_provider_object_id,
            [r.strip() for value in options.authorized_ip_range for r in value.split(",") if r.strip()],
            options.location,
        )
        validate(config)
    except (ValueError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    path = options.out_dir / f"Pulumi.{stack_name(options.run_id)}.yaml"
    write_stack_file(path, config)
    print(f"wrote {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
