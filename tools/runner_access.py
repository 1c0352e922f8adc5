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

A run that is lost (runner gone, job cancelled during the removal, a removal that failed) can still
leave its /32 on the API server. On a schedule (`.github/workflows/runner-ranges.yml`):

    python -m tools.runner_access check --stack prod       # read-only identity
    python -m tools.runner_access reconcile --stack prod   # the stack's deploy identity

`check` compares the ranges the cluster admits (`az aks show`) with the stack file's; any
difference is an error annotation, a line in the job summary and an open issue (one per stack,
commented on at each later finding), and sets the step output `drift=true` (the workflow's next
step fails the run on it; an exit status other than 0 means the check itself failed). While the
stack's deploy job is running its own address is expected, so nothing is judged then (GitHub's
API says which jobs run; needs GITHUB_TOKEN with `actions: read`). `reconcile` looks again and
sets the cluster's ranges to exactly the stack file's (`az aks update
--api-server-authorized-ip-ranges`), then reads them back: a difference left is exit 1.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.plan.pr_comment import ACTIONS_BOT, github_request, marker_line, run_url

from . import REPO_ROOT
from .e2e_stack import validate

CLUSTER_KEY = "aks-gpu-platform:cluster"
CLUSTER_TYPE = "azure-native:containerservice:ManagedCluster"
POLICY_PACK = "policy"
# The workflow and job (`name:`) that admit a runner for their run: while one runs, its address is expected.
DEPLOY_WORKFLOW = "deploy.yml"


def deploy_job_name(stack: str) -> str:
    """The `name:` of the deploy.yml job that runs `pulumi up` on `stack` (a test holds deploy.yml to it)."""
    return f"up {stack}"


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


# --- the scheduled check: the ranges the cluster admits against the stack file -------------------------------------


@dataclass(frozen=True)
class ClusterAccess:
    """Where a stack's cluster is and which ranges its stack file admits."""

    resource_group: str
    cluster_name: str
    ranges: tuple[str, ...]
    private: bool


@dataclass(frozen=True)
class Drift:
    """Ranges the cluster admits that the stack file does not (`extra`), and the reverse (`missing`)."""

    extra: tuple[str, ...]
    missing: tuple[str, ...]
    unrestricted: bool = False
    """The public API server has no ranges at all: AKS then admits every address."""

    def __bool__(self) -> bool:
        return bool(self.extra or self.missing or self.unrestricted)

    def describe(self) -> str:
        if self.unrestricted:
            return "has no authorized ranges, so it admits every address on the internet"
        parts = [f"admits {', '.join(self.extra)}, which the stack file does not list"] if self.extra else []
        parts += [f"does not admit {', '.join(self.missing)}, which the stack file lists"] if self.missing else []
        return "; ".join(parts)


def configured_access(config: dict[str, Any]) -> ClusterAccess:
    """The cluster's address and authorized ranges as the validated stack config has them."""
    platform = validate(config)
    api_server = platform.cluster.api_server
    return ClusterAccess(
        resource_group=platform.resource_group.name,
        cluster_name=platform.cluster.name,
        ranges=tuple(str(r) for r in api_server.authorized_ip_ranges),
        private=api_server.private_cluster,
    )


def compare(configured: Sequence[str], admitted: Sequence[str]) -> Drift:
    """Compared as networks: Azure writes a single address as `a.b.c.d/32` or without a length. A public API
    server that admits no range at all is open to every address."""
    want = {ipaddress.ip_network(r, strict=False) for r in configured}
    have = {ipaddress.ip_network(r, strict=False) for r in admitted}
    extra, missing = tuple(sorted(map(str, have - want))), tuple(sorted(map(str, want - have)))
    # An empty list is not "fewer addresses": AKS turns the restriction off (api-server-authorized-ip-ranges).
    return Drift(extra=extra, missing=missing, unrestricted=bool(want) and not have)


def _az(*args: str) -> str:
    return subprocess.run(["az", *args], check=True, capture_output=True, text=True).stdout


def admitted_ranges(access: ClusterAccess) -> list[str]:
    """The ranges the live cluster admits (`az aks show`; the CLI spells the key authorizedIpRanges)."""
    shown = _az(
        "aks", "show", "--resource-group", access.resource_group, "--name", access.cluster_name,
        "--query", "apiServerAccessProfile", "--output", "json",
    )  # fmt: skip
    profile = json.loads(shown or "null") or {}
    return [str(r) for r in profile.get("authorizedIpRanges") or profile.get("authorizedIPRanges") or []]


@dataclass(frozen=True)
class GitHub:
    """The repository's REST API as a workflow reaches it (GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_TOKEN)."""

    api: str
    repo: str
    token: str

    @classmethod
    def from_environment(cls) -> GitHub:
        env = os.environ
        missing = [k for k in ("GITHUB_TOKEN", "GITHUB_REPOSITORY") if not env.get(k)]
        if missing:
            raise RevokeError(f"{', '.join(missing)} not set: cannot tell whether a deploy is running")
        return cls(env.get("GITHUB_API_URL", "https://api.github.com"), env["GITHUB_REPOSITORY"], env["GITHUB_TOKEN"])

    def get(self, path: str) -> Any:
        return github_request("GET", f"{self.api}/repos/{self.repo}/{path}", self.token)

    def post(self, path: str, payload: dict[str, Any]) -> Any:
        return github_request("POST", f"{self.api}/repos/{self.repo}/{path}", self.token, payload)


