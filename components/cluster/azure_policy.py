"""The pod security baseline of the Azure Policy add-on, assigned to the cluster: audit in dev, deny in prod.

The add-on alone enforces nothing: Gatekeeper admits every pod until a policy is assigned. This assigns the
built-in initiative "Kubernetes cluster pod security baseline standards for Linux-based workloads" to the
cluster. Its five policies (Azure/azure-policy built-in-policies/policySetDefinitions/Kubernetes/
PSPBaselineStandard.json, version 1.4.0, commit 8f5ad30e) refuse privileged containers, host network and host
ports, host PID and IPC, capabilities beyond the baseline set, and hostPath volumes, in every namespace except the
excluded ones. The platform's own node agents need exactly that access (device plugin, DCGM exporter, GPU and
Network Operators, Lustre CSI, NVSentinel, the DRA driver, AMD's operator, the GPU checks), so their namespaces are
excluded; team namespaces never are.

NCCL over RDMA needs IPC_LOCK, which the initiative's fixed capability list refuses. The namespaces of teams with
quota on an InfiniBand pool, and the models namespace once a served model spans nodes, are therefore left out of the
initiative and get its five policies assigned one by one, with the same parameters and IPC_LOCK added to the allowed
capabilities: everything else stays refused there too.
Kubernetes' own Pod Security `baseline` refuses IPC_LOCK as well, so those namespaces enforce `privileged` at the
API server (components/shared/workloads.py) and these five policies are what refuses a privileged pod there:
they Deny in
every environment, whatever `security.podSecurity.effect` says.
"""

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.authorization as authorization

from aks_gpu_platform.config.cluster.security import PolicyEffect
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import InferenceConfig
from aks_gpu_platform.config.training.section import TrainingConfig

from ..shared.context import ClusterHandle

_DEFINITIONS = "/providers/Microsoft.Authorization/policyDefinitions/"
BASELINE_INITIATIVE = "/providers/Microsoft.Authorization/policySetDefinitions/a8640138-9b0a-4a28-b8cb-1666c838647d"
BASELINE_INITIATIVE_VERSION = "1.*.*"
# The initiative's default excludedNamespaces: Azure's own.
AZURE_NAMESPACES = ("kube-system", "gatekeeper-system", "azure-arc", "azure-extensions-usage-system")
# ContainerCapabilities' allowedCapabilities in the initiative: what Pod Security `baseline` allows to add.
BASELINE_CAPABILITIES = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
)
# What RDMA with NCCL adds: pinned (locked) memory for the InfiniBand verbs.
RDMA_CAPABILITIES = ("IPC_LOCK",)
RDMA_EFFECT: PolicyEffect = "Deny"


