"""Let one CI run reach a stack's API server through its authorized IP ranges.

    python -m tools.runner_access authorize --stack prod --address 198.51.100.7

GitHub-hosted runners leave from addresses that are not in `cluster.apiServer.authorizedIpRanges`,
and `pulumi up` needs the API server for every Kubernetes object. `authorize` adds the runner's
address as a /32 to the stack file's ranges for this run only (the deploy workflow restores the
file and applies the cluster alone again afterwards, see docs/delivery.md), validating the result
exactly as `pulumi up` would. Because the run's desired state then contains the address, the
cluster update Pulumi sends keeps it (an `az aks update` made beside Pulumi would be undone by the
first cluster change in the same run).

Prints `added`, or `covered` when a configured range already holds the address (a self-hosted or
static-egress runner: nothing to add or remove). Exits 2 on a private cluster (no public address
reaches it: run on a runner inside the VNet) or an invalid result.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_platform.config import ConfigError

from .e2e_stack import validate
from .stack_files import REPO_ROOT

CLUSTER_KEY = "aks-gpu-platform:cluster"


class PrivateClusterError(ValueError):
    """The API server has no public endpoint: only a runner inside the VNet reaches it."""


def authorize(config: dict[str, Any], address: str) -> tuple[str, dict[str, Any]]:
    """The stack config with `address` admitted, and what was done: `added` or `covered`."""
    ip = ipaddress.ip_address(address.strip())
    api_server = dict((config.get(CLUSTER_KEY) or {}).get("apiServer") or {})
    if api_server.get("privateCluster"):
        raise PrivateClusterError(
            "cluster.apiServer.privateCluster is true: no runner address can be authorized; "
            "run the job on a self-hosted runner inside the VNet (docs/delivery.md)"
        )
    # A public API server always has ranges (the config refuses none), so the address is in one or added.
    ranges = [str(r) for r in api_server.get("authorizedIpRanges") or []]
    if any(ip in ipaddress.ip_network(r, strict=False) for r in ranges):
        return "covered", config
    suffix = 32 if ip.version == 4 else 128
    cluster = dict(config[CLUSTER_KEY])
    cluster["apiServer"] = {**api_server, "authorizedIpRanges": [*ranges, f"{ip}/{suffix}"]}
    return "added", {**config, CLUSTER_KEY: cluster}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("authorize", help="add the runner's address to the stack file's authorized ranges")
    add.add_argument("--stack", required=True)
    add.add_argument("--address", required=True, help="the runner's public egress address")
    add.add_argument("--root", type=Path, default=REPO_ROOT, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)

    path = options.root / f"Pulumi.{options.stack}.yaml"
    document: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
    try:
        outcome, config = authorize(dict(document.get("config") or {}), options.address)
        if outcome == "added":
            validate(config)
    except (ValueError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if outcome == "added":
        path.write_text(yaml.safe_dump({**document, "config": config}, sort_keys=False))
    print(outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
