"""The generated config reference, stack-file JSON Schema and Pulumi.yaml config block are current and true.

Pulumi CLI rules checked below are read from pulumi/pulumi (mirror at 1b59498, 2026-08-21):
sdk/go/common/workspace/project.go (`Project.Validate`, `ValidateConfigValue`) and
pkg/workspace/config.go (`mergeConfig`, `validateStackConfigValue`).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import yaml

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.loader import PROJECT, settings_from_runtime_config
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.testing.stack_files import known_stacks, load_stack_file, to_runtime_config
from tests.conftest import settings_of
from tools import REPO_ROOT, config_reference

STACK_FILES = [s for s in known_stacks(REPO_ROOT) if not s.startswith("e2e-")]
SCHEMA = json.loads(config_reference.SCHEMA.read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
PROJECT_CONFIG: dict[str, dict[str, Any]] = yaml.safe_load(config_reference.PROJECT_FILE.read_text())["config"]


def test_the_generated_files_are_current() -> None:
    stale = [str(p.relative_to(REPO_ROOT)) for p in config_reference.stale_files()]
    assert not stale, (
        f"{stale} no longer match the models in config/; run `{config_reference.REGENERATE}` (or `make docs`) "
        "and commit the result"
    )


def test_the_stack_files_are_the_ones_the_checks_cover() -> None:
    assert {"dev", "prod", "e2e"} <= set(STACK_FILES), f"stack files found: {STACK_FILES}"


# --- the JSON Schema -------------------------------------------------------------------------------------------


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("stack", STACK_FILES)
def test_each_stack_file_validates_against_the_schema(stack: str) -> None:
    document = yaml.safe_load((REPO_ROOT / f"Pulumi.{stack}.yaml").read_text())
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(document)]
    assert not errors, f"Pulumi.{stack}.yaml must pass the schema editors check it with: {errors}"


def _schema_errors(change: dict[str, Any]) -> list[str]:
    document = {"config": copy.deepcopy(load_stack_file("dev", REPO_ROOT))}
    for path, value in change.items():
        node: Any = document["config"]
        *parents, last = path.split("/")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(document)]


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"aks-gpu-platform:upgrade/autoUpgradeWindow/durationHours": 2}, "upgrade/autoUpgradeWindow/durationHours"),
        ({"aks-gpu-platform:cluster/kubernetesVersion": 1.3}, "cluster/kubernetesVersion"),
        ({"aks-gpu-platform:cpuPool/vmsize": "Standard_D4ds_v5"}, "cpuPool"),
        ({"aks-gpu-platform:gpuPool": []}, ""),
        ({"aks-gpu-platform:gpuPools/0/zones": ["4"]}, "gpuPools/0/zones/0"),
    ],
    ids=["window under 4 h", "unquoted version", "misspelt key", "unknown top-level key", "zone 4"],
)
def test_the_schema_flags_what_the_program_rejects(change: dict[str, Any], where: str) -> None:
    errors = _schema_errors(change)
    path = f"config/{PROJECT}:{where}" if where else "config"
    assert [e for e in errors if e.startswith(f"{path}: ")], (
        f"an editor must flag {path} while the user types: {errors}"
    )


def test_the_schema_lets_other_providers_keys_and_nested_secrets_through() -> None:
    assert not _schema_errors(
        {
            "azure-native:subscriptionId": "00000000-0000-4000-8000-000000000000",
            "aks-gpu-platform:monitoring/alerts/emailReceivers/0/email": {"secure": "v1:Zm9v"},
            "aks-gpu-platform:cluster/entraId/adminGroupObjectIds/0": {"secure": "v1:YmFy"},
        }
    ), "`pulumi config set --secret --path` values and other namespaces are valid stack files"


# --- the Markdown reference ------------------------------------------------------------------------------------


def _reference_rows() -> dict[str, set[str]]:
    """Section path -> the keys its table lists."""
    rows: dict[str, set[str]] = {}
    section = ""
    for line in config_reference.REFERENCE.read_text().splitlines():
        heading = re.match(r"^## `?(.+?)`?$", line)
        if heading:
            section = "" if heading[1] == "Top-level keys" else heading[1]
            rows[section] = set()
        row = re.match(r"^\| `([^`]+)` \|", line)
        if row:
            rows[section].add(row[1].removeprefix(f"{PROJECT}:"))
    return rows


def _key_paths(value: Any, sections: set[str], path: str = "") -> Iterator[tuple[str, str]]:
    """(section path, key) for every key of a stack's settings that a model declares; list items read as `[]`.

    Free-form maps (tags, labels, selectors) have no section: their keys are the user's own.
    """
    if isinstance(value, dict) and path in sections:
        for key, item in value.items():
            yield path, str(key)
            yield from _key_paths(item, sections, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _key_paths(item, sections, f"{path}[]")


@pytest.mark.parametrize("stack", STACK_FILES)
def test_every_key_a_stack_file_uses_is_in_the_reference(stack: str) -> None:
    rows = _reference_rows()
    settings = settings_of(load_stack_file(stack, REPO_ROOT))
    used = list(_key_paths(settings, set(rows)))
    assert len(used) > 50, "the walk must reach nested keys"
    missing = [f"{section}.{key}" for section, key in used if key not in rows.get(section, set())]
    assert not missing, f"keys Pulumi.{stack}.yaml uses that the reference does not document: {missing}"


def test_the_reference_gives_type_default_bounds_and_reason() -> None:
    text = config_reference.REFERENCE.read_text()
    assert (
        "| `durationHours` | integer | `6` | 4 to 24 | AKS requires maintenance windows of 4 to 24 hours |" in text
    ), "a bounded key shows its type, default, range and why"
    assert "| `aks-gpu-platform:gpuPools` | list of object ([gpuPools[]](#gpupools)) | **required** |" in text
    assert '| `vmSize` | string | `"Standard_D4ds_v5"` |' in text, "defaults are shown as YAML values"


# --- Pulumi.yaml, as the Pulumi CLI reads it -------------------------------------------------------------------


def _cli_accepts(declared: dict[str, Any], value: Any) -> bool:
    """ValidateConfigValue: the CLI's check of a stack value against the project's declared type."""
    kind = declared["type"]
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value == math.trunc(value))
    if kind == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    if kind == "object":
        return isinstance(value, dict)
    items = declared.get("items")
    return isinstance(value, list) and items is not None and all(_cli_accepts(items, v) for v in value)


def test_every_top_level_key_is_declared_and_described() -> None:
    fields = {f"{PROJECT}:{info.alias or name}" for name, info in config_reference.StackConfig.model_fields.items()}
    assert set(PROJECT_CONFIG) == fields, "Pulumi.yaml declares exactly the stack file's top-level keys"
    for key, declared in PROJECT_CONFIG.items():
        assert declared.get("description"), f"{key}: `pulumi config` shows this description"


def test_project_config_passes_the_cli_s_own_project_validation() -> None:
    for key, declared in PROJECT_CONFIG.items():
        assert key.startswith(f"{PROJECT}:"), f"{key}: namespaced keys may declare a type"
        if declared["type"] == "array":
            assert "items" in declared, f"{key}: the CLI refuses to load a project whose array config lacks items"
        if "default" in declared:
            assert _cli_accepts(declared, declared["default"]), f"{key}: the CLI checks defaults against the type"


@pytest.mark.parametrize("stack", STACK_FILES)
def test_the_cli_finds_every_required_key_and_accepts_each_value(stack: str) -> None:
    config = load_stack_file(stack, REPO_ROOT)
    missing = [k for k, declared in PROJECT_CONFIG.items() if k not in config and "default" not in declared]
    assert not missing, f"`pulumi preview` would stop: Stack '{stack}' is missing configuration values {missing}"
    wrong = [k for k, declared in PROJECT_CONFIG.items() if k in config and not _cli_accepts(declared, config[k])]
    assert not wrong, f"`pulumi preview` would stop: Pulumi.{stack}.yaml values of the wrong type: {wrong}"


@pytest.mark.parametrize("key", [k for k, d in PROJECT_CONFIG.items() if "default" in d])
def test_a_project_default_means_the_same_as_leaving_the_key_out(key: str) -> None:
    config = load_stack_file("dev", REPO_ROOT)
    without = {k: v for k, v in config.items() if k != key}
    with_default = {**without, key: PROJECT_CONFIG[key]["default"]}
    # Leaving a section out can invalidate another that refers to it (inference.models[].teams names training
    # teams): then the default must be refused with the same problems.
    loaded = [_outcome(settings_from_runtime_config(to_runtime_config(c, PROJECT)[0])) for c in (without, with_default)]
    assert loaded[0] == loaded[1], f"{key}: the CLI's default must not change what the program builds"


def _outcome(settings: dict[str, Any]) -> PlatformConfig | list[str]:
    try:
        return load_platform_config(settings)
    except ConfigError as err:
        return err.problems


# --- editors find the schema -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACK_FILES)
def test_each_stack_file_names_the_schema_for_the_yaml_language_server(stack: str) -> None:
    first = (REPO_ROOT / f"Pulumi.{stack}.yaml").read_text().splitlines()[0]
    match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert match, f"Pulumi.{stack}.yaml must start with the schema modeline, got {first!r}"
    assert (REPO_ROOT / match[1]).resolve() == config_reference.SCHEMA, "the modeline must point at the schema"


def test_vscode_maps_the_schema_onto_stack_files() -> None:
    settings = json.loads((REPO_ROOT / ".vscode" / "settings.json").read_text())
    mapping = settings["yaml.schemas"]
    (path,) = [p for p, globs in mapping.items() if "Pulumi.*.yaml" in globs]
    assert (REPO_ROOT / path).resolve() == config_reference.SCHEMA, "the mapping survives `pulumi config set`"
