"""AMD MI300X pools: a dev variant with one next to the T4 pool, checked against the scheduling, scale-from-zero,
release and metrics models; and the NVIDIA-only features refused on AMD pools by name."""

from __future__ import annotations

import base64
import datetime
import fnmatch
import json
from typing import Any

import pytest

from aks_gpu_platform.components.gpu import amd_registry_secret_job as secret_job
from aks_gpu_platform.components.monitoring import metrics_labels as labels
from aks_gpu_platform.components.shared.roles import ACR_PULL
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.plan import cold_start
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.verdicts import docker_hub_warnings
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import assert_rejected, set_path, settings_of, without_models
from tests.upstream import cron
from tests.upstream.arm_spec import load_specs, schema_problems
from tests.upstream.autoscaler_template import scale_from_zero_problems, zero_node_templates
from tests.upstream.crd_schema import crd_problems
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.promql import Evaluator
from tests.upstream.rbac import Request, kubernetes_allows
from tests.upstream.release_contract import release_problems
from tests.upstream.scheduling import AGENT_POOL, RELEASE, helm_merge, scheduling_check
from tests.upstream.scrape import Container, Pod, Port, pod_monitor_scrape_configs, scrape, targets
from tools import REPO_ROOT

MI300X = {"name": "mi300x", "vmSize": "Standard_ND96isr_MI300X_v5", "zones": ["1"], "infiniband": True}
AMD_CHART = "gpu-operator-charts"
POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
REGISTRY = "azure-native:containerregistry:Registry"
SCOPE_MAP = "azure-native:containerregistry:ScopeMap"
TOKEN = "azure-native:containerregistry:Token"
ROLE = "azure-native:authorization:RoleAssignment"
ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
CLUSTER = "azure-native:containerservice:ManagedCluster"
JOB = "kubernetes:batch/v1:Job"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"


def amd_variant() -> dict[str, Any]:
    config = without_models(load_stack_file("dev", REPO_ROOT))
    pools = config["aks-gpu-platform:gpuPools"]
    config["aks-gpu-platform:gpuPools"] = [*pools, {**MI300X, "minCount": 0, "maxCount": 2}]
    training = config["aks-gpu-platform:training"]
    team = training["teams"][0]
    team["quotas"] = [*team["quotas"], {"pool": "mi300x", "gpus": 8}]
    return config


@pytest.fixture(scope="module")
def amd() -> Recording:
    return run_stack("dev", config=amd_variant())


def _amd_pool(recording: Recording) -> dict[str, Any]:
    return next(
        p.inputs
        for p in recording.of_type(AGENT_POOL)
        if (p.inputs.get("nodeLabels") or {}).get("gpu-pool") == "mi300x"
    )


def test_amd_pool_skips_the_aks_driver_and_carries_the_operators_label(amd: Recording) -> None:
    pool = _amd_pool(amd)
    assert pool["gpuProfile"]["driver"] == "None", "AKS requires gpuProfile.driver None on AMD sizes"
    assert pool["nodeLabels"].get("gpu-vendor") == "amd", "AMD's operator selects the pool's nodes by this label"


def test_amd_variant_schedules_every_pod_and_keeps_nvidia_agents_off_amd_nodes(amd: Recording) -> None:
    problems = scheduling_check(amd, {"mi300x"}).problems()
    assert not problems, "every pod fits where it must run, no NVIDIA agent lands on AMD GPUs:\n" + "\n".join(problems)


def test_amd_pool_scales_from_zero_for_amd_ranks_and_not_for_nvidia_pods(amd: Recording) -> None:
    problems = scale_from_zero_problems(amd, {"mi300x"})
    assert not problems, "a pending AMD rank must make the autoscaler add an MI300X node:\n" + "\n".join(problems)
    node = next(n for n in zero_node_templates(amd) if n.labels.get("gpu-pool") == "mi300x")
    assert node.allocatable.get("amd.com/gpu") == 8, "the template node offers the 8 MI300X as amd.com/gpu"
    assert node.allocatable.get("nvidia.com/gpu") == 0, (
        "the autoscaler's template counts every size's GPUs as nvidia.com/gpu; left at 8, a pending NVIDIA pod "
        "would scale up an MI300X node it can never use"
    )


def test_amd_operator_release_can_finish_and_the_plan_names_its_docker_hub_images(amd: Recording) -> None:
    plan = "\n".join(docker_hub_warnings(amd))
    problems = release_problems(amd, plan)
    assert not problems, "the AMD operator release must finish and its anonymous pulls be named:\n" + "\n".join(
        problems
    )
    release = next(r for r in amd.of_type(RELEASE) if r.inputs["chart"] == AMD_CHART)
    assert "latest" not in str(release.inputs["values"]), "every AMD operand runs at a release tag, never latest"


def test_team_quota_on_an_amd_pool_meters_amd_gpus(amd: Recording) -> None:
    queue = next(iter(amd.of_type(CLUSTER_QUEUE)))
    group = queue.inputs["spec"]["resourceGroups"][0]
    assert {"nvidia.com/gpu", "amd.com/gpu"} <= set(group["coveredResources"]), (
        "with quotaCheckStrategy IgnoreUndeclared, an undeclared amd.com/gpu would be admitted without quota"
    )
    flavors = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert flavors["mi300x"]["amd.com/gpu"] == 8 and flavors["mi300x"]["nvidia.com/gpu"] == 0, flavors
    for flavor in group["flavors"]:
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"], (
            "Kueue wants every flavor to list the covered resources in order"
        )


