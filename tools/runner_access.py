"""Let one CI run reach a stack's API server through its authorized IP ranges, and close it again.

    python -m tools.runner_access authorize --stack prod --address 198.51.100.7
    python -m tools.runner_access revoke --stack prod --address 198.51.100.7

GitHub-hosted runners leave from addresses that are not in `cluster.apiServer.authorizedIpRanges`,
and `pulumi up` needs the API server for every Kubernetes object. `authorize` adds the runner's
address as a /32 to the stack file's ranges for this run only, validating the result exactly as
`pulumi up` would. Because the run's desired state then contains the address, the cluster update
Pulumi sends keeps it (an `az aks update` made beside Pulumi would be undone by the first cluster
change in the same run). It prints `added`, or `covered` when a configured range already holds the
address (a runner inside the VNet or with static egress: nothing to add or remove), and exits 2 on a
private cluster (no public address reaches it) or an invalid result.

`revoke` restores the stack file (`git checkout`), reads the stack's state, applies
every cluster whose recorded ranges still hold the address alone (`pulumi up --target`, under the
policy pack like every update), and reads the state again. Anything short of "the address is gone"
(state unreadable, an interrupted cluster update, a failed update, the address still recorded) is
an error annotation on the run and in its job summary, and exit 1: an open /32 must never pass
silently. docs/delivery.md describes both steps.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_platform.config import ConfigError

from . import REPO_ROOT
from .e2e_stack import validate

CLUSTER_KEY = "aks-gpu-platform:cluster"
CLUSTER_TYPE = "azure-native:containerservice:ManagedCluster"
POLICY_PACK = "policy"


class PrivateClusterError(ValueError):
    """The API server has no public endpoint: only a runner inside the VNet reaches it."""


class RevokeError(RuntimeError):
    """The runner's address may still be authorized on the API server."""


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
    cluster = dict(config[CLUSTER_KEY])
    cluster["apiServer"] = {**api_server, "authorizedIpRanges": [*ranges, str(ipaddress.ip_network(ip))]}
    return "added", {**config, CLUSTER_KEY: cluster}


def admitted_clusters(state: dict[str, Any], address: str) -> list[str]:
    """URNs of the clusters whose recorded API ranges (inputs or outputs) still list `address` alone.

    `state` is `pulumi stack export` output (apitype DeploymentV3). A cluster with a pending
    operation was cut off mid-update: Azure may hold the address while the state does not, so that
    is an error, not "nothing to do".
    """
    host = ipaddress.ip_network(address.strip())
    deployment = state.get("deployment") or {}
    interrupted = [
        str(op["resource"]["urn"])
        for op in deployment.get("pending_operations") or []
        if op.get("resource", {}).get("type") == CLUSTER_TYPE
    ]
    if interrupted:
        raise RevokeError(f"the cluster update was interrupted ({', '.join(interrupted)}): its ranges are unknown")
    found: list[str] = []
    for resource in deployment.get("resources") or []:
        if resource.get("type") != CLUSTER_TYPE:
            continue
        recorded = [
            str(entry)
            for side in ("inputs", "outputs")
            for entry in ((resource.get(side) or {}).get("apiServerAccessProfile") or {}).get("authorizedIPRanges")
            or []
        ]
        if any(ipaddress.ip_network(entry, strict=False) == host for entry in recorded):
            found.append(str(resource["urn"]))
    return found


def _pulumi(*args: str) -> None:
    subprocess.run(["pulumi", *args], check=True)


def _state(stack: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.json"
        _pulumi("stack", "export", "--stack", stack, "--file", str(path))
        return json.loads(path.read_text())


def revoke(stack: str, address: str) -> list[str]:
    """Restore the stack file, apply each cluster that still admits `address`; returns their URNs."""
    subprocess.run(["git", "checkout", "--", f"Pulumi.{stack}.yaml"], check=True)
    clusters = admitted_clusters(_state(stack), address)
    for urn in clusters:
        _pulumi("up", "--yes", "--skip-preview", "--stack", stack, "--policy-pack", POLICY_PACK, "--target", urn)
    left = admitted_clusters(_state(stack), address)
    if left:
        raise RevokeError(f"the address is still recorded on {', '.join(left)} after the update")
    return clusters


def _report_open(stack: str, address: str, reason: str) -> None:
    """An error annotation and a job-summary line: the run shows the open address, not just a red step."""
    message = (
        f"{address} may still be authorized on the API server of stack {stack}: {reason}. "
        f"Re-run the job, or remove it by hand (az aks update --api-server-authorized-ip-ranges "
        f"with the ranges of Pulumi.{stack}.yaml)."
    )
    print(f"::error title=Runner address left authorized::{message}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as handle:
            handle.write(f"**Runner address left authorized.** {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("authorize", help="add the runner's address to the stack file's authorized ranges")
    add.add_argument("--stack", required=True)
    add.add_argument("--address", required=True, help="the runner's public egress address")
    add.add_argument("--root", type=Path, default=REPO_ROOT, help=argparse.SUPPRESS)
    remove = commands.add_parser("revoke", help="apply the restored ranges to every cluster still admitting it")
    remove.add_argument("--stack", required=True)
    remove.add_argument("--address", required=True, help="the address `authorize` added")
    options = parser.parse_args(argv)

    if options.command == "revoke":
        try:
            revoked = revoke(options.stack, options.address)
        except (RevokeError, ValueError, OSError, subprocess.CalledProcessError) as err:
            _report_open(options.stack, options.address, str(err))
            return 1
        print(f"removed from {', '.join(revoked)}" if revoked else "never applied: nothing to remove")
        return 0

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
