"""Weights a served model streams from a team's Blob container (`inference.models[].weights.blob`).

The weights are the folder `path` of the team's container in the Lustre HSM account (components/training/
team_storage.py): vLLM reads them with the Run:ai Model Streamer straight from Blob, so such a model has no weights
cache and no staging Job (components/inference/blob_weights.py). The rules that read other sections (the team's
container exists, the network reaches the account) are in streamed_weights.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, field_validator

from ..base import ConfigModel

BLOB_NAME_MAX = 1024
"""Azure Storage refuses a blob name over 1,024 characters (learn.microsoft.com/rest/api/storageservices/
naming-and-referencing-containers--blobs--and-metadata, "Blob names")."""
LONGEST_SHARD_NAME = "model-00001-of-00001.safetensors"
"""The name transformers' save_pretrained gives a checkpoint's shards: huggingface_hub constants.py
SAFETENSORS_WEIGHTS_FILE_PATTERN `model{suffix}.safetensors` with the suffix `-00001-of-00004` (five digits each);
the index `model.safetensors.index.json` and the tokenizer and config files are shorter."""
BLOB_PATH_MAX = BLOB_NAME_MAX - len("/") - len(LONGEST_SHARD_NAME)
"""The longest folder whose shards still have names Azure accepts: `<path>/<shard>` within BLOB_NAME_MAX."""
BLOB_FOLDER = r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"


class BlobWeightsConfig(ConfigModel):
    """A checkpoint folder in a team's Blob container, streamed to the GPUs by every replica."""

    team: str | None = Field(
        default=None,
        description="training.teams[].name whose container holds the weights, one of the model's teams; unset: "
        "the model's only team (required when the model lists several)",
    )
    path: str = Field(
        pattern=BLOB_FOLDER,
        max_length=BLOB_PATH_MAX,
        description="Folder in that container holding config.json, the tokenizer files and the *.safetensors shards "
        "directly (not in a sub-folder: the streamer lists one level), as transformers' save_pretrained writes "
        f"them; letters, digits, '.', '_', '-' and '/', at most {BLOB_PATH_MAX} characters (a shard's name must "
        f"fit Azure's {BLOB_NAME_MAX})",
    )

    @field_validator("path")
    @classmethod
    def _no_relative_segments(cls, value: str) -> str:
        if any(segment in (".", "..") for segment in value.split("/")):
            raise ValueError("'.' and '..' are not folders of a container: name the folder itself")
        return value


def weights_team(blob: BlobWeightsConfig, teams: Sequence[str]) -> str | None:
    """The team whose container holds the weights: the one named, else the model's only team; None when the model
    lists several teams and names none (streamed_weights.py refuses that)."""
    if blob.team is not None:
        return blob.team
    return teams[0] if len(teams) == 1 else None
