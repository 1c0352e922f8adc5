"""The GPU concern's add-ons (components/shared/addon.py): NVIDIA's device plugin, GPU Operator and Network Operator,
the GPU checks, NVSentinel with cert-manager, AMD's GPU Operator and NVIDIA's DRA driver. Pins are the components'
own constants; the facts below were read in each chart at its pin (docs/charts.md is generated from them)."""

from ..shared.addon import AddOn, Chart, Readiness
from .amd_stack import AMD_DOCKER_HUB_IMAGES, AMD_GPU_OPERATOR_CHART, AMD_GPU_OPERATOR_NAMESPACE
from .dra_driver import DRA_DRIVER_CHART, DRA_DRIVER_NAMESPACE, DRA_DRIVER_VERSION, RELEASE_TIMEOUT_SECONDS
from .health import (
    CERT_MANAGER_CHART,
    CERT_MANAGER_NAMESPACE,
    NVSENTINEL_CHART,
    NVSENTINEL_DOCKER_HUB_IMAGES,
    NVSENTINEL_TIMEOUT_SECONDS,
    NVSENTINEL_VERSION,
)
from .health import NAMESPACE as NVSENTINEL_NAMESPACE
from .nvidia_stack import (
    DEVICE_PLUGIN_CHART,
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_NAMESPACE,
    NETWORK_OPERATOR_CHART,
    NETWORK_OPERATOR_NAMESPACE,
)
from .nvidia_stack import NAMESPACE as GPU_STACK_NAMESPACE
from .validation import NAMESPACE as VALIDATION_NAMESPACE

DEVICE_PLUGIN = AddOn(
    name="nvidia-device-plugin",
    summary="advertises `nvidia.com/gpu` on GPU nodes (gpuStack.mode devicePlugin); the GPU smoke test runs beside it",
    namespace=GPU_STACK_NAMESPACE,
    pod_security="privileged",
    undrained=True,
    charts=(
        Chart(
            DEVICE_PLUGIN_CHART[1],
            DEVICE_PLUGIN_CHART[2],
            repository=DEVICE_PLUGIN_CHART[0],
            source="NVIDIA/k8s-device-plugin tag `v0.20.0` (2026-08-19), newest release",
            templates_read="`deployments/helm/nvidia-device-plugin/{values.yaml, Chart.yaml, "
            "templates/daemonset-device-plugin.yml, templates/daemonset-mps-control-daemon.yml, "
            "templates/_helpers.tpl, "
            "templates/validation.yml}`",
            readiness=Readiness(
                "60 s: DaemonSet without readiness probe", "nvcr.io", runtime_class="none (`runtimeClassName: null`)"
            ),
        ),
    ),
)

GPU_OPERATOR = AddOn(
    name="gpu-operator",
    summary="NVIDIA's driver, container toolkit, device plugin, MIG manager and (with operatorDcgm) DCGM on GPU nodes "
    "(gpuStack.mode gpuOperator)",
    namespace=GPU_OPERATOR_NAMESPACE,
    pod_security="privileged",
    undrained=True,
    charts=(
        Chart(
            GPU_OPERATOR_CHART[1],
            GPU_OPERATOR_CHART[2],
            repository=GPU_OPERATOR_CHART[0],
            source="NVIDIA/gpu-operator tag `v26.7.0` (2026-08-20), newest release; client libraries k8s.io v0.36",
            templates_read="`deployments/gpu-operator/{values.yaml, templates/clusterpolicy.yaml, "
            "templates/operator.yaml, "
            "templates/upgrade_crd.yaml, charts/node-feature-discovery/values.yaml, "
            "charts/node-feature-discovery/templates/{worker,master,nfd-gc}.yaml, crds/}`, "
            "`assets/state-*/…daemonset.yaml`, "
            "`assets/state-mig-manager/0400_configmap.yaml`, `controllers/nodelabeling_controller.go`",
            readiness=Readiness(
                "75 s: operator and NFD readiness; the operands are the operator's, not waited on",
                "nvcr.io, registry.k8s.io",
                runtime_class="none; the operator creates RuntimeClass `nvidia`",
            ),
        ),
    ),
)

