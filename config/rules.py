"""Rules across sections: team namespaces under the pod security policy, what NVIDIA-only features need on AMD
pools, what aksManaged pools cannot do yet, which pools can run which validation, and the Lustre startup taint no AKS
pool can carry.

PlatformConfig (config/platform.py) runs them before any resource is registered, handing each the sections it
reads; each raises a field error that names the setting to change. Only the platform model imports this module,
and it imports sections only, so no section depends back on the whole model.
"""

from __future__ import annotations

from collections.abc import Sequence

from .catalog.lustre_skus import LUSTRE_STARTUP_TAINT_KEY
from .cluster.section import AutoscalerProfileConfig
from .cluster.security import SecurityConfig
from .errors import field_error
from .gpu.health import GpuHealthConfig
from .gpu.section import GpuPoolConfig, GpuStackConfig
from .gpu.validation import nccl_baseline
from .inference.models import InferenceConfig
from .inference.runtime import (
    ENDPOINT_REMOVAL_SECONDS,
    REQUEST_TIMEOUT_SECONDS,
    TEARDOWN_SECONDS,
    TERMINATION_GRACE_SECONDS,
)
from .inference.section import AutoscalingConfig
from .storage.section import BlobClassesConfig
from .training.section import TrainingConfig


def check_amd_pools(
    gpu_stack: GpuStackConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    gpu_health: GpuHealthConfig,
    autoscaling: AutoscalingConfig,
) -> None:
    """Cluster-wide features that only NVIDIA GPUs have, refused while any GPU pool is AMD, naming the setting."""
    amd = [(i, p) for i, p in enumerate(gpu_pools) if p.vendor == "amd"]
    if not amd:
        return
    i, pool = amd[0]
    why = f"gpuPools[{i}] ({pool.name}) is an AMD {pool.sku.gpu_model} pool"
    if gpu_stack.mode == "aksManaged":
        raise field_error(
            "gpuStack.mode",
            "aksManaged",
            f"{why}: AKS-managed GPU installs NVIDIA's driver, device plugin and DCGM exporter and AKS installs "
            "nothing on AMD sizes (gpuProfile.driver None); use devicePlugin or gpuOperator (they serve the NVIDIA "
            "pools; AMD's GPU Operator serves the AMD ones)",
        )
    if gpu_health.remediation.enabled:
        raise field_error(
            "gpuHealth.remediation.enabled",
            True,
            f"{why}: NVSentinel remediation reads NVIDIA's DCGM and XID events only; set it false",
        )
    if not any(p.vendor == "nvidia" for p in gpu_pools):
        if gpu_stack.smoke_test:
            raise field_error(
                "gpuStack.smokeTest",
                True,
                f"{why} and no pool has NVIDIA GPUs: the smoke test runs nvidia-smi on one nvidia.com/gpu; set it "
                "false",
            )
        if autoscaling.sample_inference.enabled:
            raise field_error(
                "autoscaling.sampleInference.enabled",
                True,
                f"{why} and no pool has NVIDIA GPUs: the sample serves Triton on nvidia.com/gpu; set it false",
            )


# The check-capacity class only books nodes that exist; best-effort-atomic-scale-up waits for the autoscaler.
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"


