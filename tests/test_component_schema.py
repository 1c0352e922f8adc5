"""The plugin in provider/ exposes every public component, with every arg and output, to other languages.

Runs Pulumi's component analyzer in-process (no CLI, no network) through the same ComponentProvider
that `component_provider_host` starts, and reads the JSON schema `pulumi package add` would get.
The hosted classes are the adapters of provider/adapters.py: YAML-shaped settings and flat wiring in,
the validated config models and a ClusterHandle handed to the component.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import textwrap
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from functools import cache
from types import ModuleType
from typing import Any, Literal, get_args, get_origin

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s
import pytest
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import ComponentInitError
from pydantic import BaseModel

from aks_gpu_platform import components
from aks_gpu_platform.components.context import ClusterHandle
from aks_gpu_platform.components.gpu_node_pool import GpuNodePool
from aks_gpu_platform.config.gpu import GpuPoolConfig, GpuStackConfig
from aks_gpu_platform.config.upgrade import GpuPoolUpgradeConfig
from provider import adapters
from tools.offline import Recording
from tools.stack_files import REPO_ROOT, load_stack_file

AGENT_POOL = "azure-native:containerservice:AgentPool"
# Keys of ClusterHandle that other languages pass flat (name, ID and OIDC issuer come from the cluster).
WIRING = {"resourceGroupName", "location", "cluster", "provider", "tags", "protect"}
WIRING_REQUIRED = {"resourceGroupName", "location", "cluster", "provider"}


@cache
def plugin() -> ModuleType:
    """provider/__main__.py, imported the way the host's analyzer would see it (not run as __main__)."""
    spec = importlib.util.spec_from_file_location("aks_gpu_platform_plugin", REPO_ROOT / "provider" / "__main__.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def host() -> ComponentProvider:
    main = plugin()
    return ComponentProvider(main.COMPONENTS, main.PACKAGE, version=main.package_version())


@cache
def schema() -> dict[str, Any]:
    """The package schema the plugin serves on GetSchema."""
    served = host().schema
    assert served is not None
    return json.loads(served)


def hosted() -> list[type[pulumi.ComponentResource]]:
    return list(plugin().COMPONENTS)


@cache
def public_components() -> dict[str, type[pulumi.ComponentResource]]:
    """Every ComponentResource class defined (not just imported) in a module of components/."""
    found: dict[str, type[pulumi.ComponentResource]] = {}
    for info in pkgutil.iter_modules(components.__path__):
        module = importlib.import_module(f"{components.__name__}.{info.name}")
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, pulumi.ComponentResource)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = value
    return found