# The AMD exporter's /metrics for two GPUs, one held by a training pod, in the names and labels of
# ROCm/device-metrics-exporter v1.5.1 (pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go; labels lower-cased enum names).
HELD = {"namespace": "team-ml", "pod": "llm-0", "container": "trainer"}
FREE = {"namespace": "", "pod": "", "container": ""}


def _amd_sample(metric: str, gpu: str, holder: dict[str, str], value: float) -> str:
    gpu_labels = {"card_model": "MI300X", "gpu_id": gpu, "hostname": "aks-mi300x-0", "serial_number": f"S{gpu}"}
    body = ",".join(f'{k}="{v}"' for k, v in sorted({**gpu_labels, **holder}.items()))
    return f"{metric}{{{body}}} {value}"


AMD_EXPOSITION = "\n".join(
    [
        _amd_sample("gpu_gfx_activity", "0", HELD, 87),
        _amd_sample("gpu_gfx_activity", "1", FREE, 0),
        _amd_sample("gpu_used_vram", "0", HELD, 150000),
        _amd_sample("gpu_free_vram", "0", HELD, 46000),
    ]
)


def test_amd_utilisation_and_memory_reach_the_dashboard_queries(amd: Recording) -> None:
    monitor = next(m for m in amd.of_type(POD_MONITOR) if m.inputs["metadata"]["name"] == "amd-device-metrics-exporter")
    (config,) = pod_monitor_scrape_configs(monitor.inputs)
    pod = operator_exporter_pod(default_device_config(amd), namespace="kube-amd-gpu")
    found = targets(config, [pod])
    assert len(found) == 1, (
        f"the PodMonitor must select the exporter pod the operator creates and name a port it has: {found}"
    )
    (target,) = found
    world = scrape(target, config, AMD_EXPOSITION, {"cluster": "aks"}).series
    evaluator = Evaluator(world)
    held = f'DCGM_FI_DEV_GPU_UTIL{{{labels.WORKLOAD_POD}!=""}}'
    per_pod = evaluator.vector(f"avg by ({labels.WORKLOAD_NAMESPACE}, {labels.WORKLOAD_POD}) ({held})")
    assert [(s.labels, s.value) for s in per_pod] == [
        ({labels.WORKLOAD_NAMESPACE: "team-ml", labels.WORKLOAD_POD: "llm-0"}, 87.0)
    ], "per-workload utilisation (dashboards, KEDA, idle alert) names the pod holding the AMD GPU"
    memory = evaluator.vector("DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) * 100")
    assert len(memory) == 1 and round(memory[0].value) == 77, "memory panels and alert read AMD VRAM in use"
    gpus = evaluator.vector(f"count by ({labels.NODE}) (DCGM_FI_DEV_GPU_UTIL)")
    assert [(s.labels, s.value) for s in gpus] == [({labels.NODE: "aks-mi300x-0"}, 2.0)], (
        "GPU counts per node use the contract's node label, also for AMD GPUs"
    )


def operator_exporter_pod(device_config: dict[str, Any], namespace: str) -> Pod:
    """The metrics exporter pod the operator makes of a DeviceConfig, as ROCm/gpu-operator v1.5.1 (858cf255)
    internal/metricsexporter/metricsexporter.go SetMetricsExporterAsDesired writes it: labels `daemonset-name:
    <DeviceConfig>` and `app.kubernetes.io/name: metrics-exporter`; without rbacConfig the exporter container
    `metrics-exporter-container` declares TCP port `exporter-port` = spec.metricsExporter.port (default 5000); with
    it, that port moves to the kube-rbac-proxy container and the exporter binds to localhost."""
    exporter = device_config["spec"].get("metricsExporter") or {}
    port = exporter.get("port") or 5000
    rbac = (exporter.get("rbacConfig") or {}).get("enable", False)
    containers = (
        (
            Container("metrics-exporter-container", ()),
            Container("kube-rbac-proxy-container", (Port("exporter-port", port),)),
        )
        if rbac
        else (Container("metrics-exporter-container", (Port("exporter-port", port),)),)
    )
    name = device_config["metadata"]["name"]
    return Pod(
        namespace=namespace,
        name=f"{name}-metrics-exporter-abcde",
        labels={"daemonset-name": name, "app.kubernetes.io/name": "metrics-exporter"},
        node="aks-mi300x-0",
        ip="10.0.0.9",
        containers=containers,
    )


# ---------------------------------------------------------------- the driver: built by the operator, pulled by nodes

