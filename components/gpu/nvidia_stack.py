"""The cluster-wide GPU software stack: exactly one of three modes, plus RDMA where pools use InfiniBand.

- devicePlugin: AKS installs the NVIDIA driver on each GPU node (`gpuProfile.driver: Install`);
  NVIDIA's device plugin chart advertises `nvidia.com/gpu` from namespace `gpu-resources`.
- gpuOperator: pools skip the AKS driver (`None`); NVIDIA's GPU Operator installs driver,
  container toolkit, device plugin and (with `operatorDcgm`) the DCGM exporter. Never both.
- aksManaged: AKS installs driver, device plugin and DCGM exporter on the node itself
  (components/gpu/aks_managed.py); no release here advertises GPUs.
- Sharing: pools with `sharing` get a named device plugin configuration (time-slicing or MPS replicas of
  `nvidia.com/gpu`), which their nodes select through the `nvidia.com/device-plugin.config` label; every other
  node falls back to `default`, which shares nothing.
- InfiniBand: NVIDIA's Network Operator plus a NicClusterPolicy that runs the RDMA shared
  device plugin on the IB pools, so pods can request `RDMA_RESOURCE` (config/gpu/scheduling.py).

Every pod that must run on GPU nodes here (device plugin, operator operands, node-feature-discovery
workers, RDMA plugin) tolerates every taint of every GPU pool: the GPU taint, Spot's and extra taints.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import yaml

from aks_gpu_platform.config.catalog.images import (
    gpu_operator_image_values,
    mirrored_repository,
    mirrored_repository_and_tag,
)
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_LABEL_KEY,
    GPU_POOL_LABEL_VALUE,
    GPU_POOL_NAME_LABEL_KEY,
    GPU_RESOURCE,
    RDMA_DEVICES_PER_NODE,
    RDMA_RESOURCE,
    RDMA_RESOURCE_NAME,
    RDMA_RESOURCE_PREFIX,
    gpu_tolerations,
    vendor_pool_names,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackConfig

from ..monitoring.dcgm_exporter import operator_exporter_config
from ..network.policies import platform_ingress
from ..shared.context import ClusterHandle
from ..shared.workloads import platform_namespace, pod_security_labels
from .dra_driver import dra_driver_release

NAMESPACE = "gpu-resources"
# Pins: newest stable release of each chart as of 2026-12-02 (values keys and templates checked at
# these tags; docs/charts.md lists what was verified where).
# github.com/NVIDIA/k8s-device-plugin tag v0.20.0 (2026-08-19), deployments/helm/nvidia-device-plugin
DEVICE_PLUGIN_CHART = ("https://nvidia.github.io/k8s-device-plugin", "nvidia-device-plugin", "0.20.0")
# The chart's image.repository default; its tag defaults to v<appVersion>.
DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"
# github.com/NVIDIA/gpu-operator tag v26.7.0 (2026-08-20), deployments/gpu-operator
GPU_OPERATOR_CHART = ("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0")
# github.com/Mellanox/network-operator tag v26.4.1 (2026-07-24; 26.7.0 is still a release candidate),
# deployment/network-operator
NETWORK_OPERATOR_CHART = ("https://helm.ngc.nvidia.com/nvidia", "network-operator", "26.4.1")
GPU_OPERATOR_NAMESPACE = "gpu-operator"
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"
# The RDMA shared device plugin image Network Operator 26.4.1 ships (hack/release.yaml at v26.4.1).
RDMA_SHARED_DEVICE_PLUGIN = {
    "image": "k8s-rdma-shared-dev-plugin",
    "repository": "nvcr.io/nvidia/mellanox",
    "version": "network-operator-v26.4.1",
}
NETWORK_OPERATOR_REPOSITORY = "nvcr.io/nvidia/cloud-native"
# The chart's own node-feature-discovery worker (runs on the InfiniBand nodes unless the GPU Operator's NFD serves):
# deployment/network-operator values.yaml tags it `network-operator-v<release>` (README table at 25.7.0).
NETWORK_OPERATOR_NFD_IMAGE = (
    f"nvcr.io/nvidia/mellanox/node-feature-discovery:network-operator-v{NETWORK_OPERATOR_CHART[2]}"
)
# Mellanox/NVIDIA networking PCI vendor ID (the ConnectX virtual functions of Azure's IB sizes).
MELLANOX_VENDOR_ID = "15b3"
SYSTEM_NODE_CRITICAL = "system-node-critical"
# The device plugin configuration a node without the config label runs (chart `config.default`; the operator's
# ClusterPolicy `devicePlugin.config.default`), and the ConfigMap the operator chart creates for them
# (deployments/gpu-operator/templates/plugin_config.yaml at v26.7.0).
DEFAULT_PLUGIN_CONFIG = "default"
# The container toolkit reads the node's containerd config file, not the running daemon's (gpu_operator_values).
TOOLKIT_CONFIG_SOURCE = {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}
OPERATOR_PLUGIN_CONFIGMAP = "device-plugin-config"
# The RuntimeClass the GPU Operator creates (chart default `operator.runtimeClass`, deployments/gpu-operator
# values.yaml at v26.7.0). With CDI, the chart's default, the toolkit leaves containerd's default runtime alone
# (controllers/object_controls.go transformToolkitCtrForCDI) and AKS's pools with driver None default to runc: a pod
# that reads the driver without asking for a GPU (an exporter, a collector) reaches it only through this class.
OPERATOR_RUNTIME_CLASS = "nvidia"


def device_plugin_configs(pools: Sequence[GpuPoolConfig]) -> dict[str, str]:
    """Named device plugin config files (NVIDIA/k8s-device-plugin v0.20.0 api/config/v1): `default` shares
    nothing, and each sharing setting of a pool gets one; empty when no pool shares its GPUs.

    Flags stay in the chart's values (migStrategy), which override a config file's. Time-slicing sets
    `failRequestsGreaterThanOne`, as NVIDIA recommends and as MPS does by default (config.go): a container asking
    for two shared devices could otherwise get two turns of the same GPU and believe it has two.
    """
    shared = {p.sharing.config_name: p.sharing for p in pools if p.sharing is not None}
    if not shared:
        return {}
    configs = {DEFAULT_PLUGIN_CONFIG: yaml.safe_dump({"version": "v1"})}
    for name, sharing in sorted(shared.items()):
        replicated: dict[str, Any] = {"resources": [{"name": GPU_RESOURCE, "replicas": sharing.replicas}]}
        if sharing.mode == "timeSlicing":
            replicated["failRequestsGreaterThanOne"] = True
        configs[name] = yaml.safe_dump({"version": "v1", "sharing": {sharing.mode: replicated}}, sort_keys=False)
    return configs


def device_plugin_sharing_values(configs: Mapping[str, str]) -> dict[str, Any]:
    """Device plugin chart values that install `configs` (templates/configmap.yml, config-manager in
    daemonset-device-plugin.yml and daemonset-mps-control-daemon.yml at v0.20.0)."""
    if not configs:
        return {}
    return {
        "config": {"map": dict(configs), "default": DEFAULT_PLUGIN_CONFIG},
        # With a ConfigMap and no deviceListStrategy, the chart cannot tell whether a config uses volume-mounts
        # and grants the plugin CAP_SYS_ADMIN (_helpers.tpl deviceListStrategyIncludesVolumeMount); envvar is the
        # plugin's default strategy, stated so the plugin keeps its dropped capabilities.
        "deviceListStrategy": "envvar",
    }


class GpuStackArgs(TypedDict):
    settings: GpuStackConfig
    """The `gpuStack` config section."""
    pools: Sequence[GpuPoolConfig]
    """The GPU pools (MIG, InfiniBand and their taints decide what is installed and tolerated)."""
    cluster: ClusterHandle
    """The cluster the stack runs in."""


def gpu_node_affinity(pool_names: Sequence[str] | None = None) -> dict[str, Any]:
    """Required node affinity for GPU nodes (`pool=gpu`), optionally only the named GPU pools."""
    expressions: list[dict[str, Any]] = [
        {"key": GPU_POOL_LABEL_KEY, "operator": "In", "values": [GPU_POOL_LABEL_VALUE]}
    ]
    if pool_names is not None:
        expressions.append({"key": GPU_POOL_NAME_LABEL_KEY, "operator": "In", "values": list(pool_names)})
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
    }


def _release(
    name: str,
    chart: tuple[str, str, str],
    namespace: str,
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
    created: k8s.core.v1.Namespace,
) -> k8s.helm.v3.Release:
    """A release into `namespace`, after `created`, the Namespace the stack made for it with its Pod Security labels."""
    repo, chart_name, version = chart
    return k8s.helm.v3.Release(
        name,
        chart=chart_name,
        version=version,
        repository_opts={"repo": repo},
        namespace=namespace,
        values=values,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[created])),
    )


def _operator_device_plugin(plugin_configs: Mapping[str, str] | None) -> dict[str, Any]:
    """The GPU Operator's device plugin operand, with the sharing configs when a pool shares its GPUs."""
    device_plugin: dict[str, Any] = {"enabled": True}
    if plugin_configs:
        # The chart creates the ConfigMap (templates/plugin_config.yaml) and names it in ClusterPolicy
        # spec.devicePlugin.config, whose config-manager follows each node's nvidia.com/device-plugin.config.
        device_plugin["config"] = {
            "create": True,
            "name": OPERATOR_PLUGIN_CONFIGMAP,
            "default": DEFAULT_PLUGIN_CONFIG,
            "data": dict(plugin_configs),
        }
    return device_plugin


