"""The platform's guardrails as plain functions over Pulumi's wire shapes (camelCase inputs).

`make plan` runs them over the recorded resources; `policy/__main__.py` wraps the same
functions in a CrossGuard pack for `pulumi preview --policy-pack policy`. Resource rules take
one resource and the stack facts; stack rules see every resource (and the stack outputs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_LABEL_KEY,
    GPU_POOL_LABEL_VALUE,
    GPU_RESOURCE,
    GPU_TAINT,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
)
from aks_gpu_platform.policy_model import (
    AGENT_POOL,
    AML_FILESYSTEM,
    GENERIC_RESOURCE,
    LOG_ANALYTICS_WORKSPACE,
    MANAGED_CLUSTER,
    MONITOR_WORKSPACE,
    NETAPP_ACCOUNT,
    NETAPP_POOL,
    NETAPP_VOLUME,
    PDB,
    REGISTRY,
    STORAGE_ACCOUNT,
    Policy,
    Resource,
    StackFacts,
    Violation,
    field_at,
)

# Resources that hold data or every workload: replacing or deleting them in prod loses it
# (the workspaces hold the logs and metrics an incident review needs).
PROD_PROTECTED_TYPES = (
    MANAGED_CLUSTER,
    AML_FILESYSTEM,
    STORAGE_ACCOUNT,
    REGISTRY,
    LOG_ANALYTICS_WORKSPACE,
    MONITOR_WORKSPACE,
    NETAPP_ACCOUNT,
    NETAPP_POOL,
    NETAPP_VOLUME,
)
# Generic ARM resources of these providers hold data too (a Flexible NetApp pool).
PROD_PROTECTED_PROVIDERS = ("Microsoft.NetApp",)

# Storage minimum TLS versions that meet the baseline (TLS 1.2 or newer).
STORAGE_TLS_VERSIONS = ("TLS1_2", "TLS1_3")

# Azure's GPU VM families: NC (compute), ND (training), NV (visualization), NG (gaming).
GPU_VM_SIZE = re.compile(r"^Standard_N[CDVG]", re.IGNORECASE)

# Kind -> path from the object's `spec` to its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Deployment": ("template", "spec"),
    "StatefulSet": ("template", "spec"),
    "DaemonSet": ("template", "spec"),
    "ReplicaSet": ("template", "spec"),
    "Job": ("template", "spec"),
    "CronJob": ("jobTemplate", "spec", "template", "spec"),
}
REPLICATED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")

# Values that only ever appear in credentials, never in names, IDs or URLs.
CREDENTIAL_MARKERS = (
    "client-key-data",
    "client-certificate-data",
    "AccountKey=",
    "SharedAccessKey=",
    "SharedAccessSignature",
    "sig=",
    "password",
    "-----BEGIN",
    "token:",
)
KUBECONFIG_MARKERS = ("clusters:", "current-context", '"clusters"')


def is_gpu_pool(inputs: Mapping[str, Any]) -> bool:
    """A pool is a GPU pool when its VM size is a GPU family or it claims the GPU label."""
    labels = inputs.get("nodeLabels") or {}
    return bool(GPU_VM_SIZE.match(str(inputs.get("vmSize", "")))) or labels.get(GPU_POOL_LABEL_KEY) == (
        GPU_POOL_LABEL_VALUE
    )


def _pool_profiles(resource: Resource) -> list[Mapping[str, Any]]:
    if resource.type == AGENT_POOL:
        return [resource.inputs]
    if resource.type == GENERIC_RESOURCE and resource.inputs.get("resourceType") == "agentPools":
        # aksManaged pools: the AgentPool body through the generic ARM resource (a newer API version).
        return [{**(resource.inputs.get("properties") or {}), "agentPoolName": resource.inputs.get("resourceName")}]
    if resource.type == MANAGED_CLUSTER:
        return list(resource.inputs.get("agentPoolProfiles") or [])
    return []


def check_gpu_pool_taint_and_label(resource: Resource, stack: StackFacts) -> list[str]:
    problems: list[str] = []
    for pool in _pool_profiles(resource):
        if not is_gpu_pool(pool):
            continue
        name = pool.get("agentPoolName") or pool.get("name") or resource.name
        if GPU_TAINT not in (pool.get("nodeTaints") or []):
            problems.append(f"GPU pool {name} must carry the taint {GPU_TAINT} so only GPU workloads land on it")
        if (pool.get("nodeLabels") or {}).get(GPU_POOL_LABEL_KEY) != GPU_POOL_LABEL_VALUE:
            problems.append(
                f"GPU pool {name} must carry the label {GPU_POOL_LABEL_KEY}={GPU_POOL_LABEL_VALUE} "
                "so GPU workloads can select it (also when scaling from zero)"
            )
    return problems


def pod_spec(resource: Resource) -> tuple[str, Mapping[str, Any]] | None:
    """(kind, pod spec) of a Kubernetes workload object, or None for anything else."""
    if not resource.type.startswith("kubernetes:"):
        return None
    kind = resource.type.rsplit(":", 1)[-1]
    path = POD_SPEC_PATHS.get(kind)
    if path is None:
        return None
    spec = field_at(resource.inputs.get("spec"), *path) if path else resource.inputs.get("spec")
    return (kind, spec) if isinstance(spec, Mapping) else None


def _selects_gpu_nodes(spec: Mapping[str, Any]) -> bool:
    if (spec.get("nodeSelector") or {}).get(GPU_POOL_LABEL_KEY) == GPU_POOL_LABEL_VALUE:
        return True
    required = field_at(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    for term in (required or {}).get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if (
                expression.get("key") == GPU_POOL_LABEL_KEY
                and expression.get("operator") == "In"
                and GPU_POOL_LABEL_VALUE in (expression.get("values") or [])
            ):
                return True
    return False


def _tolerates_gpu_taint(spec: Mapping[str, Any]) -> bool:
    for toleration in spec.get("tolerations") or []:
        effect_ok = toleration.get("effect") in (None, "", GPU_TAINT_EFFECT)
        if toleration.get("operator") == "Exists" and toleration.get("key") in (None, "", GPU_TAINT_KEY) and effect_ok:
            return True
        if toleration.get("key") == GPU_TAINT_KEY and toleration.get("value") == GPU_TAINT_VALUE and effect_ok:
            return True
    return False


def _requests_gpu(spec: Mapping[str, Any]) -> bool:
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        if GPU_RESOURCE in (resources.get("limits") or {}) or GPU_RESOURCE in (resources.get("requests") or {}):
            return True
    return False


def check_gpu_workload_scheduling(resource: Resource, stack: StackFacts) -> list[str]:
    found = pod_spec(resource)
    if found is None:
        return []
    kind, spec = found
    if not _selects_gpu_nodes(spec):
        return []
    problems: list[str] = []
    if not _tolerates_gpu_taint(spec):
        problems.append(f"{kind} selects GPU nodes but does not tolerate {GPU_TAINT}; it would never schedule")
    if kind != "DaemonSet" and not _requests_gpu(spec):
        problems.append(
            f"{kind} selects GPU nodes but requests no {GPU_RESOURCE}; only node agents (DaemonSets) may "
            "hold a GPU node without a GPU"
        )
    return problems


def check_autoscaled_pool_ignores_count(resource: Resource, stack: StackFacts) -> list[str]:
    ignored = set(resource.ignore_changes)
    if resource.type == AGENT_POOL:
        if resource.inputs.get("enableAutoScaling") and "count" not in ignored:
            return ["autoscaled pool must list `count` in ignore_changes; the autoscaler owns the node count"]
        return []
    if resource.type == MANAGED_CLUSTER and "agentPoolProfiles" not in ignored:
        problems: list[str] = []
        for i, pool in enumerate(resource.inputs.get("agentPoolProfiles") or []):
            if pool.get("enableAutoScaling") and f"agentPoolProfiles[{i}].count" not in ignored:
                problems.append(
                    f"inline autoscaled pool {pool.get('name')} must have agentPoolProfiles[{i}].count "
                    "(or agentPoolProfiles) in ignore_changes"
                )
        return problems
    return []


def check_prod_stateful_protected(resource: Resource, stack: StackFacts) -> list[str]:
    stateful = resource.type in PROD_PROTECTED_TYPES or (
        resource.type == GENERIC_RESOURCE
        and resource.inputs.get("resourceProviderNamespace") in PROD_PROTECTED_PROVIDERS
    )
    if stack.environment != "prod" or not stateful or resource.protect:
        return []
    kind = resource.type.rsplit(":", 1)[-1]
    return [f"prod {kind} holds data or every workload and must be protected (protect=True)"]


def check_lts_requires_premium(resource: Resource, stack: StackFacts) -> list[str]:
    if resource.type != MANAGED_CLUSTER or resource.inputs.get("supportPlan") != "AKSLongTermSupport":
        return []
    tier = field_at(resource.inputs, "sku", "tier")
    if tier != "Premium":
        return [f"supportPlan AKSLongTermSupport needs sku.tier Premium (got {tier!r}); Azure rejects it otherwise"]
    return []


def check_no_registry_admin_user(resource: Resource, stack: StackFacts) -> list[str]:
    if resource.type == REGISTRY and resource.inputs.get("adminUserEnabled"):
        return ["registry admin user must stay disabled; pull with the kubelet identity (AcrPull) instead"]
    return []


def check_no_public_blob_access(resource: Resource, stack: StackFacts) -> list[str]:
    if resource.type == STORAGE_ACCOUNT and resource.inputs.get("allowBlobPublicAccess") is not False:
        got = resource.inputs.get("allowBlobPublicAccess")
        return [f"storage account must set allowBlobPublicAccess: false explicitly (got {got!r})"]
    return []


def check_storage_tls_https(resource: Resource, stack: StackFacts) -> list[str]:
    if resource.type != STORAGE_ACCOUNT:
        return []
    problems: list[str] = []
    tls = resource.inputs.get("minimumTlsVersion")
    if tls not in STORAGE_TLS_VERSIONS:
        problems.append(
            f"storage account must set minimumTlsVersion TLS1_2 or newer (got {tls!r}; Azure's default is TLS1_0)"
        )
    if resource.inputs.get("enableHttpsTrafficOnly") is not True:
        got = resource.inputs.get("enableHttpsTrafficOnly")
        problems.append(f"storage account must set enableHttpsTrafficOnly: true explicitly (got {got!r})")
    return problems


def check_prod_encryption_at_host(resource: Resource, stack: StackFacts) -> list[str]:
    if stack.environment != "prod":
        return []
    return [
        f"prod pool {pool.get('agentPoolName') or pool.get('name') or resource.name} must set "
        "enableEncryptionAtHost: true (temp disks and disk caches encrypted on the host; only settable at creation)"
        for pool in _pool_profiles(resource)
        if pool.get("enableEncryptionAtHost") is not True
    ]


def check_prod_storage_private(resource: Resource, stack: StackFacts) -> list[str]:
    if stack.environment != "prod" or resource.type != STORAGE_ACCOUNT:
        return []
    access = resource.inputs.get("publicNetworkAccess")
    if access != "Disabled":
        return [
            f"prod storage account must set publicNetworkAccess: Disabled and use a private endpoint (got {access!r})"
        ]
    return []


def looks_like_credentials(value: Any) -> str | None:
    """Why a plain value would leak credentials (a kubeconfig, a key, a connection string), or None."""
    if isinstance(value, Mapping):
        for key, item in value.items():  # type: ignore[union-attr]
            if str(key).lower() in {"kubeconfig", "password", "primarykey", "secondarykey", "connectionstring"}:
                return f"key {key!r} holds credentials"
            reason = looks_like_credentials(item)
            if reason:
                return reason
        return None
    if isinstance(value, list | tuple):
        for item in value:  # type: ignore[union-attr]
            reason = looks_like_credentials(item)
            if reason:
                return reason
        return None
    if not isinstance(value, str):
        return None
    if any(marker in value for marker in KUBECONFIG_MARKERS):
        return "it is a kubeconfig"
    for marker in CREDENTIAL_MARKERS:
        if marker.lower() in value.lower():
            return f"it contains {marker!r}"
    return None


def check_stack_outputs_secret(resources: Sequence[Resource], stack: StackFacts) -> list[Violation]:
    violations: list[Violation] = []
    for key, value in sorted(stack.outputs.items()):
        if key in stack.secret_outputs:
            continue
        reason = "its name says kubeconfig" if "kubeconfig" in key.lower() else looks_like_credentials(value)
        if reason:
            violations.append(Violation("no-plain-text-credentials", f"output {key}", f"must be a secret: {reason}"))
    return violations


def _int_or_percent(value: Any, replicas: int) -> int | None:
    """Pods a PDB bound stands for (percentages round up, as the disruption controller does)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return -(-int(value[:-1]) * replicas // 100)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _namespace(resource: Resource) -> str:
    return str(field_at(resource.inputs, "metadata", "namespace") or "default")


def _replicas_selected(pdb: Resource, resources: Iterable[Resource]) -> int | None:
    selector = field_at(pdb.inputs, "spec", "selector", "matchLabels") or {}
    if not selector:
        return None
    total: int | None = None
    for resource in resources:
        kind = resource.type.rsplit(":", 1)[-1]
        if kind not in REPLICATED_KINDS or _namespace(resource) != _namespace(pdb):
            continue
        labels = field_at(resource.inputs, "spec", "template", "metadata", "labels") or {}
        if all(labels.get(k) == v for k, v in selector.items()):
            total = (total or 0) + int(field_at(resource.inputs, "spec", "replicas") or 1)
    return total


def check_pdbs_satisfiable(resources: Sequence[Resource], stack: StackFacts) -> list[Violation]:
    violations: list[Violation] = []
    for pdb in resources:
        if pdb.type != PDB:
            continue
        spec = pdb.inputs.get("spec") or {}
        min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")

        def fail(message: str, pdb: Resource = pdb) -> None:
            violations.append(Violation("pdb-satisfiable", pdb.name, message))

        if (min_available is None) == (max_unavailable is None):
            fail("set exactly one of minAvailable and maxUnavailable")
            continue
        if max_unavailable is not None and _int_or_percent(max_unavailable, 100) == 0:
            fail("maxUnavailable 0 blocks every node drain and so every upgrade")
            continue
        if min_available is not None and min_available == "100%":
            fail("minAvailable 100% blocks every node drain and so every upgrade")
            continue
        replicas = _replicas_selected(pdb, resources)
        if replicas is None:
            continue
        if min_available is not None:
            needed = _int_or_percent(min_available, replicas)
            if needed is not None and needed >= replicas:
                fail(f"minAvailable {min_available} leaves no pod evictable out of {replicas} replica(s)")
        elif _int_or_percent(max_unavailable, replicas) == 0:
            fail(f"maxUnavailable {max_unavailable} rounds to 0 of {replicas} replica(s)")
    return violations


POLICIES: tuple[Policy, ...] = (
    Policy(
        "gpu-pool-taint-and-label",
        "Every GPU pool carries the GPU taint and the pool=gpu label.",
        resource_check=check_gpu_pool_taint_and_label,
    ),
    Policy(
        "gpu-workload-scheduling",
        "Workloads that select GPU nodes tolerate the GPU taint and request nvidia.com/gpu (or are node agents).",
        resource_check=check_gpu_workload_scheduling,
    ),
    Policy(
        "autoscaled-pool-ignores-count",
        "Autoscaled pools ignore changes to count, which the cluster autoscaler owns.",
        resource_check=check_autoscaled_pool_ignores_count,
    ),
    Policy(
        "prod-stateful-protected",
        "In prod the cluster, Lustre, storage accounts, registries and the log and metrics workspaces are protected.",
        resource_check=check_prod_stateful_protected,
    ),
    Policy(
        "lts-requires-premium",
        "The AKS Long Term Support plan runs only on the Premium tier.",
        resource_check=check_lts_requires_premium,
    ),
    Policy(
        "no-registry-admin-user",
        "Container registries keep the shared admin user disabled.",
        resource_check=check_no_registry_admin_user,
    ),
    Policy(
        "no-public-blob-access",
        "Storage accounts forbid anonymous public blob access.",
        resource_check=check_no_public_blob_access,
    ),
    Policy(
        "storage-tls-https",
        "Storage accounts require TLS 1.2+ and HTTPS only.",
        resource_check=check_storage_tls_https,
    ),
    Policy(
        "prod-encryption-at-host",
        "In prod every node pool encrypts temp disks and disk caches at the VM host.",
        resource_check=check_prod_encryption_at_host,
    ),
    Policy(
        "prod-storage-private",
        "In prod storage accounts are not publicly reachable (public network access disabled, private endpoint).",
        resource_check=check_prod_storage_private,
    ),
    Policy(
        "no-plain-text-credentials",
        "No stack output carries a kubeconfig, key or connection string in plain text.",
        stack_check=check_stack_outputs_secret,
    ),
    Policy(
        "pdb-satisfiable",
        "Every PodDisruptionBudget leaves at least one pod evictable, so drains and upgrades can proceed.",
        stack_check=check_pdbs_satisfiable,
    ),
)


# Pulumi hands policy packs secret values already decrypted and unmarked, so a pack cannot tell a
# secret output from a plain one; this rule runs where secretness is known (`make plan`, tests).
OFFLINE_ONLY = frozenset({"no-plain-text-credentials"})


def evaluate(resources: Sequence[Resource], stack: StackFacts) -> list[tuple[Policy, list[Violation]]]:
    """Every policy with its violations (an empty list means it passed)."""
    verdicts: list[tuple[Policy, list[Violation]]] = []
    for policy in POLICIES:
        violations: list[Violation] = []
        if policy.resource_check is not None:
            for resource in resources:
                violations += [Violation(policy.name, resource.name, m) for m in policy.resource_check(resource, stack)]
        if policy.stack_check is not None:
            violations += policy.stack_check(resources, stack)
        verdicts.append((policy, violations))
    return verdicts
