"""The plan's verdicts: errors (mandatory policy violations, objects the Kubernetes schema rejects), warnings
(advisory violations, placeholders, known limits, images pulled anonymously or from public registries, GPU nodes
kept up around the clock) and notes (next steps after `pulumi up`), each in full."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from aks_gpu_platform.components.addons import docker_hub_pulls
from aks_gpu_platform.components.inference.autoscaling import KEDA_OPERATOR_SUBJECT
from aks_gpu_platform.components.inference.gateway_identity import shared_prefix_cache_warnings
from aks_gpu_platform.components.monitoring.grafana import GRAFANA_TEAM_PREFIX
from aks_gpu_platform.config import PlatformConfig
from aks_gpu_platform.config.catalog.images import FROM_UPSTREAM, UPSTREAMS, unpinned_reason
from aks_gpu_platform.config.known_limits import PLATFORM_LIMITS, hit
from aks_gpu_platform.config.placeholders import find_placeholders
from aks_gpu_platform.policy_rules import Policy, Violation
from aks_gpu_platform.testing import Recording

from . import cold_start
from .cost import HeldGpuNodes, PoolCapacity, monthly_usd, node_price
from .mock_values import MockValueMarker
from .render import ObjectVerdict

Level = Literal["error", "warning", "note"]
LEVELS: tuple[Level, ...] = ("error", "warning", "note")


@dataclass(frozen=True)
class Verdict:
    level: Level
    text: str
    """In full: what plan.json keeps and the detail prints."""
    placeholder: str = ""
    """A placeholder's config path: the first screen names every placeholder on one line."""
    deployed: bool = True
    """For a placeholder: it would reach Azure (its section is on), so `pulumi up` refuses it."""


def as_warnings(texts: Sequence[str]) -> list[Verdict]:
    return [Verdict("warning", text) for text in texts]


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
    found: list[str] = []
    for rule in recording.of_type("azure-native:containerregistry:CacheRule"):
        host = str(rule.inputs.get("sourceRepository", "")).removesuffix("/*")
        upstream = UPSTREAMS.get(host)
        if upstream is None or not upstream.rate_limited or rule.inputs.get("credentialSetResourceId"):
            continue
        pulled = sorted(i for i in image_references(recording) if f".azurecr.io/{upstream.target}/" in i)
        if pulled:
            found.append(
                f"the registry's cache rule {rule.inputs.get('cacheRuleName')} pulls {host} anonymously (no credential "
                f"set): its limit of anonymous pulls applies to the registry's first pull of each image, not to every "
                f"node, and a new tag pulls again; {len(pulled)} images come through it: {', '.join(pulled)}"
            )
    return found


