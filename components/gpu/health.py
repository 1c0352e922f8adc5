"""GPU health, detected and acted on: an alert group on GPU node conditions and DCGM health counters, and
NVSentinel cordoning and draining GPU nodes that report a fatal fault, so the autoscaler replaces them.

Detection. Node Problem Detector on AKS GPU nodes sets node conditions (GPUMissing, XIDErrors, NVLink, IB link
flapping, clock throttling, unhealthy device plugin or DCGM services); kube-state-metrics exports every condition
as `kube_node_status_condition`, which managed Prometheus keeps by default (Azure/prometheus-collector
`kubestateRegex_minimal_mac`, tomlparser-default-targets-metrics-keep-list.go). DCGM counters add what NPD does
not watch: row-remap failures, thermal and power throttling time, NVLink errors (names as dcgm-exporter
4.5.3-4.8.2 `etc/default-counters.csv` spells them; our exporter collects them through `DCGM_COUNTERS`).

Remediation: why NVSentinel. AKS has no mechanism that acts on GPU faults: NPD "doesn't take direct action to
remediate" (articles/aks/gpu-health-monitoring.md FAQ, 2026-02-27), auto-repair acts only on NotReady nodes
(node-auto-repair.md, 2026-07-01) and auto-drain only on VM scheduled events (node-auto-drain.md, 2026-03-30).
NVIDIA's NVSentinel is maintained fault remediation for Kubernetes GPU nodes: its kubernetes-object-monitor turns
the NPD conditions into health events, its syslog monitor reads XID/SXID errors from the kernel journal, and
fault-quarantine cordons and node-drainer drains (both honour `global.dryRun`). The drained node is empty and
cordoned, the evicted pods pend, and the cluster autoscaler adds a node for them and removes the empty one.
Only monitor, quarantine and drain are installed: reboot and reset through the Azure API (janitor) need VMSS
restart permissions and a soak period first; the CSP maintenance monitor has no Azure support.

Chart: NVIDIA/NVSentinel `distros/kubernetes/nvsentinel`, published as `oci://ghcr.io/nvidia/nvsentinel`. The
store holds no snapshot of NVIDIA/NVSentinel itself; its templates were read in the fork lalitadithya/NVSentinel
at e002c5dc (2026-08-17, the commit that registers v1.19.0 in the README's install command), hence the pin
v1.19.0. It needs cert-manager for the MongoDB TLS certificates (mongodb-store/templates/certmanager.yaml) and
keeps its events in an in-cluster MongoDB replica set (Bitnami mongodb 16.2.2 subchart, three members).
"""

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored_parts
from aks_gpu_platform.config.gpu.health import (
    FATAL_GPU_CONDITIONS,
    WARNING_GPU_CONDITIONS,
    GpuHealthConfig,
    RemediationConfig,
)
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_LABEL_KEY,
    GPU_POOL_LABEL_VALUE,
    cpu_node_selector,
    gpu_tolerations,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackMode
from aks_gpu_platform.config.monitoring.section import derived_name

from ..monitoring import metrics_labels as labels
from ..monitoring.alerts import AlertSpec, alert_rules
from ..shared.context import ClusterHandle
from ..shared.workloads import platform_namespace, pod_security_labels