def check_aks_managed(
    gpu_stack: GpuStackConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    autoscaling: AutoscalingConfig,
    training: TrainingConfig,
) -> None:
    """aksManaged: what the AKS-managed GPU preview does not support, refused with the setting to change.

    "Cluster autoscaler isn't supported on managed GPU node pools during preview. Scale these pools manually."
    (MicrosoftDocs/azure-aks-docs articles/aks/aks-managed-gpu-nodes.md, Limitations, doc date 2026-07-02.)
    AKS's exporter runs without Kubernetes pod mapping (AgentBaker cse_config.sh: `dcgm-exporter -f
    /etc/dcgm-exporter/default-counters.csv --address ":19400"`, no `-k`), so no series names the pod holding a
    GPU: KEDA's per-workload utilisation query can never match.
    """
    if gpu_stack.mode != "aksManaged":
        return
    for i, pool in enumerate(gpu_pools):
        if pool.min_count != pool.max_count:
            raise field_error(
                f"gpuPools[{i}].maxCount",
                pool.max_count,
                f"gpuStack.mode aksManaged pools are fixed-size while AKS-managed GPU is in preview (no cluster "
                f"autoscaler): set minCount equal to maxCount (minCount is {pool.min_count}), or use mode "
                "devicePlugin for an autoscaled pool",
            )
        if pool.sharing is not None:
            # The AgentPool API's gpuProfile.nvidia has managementMode and MIG settings only (2026-08-01 and
            # 2026-08-02-preview NvidiaGPUProfile): AKS configures its managed device plugin itself.
            raise field_error(
                f"gpuPools[{i}].sharing",
                pool.sharing.mode,
                "gpuStack.mode aksManaged: AKS runs and configures the device plugin and offers no GPU sharing "
                "setting; use mode devicePlugin or gpuOperator for time-slicing or MPS",
            )
    no_pod_labels = (
        "gpuStack.mode aksManaged: AKS's DCGM exporter has no pod mapping, so no series names the pods KEDA would "
        "scale on; use mode devicePlugin or gpuOperator for GPU-utilisation autoscaling"
    )
    if autoscaling.targets:
        raise field_error("autoscaling.targets", [t.deployment for t in autoscaling.targets], no_pod_labels)
    if autoscaling.sample_inference.enabled:
        raise field_error("autoscaling.sampleInference.enabled", True, no_pod_labels)
    admission = training.admission
    if training.enabled and admission.provisioning_request and admission.provisioning_class != CHECK_CAPACITY:
        raise field_error(
            "training.admission.provisioningClass",
            admission.provisioning_class,
            "gpuStack.mode aksManaged pools do not autoscale, so a scale-up ProvisioningRequest never completes: "
            f"use {CHECK_CAPACITY} (books existing nodes) or provisioningRequest false",
        )


def check_pool_validation(gpu_pools: Sequence[GpuPoolConfig]) -> None:
    """Validation checks only where they can run: DCGM diagnostics on whole GPUs, NCCL across two IB nodes."""
    for i, pool in enumerate(gpu_pools):
        checks = pool.validation
        path = f"gpuPools[{i}].validation"
        if checks.dcgm_diag and pool.mig_profile is not None:
            raise field_error(
                f"{path}.dcgmDiag",
                True,
                f"DCGM diagnostics need whole GPUs; pool {pool.name} is cut into {pool.mig_profile} MIG slices",
            )
        if not checks.nccl_all_reduce:
            continue
        if not pool.infiniband:
            raise field_error(
                f"{path}.ncclAllReduce", True, f"needs an InfiniBand pool; set gpuPools[{i}].infiniband (IB sizes)"
            )
        if pool.mig_profile is not None:
            raise field_error(f"{path}.ncclAllReduce", True, "needs whole GPUs; the pool uses MIG slices")
        if pool.max_count < 2:
            raise field_error(
                f"{path}.ncclAllReduce", True, f"runs across two nodes; pool {pool.name} has maxCount {pool.max_count}"
            )
        if checks.min_bus_bandwidth_gbps is None and nccl_baseline(pool.vm_size) is None:
            raise field_error(
                f"{path}.minBusBandwidthGBps",
                None,
                f"no published two-node baseline for {pool.vm_size}: set the floor in GB/s",
            )


def check_lustre_startup_taint(gpu_pools: Sequence[GpuPoolConfig]) -> None:
    """Refuse the Lustre CSI startup taint as a pool taint: Kubernetes can never remove it there.

    "Node taints ... can only be added, updated, or removed completely using the AKS API" (MicrosoftDocs/
    azure-aks-docs articles/aks/use-node-taints.md, snapshot 2026-08-21): the driver's removal of
    `azurelustre.csi.azure.com/agent-not-ready` would never stick, and every pod without a toleration would
    stay Pending on that pool.
    """
    for i, pool in enumerate(gpu_pools):
        for j, taint in enumerate(pool.taints):
            if taint.split("=", 1)[0].split(":", 1)[0] == LUSTRE_STARTUP_TAINT_KEY:
                raise field_error(
                    f"gpuPools[{i}].taints[{j}]",
                    taint,
                    f"{LUSTRE_STARTUP_TAINT_KEY} must be a node initialization taint the CSI driver lifts, not a pool "
                    "taint (AKS keeps pool taints; Kubernetes cannot remove them, so pods would never schedule). "
                    "The platform's Lustre node plugin tolerates it; see docs/gpu-operations.md",
                )


