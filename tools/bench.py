"""Plan speed: offline evaluation cost of the program against the same resources registered bare.

Cases: dev, prod, and prod grown to 4, 8 and 16 GPU pools with SCALED_TARGETS KEDA-scaled
Deployments (pools16 is the large config). Each case runs in its own subprocess: one warm-up
evaluation (imports, caches), then `--repeat` interleaved timed runs per mode, of which the
minimum counts (the machine is shared; the minimum is the least disturbed run), then one run
under tracemalloc for peak Python memory. Modes:

- program: `__main__.py` under the recording mocks.
- bare: every custom resource the program registered (providers too), flat at the stack root,
  with plain recorded inputs and the options a resource carries by itself, above all the type
  aliases the provider SDK classes attach (pulumi-azure-native aliases every older API version,
  over 100 per AgentPool, and the SDK resolves an Output chain per alias). A baseline without
  them measured the alias cost, not the program: any program registering these resources
  through the SDK pays it. This is the denominator of the 1.5x target.
- shaped: bare plus the program's shape: the same component resources as parents, providers,
  depends_on and deleted_with, still with plain inputs and none of our code. A test checks it
  records exactly what the program recorded.

So shaped - bare is the SDK's price of components and dependencies, and program - shaped is the
program's own: config loading and validation, component bodies, apply callbacks and the Output
wiring between resources, invokes. A cProfile run of the large case splits own time by code
location. Marginal cost per GPU pool between 4, 8 and 16 pools shows whether growth is linear.
Then prints the deploy critical path of the prod plan from the recorded dependency graph.
Exit status 1 when a target is not met.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import itertools
import json
import pstats
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pulumi

from aks_gpu_platform.components.shared.roles import propagation_seconds
from aks_gpu_platform.config.loader import PROJECT
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import RecordedResource, Recording, evaluate
from aks_gpu_platform.testing.stack_files import load_stack_file

from . import REPO_ROOT

GPU_POOLS_KEY = f"{PROJECT}:gpuPools"
AUTOSCALING_KEY = f"{PROJECT}:autoscaling"
TRAINING_KEY = f"{PROJECT}:training"
LINEAR_POOLS = (4, 8, 16)
REPEAT = 3
NOISE_S = 0.02  # seconds per pool: wall-time marginals closer than this are scheduling noise
GROWTH_TOLERANCE = 1.2  # a later pool may create this many times the Outputs an earlier one did
PROVIDER_PREFIX = "pulumi:providers:"
SCALED_TARGETS = 4  # KEDA-scaled Deployments in the generated configs, the same for every pool count
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


def large_config(pools: int = 16, targets: int = SCALED_TARGETS) -> dict[str, Any]:
    """The prod stack with `pools` GPU pools (copies of its first pool) and `targets` KEDA-scaled Deployments."""
    config = copy.deepcopy(load_stack_file("prod", REPO_ROOT))
    config.pop(f"{PROJECT}:inference", None)  # its models name prod's pools, which the copies replace
    template = config[GPU_POOLS_KEY][0]
    config[GPU_POOLS_KEY] = [{**template, "name": f"gpu{i:02d}"} for i in range(1, pools + 1)]
    # Two teams sharing every pool (6 + 6 of a copied pool's 12 GPUs), so queues scale with the pools.
    config[TRAINING_KEY]["teams"] = [
        {"name": team, "quotas": [{"pool": f"gpu{i:02d}", "gpus": 6} for i in range(1, pools + 1)]}
        for team in ("llm", "vision")
    ]
    config[AUTOSCALING_KEY]["targets"] = [
        {"namespace": "serving", "deployment": f"model{i:02d}", "minReplicas": 1, "maxReplicas": 8}
        for i in range(1, targets + 1)
    ]
    return config


def case_config(case: str) -> dict[str, Any]:
    if case in ("dev", "prod"):
        return load_stack_file(case, REPO_ROOT)
    if case.startswith("pools"):
        return large_config(int(case.removeprefix("pools")))
    raise ValueError(f"unknown case {case!r}")


def case_stack(case: str) -> str:
    return "prod" if case.startswith("pools") else case


def program_runner(case: str) -> Callable[[], Recording]:
    config = case_config(case)
    return lambda: run_stack(case_stack(case), config=config)


def _options(r: RecordedResource) -> pulumi.ResourceOptions:
    """The options every registration carries on its own: the SDK classes' type aliases and the lifecycle flags."""
    return pulumi.ResourceOptions(
        aliases=[pulumi.Alias(type_=t) for t in r.aliases],
        protect=r.protect,
        ignore_changes=r.ignore_changes or None,
        replace_on_changes=r.replace_on_changes or None,
        delete_before_replace=r.delete_before_replace,
        retain_on_delete=r.retain_on_delete,
    )


