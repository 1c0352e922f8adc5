"""`make plan`: evaluate a stack offline and print what `pulumi up` would create.

Runs the real program with the stack's real config under Pulumi mocks, prints the
component tree with each resource's decisive settings and a count by type, writes every
rendered Kubernetes object under out/<stack>/, and validates each against the upstream
Kubernetes OpenAPI schema of the cluster's version, and applies the policy pack's rules
(policy/rules.py) to every resource. Placeholder IDs, documentation IP ranges and example
addresses, which a real deployment refuses, are listed as warnings. Exit 1 on an invalid object
or a mandatory policy violation, 2 on a config error.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from config import ConfigError, load_platform_config
from config.loader import PROJECT, settings_from_runtime_config
from config.lustre_catalog import AMLFS_SKUS
from config.placeholders import Placeholder, find_placeholders
from policy.rules import Policy, Resource, StackFacts, Violation, evaluate

from .offline import RecordedResource, Recording, run_stack
from .render import ObjectVerdict, render_and_validate
from .stack_files import REPO_ROOT, load_stack_file, read_stack_yaml, secret_paths, to_runtime_config


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


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
        f"zones={i.get('availabilityZones')} "
        f"mode={i.get('mode')} taints={i.get('nodeTaints', [])} labels={i.get('nodeLabels', {})}{upgrade}"
        f" osDisk={i.get('osDiskType')}/{i.get('osDiskSizeGB')}G encryptionAtHost={i.get('enableEncryptionAtHost')}"
        + (f" driver={_get(i, 'gpuProfile', 'driver')}" if i.get("gpuProfile") else "")
        + (f" mig={i.get('gpuInstanceProfile')}" if i.get("gpuInstanceProfile") else "")
        + (f" priority={i.get('scaleSetPriority')}" if i.get("scaleSetPriority") else "")
    )


def _maintenance(i: dict[str, Any]) -> str:
    w = i.get("maintenanceWindow") or {}
    schedule = w.get("schedule") or {}
    when = (
        f"weekly {schedule['weekly'].get('dayOfWeek')}"
        if "weekly" in schedule
        else f"every {_get(schedule, 'daily', 'intervalDays')} day(s)"
    )
    frozen = [f"{d.get('start')}..{d.get('end')}" for d in w.get("notAllowedDates") or []]
    return (
        f"{i.get('configName')} {when} {w.get('startTime')} UTC{w.get('utcOffset')} for {w.get('durationHours')}h"
        f" frozen={frozen}"
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
        f"{capacity} TiB {sku} throughput={throughput} zones={i.get('zones')} "
        f"maintenance={_get(i, 'maintenanceWindow', 'dayOfWeek')} {_get(i, 'maintenanceWindow', 'timeOfDayUTC')} "
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


# Decisive settings per resource type; types not listed print their Azure name only.
SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "azure-native:containerservice:ManagedCluster": _cluster,
    "azure-native:containerservice:AgentPool": _pool,
    "azure-native:network:VirtualNetwork": lambda i: f"addressSpace={_get(i, 'addressSpace', 'addressPrefixes')}",
    "azure-native:network:Subnet": lambda i: f"{i.get('subnetName')} {i.get('addressPrefix')}",
    "azure-native:authorization:RoleAssignment": lambda i: (
        f"role={str(i.get('roleDefinitionId', '')).rsplit('/', 1)[-1]} principalType={i.get('principalType')}"
    ),
    "azure-native:storagecache:AmlFilesystem": _lustre,
    "azure-native:storage:StorageAccount": lambda i: (
        f"{i.get('accountName')} {_get(i, 'sku', 'name')} httpsOnly={i.get('enableHttpsTrafficOnly')} "
        f"tls={i.get('minimumTlsVersion')} publicBlob={i.get('allowBlobPublicAccess')} "
        f"publicNetwork={i.get('publicNetworkAccess')}"
    ),
    "kubernetes:storage.k8s.io/v1:StorageClass": lambda i: (
        f"{_get(i, 'metadata', 'name')} {i.get('provisioner')} reclaim={i.get('reclaimPolicy')} "
        f"params={i.get('parameters')}"
    ),
    "kubernetes:batch/v1:Job": lambda i: (
        f"{_get(i, 'metadata', 'name')} "
        f"images={[c.get('image') for c in _get(i, 'spec', 'template', 'spec', 'containers') or []]}"
    ),
    "azure-native:containerservice:MaintenanceConfiguration": _maintenance,
    "kubernetes:policy/v1:PodDisruptionBudget": lambda i: (
        f"{_get(i, 'metadata', 'namespace')}/{_get(i, 'metadata', 'name')} "
        + " ".join(f"{k}={v}" for k in ("minAvailable", "maxUnavailable") if (v := _get(i, "spec", k)) is not None)
        + f" selector={_get(i, 'spec', 'selector', 'matchLabels')}"
    ),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": lambda i: (
        f"{_get(i, 'metadata', 'namespace')}/{_get(i, 'metadata', 'name')} "
        f"types={_get(i, 'spec', 'policyTypes')} ingressRules={len(_get(i, 'spec', 'ingress') or [])} "
        f"egressRules={len(_get(i, 'spec', 'egress') or [])}"
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
        f"{c.get('groupIds')} -> {str(c.get('privateLinkServiceId', '')).rsplit('/', 1)[-1]}"
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
        f"emails={[r.get('emailAddress') for r in i.get('emailReceivers', [])]}"
    ),
    "kubernetes:azmonitoring.coreos.com/v1:PodMonitor": lambda i: (
        f"ns={_get(i, 'metadata', 'namespace')} selects={_get(i, 'spec', 'selector', 'matchLabels')}"
    ),
}


def describe(resource: RecordedResource) -> str:
    summary = SUMMARIES.get(resource.type)
    text = summary(resource.inputs) if summary else ""
    flags = [flag for flag, on in (("protected", resource.protect), ("retain", resource.retain_on_delete)) if on]
    if resource.ignore_changes:
        flags.append(f"ignores {','.join(resource.ignore_changes)}")
    suffix = f"  [{'; '.join(flags)}]" if flags else ""
    return f"{resource.type} {resource.name}  {text}{suffix}".rstrip()


def print_tree(recording: Recording, out: Callable[[str], None]) -> None:
    children: dict[str, list[RecordedResource]] = {}
    for r in recording.resources:
        children.setdefault(r.parent, []).append(r)
    urns = {r.urn for r in recording.resources}
    roots = [r for r in recording.resources if r.parent not in urns]

    def walk(node: RecordedResource, depth: int) -> None:
        out("  " * depth + describe(node))
        for kid in children.get(node.urn, []):
            walk(kid, depth + 1)

    for root in roots:
        walk(root, 1)


def print_counts(recording: Recording, out: Callable[[str], None]) -> None:
    counts = Counter(r.type for r in recording.resources if r.custom)
    out(f"Resources by type ({sum(counts.values())} in all):")
    for type_token, n in sorted(counts.items()):
        out(f"  {n:3d}  {type_token}")


def print_verdicts(verdicts: list[ObjectVerdict], out: Callable[[str], None], version: str) -> None:
    out(f"Kubernetes objects ({len(verdicts)}) against the upstream OpenAPI schema {version} (strict):")
    for v in verdicts:
        detail = f"  {v.detail}" if v.detail else ""
        out(f"  {v.status:15s} {v.kind}/{v.name}{detail}")


def policy_inputs(recording: Recording, environment: str) -> tuple[list[Resource], StackFacts]:
    """The recorded resources and outputs in the shape the policy rules (and CrossGuard) see."""
    resources = [
        Resource(
            type=r.type,
            name=r.name,
            inputs=r.inputs,
            protect=r.protect,
            ignore_changes=tuple(r.ignore_changes),
            urn=r.urn,
        )
        for r in recording.resources
        if r.custom
    ]
    facts = StackFacts(
        environment=environment,
        outputs=dict(recording.stack_outputs),
        secret_outputs=frozenset(recording.secret_outputs),
    )
    return resources, facts


def policy_verdicts(recording: Recording, environment: str) -> list[tuple[Policy, list[Violation]]]:
    return evaluate(*policy_inputs(recording, environment))


def print_policy_verdicts(verdicts: list[tuple[Policy, list[Violation]]], out: Callable[[str], None]) -> None:
    out(f"Policy verdicts ({len(verdicts)} policies, same rules as `pulumi preview --policy-pack policy`):")
    for policy, violations in verdicts:
        status = "pass" if not violations else ("FAIL" if policy.mandatory else "advisory")
        out(f"  {status:8s} {policy.name}  {policy.description}")
        for violation in violations:
            out(f"           - {violation.resource}: {violation.message}")


def print_placeholders(placeholders: list[Placeholder], out: Callable[[str], None]) -> None:
    """Warnings only: offline, stand-in IDs and addresses are fine; a real deployment refuses them."""
    if not placeholders:
        out("Placeholders: none; the config is ready for a real deployment.")
        return
    refused = sum(p.deployed for p in placeholders)
    out(
        f"Placeholders ({len(placeholders)}): `pulumi preview` / `pulumi up` refuse the {refused} that would reach "
        "Azure until they are replaced:"
    )
    for p in placeholders:
        where = "" if p.deployed else " (its section is switched off: replace it before switching it on)"
        out(f"  warning: {p.problem()}{where}")


def print_secrets(paths: list[str], out: Callable[[str], None]) -> None:
    """Encrypted values cannot be read offline: say which ones the plan stood in for."""
    if paths:
        out(
            f"Secrets ({len(paths)}): encrypted (secure:) in the stack file; the Pulumi CLI decrypts them, this "
            f"offline plan used placeholders that fit each field: {', '.join(paths)}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default out/<stack>)")
    parser.add_argument(
        "--config-file", type=Path, default=None, help="stack YAML to use instead of Pulumi.<stack>.yaml"
    )
    options = parser.parse_args(argv)
    out_dir = options.out or REPO_ROOT / "out" / options.stack

    try:
        stack_config = (
            load_stack_file(options.stack) if options.config_file is None else read_stack_yaml(options.config_file)
        )
        encoded, _ = to_runtime_config(stack_config, PROJECT)
        cfg = load_platform_config(settings_from_runtime_config(encoded))
        started = time.perf_counter()
        recording = run_stack(options.stack, stack_config)
        elapsed = time.perf_counter() - started
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    print(f"Plan for stack '{options.stack}' ({cfg.location}), evaluated offline under Pulumi mocks in {elapsed:.1f}s")
    print_tree(recording, print)
    print()
    print_counts(recording, print)
    print()
    version = cfg.cluster.schema_version
    verdicts = render_and_validate(recording, out_dir, version)
    print_verdicts(verdicts, print, version)
    print(f"\nRendered objects and Helm values written to {out_dir}")
    print(
        "Stack outputs: "
        + ", ".join(
            f"{k}{' (secret)' if k in recording.secret_outputs else ''}" for k in sorted(recording.stack_outputs)
        )
    )
    print()
    policies = policy_verdicts(recording, cfg.environment)
    print_policy_verdicts(policies, print)
    print()
    secrets = secret_paths(stack_config)
    # A secret's stand-in is the plan's own placeholder: the CLI decrypts the real value.
    print_placeholders([p for p in find_placeholders(cfg) if p.path not in secrets], print)
    print_secrets(secrets, print)
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
