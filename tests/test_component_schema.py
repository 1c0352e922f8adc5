"""The plugin in provider/ exposes every public component, with every arg and output, to other languages.

Runs Pulumi's component analyzer in-process (no CLI, no network) through the same ComponentProvider
that `component_provider_host` starts, and reads the JSON schema `pulumi package add` would get.
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
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import Any, get_args

import pulumi
import pytest
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider

import components
from components.gpu_node_pool import GpuNodePool
from config.gpu import GpuStackMode
from tools.offline import Recording
from tools.stack_files import REPO_ROOT

AGENT_POOL = "azure-native:containerservice:AgentPool"


@cache
def plugin() -> ModuleType:
    """provider/__main__.py, imported the way the host's analyzer would see it (not run as __main__)."""
    spec = importlib.util.spec_from_file_location("aks_gpu_platform_plugin", REPO_ROOT / "provider" / "__main__.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def schema() -> dict[str, Any]:
    """The package schema the plugin serves on GetSchema."""
    main = plugin()
    provider = ComponentProvider(main.COMPONENTS, main.PACKAGE, version=main.package_version())
    assert provider.schema is not None
    return json.loads(provider.schema)


def hosted() -> list[type[pulumi.ComponentResource]]:
    return list(plugin().COMPONENTS)


def public_components() -> dict[str, type[pulumi.ComponentResource]]:
    """Every ComponentResource class defined (not just imported) in a module of components/."""
    found: dict[str, type[pulumi.ComponentResource]] = {}
    for info in pkgutil.iter_modules(components.__path__):
        module = importlib.import_module(f"components.{info.name}")
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


def declared_keys(cls: type) -> set[str]:
    """Keys annotated in the class body itself (the analyzer reads docstrings from that source only)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)).body
    return {n.target.id for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def outputs_of(component: type[pulumi.ComponentResource]) -> set[str]:
    """Public annotated attributes of the component class: its documented outputs."""
    return {k for k in inspect.get_annotations(component) if not k.startswith("_")}


def resource(component: type[pulumi.ComponentResource]) -> dict[str, Any]:
    token = f"aks-gpu-platform:index:{component.__name__}"
    assert token in schema()["resources"], f"{token} must be in the schema, or other languages cannot create it"
    return schema()["resources"][token]


def test_entry_point_hosts_every_public_component_but_the_documented_exclusions() -> None:
    names = [c.__name__ for c in hosted()]
    excluded = set(plugin().EXCLUDED)
    assert len(names) == len(set(names)), "a component hosted twice"
    assert not set(names) & excluded, f"{set(names) & excluded} both hosted and excluded"
    assert set(names) | excluded == set(public_components()), (
        "a new component must be hosted in provider/__main__.py or excluded there with a reason"
    )
    assert all(reason.strip() for reason in plugin().EXCLUDED.values()), "every exclusion says why"


def test_component_modules_keep_runtime_annotations() -> None:
    """The analyzer reads annotations as objects; postponed ones are strings it fails on."""
    postponed = sorted(
        {
            c.__module__
            for c in public_components().values()
            if vars(inspect.getmodule(c)).get("annotations") is __future__.annotations
        }
    )
    assert not postponed, f"{postponed}: drop `from __future__ import annotations` (see provider/__main__.py)"


# What the analyzer says about each exclusion: the reason in EXCLUDED, not some unrelated failure.
ANALYZER_REJECTION = {
    "AksCluster": r"Could not find the type '\w+ArgsDict'",
    "GpuInferenceSample": r"resource reference for type 'GpuAutoscaling'.*pulumi_type' is not defined",
    "GpuSmokeTest": r"resource reference for type 'Resource' used in 'GpuSmokeTestArgs.depends_on'",
    "NetAppFiles": r"issubclass\(\) arg 1 must be a class",
    "DiskStorageClasses": r"issubclass\(\) arg 1 must be a class",
    # The settings arg is a pydantic model whose field annotations are postponed strings (config/ uses
    # `from __future__ import annotations`); the analyzer passes the string 'KueueConfig' to issubclass.
    "TrainingQueues": r"issubclass\(\) arg 1 must be a class",
    # Same for the validated GpuPoolConfig / GpuHealthConfig models these take.
    "ManagedGpuNodePool": r"issubclass\(\) arg 1 must be a class",
    "GpuHealth": r"issubclass\(\) arg 1 must be a class",
    "GpuValidation": r"issubclass\(\) arg 1 must be a class",
}


@pytest.mark.parametrize("name", sorted(plugin().EXCLUDED))
def test_excluded_components_really_are_not_representable(name: str) -> None:
    """An exclusion stays only while the analyzer rejects the component; once it can, host it."""
    assert name in ANALYZER_REJECTION, f"{name}: say which analyzer error justifies excluding it"
    # The analyzer raises plain Exception for unresolvable references, so the message is what identifies it.
    with pytest.raises(Exception, match=ANALYZER_REJECTION[name]):
        Analyzer(plugin().PACKAGE).analyze([public_components()[name]])


def test_the_schema_names_the_package_version_and_dependencies() -> None:
    s = schema()
    assert s["name"] == "aks-gpu-platform", "the package name is the type tokens' prefix"
    assert s["version"] == plugin().package_version() == "0.1.0", "plugin version follows pyproject.toml"
    deps = {d["name"]: d["version"] for d in s["dependencies"]}
    assert deps == {"azure-native": "3.29.0", "kubernetes": "4.34.2"}, (
        "resource references (ManagedCluster, AgentPool, Provider, Release) point at the pinned SDK schemas"
    )


@pytest.mark.parametrize("component", hosted(), ids=lambda c: c.__name__)
def test_every_arg_reaches_the_schema_with_its_requiredness(component: type[pulumi.ComponentResource]) -> None:
    args = args_type(component)
    assert typing.is_typeddict(args), f"{component.__name__} args must be a TypedDict"
    spec = resource(component)
    keys: set[str] = set(args.__required_keys__ | args.__optional_keys__)
    assert set(spec["inputProperties"]) == {camel(k) for k in keys}, (
        f"{component.__name__}: every args key, and only those, is an input property (camelCase)"
    )
    assert set(spec["requiredInputs"]) == {camel(k) for k in args.__required_keys__}, (
        f"{component.__name__}: required in the schema exactly when not NotRequired in Python"
    )
    undocumented = [k for k in sorted(declared_keys(args)) if not spec["inputProperties"][camel(k)].get("description")]
    assert not undocumented, f"{component.__name__}: the docstring under {undocumented} must reach the schema"
    assert spec.get("description") == inspect.cleandoc(component.__doc__ or ""), "class docstring describes it"


@pytest.mark.parametrize("component", hosted(), ids=lambda c: c.__name__)
def test_every_documented_output_reaches_the_schema(component: type[pulumi.ComponentResource]) -> None:
    spec = resource(component)
    outputs = outputs_of(component)
    assert outputs, f"{component.__name__} documents no outputs"
    assert set(spec["properties"]) == {camel(k) for k in outputs}, (
        f"{component.__name__}: every annotated attribute, and only those, is an output of the SDK"
    )
    missing = [k for k in sorted(outputs) if not spec["properties"][camel(k)].get("description")]
    assert not missing, f"{component.__name__}: outputs {missing} need a docstring"


def test_wiring_args_are_typed_references_not_opaque_objects() -> None:
    """Other languages pass their own ManagedCluster and kubernetes Provider, checked by their compilers."""
    inputs = resource(public_components()["LustreStorage"])["inputProperties"]
    assert inputs["cluster"]["$ref"].endswith("#/resources/azure-native:containerservice:ManagedCluster")
    assert inputs["provider"]["$ref"].endswith("#/resources/pulumi:providers:kubernetes")
    settings = inputs["settings"]
    assert settings["type"] == "object" and settings["additionalProperties"]["$ref"] == "pulumi.json#/Any", (
        "settings stay free-form (the YAML shape), validated by the component's config model"
    )
    assert settings.get("plain") is True, "settings are plain values: the component validates them when it is built"
    assert "plain" not in inputs["lustreSubnetId"], "Input[str] args accept other resources' outputs"
    pool = resource(public_components()["GpuNodePool"])["properties"]["agentPool"]
    assert pool["$ref"].endswith(f"#/resources/{AGENT_POOL}"), "workloads can depend on the pool itself"


def test_stack_mode_is_a_schema_enum_of_the_config_literal() -> None:
    stack_mode = resource(public_components()["GpuNodePool"])["inputProperties"]["stackMode"]
    assert stack_mode["$ref"] == "#/types/aks-gpu-platform:index:GpuStackMode"
    enum = schema()["types"]["aks-gpu-platform:index:GpuStackMode"]
    assert enum["type"] == "string"
    assert {e["value"] for e in enum["enum"]} == set(get_args(GpuStackMode)), (
        "the runtime enum and config's Literal must offer the same modes"
    )


def test_a_pool_constructed_through_the_plugin_equals_one_built_in_python(
    build: Callable[[Callable[[], Any]], Recording],
) -> None:
    """The host maps camelCase inputs and the enum back to the Python args: same Azure pool, same name."""
    settings = {"name": "gpua100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4}
    wiring = {"resourceGroupName": "rg", "clusterName": "aks", "nodesSubnetId": "subnet", "kubernetesVersion": "1.33"}
    main = plugin()
    host = ComponentProvider(main.COMPONENTS, main.PACKAGE, version=main.package_version())

    def through_plugin() -> None:
        inputs = {**wiring, "settings": settings, "stackMode": "gpuOperator", "tracksVersions": False}
        host.construct("gpu", "aks-gpu-platform:index:GpuNodePool", inputs)

    def in_python() -> None:
        GpuNodePool(
            "gpu",
            {
                "resource_group_name": "rg",
                "cluster_name": "aks",
                "nodes_subnet_id": "subnet",
                "settings": settings,
                "stack_mode": "gpuOperator",
                "kubernetes_version": "1.33",
                "tracks_versions": False,
            },
        )

    remote, local = build(through_plugin).one(AGENT_POOL), build(in_python).one(AGENT_POOL)
    assert remote.inputs["gpuProfile"] == {"driver": "None"}, "gpuOperator mode: AKS installs no driver"
    assert remote.inputs == local.inputs, "the plugin path must create exactly the pool Python callers get"
