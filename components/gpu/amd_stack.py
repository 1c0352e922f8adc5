"""AMD GPU pools: AMD's GPU Operator with its driver build, device plugin and metrics exporter, and the exporter's
PodMonitor.

Nothing on an AKS MI300X node loads amdgpu for us: AKS "doesn't manage nor automate the installation of GPU drivers"
on AMD pools, which must use `gpuProfile.driver: None` (MicrosoftDocs/azure-aks-docs articles/aks/use-amd-gpus.md at
7cbe8aca), and the node image build carries no AMD driver (Azure/AgentBaker at 06836ee2: `EnableAMDGPU` is declared
in pkg/agent/datamodel/types.go and read by no provisioning script). So the operator installs AMD's out-of-tree
driver itself (ROCm/gpu-operator v1.5.1 docs/drivers/installation.md, "Install out-of-tree AMD GPU Drivers with
Operator"): through its KMM subchart it builds an image of `amdgpu-dkms` for each node kernel in the cluster
(internal/kmmmodule/dockerfiles/DockerfileTemplate.ubuntu; Ubuntu 22.04 and 24.04, kmmmodule.go driverLabels),
pushes it to the platform's registry and loads the module and its firmware on every selected node. What that needs,
all created here:
- cert-manager, for the KMM webhook's self-signed certificate (charts/kmm/templates/serving-cert.yaml);
- a repository in the platform's registry that the build pushes to and the nodes pull from, and a token scoped to
  that repository for the build. ACR issues token passwords only through the registry's `generateCredentials`
  action, which the pinned azure-native SDK does not expose (and the registry's admin user stays off), so a Job in
  the operator's namespace issues a password that lapses after PASSWORD_DAYS and writes the docker-registry Secret
  the DeviceConfig names, and a CronJob running the same program daily issues the other password slot before the
  one in use lapses (components/gpu/amd_registry_secret_job.py). They run on the CPU pool under workload identity,
  with a custom role that holds only that action at the registry (kept: each rotation needs it; the platform keeps
  one token in the registry, so the action reaches no other credential), and a Role for the Secrets they write;
  the password stays out of Pulumi's state and outputs. The operator release does not wait for the Job: until the
  Secret exists KMM's build cannot push and retries, and the AMD nodes advertise no amd.com/gpu;
- a signing key pair, made by the same program inside the cluster on its first run (never in Pulumi's state), with
  which KMM signs the module it builds (`driver.imageSign`): `modinfo -F signer amdgpu` on a node then names the
  platform's key. AKS nodes boot without Secure Boot unless Trusted Launch is on, and their key ring cannot be
  enrolled with this key, so the kernel records the signature but does not enforce it;
- `driver.blacklist`, so a node that ever loads the kernel's own amdgpu keeps it out from the next boot on (the
  operator writes the modprobe entry through the node labeller, which is therefore on).
Further, at our values:
- the DeviceConfig selects AMD pools by the platform's `gpu-vendor: amd` label and the chart's default
  `feature.node.kubernetes.io/amd-gpu: "true"`, both set through the pool so nodes carry them from boot; the chart's
  node-feature-discovery and its NFD rule are off (NVIDIA's operator may run its own NFD);
- the Argo-based remediation is off, so no Argo CRDs;
- every operand and the driver build and loader tolerate every GPU pool taint; controllers run on the CPU pool;
  every image runs at a release tag, not `latest`.
Its images are on Docker Hub (`rocm/...`, busybox, and the `ubuntu` base of the driver build): `AMD_DOCKER_HUB_IMAGES`
names them for the plan's rate-limit warning.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.containerregistry as containerregistry
import pulumi_azure_native.managedidentity as managedidentity
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.gpu.scheduling import (
    AMD_VENDOR_LABEL,
    cpu_node_selector,
    gpu_tolerations,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig

from ..monitoring import metrics_labels as labels
from ..monitoring.dcgm_exporter import SCRAPE_LABEL_LIMITS
from ..shared.context import ClusterHandle
from ..shared.workload_identity import AZURE_CLI_IMAGE, federated_identity, identity_service_account, python_program_pod
from ..shared.workloads import platform_namespace
from . import amd_registry_secret_job
from .health import cert_manager_release

# github.com/ROCm/gpu-operator tag v1.5.1 (2026-07-21, commit 858cf255), newest release; helm-charts-k8s
AMD_GPU_OPERATOR_CHART = ("https://rocm.github.io/gpu-operator", "gpu-operator-charts", "v1.5.1")
AMD_GPU_OPERATOR_NAMESPACE = "kube-amd-gpu"
# Operand images at release tags: the operator's own (chart default controllerManager.manager.image), the device
# plugin ROCm/k8s-device-plugin v1.31.0.10 (tag form as the operator's e2e tests pin it, `1.31.0.6`) and its node
# labeller (`labeller-<version>`, docs/specialized_networks/airgapped-install.md), the exporter
# ROCm/device-metrics-exporter v1.5.1 (released with operator v1.5.1), busybox as the chart's initContainerImage.
OPERATOR_IMAGE = "docker.io/rocm/amd-gpu-operator:v1.5.1"
DEVICE_PLUGIN_IMAGE = "docker.io/rocm/k8s-device-plugin:1.31.0.10"
NODE_LABELLER_IMAGE = "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.10"
METRICS_EXPORTER_IMAGE = "docker.io/rocm/device-metrics-exporter:v1.5.1"
INIT_CONTAINER_IMAGE = "docker.io/library/busybox:1.36"
# KMM at the operator's release tag (airgapped-install.md lists kernel-module-management-* at the operator's
# `<version>`; the chart's charts/kmm/values.yaml says `latest`). The build runs kaniko at the chart's pin
# (relatedImageBuild) on the Docker Hub `ubuntu:<node OS version>` base (DockerfileTemplate.ubuntu, baseImageRegistry
# docker.io): both AKS Ubuntu versions are named so the plan can warn about their pulls.
KMM_TAG = "v1.5.1"
KMM_OPERATOR_IMAGE = "docker.io/rocm/kernel-module-management-operator"
KMM_WEBHOOK_IMAGE = "docker.io/rocm/kernel-module-management-webhook-server"
KMM_WORKER_IMAGE = f"docker.io/rocm/kernel-module-management-worker:{KMM_TAG}"
KMM_SIGNER_IMAGE = f"docker.io/rocm/kernel-module-management-signimage:{KMM_TAG}"
KMM_BUILDER_IMAGE = "gcr.io/kaniko-project/executor:v1.23.2"
DRIVER_BUILD_BASE_IMAGES = ("docker.io/ubuntu:22.04", "docker.io/ubuntu:24.04")
AMD_DOCKER_HUB_IMAGES = (
    OPERATOR_IMAGE,
    DEVICE_PLUGIN_IMAGE,
    NODE_LABELLER_IMAGE,
    METRICS_EXPORTER_IMAGE,
    INIT_CONTAINER_IMAGE,
    f"{KMM_OPERATOR_IMAGE}:{KMM_TAG}",
    f"{KMM_WEBHOOK_IMAGE}:{KMM_TAG}",
    KMM_WORKER_IMAGE,
    *DRIVER_BUILD_BASE_IMAGES,
)
# KMM signs the built module with this key pair (DeviceConfig driver.imageSign -> KMM Module `sign`, ROCm/gpu-operator
# v1.5.1 internal/kmmmodule/kmmmodule.go): Secrets in the operator's namespace that the Job makes in-cluster.
SIGNING_KEY_SECRET = "amdgpu-module-signing-key"
SIGNING_CERT_SECRET = "amdgpu-module-signing-cert"
# The registry password lapses after PASSWORD_DAYS; the CronJob issues the other slot once fewer than RENEW_DAYS are
# left, running daily, so nine failed runs in a row still leave a working password.
PASSWORD_DAYS = 30
RENEW_DAYS = 10
ROTATION_SCHEDULE = "17 3 * * *"
# The amdgpu release the build installs: the chart's default deviceConfig.spec.driver.version at v1.5.1.
AMDGPU_DRIVER_VERSION = "30.20.1"
# The driver image lives in the platform's registry: the build pushes it as `<repository>:<os>-<kernel>-<version>`
# (kmmmodule.go addNodeInfoSuffixToImageTag) with the token below; the nodes pull it with the same secret.
DRIVER_REPOSITORY = "amdgpu-driver"
DRIVER_BUILD_TOKEN = "amdgpu-driver-build"
DRIVER_REGISTRY_SECRET = "amdgpu-driver-registry"
# ACR scope-map actions: pull, push and the manifest lookup KMM does before it builds.
DRIVER_REPOSITORY_ACTIONS = [
    f"repositories/{DRIVER_REPOSITORY}/content/read",
    f"repositories/{DRIVER_REPOSITORY}/content/write",
    f"repositories/{DRIVER_REPOSITORY}/metadata/read",
]
# The Job that issues the token's password and writes that Secret (its image: workload_identity.AZURE_CLI_IMAGE).
SECRET_WRITER = "amdgpu-driver-registry-writer"
SECRET_WRITER_IMAGE = AZURE_CLI_IMAGE
SECRET_WRITER_UID = 10001
# Registries_GenerateCredentials at a stable API version (azure-rest-api-specs specification/containerregistry/
# resource-manager/Microsoft.ContainerRegistry/stable/2025-04-01/containerregistry.json): a long-running POST whose
# 202 is polled at its Location, hence the async-status read next to the action (Azure resource provider operations,
# Microsoft.ContainerRegistry). Built-in roles that hold generateCredentials also write tokens or the registry.
GENERATE_CREDENTIALS_API_VERSION = "2025-04-01"
PASSWORD_ISSUER_ACTIONS = [
    "Microsoft.ContainerRegistry/registries/generateCredentials/action",
    "Microsoft.ContainerRegistry/registries/operationStatuses/read",
]
SECRET_WRITER_PROGRAM = Path(amd_registry_secret_job.__file__).read_text()
# checkov skips, each with its reason (tests/platform/test_checkov.py reads them from the object).
SECRET_WRITER_CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=MCR's Azure CLI image is pinned by release and OS tag; a digest pins one arch",
    "checkov.io/skip2": "CKV2_K8S_6=the Job serves nothing; it calls only Entra ID, ARM, ACR and the API",
    "checkov.io/skip3": "CKV_K8S_38=the Job needs its service account token for workload identity and the Secret",
}
# Pulumi waits for the Job; it retries until the grant works, which Azure documents as up to 10 minutes.
SECRET_WRITER_DEADLINE_SECONDS = 1500
# The chart's default DeviceConfig is named `default` (templates/default-deviceconfig.yaml); the operator labels the
# exporter pods `daemonset-name: <DeviceConfig>` and `app.kubernetes.io/name: metrics-exporter`, container
# `metrics-exporter-container`, port `exporter-port` = spec.metricsExporter.port (internal/metricsexporter/
# metricsexporter.go at v1.5.1).
DEVICE_CONFIG_NAME = "default"
EXPORTER_POD_LABELS = {"daemonset-name": DEVICE_CONFIG_NAME, "app.kubernetes.io/name": "metrics-exporter"}
EXPORTER_PORT_NAME = "exporter-port"
EXPORTER_PORT = 5000


class AmdGpuStackArgs(TypedDict):
    pools: Sequence[GpuPoolConfig]
    """Every GPU pool: the operands tolerate all their taints; the DeviceConfig selects the AMD ones."""
    cluster: ClusterHandle
    """The cluster the operator runs in."""
    registry_name: pulumi.Input[str]
    """The platform's container registry, which holds the built driver images."""
    registry_id: pulumi.Input[str]
    """Its resource ID: the scope of the password issuer's role."""
    registry_login_server: pulumi.Input[str]
    """Its login server (`<name>.azurecr.io`)."""
    scrape_dependencies: Sequence[pulumi.Resource]
    """What a PodMonitor waits for (the managed Prometheus add-on that brings its CRD)."""
    scrape_interval_seconds: int
    """How often managed Prometheus scrapes the exporter (the DCGM exporter's interval)."""


