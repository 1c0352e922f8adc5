"""Generate the config reference, the stack-file JSON Schema and Pulumi.yaml's `config:` block from the models.

    python -m tools.config_reference          # (re)write all three
    python -m tools.config_reference --check  # exit 1 naming each stale file (CI, tests)

The pydantic models in `config/` are the one source: every key's YAML name (alias), type, default,
bounds and description. Edit the models; never the generated files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from aks_gpu_platform.config.field_paths import bounds_of, model_class, strip_annotated, union_members
from aks_gpu_platform.config.fleet.section import FleetConfig
from aks_gpu_platform.config.loader import PROJECT
from aks_gpu_platform.config.platform import PlatformConfig

from . import REPO_ROOT

REFERENCE = REPO_ROOT / "docs" / "config-reference.md"
SCHEMA = REPO_ROOT / "aks_gpu_platform" / "stack-config.schema.json"
PROJECT_FILE = REPO_ROOT / "Pulumi.yaml"
REGENERATE = "python -m tools.config_reference"
SCHEMA_ID = "https://aks-gpu-platform.invalid/schemas/stack-config.schema.json"
SECURE = "Secure"

# --- walking the models ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One model at the config path where it appears (`upgrade.autoUpgradeWindow`, `gpuPools[]`)."""

    path: str
    model: type[BaseModel]


def _key(name: str, info: FieldInfo) -> str:
    return info.alias or name


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _container_suffix(annotation: Any) -> str:
    """`[]` for lists of models, `.<name>` for maps of models: how a nested model's path reads."""
    for member in union_members(strip_annotated(annotation)[0]):
        bare = strip_annotated(member)[0]
        if get_origin(bare) in (list, tuple):
            return "[]"
        if get_origin(bare) is dict:
            return ".<name>"
    return ""


# What a stack file holds: the platform's keys, and for a fleet stack the `fleet` section (the other keys are then
# the platform every member starts from; config/fleet/section.py).
StackConfig = create_model(
    "StackConfig",
    __base__=PlatformConfig,
    __doc__=PlatformConfig.__doc__,
    fleet=(
        FleetConfig | None,
        Field(
            default=None,
            description="A fleet of member platforms across regions, a MultiKueue manager and Fleet Manager "
            "(docs/fleet.md); the other keys are then the platform each member starts from",
        ),
    ),
)


def sections(model: type[BaseModel] = StackConfig, path: str = "") -> Iterator[Section]:
    """Every model section, depth first, in field order."""
    yield Section(path, model)
    for name, info in model.model_fields.items():
        nested = model_class(info.annotation) or _item_model(info.annotation)
        if nested is not None:
            yield from sections(nested, _join(path, _key(name, info)) + _container_suffix(info.annotation))


def _item_model(annotation: Any) -> type[BaseModel] | None:
    for member in union_members(strip_annotated(annotation)[0]):
        for arg in get_args(strip_annotated(member)[0]):
            found = model_class(arg)
            if found is not None:
                return found
    return None


def anchor(path: str) -> str:
    """GitHub's heading anchor for `## \\`path\\``."""
    return re.sub(r"[^a-z0-9 _-]", "", path.lower()).replace(" ", "-")


# --- rendering one field -----------------------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


# Validated string types (config/types.py, config/monitoring/section.py) by the function that checks them.
_CHECKED_TEXT = {
    "_ipv4_network": "IPv4 CIDR",
    "_ipv4_address": "IPv4 address",
    "_resource_id": "Azure resource ID",
    "_email": "email address",
}


def type_text(annotation: Any, link: Callable[[type[BaseModel]], str], metadata: tuple[Any, ...] = ()) -> str:
    bare, _ = strip_annotated(annotation)
    members = union_members(bare)
    optional = get_origin(bare) in (Union, UnionType) and type(None) in get_args(bare)
    texts = [_one_type(m, link, metadata) for m in members]
    text = " or ".join(dict.fromkeys(texts))
    return f"{text} or null" if optional else text