NETWORK_OPERATOR = AddOn(
    name="network-operator",
    summary="the RDMA shared device plugin that advertises `rdma/ib` on InfiniBand pools",
    namespace=NETWORK_OPERATOR_NAMESPACE,
    pod_security="privileged",
    undrained=True,
    charts=(
        Chart(
            NETWORK_OPERATOR_CHART[1],
            NETWORK_OPERATOR_CHART[2],
            repository=NETWORK_OPERATOR_CHART[0],
            source="Mellanox/network-operator tag `v26.4.1` (2026-07-24), newest non-RC (26.7.0 is at rc.2)",
            templates_read="`deployment/network-operator/{values.yaml, Chart.yaml, templates/operator.yaml, "
            "templates/nodefeaturerules.yaml, templates/upgrade-crd-hook.yaml, "
            "charts/node-feature-discovery/templates/worker.yaml, crds/mellanox.com_nicclusterpolicies.yaml}`, "
            "`manifests/state-rdma-shared-device-plugin/*`, `pkg/state/state_rdma_shared_device_plugin.go`, "
            "`controllers/nicclusterpolicy_controller.go`, `hack/release.yaml`",
            readiness=Readiness("75 s; its pre-install CRD Job 60 s", "nvcr.io"),
        ),
    ),
)

GPU_VALIDATION = AddOn(
    name="gpu-validation",
    summary="post-provision GPU checks (DCGM diagnostics, NCCL all-reduce) pools opt into (`gpuPools[].validation`)",
    namespace=VALIDATION_NAMESPACE,
    pod_security="privileged",
    undrained=True,
)

NVSENTINEL = AddOn(
    name="nvsentinel",
    summary="GPU fault detection, quarantine and drain (`gpuHealth.remediation`)",
    namespace=NVSENTINEL_NAMESPACE,
    pod_security="privileged",
    undrained=True,
    charts=(
        Chart(
            NVSENTINEL_CHART,
            NVSENTINEL_VERSION,
            source="NVIDIA/NVSentinel has no snapshot here: templates read in the fork lalitadithya/NVSentinel at "
            "`e002c5dc` (2026-08-17), the commit registering v1.19.0 as the README's install version",
            templates_read="`distros/kubernetes/nvsentinel/{Chart.yaml, values.yaml, templates/daemonset.yaml, "
            "templates/podMonitor.yaml}`, `charts/{syslog-health-monitor,metadata-collector,gpu-health-monitor}/"
            "templates/*daemonset*.yaml`, `charts/{labeler,fault-quarantine,node-drainer,kubernetes-object-monitor}/"
            "{values.yaml, templates/deployment.yaml, templates/configmap.yaml}`, `charts/mongodb-store/{values.yaml, "
            "templates/certmanager.yaml, templates/jobs.yaml, charts/mongodb/templates/replicaset/statefulset.yaml}`, "
            "`labeler/pkg/labeler/labeler.go`, `labeler/main.go`",
            readiness=Readiness(
                "675 s: certificates, then three MongoDB members one by one (`OrderedReady`), each a new disk, a pod "
                "start and readiness after 60 s, then the controllers",
                runtime_class='metadata-collector: chart default `nvidia` **set to `""`** except under the GPU '
                'Operator (AKS creates no RuntimeClass); gpu-health-monitor `""`',
                timeout_seconds=NVSENTINEL_TIMEOUT_SECONDS,
                timeout_basis="`NVSENTINEL_TIMEOUT_SECONDS`; upstream installs with `--timeout 15m`",
                docker_hub_images=NVSENTINEL_DOCKER_HUB_IMAGES,
            ),
        ),
    ),
)