def check_pod_security_exclusions(security: SecurityConfig, training: TrainingConfig) -> None:
    """A team namespace left out of the pod security policy would admit privileged pods next to other teams."""
    if not security.pod_security.enabled or not training.enabled:
        return
    teams = {team.namespace_name for team in training.teams}
    for i, namespace in enumerate(security.pod_security.excluded_namespaces):
        if namespace in teams:
            raise field_error(
                f"security.podSecurity.excludedNamespaces[{i}]",
                namespace,
                "a team namespace stays under the pod security policy (teams needing IPC_LOCK for RDMA get it "
                "from their InfiniBand quota); exclude only namespaces of your own node agents",
            )


def check_rdma_pod_security(
    security: SecurityConfig,
    training: TrainingConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    inference: InferenceConfig,
) -> None:
    """A team with InfiniBand quota, and a served model across nodes, run NCCL pods that add IPC_LOCK, which
    Kubernetes' Pod Security `baseline` refuses; their namespace is enforced by the Azure Policy baseline with
    IPC_LOCK allowed instead, so that policy must be assigned (components/cluster/azure_policy.py,
    components/shared/workloads.py, components/inference/serving.py)."""
    if security.pod_security.enabled:
        return
    if training.enabled:
        infiniband = {pool.name for pool in gpu_pools if pool.infiniband}
        teams = [team.name for team in training.teams if any(q.pool in infiniband for q in team.quotas)]
        if teams:
            raise field_error(
                "security.podSecurity.enabled",
                False,
                f"teams {teams} have quota on InfiniBand pools: their NCCL pods add IPC_LOCK, which Kubernetes' "
                "baseline refuses, so their namespaces' pod security comes from the Azure Policy baseline with "
                "IPC_LOCK allowed; keep it enabled (with azurePolicy)",
            )
    spanning = [m.name for m in inference.models if m.nodes > 1]
    if spanning:
        raise field_error(
            "security.podSecurity.enabled",
            False,
            f"inference.models {spanning} span nodes: their servers add IPC_LOCK for NCCL over InfiniBand, which "
            "Kubernetes' baseline refuses, so the models namespace's pod security comes from the Azure Policy "
            "baseline with IPC_LOCK allowed; keep it enabled (with azurePolicy)",
        )


def weights_cache_class(blob_classes: BlobClassesConfig) -> str | None:
    """The ReadWriteMany class a served model's weights cache claims: the premium Blob class the stack creates
    (a start reads many shards), else its standard one; None when `storage.blobClasses` creates neither."""
    for blob_class in (blob_classes.premium, blob_classes.standard):
        if blob_class.enabled:
            return blob_class.name
    return None


def check_weights_cache_class(inference: InferenceConfig, blob_classes: BlobClassesConfig) -> None:
    """A claim naming a class nobody creates never binds: the model's pods stay Pending and `pulumi up` waits out
    its timeout. Served models with Hub weights need one Blob class the stack creates (streamed ones cache none)."""
    cached = [m.name for m in inference.models if m.weights.hugging_face]
    if cached and weights_cache_class(blob_classes) is None:
        raise field_error(
            "storage.blobClasses.premium.enabled",
            False,
            f"inference.models {cached} cache their weights on a ReadWriteMany Blob "
            "claim, and both storage.blobClasses.premium and .standard are disabled: enable one of them",
        )


def check_model_drain(autoscaler: AutoscalerProfileConfig, inference: InferenceConfig) -> None:
    """A node the cluster autoscaler removes gives its pods at most maxGracefulTerminationSeconds: a model server
    there must still drain every request the route allows (config/inference/runtime.py), or scale-down cuts them."""
    if inference.models and autoscaler.max_graceful_termination_seconds < TERMINATION_GRACE_SECONDS:
        raise field_error(
            "cluster.autoscalerProfile.maxGracefulTerminationSeconds",
            autoscaler.max_graceful_termination_seconds,
            f"served models drain for up to {TERMINATION_GRACE_SECONDS} s (a {ENDPOINT_REMOVAL_SECONDS} s pause, the "
            f"route's {REQUEST_TIMEOUT_SECONDS} s request timeout, {TEARDOWN_SECONDS} s teardown): a scale-down "
            f"would cut their streams; set at least {TERMINATION_GRACE_SECONDS}",
        )