def _members(allowed_capabilities: Sequence[str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """The initiative's policies as it assigns them: (reference ID, definition ID, version, fixed parameters)."""
    return [
        ("NoPrivilegedContainers", _DEFINITIONS + "95edb821-ddaf-4404-9732-666045e056b4", "9.*.*", {}),
        (
            "BlockUsingHostNetwork",
            _DEFINITIONS + "82985f06-dc18-4a48-bc1c-b9f4f0098cfe",
            "6.*.*",
            {"allowHostNetwork": False, "minPort": 0, "maxPort": 0},
        ),
        ("BlockUsingHostProcessIDAndIPC", _DEFINITIONS + "47a1ee2f-2a2a-4576-bf2a-e0e36709c2b8", "5.*.*", {}),
        (
            "ContainerCapabilities",
            _DEFINITIONS + "c26596ff-4d70-4e6a-9a30-c2506bd2f80c",
            "6.*.*",
            {"allowedCapabilities": list(allowed_capabilities), "requiredDropCapabilities": []},
        ),
        (
            "NoHostPathVolume",
            _DEFINITIONS + "098fc59e-46c7-4d99-9b16-64990e543d75",
            "6.*.*",
            {"allowedHostPaths": {"paths": []}},
        ),
    ]


def rdma_team_namespaces(training: TrainingConfig, gpu_pools: Sequence[GpuPoolConfig]) -> list[str]:
    """Namespaces of the teams with quota on an InfiniBand pool: their NCCL jobs lock memory (IPC_LOCK)."""
    if not training.enabled:
        return []
    infiniband = {pool.name for pool in gpu_pools if pool.infiniband}
    return sorted({team.namespace_name for team in training.teams if any(q.pool in infiniband for q in team.quotas)})


def rdma_model_namespaces(inference: InferenceConfig) -> list[str]:
    """The models namespace once a model spans nodes: its servers lock memory for NCCL over RDMA (IPC_LOCK)."""
    return [inference.namespace] if any(m.nodes > 1 for m in inference.models) else []


class PodSecurityPolicyArgs(TypedDict):
    """Arguments of PodSecurityPolicy."""

    cluster: ClusterHandle
    """The cluster the policies are assigned to (its Azure Policy add-on enforces them)."""
    effect: PolicyEffect
    """Deny refuses a non-compliant pod at admission; Audit reports it in Azure Policy compliance."""
    platform_namespaces: Sequence[str]
    """Namespaces of the platform's own components, whose node agents need host access: left out."""
    rdma_namespaces: NotRequired[Sequence[str]]
    """Team namespaces whose jobs need IPC_LOCK: the same policies, with IPC_LOCK allowed, always Deny."""
    extra_excluded_namespaces: NotRequired[Sequence[str]]
    """Namespaces of the user's own node agents (security.podSecurity.excludedNamespaces)."""


def _parameters(effect: str, values: dict[str, Any]) -> dict[str, authorization.ParameterValuesValueArgsDict]:
    return {key: {"value": value} for key, value in {"effect": effect, **values}.items()}


class PodSecurityPolicy(pulumi.ComponentResource):
    """Azure Policy's pod security baseline on the cluster, the platform's node agents left out."""

    excluded_namespaces: list[str]
    """Namespaces the initiative leaves out: Azure's, the platform's, the RDMA teams' (covered one by one)."""

    def __init__(self, name: str, args: PodSecurityPolicyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:PodSecurityPolicy", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        effect, scope = args["effect"], args["cluster"].cluster_id
        rdma = list(args.get("rdma_namespaces", []))
        excluded = [*AZURE_NAMESPACES, *args["platform_namespaces"], *args.get("extra_excluded_namespaces", []), *rdma]
        self.excluded_namespaces = list(dict.fromkeys(excluded))
        message = (
            "Pod security baseline (aks-gpu-platform): no privileged containers, host network or ports, host PID or "
            "IPC, capabilities beyond the baseline, or hostPath volumes in this namespace"
        )
        authorization.PolicyAssignment(
            f"{name}-baseline",
            policy_assignment_name="aks-gpu-pod-security-baseline",
            display_name="Pod security baseline (aks-gpu-platform)",
            description=message,
            scope=scope,
            policy_definition_id=BASELINE_INITIATIVE,
            definition_version=BASELINE_INITIATIVE_VERSION,
            enforcement_mode=authorization.EnforcementMode.DEFAULT,
            parameters=_parameters(effect, {"excludedNamespaces": self.excluded_namespaces}),
            non_compliance_messages=[{"message": message}],
            opts=child,
        )
        rdma_members = _members([*BASELINE_CAPABILITIES, *RDMA_CAPABILITIES]) if rdma else []
        for reference, definition, version, values in rdma_members:
            authorization.PolicyAssignment(
                f"{name}-rdma-{reference}",
                # Assignment names: at most 64 characters at a resource scope.
                policy_assignment_name=f"aks-gpu-rdma-{reference}"[:64],
                display_name=f"Pod security baseline for RDMA teams: {reference} (aks-gpu-platform)",
                description=f"{message}; IPC_LOCK allowed for NCCL over InfiniBand",
                scope=scope,
                policy_definition_id=definition,
                definition_version=version,
                enforcement_mode=authorization.EnforcementMode.DEFAULT,
                # Deny even where the initiative audits: Kubernetes' baseline is off in these namespaces.
                parameters=_parameters(
                    RDMA_EFFECT, {"excludedNamespaces": list(AZURE_NAMESPACES), "namespaces": rdma, **values}
                ),
                non_compliance_messages=[{"message": message}],
                opts=child,
            )
        self.register_outputs({"excluded_namespaces": self.excluded_namespaces})