def camel(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def args_type(component: type[pulumi.ComponentResource]) -> Any:
    return inspect.get_annotations(component.__init__)["args"]


def annotations_along_mro(cls: type) -> dict[str, Any]:
    """Annotations as the analyzer collects them: every class of the MRO but Pulumi's own bases."""
    merged: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        if base not in (object, pulumi.Resource, pulumi.ComponentResource):
            merged.update(inspect.get_annotations(base))
    return {k: v for k, v in merged.items() if not k.startswith("_")}


def documented(cls: type) -> dict[str, str | None]:
    """Keys annotated in the class body itself, with the docstring under each (the analyzer reads only these)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)).body
    found: dict[str, str | None] = {}
    for node, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            doc = after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) else None
            found[node.target.id] = doc if isinstance(doc, str) else None
    return found


def outputs_of(component: type[pulumi.ComponentResource]) -> set[str]:
    """Public annotated attributes of the component: its documented outputs."""
    return set(annotations_along_mro(component))


def resource(name: str) -> dict[str, Any]:
    token = f"aks-gpu-platform:index:{name}"
    assert token in schema()["resources"], f"{token} must be in the schema, or other languages cannot create it"
    return schema()["resources"][token]


def test_every_public_component_is_hosted_through_an_adapter_of_its_name_or_excluded() -> None:
    names = [c.__name__ for c in hosted()]
    excluded = set(plugin().EXCLUDED)
    assert len(names) == len(set(names)), "a component hosted twice"
    assert not set(names) & excluded, f"{set(names) & excluded} both hosted and excluded"
    assert set(names) | excluded == set(public_components()), (
        "a new component must get an adapter in provider/adapters.py or be excluded in provider/__main__.py"
    )
    assert all(reason.strip() for reason in plugin().EXCLUDED.values()), "every exclusion says why"
    for adapter in hosted():
        component = public_components()[adapter.__name__]
        assert adapter is not component and issubclass(adapter, component), (
            f"{adapter.__name__}: hosted as a subclass of the component, so the plugin builds the real thing"
        )
        assert adapter.__module__ == adapters.__name__, f"{adapter.__name__}: adapters live in provider/adapters.py"


def test_analyzed_modules_keep_runtime_annotations() -> None:
    """The analyzer reads annotations as objects; postponed ones are strings it fails on.

    That covers the adapters' inputs and the components' outputs, which the adapters inherit.
    """
    modules = {inspect.getmodule(c) for c in public_components().values()} | {adapters}
    postponed = sorted(m.__name__ for m in modules if m and vars(m).get("annotations") is __future__.annotations)
    assert not postponed, f"{postponed}: drop `from __future__ import annotations` (see provider/adapters.py)"


# Where the analyzer stops on each exclusion, and what it says there: an args key, as the component
# declares it (an adapter would have to pass it on), or None for the outputs an adapter inherits.
ANALYZER_REJECTION: dict[str, tuple[str | None, str]] = {
    "AksGpuPlatform": (None, r"resource reference for type 'AksCluster' used in 'AksGpuPlatform\.cluster'"),
    "AksCluster": ("azure_monitor_profile", r"Could not find the type '\w+ArgsDict'"),
    "GpuInferenceSample": (None, r"resource reference for type 'GpuAutoscaling' used in '\w+\.autoscaling'"),
    "GpuSmokeTest": ("depends_on", r"resource reference for type 'Resource' used in '\w+\.depends_on'"),
    "GpuHealth": ("depends_on", r"resource reference for type 'Resource' used in '\w+\.depends_on'"),
    "GpuValidation": ("depends_on", r"resource reference for type 'Resource' used in '\w+\.depends_on'"),
    "ManagedGpuNodePool": (None, r"resource reference for type 'CustomResource' used in '\w+\.agent_pool'"),
}


def would_be_adapter(component: type[pulumi.ComponentResource], arg: str | None) -> type[pulumi.ComponentResource]:
    """A subclass like those in adapters.py whose only input is `arg` as the component declares it,
    or, with None, YAML-shaped settings (representable), so that the analyzer reaches the outputs."""
    if arg is None:
        annotation: Any = Mapping[str, Any]
        key = "settings"
    else:
        annotation, key = annotations_along_mro(args_type(component))[arg], arg
    inputs = type(f"{component.__name__}Inputs", (), {"__annotations__": {key: annotation}})

    def __init__(self: Any, name: str, args: Any, opts: Any = None) -> None:
        raise AssertionError("only analyzed")

    __init__.__annotations__["args"] = inputs
    return type(component.__name__, (component,), {"__init__": __init__, "__module__": adapters.__name__})


@pytest.mark.parametrize("name", sorted(plugin().EXCLUDED))
def test_excluded_components_really_are_not_representable(name: str) -> None:
    """An exclusion stays only while the analyzer rejects what an adapter would have to expose."""
    assert name in ANALYZER_REJECTION, f"{name}: say which analyzer error justifies excluding it"
    arg, message = ANALYZER_REJECTION[name]
    candidate = would_be_adapter(public_components()[name], arg)
    # The analyzer raises plain Exception for unresolvable references, so the message is what identifies it.
    with pytest.raises(Exception, match=message):
        Analyzer(plugin().PACKAGE).analyze([candidate])


def test_the_schema_names_the_package_version_and_dependencies() -> None:
    s = schema()
    assert s["name"] == "aks-gpu-platform", "the package name is the type tokens' prefix"
    assert s["version"] == plugin().package_version() == "0.1.0", "plugin version follows pyproject.toml"
    deps = {d["name"]: d["version"] for d in s["dependencies"]}
    assert deps == {"azure-native": "3.29.0", "kubernetes": "4.34.2"}, (
        "resource references (ManagedCluster, AgentPool, Provider, Release) point at the pinned SDK schemas"
    )


@pytest.mark.parametrize("adapter", hosted(), ids=lambda c: c.__name__)
def test_every_arg_reaches_the_schema_documented_with_its_requiredness(
    adapter: type[pulumi.ComponentResource],
) -> None:
    args = args_type(adapter)
    assert typing.is_typeddict(args), f"{adapter.__name__} inputs must be a TypedDict"
    spec = resource(adapter.__name__)
    keys: set[str] = set(args.__required_keys__ | args.__optional_keys__)
    assert set(spec["inputProperties"]) == {camel(k) for k in keys}, (
        f"{adapter.__name__}: every inputs key, and only those, is an input property (camelCase)"
    )
    assert set(spec.get("requiredInputs", [])) == {camel(k) for k in args.__required_keys__}, (
        f"{adapter.__name__}: required in the schema exactly when not NotRequired in Python"
    )
    assert set(documented(args)) == keys, (
        f"{adapter.__name__}: declare every key in the inputs class itself; the analyzer documents no inherited key"
    )
    undocumented = [k for k in sorted(keys) if not spec["inputProperties"][camel(k)].get("description")]
    assert not undocumented, f"{adapter.__name__}: the docstring under {undocumented} must reach the schema"
    component = public_components()[adapter.__name__]
    assert spec.get("description") == inspect.cleandoc(component.__doc__ or "") != "", (
        "the component's docstring describes the resource in every language"
    )


@pytest.mark.parametrize("adapter", hosted(), ids=lambda c: c.__name__)
def test_every_documented_output_reaches_the_schema(adapter: type[pulumi.ComponentResource]) -> None:
    component = public_components()[adapter.__name__]
    outputs = outputs_of(component)
    assert outputs, f"{component.__name__} documents no outputs"
    docs = {k: v for k, v in documented(component).items() if k in outputs}
    # The analyzer takes docstrings from the hosted class's own source, so the adapter repeats them.
    assert documented(adapter) == docs, f"{adapter.__name__}: re-declare the component's outputs, docstrings and all"
    assert inspect.get_annotations(adapter) == {k: annotations_along_mro(component)[k] for k in outputs}, (
        f"{adapter.__name__}: each output keeps the component's type"
    )
    spec = resource(adapter.__name__)
    assert set(spec["properties"]) == {camel(k) for k in outputs}, (
        f"{adapter.__name__}: every annotated attribute, and only those, is an output of the SDK"
    )
    missing = [k for k in sorted(outputs) if spec["properties"][camel(k)].get("description") != docs[k]]
    assert not missing, f"{adapter.__name__}: outputs {missing} need their docstring in the schema"


def test_every_schema_type_is_documented() -> None:
    """Typed settings (GPU pools, Spot, enums) show their docs in other languages' IDEs."""
    for token, spec in schema()["types"].items():
        assert spec.get("description"), f"{token}: the class docstring describes the type"
        undocumented = [k for k, p in spec.get("properties", {}).items() if not p.get("description")]
        assert not undocumented, f"{token}: properties {undocumented} need a docstring"


def undescribed(spec: Any) -> Any:
    """A schema fragment without its descriptions, to compare types alone."""
    if isinstance(spec, dict):
        return {k: undescribed(v) for k, v in spec.items() if k != "description"}
    return spec


def test_every_component_on_the_cluster_takes_the_same_wiring() -> None:
    """One object of cluster wiring spreads into every component other languages build on the cluster."""
    on_cluster = [a for a in hosted() if "cluster" in resource(a.__name__)["inputProperties"]]
    assert len(on_cluster) >= 10, "the pools, the GPU stack, monitoring, storage, registry and upgrades"
    shapes = set()
    for adapter in on_cluster:
        spec = resource(adapter.__name__)
        inputs = spec["inputProperties"]
        assert set(inputs) >= WIRING, f"{adapter.__name__}: missing wiring {WIRING - set(inputs)}"
        assert WIRING & set(spec["requiredInputs"]) == WIRING_REQUIRED, f"{adapter.__name__}: wiring requiredness"
        shapes.add(json.dumps(undescribed({k: inputs[k] for k in WIRING}), sort_keys=True))
    assert len(shapes) == 1, "the wiring keys have one type everywhere"
    wiring = json.loads(shapes.pop())
    assert wiring["cluster"]["$ref"].endswith("#/resources/azure-native:containerservice:ManagedCluster")
    assert wiring["provider"]["$ref"].endswith("#/resources/pulumi:providers:kubernetes")
    assert "plain" not in wiring["resourceGroupName"], "the resource group may be another resource's output"


def test_free_form_settings_are_plain_yaml_and_wiring_takes_outputs() -> None:
    inputs = resource("LustreStorage")["inputProperties"]
    settings = inputs["settings"]
    assert settings["type"] == "object" and settings["additionalProperties"]["$ref"] == "pulumi.json#/Any", (
        "settings stay free-form (the YAML shape), validated by the component's config model"
    )
    assert settings.get("plain") is True, "settings are plain values: the adapter validates them when it is built"
    assert "plain" not in inputs["lustreSubnetId"], "Input[str] args accept other resources' outputs"
    pool = resource("GpuNodePool")["properties"]["agentPool"]
    assert pool["$ref"].endswith(f"#/resources/{AGENT_POOL}"), "workloads can depend on the pool itself"


def literal_values(annotation: Any) -> set[Any]:
    """The values of a Literal field, through `X | None`."""
    if get_origin(annotation) is Literal:
        return set(get_args(annotation))
    return set().union(*(literal_values(a) for a in get_args(annotation)))


def model_in(annotation: Any) -> type[BaseModel]:
    """The config model of a nested field, through `X | None`."""
    found = [a for a in (annotation, *get_args(annotation)) if inspect.isclass(a) and issubclass(a, BaseModel)]
    assert len(found) == 1, annotation
    return found[0]


def assert_mirrors(settings: type, model: type[BaseModel], path: str) -> None:
    """A typed settings TypedDict has the model's YAML keys, requiredness and allowed values."""
    hints = typing.get_type_hints(settings)
    by_key = {camel(k): k for k in hints}
    fields = {f.alias or name: f for name, f in model.model_fields.items()}
    assert set(by_key) == set(fields), f"{path}: schema keys must be the YAML keys of {model.__name__}"
    required = {camel(k) for k in settings.__required_keys__}  # type: ignore[attr-defined]
    assert required == {k for k, f in fields.items() if f.is_required()}, f"{path}: required exactly as in the model"
    for key, field in fields.items():
        hint = hints[by_key[key]]
        if inspect.isclass(hint) and issubclass(hint, Enum):
            assert {m.value for m in hint} == literal_values(field.annotation), (
                f"{path}.{key}: the schema enum must offer exactly the config's values"
            )
        elif typing.is_typeddict(hint):
            assert_mirrors(hint, model_in(field.annotation), f"{path}.{key}")


def test_typed_gpu_pool_settings_mirror_the_config_model() -> None:
    """Other languages get `gpuPools` entries as a typed object whose keys are the stack YAML's."""
    settings = adapters.GpuPoolSettings
    assert_mirrors(settings, GpuPoolConfig, "gpuPools[]")
    spec = resource("GpuNodePool")["inputProperties"]["settings"]
    assert spec["$ref"] == "#/types/aks-gpu-platform:index:GpuPoolSettings"
    typed = schema()["types"]["aks-gpu-platform:index:GpuPoolSettings"]
    assert set(typed["properties"]) == {f.alias for f in GpuPoolConfig.model_fields.values()}
    for name in ("GpuStack", "GpuMonitoring", "LustreStorage", "TrainingQueues"):
        pools = next(p for k, p in resource(name)["inputProperties"].items() if k in ("pools", "gpuPools"))
        assert pools["items"]["$ref"] == spec["$ref"], f"{name}: GPU pools are typed wherever they are passed"


def test_stack_mode_is_a_schema_enum_of_the_config_literal() -> None:
    stack_mode = resource("GpuNodePool")["inputProperties"]["stackMode"]
    assert stack_mode["$ref"] == "#/types/aks-gpu-platform:index:GpuStackMode"
    enum = schema()["types"]["aks-gpu-platform:index:GpuStackMode"]
    assert enum["type"] == "string"
    assert {e["value"] for e in enum["enum"]} == literal_values(GpuStackConfig.model_fields["mode"].annotation), (
        "the runtime enum and config's Literal must offer the same modes"
    )


# A GPU pool as it arrives over gRPC: schema names, enum values as text, every number a double.
WIRE_POOL = {
    "name": "gpua100",
    "vmSize": "Standard_NC24ads_A100_v4",
    "maxCount": 4.0,
    "zones": ["1"],
    "priority": "Spot",
    "spot": {"evictionPolicy": "Deallocate", "maxPrice": 2.5},
    "migProfile": "MIG3g",
    # Free-form keys: only the schema's own keys go back to the YAML's camelCase.
    "labels": {"team_name": "vision"},
    "taints": ["dedicated=vision:NoSchedule"],
}
# Where a pool joins, beyond the cluster wiring.
PLACEMENT = {"nodesSubnetId": "subnet", "kubernetesVersion": "1.33", "tracksVersions": False}


def wiring() -> dict[str, Any]:
    """The cluster as another language passes it (call inside a mocked program)."""
    cluster = containerservice.ManagedCluster("aks", resource_group_name="rg-plugin")
    provider = k8s.Provider("aks-k8s", kubeconfig="{}")
    return {"resourceGroupName": "rg-plugin", "location": "koreacentral", "cluster": cluster, "provider": provider}


def test_a_pool_constructed_through_the_plugin_equals_one_built_in_python(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:
    """The adapter turns wire inputs into the models and handle a Python caller passes: same Azure pool, same URN."""

    def through_plugin() -> None:
        inputs = {
            **wiring(),
            **PLACEMENT,
            "tags": {"team": "ml"},
            "settings": WIRE_POOL,
            "stackMode": "gpuOperator",
            "upgrade": {"maxSurge": "1"},
        }
        host().construct("gpu", "aks-gpu-platform:index:GpuNodePool", inputs)

    def in_python() -> None:
        wired = wiring()
        cluster = wired["cluster"]
        handle = ClusterHandle(
            resource_group_name="rg-plugin",
            location="koreacentral",
            tags={"team": "ml"},
            cluster=cluster,
            cluster_name=cluster.name,
            cluster_id=cluster.id,
            provider=wired["provider"],
            oidc_issuer_url=pulumi.Output.from_input("https://issuer.example/"),
            protect=False,
        )
        GpuNodePool(
            "gpu",
            {
                "cluster": handle,
                "nodes_subnet_id": "subnet",
                "kubernetes_version": "1.33",
                "tracks_versions": False,
                "settings": GpuPoolConfig.model_validate(WIRE_POOL),
                "stack_mode": "gpuOperator",
                "upgrade": GpuPoolUpgradeConfig.model_validate({"maxSurge": "1"}),
            },
        )

    remote, local = build(through_plugin).one(AGENT_POOL), build(in_python).one(AGENT_POOL)
    assert remote.inputs["gpuProfile"] == {"driver": "None"}, "gpuOperator mode: AKS installs no driver"
    assert remote.inputs["scaleSetEvictionPolicy"] == "Deallocate", "nested typed settings (spot) reach the pool"
    assert remote.inputs["nodeLabels"]["team_name"] == "vision", "label keys are the user's, not renamed"
    assert remote.inputs["upgradeSettings"]["drainTimeoutInMinutes"] == 90, "upgrade takes the GPU pools' defaults"
    assert remote.inputs["resourceName"] == "aks", "the pool joins the cluster passed in, by its Azure name"
    assert remote.inputs == local.inputs, "the plugin path must create exactly the pool Python callers get"
    assert remote.urn == local.urn, "and under the same URN"


# Each hosted adapter's inputs, from the prod stack's YAML sections and the wiring.
PROD_INPUTS: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "Network": lambda s, w: {"resourceGroupName": "rg-plugin", "location": "koreacentral", "settings": s["network"]},
    "LogWorkspace": lambda s, w: {
        "resourceGroupName": "rg-plugin",
        "location": "koreacentral",
        "baseName": "aks",
        "settings": s["monitoring"]["logs"],
    },
    "CpuNodePool": lambda s, w: {
        **w,
        "nodesSubnetId": "subnet",
        "kubernetesVersion": "1.33",
        "tracksVersions": True,
        "settings": s["cpuPool"],
        "upgrade": s["upgrade"]["cpuPool"],
    },
    "GpuNodePool": lambda s, w: {
        **w,
        "nodesSubnetId": "subnet",
        "kubernetesVersion": "1.33",
        "tracksVersions": True,
        "settings": s["gpuPools"][0],
        "stackMode": s["gpuStack"]["mode"],
        "upgrade": s["upgrade"]["gpuPools"],
    },
    "GpuStack": lambda s, w: {**w, "settings": s["gpuStack"], "pools": s["gpuPools"]},
    "GpuMonitoring": lambda s, w: {
        **w,
        "settings": s["monitoring"],
        "baseName": "aks",
        "dcgmFromOperator": False,
        "logAnalyticsWorkspaceId": "law-id",
        "dcgmExporterRepository": "acr.example/nvidia/k8s/dcgm-exporter",
        "gpuPools": s["gpuPools"],
    },
    "GpuAutoscaling": lambda s, w: {
        **w,
        "settings": {"namespace": "serving", "deployment": "llm", "minReplicas": 1, "maxReplicas": 4},
        "monitorWorkspaceId": "amw-id",
        "prometheusQueryEndpoint": "https://amw.example",
    },
    "LustreStorage": lambda s, w: {
        **w,
        "settings": s["storage"]["lustre"],
        "lustreSubnetId": "lustre-subnet",
        "privateEndpointsSubnetId": "pe-subnet",
        "vnetId": "vnet",
        "gpuPools": s["gpuPools"],
    },
    "BlobStorageClasses": lambda s, w: {**w, "settings": s["storage"]["blobClasses"]},
    "DiskStorageClasses": lambda s, w: {**w, "settings": s["storage"]["diskClasses"]},
    "Registry": lambda s, w: {
        **w,
        "settings": s["monitoring"]["registry"],
        "baseName": "aks",
        "kubeletIdentityObjectId": "kubelet",
        "privateEndpointsSubnetId": "pe-subnet",
        "vnetId": "vnet",
    },
    "UpgradePolicy": lambda s, w: {**w, "settings": s["upgrade"]},
    "NetAppFiles": lambda s, w: {
        **w,
        "settings": {"enabled": True},
        "subnetId": "netapp-subnet",
        "allowedClients": ["10.50.0.0/20"],
    },
    "TrainingQueues": lambda s, w: {**w, "settings": s["training"], "gpuPools": s["gpuPools"]},
    "TeamTenancy": lambda s, w: {
        **w,
        "settings": s["training"],
        "namespaces": {t["name"]: t["namespace"] for t in s["training"]["teams"]},
        "grafanaId": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Dashboard/grafana/g",
    },
    "GrafanaDashboards": lambda s, w: {
        "grafanaId": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Dashboard/grafana/g",
        "grafanaEndpoint": "https://g-abcd.krc.grafana.azure.com",
        "dashboards": ["gpu-overview", "gpu-teams"],
    },
}


def prod_settings() -> dict[str, Any]:
    prefix = "aks-gpu-platform:"
    return {k[len(prefix) :]: v for k, v in load_stack_file("prod").items() if k.startswith(prefix)}


@pytest.mark.parametrize("adapter", hosted(), ids=lambda c: c.__name__)
def test_every_adapter_builds_from_yaml_sections_on_the_cluster_passed_in(
    adapter: type[pulumi.ComponentResource], build: Callable[[Callable[[], Any]], Recording]
) -> None:
    """Through the plugin, children land in the given resource group, on the given provider and cluster."""
    name = adapter.__name__
    assert name in PROD_INPUTS, f"{name}: add its inputs here so the plugin path is exercised"
    urns: dict[str, str] = {}

    def program() -> None:
        wired = wiring()
        wired["cluster"].urn.apply(lambda u: urns.setdefault("cluster", u))
        wired["provider"].urn.apply(lambda u: urns.setdefault("provider", u))
        host().construct("c", f"aks-gpu-platform:index:{name}", PROD_INPUTS[name](prod_settings(), wired))

    recording = build(program)
    assert recording.one(f"aks-gpu-platform:index:{name}").name == "c", "the component registers under its token"
    children = [r for r in recording.resources if r.custom and r.name.startswith("c-")]
    assert children, f"{name} built nothing"
    for child in children:
        if child.type.startswith("kubernetes:"):
            assert child.provider.startswith(urns["provider"] + "::"), f"{child.name}: on the provider passed in"
            assert child.deleted_with == urns["cluster"], f"{child.name}: deleted with the cluster passed in"
        elif "resourceGroupName" in child.inputs:
            assert child.inputs["resourceGroupName"] == "rg-plugin", f"{child.name}: in the resource group passed in"


@pytest.mark.parametrize(
    ("name", "inputs", "source", "field"),
    [
        (
            "GpuNodePool",
            {**PLACEMENT, "settings": {**WIRE_POOL, "vmSize": "Standard_D8ds_v5"}, "stackMode": "devicePlugin"},
            "GpuNodePool settings",
            "vmSize",
        ),
        ("GpuStack", {"settings": {}, "pools": [WIRE_POOL, {**WIRE_POOL, "name": "A"}]}, "GpuStack pools[1]", "name"),
        ("BlobStorageClasses", {"settings": {"standrd": {}}}, "BlobStorageClasses settings", "standrd"),
    ],
)
def test_a_bad_setting_through_the_plugin_fails_naming_the_field(
    name: str, inputs: dict[str, Any], source: str, field: str, build: Callable[[Callable[[], Any]], Recording]
) -> None:
    """Typed or free-form, settings are validated by the config model: the program's error, not a stack trace."""

    def program() -> None:
        host().construct("c", f"aks-gpu-platform:index:{name}", {**wiring(), **inputs})

    with pytest.raises(ComponentInitError) as caught:
        build(program)
    message = str(caught.value)
    assert message.startswith(f"invalid {source} "), f"the error says which settings are wrong:\n{message}"
    assert re.search(rf"^\s+- {field}:", message, re.M), f"and names the field {field}:\n{message}"


def test_yaml_shape_renames_only_schema_keys() -> None:
    """The host hands typed settings over with Python names; the config models read the YAML's."""
    spot = {"eviction_policy": adapters.SpotEvictionPolicy.DELETE, "max_price": 1.5}
    mapped = {"name": "a", "vm_size": "x", "max_count": 1, "spot": spot, "labels": {"a_b": "c"}, "zones": ["1"]}
    assert adapters.yaml_shape(mapped, adapters.GpuPoolSettings) == {
        "name": "a",
        "vmSize": "x",
        "maxCount": 1,
        "spot": {"evictionPolicy": "Delete", "maxPrice": 1.5},
        "labels": {"a_b": "c"},
        "zones": ["1"],
    }
    assert adapters.yaml_shape([mapped], list[adapters.GpuPoolSettings])[0]["vmSize"] == "x", "lists of them too"