def _one_type(annotation: Any, link: Callable[[type[BaseModel]], str], metadata: tuple[Any, ...] = ()) -> str:
    bare, own = strip_annotated(annotation)
    for item in (*metadata, *own):
        checked = _CHECKED_TEXT.get(getattr(getattr(item, "func", None), "__name__", ""))
        if checked:
            return checked
    if get_origin(bare) is Literal:
        return "one of " + ", ".join(f"`{v}`" for v in get_args(bare))
    found = model_class(bare)
    if found is not None:
        return f"object ({link(found)})"
    origin, args = get_origin(bare), get_args(bare)
    if origin in (list, tuple) and args:
        return f"list of {_one_type(args[0], link)}"
    if origin is dict and len(args) == 2:
        return f"map of {_one_type(args[0], link)} to {_one_type(args[1], link)}"
    if getattr(bare, "__name__", "") == "date":
        return "date (YYYY-MM-DD)"
    return _SCALARS.get(bare, getattr(bare, "__name__", str(bare)))


def _yaml_value(value: Any) -> str:
    return json.dumps(value, default=str)


def default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "**required**"
    value = info.get_default(call_default_factory=True, validated_data={})
    if isinstance(value, BaseModel):
        own = value.model_dump(by_alias=True, exclude_defaults=True, mode="json")
        return "the section's defaults" + (f", except {_yaml_value(own)}" if own else "")
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return _yaml_value([v.model_dump(by_alias=True, exclude_defaults=True, mode="json") for v in value])
    if value is None:
        return "unset"
    return f"`{_yaml_value(value)}`"


def allowed_text(info: FieldInfo) -> str:
    """Bounds, lengths and patterns declared on the field or its (item) type."""
    metadata = list(info.metadata)
    for member in union_members(strip_annotated(info.annotation)[0]):
        bare, extra = strip_annotated(member)
        metadata += extra
        for arg in get_args(bare):
            metadata += strip_annotated(arg)[1]
    bounds = bounds_of(metadata)
    parts: list[str] = []
    low = bounds.ge if bounds.ge is not None else bounds.gt
    high = bounds.le if bounds.le is not None else bounds.lt
    if low is not None or high is not None:
        lower = "" if low is None else (f"{low:g}" + (" (exclusive)" if bounds.gt is not None else ""))
        upper = "" if high is None else (f"{high:g}" + (" (exclusive)" if bounds.lt is not None else ""))
        parts.append(f"{lower} to {upper}" if lower and upper else (f">= {lower}" if lower else f"<= {upper}"))
    if bounds.min_length is not None or bounds.max_length is not None:
        unit = "characters" if _is_text_field(info.annotation) else "item(s)"
        if bounds.min_length is not None and bounds.max_length is not None:
            parts.append(f"{bounds.min_length}-{bounds.max_length} {unit}")
        elif bounds.min_length is not None:
            parts.append(f"at least {bounds.min_length} {unit}")
        else:
            parts.append(f"at most {bounds.max_length} {unit}")
    if bounds.pattern:
        parts.append(f"`{bounds.pattern}`")
    return "; ".join(parts)


def _is_text_field(annotation: Any) -> bool:
    return any(strip_annotated(m)[0] is str for m in union_members(strip_annotated(annotation)[0]))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --- the Markdown reference --------------------------------------------------------------------------------------


REFERENCE_INTRO: tuple[str, ...] = (
    "# Config reference",
    "",
    f"<!-- Generated from the models in config/ by `{REGENERATE}`; edit the models, not this file. -->",
    "",
    f"Every key lives under the `{PROJECT}:` namespace of `Pulumi.<stack>.yaml` (e.g.",
    f"`{PROJECT}:cluster:` holds the `cluster` section). Keys are camelCase; unknown keys are errors",
    "(with the closest known key suggested). Besides the per-field rules below, rules that span fields",
    "(subnets that must not overlap, quotas that must fit their pool, the Kubernetes minor AKS still",
    "creates) run before any resource is registered and name the field they reject.",
    "",
    "Editors that use the YAML language server validate stack files as you type against",
    "[`aks_gpu_platform/stack-config.schema.json`](../aks_gpu_platform/stack-config.schema.json), generated from",
    "the same models. Values may be `secure:` secrets (`pulumi config set --secret [--path]`).",
    "",
    "Columns: **type** (YAML), **default** (or **required**), **allowed** (bounds, lengths, patterns;",
    "enumerations are in the type), and what the key does (bounds say why they exist).",
    "",
    "Sections:",
    "",
)


