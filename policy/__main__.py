"""CrossGuard entry point: the rules of aks_gpu_platform/policy_rules.py as mandatory Pulumi policies.

Pulumi runs this file from policy/ with policy/venv (pulumi-policy pins its own protobuf, so
it cannot share the project's virtualenv); the repository root goes on sys.path so the pack
evaluates exactly the functions `make plan` and the tests use.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from aks_gpu_platform import policy_model
from aks_gpu_platform import policy_rules as rules

# Stacks tag every Azure resource with their environment; untagged resources are judged as prod.
DEFAULT_ENVIRONMENT = "prod"


def _plain(value: Any) -> Any:
    """Policy props are read-only proxies; the rules take plain dicts and lists."""
    if hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _environment(props: Any) -> str:
    tags = props.get("tags") if hasattr(props, "get") else None
    return str((tags or {}).get("environment") or DEFAULT_ENVIRONMENT)


def _resource(type_: str, name: str, urn: str, props: Any, opts: Any) -> policy_model.Resource:
    return policy_model.Resource(
        type=type_,
        name=name,
        inputs=_plain(props),
        protect=bool(opts.protect),
        ignore_changes=tuple(opts.ignore_changes or ()),
        urn=urn,
    )


def _resource_policy(policy: policy_model.Policy) -> ResourceValidationPolicy:
    check = policy.resource_check
    assert check is not None

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        resource = _resource(args.resource_type, args.name, args.urn, args.props, args.opts)
        for message in check(resource, policy_model.StackFacts(environment=_environment(args.props))):
            report_violation(message, None)

    return ResourceValidationPolicy(
        name=policy.name,
        description=policy.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
    )


def _stack_policy(policy: policy_model.Policy) -> StackValidationPolicy:
    check = policy.stack_check
    assert check is not None

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [_resource(r.resource_type, r.name, r.urn, r.props, r.opts) for r in args.resources]
        environment = next(
            (_environment(r.inputs) for r in resources if (r.inputs.get("tags") or {}).get("environment")),
            DEFAULT_ENVIRONMENT,
        )
        facts = policy_model.StackFacts(environment=environment)
        by_name = {r.name: r.urn for r in resources}
        for violation in check([r for r in resources if r.type != policy_model.STACK], facts):
            report_violation(f"{violation.resource}: {violation.message}", by_name.get(violation.resource))

    return StackValidationPolicy(
        name=policy.name,
        description=policy.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
    )


def policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    """Every rule, each as the CrossGuard policy of its kind (CLI-only exclusions listed below)."""
    wrapped: list[ResourceValidationPolicy | StackValidationPolicy] = []
    for policy in rules.POLICIES:
        if policy.name in rules.OFFLINE_ONLY:
            continue
        wrapped.append(_resource_policy(policy) if policy.resource_check else _stack_policy(policy))
    return wrapped


PolicyPack(name="aks-gpu-platform", policies=policies(), enforcement_level=EnforcementLevel.MANDATORY)
