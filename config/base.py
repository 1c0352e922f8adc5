"""Base model shared by every config section: strict keys, frozen, camelCase aliases."""

import types
from collections.abc import Mapping
from typing import Any, Union, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from .errors import text_for_number_error

# Validation-context key naming the model whose own fields arrive as text: Pulumi hands every top-level stack
# setting to the program as a string (`nodes: 2` arrives as "2"), so only nested values keep their YAML types.
TEXT_SETTINGS_MODEL = "text_settings_model"


def _number_kinds(annotation: Any) -> set[Any]:
    """{int} or {int, float} or {float} when a field takes numbers (maybe None) and never text; else empty."""
    options = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    kinds: set[Any] = {option for option in options if option is not type(None)}
    return kinds if kinds and kinds <= {int, float} else set()


class ConfigModel(BaseModel):
    """A frozen config section whose YAML keys are the camelCase aliases of its fields.

    Unknown keys are errors, so a misspelt setting never silently falls back to a default.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_text(cls, value: Any, info: ValidationInfo) -> Any:
        # YAML `maxCount: "4"` is text; pydantic would read it as 4 without a word. Say where and how to write it.
        if not isinstance(value, str) or info.field_name is None:
            return value
        context: Any = info.context
        if isinstance(context, Mapping) and cast(Mapping[str, Any], context).get(TEXT_SETTINGS_MODEL) is cls:
            return value
        kinds = _number_kinds(cls.model_fields[info.field_name].annotation)
        if kinds:
            raise text_for_number_error(value, whole=kinds == {int})
        return value

    def as_settings(self) -> dict[str, Any]:
        """This section in the stack YAML's shape (camelCase keys), as components take it."""
        return self.model_dump(by_alias=True)
