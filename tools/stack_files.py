"""Turn a `Pulumi.<stack>.yaml` file into the config map the Pulumi CLI hands the program."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
OFFLINE_SECRET = "offline-placeholder-secret"


def load_stack_file(stack: str, root: Path = REPO_ROOT) -> dict[str, Any]:
    path = root / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no stack file {path.name}; known stacks: {', '.join(known_stacks(root))}")
    return read_stack_yaml(path)


def read_stack_yaml(path: Path) -> dict[str, Any]:
    """The `config:` map of a stack file."""
    document = yaml.safe_load(path.read_text()) or {}
    return dict(document.get("config") or {})


def known_stacks(root: Path = REPO_ROOT) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def to_runtime_config(config: dict[str, Any], project: str) -> tuple[dict[str, str], list[str]]:
    """Encode values as the CLI does: objects and lists as JSON, scalars as text; secure values as secrets."""
    encoded: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in config.items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            # Ciphertext cannot be decrypted offline; a placeholder keeps the program's shape.
            encoded[full_key] = OFFLINE_SECRET
            secret_keys.append(full_key)
        elif isinstance(value, (dict, list)):
            encoded[full_key] = json.dumps(value)
        elif isinstance(value, bool):
            encoded[full_key] = "true" if value else "false"
        else:
            encoded[full_key] = str(value)
    return encoded, secret_keys