CERT_MANAGER = AddOn(
    name="cert-manager",
    summary="issues NVSentinel's MongoDB TLS certificates and the AMD GPU Operator's KMM webhook certificate",
    namespace=CERT_MANAGER_NAMESPACE,
    pod_security="baseline",
    undrained=True,
    charts=(
        Chart(
            CERT_MANAGER_CHART[1],
            CERT_MANAGER_CHART[2],
            repository=CERT_MANAGER_CHART[0],
            source="cert-manager/cert-manager tag `v1.21.1` (2026-07-29), newest release",
            templates_read="`deploy/charts/cert-manager/{values.yaml, templates/deployment.yaml, "
            "templates/webhook-deployment.yaml, templates/cainjector-deployment.yaml, "
            "templates/startupapicheck-job.yaml, "
            "templates/crd-*.yaml}`",
            readiness=Readiness(
                "120 s: the post-install `startupapicheck` waits up to 1 m", "quay.io", runtime_class='none (`""`)'
            ),
        ),
    ),
)

AMD_GPU_OPERATOR = AddOn(
    name="amd-gpu-operator",
    summary="AMD's driver build (KMM), device plugin, node labeller and metrics exporter on AMD GPU pools",
    namespace=AMD_GPU_OPERATOR_NAMESPACE,
    pod_security="privileged",
    charts=(
        Chart(
            AMD_GPU_OPERATOR_CHART[1],
            AMD_GPU_OPERATOR_CHART[2],
            repository=AMD_GPU_OPERATOR_CHART[0],
            source="ROCm/gpu-operator tag `v1.5.1` (2026-07-21, commit `858cf255`), newest release; only with an AMD "
            "pool",
            templates_read="`helm-charts-k8s/{values.yaml, templates/deployment.yaml, "
            "templates/default-deviceconfig.yaml, "
            "crds/}`, `charts/kmm/templates/{deployment.yaml, serving-cert.yaml, selfsigned-issuer.yaml}`, "
            "`internal/{kmmmodule/kmmmodule.go, kmmmodule/dockerfiles/DockerfileTemplate.ubuntu, nodelabeller, "
            "metricsexporter}`",
            readiness=Readiness(
                "105 s: the KMM webhook's pod start, its cert-manager certificate and readiness after 5 s; the "
                "DeviceConfig's operands are the operator's, not waited on",
                docker_hub_images=AMD_DOCKER_HUB_IMAGES,
            ),
        ),
    ),
)

DRA_DRIVER = AddOn(
    name="dra-driver-nvidia-gpu",
    summary="ComputeDomains (IMEX) across the VMs of a multi-node NVLink pool",
    namespace=DRA_DRIVER_NAMESPACE,
    pod_security="privileged",
    charts=(
        Chart(
            DRA_DRIVER_CHART,
            DRA_DRIVER_VERSION,
            source="NVIDIA/k8s-dra-driver-gpu tag `v0.4.0` (2026-05-15), newest release; only with a multi-node NVLink "
            "(Grace-Blackwell) pool",
            templates_read="`deployments/helm/dra-driver-nvidia-gpu/{values.yaml, templates/validation.yaml, "
            "templates/kubeletplugin.yaml, templates/controller.yaml, templates/deviceclass-compute-domain-*.yaml}`, "
            "`docs/{install.md, prerequisites.md}`: `nvidiaDriverRoot` is `/run/nvidia/driver` under the GPU "
            "Operator's driver container (the only driver these Arm64 pools get), `/` for a host driver",
            readiness=Readiness(
                "660 s: the kubelet plugin's startupProbe allows 600 x 1 s after its pod starts",
                "registry.k8s.io",
                timeout_seconds=RELEASE_TIMEOUT_SECONDS,
                timeout_basis="`RELEASE_TIMEOUT_SECONDS` of components/gpu/dra_driver.py",
            ),
        ),
    ),
)
