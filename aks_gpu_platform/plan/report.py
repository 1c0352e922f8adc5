"""`make plan`: evaluate a stack offline and show what `pulumi up` would create, cost and need.

Runs the real program with the stack's real config under Pulumi mocks and prints, in this order:
verdicts (mandatory policy violations and invalid Kubernetes objects as errors; advisory
violations, placeholders a real deployment refuses and GPU nodes kept up around the clock as
warnings), a summary (node pools, the vCPU quota each family needs at peak, a monthly cost floor
and ceiling) and the detail (the component tree with each resource's decisive settings, counts by
type, Kubernetes schema verdicts, every policy verdict). `--format markdown` prints the same as a
pull-request comment with the detail folded away.

Writes under out/<stack>/: every rendered Kubernetes object (k8s/), the Helm values (helm/) and
the machine-readable plan (plan.json, compared by `make plan-diff`). Output is deterministic: two
runs on the same tree give the same bytes. Values that only the mocks know (IDs, principal IDs,
addresses, endpoints) are shown as `<computed: origin>`.

Exit 1 on an invalid object or a mandatory policy violation, 2 on a config error.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from aks_gpu_platform.components.gpu.amd_stack import AMD_DOCKER_HUB_IMAGES, AMD_GPU_OPERATOR_CHART
from aks_gpu_platform.components.gpu.health import NVSENTINEL_CHART, NVSENTINEL_DOCKER_HUB_IMAGES
from aks_gpu_platform.components.inference.autoscaling import KEDA_OPERATOR_SUBJECT
from aks_gpu_platform.components.inference.gateway_identity import shared_prefix_cache_warnings
from aks_gpu_platform.components.monitoring.grafana import GRAFANA_TEAM_PREFIX
from aks_gpu_platform.components.shared.roles import ROLE_NAMES
from aks_gpu_platform.config import ConfigError, PlatformConfig, load_platform_config
from aks_gpu_platform.config.catalog.images import FROM_UPSTREAM, UPSTREAMS, unpinned_reason
from aks_gpu_platform.config.catalog.lustre_skus import AMLFS_SKUS
from aks_gpu_platform.config.catalog.prices import HOURS_PER_MONTH
from aks_gpu_platform.config.fleet.section import FleetPlan, is_fleet_stack, load_fleet
from aks_gpu_platform.config.known_limits import FLEET_LIMITS, PLATFORM_LIMITS, hit
from aks_gpu_platform.config.loader import PROJECT, settings_from_runtime_config
from aks_gpu_platform.config.placeholders import find_placeholders
from aks_gpu_platform.policy_rules import Policy, Violation
from aks_gpu_platform.testing import RecordedResource, Recording, policy_verdicts
from aks_gpu_platform.testing.stack_files import load_stack_file, read_stack_yaml, secret_paths, to_runtime_config

from . import cold_start, cost
from .adapter_cost import adapter_cost_lines
from .document import plan_document, write_plan
from .mock_values import MockValueMarker
from .offline import find_project, run_stack
from .render import ObjectVerdict, render_and_validate

WIDTH = 110
"""Longest line the text report prints (a PR comment and a terminal both show it unwrapped)."""
DETAIL_INDENT = "    "


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)  # pyright: ignore[reportUnknownMemberType]
    return d


def _compact(value: Any) -> str:
    """A value without spaces where possible, so wrapping breaks between settings, not inside one."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_compact(v)}" for k, v in sorted(value.items())) + "}"  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if isinstance(value, list):
        return "[" + ",".join(_compact(v) for v in value) + "]"  # pyright: ignore[reportUnknownVariableType]
    if value is None:
        return "-"
    return str(value)


def _pool(i: dict[str, Any]) -> str:
    u = i.get("upgradeSettings") or {}
    upgrade = (
        f" upgrade=surge:{u.get('maxSurge')}/unavailable:{u.get('maxUnavailable', '-')}"
        f"/drain:{u.get('drainTimeoutInMinutes')}m/soak:{u.get('nodeSoakDurationInMinutes')}m"
        f"/{u.get('undrainableNodeBehavior')}"
        if u
        else ""
    )
    return (
        f"{i.get('agentPoolName') or i.get('name')} {i.get('vmSize')} x{i.get('minCount')}-{i.get('maxCount')} "
        f"zones={_compact(i.get('availabilityZones'))} mode={i.get('mode')} taints={_compact(i.get('nodeTaints', []))} "
        f"labels={_compact(i.get('nodeLabels', {}))}{upgrade}"
        f" osDisk={i.get('osDiskType')}/{i.get('osDiskSizeGB')}G encryptionAtHost={i.get('enableEncryptionAtHost')}"
        + (f" driver={_get(i, 'gpuProfile', 'driver')}" if i.get("gpuProfile") else "")
        + (f" mig={i.get('gpuInstanceProfile')}" if i.get("gpuInstanceProfile") else "")
        + (f" priority={i.get('scaleSetPriority')}" if i.get("scaleSetPriority") else "")
    )


def _maintenance(i: dict[str, Any]) -> str:
    w = i.get("maintenanceWindow") or {}
    schedule = w.get("schedule") or {}
    when = (
        f"weekly:{schedule['weekly'].get('dayOfWeek')}"
        if "weekly" in schedule
        else f"every:{_get(schedule, 'daily', 'intervalDays')}d"
    )
    frozen = [f"{d.get('start')}..{d.get('end')}" for d in w.get("notAllowedDates") or []]
    return (
        f"{i.get('configName')} {when} {w.get('startTime')} UTC{w.get('utcOffset')} for {w.get('durationHours')}h"
        f" frozen={_compact(frozen)}"
    )


