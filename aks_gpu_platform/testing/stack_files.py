"""Read a `Pulumi.<stack>.yaml` file and turn it into the config map the Pulumi CLI hands the program."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, cast

import yaml
from pydantic import TypeAdapter, ValidationError

from aks_gpu_platform.config.errors import ConfigError, format_path
from aks_gpu_platform.config.field_paths import field_at
from aks_gpu_platform.config.loader import PROJECT
from aks_gpu_platform.config.platform import PlatformConfig

OFFLINE_SECRET = "offline-placeholder-secret"
# Stand-ins for a secret the offline plan cannot decrypt, tried in order until one fits the field's
# type. Each is a placeholder config/placeholders.py recognises, so none can pass for a real value.
OFFLINE_SECRET_CANDIDATES: tuple[str, ...] = (
    OFFLINE_SECRET,
    "offlinesecret",
    "00000000-0000-4000-8000-000000000000",
    "offline-secret@example.com",
    "192.0.2.1",
    "192.0.2.0/24",
    "https://offline-secret.example.com",
    "/subscriptions/00000000-0000-4000-8000-000000000000/resourceGroups/offline-secret/providers/"
    "Microsoft.Offline/secrets/placeholder",
)

# What PyYAML's terse messages mean in a stack file, and what to do about them.
_YAML_HINTS: tuple[tuple[str, str], ...] = (
    ("expected <block end>", "this line is indented to match no key above it: indent it exactly like its siblings"),
    (
        "mapping values are not allowed here",
        "a key is indented deeper than its siblings, or a value containing ': ' needs quotes",
    ),
    ("found character '\\t'", "YAML indents with spaces, not tabs"),
    ("found unexpected end of stream", "a quote is opened and never closed"),
    ("could not find expected ':'", "a key lacks its ':' or a multi-line value is not indented under its key"),
    ("found duplicate anchor", "an anchor (&name) is defined twice"),
)


def load_stack_file(stack: str, root: Path) -> dict[str, Any]:
    """The `config:` map of `Pulumi.<stack>.yaml` in the project folder `root`."""
    path = root / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no stack file {path.name}; known stacks: {', '.join(known_stacks(root))}")
    return read_stack_yaml(path)


def _shown(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    absolute = path.resolve()
    return str(absolute.relative_to(Path.cwd())) if absolute.is_relative_to(Path.cwd()) else str(absolute)


def yaml_problem(path: Path, text: str, err: yaml.YAMLError) -> str:
    """`file:line:column: what is wrong and what to do`, with the offending line, from a PyYAML error."""
    if not isinstance(err, yaml.MarkedYAMLError) or err.problem_mark is None:
        return f"{_shown(path)}: not valid YAML ({err})"
    mark = err.problem_mark
    line, column = mark.line + 1, mark.column + 1
    problem = err.problem or "not valid YAML"
    hint = next((h for needle, h in _YAML_HINTS if needle in problem), None)
    context = ""
    if err.context and err.context_mark is not None:
        context = f", {err.context} that starts at line {err.context_mark.line + 1}"
    lines = text.splitlines()
    shown = f"\n      {line} | {lines[mark.line]}" if mark.line < len(lines) else ""
    said = f"{hint} (YAML: {problem}{context})" if hint else f"{problem}{context}"
    return f"{_shown(path)}:{line}:{column}: {said}{shown}"


def read_stack_yaml(path: Path) -> dict[str, Any]:
    """The `config:` map of a stack file; a syntax error is a ConfigError naming file, line and column."""
    text = path.read_text()
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError([yaml_problem(path, text, err)], source=path.name) from None
    if not isinstance(document, dict) or not isinstance(document.get("config") or {}, dict):
        raise ConfigError(
            [f"{_shown(path)}: a stack file is a mapping with a `config:` mapping of `project:key: value` entries"],
            source=path.name,
        )
    return dict(document.get("config") or {})


def known_stacks(root: Path) -> list[str]:
    """The stacks whose `Pulumi.<stack>.yaml` sits in the project folder `root`."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def _is_secure(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def secure_values(value: Any, loc: tuple[int | str, ...] = ()) -> Iterator[tuple[int | str, ...]]:
    """Paths of every `secure:` value inside `value`, as `pulumi config set --secret [--path]` writes them."""
    if _is_secure(value):
        yield loc
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from secure_values(item, (*loc, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from secure_values(item, (*loc, i))


def secret_paths(config: dict[str, Any], project: str = PROJECT) -> list[str]:
    """Config paths (`monitoring.grafana.x`) holding an encrypted value, for the plan to name."""
    prefix = f"{project}:"
    return [
        format_path((key.removeprefix(prefix), *loc)) if key.startswith(prefix) else format_path((key, *loc))
        for key, value in config.items()
        for loc in secure_values(value)
    ]


def offline_secret(loc: tuple[int | str, ...]) -> str:
    """A placeholder for the encrypted value at platform path `loc` that the field's type accepts, when one does."""
    found = field_at(PlatformConfig, loc)
    if found is None:
        return OFFLINE_SECRET
    metadata = found.extra_metadata if found.annotation is not found.info.annotation else tuple(found.info.metadata)
    # Annotated rebuilt at runtime: the field's constraints (pattern, validators) must apply to the candidate.
    typed: Any = cast(Any, Annotated)[(found.annotation, *metadata)] if metadata else found.annotation
    adapter: TypeAdapter[Any] = TypeAdapter(typed)
    for candidate in OFFLINE_SECRET_CANDIDATES:
        try:
            adapter.validate_python(candidate)
        except ValidationError:
            continue
        return candidate
    return OFFLINE_SECRET


def _without_secrets(value: Any, loc: tuple[int | str, ...] | None) -> Any:
    """`value` with each secure value replaced; `loc` is its platform config path (None: another project's key)."""
    if _is_secure(value):
        return offline_secret(loc) if loc is not None else OFFLINE_SECRET
    if isinstance(value, dict):
        return {k: _without_secrets(v, None if loc is None else (*loc, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_secrets(v, None if loc is None else (*loc, i)) for i, v in enumerate(value)]
    return value


def to_runtime_config(config: dict[str, Any], project: str) -> tuple[dict[str, str], list[str]]:
    """Encode values as the CLI does: objects and lists as JSON, scalars as text; secure values as secrets.

    Ciphertext cannot be decrypted offline: each `secure:` value, top-level or nested inside an object
    (`pulumi config set --secret --path`), becomes a placeholder that fits its field, and its key is
    marked secret as the CLI marks it.
    """
    encoded: dict[str, str] = {}
    secret_keys: list[str] = []
    # The platform's keys are `aks-gpu-platform:*` in any project: their placeholders fit the platform's fields.
    prefix = f"{PROJECT}:"
    for key, value in config.items():
        full_key = key if ":" in key else f"{project}:{key}"
        if any(True for _ in secure_values(value)):
            secret_keys.append(full_key)
            value = _without_secrets(value, (full_key[len(prefix) :],) if full_key.startswith(prefix) else None)
        if isinstance(value, (dict, list)):
            encoded[full_key] = json.dumps(value)
        elif isinstance(value, bool):
            encoded[full_key] = "true" if value else "false"
        else:
            encoded[full_key] = str(value)
    return encoded, secret_keys