def kmm_values() -> dict[str, Any]:
    """The KMM subchart (charts/kmm at v1.5.1): pinned images, controller and webhook on the CPU pool."""
    cpu = cpu_node_selector()
    return {
        "enabled": True,
        "watch": True,
        "controller": {
            "nodeSelector": cpu,
            "manager": {
                "image": {"repository": KMM_OPERATOR_IMAGE, "tag": KMM_TAG},
                "env": {
                    "relatedImageBuild": KMM_BUILDER_IMAGE,
                    "relatedImageSign": KMM_SIGNER_IMAGE,
                    "relatedImageWorker": KMM_WORKER_IMAGE,
                },
            },
        },
        "webhookServer": {
            "nodeSelector": cpu,
            "webhookServer": {"image": {"repository": KMM_WEBHOOK_IMAGE, "tag": KMM_TAG}},
        },
    }


def amd_gpu_operator_values(pools: Sequence[GpuPoolConfig], registry_login_server: pulumi.Input[str]) -> dict[str, Any]:
    """Values of gpu-operator-charts v1.5.1 (keys as helm-charts-k8s/values.yaml and templates read them)."""
    return {
        "node-feature-discovery": {"enabled": False},
        "installdefaultNFDRule": False,
        "kmm": kmm_values(),
        "remediation": {"enabled": False, "installCRDs": False},
        "controllerManager": {
            "manager": {"image": {"repository": OPERATOR_IMAGE.rsplit(":", 1)[0], "tag": "v1.5.1"}},
            # The controller stays on the CPU pool instead of keeping a GPU node awake.
            "nodeSelector": cpu_node_selector(),
        },
        "deviceConfig": {"spec": _device_config_spec(gpu_tolerations(pools), registry_login_server)},
    }