def _cluster(i: dict[str, Any]) -> str:
    system = (i.get("agentPoolProfiles") or [{}])[0]
    upgrade = i.get("autoUpgradeProfile") or {}
    return (
        f"k8s {i.get('kubernetesVersion')} tier={_get(i, 'sku', 'tier')} plan={i.get('supportPlan')} "
        f"channel={upgrade.get('upgradeChannel')}/{upgrade.get('nodeOSUpgradeChannel')} "
        f"cni={_get(i, 'networkProfile', 'networkPluginMode')}+{_get(i, 'networkProfile', 'networkDataplane')} "
        f"localAccountsDisabled={i.get('disableLocalAccounts')} system=[{_pool(system)}]"
    )


def _lustre(i: dict[str, Any]) -> str:
    sku = str(_get(i, "sku", "name"))
    capacity = int(i.get("storageCapacityTiB", 0))
    rules = AMLFS_SKUS.get(sku)
    throughput = f"{rules.throughput_mbps(capacity)} MB/s" if rules else "unknown"
    return (
        f"{capacity} TiB {sku} throughput={throughput} zones={_compact(i.get('zones'))} "
        f"maintenance={_get(i, 'maintenanceWindow', 'dayOfWeek')}/{_get(i, 'maintenanceWindow', 'timeOfDayUTC')} "
        "(resize = new filesystem + copy)"
    )


def _scaled_object(i: dict[str, Any]) -> str:
    spec = i.get("spec") or {}
    trigger = (spec.get("triggers") or [{}])[0]
    meta = trigger.get("metadata") or {}
    return (
        f"target={_get(spec, 'scaleTargetRef', 'name')} replicas={spec.get('minReplicaCount')}-"
        f"{spec.get('maxReplicaCount')} threshold={meta.get('threshold')} activation={meta.get('activationThreshold')} "
        f"query={meta.get('query')}"
    )


def _role(i: dict[str, Any]) -> str:
    guid = str(i.get("roleDefinitionId", "")).rsplit("/", 1)[-1]
    return f"role={ROLE_NAMES.get(guid, guid)!r} principalType={i.get('principalType')}"


def _namespaced(i: dict[str, Any]) -> str:
    return f"{_get(i, 'metadata', 'namespace')}/{_get(i, 'metadata', 'name')}"


# Decisive settings per resource type; types not listed print their name only.
SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "azure-native:containerservice:ManagedCluster": _cluster,
    "azure-native:containerservice:AgentPool": _pool,
    "azure-native:network:VirtualNetwork": lambda i: (
        f"addressSpace={_compact(_get(i, 'addressSpace', 'addressPrefixes'))}"
    ),
    "azure-native:network:Subnet": lambda i: f"{i.get('subnetName')} {i.get('addressPrefix')}",
    "azure-native:authorization:RoleAssignment": _role,
    "azure-native:storagecache:AmlFilesystem": _lustre,
    "azure-native:storage:StorageAccount": lambda i: (
        f"{i.get('accountName')} {_get(i, 'sku', 'name')} httpsOnly={i.get('enableHttpsTrafficOnly')} "
        f"tls={i.get('minimumTlsVersion')} publicBlob={i.get('allowBlobPublicAccess')} "
        f"publicNetwork={i.get('publicNetworkAccess')}"
    ),
    "kubernetes:storage.k8s.io/v1:StorageClass": lambda i: (
        f"{_get(i, 'metadata', 'name')} {i.get('provisioner')} reclaim={i.get('reclaimPolicy')} "
        f"params={_compact(i.get('parameters'))}"
    ),
    "kubernetes:batch/v1:Job": lambda i: (
        f"{_get(i, 'metadata', 'name')} "
        f"images={_compact([c.get('image') for c in _get(i, 'spec', 'template', 'spec', 'containers') or []])}"
    ),
    "azure-native:containerservice:MaintenanceConfiguration": _maintenance,
    "kubernetes:policy/v1:PodDisruptionBudget": lambda i: (
        f"{_namespaced(i)} "
        + " ".join(f"{k}={v}" for k in ("minAvailable", "maxUnavailable") if (v := _get(i, "spec", k)) is not None)
        + f" selector={_compact(_get(i, 'spec', 'selector', 'matchLabels'))}"
    ),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": lambda i: (
        f"{_namespaced(i)} types={_compact(_get(i, 'spec', 'policyTypes'))} "
        f"ingressRules={len(_get(i, 'spec', 'ingress') or [])} egressRules={len(_get(i, 'spec', 'egress') or [])}"
    ),
    "azure-native:managedidentity:FederatedIdentityCredential": lambda i: f"subject={i.get('subject')}",
    "kubernetes:keda.sh/v1alpha1:ScaledObject": _scaled_object,
    "kubernetes:keda.sh/v1alpha1:TriggerAuthentication": lambda i: (
        f"podIdentity={_get(i, 'spec', 'podIdentity', 'provider')}"
    ),
    "kubernetes:helm.sh/v3:Release": lambda i: f"chart={i.get('chart')}@{i.get('version')} ns={i.get('namespace')}",
    "azure-native:containerregistry:Registry": lambda i: (
        f"{i.get('registryName')} sku={_get(i, 'sku', 'name')} public={i.get('publicNetworkAccess')} "
        f"admin={i.get('adminUserEnabled')} anonymousPull={i.get('anonymousPullEnabled')}"
    ),
    "azure-native:network:PrivateEndpoint": lambda i: " ".join(
        f"{_compact(c.get('groupIds'))}->{str(c.get('privateLinkServiceId', '')).rsplit('/', 1)[-1]}"
        for c in i.get("privateLinkServiceConnections", [])
    ),
    "azure-native:containerregistry:CacheRule": lambda i: f"{i.get('sourceRepository')} -> {i.get('targetRepository')}",
    "azure-native:monitor:DataCollectionRuleAssociation": lambda i: (
        f"{i.get('associationName')} -> {str(i.get('resourceUri', '')).rsplit('/', 1)[-1]}"
    ),
    "azure-native:alertsmanagement:PrometheusRuleGroup": lambda i: (
        f"{i.get('ruleGroupName')} rules={len(i.get('rules', []))} interval={i.get('interval')}"
    ),
    "azure-native:monitor:ActionGroup": lambda i: (
        f"emails={_compact([r.get('emailAddress') for r in i.get('emailReceivers', [])])}"
    ),
    "kubernetes:azmonitoring.coreos.com/v1:PodMonitor": lambda i: (
        f"ns={_get(i, 'metadata', 'namespace')} selects={_compact(_get(i, 'spec', 'selector', 'matchLabels'))}"
    ),
}


