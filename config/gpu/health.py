"""GPU health: the alert group on node conditions and DCGM counters, and automated remediation.

Node Problem Detector on AKS GPU nodes reports GPU faults as node conditions but "doesn't take direct
action to remediate" (learn.microsoft.com/azure/aks/gpu-health-monitoring, FAQ, doc date 2026-02-27), and
AKS auto-repair acts only on NotReady nodes (node-auto-repair.md, 2026-07-01). Remediation is therefore
NVIDIA's NVSentinel (components/gpu/health.py explains the choice): it turns those conditions, the kernel
log's XID/SXID errors and, where a DCGM host engine runs, DCGM health watches into cordon and drain.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..errors import field_error

# NPD's GPU node conditions (MicrosoftDocs/azure-aks-docs articles/aks/node-problem-detector.md and
# aks-managed-gpu-nodes.md, snapshot 2026-08-21). gpu-health-monitoring.md spells the XID check
# "GPUXIDErrors" while the NPD table lists the condition type `XIDErrors`: both are matched.
FATAL_GPU_CONDITIONS = (
    "GPUMissing",
    "XIDErrors",
    "GPUXIDErrors",
    "NVLinkStatusInactive",
    "IBLinkFlapping",
    "UnhealthyNvidiaDevicePlugin",
    "UnhealthyNvidiaDCGMServices",
)
"""Conditions that mean the node cannot run GPU work correctly: page, and (with remediation) cordon and drain."""
WARNING_GPU_CONDITIONS = ("GPUClockThrottling",)
"""Conditions that slow GPU work without breaking it: warn, never cordon."""
GPU_CONDITIONS = FATAL_GPU_CONDITIONS + WARNING_GPU_CONDITIONS

DrainMode = Literal["DeleteAfterTimeout", "AllowCompletion", "Immediate"]


class GpuHealthAlertsConfig(ConfigModel):
    """The GPU health alert group: NPD node conditions and DCGM health counters, to the GPU action group."""

    enabled: bool = Field(default=True, description="Create the rule group; its rules follow monitoring.alerts.enabled")
    cordoned_node_hours: int = Field(
        default=2,
        ge=1,
        le=48,
        description="Warn when a GPU node stays cordoned this long (remediation cordoned it and nothing replaced it, "
        "e.g. a fixed-size aksManaged pool); 1 to 48 hours",
    )


class RemediationConfig(ConfigModel):
    """NVSentinel: cordon and drain GPU nodes that report a fatal fault, so the autoscaler replaces them."""

    enabled: bool = Field(default=False, description="Install NVSentinel (and cert-manager, which it needs)")
    dry_run: bool = Field(
        default=True,
        description="Detect and log what would be cordoned and drained, change nothing; set false to act",
    )
    conditions: list[str] = Field(
        default_factory=lambda: list(FATAL_GPU_CONDITIONS),
        min_length=1,
        description=f"NPD node conditions that cordon and drain a node; any of {list(FATAL_GPU_CONDITIONS)}",
    )
    drain_mode: DrainMode = Field(
        default="DeleteAfterTimeout",
        description="How pods leave a faulty node: DeleteAfterTimeout evicts and force-deletes after "
        "drainTimeoutMinutes (time to checkpoint); AllowCompletion waits for pods to finish; Immediate evicts at once",
    )
    drain_timeout_minutes: int = Field(
        default=60,
        ge=5,
        le=1440,
        description="DeleteAfterTimeout only: minutes before remaining pods are force-deleted; 5 to 1440",
    )
    circuit_breaker_percent: int = Field(
        default=50,
        ge=1,
        le=100,
        description="Stop cordoning once this share of GPU nodes was cordoned within 5 minutes (a fleet-wide "
        "signal is more likely a monitoring fault than that many broken GPUs)",
    )

    @model_validator(mode="after")
    def _check_conditions(self) -> RemediationConfig:
        for i, condition in enumerate(self.conditions):
            if condition not in FATAL_GPU_CONDITIONS:
                raise field_error(
                    f"conditions[{i}]",
                    condition,
                    f"must be one of the fatal NPD GPU conditions {list(FATAL_GPU_CONDITIONS)} "
                    "(GPUClockThrottling slows a node without breaking it: it alerts, never drains)",
                )
        if len(set(self.conditions)) != len(self.conditions):
            raise field_error("conditions", self.conditions, "each condition may appear once")
        return self


class GpuHealthConfig(ConfigModel):
    """GPU faults detected (alerts) and acted on (remediation)."""

    alerts: GpuHealthAlertsConfig = Field(
        default_factory=GpuHealthAlertsConfig, description="The alert group on GPU node conditions and DCGM counters"
    )
    remediation: RemediationConfig = Field(
        default_factory=RemediationConfig, description="NVSentinel cordons and drains faulty GPU nodes (off by default)"
    )
