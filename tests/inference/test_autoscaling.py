"""GPU autoscaling: KEDA add-on, GpuAutoscaling wiring by value, the sample workload, config rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.components.inference.autoscaling import KEDA_OPERATOR_SUBJECT, GpuAutoscaling, GpuAutoscalingArgs
from aks_gpu_platform.components.inference.triton_sample import GpuInferenceSample, GpuInferenceSampleArgs
from aks_gpu_platform.components.shared import roles
from aks_gpu_platform.components.shared.context import ClusterHandle
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.cluster.section import AutoscalerProfileConfig
from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE
from aks_gpu_platform.config.inference.section import AutoscalingConfig, SampleInferenceConfig, ScalingTargetConfig
from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.plan.describe import SUMMARIES
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, evaluate, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import STACKS, cluster_handle, settings_of
from tests.upstream.gpu_metrics_world import GpuWorkload, build_world
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.promql import Evaluator
from tests.upstream.scheduling import node_templates
from tools import REPO_ROOT

CLUSTER = "azure-native:containerservice:ManagedCluster"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
ROLE = "azure-native:authorization:RoleAssignment"
CUSTOM = "kubernetes:keda.sh/v1alpha1:"
SCALED_OBJECT = CUSTOM + "ScaledObject"
TRIGGER_AUTH = CUSTOM + "TriggerAuthentication"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"

WORKSPACE_ID = (
    "/subscriptions/00000000-0000-4000-8000-00000000c0de/resourceGroups/rg/providers/"
    "Microsoft.Monitor/accounts/amw-test"
)
ENDPOINT = "https://amw-test-abcd.koreacentral.prometheus.monitor.azure.com"
TARGET = {"namespace": "serving", "deployment": "llm", "minReplicas": 1, "maxReplicas": 4}


def _args(handle: ClusterHandle, settings: ScalingTargetConfig) -> GpuAutoscalingArgs:
    return {
        "cluster": handle,
        "monitor_workspace_id": WORKSPACE_ID,
        "prometheus_query_endpoint": ENDPOINT,
        "settings": settings,
    }


def _target(settings: dict[str, Any]) -> ScalingTargetConfig:
    return validate_section(ScalingTargetConfig, settings, source="autoscaling.targets[0]")


@pytest.fixture(scope="module")
def two_targets() -> Recording:
    def program() -> None:
        handle = cluster_handle("aks-cluster")
        GpuAutoscaling("llm", _args(handle, _target(TARGET)))
        other = {**TARGET, "deployment": "embedder", "targetUtilizationPercent": 60}
        GpuAutoscaling("embedder", _args(handle, _target(other)))

    return evaluate(program)


def test_scaled_object_reads_dcgm_utilisation_from_the_workspace(two_targets: Recording) -> None:
    scaled = two_targets.one(SCALED_OBJECT, "llm")
    spec = scaled.inputs["spec"]
    trigger = spec["triggers"][0]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["serverAddress"] == ENDPOINT, "KEDA must query the workspace's Prometheus endpoint"
    query = trigger["metadata"]["query"]
    # Which series it selects is checked against the scraped series in test_keda_query_averages_...
    assert "DCGM_FI_DEV_GPU_UTIL" in query, "scaling follows DCGM's GPU utilisation"
    assert query.startswith("avg("), "the query averages over the pods"
    assert trigger["metricType"] == "Value", "an average must not be divided again by the replica count"
    assert "metricName" not in trigger["metadata"], "current KEDA rejects metricName"
    assert trigger["metadata"]["threshold"] == "70" and trigger["metadata"]["activationThreshold"] == "5"
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, 4)
    assert (spec["pollingInterval"], spec["cooldownPeriod"]) == (30, 300)
    auth = two_targets.one(TRIGGER_AUTH, "llm")
    assert trigger["authenticationRef"] == {"name": auth.inputs["metadata"]["name"], "kind": "TriggerAuthentication"}


def test_trigger_authentication_uses_the_keda_identity(two_targets: Recording) -> None:
    identity = two_targets.one(IDENTITY, "llm")
    auth = two_targets.one(TRIGGER_AUTH, "llm").inputs["spec"]["podIdentity"]
    assert auth["provider"] == "azure-workload", "the add-on's operator authenticates with workload identity"
    assert auth["identityId"] == identity.outputs["clientId"], "KEDA must present this target's identity"


def test_federated_credential_trusts_the_keda_operator(two_targets: Recording) -> None:
    cluster = two_targets.one(CLUSTER)
    identity = two_targets.one(IDENTITY, "llm")
    credential = two_targets.one(CREDENTIAL, "llm").inputs
    assert credential["issuer"] == cluster.outputs["oidcIssuerProfile"]["issuerURL"], "tokens come from this cluster"
    assert credential["subject"] == KEDA_OPERATOR_SUBJECT == "system:serviceaccount:kube-system:keda-operator"
    assert credential["audiences"] == ["api://AzureADTokenExchange"]
    assert credential["resourceName"] == identity.outputs["name"], "the credential belongs to the KEDA identity"


def test_role_is_monitoring_data_reader_on_the_workspace_only(two_targets: Recording) -> None:
    identity = two_targets.one(IDENTITY, "llm")
    role = two_targets.one(ROLE, "llm").inputs
    assert role["scope"] == WORKSPACE_ID, "narrowest scope: the workspace, not the group or subscription"
    assert role["roleDefinitionId"].endswith(roles.MONITORING_DATA_READER)
    assert role["principalId"] == identity.outputs["principalId"]
    assert role["principalType"] == "ServicePrincipal", "skips the lookup that fails for a fresh identity"


def test_keda_objects_wait_for_the_add_on_and_go_with_the_cluster(two_targets: Recording) -> None:
    cluster = two_targets.one(CLUSTER)
    provider = two_targets.one("pulumi:providers:kubernetes")
    for obj in (two_targets.one(SCALED_OBJECT, "llm"), two_targets.one(TRIGGER_AUTH, "llm")):
        assert cluster.urn in obj.depends_on, f"{obj.name}: the KEDA add-on installs the CRD"
        assert obj.deleted_with == cluster.urn, f"{obj.name}: nothing to delete once the cluster is gone"
        assert obj.provider.startswith(provider.urn), f"{obj.name}: must target this cluster"
    auth = two_targets.one(TRIGGER_AUTH, "llm")
    assert two_targets.one(CREDENTIAL, "llm").urn in auth.depends_on
    assert two_targets.one(ROLE, "llm").urn in auth.depends_on


def test_a_second_target_collides_with_nothing(two_targets: Recording) -> None:
    urns = [r.urn for r in two_targets.resources]
    assert len(urns) == len(set(urns)), "every resource of two instances has its own URN"
    for kind in (IDENTITY, CREDENTIAL, ROLE, SCALED_OBJECT, TRIGGER_AUTH):
        assert len(two_targets.of_type(kind)) == 2, f"one {kind} per target"
    azure_names = [r.inputs["resourceName"] for r in two_targets.of_type(IDENTITY)]
    assert len(set(azure_names)) == 2, "identity names are unique in the resource group"
    k8s_names = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]) for r in two_targets.of_type(SCALED_OBJECT)
    }
    assert len(k8s_names) == 2, "ScaledObjects in one namespace must not share a name"
    embedder = two_targets.one(SCALED_OBJECT, "embedder").inputs["spec"]["triggers"][0]["metadata"]
    assert embedder["threshold"] == "60" and 'pod=~"embedder-' in embedder["query"]


@pytest.mark.parametrize("stack", STACKS)
def test_keda_add_on_is_on(recordings: dict[str, Recording], stack: str) -> None:
    profile = recordings[stack].one(CLUSTER).inputs["workloadAutoScalerProfile"]
    assert profile == {"keda": {"enabled": True}}, "ScaledObjects need the add-on's CRDs and operator"


@pytest.mark.parametrize("stack", STACKS)
def test_autoscaler_profile_is_tuned_for_gpu_nodes(recordings: dict[str, Recording], stack: str) -> None:
    profile = recordings[stack].one(CLUSTER).inputs["autoScalerProfile"]
    assert profile["ignoreDaemonsetsUtilization"] is True, "DCGM/device-plugin pods must not keep idle GPU nodes"
    assert profile["scaleDownUnneededTime"] == "15m", "idle GPU nodes are not removed on the first quiet minute"
    assert profile["newPodScaleUpDelay"] == "0s", "a pending GPU pod asks for a node at once"
    assert profile["maxNodeProvisionTime"] == "20m", "GPU VMs with driver install boot slowly"
    assert profile["scaleDownDelayAfterFailure"] == "3m"


def _sample(settings: dict[str, Any]) -> Callable[[], None]:
    def program() -> None:
        sample = validate_section(SampleInferenceConfig, settings, source="autoscaling.sampleInference")
        args: GpuInferenceSampleArgs = {
            "cluster": cluster_handle("aks-cluster"),
            "monitor_workspace_id": WORKSPACE_ID,
            "prometheus_query_endpoint": ENDPOINT,
            "settings": sample,
        }
        GpuInferenceSample("sample", args)

    return program


@pytest.fixture(scope="module")
def sample() -> Recording:
    return evaluate(_sample({"enabled": True, "gpusPerPod": 2, "scaling": {"minReplicas": 1, "maxReplicas": 3}}))


def test_sample_does_not_fight_keda_over_replicas(sample: Recording) -> None:
    deployment = sample.one(DEPLOYMENT)
    assert "replicas" not in deployment.inputs["spec"], "KEDA owns the replica count"
    assert "spec.replicas" in deployment.ignore_changes, "an update must not reset what KEDA scaled to"
    scaled = sample.one(SCALED_OBJECT).inputs["spec"]
    assert scaled["scaleTargetRef"]["name"] == deployment.inputs["metadata"]["name"]
    assert scaled["maxReplicaCount"] == 3
    scaler = sample.one("aks-gpu-platform:index:GpuAutoscaling")
    assert deployment.urn in scaler.depends_on, "the scaler is created after the Deployment it scales"


def test_sample_runs_on_gpu_nodes_with_a_restricted_context(sample: Recording, dev_recording: Recording) -> None:
    pod = sample.one(DEPLOYMENT).inputs["spec"]["template"]["spec"]
    gpu_nodes = [n for n in node_templates(dev_recording) if n.gpu]
    assert gpu_nodes, "the dev stack has GPU pools"
    for node in gpu_nodes:
        assert pod_fits_node(pod, dict(node.labels), list(node.taints)), (
            f"the sample must schedule on GPU pool {node.pool} (labels {dict(node.labels)}, taints {node.taints})"
        )
    container = pod["containers"][0]
    assert container["resources"]["limits"][GPU_RESOURCE] == "2", "the GPU count per pod comes from config"
    assert {"livenessProbe", "readinessProbe", "startupProbe"} <= container.keys()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    restricted = container["securityContext"]
    assert restricted["allowPrivilegeEscalation"] is False and restricted["capabilities"] == {"drop": ["ALL"]}, (
        "the restricted Pod Security Standard the sample's namespace enforces"
    )
    assert restricted["readOnlyRootFilesystem"] is True
    pdb = sample.one(PDB).inputs["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": pod_selector(sample)}, "a PDB that never blocks node drains"


def pod_selector(recording: Recording) -> dict[str, Any]:
    return recording.one(DEPLOYMENT).inputs["spec"]["selector"]


def test_sample_objects_pass_the_strict_schema(sample: Recording) -> None:
    checked = [r for r in sample.kubernetes_objects() if not r.type.startswith(CUSTOM)]
    assert {r.type for r in checked} >= {DEPLOYMENT, PDB, "kubernetes:core/v1:Namespace"}
    for resource in checked:
        status, detail = validate_object(kubernetes_object(resource), "1.33.0")
        assert status == "valid", f"{resource.name}: {detail}"


def test_sample_is_off_in_prod(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = stack_config("prod")["aks-gpu-platform:autoscaling"]
    assert AutoscalingConfig.model_validate(settings).sample_inference.enabled is False, "no demo GPUs in prod"
    dev = stack_config("dev")["aks-gpu-platform:autoscaling"]
    assert AutoscalingConfig.model_validate(dev).sample_inference.enabled is True


@pytest.mark.parametrize(
    ("model", "settings", "path"),
    [
        (ScalingTargetConfig, {**TARGET, "minReplicas": 5, "maxReplicas": 2}, "minReplicas:"),
        (ScalingTargetConfig, {**TARGET, "targetUtilizationPercent": 0}, "targetUtilizationPercent:"),
        (ScalingTargetConfig, {**TARGET, "targetUtilizationPercent": 101}, "targetUtilizationPercent:"),
        (ScalingTargetConfig, {**TARGET, "activationUtilizationPercent": 70}, "activationUtilizationPercent:"),
        (ScalingTargetConfig, {**TARGET, "minReplicas": -1}, "minReplicas:"),
        (ScalingTargetConfig, {**TARGET, "pollingIntervalSeconds": 1}, "pollingIntervalSeconds:"),
        (ScalingTargetConfig, {**TARGET, "cooldownPeriodSeconds": 5}, "cooldownPeriodSeconds:"),
        (ScalingTargetConfig, {**TARGET, "namespace": "Serving"}, "namespace:"),
        (AutoscalingConfig, {"kedaEnabled": False, "targets": [TARGET]}, "kedaEnabled:"),
        (AutoscalingConfig, {"targets": [TARGET, TARGET]}, "targets[1].deployment:"),
        (AutoscalingConfig, {"targets": [{**TARGET, "maxReplicas": 0}]}, "targets[0].maxReplicas:"),
        (SampleInferenceConfig, {"image": "nvcr.io/nvidia/tritonserver:latest"}, "image:"),
        (SampleInferenceConfig, {"image": "nvcr.io/nvidia/tritonserver"}, "image:"),
        (SampleInferenceConfig, {"gpusPerPod": 0}, "gpusPerPod:"),
        (SampleInferenceConfig, {"scaling": {"minReplicas": 3, "maxReplicas": 1}}, "scaling.minReplicas:"),
        (
            AutoscalerProfileConfig,
            {"scaleDownUnneededMinutes": 1, "scanIntervalSeconds": 60},
            "scaleDownUnneededMinutes:",
        ),
        (AutoscalerProfileConfig, {"scaleDownUtilizationThreshold": 0.95}, "scaleDownUtilizationThreshold:"),
        (AutoscalerProfileConfig, {"maxEmptyBulkDelete": 0}, "maxEmptyBulkDelete:"),
    ],
)
def test_invalid_settings_are_rejected_naming_the_field(model: type[Any], settings: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_section(model, settings, source="test")
    assert path in str(err.value), f"the message must point at {path}"


def test_invalid_target_fails_the_stack_naming_its_path(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = stack_config("dev")
    config["aks-gpu-platform:autoscaling"]["targets"] = [{**TARGET, "targetUtilizationPercent": 150}]
    with pytest.raises(ConfigError) as err:
        load_platform_config(settings_of(config))
    assert "autoscaling.targets[0].targetUtilizationPercent:" in str(err.value)


def test_a_bad_target_is_rejected_naming_the_field_before_any_component() -> None:
    with pytest.raises(ConfigError, match="minReplicas:") as caught:
        _target({**TARGET, "minReplicas": 9})
    assert "maxReplicas" in str(caught.value), "the message says what the bound is: minReplicas up to maxReplicas"


def test_plan_summarises_the_scaled_object(two_targets: Recording) -> None:
    line = SUMMARIES[SCALED_OBJECT](two_targets.one(SCALED_OBJECT, "llm").inputs)
    assert "target=llm" in line and "replicas=1-4" in line and "threshold=70" in line, line
    assert "DCGM_FI_DEV_GPU_UTIL" in line, "the plan shows what the workload scales on"


@pytest.mark.parametrize("stack", STACKS)
def test_gpu_pools_scale_from_zero(stack_config: Callable[[str], dict[str, Any]], stack: str) -> None:
    cfg = load_platform_config(settings_of(stack_config(stack)))
    assert all(pool.min_count == 0 for pool in cfg.gpu_pools), "idle GPU pools must cost nothing"
    assert cfg.autoscaling.keda_enabled


# The whole program: autoscaling.targets and the sample wired to the stack's own workspace and cluster.
WORKSPACE = "azure-native:monitor:AzureMonitorWorkspace"
SCALER = "aks-gpu-platform:index:GpuAutoscaling"


@pytest.fixture(scope="module")
def dev_with_targets() -> Recording:
    config = load_stack_file("dev", REPO_ROOT)
    autoscaling = config["aks-gpu-platform:autoscaling"]
    config["aks-gpu-platform:autoscaling"] = {
        **autoscaling,
        "targets": [TARGET, {**TARGET, "namespace": "batch", "deployment": "llm", "maxReplicas": 2}],
    }
    return run_stack("dev", config=config)


def test_stack_wires_every_scaler_to_its_own_workspace_and_cluster(dev_with_targets: Recording) -> None:
    recording = dev_with_targets
    workspace = recording.one(WORKSPACE)
    cluster = recording.one(CLUSTER)
    endpoint = workspace.outputs["metrics"]["prometheusQueryEndpoint"]
    scalers = recording.of_type(SCALER)
    assert len(scalers) == 3, "two configured targets plus the sample's own scaler"
    for scaler in scalers:
        inside = [r for r in recording.resources if r.parent == scaler.urn]
        (scaled,) = [r for r in inside if r.type == SCALED_OBJECT]
        (auth,) = [r for r in inside if r.type == TRIGGER_AUTH]
        (identity,) = [r for r in inside if r.type == IDENTITY]
        (credential,) = [r for r in inside if r.type == CREDENTIAL]
        (role,) = [r for r in inside if r.type == ROLE]
        trigger = scaled.inputs["spec"]["triggers"][0]["metadata"]
        assert trigger["serverAddress"] == endpoint, f"{scaler.name}: KEDA must query this stack's workspace"
        assert "DCGM_FI_DEV_GPU_UTIL" in trigger["query"], "scaling follows DCGM's GPU utilisation"
        assert auth.inputs["spec"]["podIdentity"]["identityId"] == identity.outputs["clientId"], (
            f"{scaler.name}: KEDA must present the identity that holds the read grant"
        )
        assert credential.inputs["issuer"] == cluster.outputs["oidcIssuerProfile"]["issuerURL"], (
            "only tokens from this cluster's issuer may be exchanged"
        )
        assert credential.inputs["subject"] == KEDA_OPERATOR_SUBJECT, "the add-on's operator asks for the token"
        assert role.inputs["scope"] == workspace.outputs["id"], f"{scaler.name}: read the workspace, nothing wider"
        assert role.inputs["principalId"] == identity.outputs["principalId"], "the grant goes to KEDA's identity"


# Pods holding GPUs on the cluster: the targets' own, and neighbours whose names or namespaces come close.
GPU_PODS = (
    GpuWorkload("serving", "llm-7d9f8c6b5d-x2x9z", utilization=90.0),
    GpuWorkload("serving", "llm-7d9f8c6b5d-q8w4p", gpus=2, utilization=60.0),
    GpuWorkload("batch", "llm-5c4b3a2b1c-zzzzz", utilization=10.0),
    GpuWorkload("serving", "llm-small-6b7c8d9e0f-aaaaa", utilization=1.0),
    GpuWorkload("serving", "embedder-84f5b6c7d8-bbbbb", utilization=3.0),
    GpuWorkload("gpu-inference-sample", "triton-7f6e5d4c3b-ccccc", container="triton", utilization=40.0),
)


def test_keda_query_averages_exactly_the_gpus_of_the_target_pods(dev_with_targets: Recording) -> None:
    """The query runs over the series the DCGM scrape really stores (tests/upstream/scrape.py), not over our labels."""
    world = build_world(dev_with_targets, GPU_PODS, nodes_per_pool=5)
    evaluator = Evaluator(world.series)
    # The served models scale on vLLM's queue (tests/inference/test_serving.py); these on GPU utilisation.
    scaled_objects = [
        s for s in dev_with_targets.of_type(SCALED_OBJECT) if s.inputs["metadata"]["name"].endswith("-gpu-utilization")
    ]
    assert len(scaled_objects) == 3, "serving/llm, batch/llm and the sample"
    for scaled in scaled_objects:
        namespace = scaled.inputs["metadata"]["namespace"]
        deployment = scaled.inputs["spec"]["scaleTargetRef"]["name"]
        own = [
            w.utilization
            for w in GPU_PODS
            for _ in range(w.gpus)
            if w.namespace == namespace and re.fullmatch(rf"{deployment}-[a-z0-9]+-[a-z0-9]+", w.pod)
        ]
        assert own, f"the world holds GPUs of {namespace}/{deployment}"
        result = evaluator.vector(scaled.inputs["spec"]["triggers"][0]["metadata"]["query"])
        assert result, (
            f"{namespace}/{deployment}: the query matches no stored series, so KEDA reads 0 and never scales up"
        )
        (average,) = result
        assert average.value == pytest.approx(sum(own) / len(own)), (
            f"{namespace}/{deployment}: KEDA must average its own pods' GPUs, no other Deployment's or namespace's"
        )
    assert evaluator.problems == []


def test_stack_targets_in_two_namespaces_collide_with_nothing(dev_with_targets: Recording) -> None:
    urns = [r.urn for r in dev_with_targets.resources]
    assert len(urns) == len(set(urns)), "same Deployment name in two namespaces still gets distinct resources"
    names = [r.inputs["resourceName"] for r in dev_with_targets.of_type(IDENTITY) if "keda" in r.inputs["resourceName"]]
    assert len(names) == len(set(names)), f"KEDA identity names are unique in the resource group: {names}"
    assert len([n for n in names if not n.startswith("id-model-")]) == 3, f"one per GPU-utilisation scaler: {names}"
    objects = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in dev_with_targets.of_type(SCALED_OBJECT)
        if r.inputs["metadata"]["name"].endswith("-gpu-utilization")
    }
    assert objects == {
        ("serving", "llm-gpu-utilization"),
        ("batch", "llm-gpu-utilization"),
        ("gpu-inference-sample", "triton-gpu-utilization"),
    }, "each ScaledObject sits beside the Deployment it scales"


def test_prod_registers_no_scaler_without_targets(prod_recording: Recording) -> None:
    assert prod_recording.of_type(SCALER) == [], "prod lists no targets and keeps the sample off"
    demos = [d for d in prod_recording.of_type(DEPLOYMENT) if d.inputs["metadata"]["namespace"] != "models"]
    assert demos == [], "no demo GPU workload in prod (the served models are inference.models')"


def test_sample_talks_only_to_clients_in_its_namespace(sample: Recording) -> None:
    policy = sample.one("kubernetes:networking.k8s.io/v1:NetworkPolicy").inputs["spec"]
    assert policy["podSelector"] == pod_selector(sample), "the policy must select the sample's pods"
    assert policy["policyTypes"] == ["Ingress", "Egress"], "both directions are restricted, not only ingress"
    assert policy["egress"] == [], "the server calls nothing, so it may call nothing"
    (rule,) = policy["ingress"]
    assert rule == {"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 8000}]}, (
        "only pods of the sample's namespace, only the HTTP port"
    )