def describe(resource: RecordedResource, marker: MockValueMarker | None = None) -> str:
    """One resource on one (unwrapped) line: type, name, decisive settings, [protected/retain/ignores]."""
    summary = SUMMARIES.get(resource.type)
    text = summary(resource.inputs) if summary else ""
    flags = [flag for flag, on in (("protected", resource.protect), ("retain", resource.retain_on_delete)) if on]
    if resource.ignore_changes:
        flags.append(f"ignores {','.join(sorted(resource.ignore_changes))}")
    suffix = f"  [{'; '.join(flags)}]" if flags else ""
    line = f"{resource.type} {resource.name}  {text}{suffix}".rstrip()
    return marker.text(line) if marker else line


def wrap(text: str, indent: str = "", hang: str = "    ") -> list[str]:
    """Lines of at most WIDTH characters (a single longer token, e.g. a query, is split)."""
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + hang,
        break_on_hyphens=False,
        break_long_words=True,
    ) or [indent]


def tree_lines(recording: Recording, marker: MockValueMarker, indent: str = "") -> list[str]:
    """The component tree: siblings by name, then type, so the order never depends on registration."""
    resources = sorted(recording.resources, key=lambda r: (r.name, r.type, r.urn))
    children: dict[str, list[RecordedResource]] = {}
    for r in resources:
        children.setdefault(r.parent, []).append(r)
    urns = {r.urn for r in resources}
    lines: list[str] = []

    def walk(node: RecordedResource, depth: int) -> None:
        lines.extend(wrap(describe(node, marker), indent + "  " * depth))
        for kid in children.get(node.urn, []):
            walk(kid, depth + 1)

    for root in (r for r in resources if r.parent not in urns):
        walk(root, 0)
    return lines


# Images each chart pulls anonymously from Docker Hub at our values (10 pulls per hour per egress IPv4 address for
# unauthenticated users, docs.docker.com/docker-hub/usage/); AKS nodes share the cluster's egress IPs.
DOCKER_HUB_PULLS = {
    NVSENTINEL_CHART: NVSENTINEL_DOCKER_HUB_IMAGES,
    AMD_GPU_OPERATOR_CHART[1]: AMD_DOCKER_HUB_IMAGES,
}


def _images_in(value: Any, found: set[str]) -> None:
    """Every string under an `image` key (a container's image, a chart's `image.repository:tag` pair)."""
    if isinstance(value, dict):
        for key, inner in cast(dict[str, Any], value).items():
            if key == "image" and isinstance(inner, str) and "/" in inner:
                found.add(inner)
            elif key == "image" and isinstance(inner, dict) and {"repository", "tag"} <= set(inner):
                image = cast(dict[str, Any], inner)
                if isinstance(image["repository"], str) and isinstance(image["tag"], str):
                    registry = f"{image['registry']}/" if isinstance(image.get("registry"), str) else ""
                    found.add(f"{registry}{image['repository']}:{image['tag']}")
            else:
                _images_in(inner, found)
    elif isinstance(value, list):
        for inner in cast(list[Any], value):
            _images_in(inner, found)


def wrap_all(lines: Sequence[str]) -> list[str]:
    return [wrapped for line in lines for wrapped in wrap(line, DETAIL_INDENT)]


def image_references(recording: Recording) -> set[str]:
    """Every image the stack's objects and chart values name."""
    found: set[str] = set()
    for resource in recording.resources:
        if resource.type.startswith("kubernetes:"):
            _images_in(resource.inputs, found)
    return found


def image_lines(recording: Recording) -> list[str]:
    """One line per image the stack's objects and chart values name: its digest, or `unpinned` and why."""
    lines: list[str] = []
    for image in sorted(image_references(recording)):
        tagged, _, digest = image.partition("@")
        if digest:
            lines.append(f"{tagged} {digest}")
        else:
            upstream = tagged.split("/", 1)[1] if ".azurecr.io/" in tagged else tagged
            lines.append(f"{tagged} unpinned: {unpinned_reason(upstream) or 'the stack file names it'}")
    return lines