NAMESPACE = "nvsentinel"  # mongodb-store's values hard-code this namespace in the exporter's MongoDB URI
# github.com/NVIDIA/NVSentinel v1.19.0 (README install command at fork lalitadithya/NVSentinel@e002c5dc, 2026-08-17)
NVSENTINEL_CHART = "oci://ghcr.io/nvidia/nvsentinel"
NVSENTINEL_VERSION = "v1.19.0"
# github.com/cert-manager/cert-manager tag v1.21.1 (2026-07-29), newest release; deploy/charts/cert-manager
CERT_MANAGER_CHART = ("https://charts.jetstack.io", "cert-manager", "v1.21.1")
CERT_MANAGER_NAMESPACE = "cert-manager"
# Set by the NVSentinel labeler's --assume-driver-installed on nodes labelled so (labeler/main.go at e002c5dc);
# metadata-collector also selects it. AKS-installed drivers (devicePlugin, aksManaged) have no driver pod to find.
GPU_PRESENT_LABEL = ("nvidia.com/gpu.present", "true")
# Namespaces whose pods the drain leaves alone besides the platform's own (GpuHealthArgs.platform_namespaces).
OWN_SYSTEM_NAMESPACES = (NAMESPACE, "kube-system", CERT_MANAGER_NAMESPACE)
# Helm's wait for the NVSentinel release: its MongoDB members start one by one (OrderedReady), each after a new
# disk, image pulls and a 60 s readiness delay, behind the certificate waits of their init containers (about
# 11 minutes at our values); upstream installs with `--timeout 15m` (README at e002c5dc).
NVSENTINEL_TIMEOUT_SECONDS = 900
# Images the NVSentinel chart pulls anonymously from Docker Hub at our values (mongodb-store values.yaml at
# e002c5dc: helperImages.kubectl and the Bitnami mongodb subchart's image, tls.image, metrics.image). The stack
# has no Docker Hub credentials for an ACR cache rule, so the plan names them instead.
NVSENTINEL_DOCKER_HUB_IMAGES = (
    "docker.io/bitnamilegacy/kubectl:1.30.6",
    "docker.io/bitnamilegacy/mongodb:8.0.3-debian-12-r0",
    "docker.io/bitnamilegacy/mongodb-exporter:0.41.2-debian-12-r1",
    "docker.io/bitnamilegacy/nginx:1.27.2-debian-12-r2",
)


def remediation_node_labels(settings: GpuHealthConfig) -> dict[str, str]:
    """Labels GPU pools carry from boot so NVSentinel's node agents can select them (scale-from-zero included)."""
    return dict([GPU_PRESENT_LABEL]) if settings.remediation.enabled else {}


# ---------------------------------------------------------------- alerts


def _condition_regex(conditions: Sequence[str]) -> str:
    return "|".join(conditions)


# A DCGM series' GPU and node, and the kube-state-metrics label set of one node, in the alerts' texts and queries.
_GPU_ON_NODE = f"GPU {{{{ $labels.{labels.GPU} }}}} on {{{{ $labels.{labels.NODE} }}}}"
_BY_NODE = f"{labels.CLUSTER}, node"


def gpu_health_alert_rules(
    settings: GpuHealthConfig, action_group_id: pulumi.Input[str], enabled: bool
) -> list[alertsmanagement.PrometheusRuleArgsDict]:
    """GPU health alerts: NPD node conditions first (they cover every mode with an AKS driver), then DCGM counters.

    Labels come from the label contract (`metrics_labels`) for DCGM series and from kube-state-metrics (`node`,
    `condition`, `key`) for node series.
    """
    specs = [
        *_node_condition_alerts(),
        *_gpu_memory_alerts(),
        *_gpu_throttling_alerts(),
        _nvlink_alert(),
        _cordoned_node_alert(settings.alerts.cordoned_node_hours),
    ]
    return alert_rules(specs, action_group_id, enabled, {"team": "gpu-platform", "category": "gpu-health"})


def _node_condition_alerts() -> list[AlertSpec]:
    """Node Problem Detector's GPU conditions: the fatal ones, and the clock throttling warnings."""
    fatal = _condition_regex(FATAL_GPU_CONDITIONS)
    warning = _condition_regex(WARNING_GPU_CONDITIONS)
    return [
        (
            "GpuNodeFaultCondition",
            f'max by ({_BY_NODE}, condition) (kube_node_status_condition{{condition=~"{fatal}",status="true"}}) == 1',
            "PT2M",
            1,
            "GPU node {{ $labels.node }} reports {{ $labels.condition }} (Node Problem Detector): its GPUs cannot be "
            "trusted; remediation cordons and drains it, otherwise cordon, drain and replace it",
        ),
        (
            "GpuNodeClockThrottling",
            f'max by ({_BY_NODE}, condition) (kube_node_status_condition{{condition=~"{warning}",status="true"}}) == 1',
            "PT15M",
            2,
            "GPU node {{ $labels.node }} reports {{ $labels.condition }}: hardware or thermal slowdown; check cooling "
            "and power, open an Azure support case if it persists",
        ),
    ]