def _device_config_spec(tolerations: list[dict[str, str]], registry_login_server: pulumi.Input[str]) -> dict[str, Any]:
    """The chart's default DeviceConfig: the AMD pools' driver build, device plugin, node labeller and exporter."""
    return {
        # Helm merges maps, so the chart's default NFD label stays in the selector next to ours: AMD
        # pools carry both from boot (config/gpu/scheduling.py vendor_node_labels).
        "selector": dict([AMD_VENDOR_LABEL]),
        "driver": {
            "enable": True,
            "blacklist": True,
            "version": AMDGPU_DRIVER_VERSION,
            # No tag: the operator appends one per OS, kernel and driver version.
            "image": pulumi.Output.concat(registry_login_server, "/", DRIVER_REPOSITORY),
            "imageRegistrySecret": {"name": DRIVER_REGISTRY_SECRET},
            "imageSign": {
                "keySecret": {"name": SIGNING_KEY_SECRET},
                "certSecret": {"name": SIGNING_CERT_SECRET},
            },
            # KMM's build and module-loader pods run on the GPU nodes.
            "tolerations": tolerations,
        },
        "commonConfig": {"initContainerImage": INIT_CONTAINER_IMAGE},
        "devicePlugin": {
            "devicePluginImage": DEVICE_PLUGIN_IMAGE,
            "devicePluginTolerations": tolerations,
            # The node labeller writes the amdgpu blacklist entry (driver.blacklist needs it).
            "enableNodeLabeller": True,
            "nodeLabellerImage": NODE_LABELLER_IMAGE,
            "nodeLabellerTolerations": tolerations,
        },
        "metricsExporter": {
            "enable": True,
            "image": METRICS_EXPORTER_IMAGE,
            "port": EXPORTER_PORT,
            "tolerations": tolerations,
            # monitoring.coreos.com, which managed Prometheus ignores: the stack's own PodMonitor scrapes it.
            "prometheus": {"serviceMonitor": {"enable": False}},
        },
    }