# ROCm/gpu-operator v1.5.1 helm-charts-k8s/templates/default-deviceconfig.yaml, for the spec sections our values set:
# `hasKey` keys are copied whenever present, `with` keys only when non-empty, nested maps the same way.
HAS, WITH = "hasKey", "with"
DEVICE_CONFIG_TEMPLATE: dict[str, dict[str, Any]] = {
    "driver": {
        **dict.fromkeys(("enable", "blacklist", "useSourceImage"), HAS),
        **dict.fromkeys(("driverType", "amdgpuInstallerRepoURL", "image", "imageRegistrySecret"), WITH),
        **dict.fromkeys(("imageRegistryTLS", "version", "imageSign", "imageBuild", "tolerations"), WITH),
        "upgradePolicy": WITH,
        "vfioConfig": {"deviceIDs": WITH},
        "kernelModuleConfig": dict.fromkeys(("loadArgs", "unloadArgs", "parameters"), WITH),
    },
    "commonConfig": {
        "initContainerImage": WITH,
        "imageRegistrySecrets": WITH,
        "utilsContainer": dict.fromkeys(("image", "imagePullPolicy", "imageRegistrySecret"), WITH),
    },
    "devicePlugin": {
        **dict.fromkeys(("enableDevicePlugin", "enableNodeLabeller", "hostNetwork"), HAS),
        **dict.fromkeys(("devicePluginImage", "devicePluginImagePullPolicy", "devicePluginTolerations"), WITH),
        **dict.fromkeys(("devicePluginArguments", "nodeLabellerImage", "nodeLabellerImagePullPolicy"), WITH),
        **dict.fromkeys(("nodeLabellerTolerations", "nodeLabellerArguments", "imageRegistrySecret"), WITH),
        **dict.fromkeys(("upgradePolicy", "kubeletSocketPath"), WITH),
    },
    "metricsExporter": {
        **dict.fromkeys(("enable", "port", "nodePort", "hostNetwork"), HAS),
        **dict.fromkeys(("serviceType", "image", "imagePullPolicy", "config", "tolerations"), WITH),
        **dict.fromkeys(("imageRegistrySecret", "selector", "upgradePolicy", "podResourceAPISocketPath"), WITH),
        **dict.fromkeys(("resource", "podAnnotations", "serviceAnnotations"), WITH),
        "rbacConfig": {
            **dict.fromkeys(("enable", "disableHttps"), HAS),
            **dict.fromkeys(("image", "secret", "clientCAConfigMap", "staticAuthorization"), WITH),
        },
        "prometheus": {
            "serviceMonitor": {
                **dict.fromkeys(("enable", "interval", "honorLabels", "honorTimestamps"), HAS),
                **dict.fromkeys(("attachMetadata", "labels", "relabelings", "metricRelabelings"), WITH),
                **dict.fromkeys(("authorization", "bearerTokenFile", "tlsConfig"), WITH),
            }
        },
    },
}
# The chart's values.yaml defaults under those sections at v1.5.1 that the template renders at our values.
DEVICE_CONFIG_DEFAULTS: dict[str, Any] = {
    "selector": {"feature.node.kubernetes.io/amd-gpu": "true"},
    "driver": {
        "enable": False,
        "blacklist": False,
        "image": "docker.io/myUserName/driverImage",
        "imageRegistrySecret": {},
        "imageRegistryTLS": {"insecure": False, "insecureSkipTLSVerify": False},
        "version": "30.20.1",
        "imageSign": {},
        "imageBuild": {"packageRepoURL": "", "gpgKeyURL": ""},
        "tolerations": [],
    },
    "devicePlugin": {"enableDevicePlugin": True, "enableNodeLabeller": True, "hostNetwork": False},
    "metricsExporter": {"enable": True, "serviceType": "ClusterIP", "port": 5000, "nodePort": 32500},
}