def _gpu_memory_alerts() -> list[AlertSpec]:
    """DCGM's row remapping: a failed remap, and remaps after uncorrectable errors that wait for a reset."""
    return [
        (
            "GpuRowRemapFailed",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "PT1M",
            1,
            f"{_GPU_ON_NODE} failed to remap a memory row: the GPU needs replacing; drain the node and raise an Azure "
            "Guest Health Report",
        ),
        (
            "GpuUncorrectableRowRemaps",
            "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0",
            "PT1M",
            2,
            f"{_GPU_ON_NODE} remapped rows after uncorrectable memory errors; a GPU reset (drain, then reboot) applies "
            "the remap",
        ),
    ]


def _gpu_throttling_alerts() -> list[AlertSpec]:
    """DCGM's violation counters (nanoseconds throttled): thermal and power."""
    return [
        (
            "GpuThermalThrottling",
            "rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) / 1e9 > 0.1",
            "PT10M",
            2,
            f"{_GPU_ON_NODE} spends over 10% of its time thermally throttled; check the node's cooling",
        ),
        (
            "GpuPowerThrottling",
            "rate(DCGM_FI_DEV_POWER_VIOLATION[15m]) / 1e9 > 0.5",
            "PT30M",
            3,
            f"{_GPU_ON_NODE} spends over half its time power-capped; expected briefly under full load, not for 30 "
            "minutes",
        ),
    ]


def _nvlink_alert() -> AlertSpec:
    """DCGM's NVLink recovery and data CRC error counters."""
    return (
        "GpuNvlinkErrors",
        "increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m]) > 0"
        " or increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[10m]) > 0",
        "PT1M",
        2,
        f"{_GPU_ON_NODE} has NVLink recovery or data CRC errors: multi-GPU jobs on it slow down or fail; drain and "
        "reboot",
    )


def _cordoned_node_alert(hours: int) -> AlertSpec:
    """A GPU node cordoned for `hours` that nothing replaced."""
    gpu_nodes = f'max by ({_BY_NODE}) (kube_node_labels{{label_{GPU_POOL_LABEL_KEY}="{GPU_POOL_LABEL_VALUE}"}})'
    return (
        "GpuNodeCordoned",
        f'max by ({_BY_NODE}) (kube_node_spec_taint{{key="node.kubernetes.io/unschedulable"}}) == 1'
        f" and on ({_BY_NODE}) {gpu_nodes}",
        f"PT{hours}H",
        3,
        f"GPU node {{{{ $labels.node }}}} has been cordoned for {hours} h: nothing replaced it (a fixed-size pool, "
        "quota, or a drain that cannot finish); replace it or uncordon it",
    )


# ---------------------------------------------------------------- remediation


def condition_policies(conditions: Sequence[str]) -> list[dict[str, Any]]:
    """kubernetes-object-monitor policies: a Node with one of the conditions True is a fatal GPU health event."""
    return [
        {
            "name": f"aks-npd-{condition.lower()}",
            "enabled": True,
            "resource": {"group": "", "version": "v1", "kind": "Node"},
            "predicate": {
                "expression": f'resource.status.conditions.filter(c, c.type == "{condition}" && c.status == "True")'
                ".size() > 0"
            },
            "healthEvent": {
                "componentClass": "GPU",
                "isFatal": True,
                "message": f"AKS Node Problem Detector reports {condition}",
                "recommendedAction": "REPLACE_VM",
                "errorCode": [condition],
            },
        }
        for condition in conditions
    ]