def anonymous_cache_warnings(recording: Recording) -> list[str]:
    """One warning per rate-limited registry's cache rule without a credential set that the stack pulls through."""
    warnings: list[str] = []
    for rule in recording.of_type("azure-native:containerregistry:CacheRule"):
        host = str(rule.inputs.get("sourceRepository", "")).removesuffix("/*")
        upstream = UPSTREAMS.get(host)
        if upstream is None or not upstream.rate_limited or rule.inputs.get("credentialSetResourceId"):
            continue
        pulled = sorted(i for i in image_references(recording) if f".azurecr.io/{upstream.target}/" in i)
        if pulled:
            warnings.append(
                f"the registry's cache rule {rule.inputs.get('cacheRuleName')} pulls {host} anonymously (no credential "
                f"set): its limit of anonymous pulls applies to the registry's first pull of each image, not to every "
                f"node, and a new tag pulls again; {len(pulled)} images come through it: {', '.join(pulled)}"
            )
    return warnings


def docker_hub_warnings(recording: Recording) -> list[str]:
    """One warning per release that pulls images anonymously from Docker Hub, naming each image."""
    return [
        f"release {release.name} pulls {len(images)} images anonymously from Docker Hub, which allows 10 "
        f"anonymous pulls per hour per egress IP: a first install or a node replacement can stall on "
        f"`toomanyrequests`; mirror them or set Docker Hub credentials: {', '.join(images)}"
        for release in recording.of_type("kubernetes:helm.sh/v3:Release")
        if (images := DOCKER_HUB_PULLS.get(str(release.inputs.get("chart"))))
    ]


def shared_metrics_warnings(recording: Recording) -> list[str]:
    """Managed Grafana has no data source permissions: with two teams signed in as Viewers, each can query the
    other's series through the one Prometheus data source (docs/security.md, "What a team sees in Grafana")."""
    teams = sorted(
        {
            str(team.inputs["name"]).removeprefix(GRAFANA_TEAM_PREFIX)
            for team in recording.of_type("grafana:oss/team:Team")
            if team.inputs.get("teamSync", {}).get("groups")
        }
    )
    if len(teams) < 2:
        return []
    return [
        f"Grafana: the members of teams {', '.join(teams)} sign in to one Managed Grafana as Viewers, and a Viewer "
        "can query every series of its Prometheus data source through Grafana's API: each team can read the "
        "others' namespaces, pod and Job names, GPU use, queues and chargeback figures, whatever the folders "
        "show. Managed Grafana has no data source permissions; keep confidential names out of labels, or give "
        "such a team a platform of its own (docs/security.md#what-a-team-sees-in-grafana)"
    ]


@dataclass
class Report:
    """Everything the plan shows, gathered once and rendered as text or markdown."""

    title: str
    resource_total: int = 0
    errors: list[str] = field(default_factory=list[str])
    warnings: list[str] = field(default_factory=list[str])
    notes: list[str] = field(default_factory=list[str])
    pool_rows: list[list[str]] = field(default_factory=list[list[str]])
    quota_rows: list[list[str]] = field(default_factory=list[list[str]])
    cost_rows: list[list[str]] = field(default_factory=list[list[str]])
    cost_lines: list[str] = field(default_factory=list[str])
    # Before `cold_start`, whose name the class body rebinds to a field.
    model_ready: list[cold_start.PoolBudget] = field(default_factory=list[cold_start.PoolBudget])
    cold_start: list[cold_start.PoolBudget] = field(default_factory=list[cold_start.PoolBudget])
    resource_counts: list[str] = field(default_factory=list[str])
    tree: list[str] = field(default_factory=list[str])
    objects: list[str] = field(default_factory=list[str])
    policies: list[str] = field(default_factory=list[str])
    images: list[str] = field(default_factory=list[str])
    outputs: str = ""
    written_to: str = ""


POOL_HEADER = ["pool", "VM size", "zones", "nodes", "GPUs/node", "vCPUs/node", "surge at max", "quota family"]
QUOTA_HEADER = ["vCPU quota", "needed at peak", "pools"]
COST_HEADER = ["item", "floor/month", "ceiling/month", "price"]


def _pool_rows(pools: Sequence[cost.PoolCapacity]) -> list[list[str]]:
    return [
        [
            p.pool,
            p.vm_size + (" (Spot)" if p.spot else ""),
            ",".join(p.zones) or "-",
            f"{p.min_count}-{p.max_count}",
            str(p.gpus_per_vm or "-")
            + (f" ({p.gpu_devices_per_vm} nvidia.com/gpu)" if p.gpu_devices_per_vm != p.gpus_per_vm else ""),
            str(p.vcpus or "?"),
            f"+{p.surge_nodes} ({p.max_surge})",
            (cost.LOW_PRIORITY if p.spot else p.quota_family) or "not in the catalogs",
        ]
        for p in pools
    ]


def _price_regions(line: cost.CostLine, region: str) -> str:
    """Whose prices a row uses, short enough for the table: a `*` marks a stand-in for `region`'s own."""
    regions = dict.fromkeys(p.region if p.region in (region, "global") else f"{p.region}*" for p in line.prices)
    return "+".join(regions)


def _price_basis(estimate: cost.CostEstimate) -> str:
    prices = estimate.prices
    dates = sorted({p.read_on.isoformat() for p in prices})
    estimated = sum(p.estimate for p in prices)
    own = sum(p.region == estimate.region for p in prices)
    return (
        f"USD list prices for {estimate.region}, {HOURS_PER_MONTH} h a month, pay-as-you-go; {own} of {len(prices)} "
        f"figures are {estimate.region}'s own; a region marked * stands in for a {estimate.region} price that could "
        f"not be had (`unstated`: the source names no region); read {', '.join(dates)}; "
        f"{estimated} of {len(prices)} figures are estimates (config/catalog/prices.py, docs/plan.md)."
    )