def secret_writer_pod_spec(env: dict[str, pulumi.Input[str]]) -> dict[str, Any]:
    """The Job's pod: on the CPU pool, restricted and non-root, running the program with `env`."""
    return python_program_pod(SECRET_WRITER, SECRET_WRITER_UID, "issue-password", SECRET_WRITER_PROGRAM, env)


class AmdGpuStack(pulumi.ComponentResource):
    """AMD's GPU Operator (driver build, device plugin, exporter) for the AMD pools, and the exporter's PodMonitor."""

    release: k8s.helm.v3.Release
    """The operator release: depend on it for objects that need `amd.com/gpu`."""

    def __init__(self, name: str, args: AmdGpuStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:AmdGpuStack", name, None, opts)
        k8s_opts = args["cluster"].k8s_options(self)
        token = self._driver_build_token(name, args)
        cert_manager = cert_manager_release(f"{name}-cert-manager", k8s_opts)
        repo, chart, version = AMD_GPU_OPERATOR_CHART
        # The operator's device plugin, node labeller and KMM driver loader mount the node's paths, privileged.
        namespace = platform_namespace(f"{name}-namespace", AMD_GPU_OPERATOR_NAMESPACE, "privileged", k8s_opts)
        self.release = k8s.helm.v3.Release(
            f"{name}-gpu-operator",
            chart=chart,
            version=version,
            repository_opts={"repo": repo},
            namespace=AMD_GPU_OPERATOR_NAMESPACE,
            values=amd_gpu_operator_values(args["pools"], args["registry_login_server"]),
            # The KMM subchart's Issuer and Certificate need cert-manager's CRDs and webhook first.
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[cert_manager, namespace])),
        )
        self._exporter_pod_monitor(name, args, k8s_opts)
        self._driver_secret_writer(name, args, token)
        self.register_outputs({})

    def _exporter_pod_monitor(self, name: str, args: AmdGpuStackArgs, k8s_opts: pulumi.ResourceOptions) -> None:
        """Managed Prometheus scrapes AMD's metrics exporter, relabelled to the platform's label contract."""
        k8s.apiextensions.CustomResource(
            f"{name}-exporter-pod-monitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": "amd-device-metrics-exporter", "namespace": AMD_GPU_OPERATOR_NAMESPACE},
            spec={
                **SCRAPE_LABEL_LIMITS,
                "selector": {"matchLabels": EXPORTER_POD_LABELS},
                "namespaceSelector": {"matchNames": [AMD_GPU_OPERATOR_NAMESPACE]},
                "podMetricsEndpoints": [
                    {
                        "port": EXPORTER_PORT_NAME,
                        "path": "/metrics",
                        "interval": f"{args['scrape_interval_seconds']}s",
                        "honorLabels": labels.HONOR_LABELS,
                        "relabelings": [
                            {"action": "replace", "targetLabel": "job", "replacement": labels.AMD_SCRAPE_JOB}
                        ],
                        "metricRelabelings": labels.amd_metric_relabelings(),
                    }
                ],
            },
            # The namespace comes with the release; the CRD with the managed Prometheus add-on.
            opts=pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=[self.release, *args["scrape_dependencies"]])
            ),
        )

    def _driver_build_token(self, name: str, args: AmdGpuStackArgs) -> containerregistry.Token:
        """A registry token that can push and pull the driver repository and nothing else."""
        child = pulumi.ResourceOptions(parent=self)
        scope_map = containerregistry.ScopeMap(
            f"{name}-driver-scope-map",
            resource_group_name=args["cluster"].resource_group_name,
            registry_name=args["registry_name"],
            scope_map_name=DRIVER_BUILD_TOKEN,
            description="AMD GPU Operator driver build: push and pull of the driver image repository",
            actions=DRIVER_REPOSITORY_ACTIONS,
            opts=child,
        )
        return containerregistry.Token(
            f"{name}-driver-token",
            resource_group_name=args["cluster"].resource_group_name,
            registry_name=args["registry_name"],
            token_name=DRIVER_BUILD_TOKEN,
            scope_map_id=scope_map.id,
            status=containerregistry.TokenStatus.ENABLED,
            opts=child,
        )

    def _driver_secret_writer(self, name: str, args: AmdGpuStackArgs, token: containerregistry.Token) -> None:
        """The Job (first `pulumi up`) and daily CronJob that keep the DeviceConfig's registry Secret holding a password
        that has not lapsed, and make the module signing key once."""
        identity, credential, grant = self._password_issuer(name, args)
        # The namespace comes with the operator release.
        k8s_opts = pulumi.ResourceOptions.merge(
            args["cluster"].k8s_options(self), pulumi.ResourceOptions(depends_on=[self.release])
        )
        account_objects = _secret_writer_account(name, identity.client_id, k8s_opts)
        job_spec = _secret_writer_job_spec(_secret_writer_env(args, token))
        job_metadata: k8s.meta.v1.ObjectMetaArgsDict = {
            "name": SECRET_WRITER,
            "namespace": AMD_GPU_OPERATOR_NAMESPACE,
            "labels": {"app": SECRET_WRITER},
            "annotations": SECRET_WRITER_CHECKOV_SKIPS,
        }
        needs = [credential, grant, *account_objects, token]
        k8s.batch.v1.Job(
            f"{name}-{SECRET_WRITER}",
            metadata=job_metadata,
            spec=job_spec,
            # The token exchange and generateCredentials need the federated credential and the grant; the Job
            # waits out the grant's propagation itself, so `pulumi up` waits only as long as Azure takes.
            opts=pulumi.ResourceOptions.merge(
                k8s_opts,
                pulumi.ResourceOptions(
                    depends_on=needs,
                    custom_timeouts=pulumi.CustomTimeouts(create=f"{SECRET_WRITER_DEADLINE_SECONDS + 300}s"),
                ),
            ),
        )
        # The same program daily: re-issues the password before it lapses, without a person or a `pulumi up`.
        k8s.batch.v1.CronJob(
            f"{name}-{SECRET_WRITER}-rotation",
            metadata={**job_metadata, "name": f"{SECRET_WRITER}-rotation"},
            spec={
                "schedule": ROTATION_SCHEDULE,
                "concurrency_policy": "Forbid",
                "successful_jobs_history_limit": 1,
                "failed_jobs_history_limit": 3,
                "job_template": {"metadata": {"labels": {"app": SECRET_WRITER}}, "spec": job_spec},
            },
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=needs)),
        )

    def _password_issuer(
        self, name: str, args: AmdGpuStackArgs
    ) -> tuple[
        managedidentity.UserAssignedIdentity,
        managedidentity.FederatedIdentityCredential,
        authorization.RoleAssignment,
    ]:
        """The secret writer's workload identity (and its federated credential), holding a custom role with only the
        registry's generateCredentials action, at the registry."""
        child = pulumi.ResourceOptions(parent=self)
        identity, credential = federated_identity(
            f"{name}-password-issuer",
            f"{name}-password-issuer",
            handle=args["cluster"],
            namespace=AMD_GPU_OPERATOR_NAMESPACE,
            service_account=SECRET_WRITER,
            opts=child,
        )
        issuer_role = authorization.RoleDefinition(
            f"{name}-password-issuer",
            # Custom role names are unique per tenant: one per registry.
            role_name=pulumi.Output.concat("AMD driver build password issuer (", args["registry_name"], ")"),
            description="Issues passwords of the registry's repository-scoped tokens; nothing else",
            scope=args["registry_id"],
            assignable_scopes=[args["registry_id"]],
            permissions=[{"actions": PASSWORD_ISSUER_ACTIONS}],
            opts=child,
        )
        grant = authorization.RoleAssignment(
            f"{name}-password-issuer",
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=issuer_role.id,
            scope=args["registry_id"],
            opts=child,
        )
        return identity, credential, grant