def nvsentinel_values(
    settings: RemediationConfig,
    pools: Sequence[GpuPoolConfig],
    mode: GpuStackMode,
    operator_dcgm: bool,
    platform_namespaces: Sequence[str] = (),
) -> dict[str, Any]:
    """Values of the NVSentinel chart (keys as the v1.19.0 templates read them; docs/charts.md lists where).

    `platform_namespaces`: the platform's own namespaces (GPU stack, monitoring, validation, queues, CSI), whose
    pods the drain leaves alone like NVSentinel's and kube-system's."""
    system_namespaces = tuple(dict.fromkeys((*OWN_SYSTEM_NAMESPACES, *platform_namespaces)))
    cpu = cpu_node_selector()
    return {
        "global": _nvsentinel_global(settings, pools, mode, operator_dcgm),
        # monitoring.coreos.com has no CRD on AKS (managed Prometheus reads azmonitoring.coreos.com).
        "podMonitor": {"enabled": False},
        "labeler": {"assumeDriverInstalled": mode != "gpuOperator"},
        # The chart asks for RuntimeClass `nvidia`, which only the GPU Operator creates: AKS creates no RuntimeClass,
        # and a pod naming a missing one is refused. Without one the pod still gets the driver: on N-series nodes
        # AKS makes nvidia-container-runtime containerd's default (AgentBaker containerd config template,
        # `IsNSeriesSKU`), and the collector's image is a CUDA base image (metadata-collector/Dockerfile at
        # e002c5dc), which sets NVIDIA_VISIBLE_DEVICES.
        **({} if mode == "gpuOperator" else {"metadata-collector": {"runtimeClassName": ""}}),
        "fault-quarantine": {
            # The circuit breaker counts GPU nodes by this label; ours is pool=gpu (no GFD in driver-Install modes).
            "gpuNodeLabel": f"{GPU_POOL_LABEL_KEY}={GPU_POOL_LABEL_VALUE}",
            "circuitBreaker": {"enabled": True, "percentage": settings.circuit_breaker_percent, "duration": "5m"},
        },
        "node-drainer": {
            "systemNamespaces": f"^({'|'.join(system_namespaces)})$",
            "userNamespaces": [{"name": "*", "mode": settings.drain_mode}],
            "deleteAfterTimeoutMinutes": settings.drain_timeout_minutes,
        },
        # Node not-ready is left to AKS auto-repair: only the GPU conditions it does not act on are policies.
        "kubernetes-object-monitor": {"policies": condition_policies(settings.conditions)},
        "mongodb-store": {"mongodb": {"nodeSelector": cpu}, "job": {"nodeSelector": cpu}},
    }


def _nvsentinel_global(
    settings: RemediationConfig, pools: Sequence[GpuPoolConfig], mode: GpuStackMode, operator_dcgm: bool
) -> dict[str, Any]:
    """NVSentinel's `global` values: dry run, where its agents and controllers run, which modules are on."""
    return {
        "dryRun": settings.dry_run,
        # Node agents (platform-connector, syslog monitor, metadata collector, GPU monitor) take these
        # tolerations; their GPU-node selection is the chart's own runtime labels.
        "tolerations": gpu_tolerations(pools),
        # Controllers (labeler, fault-quarantine, node-drainer, kubernetes-object-monitor) on the CPU pool.
        "systemNodeSelector": cpu_node_selector(),
        # A DCGM host engine to watch exists only under the GPU Operator with its DCGM (operator-service mode).
        "gpuHealthMonitor": {"enabled": mode == "gpuOperator" and operator_dcgm},
        "syslogHealthMonitor": {"enabled": True},
        "metadataCollector": {"enabled": True},
        "labeler": {"enabled": True},
        "kubernetesObjectMonitor": {"enabled": True},
        "mongodbStore": {"enabled": True},
        "faultQuarantine": {"enabled": True},
        "nodeDrainer": {"enabled": True},
        "faultRemediation": {"enabled": False},
        "janitor": {"enabled": False},
        "janitorProvider": {"enabled": False},
        "cspHealthMonitor": {"enabled": False},
    }


def cert_manager_values() -> dict[str, Any]:
    """cert-manager v1.21.1: CRDs with the release, every pod on the CPU pool (global.nodeSelector is merged into
    the controller's, webhook's, cainjector's and startupapicheck's own nodeSelector). `imageRegistry` prefixes
    every component's `jetstack/<name>` (templates/_helpers.tpl "cert-manager.image"): through the platform's
    registry."""
    registry = mirrored_parts(f"quay.io/jetstack/cert-manager-controller:{CERT_MANAGER_CHART[2]}")["registry"]
    return {"crds": {"enabled": True}, "global": {"nodeSelector": cpu_node_selector()}, "imageRegistry": registry}


def cert_manager_release(resource_name: str, opts: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
    """The cluster's one cert-manager release (NVSentinel's MongoDB and AMD's KMM webhook issue through it)."""
    repo, chart, version = CERT_MANAGER_CHART
    namespace = platform_namespace(f"{resource_name}-namespace", CERT_MANAGER_NAMESPACE, "baseline", opts)
    return k8s.helm.v3.Release(
        resource_name,
        name="cert-manager",
        chart=chart,
        version=version,
        repository_opts={"repo": repo},
        namespace=CERT_MANAGER_NAMESPACE,
        values=cert_manager_values(),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespace])),
    )


