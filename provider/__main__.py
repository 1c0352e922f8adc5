"""The platform's components as a Pulumi plugin, for TypeScript, Go, C# or YAML stacks.

`pulumi package add <repo>.git/provider` runs this file through Pulumi's component provider host:
the host infers a schema (package `aks-gpu-platform`, tokens `aks-gpu-platform:index:<Name>`)
from the type annotations of the components below, the CLI generates an SDK from it, and each
`new GpuNodePool(...)` in the consumer's language constructs the real Python component here.

The plugin runs the `aks_gpu_platform` package of the checkout Pulumi cloned: `requirements.txt`
installs that checkout editable (no separate release to keep in step) with the same pinned runtime
dependencies as the program, and the repository root goes on `sys.path` for `provider` itself.

Hosted: the adapters in adapters.py, one per public component of `components/` except those in
EXCLUDED. The components take validated config models and a ClusterHandle, which the analyzer
(pulumi/provider/experimental/analyzer.py) cannot type; each adapter is a subclass of the same name
that takes YAML-shaped settings and flat wiring instead. tests/project/test_component_schema.py checks both
lists, the reasons for each exclusion, and the inferred schema.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pulumi import ComponentResource  # noqa: E402
from pulumi.provider.experimental import component_provider_host  # noqa: E402

# The plugin's version is the Python package's (pyproject.toml), so SDKs and wheels agree.
from aks_gpu_platform.config.version import package_version  # noqa: E402
from provider.adapters import ADAPTERS  # noqa: E402

PACKAGE = "aks-gpu-platform"

COMPONENTS: list[type[ComponentResource]] = ADAPTERS

EXCLUDED: dict[str, str] = {
    "AksGpuPlatform": (
        "its outputs include our own components (`cluster` is an AksCluster; `lustre`, `netapp_files` and "
        "`training` are components too), and the analyzer references a resource only through its `pulumi_type` "
        "and an installed pulumi-plugin.json, which our components lack. An adapter subclass cannot drop them: "
        "the analyzer collects outputs along the class's MRO. Other languages compose the hosted components."
    ),
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
    "ServedModel": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to reference); "
        "ModelServing builds one per `inference.models` entry inside the platform stack."
    ),
    "InferenceGateway": (
        "its `crds` output lists arbitrary resources (what an InferencePool or HTTPRoute waits for), which the "
        "analyzer can reference only through a `pulumi_type`; ModelServing builds it inside the platform stack."
    ),
    "ModelServing": (
        "its required `scrape_dependencies` are arbitrary Pulumi resources (what installs the monitoring CRDs); "
        "the analyzer references a resource only through a `pulumi_type`. AksGpuPlatform builds it from "
        "`inference.models`."
    ),
    "ManagedGpuNodePool": (
        "its `agent_pool` output is a generic ARM resource (pulumi.CustomResource, no type token to reference); "
        "other languages create aksManaged pools with the azure-native SDK's generic Resource until the pinned "
        "SDK has `gpuProfile.nvidia` (docs/gpu-operations.md)."
    ),
    "GpuHealth": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to reference); "
        "it belongs to the platform stack, which orders it after the GPU stack's releases."
    ),
    "GpuValidation": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to reference) and "
        "it checks the platform's own pools; it stays inside the platform stack."
    ),
    "AmdGpuStack": (
        "its required `scrape_dependencies` are arbitrary Pulumi resources (what installs the monitoring CRDs); "
        "the analyzer references a resource only through a `pulumi_type`, which the base Resource class lacks. "
        "AksGpuPlatform builds it whenever a pool has AMD GPUs."
    ),
    "ImagePrepull": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to reference); "
        "AksGpuPlatform builds it for pools that name `coldStart.prePullImages`."
    ),
    "AksGpuFleet": (
        "it takes the whole validated fleet plan and, like AksGpuPlatform, exposes member platforms (our own "
        "components) as outputs, which the analyzer can reference only through a `pulumi_type` and an installed "
        "pulumi-plugin.json. A fleet is a Python stack (`aks-gpu-platform:fleet`)."
    ),
    "MemberAccess": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to reference); it "
        "is one part of AksGpuFleet."
    ),
    "FleetDispatch": (
        "`kueue_release` is an arbitrary resource (bare pulumi.Resource has no type token to reference); it is "
        "one part of AksGpuFleet."
    ),
    "TokenRotation": (
        "`kueue_release` is an arbitrary resource (bare pulumi.Resource has no type token to reference); it is "
        "one part of AksGpuFleet."
    ),
    "LargestJobPolicy": (
        "`limits` pairs each team's namespace with a LargestJob (a tuple of a dataclass, which the analyzer cannot "
        "type); the limits come from the validated fleet plan (config/fleet/section.py largest_job): one part of "
        "AksGpuFleet."
    ),
    "GpuSmokeTest": (
        "`depends_on` is a list of arbitrary resources (bare pulumi.Resource has no type token to "
        "reference) and it checks the platform's own rollout; it stays inside the platform stack."
    ),
}


if __name__ == "__main__":
    component_provider_host(components=COMPONENTS, name=PACKAGE, version=package_version())