def gpu_operator_values(
    mig_strategy: str,
    operator_dcgm: bool,
    tolerations: list[dict[str, str]],
    plugin_configs: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Values of the GPU Operator chart (keys as deployments/gpu-operator reads them at v26.7.0)."""
    device_plugin = _operator_device_plugin(plugin_configs)
    # Operand images by digest where NVIDIA's bundle records one (config/catalog/images.py).
    images = gpu_operator_image_values()
    values: dict[str, Any] = {
        "driver": {"enabled": True, **images["driver"]},
        # AKS writes a `version = 2` containerd root config on every node image (Azure/AgentBaker 06836ee2
        # pkg/agent/baker.go), also where containerd 2 runs (Ubuntu 24.04, Azure Linux 3). The toolkit's default
        # source, `containerd config dump` (NVIDIA/nvidia-container-toolkit v1.20.0 cmd/nvidia-ctk-installer/container/
        # runtime/runtime.go), reports containerd 2's migrated version 3 or 4 and writes its drop-in at that
        # version; containerd refuses a drop-in newer than its root config and stops, and the node goes NotReady.
        # Reading the file keeps the drop-in at the root's version.
        "toolkit": {"enabled": True, "env": [dict(TOOLKIT_CONFIG_SOURCE)], **images["toolkit"]},
        "devicePlugin": {**device_plugin, **images["devicePlugin"]},
        "gfd": images["gfd"],
        # The chart's ServiceMonitor default turned on in 26.x; it is monitoring.coreos.com, which
        # managed Prometheus ignores (our PodMonitor scrapes the exporter).
        "dcgmExporter": {
            "enabled": operator_dcgm,
            **images["dcgmExporter"],
            "serviceMonitor": {"enabled": False},
            # The image's default counters leave the ECC, NVLink and throttling alerts blind.
            **({"config": operator_exporter_config()} if operator_dcgm else {}),
        },
        "dcgm": {"enabled": operator_dcgm, **images["dcgm"]},
        "operator": images["operator"],
        "validator": images["validator"],
        "mig": {"strategy": mig_strategy},
        # ClusterPolicy spec.daemonsets: every operand DaemonSet (driver, toolkit, plugin, GFD, DCGM, MIG).
        "daemonsets": {"tolerations": tolerations, "priorityClassName": SYSTEM_NODE_CRITICAL},
        # The subchart is not aliased: its values live under its own name.
        "node-feature-discovery": {**images["node-feature-discovery"], "worker": {"tolerations": tolerations}},
    }
    values["migManager"] = images["migManager"]
    if mig_strategy != "none":
        # Switching MIG mode on an A100 needs a VM reboot on Azure; the MIG manager may then reboot.
        values["migManager"] = {**images["migManager"], "env": [{"name": "WITH_REBOOT", "value": "true"}]}
    return values


def network_operator_values(own_nfd: bool, tolerations: list[dict[str, str]]) -> dict[str, Any]:
    """Values of the Network Operator chart (keys as deployment/network-operator reads them at 26.4.1).

    `operator.tolerations` is left alone: the chart puts it on the operator's own Deployment only, so
    the GPU taint there would let the controller sit on (and keep awake) a GPU node. The RDMA plugin
    DaemonSet takes its tolerations from the NicClusterPolicy.
    """
    # The operator and its CRD hooks run `operator.repository`/network-operator (values.yaml); through the registry.
    values: dict[str, Any] = {
        "nfd": {"enabled": own_nfd},
        "operator": {"repository": mirrored_repository(NETWORK_OPERATOR_REPOSITORY)},
    }
    if own_nfd:
        # The RDMA plugin DaemonSet selects feature.node.kubernetes.io/pci-15b3.present=true, a label
        # only an NFD worker on the node writes; the chart's worker does not tolerate the GPU taint.
        values["node-feature-discovery"] = {
            "image": {"repository": mirrored_repository(NETWORK_OPERATOR_NFD_IMAGE.rsplit(":", 1)[0])},
            "worker": {"tolerations": tolerations},
        }
    return values


class GpuStack(pulumi.ComponentResource):
    """Installs the configured GPU software stack and, when needed, RDMA for InfiniBand pools."""

    mode: str
    """`devicePlugin` or `gpuOperator`."""
    namespace: pulumi.Output[str]
    """Namespace `gpu-resources` (device plugin, smoke test)."""
    releases: list[k8s.helm.v3.Release]
    """Every Helm release installed here: depend on these for objects that need GPUs or RDMA."""
    gpu_release: k8s.helm.v3.Release | None
    """The release that makes `nvidia.com/gpu` schedulable (device plugin or GPU Operator); None in aksManaged
    mode, where AKS's own device plugin does."""
    dcgm_from_operator: bool
    """True when the GPU Operator runs the DCGM exporter (monitoring must not install another)."""
    mig_strategy: str
    """`single` when any pool uses MIG, else `none`."""
    rdma_resource: str | None
    """Extended resource InfiniBand pods request, or None when no pool uses InfiniBand."""
    dra_release: k8s.helm.v3.Release | None
    """NVIDIA's DRA driver (ComputeDomains) when a pool has multi-node NVLink: ComputeDomain objects wait for it."""

    @property
    def driver_runtime(self) -> tuple[k8s.helm.v3.Release, str] | None:
        """In gpuOperator mode, the operator's release and the RuntimeClass that gives a pod the driver (the
        operator's CDI setup leaves containerd's default, runc, without it): what an agent reading the driver,
        such as a DCGM exporter of our own, waits for and runs with. None in the other modes."""
        if self.mode != "gpuOperator" or self.gpu_release is None:
            return None
        return self.gpu_release, OPERATOR_RUNTIME_CLASS

    def __init__(self, name: str, args: GpuStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuStack", name, None, opts)
        cfg, pools = args["settings"], list(args["pools"])
        self._k8s_opts = args["cluster"].k8s_options(self)
        self.mode = cfg.mode
        self.mig_strategy = "single" if any(p.mig_profile for p in pools) else "none"
        self.dcgm_from_operator = cfg.operator_dcgm
        # Replaces each chart's default tolerations, so it must cover every taint of every GPU pool.
        self._tolerations = gpu_tolerations(pools)

        namespace = self._plugin_namespace(name)
        self.namespace = namespace.metadata.apply(lambda m: m.name or NAMESPACE)
        platform_ingress(name, self.namespace, self._k8s_opts)
        self.gpu_release = self._gpu_release(name, cfg, pools, namespace)
        self.releases = [self.gpu_release] if self.gpu_release is not None else []
        # Multi-node NVLink pools: ComputeDomains through NVIDIA's DRA driver (components/gpu/dra_driver.py), after the
        # release whose driver root it reads.
        self.dra_release = dra_driver_release(
            f"{name}-dra-driver",
            cfg.mode,
            pools,
            pulumi.ResourceOptions.merge(self._k8s_opts, pulumi.ResourceOptions(depends_on=list(self.releases))),
        )
        if self.dra_release is not None:
            self.releases.append(self.dra_release)
        ib_pools = [p.name for p in pools if p.infiniband]
        self.rdma_resource = RDMA_RESOURCE if ib_pools else None
        if ib_pools:
            network_operator = self._network_operator(name, cfg.mode)
            self.releases.append(network_operator)
            self._nic_cluster_policy(name, ib_pools, network_operator)

        self.register_outputs(
            {"namespace": self.namespace, "mode": self.mode, "dcgm_from_operator": self.dcgm_from_operator}
        )

    def _plugin_namespace(self, name: str) -> k8s.core.v1.Namespace:
        """`gpu-resources`, privileged: the device plugin mounts the kubelet's device-plugin directory from the node."""
        return k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": NAMESPACE,
                "labels": {"app.kubernetes.io/part-of": "gpu-stack", **pod_security_labels("privileged")},
            },
            opts=self._k8s_opts,
        )

    def _gpu_release(
        self, name: str, cfg: GpuStackConfig, pools: Sequence[GpuPoolConfig], namespace: k8s.core.v1.Namespace
    ) -> k8s.helm.v3.Release | None:
        """The release that advertises `nvidia.com/gpu` in the configured mode; None where AKS does, or where no pool
        is NVIDIA's."""
        # The NVIDIA stack serves the NVIDIA pools only (AMD pools get AMD's operator, components/gpu/amd_stack.py).
        nvidia_pools = vendor_pool_names(pools, "nvidia")
        if nvidia_pools == [] or cfg.mode == "aksManaged":
            return None  # aksManaged: AKS runs the device plugin on every managed node
        if cfg.mode == "devicePlugin":
            return _release(
                f"{name}-device-plugin",
                DEVICE_PLUGIN_CHART,
                NAMESPACE,
                self._device_plugin_values(nvidia_pools, pools),
                self._k8s_opts,
                namespace,
            )
        return _release(
            f"{name}-gpu-operator",
            GPU_OPERATOR_CHART,
            GPU_OPERATOR_NAMESPACE,
            gpu_operator_values(self.mig_strategy, cfg.operator_dcgm, self._tolerations, device_plugin_configs(pools)),
            self._k8s_opts,
            # Driver, toolkit and plugin operands run privileged on the host.
            platform_namespace(f"{name}-gpu-operator-namespace", GPU_OPERATOR_NAMESPACE, "privileged", self._k8s_opts),
        )

    def _device_plugin_values(
        self, nvidia_pools: Sequence[str] | None, pools: Sequence[GpuPoolConfig]
    ) -> dict[str, Any]:
        """Values of NVIDIA's device plugin chart, on the NVIDIA pools' nodes."""
        return {
            # Replaces the chart's default NFD-label affinity: our GPU nodes carry pool=gpu.
            "affinity": {"nodeAffinity": gpu_node_affinity(nvidia_pools)},
            "tolerations": self._tolerations,
            "priorityClassName": SYSTEM_NODE_CRITICAL,
            "migStrategy": self.mig_strategy,
            # The chart joins image.repository and image.tag: `tag@digest` pulls the digest.
            "image": mirrored_repository_and_tag(f"{DEVICE_PLUGIN_IMAGE}:v{DEVICE_PLUGIN_CHART[2]}"),
            **device_plugin_sharing_values(device_plugin_configs(pools)),
        }

    def _network_operator(self, name: str, mode: str) -> k8s.helm.v3.Release:
        """NVIDIA's Network Operator, which runs the RDMA shared device plugin the NicClusterPolicy describes."""
        # With the GPU Operator, its node-feature-discovery installs the NodeFeatureRule CRD that
        # this chart's nvidia-nics-rules object needs: install the GPU Operator first.
        nfd_from_gpu_operator = mode == "gpuOperator"
        return _release(
            f"{name}-network-operator",
            NETWORK_OPERATOR_CHART,
            NETWORK_OPERATOR_NAMESPACE,
            network_operator_values(not nfd_from_gpu_operator, self._tolerations),
            pulumi.ResourceOptions.merge(
                self._k8s_opts,
                pulumi.ResourceOptions(depends_on=self.releases if nfd_from_gpu_operator else []),
            ),
            # The RDMA shared device plugin and the NFD worker mount host paths.
            platform_namespace(
                f"{name}-network-operator-namespace", NETWORK_OPERATOR_NAMESPACE, "privileged", self._k8s_opts
            ),
        )

    def _nic_cluster_policy(self, name: str, ib_pools: Sequence[str], network_operator: k8s.helm.v3.Release) -> None:
        """The RDMA shared device plugin on the InfiniBand pools' nodes: `RDMA_RESOURCE` for their pods."""
        k8s.apiextensions.CustomResource(
            f"{name}-nic-cluster-policy",
            api_version="mellanox.com/v1alpha1",
            kind="NicClusterPolicy",
            metadata={"name": "nic-cluster-policy"},
            spec={
                "nodeAffinity": gpu_node_affinity(ib_pools),
                "tolerations": self._tolerations,
                "rdmaSharedDevicePlugin": {
                    **RDMA_SHARED_DEVICE_PLUGIN,
                    "repository": mirrored_repository(RDMA_SHARED_DEVICE_PLUGIN["repository"]),
                    "config": json.dumps(_rdma_device_plugin_config()),
                },
            },
            # The NicClusterPolicy CRD is in the Network Operator chart's crds/: Helm installs it
            # before the release's templates, so the finished release is enough to wait for.
            opts=pulumi.ResourceOptions.merge(self._k8s_opts, pulumi.ResourceOptions(depends_on=[network_operator])),
        )


def _rdma_device_plugin_config() -> dict[str, Any]:
    """The RDMA shared device plugin's resource list: one resource over the nodes' InfiniBand virtual functions."""
    return {
        "configList": [
            {
                "resourcePrefix": RDMA_RESOURCE_PREFIX,
                "resourceName": RDMA_RESOURCE_NAME,
                "rdmaHcaMax": RDMA_DEVICES_PER_NODE,
                "selectors": {"vendors": [MELLANOX_VENDOR_ID], "linkTypes": ["infiniband"]},
            }
        ]
    }