class GpuHealthArgs(TypedDict):
    settings: GpuHealthConfig
    """The `gpuHealth` section."""
    gpu_pools: Sequence[GpuPoolConfig]
    """Every GPU pool: node agents tolerate all their taints."""
    stack_mode: GpuStackMode
    """`gpuStack.mode`: decides the DCGM source and whether drivers are host-installed."""
    operator_dcgm: bool
    """`gpuStack.operatorDcgm`: the GPU Operator runs DCGM (NVSentinel's GPU monitor can watch it)."""
    cluster: ClusterHandle
    """The cluster."""
    action_group_id: pulumi.Input[str]
    """Action group the alerts notify (GpuMonitoring's)."""
    monitor_workspace_id: pulumi.Input[str]
    """Azure Monitor workspace the rules evaluate against."""
    cluster_id: pulumi.Input[str]
    """The cluster's resource ID (the rules' second scope)."""
    alerts_enabled: bool
    """`monitoring.alerts.enabled`: the rules exist but do not fire when false."""
    base_name: str
    """Name the rule group's name derives from (the cluster name)."""
    depends_on: NotRequired[Sequence[pulumi.Resource]]
    """What the node agents need first (the GPU stack's releases)."""
    platform_namespaces: NotRequired[Sequence[str]]
    """The platform's own namespaces: the drain leaves their pods alone (node agents, controllers, validation)."""


class GpuHealth(pulumi.ComponentResource):
    """GPU health alert group and, when enabled, NVSentinel remediation (with cert-manager)."""

    alert_group: alertsmanagement.PrometheusRuleGroup | None
    """The GPU health rule group, or None when `gpuHealth.alerts.enabled` is false."""
    releases: list[k8s.helm.v3.Release]
    """cert-manager and NVSentinel, when remediation is enabled."""

    def __init__(self, name: str, args: GpuHealthArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuHealth", name, None, opts)
        settings, handle = args["settings"], args["cluster"]
        self.alert_group = None
        if settings.alerts.enabled:
            self.alert_group = alertsmanagement.PrometheusRuleGroup(
                f"{name}-alerts",
                resource_group_name=handle.resource_group_name,
                location=handle.location,
                rule_group_name=derived_name(None, "GpuHealthAlerts-", args["base_name"], 260),
                cluster_name=handle.cluster_name,
                scopes=[args["monitor_workspace_id"], args["cluster_id"]],
                interval="PT1M",
                enabled=True,
                description="GPU node conditions (Node Problem Detector) and DCGM health counters",
                rules=gpu_health_alert_rules(settings, args["action_group_id"], args["alerts_enabled"]),
                tags=dict(handle.tags),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.releases = []
        if settings.remediation.enabled:
            self.releases = self._remediation(name, args)
        self.register_outputs({})

    def _remediation(self, name: str, args: GpuHealthArgs) -> list[k8s.helm.v3.Release]:
        handle = args["cluster"]
        in_cluster = handle.k8s_options(self)
        cert_manager = cert_manager_release(f"{name}-cert-manager", in_cluster)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # Node agents read the host journal and run on the host network.
            metadata={"name": NAMESPACE, "labels": pod_security_labels("privileged")},
            opts=in_cluster,
        )
        nvsentinel = k8s.helm.v3.Release(
            f"{name}-nvsentinel",
            name="nvsentinel",
            chart=NVSENTINEL_CHART,
            version=NVSENTINEL_VERSION,
            namespace=NAMESPACE,
            create_namespace=False,
            timeout=NVSENTINEL_TIMEOUT_SECONDS,
            values=nvsentinel_values(
                args["settings"].remediation,
                args["gpu_pools"],
                args["stack_mode"],
                args["operator_dcgm"],
                args.get("platform_namespaces", ()),
            ),
            # The chart's Certificates and Issuers need cert-manager's CRDs and webhook first.
            opts=pulumi.ResourceOptions.merge(
                in_cluster,
                pulumi.ResourceOptions(depends_on=[namespace, cert_manager, *args.get("depends_on", [])]),
            ),
        )
        return [cert_manager, nvsentinel]
