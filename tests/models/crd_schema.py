"""Custom resources checked against the CRD excerpts in tests/fixtures/crds/ as the API server would.

A structural CRD schema prunes every field it does not declare (unless a node says
`x-kubernetes-preserve-unknown-fields`): a misspelt key is silently dropped, so the object the controller sees
is not the one the program meant. Here such a key is an error instead.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

CRDS = Path(__file__).parent.parent / "fixtures" / "crds"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with unknown fields refused wherever the API server would prune them."""
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if "properties" in schema:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
        if not schema.get(PRESERVE_UNKNOWN):
            out["additionalProperties"] = False
    if "items" in schema:
        out["items"] = strict(schema["items"])
    return out


@cache
def crd_excerpt(file_name: str) -> dict[str, Any]:
    return json.loads((CRDS / file_name).read_text())


def crd_problems(manifest: dict[str, Any], file_name: str) -> list[str]:
    """Why the API server would refuse or prune `manifest` under the CRD excerpt `file_name`; empty when fine."""
    crd = crd_excerpt(file_name)
    expected = f"{crd['group']}/{crd['version']}"
    if manifest.get("apiVersion") != expected or manifest.get("kind") != crd["kind"]:
        return [f"{manifest.get('apiVersion')} {manifest.get('kind')} is not {expected} {crd['kind']}"]
    validator = jsonschema.Draft7Validator(strict(crd["openAPIV3Schema"]))
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(manifest)]
