"""How a hosted adapter turns what another language passes into the args its component takes.

The adapters in adapters.py are generated (tools/adapters_gen.py) and hold only what the component
provider host's analyzer reads: input keys, outputs, enums and their docstrings. The conversion is
here, one function for all of them, driven by the component's own Args annotations:

- a ClusterHandle arg is built from the flat wiring keys of ClusterWiring;
- a config-model arg (or a sequence of them) arrives in the stack YAML's shape and is validated once
  with that model, so a bad value fails with the program's ConfigError naming the field;
- an enum member becomes its value (config takes Literals); everything else passes through.

No `from __future__ import annotations`: the analyzer reads ClusterWiring's annotations as objects.
"""

import inspect
import sys
import typing
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, ForwardRef, NotRequired, Required, TypedDict, get_args, get_origin

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s
from pulumi.provider.experimental.util import camel_case
from pydantic import BaseModel

from aks_gpu_platform.components.shared.context import ClusterHandle
from aks_gpu_platform.config.field_paths import model_class, strip_annotated, union_members
from aks_gpu_platform.config.loader import validate_section

SEQUENCES = (list, tuple, Sequence)


class ClusterWiring(TypedDict):
    """The ClusterHandle's fields as other languages pass them: every adapter built on the cluster has these keys.

    Name, ID and OIDC issuer are read from the ManagedCluster, as AksCluster reads them.
    """

    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    location: str
    """Azure region of the cluster."""
    cluster: containerservice.ManagedCluster
    """The AKS cluster."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags (none by default)."""
    protect: NotRequired[bool]
    """Refuse to delete or replace stateful resources (prod); false by default."""


def typed_dict_keys(typed_dict: type) -> dict[str, tuple[Any, bool]]:
    """Each key's annotation as an object, NotRequired taken off, and whether the key is required.

    Keys from a module with postponed annotations are forward references, resolved in that module (where
    `__required_keys__` cannot see their NotRequired); typing.get_type_hints would also resolve pulumi.Input's
    own reference to Output, and fails on it.
    """
    keys: dict[str, tuple[Any, bool]] = {}
    for key, value in inspect.get_annotations(typed_dict).items():
        if isinstance(value, ForwardRef):
            home = sys.modules[value.__forward_module__ or typed_dict.__module__]
            value = eval(value.__forward_arg__, vars(home))
        origin = get_origin(value)
        required = origin is Required or (origin is not NotRequired and key in typed_dict.__required_keys__)  # type: ignore[attr-defined]
        keys[key] = (get_args(value)[0] if origin in (NotRequired, Required) else value, required)
    return keys


def cluster_handle(args: Mapping[str, Any]) -> ClusterHandle:
    cluster: containerservice.ManagedCluster = args["cluster"]
    return ClusterHandle(
        resource_group_name=args["resource_group_name"],
        location=args["location"],
        tags=dict(args.get("tags", {})),
        cluster=cluster,
        cluster_name=cluster.name,
        cluster_id=cluster.id,
        provider=args["provider"],
        # As AksCluster reads it, so a component behind an adapter trusts the same issuer.
        oidc_issuer_url=cluster.oidc_issuer_profile.apply(lambda p: (p.issuer_url if p else None) or ""),
        protect=args.get("protect", False),
    )


def config_model(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """The config model an arg takes, and whether it takes a sequence of them; None for other args."""
    model = model_class(annotation)
    if model is not None:
        return model, False
    for member in union_members(strip_annotated(annotation)[0]):
        if get_origin(member) in SEQUENCES and (item := model_class(get_args(member)[0])) is not None:
            return item, True
    return None


def yaml_shape(value: Any, annotation: Any) -> Any:
    """Typed settings as the host hands them over, back in the stack YAML's shape.

    The host maps schema names to the TypedDict's Python keys; the YAML keys are their camelCase
    (the analyzer's own conversion, so this is its inverse), and enum members become their values.
    Only TypedDict keys are renamed: label maps and other free-form mappings keep their keys.
    """
    if isinstance(value, Enum):
        return value.value
    if typing.is_typeddict(annotation) and isinstance(value, Mapping):
        fields = typing.get_type_hints(annotation)
        items = typing.cast(Mapping[Any, Any], value).items()
        return {camel_case(str(k)): yaml_shape(v, fields.get(str(k))) for k, v in items}
    if isinstance(value, list | tuple):
        items = get_args(annotation)
        return [yaml_shape(v, items[0] if items else None) for v in typing.cast(Sequence[Any], value)]
    return value


def _converted(annotation: Any, value: Any, shape: Any, source: str, model: type[BaseModel] | None) -> Any:
    found = config_model(annotation)
    if found is None:
        return value.value if isinstance(value, Enum) else value
    model, many = model or found[0], found[1]
    if not many:
        return validate_section(model, yaml_shape(value, shape), source=source)
    item_shape = next(iter(get_args(shape)), None)
    return [
        validate_section(model, yaml_shape(item, item_shape), source=f"{source}[{i}]")
        for i, item in enumerate(typing.cast(Sequence[Any], value))
    ]


def component_args(
    adapter: type[pulumi.ComponentResource],
    inputs: Mapping[str, Any],
    name: str,
    models: Mapping[str, type[BaseModel]] | None = None,
) -> Any:
    """The args of the component `adapter` subclasses, from the inputs other languages passed.

    `models`: a narrower config model for an arg than its annotation names (the one the platform passes).
    """
    component = adapter.__mro__[1]
    wanted = typed_dict_keys(inspect.get_annotations(component.__init__)["args"])
    shapes = typed_dict_keys(inspect.get_annotations(adapter.__init__)["args"])
    built: dict[str, Any] = {}
    for key, (annotation, _) in wanted.items():
        if annotation is ClusterHandle:
            built[key] = cluster_handle(inputs)
        elif key in inputs:
            source = f"{adapter.__name__} '{name}' {camel_case(key)}"
            built[key] = _converted(annotation, inputs[key], shapes[key][0], source, (models or {}).get(key))
    return built