def _section_table(section: Section, link: Callable[[type[BaseModel]], str]) -> list[str]:
    """A section's heading, the first paragraph of its model's docstring and one row per key."""
    title = f"`{section.path}`" if section.path else "Top-level keys"
    out = [f"## {title}", ""]
    doc = (section.model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    if doc:
        out += [doc, ""]
    out += ["| key | type | default | allowed | description |", "| --- | --- | --- | --- | --- |"]
    for name, info in section.model.model_fields.items():
        key = _key(name, info)
        shown = f"{PROJECT}:{key}" if not section.path else key
        cells = (
            f"`{shown}`",
            type_text(info.annotation, link, tuple(info.metadata)),
            default_text(info),
            allowed_text(info),
            info.description or "",
        )
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out.append("")
    return out


def render_reference() -> str:
    found = list(sections())
    first_path = {}
    for section in found:
        first_path.setdefault(section.model, section.path)

    def link(model: type[BaseModel]) -> str:
        path = first_path[model]
        return f"[{path}](#{anchor(path)})"

    out: list[str] = list(REFERENCE_INTRO)
    for section in found:
        depth = section.path.count(".")
        title = section.path or "top-level keys"
        out.append(f"{'  ' * depth}- [{title}](#{anchor(section.path or 'top-level keys')})")
    out.append("")
    for section in found:
        out += _section_table(section, link)
    return "\n".join(out)


# --- the JSON Schema of a stack file -----------------------------------------------------------------------------


def _is_text(schema: dict[str, Any] | bool, defs: dict[str, Any]) -> bool:
    """A string value (or null): where secrets go. Numbers and switches stay plain, so editors keep exact messages."""
    if isinstance(schema, bool):  # `additionalProperties: true` (free-form maps such as a member's overrides)
        return False
    if "$ref" in schema:
        return _is_text(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        return all(s.get("type") == "null" or _is_text(s, defs) for s in schema["anyOf"])
    return schema.get("type") == "string"


def _or_secure(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema, or a `secure:` ciphertext (what `pulumi config set --secret [--path]` writes there)."""
    description = schema.get("description")
    wrapped: dict[str, Any] = {"anyOf": [schema, {"$ref": f"#/$defs/{SECURE}"}]}
    if description:
        wrapped["description"] = description
    return wrapped


def _allow_secrets(schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """Let every text value (and text list item or map value) of every object be a `secure:` value."""
    for name, prop in list(schema.get("properties", {}).items()):
        if _is_text(prop, defs):
            schema["properties"][name] = _or_secure(prop)
        elif prop.get("type") == "array" and _is_text(prop.get("items", {}), defs):
            prop["items"] = _or_secure(prop["items"])
        elif prop.get("type") == "object" and _is_text(prop.get("additionalProperties") or {}, defs):
            prop["additionalProperties"] = _or_secure(prop["additionalProperties"])


def render_schema() -> dict[str, Any]:
    platform = StackConfig.model_json_schema(by_alias=True)
    defs: dict[str, Any] = platform.pop("$defs")
    for model_schema in defs.values():
        _allow_secrets(model_schema, defs)
    keys = {f"{PROJECT}:{key}": prop for key, prop in platform["properties"].items()}
    defs[SECURE] = {
        "description": "A secret encrypted by the stack's secrets provider (pulumi config set --secret).",
        "type": "object",
        "properties": {"secure": {"type": "string"}},
        "required": ["secure"],
        "additionalProperties": False,
    }
    config_schema: dict[str, Any] = {
        "type": "object",
        "description": f"Stack config; the platform's keys are {PROJECT}:<key>, other providers' keys pass through.",
        "properties": {key: _or_secure(prop) if _is_text(prop, defs) else prop for key, prop in keys.items()},
        "required": [f"{PROJECT}:{key}" for key in platform.get("required", [])],
        # Unknown platform keys are errors (as in the program); azure-native:location and the like pass.
        "propertyNames": {"anyOf": [{"enum": list(keys)}, {"not": {"pattern": f"^{PROJECT}:"}}]},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"{PROJECT} stack file (Pulumi.<stack>.yaml)",
        "description": f"Generated from config/ by `{REGENERATE}`; edit the models, not this file.",
        "type": "object",
        "properties": {
            "config": config_schema,
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {"description": "Pulumi ESC environments the stack imports"},
        },
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(render_schema(), indent=2, ensure_ascii=False) + "\n"


# --- Pulumi.yaml's config: block --------------------------------------------------------------------------------

_CONFIG_BLOCK = re.compile(r"^config:\n", re.M)
CONFIG_HEADER = (
    f"# Generated from the models in config/ by `{REGENERATE}`; edit the models, not this block.\n"
    "# Keys the models give defaults to default to {} here, so the Pulumi CLI does not require them in every stack.\n"
)


def _project_type(info: FieldInfo) -> dict[str, Any]:
    bare = strip_annotated(info.annotation)[0]
    origin = get_origin(bare)
    if model_class(bare) is not None or origin is dict:
        return {"type": "object"}
    if origin in (list, tuple):
        item = strip_annotated(get_args(bare)[0])[0]
        item_type = "object" if model_class(item) is not None else _SCALARS.get(item, "string")
        # The CLI rejects an array without `items` (sdk/go/common/workspace/project.go, Project.Validate).
        return {"type": "array", "items": {"type": item_type}}
    if bare is bool:
        return {"type": "boolean"}
    if bare is int:
        return {"type": "integer"}
    return {"type": "string"}


def _project_default(info: FieldInfo, declared: dict[str, Any]) -> Any:
    if declared["type"] == "object":
        return {}
    if declared["type"] == "array":
        return []
    value = info.get_default(call_default_factory=True, validated_data={})
    if value is None and declared["type"] == "string":
        # An optional text key (a secret set with `pulumi config set --secret`): "" means unset, and the CLI then
        # does not require the key in every stack.
        return ""
    return value if value is not None and value is not PydanticUndefined else None


def project_config() -> dict[str, Any]:
    """Pulumi.yaml `config:` entries: one per top-level key, typed, described, defaulted when optional."""
    entries: dict[str, Any] = {}
    for name, info in StackConfig.model_fields.items():
        key = _key(name, info)
        declared = _project_type(info)
        nested = model_class(info.annotation) or _item_model(info.annotation)
        keys = f" Keys: {', '.join(_key(n, i) for n, i in nested.model_fields.items())}." if nested else ""
        section = anchor(key) if nested else "top-level-keys"
        description = f"{(info.description or '').rstrip('.')}.{keys} See docs/config-reference.md#{section}."
        entry: dict[str, Any] = {**declared, "description": description}
        if not info.is_required():
            default = _project_default(info, declared)
            if default is not None:
                entry["default"] = default
        entries[f"{PROJECT}:{key}"] = entry
    return entries


def render_project_file(current: str) -> str:
    match = _CONFIG_BLOCK.search(current)
    head = current[: match.start()] if match else current.rstrip("\n") + "\n"
    head = head.replace(CONFIG_HEADER, "")
    if match:
        tail = current[match.end() :]
        later = [line for line in tail.splitlines() if line and not line[0].isspace() and not line.startswith("#")]
        if later:
            raise SystemExit(f"Pulumi.yaml: move {later[0]!r} above `config:`; the generator owns the config block")
    block = yaml.safe_dump({"config": project_config()}, sort_keys=False, width=10_000, allow_unicode=True)
    return head + CONFIG_HEADER + block


# --- writing and checking ----------------------------------------------------------------------------------------


def outputs() -> dict[Path, str]:
    return {
        REFERENCE: render_reference(),
        SCHEMA: schema_text(),
        PROJECT_FILE: render_project_file(PROJECT_FILE.read_text()),
    }


def stale_files() -> list[Path]:
    return [path for path, text in outputs().items() if not path.is_file() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is out of date")
    options = parser.parse_args(argv)
    if options.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(REPO_ROOT)} (run `{REGENERATE}`)", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