def deploy_running(github: GitHub, stack: str) -> bool:
    """Whether the deploy job of `stack` is running now, in any run of deploy.yml (it holds its own address)."""
    runs = github.get(f"actions/workflows/{DEPLOY_WORKFLOW}/runs?status=in_progress&per_page=100")
    for run in runs.get("workflow_runs") or []:
        jobs = github.get(f"actions/runs/{run['id']}/jobs?per_page=100")
        if any(j.get("name") == deploy_job_name(stack) and j.get("status") == "in_progress" for j in jobs["jobs"]):
            return True
    return False


def raise_alert(github: GitHub, stack: str, message: str) -> str:
    """Open the stack's alert issue, or comment on the one still open; returns what was done."""
    marker = marker_line(f"runner-ranges-{stack}")
    page = 1
    while True:
        issues = github.get(f"issues?state=open&per_page=100&page={page}")
        for issue in issues:
            ours = str((issue.get("user") or {}).get("login", "")) == ACTIONS_BOT
            if ours and "pull_request" not in issue and str(issue.get("body") or "").startswith(marker):
                github.post(f"issues/{issue['number']}/comments", {"body": message})
                return "commented"
        if len(issues) < 100:
            break
        page += 1
    title = f"The API server of {stack} admits ranges its stack file does not"
    github.post("issues", {"title": title, "body": f"{marker}\n{message}"})
    return "opened"


def _summary(line: str) -> None:
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as handle:
            handle.write(line + "\n")


def _step_output(name: str, value: str) -> None:
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a") as handle:
            handle.write(f"{name}={value}\n")


def check(stack: str, root: Path, github: GitHub) -> Drift:
    """The stack's drift (empty while its deploy runs or for a private cluster); a drift is alerted."""
    access = configured_access(_stack_config(root, stack))
    if access.private or deploy_running(github, stack):
        reason = "private cluster" if access.private else f"`{deploy_job_name(stack)}` is running with its own address"
        _summary(f"{stack}: not compared ({reason}).")
        return Drift((), ())
    drift = compare(access.ranges, admitted_ranges(access))
    if drift:
        message = (
            f"The API server of `{access.cluster_name}` (stack {stack}) {drift.describe()}. A lost deploy run can "
            f"leave its runner's /32 behind; the reconcile job of this run sets the ranges back to Pulumi.{stack}.yaml "
            f"(for prod once a reviewer approves it). Run: {run_url()}"
        )
        print(f"::error title=Runner address left authorized::{message}")
        _summary(f"**Authorized ranges drifted.** {message}")
        print(f"alert issue {raise_alert(github, stack, message)}")
    else:
        _summary(f"{stack}: the API server admits exactly the ranges of Pulumi.{stack}.yaml.")
    return drift


def reconcile(stack: str, root: Path, github: GitHub) -> str:
    """Set the cluster's ranges to the stack file's if they still differ; returns what was done."""
    access = configured_access(_stack_config(root, stack))
    if access.private:
        return "private cluster: nothing to reconcile"
    if deploy_running(github, stack):
        return f"{deploy_job_name(stack)} is running: it removes its own address; the next check looks again"
    drift = compare(access.ranges, admitted_ranges(access))
    if not drift:
        return "already in step with the stack file"
    _az(
        "aks", "update", "--resource-group", access.resource_group, "--name", access.cluster_name,
        "--api-server-authorized-ip-ranges", ",".join(access.ranges), "--output", "none",
    )  # fmt: skip
    left = compare(access.ranges, admitted_ranges(access))
    if left:
        raise RevokeError(f"after the update the API server still {left.describe()}")
    return f"reconciled: the API server {drift.describe()}; now it admits the stack file's ranges only"


def _stack_config(root: Path, stack: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text()) or {}
    return dict(document.get("config") or {})


def _scheduled(command: str, stack: str, root: Path) -> int:
    try:
        github = GitHub.from_environment()
        if command == "check":
            drift = check(stack, root, github)
            _step_output("drift", str(bool(drift)).lower())
            print(f"drift: {drift.describe()}" if drift else "in step")
            return 0
        print(reconcile(stack, root, github))
        return 0
    except (RevokeError, ValueError, ConfigError, OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", "") or ""
        message = f"stack {stack}: {command} could not finish: {err} {detail}".strip()
        print(f"::error title=Runner ranges not checked::{message}")
        _summary(f"**Runner ranges not checked.** {message}")
        return 1


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
    for command, text in (
        ("check", "compare the ranges the cluster admits with the stack file's; alert on a difference"),
        ("reconcile", "set the cluster's ranges to the stack file's when they still differ"),
    ):
        scheduled = commands.add_parser(command, help=text)
        scheduled.add_argument("--stack", required=True)
        scheduled.add_argument("--root", type=Path, default=REPO_ROOT, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)

    if options.command in ("check", "reconcile"):
        return _scheduled(options.command, options.stack, options.root)

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