def _register(r: RecordedResource, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    if not r.custom:
        # A component with a provider of its own is a provider's (multi-language) component, e.g. yaml/v2 ConfigFile.
        remote = bool(r.provider)
        component = pulumi.ComponentResource(r.type, r.name, r.inputs if remote else None, opts, remote=remote)
        if not remote:
            component.register_outputs({})
        return component
    if r.type.startswith(PROVIDER_PREFIX):
        return pulumi.ProviderResource(r.type.removeprefix(PROVIDER_PREFIX), r.name, r.inputs, opts)
    return pulumi.CustomResource(r.type, r.name, r.inputs, opts)


def bare_runner(recording: Recording, stack: str) -> Callable[[], Recording]:
    """Every custom resource the program registered (providers too), flat: no parents, no dependencies."""
    resources = [r for r in recording.resources if r.custom]

    def program() -> None:
        for r in resources:
            _register(r, _options(r))

    return lambda: evaluate(program, stack=stack)


def shaped_runner(recording: Recording, stack: str) -> Callable[[], Recording]:
    """The bare registrations plus the program's shape: its components as parents, providers, depends_on, deleted_with.

    Registration order is a topological order (the SDK sends a registration only once its parent,
    provider and dependencies have URNs), so every reference is already built when it is needed.
    """

    def program() -> None:
        built: dict[str, pulumi.Resource] = {}
        for r in recording.resources:
            opts = _options(r)
            opts.parent = built.get(r.parent)
            opts.depends_on = [built[d] for d in r.depends_on if d in built]
            if r.provider:
                provider = built[provider_urn(r.provider)]
                assert isinstance(provider, pulumi.ProviderResource)
                opts.provider = provider
            if r.deleted_with:
                opts.deleted_with = built[r.deleted_with]
            built[r.urn] = _register(r, opts)

    return lambda: evaluate(program, stack=stack)


def peak_mib(run: Callable[[], Recording]) -> float:
    gc.collect()
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def measure_case(case: str, repeat: int, compare: bool = True) -> dict[str, Any]:
    """Wall time (minimum of `repeat` interleaved runs) and peak memory per mode; `compare=False`: the program only."""
    program = program_runner(case)
    recording = program()  # the warm-up: imports and caches are not evaluation cost
    stack = case_stack(case)
    runners = {"program": program}
    if compare:
        runners |= {"bare": bare_runner(recording, stack), "shaped": shaped_runner(recording, stack)}
    walls: dict[str, list[float]] = {mode: [] for mode in runners}
    counts: dict[str, int] = {}
    for _ in range(repeat):
        for mode, run in runners.items():
            start = time.perf_counter()
            counts[mode] = len(run().resources)
            walls[mode].append(time.perf_counter() - start)
    result: dict[str, Any] = {mode: {"wall_s": min(walls[mode]), "resources": counts[mode]} for mode in runners}
    for mode in ("program", "bare") if compare else ():
        result[mode]["peak_mib"] = peak_mib(runners[mode])
    for mode in ("program", "bare") if compare else ("program",):
        result[mode]["outputs"] = outputs_created(runners[mode])
    return result


def outputs_created(run: Callable[[], Recording]) -> int:
    """How many Outputs one evaluation creates: the SDK's unit of work, exact where wall time is noisy."""
    created = 0
    track = pulumi.Output._track  # pyright: ignore[reportPrivateUsage]

    def counting(self: pulumi.Output[Any]) -> None:
        nonlocal created
        created += 1
        track(self)

    setattr(pulumi.Output, "_track", counting)  # noqa: B010
    try:
        run()
    finally:
        setattr(pulumi.Output, "_track", track)  # noqa: B010
    return created


CATEGORIES = (
    ("cyclic GC (one collection per run)", ("gc.collect",)),
    ("our code (config, components, __main__)", ("/components/", "/config/", "__main__.py")),
    ("mocks and recording", ("/tools/", "/pulumi/runtime/mocks.py")),
    ("provider SDK classes", ("/pulumi_azure_native/", "/pulumi_kubernetes/")),
    ("Pulumi SDK and asyncio", ("/pulumi/", "/asyncio/", "contextvars", "_asyncio")),
    ("pydantic, yaml, protobuf", ("/pydantic", "/yaml/", "/google/protobuf/")),
)


def profile_shares(run: Callable[[], Recording]) -> list[tuple[str, float]]:
    """Share of own (not cumulative) profiled time per code location."""
    profiler = cProfile.Profile()
    profiler.runcall(run)
    stats = pstats.Stats(profiler).stats  # pyright: ignore[reportAttributeAccessIssue]
    totals: dict[str, float] = {}
    for (filename, _, function), (_, _, own, _, _) in stats.items():
        where = f"{filename}:{function}"
        label = next((name for name, marks in CATEGORIES if any(m in where for m in marks)), "other (stdlib, builtins)")
        totals[label] = totals.get(label, 0.0) + own
    total = sum(totals.values())
    return sorted(((label, own / total) for label, own in totals.items()), key=lambda kv: -kv[1])


def _child(case: str, repeat: int, compare: bool, profile: bool) -> None:
    result = measure_case(case, repeat, compare)
    if profile:
        result["profile"] = profile_shares(program_runner(case))
    print(json.dumps(result))


def _spawn(case: str, repeat: int, compare: bool, profile: bool) -> dict[str, Any]:
    args = [sys.executable, "-m", "tools.bench", "--child", case, "--repeat", str(repeat)]
    if compare:
        args.append("--compare")
    if profile:
        args.append("--profile")
    out = subprocess.run(args, cwd=REPO_ROOT, check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def duration(resource: RecordedResource) -> int:
    """Typical create time, plus the role-propagation wait a new grant holds its dependents for."""
    if not resource.custom or resource.type.startswith("pulumi:"):
        return 0
    wait = propagation_seconds(resource.after_create_hooks)
    if resource.type in TYPICAL_CREATE_S:
        return TYPICAL_CREATE_S[resource.type] + wait
    return (DEFAULT_KUBERNETES_S if resource.type.startswith("kubernetes:") else DEFAULT_AZURE_S) + wait


def critical_path(recording: Recording, end_urn: str | None = None) -> tuple[int, list[RecordedResource]]:
    """Longest chain of typical create times through depends_on (components expand to their children).

    With `end_urn`, the longest chain that ends at that resource (what it waits for).
    """
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

    end = end_urn or max((r.urn for r in recording.resources if r.custom), key=finish_of)
    finish_of(end)
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
    for c in cluster:
        ready, waits_for = critical_path(recording, c.urn)
        slow = [r.name for r in waits_for if r is not c and duration(r) >= SLOW_S]
        print(
            f"  the cluster is ready after {ready / 60:.1f} min: "
            + " -> ".join(r.name for r in waits_for)
            + (f"; slow resources it waits for: {', '.join(slow)}" if slow else "; it waits for no slow resource")
        )


def decompose(program_s: float, bare_s: float, shaped_s: float) -> dict[str, float]:
    """Split the program's wall time into the SDK's cost and ours (seconds; a negative part is below the noise)."""
    return {
        "SDK: the resources themselves (bare)": bare_s,
        "SDK: components, parents, providers, dependencies (shaped - bare)": shaped_s - bare_s,
        "ours: config, component code, Output wiring, invokes (program - shaped)": program_s - shaped_s,
    }


def marginal_per_pool(cost: dict[int, float]) -> list[tuple[int, int, float]]:
    """What each added GPU pool costs (seconds, Outputs...) between consecutive pool counts."""
    counts = sorted(cost)
    return [(a, b, (cost[b] - cost[a]) / (b - a)) for a, b in itertools.pairwise(counts)]


def super_linear(steps: list[tuple[int, int, float]], tolerance: float = GROWTH_TOLERANCE, floor: float = 0.0) -> bool:
    """True when a later pool costs more than `tolerance` times the first ones (plus a noise floor)."""
    first = steps[0][2]
    return any(cost > tolerance * max(first, 0.0) + floor for _, _, cost in steps[1:])


def print_overhead(rows: dict[str, dict[str, Any]], repeat: int) -> dict[str, float]:
    """The program against bare registrations per case, and where the program's time goes; program/bare per case."""
    print(f"Wall time: minimum of {repeat} interleaved runs per mode; memory: tracemalloc peak of one run.")
    header = (
        f"{'case':<8} {'registered':>10} {'program s':>10} {'bare s':>7} {'shaped s':>9} {'program/bare':>13}"
        f" {'program MiB':>12} {'bare MiB':>9} {'Outputs program/bare':>21}"
    )
    print(header)
    print("-" * len(header))
    ratios: dict[str, float] = {}
    for case, row in rows.items():
        prog, bare, shaped = row["program"], row["bare"], row["shaped"]
        ratios[case] = prog["wall_s"] / bare["wall_s"]
        print(
            f"{case:<8} {prog['resources']:>10} {prog['wall_s']:>10.3f} {bare['wall_s']:>7.3f} {shaped['wall_s']:>9.3f}"
            f" {ratios[case]:>13.2f} {prog['peak_mib']:>12.1f} {bare['peak_mib']:>9.1f}"
            f" {prog['outputs']:>12} / {bare['outputs']:<6}"
        )

    print("\nWhere the program's time goes (seconds, share of its wall time; below about 0.05 s is timing noise):")
    for case, row in rows.items():
        parts = decompose(row["program"]["wall_s"], row["bare"]["wall_s"], row["shaped"]["wall_s"])
        print(f"  {case:<8} " + "  ".join(f"{v:>6.3f}s {v / row['program']['wall_s']:>4.0%}" for v in parts.values()))
    for i, label in enumerate(decompose(0, 0, 0)):
        print(f"           column {i + 1}: {label}")
    return ratios


def print_growth(everything: dict[str, dict[str, Any]]) -> str:
    """The marginal cost of one more GPU pool; `linear` or `super-linear`, judged on exact Output counts."""
    programs = {n: everything[f"pools{n}"]["program"] for n in LINEAR_POOLS}
    work = marginal_per_pool({n: p["outputs"] for n, p in programs.items()})
    wall = marginal_per_pool({n: p["wall_s"] for n, p in programs.items()})
    growth = "super-linear" if super_linear(work) else "linear"
    print(f"\nMarginal cost per GPU pool ({SCALED_TARGETS} scaled targets throughout):")
    for (a, b, outputs), (_, _, seconds) in zip(work, wall, strict=True):
        print(f"  {a:>2} -> {b:>2} pools: {outputs:>6.0f} Outputs/pool, {seconds * 1000:>4.0f} ms/pool")
    noisy = super_linear(wall, MAX_OVERHEAD, NOISE_S) and growth == "linear"
    print(
        f"  growth {growth} (judged on Output counts, exact; within {GROWTH_TOLERANCE}x per pool)"
        + ("; the wall marginals differ more than the work does: timing noise, rerun to confirm" if noisy else "")
    )
    return growth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child")
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.repeat, args.compare, args.profile)
        return 0

    large = f"pools{LINEAR_POOLS[-1]}"
    compared = ("dev", "prod", large)  # the smaller pool counts only time the program, for the growth
    cases = ["dev", "prod", *(f"pools{n}" for n in LINEAR_POOLS)]
    everything = {
        # The program-only cases are cheap: more runs steady their minimum for the marginal cost.
        case: _spawn(case, args.repeat if case in compared else 2 * args.repeat, case in compared, case == large)
        for case in cases
    }
    rows = {case: everything[case] for case in compared}
    ratios = print_overhead(rows, args.repeat)
    print(f"\nProfile of {large} (own time per code location, cProfile):")
    for label, share in rows[large]["profile"]:
        print(f"  {share:>5.0%}  {label}")
    growth = print_growth(everything)

    print_critical_path(run_stack("prod"), "prod")
    worst = max(ratios, key=lambda c: ratios[c])
    met = ratios[worst] <= MAX_OVERHEAD and growth == "linear"
    print(
        f"\nTarget program/bare <= {MAX_OVERHEAD} and linear growth: {'met' if met else 'NOT met'}"
        f" (worst ratio {ratios[worst]:.2f} on {worst}, growth {growth})"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