def docker_hub_warnings(recording: Recording) -> list[str]:
    """One warning per release that pulls images anonymously from Docker Hub (10 pulls per hour per egress IPv4
    address for unauthenticated users, docs.docker.com/docker-hub/usage/; AKS nodes share the cluster's egress IPs),
    naming each image its add-on lists (components/addons.py)."""
    pulls = docker_hub_pulls()
    return [
        f"release {release.name} pulls {len(images)} images anonymously from Docker Hub, which allows 10 "
        f"anonymous pulls per hour per egress IP: a first install or a node replacement can stall on "
        f"`toomanyrequests`; mirror them or set Docker Hub credentials: {', '.join(images)}"
        for release in recording.of_type("kubernetes:helm.sh/v3:Release")
        if (images := pulls.get(str(release.inputs.get("chart"))))
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


def public_registry_warning() -> str:
    """The chart defaults that no values key moves to the platform's registry (config/catalog/images.py)."""
    return (
        f"{len(FROM_UPSTREAM)} chart defaults are pulled from public registries, not through the platform's registry, "
        "where their release is installed: " + "; ".join(f"{pattern} ({who})" for pattern, who in FROM_UPSTREAM.items())
    )


def error_verdicts(
    policies: Sequence[tuple[Policy, Sequence[Violation]]],
    objects: Sequence[ObjectVerdict],
    schema: str,
    marker: MockValueMarker,
) -> list[Verdict]:
    """Policy violations (errors where the policy is mandatory, warnings where advisory) and invalid objects."""
    found = [
        Verdict(
            "error" if policy.mandatory else "warning",
            marker.text(f"policy {policy.name}: {violation.resource}: {violation.message}"),
        )
        for policy, violations in policies
        for violation in violations
    ]
    found += [
        Verdict("error", f"{v.kind}/{v.name} fails the Kubernetes {schema} schema: {v.detail}")
        for v in objects
        if v.status == "invalid"
    ]
    return found


def placeholder_verdicts(cfg: PlatformConfig, secrets: Sequence[str]) -> list[Verdict]:
    """One warning per placeholder (a secret's stand-in is the plan's own: the CLI decrypts the real value), and a
    note naming the encrypted values the plan stood in for."""
    found: list[Verdict] = []
    for p in find_placeholders(cfg):
        if p.path not in secrets:
            where = "" if p.deployed else " (its section is off: replace it before switching it on)"
            found.append(Verdict("warning", f"placeholder {p.problem()}{where}", p.path, p.deployed))
    if secrets:
        found.append(
            Verdict(
                "note",
                f"Secrets ({len(secrets)}): encrypted (secure:) in the stack file; the Pulumi CLI decrypts them, this "
                f"offline plan used placeholders that fit each field: {', '.join(secrets)}",
            )
        )
    return found


def platform_verdicts(cfg: PlatformConfig, recording: Recording) -> list[Verdict]:
    """What the stack's config and charts leave open: known limits, shared metrics, caches and fabrics, images."""
    found = as_warnings(docker_hub_warnings(recording))
    found += as_warnings(hit(PLATFORM_LIMITS, cfg))
    found += as_warnings(shared_metrics_warnings(recording))
    found += as_warnings(
        shared_prefix_cache_warnings([(m.name, m.teams, m.shared_prefix_cache) for m in cfg.inference.models])
    )
    found += as_warnings(shared_infiniband_warnings(cfg))
    found.append(Verdict("warning", public_registry_warning()))
    found += as_warnings(anonymous_cache_warnings(recording))
    federated = recording.of_type("azure-native:managedidentity:FederatedIdentityCredential")
    if any(f.inputs.get("subject") == KEDA_OPERATOR_SUBJECT for f in federated):
        # Microsoft's KEDA add-on workload-identity guide: the operator gets its identity environment at pod start.
        found.append(
            Verdict(
                "note",
                "Next step after the first `pulumi up`: `kubectl -n kube-system rollout restart deployment "
                "keda-operator`. The AKS KEDA add-on's operator started before its federated credential existed and "
                "reads workload identity only when its pod starts; until restarted, every GPU ScaledObject fails to "
                "query the Azure Monitor workspace (docs/autoscaling.md).",
            )
        )
    return found


def _per_month(pool: PoolCapacity, nodes: int, region: str) -> str:
    price = node_price(pool, region)
    return f"no price ({price})" if isinstance(price, str) else f"{monthly_usd(nodes * price.monthly)}/month"


def node_verdicts(
    pools: Sequence[PoolCapacity], held: Sequence[HeldGpuNodes], unknown: Sequence[PoolCapacity], region: str
) -> list[Verdict]:
    """GPU nodes paid around the clock (a pool's minimum, a workload's minimum replicas), each at its node price;
    pools whose size the catalogs lack."""
    found = [
        Verdict(
            "warning",
            f"GPU pool {pool.name} keeps {pool.min_count} x {pool.vm_size} running around the clock (minCount "
            f"{pool.min_count}): {_per_month(pool, pool.min_count, region)}",
        )
        for pool in pools
        if pool.gpus_per_vm and pool.min_count > 0
    ]
    found += [
        Verdict(
            "warning",
            f"pool {hold.pool.name} kept up around the clock by {hold.workload}: "
            f"{_per_month(hold.pool, hold.nodes, region)} for {hold.nodes} x {hold.pool.vm_size} ({hold.why}); "
            "minReplicaCount 0 lets the pool scale to zero when idle",
        )
        for hold in held
    ]
    found += [
        Verdict("warning", f"pool {pool.name}: {pool.vm_size} is not in the catalogs, its vCPUs are not counted")
        for pool in unknown
    ]
    return found


def serving_verdicts(cfg: PlatformConfig) -> list[Verdict]:
    """What the served models' budgets assume unsourced, and the steps a pool budgeted with streaming needs."""
    found = as_warnings(cold_start.unsourced_serving_facts(cfg))
    streamed = [pool for pool in cfg.gpu_pools if pool.cold_start.artifact_streaming]
    if streamed:
        # Artifact Streaming is GA, but the AgentPool API azure-native 3.29 sends (2025-09-01) has no
        # artifactStreamingProfile (tests/plan/test_cold_start.py watches the SDK): the switch is a step to take.
        names = ", ".join(p.name for p in streamed)
        found.append(
            Verdict(
                "note",
                f"Next step for pools budgeted with artifact streaming ({names}): `az acr artifact-streaming update "
                f"--name {cfg.monitoring.registry.name or '<registry>'} --repository <repo> --enable-streaming true` "
                "for each GPU image repository, and `az aks nodepool update --resource-group <rg> --cluster-name "
                f"{cfg.cluster.name} --name <pool> --enable-artifact-streaming` for each pool (docs/gpu-pools.md); "
                "the program cannot set it through the pinned SDK.",
            )
        )
    return found