def shared_infiniband_warnings(cfg: PlatformConfig) -> list[str]:
    """One warning per InfiniBand pool on which two or more teams have quota: their pods share its nodes and HCAs,
    and what passes between them over RDMA no NetworkPolicy sees (docs/security.md, "InfiniBand between teams")."""
    if not cfg.training.enabled:
        return []
    found: list[str] = []
    for pool in cfg.gpu_pools:
        if not pool.infiniband:
            continue
        teams = sorted({t.name for t in cfg.training.teams for q in t.quotas if q.pool == pool.name})
        if len(teams) > 1:
            found.append(
                f"InfiniBand pool {pool.name} is shared by teams {', '.join(teams)}: their pods' RDMA traffic on "
                "its nodes passes no NetworkPolicy (the fabric has no partition per team) and RDMA devices are "
                "not metered by Kueue; give each team an InfiniBand pool of its own to keep them apart"
            )
    return found


def build_report(
    stack: str,
    cfg: PlatformConfig,
    recording: Recording,
    verdicts: Sequence[ObjectVerdict],
    policies: Sequence[tuple[Policy, Sequence[Violation]]],
    marker: MockValueMarker,
    out_dir: Path,
    secrets: Sequence[str] = (),
) -> Report:
    custom = [r for r in recording.resources if r.custom]
    report = Report(
        f"Plan for stack '{stack}' ({cfg.location}): {len(custom)} resources, evaluated offline", len(custom)
    )

    for policy, violations in policies:
        for violation in violations:
            line = f"policy {policy.name}: {violation.resource}: {violation.message}"
            (report.errors if policy.mandatory else report.warnings).append(marker.text(line))
    for v in verdicts:
        if v.status == "invalid":
            report.errors.append(
                f"{v.kind}/{v.name} fails the Kubernetes {cfg.cluster.schema_version} schema: {v.detail}"
            )
    # A secret's stand-in is the plan's own placeholder: the CLI decrypts the real value.
    placeholders = [p for p in find_placeholders(cfg) if p.path not in secrets]
    for p in placeholders:
        where = "" if p.deployed else " (its section is off: replace it before switching it on)"
        report.warnings.append(f"placeholder {p.problem()}{where}")
    if placeholders:
        refused = sum(p.deployed for p in placeholders)
        report.notes.append(
            f"`pulumi preview` / `pulumi up` refuse the {refused} placeholder(s) that would reach Azure until replaced."
        )
    if secrets:
        report.notes.append(
            f"Secrets ({len(secrets)}): encrypted (secure:) in the stack file; the Pulumi CLI decrypts them, this "
            f"offline plan used placeholders that fit each field: {', '.join(secrets)}"
        )

    report.warnings += docker_hub_warnings(recording)
    report.warnings += hit(PLATFORM_LIMITS, cfg)
    report.warnings += shared_metrics_warnings(recording)
    report.warnings += shared_prefix_cache_warnings(
        [(m.name, m.teams, m.shared_prefix_cache) for m in cfg.inference.models]
    )
    report.warnings += shared_infiniband_warnings(cfg)
    report.images = image_lines(recording)
    report.warnings.append(
        "chart defaults the nodes still pull from public registries, not through the platform's registry, where "
        "their release is installed: " + "; ".join(f"{pattern} ({who})" for pattern, who in FROM_UPSTREAM.items())
    )
    report.warnings += anonymous_cache_warnings(recording)
    federated = recording.of_type("azure-native:managedidentity:FederatedIdentityCredential")
    if any(f.inputs.get("subject") == KEDA_OPERATOR_SUBJECT for f in federated):
        # Microsoft's KEDA add-on workload-identity guide: the operator gets its identity environment at pod start.
        report.notes.append(
            "Next step after the first `pulumi up`: `kubectl -n kube-system rollout restart deployment "
            "keda-operator`. The AKS KEDA add-on's operator started before its federated credential existed and "
            "reads workload identity only when its pod starts; until restarted, every GPU ScaledObject fails to "
            "query the Azure Monitor workspace (docs/autoscaling.md)."
        )

    pools = cost.pool_capacities(recording)
    held = cost.held_gpu_nodes(recording, pools)

    def monthly(pool: cost.PoolCapacity, nodes: int) -> str:
        per_node = cost.node_monthly(pool, cost.stack_region(recording))
        return "" if isinstance(per_node, str) else f" (~{cost.monthly_usd(nodes * per_node[0])}/month)"

    for pool in pools:
        if pool.gpus_per_vm and pool.min_count > 0:
            report.warnings.append(
                f"GPU pool {pool.pool} keeps {pool.min_count} x {pool.vm_size} running around the clock "
                f"(minCount {pool.min_count}){monthly(pool, pool.min_count)}"
            )
    for hold in held:
        report.warnings.append(
            f"{hold.workload} keeps {hold.nodes} x {hold.pool.vm_size} of pool {hold.pool.pool} up around the clock: "
            f"{hold.why}{monthly(hold.pool, hold.nodes)}; minReplicaCount 0 lets the pool scale to zero when idle"
        )

    report.pool_rows = _pool_rows(pools)
    needs, unknown = cost.quota_needs(pools)
    report.quota_rows = [[n.quota, f"{n.vcpus:,}", ", ".join(n.pools)] for n in needs]
    for pool in unknown:
        report.warnings.append(f"pool {pool.pool}: {pool.vm_size} is not in the catalogs, its vCPUs are not counted")
    estimate = cost.estimate_cost(recording, pools, held)
    report.cost_rows = [
        [
            line.item,
            cost.monthly_usd(line.floor),
            cost.monthly_usd(line.ceiling) if line.ceiling else "-",
            _price_regions(line, estimate.region),
        ]
        for line in estimate.lines
    ]
    report.cost_rows.append(["total", cost.monthly_usd(estimate.floor), cost.monthly_usd(estimate.ceiling), ""])
    report.cost_lines = [
        "Floor: what bills from creation (minimum node counts, GPU nodes workloads keep up, always-on resources). "
        "Ceiling: maximum node counts.",
        _price_basis(estimate),
    ]
    report.cost_lines += [f"Not included (no price): {item}" for item in estimate.unpriced]
    report.cost_lines += [f"Not classified (its bill is unknown): {t}" for t in estimate.unclassified]
    if estimate.usage_priced:
        report.cost_lines.append("Not included (billed by use): " + "; ".join(estimate.usage_priced))
    report.cost_lines += [f"Usage estimate: {volume}" for volume in estimate.volumes]
    for team in cost.team_quota_ceilings(recording, pools):
        marker_text = " (estimate)" if team.estimate else ""
        line = (
            f"Team {team.team}: quota ceiling {cost.monthly_usd(team.monthly)}/month{marker_text} for {team.gpus} GPUs"
        )
        if team.unpriced:
            line += f"; no GPU-hour price for {', '.join(team.unpriced)} (not counted)"
        report.cost_lines.append(line + " held all month at list price")
    report.cost_lines += [cost.model_cost_line(c) for c in cost.model_costs(cfg.inference.models, cfg.gpu_pools)]
    report.cost_lines += adapter_cost_lines(cfg.inference.models, cfg.gpu_pools)

    report.cold_start = cold_start.budgets(cfg, pools)
    report.model_ready = cold_start.models_ready(cfg)
    report.warnings += cold_start.unsourced_serving_facts(cfg)
    streamed = [pool for pool in cfg.gpu_pools if pool.cold_start.artifact_streaming]
    if streamed:
        # Artifact Streaming is GA, but the AgentPool API azure-native 3.29 sends (2025-09-01) has no
        # artifactStreamingProfile (tests/plan/test_cold_start.py watches the SDK): the switch is a step to take.
        names = ", ".join(p.name for p in streamed)
        report.notes.append(
            f"Next step for pools budgeted with artifact streaming ({names}): `az acr artifact-streaming update "
            f"--name {cfg.monitoring.registry.name or '<registry>'} --repository <repo> --enable-streaming true` "
            "for each GPU image "
            "repository, and `az aks nodepool update --resource-group <rg> --cluster-name "
            f"{cfg.cluster.name} --name <pool> --enable-artifact-streaming` for each pool (docs/gpu-pools.md); "
            "the program cannot set it through the pinned SDK."
        )

    counts = Counter(r.type for r in custom)
    report.resource_counts = [f"{DETAIL_INDENT}{n:3d}  {t}" for t, n in sorted(counts.items())]
    report.tree = tree_lines(recording, marker, DETAIL_INDENT)
    schema = cfg.cluster.schema_version
    by_status = Counter(v.status for v in verdicts)
    report.objects = wrap(
        f"{len(verdicts)} Kubernetes objects against the upstream OpenAPI schema {schema} (strict): "
        + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
        + " (custom resources have no upstream schema; the component tests check them)",
        "  ",
    )
    for v in verdicts:
        detail = f"  {v.detail}" if v.status == "invalid" else ""
        report.objects += wrap(f"{v.status:15s} {v.kind}/{v.name}{detail}", DETAIL_INDENT)
    for policy, violations in policies:
        status = "pass" if not violations else ("FAIL" if policy.mandatory else "advisory")
        report.policies += wrap(f"{status:8s} {policy.name}: {policy.description}", DETAIL_INDENT)
    report.outputs = "Stack outputs: " + ", ".join(
        f"{k}{' (secret)' if k in recording.secret_outputs else ''}" for k in sorted(recording.stack_outputs)
    )
    shown, here = out_dir.resolve(), Path.cwd()
    report.written_to = str(shown.relative_to(here) if shown.is_relative_to(here) else shown)
    return report