def _secret_writer_account(
    name: str, client_id: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """The secret writer's service account, with a Role over the Secrets it writes."""
    return identity_service_account(
        f"{name}-{SECRET_WRITER}",
        AMD_GPU_OPERATOR_NAMESPACE,
        SECRET_WRITER,
        client_id,
        [
            {
                "api_groups": [""],
                "resources": ["secrets"],
                "resource_names": [DRIVER_REGISTRY_SECRET, SIGNING_KEY_SECRET, SIGNING_CERT_SECRET],
                "verbs": ["get", "patch"],
            },
            # RBAC cannot limit create to a name (the name is not known when create is authorised).
            {"api_groups": [""], "resources": ["secrets"], "verbs": ["create"]},
        ],
        opts,
    )


def _secret_writer_env(args: AmdGpuStackArgs, token: containerregistry.Token) -> dict[str, pulumi.Input[str]]:
    """What the secret writer's program reads (components/gpu/amd_registry_secret_job.py)."""
    return {
        "SECRET_NAMESPACE": AMD_GPU_OPERATOR_NAMESPACE,
        "SECRET_NAME": DRIVER_REGISTRY_SECRET,
        "LOGIN_SERVER": args["registry_login_server"],
        "REPOSITORY": DRIVER_REPOSITORY,
        "TOKEN_NAME": DRIVER_BUILD_TOKEN,
        "TOKEN_ID": token.id,
        "REGISTRY_ID": args["registry_id"],
        "API_VERSION": GENERATE_CREDENTIALS_API_VERSION,
        "LIFETIME_DAYS": str(PASSWORD_DAYS),
        "RENEW_DAYS": str(RENEW_DAYS),
        "SIGNING_KEY_SECRET": SIGNING_KEY_SECRET,
        "SIGNING_CERT_SECRET": SIGNING_CERT_SECRET,
    }


def _secret_writer_job_spec(env: dict[str, pulumi.Input[str]]) -> k8s.batch.v1.JobSpecArgsDict:
    """The Job and the CronJob's job: the program under workload identity, retried within its deadline."""
    return {
        "backoff_limit": 2,
        "active_deadline_seconds": SECRET_WRITER_DEADLINE_SECONDS,
        "template": {
            "metadata": {
                "labels": {"app": SECRET_WRITER, "azure.workload.identity/use": "true"},
                "annotations": SECRET_WRITER_CHECKOV_SKIPS,
            },
            "spec": cast(k8s.core.v1.PodSpecArgsDict, secret_writer_pod_spec(env)),
        },
    }
