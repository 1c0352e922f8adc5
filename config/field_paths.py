"""Find the model field a config path names: for error messages, the reference and offline secrets.

A path is what pydantic reports in an error's `loc` (YAML keys and list indexes, e.g.
`("gpuPools", 0, "vmSize")`). Walking it through the models' annotations gives the field's
description, its bounds and, one level up, the keys that were allowed there.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

# Parts pydantic adds to `loc` for validators and unions; they name no YAML key.
_SYNTHETIC_PREFIXES = ("function-", "tagged-union", "literal[", "json-or-python")


@dataclass(frozen=True)
class Bounds:
    """Constraints declared on a field (Field(...) or a constrained type)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ge, self.gt, self.le, self.lt, self.min_length, self.max_length))


@dataclass(frozen=True)
class FieldAt:
    """The field a path ends on, and the model that declares it."""

    owner: type[BaseModel]
    name: str
    info: FieldInfo
    annotation: Any
    """The annotation at the path itself: the item type when the path ends on a list index."""
    extra_metadata: tuple[Any, ...] = field(default=())
    """Constraints of the item type when the path ends inside a list or mapping."""

    @property
    def key(self) -> str:
        return self.info.alias or self.name

    @property
    def bounds(self) -> Bounds:
        return bounds_of((*self.info.metadata, *self.extra_metadata))


def bounds_of(metadata: Iterable[Any]) -> Bounds:
    found: dict[str, Any] = {}
    for item in metadata:
        for attr in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern"):
            value = getattr(item, attr, None)
            if value is not None:
                found[attr] = value
    return Bounds(**found)


def strip_annotated(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """The bare type and the metadata of an `Annotated[...]` (nested ones flattened)."""
    metadata: tuple[Any, ...] = ()
    while get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        metadata += tuple(extra)
        annotation = base
    return annotation, metadata


def union_members(annotation: Any) -> list[Any]:
    """The members of `X | Y` / `Optional[X]`, without None; the annotation itself otherwise."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if a is not type(None)]
    return [annotation]


def model_class(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (through Annotated and Optional), if any."""
    for member in union_members(strip_annotated(annotation)[0]):
        bare = strip_annotated(member)[0]
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            return bare
    return None


def keys_of(model: type[BaseModel]) -> dict[str, str]:
    """YAML key -> field name of a model (aliases, camelCase)."""
    return {(info.alias or name): name for name, info in model.model_fields.items()}


def _is_synthetic(part: int | str) -> bool:
    return isinstance(part, str) and part.startswith(_SYNTHETIC_PREFIXES)


def _item_type(annotation: Any, part: int | str) -> tuple[Any, tuple[Any, ...]] | None:
    """The element type a list index or mapping key steps into."""
    for member in union_members(strip_annotated(annotation)[0]):
        bare = strip_annotated(member)[0]
        origin = get_origin(bare)
        args = get_args(bare)
        if isinstance(part, int) and origin in (list, tuple, Sequence) and args:
            return strip_annotated(args[0])
        if isinstance(part, str) and origin in (dict, Mapping) and len(args) == 2:
            return strip_annotated(args[1])
    return None


def field_at(model: type[BaseModel], loc: Sequence[int | str]) -> FieldAt | None:
    """The field `loc` ends on (or inside, for list items and mapping values); None when it names none."""
    current: type[BaseModel] | None = model
    found: FieldAt | None = None
    annotation: Any = model
    for part in loc:
        if _is_synthetic(part):
            continue
        if current is not None and isinstance(part, str):
            name = keys_of(current).get(part) or (part if part in current.model_fields else None)
            if name is None:
                return None
            info = current.model_fields[name]
            found = FieldAt(current, name, info, info.annotation)
            annotation = info.annotation
            current = model_class(annotation)
            continue
        step = _item_type(annotation, part)
        if step is None or found is None:
            return None
        annotation, metadata = step
        found = FieldAt(found.owner, found.name, found.info, annotation, metadata)
        current = model_class(annotation)
    return found


def model_at(model: type[BaseModel], loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model whose keys are valid at `loc` (the root model for an empty path)."""
    parts = [p for p in loc if not _is_synthetic(p)]
    if not parts:
        return model
    found = field_at(model, parts)
    return model_class(found.annotation) if found is not None else None