COLD_START_HEADER = ["stage", "time", "see"]
SWITCH_HEADER = ["switch", "now", "stage", "off", "on"]


def _cold_start_rows(budget: cold_start.PoolBudget, name_unbounded: bool = True) -> list[list[str]]:
    return [[s.name, cold_start.seconds(s.figure), f"[{i}]"] for i, s in enumerate(budget.stages, 1)] + [
        ["total", cold_start.total(budget, name_unbounded), ""]
    ]


def _cold_start_sources(budget: cold_start.PoolBudget) -> list[str]:
    """Each stage's figure: what it is, where it was published and when."""
    return (
        [
            f"[{i}] {s.figure.note}{'; ' if s.figure.note else ''}{s.figure.source} ({s.figure.published.isoformat()})"
            for i, s in enumerate(budget.stages, 1)
        ]
        + [f"{e.switch} costs: {e.cost}" for e in budget.effects]
        + budget.notes
    )


def _switch_rows(budget: cold_start.PoolBudget) -> list[list[str]]:
    return [
        [e.switch, "on" if e.on else "off", e.stage, cold_start.seconds(e.before), cold_start.seconds(e.after)]
        for e in budget.effects
    ]


def _cold_start_title(budget: cold_start.PoolBudget) -> str:
    return f"Cold start of pool {budget.pool} ({budget.vm_size}): pending GPU pod to a running job"


