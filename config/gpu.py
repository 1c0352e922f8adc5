"""GPU section: the GPU node pools and the cluster-wide GPU software stack."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import ConfigModel
from .node_pools import AutoscaledPoolConfig

GpuStackMode = Literal["devicePlugin", "gpuOperator"]


class GpuPoolConfig(AutoscaledPoolConfig):
    """One GPU node pool; minCount 0 lets the autoscaler scale it from zero."""

    min_count: int = Field(default=0, ge=0, le=1000)


class GpuStackConfig(ConfigModel):
    mode: GpuStackMode = Field(
        default="devicePlugin",
        description="devicePlugin: AKS installs the driver, NVIDIA device plugin exposes GPUs; "
        "gpuOperator: pools skip the AKS driver and NVIDIA's GPU Operator manages the stack",
    )
