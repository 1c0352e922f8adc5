"""Autoscaling section: KEDA add-on, GPU-utilisation scaling targets and the sample inference workload."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints, field_validator, model_validator

from ..base import ConfigModel
from ..errors import field_error

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
KubernetesName = Annotated[
    str,
    StringConstraints(pattern=DNS_LABEL),
    Field(description="Kubernetes name: lowercase letters, digits and '-', 1-63 long"),
]
# A tag other than latest, or a digest: a moving tag would change the workload without a config change.
PINNED_IMAGE = r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9_.-]{1,128}|@sha256:[0-9a-f]{64})$"


class ScalingPolicyConfig(ConfigModel):
    """How one Deployment scales on the average GPU utilisation of its pods."""

    min_replicas: int = Field(
        default=1,
        ge=0,
        le=1000,
        description="0 parks the workload, but an idle workload reports no GPU use: wake it with another trigger",
    )
    max_replicas: int = Field(ge=1, le=1000, description="Upper bound; each replica holds its GPUs")
    target_utilization_percent: int = Field(
        default=70, ge=1, le=100, description="Average DCGM_FI_DEV_GPU_UTIL per pod that KEDA holds replicas at"
    )
    activation_utilization_percent: int = Field(
        default=5, ge=0, le=99, description="Above this KEDA wakes the workload from zero replicas"
    )
    polling_interval_seconds: int = Field(
        default=30, ge=10, le=600, description="How often KEDA queries Prometheus; below the scrape interval is waste"
    )
    cooldown_period_seconds: int = Field(
        default=300, ge=30, le=7200, description="Quiet time before scaling back to zero replicas"
    )

    @model_validator(mode="after")
    def _check_bounds(self) -> ScalingPolicyConfig:
        if self.min_replicas > self.max_replicas:
            raise field_error("minReplicas", self.min_replicas, f"must not exceed maxReplicas ({self.max_replicas})")
        if self.activation_utilization_percent >= self.target_utilization_percent:
            raise field_error(
                "activationUtilizationPercent",
                self.activation_utilization_percent,
                f"must be below targetUtilizationPercent ({self.target_utilization_percent})",
            )
        return self


class ScalingTargetConfig(ScalingPolicyConfig):
    """A Deployment that KEDA scales on GPU utilisation."""

    namespace: KubernetesName = Field(description="Namespace of the Deployment (a DNS label, 1-63)")
    deployment: KubernetesName = Field(description="Name of the Deployment KEDA scales")


class SampleInferenceConfig(ConfigModel):
    """A GPU inference server (Triton) that KEDA scales: shows the whole scaling path working."""

    enabled: bool = Field(default=False, description="Off in prod; a real workload attaches GpuAutoscaling itself")
    namespace: KubernetesName = Field(default="gpu-inference-sample", description="Namespace the sample runs in")
    name: KubernetesName = Field(default="triton", description="Name of the sample's Deployment")
    image: str = Field(
        default="nvcr.io/nvidia/tritonserver:25.01-py3",
        pattern=PINNED_IMAGE,
        description="Pinned tag (not latest) or digest",
    )
    gpus_per_pod: int = Field(
        default=1, ge=1, le=8, description="nvidia.com/gpu limit per pod; at most 8, the most GPUs one VM has"
    )
    cpu_request: str = Field(
        default="2", pattern=r"^[0-9]+(m)?$", description="CPU request of the server: cores (2) or millicores (500m)"
    )
    memory_request: str = Field(
        default="8Gi", pattern=r"^[0-9]+(Mi|Gi)$", description="Memory request of the server, in Mi or Gi"
    )
    scaling: ScalingPolicyConfig = Field(
        default_factory=lambda: ScalingPolicyConfig(min_replicas=1, max_replicas=2),
        description="How KEDA scales the sample (default 1-2 replicas)",
    )

    @field_validator("image")
    @classmethod
    def _check_pinned(cls, value: str) -> str:
        if value.endswith(":latest"):
            raise ValueError("must be pinned: a version tag other than latest, or a digest")
        return value


class AutoscalingConfig(ConfigModel):
    """GPU workload autoscaling through KEDA on DCGM metrics."""

    keda_enabled: bool = Field(default=True, description="The AKS KEDA add-on (installs the ScaledObject CRDs)")
    targets: list[ScalingTargetConfig] = Field(
        default_factory=lambda: list[ScalingTargetConfig](), description="Deployments scaled on GPU utilisation"
    )
    sample_inference: SampleInferenceConfig = Field(
        default_factory=SampleInferenceConfig, description="Triton inference sample scaled by KEDA (off by default)"
    )

    @model_validator(mode="after")
    def _check_targets(self) -> AutoscalingConfig:
        uses_keda = bool(self.targets) or self.sample_inference.enabled
        if uses_keda and not self.keda_enabled:
            raise field_error("kedaEnabled", False, "must be true while targets or sampleInference are set")
        seen: dict[tuple[str, str], int] = {}
        workloads = [(t.namespace, t.deployment) for t in self.targets]
        if self.sample_inference.enabled:
            workloads.append((self.sample_inference.namespace, self.sample_inference.name))
        for i, key in enumerate(workloads):
            if key in seen:
                where = f"targets[{i}].deployment" if i < len(self.targets) else "sampleInference.name"
                raise field_error(where, "/".join(key), "each Deployment may have only one scaler")
            seen[key] = i
        return self
