"""The platform's components as a Pulumi plugin, for TypeScript, Go, C# or YAML stacks.

`pulumi package add <repo>.git/provider` runs this file through Pulumi's component provider host:
the host infers a schema (package `aks-gpu-platform`, tokens `aks-gpu-platform:index:<Name>`)
from the type annotations of the components below, the CLI generates an SDK from it, and each
`new GpuNodePool(...)` in the consumer's language constructs the real Python component here.

The repository root goes on `sys.path`, so the plugin runs the `components` and `config` of the
checkout Pulumi cloned (no separate install to keep in step); `requirements.txt` pins the same
runtime dependencies as the program.

Hosted: every public component in `components/` except those in EXCLUDED, whose arguments or
outputs the analyzer (pulumi/provider/experimental/analyzer.py) cannot represent.
tests/test_component_schema.py checks both lists and the inferred schema.

The analyzer reads annotations as runtime objects, so component modules do not use
`from __future__ import annotations` (it would turn them into strings the analyzer rejects).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pulumi import ComponentResource  # noqa: E402
from pulumi.provider.experimental import component_provider_host  # noqa: E402

from components.blob_storage_classes import BlobStorageClasses  # noqa: E402
from components.cpu_node_pool import CpuNodePool  # noqa: E402
from components.gpu_autoscaling import GpuAutoscaling  # noqa: E402
from components.gpu_monitoring import GpuMonitoring, LogWorkspace  # noqa: E402
from components.gpu_node_pool import GpuNodePool  # noqa: E402
from components.gpu_stack import GpuStack  # noqa: E402
from components.lustre_storage import LustreStorage  # noqa: E402
from components.network import Network  # noqa: E402
from components.registry import Registry  # noqa: E402
from components.upgrade_policy import UpgradePolicy  # noqa: E402

# The plugin's version is the Python package's (pyproject.toml), so SDKs and wheels agree.
from config.version import package_version  # noqa: E402

PACKAGE = "aks-gpu-platform"

COMPONENTS: list[type[ComponentResource]] = [
    Network,
    CpuNodePool,
    GpuNodePool,
    GpuStack,
    GpuMonitoring,
    LogWorkspace,
    GpuAutoscaling,
    LustreStorage,
    BlobStorageClasses,
    Registry,
    UpgradePolicy,
]

EXCLUDED: dict[str, str] = {
    "AksCluster": (
        "its profile args reuse azure-native ArgsDicts whose nested types are string forward references; "
        "the analyzer resolves those only by name in the component's module, and only the first one per "
        "module, so analysis fails with TypeNotFoundError. Other languages create the ManagedCluster and "
        "the kubernetes Provider with their own azure-native and kubernetes SDKs and pass them in."
    ),
    "GpuInferenceSample": (
        "its `autoscaling` output is a GpuAutoscaling component; the analyzer references resources only "
        "through a `pulumi_type` and an installed pulumi-plugin.json, which our own components lack. "
        "It is a sample: other languages compose GpuAutoscaling with their own Deployment."
    ),
    "NetAppFiles": (
        "new-style args (the validated NetAppFilesConfig model and a ClusterHandle dataclass) that the analyzer "
        "cannot type (TypeError on the annotations); other languages get it through the provider's adapter layer."
    ),
    "DiskStorageClasses": (
        "new-style args (the validated DiskClassesConfig model and a ClusterHandle dataclass) that the analyzer "
        "cannot type (TypeError on the annotations); other languages get it through the provider's adapter layer."
    ),
    "TrainingQueues": (
        "its args are the validated pydantic models (TrainingConfig, GpuPoolConfig) and a ClusterHandle "
        "dataclass; the analyzer walks the models' annotations, which config/ keeps as postponed strings, and "
        "fails (issubclass on the string 'KueueConfig'). Other languages install Kueue and JobSet with the "
        "kubernetes SDK's Helm Release and create the queue objects as custom resources."
    ),
    "ManagedGpuNodePool": (
        "new-style args (the validated GpuPoolConfig model and a ClusterHandle dataclass) that the analyzer cannot "
        "type; other languages create aksManaged pools through the provider's adapter layer."
    ),
    "GpuHealth": (
        "new-style args (the validated GpuHealthConfig and GpuPoolConfig models and a ClusterHandle dataclass) that "
        "the analyzer cannot type; other languages get it through the provider's adapter layer."
    ),
    "GpuValidation": (
        "new-style args (the validated GpuPoolConfig models and a ClusterHandle dataclass) and a `depends_on` list "
        "of arbitrary resources; it checks the platform's own pools and stays inside the platform stack."
    ),
    "GpuSmokeTest": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to "
        "reference) and it checks the platform's own rollout; it stays inside the platform stack."
    ),
}


if __name__ == "__main__":
    component_provider_host(components=COMPONENTS, name=PACKAGE, version=package_version())