def _render(template: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, how in template.items():
        if key not in values:
            continue
        if isinstance(how, dict):
            if values[key]:
                out[key] = _render(how, values[key])
        elif how == HAS or values[key]:
            out[key] = values[key]
    return out


def default_device_config(recording: Recording) -> dict[str, Any]:
    """The DeviceConfig `default` the chart creates from the release's values, in the sections the platform sets."""
    release = next(r for r in recording.of_type(RELEASE) if r.inputs["chart"] == AMD_CHART)
    spec = helm_merge(DEVICE_CONFIG_DEFAULTS, release.inputs["values"]["deviceConfig"]["spec"])
    rendered = {"selector": spec["selector"], **_render(DEVICE_CONFIG_TEMPLATE, spec)}
    return {"apiVersion": "amd.com/v1alpha1", "kind": "DeviceConfig", "metadata": {"name": "default"}, "spec": rendered}


def test_the_default_device_config_passes_the_crd_schema(amd: Recording) -> None:
    problems = crd_problems(default_device_config(amd), "deviceconfigs-v1.5.1.json")
    assert not problems, "a field the CRD does not declare is pruned and the operator never sees it:\n" + "\n".join(
        problems
    )


def test_mi300x_nodes_get_their_driver_from_the_operator(amd: Recording) -> None:
    spec = default_device_config(amd)["spec"]
    node = next(n for n in zero_node_templates(amd) if n.labels.get("gpu-pool") == "mi300x")
    assert spec["selector"].items() <= node.labels.items(), "the DeviceConfig must select the MI300X nodes"
    driver = spec["driver"]
    assert driver.get("enable") is True, (
        "AKS installs no AMD driver and its node image carries none (use-amd-gpus.md, AgentBaker): without the "
        "operator's driver the nodes never advertise amd.com/gpu"
    )
    assert driver.get("blacklist") is True, "the kernel's own amdgpu must not shadow the operator's module"
    driver_pod = {"nodeSelector": spec["selector"], "tolerations": driver.get("tolerations", [])}
    assert pod_fits_node(driver_pod, node.labels, node.taints), (
        "the driver build and module loader run on the MI300X nodes: they must tolerate every GPU pool taint"
    )
    assert spec["devicePlugin"].get("enableNodeLabeller") is True, "driver.blacklist works through the node labeller"
    release = next(r for r in amd.of_type(RELEASE) if r.inputs["chart"] == AMD_CHART)
    assert release.inputs["values"]["kmm"]["enabled"] is True, "the operator installs the driver through KMM"


def test_the_driver_image_lives_in_the_platform_registry_the_nodes_can_pull_from(amd: Recording) -> None:
    registry = amd.one(REGISTRY)
    driver = default_device_config(amd)["spec"]["driver"]
    host, repository = driver["image"].split("/", 1)
    assert host == registry.outputs["loginServer"], (
        "the build pushes to and the nodes pull from driver.image: it must be the platform's registry, not the "
        "chart's placeholder docker.io/myUserName/driverImage"
    )
    assert ":" not in repository, "the operator appends the tag per OS, kernel and driver version"
    (pull,) = [r for r in amd.of_type(ROLE) if r.inputs["roleDefinitionId"].endswith(ACR_PULL)]
    assert pull.inputs["scope"] == registry.outputs["id"], "the kubelet pulls the module-loader image with AcrPull"
    scope_map = amd.one(SCOPE_MAP)
    token = amd.one(TOKEN)
    assert token.inputs["scopeMapId"] == scope_map.outputs["id"] and token.inputs["status"] == "enabled"
    assert token.inputs["registryName"] == scope_map.inputs["registryName"] == registry.outputs["name"]
    actions = set(scope_map.inputs["actions"])
    assert {f"repositories/{repository}/content/{verb}" for verb in ("read", "write")} <= actions, (
        "the build pushes and the module loader pulls the driver repository with the token"
    )
    assert all(a.startswith(f"repositories/{repository}/") for a in actions), "the token reaches no other repository"
    assert driver["imageRegistrySecret"] == {"name": "amdgpu-driver-registry"}, (
        "the secret the plan tells the operator to create is the one KMM uses for push and pull"
    )


def test_cert_manager_is_installed_before_the_operator_whose_kmm_webhook_needs_it(amd: Recording) -> None:
    cert_manager = next(r for r in amd.of_type(RELEASE) if r.inputs["chart"] == "cert-manager")
    operator = next(r for r in amd.of_type(RELEASE) if r.inputs["chart"] == AMD_CHART)
    assert cert_manager.inputs["values"]["crds"]["enabled"] is True, "the KMM Issuer and Certificate need its CRDs"
    assert cert_manager.urn in operator.depends_on, (
        "charts/kmm/templates/selfsigned-issuer.yaml and serving-cert.yaml fail to apply before cert-manager's CRDs"
    )


def test_the_cold_start_budget_counts_the_amd_driver_as_unknown_not_as_part_of_the_aks_bootstrap() -> None:
    cfg = load_platform_config(_settings())
    (amd_pool,) = [p for p in cfg.gpu_pools if p.vendor == "amd"]
    budget = {s.name: s for s in cold_start.stages(cfg, amd_pool, amd_pool.cold_start)}
    driver = budget[cold_start.DRIVER].figure
    assert not driver.known and "operator" in driver.source.lower() + driver.note, (
        "AKS installs no AMD driver: the budget must not show it as 0 s inside provisioning, but as the operator's "
        f"build or pull after the node is Ready, unknown until measured; got {driver}"
    )
    agents = budget[cold_start.PLATFORM_IMAGES].figure.note
    assert "NVIDIA" not in agents and "AMD GPU Operator" in agents, agents


# ---------------------------------------------------------------- NVIDIA-only features refused by name


def _settings() -> dict[str, Any]:
    return settings_of(amd_variant())


@pytest.mark.parametrize(
    ("path", "value", "field", "hint"),
    [
        ("gpuPools.1.migProfile", "MIG1g", "gpuPools[1].migProfile", "MIG is NVIDIA's"),
        ("gpuPools.1.validation.dcgmDiag", True, "gpuPools[1].validation.dcgmDiag", "DCGM"),
        ("gpuPools.1.validation.ncclAllReduce", True, "gpuPools[1].validation.ncclAllReduce", "nccl-tests"),
        ("gpuPools.1.sharing", {"mode": "timeSlicing", "replicas": 2}, "gpuPools[1].sharing", "NVIDIA device plugin"),
        ("gpuStack.mode", "aksManaged", "gpuStack.mode", "AKS installs nothing on AMD sizes"),
        ("gpuHealth.remediation.enabled", True, "gpuHealth.remediation.enabled", "NVSentinel"),
    ],
)
def test_nvidia_only_feature_on_an_amd_pool_is_refused_by_name(path: str, value: Any, field: str, hint: str) -> None:
    settings = _settings()
    set_path(settings, path, value)
    assert_rejected(settings, "an NVIDIA-only feature cannot work on AMD GPUs", field, hint)


def test_azure_linux_amd_pool_is_refused_because_no_amd_driver_is_built_for_it() -> None:
    settings = _settings()
    set_path(settings, "gpuPools.1.osSku", "AzureLinux")
    assert_rejected(settings, "the operator's driver build has no Azure Linux recipe", "gpuPools[1].osSku", "Ubuntu")


def test_nvidia_smoke_test_is_refused_when_no_pool_has_nvidia_gpus() -> None:
    settings = _settings()
    settings["gpuPools"] = [settings["gpuPools"][1]]
    settings["training"]["teams"][0]["quotas"] = [{"pool": "mi300x", "gpus": 8}]
    assert_rejected(settings, "nvidia-smi on nvidia.com/gpu never schedules", "gpuStack.smokeTest", "nvidia-smi")


# ---------------------------------------------------------------- the driver build's registry password, in-cluster


def _secret_writer(recording: Recording) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Job that writes the driver build's registry Secret: its pod spec and its one container's environment."""
    (job,) = [j for j in recording.of_type(JOB) if j.inputs["metadata"]["namespace"] == "kube-amd-gpu"]
    pod = job.inputs["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    return pod, {e["name"]: e["value"] for e in container["env"]}


def test_the_password_request_passes_the_rest_spec_and_names_the_driver_build_token(amd: Recording) -> None:
    spec = load_specs()[("Microsoft.ContainerRegistry", "registries/generateCredentials", "2025-04-01")]
    _, env = _secret_writer(amd)
    assert env["API_VERSION"] == spec["apiVersion"], "the body is checked at the API version the Job sends"
    expiry = datetime.datetime(2027, 1, 1, tzinfo=datetime.UTC)
    body = secret_job.generate_credentials_body(env["TOKEN_ID"], "password2", expiry)
    problems = schema_problems(body, spec["definitions"][spec["body"]], spec["definitions"], "body")
    assert not problems, f"ARM refuses the generateCredentials body: {problems}"
    token = amd.one(TOKEN)
    assert body["tokenId"] == token.outputs["id"], "the password must be the driver build token's"
    assert body["name"] == "password2" and body["expiry"] == "2027-01-01T00:00:00Z", (
        "the slot and the expiry reach Azure: a password without one never lapses"
    )
    assert env["REGISTRY_ID"] == amd.one(REGISTRY).outputs["id"], "the action is POSTed on the platform's registry"
    result = spec["definitions"][spec["response"]]["properties"]["passwords"]["items"]["$ref"].rsplit("/", 1)[-1]
    assert {"name", "value"} <= set(spec["definitions"][result]["properties"]), "the Job reads passwords[].name/value"


def _allowed(actions: list[str], operation: str) -> bool:
    return any(fnmatch.fnmatchcase(operation.lower(), a.lower()) for a in actions)


def test_the_jobs_identity_can_issue_the_token_password_and_nothing_else_on_the_registry(amd: Recording) -> None:
    pod, _ = _secret_writer(amd)
    account_name = pod["spec"]["serviceAccountName"]
    account = next(a for a in amd.of_type(SERVICE_ACCOUNT) if a.inputs["metadata"]["name"] == account_name)
    client_id = account.inputs["metadata"]["annotations"]["azure.workload.identity/client-id"]
    assert pod["metadata"]["labels"].get("azure.workload.identity/use") == "true", (
        "without the label the webhook injects no federated token and the Job cannot reach Azure"
    )
    (identity,) = [i for i in amd.of_type(IDENTITY) if i.outputs["clientId"] == client_id]
    (credential,) = [c for c in amd.of_type(CREDENTIAL) if c.inputs["resourceName"] == identity.outputs["name"]]
    assert credential.inputs["subject"] == f"system:serviceaccount:kube-amd-gpu:{account_name}"
    assert credential.inputs["issuer"] == amd.one(CLUSTER).outputs["oidcIssuerProfile"]["issuerURL"]
    assert credential.inputs["audiences"] == ["api://AzureADTokenExchange"]

    registry = amd.one(REGISTRY).outputs["id"]
    definitions = {d.outputs["id"]: d.inputs for d in amd.of_type(ROLE_DEFINITION)}
    grants = [g.inputs for g in amd.of_type(ROLE) if g.inputs["principalId"] == identity.outputs["principalId"]]
    assert grants and all(g["scope"] == registry for g in grants), "the identity holds roles on the registry only"
    actions = [a for g in grants for p in definitions[g["roleDefinitionId"]]["permissions"] for a in p["actions"]]
    assert all(not p.get("dataActions") for g in grants for p in definitions[g["roleDefinitionId"]]["permissions"])
    assert _allowed(actions, "Microsoft.ContainerRegistry/registries/generateCredentials/action")
    for operation in (
        "Microsoft.ContainerRegistry/registries/write",
        "Microsoft.ContainerRegistry/registries/listCredentials/action",
        "Microsoft.ContainerRegistry/registries/regenerateCredential/action",
        "Microsoft.ContainerRegistry/registries/tokens/write",
        "Microsoft.ContainerRegistry/registries/tokens/read",
        "Microsoft.ContainerRegistry/registries/scopeMaps/write",
        "Microsoft.ContainerRegistry/registries/pull/read",
        "Microsoft.ContainerRegistry/registries/push/write",
        "Microsoft.Authorization/roleAssignments/write",
    ):
        assert not _allowed(actions, operation), f"the password issuer must not be able to {operation}"
    # generateCredentials is a registry action: Azure RBAC cannot narrow it to one token, so the platform keeps one.
    assert [t.inputs["tokenName"] for t in amd.of_type(TOKEN)] == ["amdgpu-driver-build"], (
        "the registry's only token is the driver build's, the one password the identity can issue"
    )


def test_the_job_writes_the_secret_the_device_config_names_for_the_registry(amd: Recording) -> None:
    _, env = _secret_writer(amd)
    driver = default_device_config(amd)["spec"]["driver"]
    release = next(r for r in amd.of_type(RELEASE) if r.inputs["chart"] == AMD_CHART)
    assert env["SECRET_NAME"] == driver["imageRegistrySecret"]["name"], "KMM pushes and nodes pull with this Secret"
    assert env["SECRET_NAMESPACE"] == release.inputs["namespace"], "KMM reads the Secret in its own namespace"
    login_server = amd.one(REGISTRY).outputs["loginServer"]
    assert env["LOGIN_SERVER"] == login_server == driver["image"].split("/", 1)[0]
    assert env["TOKEN_NAME"] == amd.one(TOKEN).inputs["tokenName"], "ACR token logins use the token name as user"
    config = secret_job.docker_config(env["LOGIN_SERVER"], env["TOKEN_NAME"], "p4ss")
    manifest = secret_job.secret_manifest(env["SECRET_NAME"], env["SECRET_NAMESPACE"], config)
    assert manifest["type"] == "kubernetes.io/dockerconfigjson", "KMM and the kubelet read docker-registry Secrets"
    stored = json.loads(base64.b64decode(manifest["data"][".dockerconfigjson"]))
    entry = stored["auths"][login_server]
    assert base64.b64decode(entry["auth"]).decode() == f"{env['TOKEN_NAME']}:p4ss"

    rbac = [kubernetes_object(r) for r in amd.resources if r.type.startswith("kubernetes:rbac")]
    pod, _ = _secret_writer(amd)
    user = {f"system:serviceaccount:kube-amd-gpu:{pod['spec']['serviceAccountName']}"}
    secret = {"group": "", "resource": "secrets", "namespace": env["SECRET_NAMESPACE"]}
    for verb in ("get", "patch"):
        assert kubernetes_allows(rbac, user, Request(verb, **secret, name=env["SECRET_NAME"])), f"the Job must {verb}"
    assert kubernetes_allows(rbac, user, Request("create", **secret)), "the Job creates the Secret on first run"
    for verb, name in (("get", "default-token"), ("patch", "kmm-webhook-cert"), ("delete", env["SECRET_NAME"])):
        assert not kubernetes_allows(rbac, user, Request(verb, **secret, name=name)), f"no {verb} of {name}"
    assert not kubernetes_allows(rbac, user, Request("get", "", "secrets", "kube-system", name=env["SECRET_NAME"]))


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    return {k for v in value for k in _keys(v)} if isinstance(value, list) else set()


def test_the_password_is_in_no_pulumi_resource_or_output(amd: Recording) -> None:
    secrets = [r for r in amd.of_type("kubernetes:core/v1:Secret") if "amdgpu" in json.dumps(r.inputs)]
    assert not secrets, "a Secret managed by Pulumi would put the password in its state"
    for resource in [*amd.resources, None]:
        state = [resource.inputs, resource.outputs] if resource else amd.stack_outputs
        carried = _keys(state) & {"passwords", "password", ".dockerconfigjson", "credentials"}
        assert not carried, f"{resource.name if resource else 'stack outputs'} would keep {carried} in Pulumi's state"
    _, env = _secret_writer(amd)
    assert not {k for k in env if "PASSWORD" in k}, "the Job receives no password, it asks Azure for one"


def test_the_job_runs_on_the_cpu_pool(amd: Recording) -> None:
    pod, _ = _secret_writer(amd)
    model = scheduling_check(amd, {"mi300x"})
    fits = [n.pool for n in model.user_nodes if pod_fits_node(pod["spec"], n.labels, n.taints)]
    cpu = [n.pool for n in model.user_nodes if not n.gpu and not n.amd_gpu]
    assert fits and set(fits) <= set(cpu), f"the Job runs on the CPU pool and keeps no GPU node awake: {fits}"


JOB_ENV = {
    "SECRET_NAMESPACE": "kube-amd-gpu",
    "SECRET_NAME": "amdgpu-driver-registry",
    "LOGIN_SERVER": "acr.azurecr.io",
    "TOKEN_NAME": "amdgpu-driver-build",
    "REPOSITORY": "amdgpu-driver",
    "REGISTRY_ID": "/subscriptions/s/resourceGroups/g/providers/Microsoft.ContainerRegistry/registries/acr",
    "TOKEN_ID": "/subscriptions/s/resourceGroups/g/providers/Microsoft.ContainerRegistry/registries/acr/tokens/t",
    "API_VERSION": "2025-04-01",
    "LIFETIME_DAYS": "30",
    "RENEW_DAYS": "10",
    "SIGNING_KEY_SECRET": "amdgpu-module-signing-key",
    "SIGNING_CERT_SECRET": "amdgpu-module-signing-cert",
    "AZURE_CLIENT_ID": "c",
    "AZURE_TENANT_ID": "t",
    "AZURE_AUTHORITY_HOST": "https://login.microsoftonline.com/",
}


class FakeApis:
    """Entra ID, ARM, ACR and the Kubernetes API as the Job sees them over HTTP."""

    def __init__(self, refusals: int, secrets: dict[str, dict[str, Any]] | None = None, logs_in: bool = True) -> None:
        self.refusals = refusals
        self.secrets = dict(secrets or {})
        self.logs_in = logs_in
        self.arm_bodies: list[dict[str, Any]] = []
        self.writes: list[tuple[str, str]] = []

    def request(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None = None, context: Any = None
    ) -> tuple[int, dict[str, str], bytes]:
        if url.endswith("/oauth2/v2.0/token"):
            return 200, {}, json.dumps({"access_token": "arm"}).encode()
        if "/generateCredentials?" in url:
            self.arm_bodies.append(json.loads(body or b"{}"))
            if self.refusals:
                self.refusals -= 1
                return 403, {}, b'{"error": {"code": "AuthorizationFailed"}}'
            slot = self.arm_bodies[-1]["name"]
            return 200, {}, json.dumps({"passwords": [{"name": slot, "value": f"new-{slot}"}]}).encode()
        if "/oauth2/token?" in url:
            return (200 if self.logs_in else 401), {}, b"{}"
        raise AssertionError(f"unexpected call {method} {url}")

    def kubernetes(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        name = path.rsplit("/", 1)[-1]
        if method == "GET":
            return (200, self.secrets[name]) if name in self.secrets else (404, {})
        self.writes.append((method, name if method == "PATCH" else body["metadata"]["name"]))  # type: ignore[index]
        if method == "POST":
            assert body is not None
            self.secrets[body["metadata"]["name"]] = body
            return 201, body
        assert body is not None
        merged = self.secrets[name]
        merged["data"] = body["data"]
        merged.setdefault("metadata", {}).setdefault("annotations", {}).update(body["metadata"]["annotations"])
        return 200, merged


def _run_job(monkeypatch: pytest.MonkeyPatch, apis: FakeApis, tmp_path: Any) -> int:
    token_file = tmp_path / "token"
    token_file.write_text("federated")
    for key, value in {**JOB_ENV, "AZURE_FEDERATED_TOKEN_FILE": str(token_file)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(secret_job, "RETRY_SECONDS", 0)
    monkeypatch.setattr(secret_job, "_request", apis.request)
    monkeypatch.setattr(secret_job, "_kubernetes", apis.kubernetes)
    return secret_job.main()


def _password(secret: dict[str, Any]) -> str:
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    return config["auths"]["acr.azurecr.io"]["password"]


def test_the_first_run_waits_out_the_403s_of_a_propagating_grant_and_writes_a_password_that_lapses(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    apis = FakeApis(refusals=3)
    before = datetime.datetime.now(datetime.UTC)
    assert _run_job(monkeypatch, apis, tmp_path) == 0, "a 403 while Azure propagates the new grant is not a failure"
    assert len(apis.arm_bodies) == 4, "three refusals, then the password"
    secret = apis.secrets["amdgpu-driver-registry"]
    assert _password(secret) == "new-password1"
    expiry = datetime.datetime.fromisoformat(apis.arm_bodies[-1]["expiry"].replace("Z", "+00:00"))
    assert datetime.timedelta(days=29) < expiry - before <= datetime.timedelta(days=30, minutes=1), (
        f"the password Azure issues must lapse ({expiry}); one without expiry is a push credential forever"
    )
    annotations = secret["metadata"]["annotations"]
    assert annotations[secret_job.EXPIRY_ANNOTATION] == apis.arm_bodies[-1]["expiry"], "the rotation reads it back"


def test_the_signing_key_is_made_in_the_cluster_once_and_its_certificate_matches(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    apis = FakeApis(refusals=0)
    assert _run_job(monkeypatch, apis, tmp_path) == 0
    key_secret, cert_secret = apis.secrets["amdgpu-module-signing-key"], apis.secrets["amdgpu-module-signing-cert"]
    # KMM's signer reads `key` (PEM private key) and `cert` (DER certificate): gpu-operator v1.5.1 secure-boot.md.
    key = serialization.load_pem_private_key(base64.b64decode(key_secret["data"]["key"]), password=None)
    cert = x509.load_der_x509_certificate(base64.b64decode(cert_secret["data"]["cert"]))
    assert cert.public_key().public_numbers() == key.public_key().public_numbers(), "the pair must match"  # type: ignore[union-attr]
    assert cert.not_valid_after_utc > datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=365)
    writes = list(apis.writes)
    assert _run_job(monkeypatch, apis, tmp_path) == 0
    assert [w for w in apis.writes[len(writes) :] if "signing" in w[1]] == [], "an existing pair is never replaced"


def test_a_password_near_its_expiry_is_replaced_through_the_other_slot_and_a_fresh_one_is_left(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    now = datetime.datetime.now(datetime.UTC)
    signing = {name: {"data": {}} for name in ("amdgpu-module-signing-key", "amdgpu-module-signing-cert")}

    def stored(days_left: int) -> dict[str, Any]:
        expires = (now + datetime.timedelta(days=days_left)).strftime("%Y-%m-%dT%H:%M:%SZ")
        config = secret_job.docker_config("acr.azurecr.io", "amdgpu-driver-build", "old-password1")
        annotations = {secret_job.SLOT_ANNOTATION: "password1", secret_job.EXPIRY_ANNOTATION: expires}
        return secret_job.secret_manifest("amdgpu-driver-registry", "kube-amd-gpu", config, annotations)

    fresh = FakeApis(refusals=0, secrets={**signing, "amdgpu-driver-registry": stored(20)})
    assert _run_job(monkeypatch, fresh, tmp_path) == 0
    assert fresh.arm_bodies == [] and fresh.writes == [], "a password 20 days from expiry is kept: no new credential"

    due = FakeApis(refusals=0, secrets={**signing, "amdgpu-driver-registry": stored(5)})
    assert _run_job(monkeypatch, due, tmp_path) == 0
    assert [b["name"] for b in due.arm_bodies] == ["password2"], (
        "the other slot is issued, so nodes pulling with password1 keep working until it lapses"
    )
    assert _password(due.secrets["amdgpu-driver-registry"]) == "new-password2"
    assert due.secrets["amdgpu-driver-registry"]["metadata"]["annotations"][secret_job.SLOT_ANNOTATION] == "password2"

    revoked = FakeApis(refusals=0, secrets={**signing, "amdgpu-driver-registry": stored(20)}, logs_in=False)
    assert _run_job(monkeypatch, revoked, tmp_path) == 0
    assert len(revoked.arm_bodies) == 1, "a password that no longer logs in is replaced whatever its expiry"


def test_a_cronjob_runs_the_same_program_daily_so_the_password_is_renewed_without_a_person(amd: Recording) -> None:
    (job,) = [j for j in amd.of_type(JOB) if j.inputs["metadata"]["namespace"] == "kube-amd-gpu"]
    (renewal,) = amd.of_type("kubernetes:batch/v1:CronJob")
    spec = renewal.inputs["spec"]
    gap = cron.parse(spec["schedule"]).longest_gap_seconds()
    renew = int(_secret_writer(amd)[1]["RENEW_DAYS"])
    assert renew * 86400 >= 2 * gap, (
        f"runs up to {gap / 86400:.1f} days apart: renewing {renew} days ahead must survive one failed run"
    )
    assert spec["concurrencyPolicy"] == "Forbid", "two runs at once would issue both slots"
    assert spec["jobTemplate"]["spec"]["template"] == job.inputs["spec"]["template"], (
        "the rotation runs the Job's program, identity and placement"
    )


def test_the_device_config_signs_with_the_key_the_job_makes(amd: Recording) -> None:
    _, env = _secret_writer(amd)
    sign = default_device_config(amd)["spec"]["driver"]["imageSign"]
    assert sign == {
        "keySecret": {"name": env["SIGNING_KEY_SECRET"]},
        "certSecret": {"name": env["SIGNING_CERT_SECRET"]},
    }
    rbac = [kubernetes_object(r) for r in amd.resources if r.type.startswith("kubernetes:rbac")]
    pod, _ = _secret_writer(amd)
    user = {f"system:serviceaccount:kube-amd-gpu:{pod['spec']['serviceAccountName']}"}
    for name in (env["SIGNING_KEY_SECRET"], env["SIGNING_CERT_SECRET"]):
        assert kubernetes_allows(rbac, user, Request("get", "", "secrets", "kube-amd-gpu", name=name)), name


def test_half_a_signing_key_pair_is_not_completed_with_a_new_half(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # A new key would sign modules that the remaining certificate (the one a person may have enrolled) cannot verify.
    apis = FakeApis(refusals=0, secrets={"amdgpu-module-signing-cert": {"data": {"cert": "AAAA"}}})
    assert _run_job(monkeypatch, apis, tmp_path) == 1, "the Job fails so the half pair is seen"
    assert "amdgpu-module-signing-key" not in apis.secrets, "no key is made to go with someone else's certificate"
    assert apis.secrets["amdgpu-module-signing-cert"] == {"data": {"cert": "AAAA"}}


def test_an_amd_only_stack_under_gpu_operator_mode_names_no_runtime_class_nothing_creates() -> None:
    # gpuOperator mode with only AMD pools installs no NVIDIA operator, so no RuntimeClass `nvidia` exists: a pod of
    # ours asking for it would be refused at admission.
    config = amd_variant()
    config["aks-gpu-platform:gpuPools"] = [p for p in config["aks-gpu-platform:gpuPools"] if p["name"] == "mi300x"]
    config["aks-gpu-platform:gpuStack"] = {"mode": "gpuOperator", "smokeTest": False}
    config["aks-gpu-platform:autoscaling"]["sampleInference"]["enabled"] = False
    for team in config["aks-gpu-platform:training"]["teams"]:
        team["quotas"] = [q for q in team["quotas"] if q["pool"] == "mi300x"]
    problems = [p for p in release_problems(run_stack("dev", config=config), "") if "RuntimeClass" in p]
    assert not problems, problems
