"""Each mandatory policy rejects a violating resource and accepts a compliant one (wire-shaped inputs)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aks_gpu_platform import policy_model as model
from aks_gpu_platform import policy_rules as rules
from aks_gpu_platform.config.gpu.scheduling import GPU_TAINT, gpu_pod_scheduling
from aks_gpu_platform.policy_model import Resource, StackFacts
from aks_gpu_platform.testing import Recording, policy_verdicts
from aks_gpu_platform.testing.checks import policy_inputs

PROD = StackFacts(environment="prod")
DEV = StackFacts(environment="dev")


def _recorded(recording: Recording, type_token: str, name: str) -> Resource:
    r = recording.one(type_token, name)
    return Resource(r.type, r.name, copy.deepcopy(r.inputs), r.protect, tuple(r.ignore_changes), r.urn)


def _gpu_pool(recording: Recording) -> Resource:
    """The recorded CPU pool turned into a GPU pool the way the GPU pool component shapes it."""
    cpu = _recorded(recording, model.AGENT_POOL, "cpu")
    inputs = {
        **cpu.inputs,
        "agentPoolName": "gpua100",
        "vmSize": "Standard_NC24ads_A100_v4",
        "minCount": 0,
        "nodeTaints": [GPU_TAINT],
        "nodeLabels": {"pool": "gpu", "gpu-pool": "gpua100"},
    }
    return Resource(model.AGENT_POOL, "gpua100-pool", inputs, False, ("count",))


def _workload(kind: str, pod: dict[str, Any], replicas: int | None = None) -> Resource:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": pod}
    spec: dict[str, Any]
    if kind == "Pod":
        spec = pod
    elif kind == "CronJob":
        spec = {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}
    else:
        spec = {"selector": {"matchLabels": {"app": "x"}}, "template": template}
    if replicas is not None:
        spec["replicas"] = replicas
    api = {"Pod": "core/v1", "Job": "batch/v1", "CronJob": "batch/v1"}.get(kind, "apps/v1")
    return Resource(f"kubernetes:{api}:{kind}", f"x-{kind.lower()}", {"metadata": {"namespace": "ml"}, "spec": spec})


def _container(gpus: int = 0) -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "resources": {"limits": limits}}


# --- gpu-pool-taint-and-label ----------------------------------------------------------------------


def test_gpu_pool_with_taint_and_label_passes(prod_recording: Recording) -> None:
    assert rules.check_gpu_pool_taint_and_label(_gpu_pool(prod_recording), PROD) == []


@pytest.mark.parametrize("drop", ["nodeTaints", "nodeLabels"])
def test_gpu_pool_without_taint_or_label_is_rejected(prod_recording: Recording, drop: str) -> None:
    pool = _gpu_pool(prod_recording)
    inputs = {k: v for k, v in pool.inputs.items() if k != drop}
    problems = rules.check_gpu_pool_taint_and_label(Resource(pool.type, pool.name, inputs), PROD)
    assert len(problems) == 1 and "gpua100" in problems[0], "a GPU pool missing its marking must be named"


def test_cpu_pool_is_not_held_to_the_gpu_marking(prod_recording: Recording) -> None:
    cpu = _recorded(prod_recording, model.AGENT_POOL, "cpu")
    assert rules.check_gpu_pool_taint_and_label(cpu, PROD) == [], "CPU pools carry no GPU taint"


def test_inline_gpu_profile_in_the_cluster_is_checked_too(prod_recording: Recording) -> None:
    cluster = _recorded(prod_recording, model.MANAGED_CLUSTER, "aks")
    profiles = [*cluster.inputs["agentPoolProfiles"], {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3"}]
    broken = Resource(cluster.type, cluster.name, {**cluster.inputs, "agentPoolProfiles": profiles})
    assert len(rules.check_gpu_pool_taint_and_label(broken, PROD)) == 2


# --- gpu-workload-scheduling -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "Job", "CronJob", "StatefulSet"])
def test_gpu_workload_that_tolerates_and_requests_gpus_passes(kind: str) -> None:
    workload = _workload(kind, {**gpu_pod_scheduling(), "containers": [_container(gpus=1)]})
    assert rules.check_gpu_workload_scheduling(workload, PROD) == []


def test_gpu_workload_without_toleration_is_rejected() -> None:
    pod = {"nodeSelector": {"pool": "gpu"}, "containers": [_container(gpus=1)]}
    problems = rules.check_gpu_workload_scheduling(_workload("Job", pod), PROD)
    assert len(problems) == 1 and "tolerate" in problems[0]


def test_gpu_workload_without_gpu_request_is_rejected() -> None:
    problems = rules.check_gpu_workload_scheduling(
        _workload("Deployment", {**gpu_pod_scheduling(), "containers": [_container()]}), PROD
    )
    assert len(problems) == 1 and "nvidia.com/gpu" in problems[0], "a GPU node held without a GPU wastes it"


def test_node_affinity_to_gpu_nodes_counts_as_selecting_them() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]
            }
        }
    }
    problems = rules.check_gpu_workload_scheduling(_workload("Pod", {"affinity": affinity, "containers": []}), PROD)
    assert len(problems) == 2


def test_node_agent_daemonset_needs_the_toleration_but_no_gpu() -> None:
    agent = _workload("DaemonSet", {**gpu_pod_scheduling(), "containers": [_container()]})
    assert rules.check_gpu_workload_scheduling(agent, PROD) == [], "device plugin and exporters request no GPU"
    untolerated = _workload("DaemonSet", {"nodeSelector": {"pool": "gpu"}, "containers": [_container()]})
    assert len(rules.check_gpu_workload_scheduling(untolerated, PROD)) == 1


# --- autoscaled-pool-ignores-count -----------------------------------------------------------------


def test_recorded_autoscaled_pool_ignores_count(prod_recording: Recording) -> None:
    cpu = _recorded(prod_recording, model.AGENT_POOL, "cpu")
    assert rules.check_autoscaled_pool_ignores_count(cpu, PROD) == []
    cluster = _recorded(prod_recording, model.MANAGED_CLUSTER, "aks")
    assert rules.check_autoscaled_pool_ignores_count(cluster, PROD) == [], "inline pools are ignored wholesale"


def test_autoscaled_pool_tracking_count_is_rejected(prod_recording: Recording) -> None:
    cpu = _recorded(prod_recording, model.AGENT_POOL, "cpu")
    broken = Resource(cpu.type, cpu.name, cpu.inputs, ignore_changes=("orchestratorVersion",))
    assert len(rules.check_autoscaled_pool_ignores_count(broken, PROD)) == 1
    cluster = _recorded(prod_recording, model.MANAGED_CLUSTER, "aks")
    broken_cluster = Resource(cluster.type, cluster.name, cluster.inputs, ignore_changes=("kubernetesVersion",))
    assert len(rules.check_autoscaled_pool_ignores_count(broken_cluster, PROD)) == 1


# --- prod-stateful-protected -----------------------------------------------------------------------

STATEFUL = {
    model.AML_FILESYSTEM: {"skuName": "AMLFS-Durable-Premium-250", "storageCapacityTiB": 16},
    model.STORAGE_ACCOUNT: {"kind": "StorageV2", "allowBlobPublicAccess": False},
    model.REGISTRY: {"sku": {"name": "Premium"}, "adminUserEnabled": False},
    model.LOG_ANALYTICS_WORKSPACE: {"sku": {"name": "PerGB2018"}, "retentionInDays": 90},
    model.MONITOR_WORKSPACE: {"azureMonitorWorkspaceName": "amw-aks-gpu-prod"},
}


@pytest.mark.parametrize("type_token", sorted(STATEFUL))
def test_prod_stateful_resource_must_be_protected(type_token: str) -> None:
    unprotected = Resource(type_token, "data", STATEFUL[type_token], protect=False)
    assert len(rules.check_prod_stateful_protected(unprotected, PROD)) == 1, "prod data must survive a bad up"
    protected = Resource(type_token, "data", STATEFUL[type_token], protect=True)
    assert rules.check_prod_stateful_protected(protected, PROD) == []
    assert rules.check_prod_stateful_protected(unprotected, DEV) == [], "dev may tear data down"


@pytest.mark.parametrize("type_token", [model.LOG_ANALYTICS_WORKSPACE, model.MONITOR_WORKSPACE])
def test_recorded_prod_workspaces_are_protected_and_dev_ones_are_not(
    recordings: dict[str, Recording], type_token: str
) -> None:
    (prod,) = [_recorded(recordings["prod"], type_token, r.name) for r in recordings["prod"].of_type(type_token)]
    assert rules.check_prod_stateful_protected(prod, PROD) == [], "prod logs and metrics survive a mistaken destroy"
    (dev,) = recordings["dev"].of_type(type_token)
    assert not dev.protect, "dev may tear its workspaces down"


def test_recorded_prod_cluster_is_protected(prod_recording: Recording) -> None:
    cluster = _recorded(prod_recording, model.MANAGED_CLUSTER, "aks")
    assert rules.check_prod_stateful_protected(cluster, PROD) == []
    assert len(rules.check_prod_stateful_protected(Resource(cluster.type, cluster.name, cluster.inputs), PROD)) == 1


# --- lts-requires-premium --------------------------------------------------------------------------


def test_recorded_prod_lts_cluster_is_premium(prod_recording: Recording) -> None:
    assert rules.check_lts_requires_premium(_recorded(prod_recording, model.MANAGED_CLUSTER, "aks"), PROD) == []


def test_lts_on_standard_tier_is_rejected(prod_recording: Recording) -> None:
    cluster = _recorded(prod_recording, model.MANAGED_CLUSTER, "aks")
    inputs = {**cluster.inputs, "sku": {"name": "Base", "tier": "Standard"}}
    problems = rules.check_lts_requires_premium(Resource(cluster.type, cluster.name, inputs), PROD)
    assert len(problems) == 1 and "Premium" in problems[0]


# --- no-registry-admin-user / no-public-blob-access ------------------------------------------------


def test_registry_admin_user_is_rejected() -> None:
    assert rules.check_no_registry_admin_user(Resource(model.REGISTRY, "acr", STATEFUL[model.REGISTRY]), PROD) == []
    enabled = {**STATEFUL[model.REGISTRY], "adminUserEnabled": True}
    assert len(rules.check_no_registry_admin_user(Resource(model.REGISTRY, "acr", enabled), PROD)) == 1


@pytest.mark.parametrize("value", [True, None])
def test_public_blob_access_must_be_off_explicitly(value: bool | None) -> None:
    ok = Resource(model.STORAGE_ACCOUNT, "sa", STATEFUL[model.STORAGE_ACCOUNT])
    assert rules.check_no_public_blob_access(ok, PROD) == []
    inputs = {k: v for k, v in STATEFUL[model.STORAGE_ACCOUNT].items() if k != "allowBlobPublicAccess"}
    if value is not None:
        inputs["allowBlobPublicAccess"] = value
    assert len(rules.check_no_public_blob_access(Resource(model.STORAGE_ACCOUNT, "sa", inputs), PROD)) == 1


# --- storage-tls-https / prod-storage-private ----------------------------------------------------


def test_recorded_prod_storage_account_is_tls12_https_only_and_private(prod_recording: Recording) -> None:
    account = _recorded(prod_recording, model.STORAGE_ACCOUNT, "hsm")
    assert rules.check_storage_tls_https(account, PROD) == []
    assert rules.check_prod_storage_private(account, PROD) == []


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        ({"minimumTlsVersion": "TLS1_0"}, 1),
        ({"minimumTlsVersion": None}, 1),
        ({"enableHttpsTrafficOnly": False}, 1),
        ({"minimumTlsVersion": "TLS1_1", "enableHttpsTrafficOnly": None}, 2),
    ],
)
def test_storage_below_tls12_or_allowing_http_is_rejected(
    prod_recording: Recording, change: dict[str, Any], problems: int
) -> None:
    account = _recorded(prod_recording, model.STORAGE_ACCOUNT, "hsm")
    inputs = {k: v for k, v in {**account.inputs, **change}.items() if v is not None}
    found = rules.check_storage_tls_https(Resource(account.type, account.name, inputs), DEV)
    assert len(found) == problems, f"old TLS and plain HTTP expose data in transit, in every environment: {found}"


@pytest.mark.parametrize("access", ["Enabled", None])
def test_publicly_reachable_prod_storage_is_rejected(prod_recording: Recording, access: str | None) -> None:
    account = _recorded(prod_recording, model.STORAGE_ACCOUNT, "hsm")
    inputs = {k: v for k, v in account.inputs.items() if k != "publicNetworkAccess"}
    if access is not None:
        inputs["publicNetworkAccess"] = access
    public = Resource(account.type, account.name, inputs)
    assert len(rules.check_prod_storage_private(public, PROD)) == 1, "prod data stays off the public endpoint"
    assert rules.check_prod_storage_private(public, DEV) == [], "dev may keep a public account"


# --- prod-encryption-at-host -----------------------------------------------------------------------


def test_recorded_prod_pools_are_encrypted_at_host(prod_recording: Recording) -> None:
    for token, name in (
        (model.AGENT_POOL, "cpu"),
        (model.AGENT_POOL, "h100z1"),
        (model.MANAGED_CLUSTER, "aks"),
    ):
        assert rules.check_prod_encryption_at_host(_recorded(prod_recording, token, name), PROD) == []


def test_prod_pool_without_encryption_at_host_is_rejected(prod_recording: Recording) -> None:
    cpu = _recorded(prod_recording, model.AGENT_POOL, "cpu")
    plain = Resource(cpu.type, cpu.name, {**cpu.inputs, "enableEncryptionAtHost": False})
    problems = rules.check_prod_encryption_at_host(plain, PROD)
    assert len(problems) == 1 and "cpu" in problems[0], "an unencrypted prod pool must be named"
    assert rules.check_prod_encryption_at_host(plain, DEV) == [], "dev may skip the subscription feature"
    cluster = _recorded(prod_recording, model.MANAGED_CLUSTER, "aks")
    inline = [
        {k: v for k, v in p.items() if k != "enableEncryptionAtHost"} for p in cluster.inputs["agentPoolProfiles"]
    ]
    unencrypted = Resource(cluster.type, cluster.name, {**cluster.inputs, "agentPoolProfiles": inline})
    assert len(rules.check_prod_encryption_at_host(unencrypted, PROD)) == 1, "the inline system pool is checked too"


# --- no-plain-text-credentials ---------------------------------------------------------------------


def test_recorded_kubeconfig_output_is_secret(prod_recording: Recording) -> None:
    resources, facts = policy_inputs(prod_recording, "prod")
    assert rules.check_stack_outputs_secret(resources, facts) == []


def test_plain_text_kubeconfig_output_is_rejected(prod_recording: Recording) -> None:
    resources, facts = policy_inputs(prod_recording, "prod")
    leaked = StackFacts("prod", facts.outputs, frozenset())
    violations = rules.check_stack_outputs_secret(resources, leaked)
    assert [v.resource for v in violations] == ["output kubeconfig"]
    renamed = StackFacts("prod", {"config": prod_recording.stack_outputs["kubeconfig"]}, frozenset())
    assert len(rules.check_stack_outputs_secret(resources, renamed)) == 1, "caught by content, not only by name"


@pytest.mark.parametrize(
    "value",
    [
        "DefaultEndpointsProtocol=https;AccountName=sa;AccountKey=bm90LWEta2V5;EndpointSuffix=core.windows.net",
        {"primaryKey": "abc"},
        ["-----BEGIN RSA PRIVATE KEY-----"],
    ],
)
def test_plain_text_keys_are_rejected(value: Any) -> None:
    assert len(rules.check_stack_outputs_secret([], StackFacts("dev", {"out": value}))) == 1


# --- pdb-satisfiable -------------------------------------------------------------------------------


def _pdb(**spec: Any) -> Resource:
    body = {"metadata": {"namespace": "ml"}, "spec": {"selector": {"matchLabels": {"app": "x"}}, **spec}}
    return Resource(model.PDB, "x-pdb", body)


@pytest.mark.parametrize("spec", [{"minAvailable": 1}, {"maxUnavailable": 1}, {"minAvailable": "50%"}])
def test_satisfiable_pdb_passes(spec: dict[str, Any]) -> None:
    deployment = _workload("Deployment", {"containers": [_container()]}, replicas=2)
    assert rules.check_pdbs_satisfiable([deployment, _pdb(**spec)], DEV) == []


@pytest.mark.parametrize(
    "spec",
    [
        {"minAvailable": 2},
        {"maxUnavailable": 0},
        {"minAvailable": "100%"},
        {},
        {"minAvailable": 1, "maxUnavailable": 1},
    ],
)
def test_unsatisfiable_pdb_is_rejected(spec: dict[str, Any]) -> None:
    deployment = _workload("Deployment", {"containers": [_container()]}, replicas=2)
    violations = rules.check_pdbs_satisfiable([deployment, _pdb(**spec)], DEV)
    assert len(violations) == 1 and violations[0].resource == "x-pdb", "a PDB that blocks drains blocks upgrades"


# --- the whole stack -------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_policy_passes_on_the_real_stacks(recordings: dict[str, Recording], stack: str) -> None:
    verdicts = policy_verdicts(recordings[stack], stack)
    assert {p.name for p, _ in verdicts} == {p.name for p in rules.POLICIES}
    failures = [str(v) for p, vs in verdicts if p.mandatory for v in vs]
    assert failures == [], f"{stack} violates mandatory policies: {failures}"


def test_a_violation_in_the_stack_is_reported_by_evaluate(prod_recording: Recording) -> None:
    resources, facts = policy_inputs(prod_recording, "prod")
    unprotected = [Resource(r.type, r.name, r.inputs, False, r.ignore_changes) for r in resources]
    failed = {p.name for p, vs in rules.evaluate(unprotected, facts) if vs}
    assert failed == {"prod-stateful-protected"}