def _model_ready_title(budget: cold_start.PoolBudget) -> str:
    return f"Model ready for {budget.pool} ({budget.vm_size}): a new replica on a new node to its first token"


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def render_text(report: Report) -> str:
    lines = [report.title, "", "Verdicts"]
    lines += [line for e in report.errors for line in wrap(f"error: {e}", "  ")]
    lines += [line for w in report.warnings for line in wrap(f"warning: {w}", "  ")]
    lines += [line for n in report.notes for line in wrap(f"note: {n}", "  ")]
    if not report.errors and not report.warnings:
        lines.append("  no errors, no warnings")
    lines += ["", "Summary", "  Node pools:"]
    lines += _table(POOL_HEADER, report.pool_rows, "    ")
    lines += ["  vCPU quota at peak (maxCount plus upgrade surge; Spot pools count as low-priority):"]
    lines += _table(QUOTA_HEADER, report.quota_rows, "    ")
    lines += ["  Monthly estimate:"]
    lines += _table(COST_HEADER, report.cost_rows, "    ")
    lines += [line for c in report.cost_lines for line in wrap(c, "    ")]
    for budget in report.cold_start:
        lines += [f"  {_cold_start_title(budget)}:"]
        lines += _table(COLD_START_HEADER, _cold_start_rows(budget), "    ")
        lines += _table(SWITCH_HEADER, _switch_rows(budget), "    ")
        lines += [line for n in _cold_start_sources(budget) for line in wrap(n, "      ")]
    for budget in report.model_ready:
        lines += [f"  {_model_ready_title(budget)}:"]
        # Most of a model's stages are unpublished: the total counts them, the rows name them.
        lines += _table(COLD_START_HEADER, _cold_start_rows(budget, name_unbounded=False), "    ")
        lines += [line for n in _cold_start_sources(budget) for line in wrap(n, "      ")]
    lines += ["", "Detail", "  Resources:", *report.tree]
    lines += ["  Resources by type:", *report.resource_counts, *report.objects]
    lines += ["  Policy verdicts (the rules `pulumi preview --policy-pack policy` runs):", *report.policies]
    lines += ["  Images (each with its digest, or unpinned and why):", *wrap_all(report.images)]
    lines += wrap(report.outputs, "  ")
    lines.append(f"  Rendered objects, Helm values and plan.json written to {report.written_to}")
    return "\n".join(lines) + "\n"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def cells(row: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"

    return [cells(header), "|" + "---|" * len(header), *(cells(row) for row in rows)]


def _details(summary: str, lines: list[str]) -> list[str]:
    body = textwrap.dedent("\n".join(lines)).splitlines()
    return [f"<details><summary>{summary}</summary>", "", "```text", *body, "```", "", "</details>", ""]


def render_markdown(report: Report) -> str:
    lines = [f"### {report.title}", ""]
    lines += [f"- **error**: {e}" for e in report.errors]
    lines += [f"- **warning**: {w}" for w in report.warnings]
    lines += [f"- note: {n}" for n in report.notes]
    if not report.errors and not report.warnings:
        lines.append("No errors, no warnings.")
    lines += ["", "#### Node pools", "", *_md_table(POOL_HEADER, report.pool_rows), ""]
    lines += ["#### vCPU quota at peak (maxCount plus upgrade surge)", "", *_md_table(QUOTA_HEADER, report.quota_rows)]
    lines += ["", "#### Monthly estimate", "", *_md_table(COST_HEADER, report.cost_rows), ""]
    lines += [f"- {c}" for c in report.cost_lines] + [""]
    for budget in report.cold_start:
        lines += [f"#### {_cold_start_title(budget)}", "", *_md_table(COLD_START_HEADER, _cold_start_rows(budget)), ""]
        lines += [*_md_table(SWITCH_HEADER, _switch_rows(budget)), ""]
        lines += [f"- {n}" for n in _cold_start_sources(budget)] + [""]
    for budget in report.model_ready:
        rows = _cold_start_rows(budget, name_unbounded=False)
        lines += [f"#### {_model_ready_title(budget)}", "", *_md_table(COLD_START_HEADER, rows), ""]
        lines += [f"- {n}" for n in _cold_start_sources(budget)] + [""]
    lines += _details(f"Resources ({report.resource_total}) by component", report.tree)
    lines += _details("Resources by type", report.resource_counts)
    lines += _details("Kubernetes objects", report.objects)
    lines += _details("Policy verdicts", report.policies)
    lines += _details("Images (each with its digest, or unpinned and why)", report.images)
    lines += [report.outputs, ""]
    return "\n".join(lines)


def plan_summary(
    recording: Recording, cfg: PlatformConfig | None = None, report: Report | None = None
) -> dict[str, Any]:
    """What a reviewer compares between two plans: vCPU quota per family at peak, monthly floor and ceiling, what
    is billed but has no price, each team's quota ceiling; with `cfg` each model's cost, with `report` its
    verdicts (errors and warnings)."""
    pools = cost.pool_capacities(recording)
    needs, _ = cost.quota_needs(pools)
    estimate = cost.estimate_cost(recording, pools, cost.held_gpu_nodes(recording, pools))
    summary: dict[str, Any] = {
        "quota": {n.quota: n.vcpus for n in needs},
        "monthly": {"floor": round(estimate.floor, 2), "ceiling": round(estimate.ceiling, 2)},
        "unpriced": sorted(set(estimate.unpriced)),
        "teams": {
            t.team: {"gpus": t.gpus, "monthly": round(t.monthly, 2), "estimate": t.estimate}
            for t in cost.team_quota_ceilings(recording, pools)
        },
    }
    if cfg is not None:
        summary["models"] = {
            m.model: {"floor": m.floor, "ceiling": m.ceiling, "estimate": bool(m.gpu_hour and m.gpu_hour.estimate)}
            for m in cost.model_costs(cfg.inference.models, cfg.gpu_pools)
        }
    if report is not None:
        summary["verdicts"] = {"errors": list(report.errors), "warnings": list(report.warnings)}
    return summary


def fleet_lines(parts: Sequence[cost.FleetPart]) -> list[str]:
    """Per region the vCPU quota each family needs at peak (every pool at maxCount plus surge), and the cost."""
    lines = ["Fleet: vCPU quota at peak, per region and family (what to request before deploying)"]
    regions: dict[str, dict[str, int]] = {}
    for part in parts:
        for need in part.quota:
            family = regions.setdefault(part.region, {})
            family[need.quota] = family.get(need.quota, 0) + need.vcpus
    rows = [
        [region, quota, str(vcpus)] for region, families in sorted(regions.items()) for quota, vcpus in families.items()
    ]
    lines += _table(["region", "quota", "vCPUs"], rows)
    lines.append("Fleet: monthly cost (floor = every pool at minCount, ceiling = at maxCount)")
    rows = [
        [part.owner, part.region, cost.monthly_usd(part.estimate.floor), cost.monthly_usd(part.estimate.ceiling)]
        for part in parts
    ]
    rows.append(
        [
            "fleet",
            "",
            cost.monthly_usd(sum(p.estimate.floor for p in parts)),
            cost.monthly_usd(sum(p.estimate.ceiling for p in parts)),
        ]
    )
    lines += _table(["cluster", "region", "floor", "ceiling"], rows)
    unpriced = sorted({item for part in parts for item in part.estimate.unpriced})
    lines += [f"  not priced: {item}" for item in unpriced]
    return lines


def fleet_verdict_lines(plan: FleetPlan) -> list[str]:
    """The known limitations the fleet and each member platform hit (config/known_limits.py)."""
    warnings = hit(FLEET_LIMITS, plan)
    warnings += [f"member {m}: {w}" for m, cfg in plan.members.items() for w in hit(PLATFORM_LIMITS, cfg)]
    lines = ["Verdicts", *(line for w in warnings for line in wrap(f"warning: {w}", "  "))]
    return [*lines, "  no warnings"] if not warnings else lines


def fleet_main(stack: str, stack_config: dict[str, Any], plan: FleetPlan, out: Path | None, project: Path) -> int:
    """The offline plan of a fleet stack: every Kubernetes object validated, then quota and cost per region."""
    started = time.perf_counter()
    recording = run_stack(stack, stack_config, project_dir=project)
    print(
        f"evaluated fleet stack '{stack}' under Pulumi mocks in {time.perf_counter() - started:.1f}s", file=sys.stderr
    )
    marker = MockValueMarker(recording.mock_values)
    out_dir = out or project / "out" / stack
    verdicts = render_and_validate(recording, out_dir, plan.training.cluster.schema_version, marker)
    write_plan(plan_document(recording, stack, marker), out_dir)
    owners = {"manager": plan.fleet.manager.location, **{m: c.location for m, c in plan.members.items()}}
    print("\n".join(fleet_verdict_lines(plan)))
    print("\n".join(fleet_lines(cost.fleet_parts(recording, "fleet", owners))))
    invalid = [v for v in verdicts if v.status == "invalid"]
    if invalid:
        print(f"error: {len(invalid)} Kubernetes object(s) fail the schema", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default out/<stack>)")
    parser.add_argument(
        "--config-file", type=Path, default=None, help="stack YAML to use instead of Pulumi.<stack>.yaml"
    )
    parser.add_argument("--format", choices=("text", "markdown"), default="text", help="report format")
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="the Pulumi project to plan (default: the folder of the nearest Pulumi.yaml at or above this one)",
    )
    options = parser.parse_args(argv)

    try:
        project = options.project_dir or find_project()
        out_dir = options.out or project / "out" / options.stack
        stack_config = (
            load_stack_file(options.stack, project)
            if options.config_file is None
            else read_stack_yaml(options.config_file)
        )
        encoded, _ = to_runtime_config(stack_config, PROJECT)
        settings = settings_from_runtime_config(encoded)
        if is_fleet_stack(settings):
            return fleet_main(options.stack, stack_config, load_fleet(settings), options.out, project)
        cfg = load_platform_config(settings)
        started = time.perf_counter()
        recording = run_stack(options.stack, stack_config, project_dir=project)
        elapsed = time.perf_counter() - started
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    # Timing varies run to run, so it goes to stderr and stdout stays comparable.
    print(f"evaluated stack '{options.stack}' under Pulumi mocks in {elapsed:.1f}s", file=sys.stderr)

    marker = MockValueMarker(recording.mock_values)
    verdicts = render_and_validate(recording, out_dir, cfg.cluster.schema_version, marker)
    budgets = cold_start.budgets(cfg, cost.pool_capacities(recording))
    policies = policy_verdicts(recording, cfg.environment)
    secrets = secret_paths(stack_config)
    report = build_report(options.stack, cfg, recording, verdicts, policies, marker, out_dir, secrets)
    summary = plan_summary(recording, cfg, report)
    budget_rows = [cold_start.as_document(b) for b in budgets]
    write_plan(plan_document(recording, options.stack, marker, summary, budget_rows, stack_config), out_dir)
    sys.stdout.write(render_markdown(report) if options.format == "markdown" else render_text(report))

    failed = 0
    invalid = [v for v in verdicts if v.status == "invalid"]
    if invalid:
        print(f"error: {len(invalid)} Kubernetes object(s) fail the schema", file=sys.stderr)
        failed = 1
    mandatory = [v for policy, vs in policies if policy.mandatory for v in vs]
    if mandatory:
        print(f"error: {len(mandatory)} mandatory policy violation(s)", file=sys.stderr)
        failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
