"""Plan speed: offline evaluation cost of the program against the same resources registered bare.

Each case runs in its own subprocess: one warm-up evaluation (imports, caches), one timed
evaluation, one under tracemalloc for peak Python memory. "bare" replays the program's recorded
custom resources as plain `pulumi.CustomResource` registrations (same types, names, inputs),
so program/bare is the cost of config validation, components and wiring on top of the SDK.
Then prints the deploy critical path of the prod plan from the recorded dependency graph.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi

from .offline import PROJECT, RecordedResource, Recording, run_stack, run_under_mocks
from .stack_files import REPO_ROOT, load_stack_file

GPU_POOLS_KEY = f"{PROJECT}:gpuPools"
LINEAR_POOLS = (4, 8, 16)
MAX_OVERHEAD = 1.5  # program/bare wall-time ratio the program must stay within

# Typical create times (seconds) of an Azure or in-cluster resource, as commonly observed;
# estimates for ordering the critical path, not guarantees.
TYPICAL_CREATE_S: dict[str, int] = {
    "azure-native:resources:ResourceGroup": 5,
    "azure-native:network:VirtualNetwork": 15,
    "azure-native:network:Subnet": 10,
    "azure-native:network:NetworkSecurityGroup": 10,
    "azure-native:network:NatGateway": 30,
    "azure-native:network:PublicIPAddress": 10,
    "azure-native:network:PrivateEndpoint": 90,
    "azure-native:network:PrivateDnsZone": 40,
    "azure-native:managedidentity:UserAssignedIdentity": 10,
    "azure-native:managedidentity:FederatedIdentityCredential": 10,
    "azure-native:authorization:RoleAssignment": 20,
    "azure-native:containerservice:ManagedCluster": 480,
    "azure-native:containerservice:AgentPool": 300,
    "azure-native:containerservice:MaintenanceConfiguration": 10,
    "azure-native:storagecache:AmlFilesystem": 900,
    "azure-native:storage:StorageAccount": 30,
    "azure-native:storage:BlobContainer": 5,
    "azure-native:containerregistry:Registry": 60,
    "azure-native:dashboard:Grafana": 300,
    "azure-native:monitor:AzureMonitorWorkspace": 60,
    "azure-native:insights:DataCollectionRule": 15,
    "azure-native:insights:DataCollectionRuleAssociation": 10,
    "azure-native:insights:DataCollectionEndpoint": 15,
    "azure-native:alertsmanagement:PrometheusRuleGroup": 15,
    "azure-native:operationalinsights:Workspace": 60,
    "kubernetes:helm.sh/v3:Release": 120,
}
DEFAULT_AZURE_S = 20
DEFAULT_KUBERNETES_S = 5
SLOW_S = 120


def large_config(pools: int = 16) -> dict[str, Any]:
    """The prod stack with `pools` GPU pools (copies of its first pool, distinct names)."""
    config = copy.deepcopy(load_stack_file("prod"))
    template = config[GPU_POOLS_KEY][0]
    config[GPU_POOLS_KEY] = [{**template, "name": f"gpu{i:02d}"} for i in range(1, pools + 1)]
    return config


def case_config(case: str) -> dict[str, Any]:
    if case in ("dev", "prod"):
        return load_stack_file(case)
    if case.startswith("pools"):
        return large_config(int(case.removeprefix("pools")))
    raise ValueError(f"unknown case {case!r}")


def program_runner(case: str) -> Callable[[], Recording]:
    config = case_config(case)
    return lambda: run_stack("prod" if case.startswith("pools") else case, config=config)


def bare_runner(resources: list[dict[str, Any]]) -> Callable[[], Recording]:
    def program() -> None:
        for r in resources:
            pulumi.CustomResource(r["type"], r["name"], r["inputs"])

    return lambda: run_under_mocks(program)


def measure(run: Callable[[], Recording]) -> dict[str, Any]:
    run()  # warm-up: module imports and caches are not evaluation cost
    start = time.perf_counter()
    recording = run()
    wall = time.perf_counter() - start
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"wall_s": wall, "peak_mib": peak / 2**20, "resources": len(recording.resources)}


def _bare_resources(recording: Recording) -> list[dict[str, Any]]:
    skip = ("pulumi:providers:", "pulumi:pulumi:")
    return [
        {"type": r.type, "name": r.name, "inputs": r.inputs}
        for r in recording.resources
        if r.custom and not r.type.startswith(skip)
    ]


def _child(case: str, mode: str, resources_file: str | None) -> None:
    if mode == "program":
        result = measure(program_runner(case))
    else:
        assert resources_file is not None
        result = measure(bare_runner(json.loads(Path(resources_file).read_text())))
    print(json.dumps(result))


def _spawn(case: str, mode: str, resources_file: Path | None = None) -> dict[str, Any]:
    args = [sys.executable, "-m", "tools.bench", "--child", case, "--mode", mode]
    if resources_file is not None:
        args += ["--resources", str(resources_file)]
    out = subprocess.run(args, cwd=REPO_ROOT, check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def duration(resource: RecordedResource) -> int:
    if not resource.custom or resource.type.startswith("pulumi:"):
        return 0
    if resource.type in TYPICAL_CREATE_S:
        return TYPICAL_CREATE_S[resource.type]
    return DEFAULT_KUBERNETES_S if resource.type.startswith("kubernetes:") else DEFAULT_AZURE_S


def critical_path(recording: Recording) -> tuple[int, list[RecordedResource]]:
    """Longest chain of typical create times through depends_on (components expand to their children)."""
    by_urn = {r.urn: r for r in recording.resources}
    children: dict[str, list[str]] = {}
    for r in recording.resources:
        children.setdefault(r.parent, []).append(r.urn)

    def customs(urn: str) -> list[str]:
        r = by_urn.get(urn)
        if r is None:
            return []
        if r.custom:
            return [urn]
        return [c for child in children.get(urn, []) for c in customs(child)]

    finish: dict[str, int] = {}
    previous: dict[str, str | None] = {}

    def finish_of(urn: str) -> int:
        if urn in finish:
            return finish[urn]
        finish[urn] = 0  # guards against cycles through components
        r = by_urn[urn]
        deps = {d for dep in r.depends_on for d in customs(dep) if d != urn}
        if r.provider:
            deps |= set(customs(provider_urn(r.provider)))
        best, before = 0, None
        for d in deps:
            if finish_of(d) > best:
                best, before = finish_of(d), d
        finish[urn] = best + duration(r)
        previous[urn] = before
        return finish[urn]

    end = max((r.urn for r in recording.resources if r.custom), key=finish_of)
    chain: list[RecordedResource] = []
    cursor: str | None = end
    while cursor is not None:
        chain.append(by_urn[cursor])
        cursor = previous.get(cursor)
    return finish[end], list(reversed(chain))


def provider_urn(reference: str) -> str:
    """A provider reference is `<urn>::<id>`."""
    return reference.rsplit("::", 1)[0]


def print_critical_path(recording: Recording, label: str) -> None:
    total, chain = critical_path(recording)
    print(f"\nDeploy critical path ({label}, typical create times): {total / 60:.1f} min")
    for r in chain:
        print(f"  {duration(r):>5}s  {r.type}  {r.name}")
    on_chain = {r.urn for r in chain}
    cluster = [r for r in recording.resources if r.type == "azure-native:containerservice:ManagedCluster"]
    slow_off = [r for r in recording.resources if duration(r) >= SLOW_S and r.urn not in on_chain and r not in cluster]
    if slow_off:
        print("  slow resources off the critical path: " + ", ".join(f"{r.name} ({duration(r)}s)" for r in slow_off))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child")
    parser.add_argument("--mode", default="program")
    parser.add_argument("--resources")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.mode, args.resources)
        return 0

    cases = ["dev", "prod", *(f"pools{n}" for n in LINEAR_POOLS)]
    rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            recording = program_runner(case)()
            resources_file = Path(tmp) / f"{case}.json"
            resources_file.write_text(json.dumps(_bare_resources(recording)))
            rows.append((case, _spawn(case, "program"), _spawn(case, "bare", resources_file)))

    header = (
        f"{'case':<8} {'resources':>9} {'program s':>10} {'bare s':>8} {'ratio':>6} {'program MiB':>12} {'bare MiB':>9}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for case, prog, bare in rows:
        ratio = prog["wall_s"] / bare["wall_s"]
        worst = max(worst, ratio)
        print(
            f"{case:<8} {prog['resources']:>9} {prog['wall_s']:>10.3f} {bare['wall_s']:>8.3f} {ratio:>6.2f}"
            f" {prog['peak_mib']:>12.1f} {bare['peak_mib']:>9.1f}"
        )
    pool_rows = {case: prog for case, prog, _ in rows if case.startswith("pools")}
    per_resource = [p["wall_s"] / p["resources"] for p in pool_rows.values()]
    spread = max(per_resource) / min(per_resource)
    print(
        f"\nlinearity over {', '.join(pool_rows)}: resources "
        f"{' -> '.join(str(p['resources']) for p in pool_rows.values())}, "
        f"time per resource varies {spread:.2f}x (linear when close to 1)"
    )
    print_critical_path(run_stack("prod"), "prod")
    failed = worst > MAX_OVERHEAD or spread > MAX_OVERHEAD
    print(f"\nworst program/bare ratio {worst:.2f} (limit {MAX_OVERHEAD}): {'FAIL' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
