"""Checks over a recording: rendered objects against the Kubernetes OpenAPI schema, and the platform's policies."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from aks_gpu_platform.policy_model import Policy, Resource, StackFacts, Violation
from aks_gpu_platform.policy_rules import evaluate

from .recording import RecordedResource, Recording

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

INSTALL_HINT = "pip install 'aks-gpu-platform[testing]'"


@dataclass(frozen=True)
class SchemaVerdict:
    """One rendered Kubernetes object judged against the upstream schema of a Kubernetes version."""

    urn: str
    kind: str
    namespace: str
    name: str
    status: str
    """`valid`, `invalid`, or `custom-resource` (no upstream schema: a CRD's object)."""
    detail: str = ""
    """For `invalid`: where in the object and what is wrong."""


def kubernetes_object(resource: RecordedResource) -> dict[str, Any]:
    """The manifest the program asked for, without Pulumi's bookkeeping fields."""
    return {k: v for k, v in resource.inputs.items() if not k.startswith("__")}


def _kubernetes_validate() -> Any:
    try:
        import kubernetes_validate
    except ModuleNotFoundError as missing:
        raise ModuleNotFoundError(
            f"schema checks need kubernetes-validate, the upstream Kubernetes schemas: {INSTALL_HINT}"
        ) from missing
    return kubernetes_validate


# kubernetes-validate 1.37.0 (utils.validate) reads the 1.6 MB definitions file again for every object; a plan
# validates dozens, so the schemas are read once per process here, with the same lookup: the newest schema set not
# newer than the version asked for, strict (no unknown fields), one file per kind and API group version.
_API_GROUP = re.compile(r"^([^./]*)(?:\.[^/]*)?/")


@cache
def _schema_folder(version: str) -> str:
    """`kubernetes-json-schema/v<release>-local-strict`: the newest schema set not newer than `version`."""
    utils = _kubernetes_validate().utils
    wanted = utils.major_minor(version.removeprefix("v"))
    if wanted > utils.latest_version():
        raise utils.VersionNotSupportedError(version=wanted)
    release = [v for v in utils.all_versions() if utils.major_minor(v) <= wanted][-1]
    return f"kubernetes-json-schema/v{release}-local-strict"


@cache
def _definitions(folder: str, version: str) -> Any:
    from referencing import Registry, Resource

    contents = _kubernetes_validate().utils.schema_contents(f"{folder}/_definitions.json", version)
    return Resource.from_contents(contents) @ Registry()  # pyright: ignore[reportUnknownMemberType]


@cache
def _validator(version: str, kind: str, api_version: str) -> Validator | None:
    """The strict schema of `kind` in `api_version` for Kubernetes `version`; None when upstream has none (a CRD)."""
    from jsonschema.validators import Draft202012Validator
    from referencing import Resource

    folder = _schema_folder(version)
    group_version = _API_GROUP.sub(r"\1-", api_version)  # rbac.authorization.k8s.io/v1 -> rbac-v1
    name = f"{folder}/{kind.lower()}-{group_version}.json"
    try:
        schema = _kubernetes_validate().utils.schema_contents(name, version)
    except FileNotFoundError:
        return None
    registry = Resource.from_contents(schema) @ _definitions(folder, version)  # pyright: ignore[reportUnknownMemberType]
    return Draft202012Validator(schema, registry=registry)


def validate_object(manifest: dict[str, Any], version: str) -> tuple[str, str]:
    """(status, detail) of one manifest against Kubernetes `version`'s OpenAPI schema (strict: no unknown fields)."""
    _kubernetes_validate()  # says what to install where the extra is missing, whatever was validated before
    from jsonschema import ValidationError

    validator = _validator(version, str(manifest.get("kind")), str(manifest.get("apiVersion")))
    if validator is None:
        return "custom-resource", "no upstream schema (custom resource; checked by the component tests)"
    try:
        validator.validate(manifest)
    except ValidationError as err:
        where = "/".join(str(p) for p in err.path) or "(root)"
        return "invalid", f"{where}: {err.message}"
    return "valid", ""


def schema_verdicts(recording: Recording, kubernetes_version: str) -> list[SchemaVerdict]:
    """Every plain Kubernetes object the program created, validated against the upstream OpenAPI schema.

    `kubernetes_version` is the cluster's minor (`"1.33"`): kubernetes-validate carries the schemas
    of each release. Objects come in URN order; Helm releases are not rendered here (their charts
    render on the cluster).
    """
    verdicts: list[SchemaVerdict] = []
    for resource in sorted(recording.kubernetes_objects(), key=lambda r: r.urn):
        manifest = kubernetes_object(resource)
        metadata = manifest.get("metadata") or {}
        status, detail = validate_object(manifest, kubernetes_version)
        verdicts.append(
            SchemaVerdict(
                urn=resource.urn,
                kind=str(manifest.get("kind", resource.type.rsplit(":", 1)[-1])),
                namespace=str(metadata.get("namespace", "")),
                name=str(metadata.get("name", resource.name)),
                status=status,
                detail=detail,
            )
        )
    return verdicts


def policy_inputs(recording: Recording, environment: str) -> tuple[list[Resource], StackFacts]:
    """The recorded resources and outputs in the shape the policy rules (and CrossGuard) see."""
    resources = [
        Resource(
            type=r.type,
            name=r.name,
            inputs=r.inputs,
            protect=r.protect,
            ignore_changes=tuple(r.ignore_changes),
            urn=r.urn,
        )
        for r in recording.in_urn_order()
        if r.custom
    ]
    facts = StackFacts(
        environment=environment,
        outputs=dict(recording.stack_outputs),
        secret_outputs=frozenset(recording.secret_outputs),
    )
    return resources, facts


def policy_verdicts(recording: Recording, environment: str) -> list[tuple[Policy, list[Violation]]]:
    """Each of the platform's policies with what it found, as `pulumi preview --policy-pack policy` judges.

    `environment` is the stack's (`prod` protects stateful resources); a policy with `mandatory`
    set blocks a deployment when its list is not empty.
    """
    return evaluate(*policy_inputs(recording, environment))
