"""Base model shared by every config section: strict keys, frozen, camelCase aliases."""

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


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

    def as_settings(self) -> dict[str, Any]:
        """This section in the stack YAML's shape (camelCase keys), as components take it."""
        return self.model_dump(by_alias=True)
