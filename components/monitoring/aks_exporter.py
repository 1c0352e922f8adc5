"""How monitoring reaches the DCGM exporter AKS runs on its managed GPU nodes (`gpuStack.mode: aksManaged`).

Metrics. AKS runs the exporter as a systemd service on the node, `dcgm-exporter -f
/etc/dcgm-exporter/default-counters.csv --address ":19400"`, without `-k` (no pod mapping), and labels the node
`kubernetes.azure.com/dcgm-exporter=enabled` (Azure/AgentBaker parts/linux/cloud-init/artifacts/cse_config.sh,
`configureManagedGPUExperience`, snapshot 2026-08-21). A PodMonitor scrapes pod IPs, so every such node gets a
scrape anchor: a hostNetwork pod (pod IP = node IP) that runs `pause` and declares the exporter's port 19400.
The PodMonitor that scrapes our own exporter then scrapes AKS's through it, with the same target labels, job
relabelling and label contract (`metrics_labels`). Managed Prometheus's own `dcgmexporter` target, on by default
since Azure/prometheus-collector commit ce58307 (2026-02-20), scrapes the same port but keeps only `cluster`,
`instance`, `gpu` and `job` (`default-prom-configs/dcgmExporterDefault.yml`, labelkeep): its series would double
every GPU under the same job name without a node, so `ama-metrics-settings-configmap` switches that target off.
"""

from collections.abc import Sequence
from typing import cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import gpu_tolerations
from aks_gpu_platform.config.gpu.section import GpuPoolConfig

# AgentBaker: the node label AKS adds to every node whose managed exporter runs, and the exporter's port.
MANAGED_EXPORTER_NODE_LABEL = ("kubernetes.azure.com/dcgm-exporter", "enabled")
MANAGED_EXPORTER_PORT = 19400
# The pause image every AKS node already holds (AgentBaker parts/common/components.json, latestVersion 3.10.2).
PAUSE_IMAGE = "mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.2"
ANCHOR_NAME = "aks-dcgm-exporter-anchor"
ANCHOR_LABELS = {"app.kubernetes.io/name": ANCHOR_NAME, "app.kubernetes.io/part-of": "gpu-monitoring"}
# The settings ConfigMap the managed Prometheus agent reads (schema v1 keys; a key left out keeps its default:
# Azure/prometheus-collector otelcollector/shared/configmap/mp/tomlparser-default-scrape-settings.go).
AMA_SETTINGS_CONFIGMAP = "ama-metrics-settings-configmap"
AMA_NAMESPACE = "kube-system"


def managed_exporter_anchor(
    name: str,
    namespace: pulumi.Input[str],
    port_name: str,
    gpu_pools: Sequence[GpuPoolConfig],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """What the PodMonitor needs to scrape AKS's exporter: an anchor pod per managed node, and the agent's
    built-in DCGM target switched off. Returns the objects the PodMonitor should wait for."""
    pod: k8s.core.v1.PodSpecArgsDict = {
        # Pod IP = node IP: the PodMonitor's target is then <node IP>:19400, AKS's exporter.
        "host_network": True,
        "node_selector": dict([MANAGED_EXPORTER_NODE_LABEL]),
        "tolerations": cast(list[k8s.core.v1.TolerationArgsDict], gpu_tolerations(gpu_pools)),
        "priority_class_name": "system-node-critical",
        "automount_service_account_token": False,
        "enable_service_links": False,
        "security_context": {
            "run_as_non_root": True,
            "run_as_user": 65535,
            "run_as_group": 65535,
            "seccomp_profile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "anchor",
                "image": mirrored(PAUSE_IMAGE),
                # Declared, never bound: the exporter service on the node owns the port.
                "ports": [{"name": port_name, "container_port": MANAGED_EXPORTER_PORT, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}},
                "security_context": {
                    "allow_privilege_escalation": False,
                    "read_only_root_filesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
    }
    anchor = k8s.apps.v1.DaemonSet(
        f"{name}-aks-exporter-anchor",
        metadata={"name": ANCHOR_NAME, "namespace": namespace, "labels": ANCHOR_LABELS},
        spec={
            "selector": {"match_labels": ANCHOR_LABELS},
            "template": {"metadata": {"labels": ANCHOR_LABELS}, "spec": pod},
        },
        opts=opts,
    )
    settings = k8s.core.v1.ConfigMap(
        f"{name}-ama-metrics-settings",
        metadata={"name": AMA_SETTINGS_CONFIGMAP, "namespace": AMA_NAMESPACE},
        data={
            "schema-version": "v1",
            "config-version": "aksgpu1",
            # Only this key: the agent keeps its defaults for every target not named here.
            "default-scrape-settings-enabled": "dcgmexporter = false",
        },
        opts=opts,
    )
    return [anchor, settings]
