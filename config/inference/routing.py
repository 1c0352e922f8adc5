"""How a served model's endpoint picker scores its servers' prefix caches (`inference.models[].routing`).

`approximate` (the default) is the inferencepool chart's own picker (gateway-api-inference-extension v1.5.0): its
prefix-cache scorer hashes the characters of each prompt and remembers where it sent them, without reading any
server's cache. `precise` runs the llm-d router's picker on the same chart: every vLLM server publishes its KV-cache
events (the blocks it stores and evicts, with their token ids), the picker indexes them and scores each server on
the blocks it really holds for the request's tokens (docs/autoscaling.md, "Cache-aware routing").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import ConfigModel
from ..errors import field_error

PrefixCacheScoring = Literal["approximate", "precise"]


class ModelRoutingConfig(ConfigModel):
    """How the model's endpoint picker chooses a server for each request."""

    prefix_cache: PrefixCacheScoring = Field(
        default="approximate",
        description="approximate: the picker scores servers on the prompts it sent them (no server state read); "
        "precise: the servers publish their KV-cache events and the picker scores on the blocks each one holds "
        "(llm-d router picker, a per-request tokenisation on the model's own servers; needs vLLM's prefix cache "
        "and minReplicas >= 1)",
    )

    @property
    def precise(self) -> bool:
        return self.prefix_cache == "precise"


def check_routing(routing: ModelRoutingConfig, teams: list[str], prefix_caching: bool, min_replicas: int) -> None:
    """Precise scoring reads what the servers cache and tokenises each prompt on them: refuse it where they keep no
    prefix cache (several teams without sharedPrefixCache, docs/security.md) or where none may be running."""
    if not routing.precise:
        return
    if not prefix_caching:
        raise field_error(
            "routing.prefixCache",
            "precise",
            f"the model is shared by teams {teams} without sharedPrefixCache, so vLLM runs with "
            "--no-enable-prefix-caching and publishes no cache events to score on: keep approximate, or set "
            "sharedPrefixCache: true if the teams accept that each can time the others' prompts",
        )
    if min_replicas == 0:
        raise field_error(
            "routing.prefixCache",
            "precise",
            "the picker tokenises every prompt on the model's own servers (no tokenizer download from the "
            "Hugging Face Hub) and reads their cache events; at zero replicas there is neither: keep approximate "
            "for a model that scales to zero, or keep minReplicas >= 1",
        )
