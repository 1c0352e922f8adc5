"""What a model that streams its weights from a team's Blob container (weights.py) needs from the rest of the
platform, checked before any resource exists: the team's container (components/training/team_storage.py makes one
per training team in the Lustre HSM account, with Lustre on), an unambiguous owner among the model's teams, one
node per replica, and a network path from the model servers to the account.
"""

from __future__ import annotations

from ..errors import field_error
from ..network.section import NetworkConfig
from ..storage.section import StorageConfig
from .models import InferenceConfig, ServedModelConfig
from .weights import weights_team


def streams_weights(model: ServedModelConfig) -> bool:
    """The model's replicas stream their weights from Blob (no weights cache, no staging Job)."""
    return model.weights.blob is not None


def streamed_weights_team(model: ServedModelConfig) -> str:
    """The team whose container holds a streamed model's weights (checked by check_streamed_weights)."""
    blob = model.weights.blob
    assert blob is not None, "only streamed models read a team's container"
    team = weights_team(blob, model.teams)
    assert team is not None, "checked by check_streamed_weights"
    return team


def account_endpoint_range(storage: StorageConfig, network: NetworkConfig) -> str | None:
    """Where the model servers reach the HSM account: None for its public endpoint (the internet), else the
    private-endpoints subnet that holds its private endpoint (components/storage/lustre.py)."""
    assert storage.lustre is not None, "streamed weights need Lustre (check_streamed_weights)"
    if storage.lustre.blob.public_network_access:
        return None
    assert network.subnets is not None, "checked by check_streamed_weights"
    return network.subnets.private_endpoints


def _check_one(path: str, model: ServedModelConfig, storage: StorageConfig, network: NetworkConfig) -> None:
    blob = model.weights.blob
    assert blob is not None
    if model.nodes > 1:
        raise field_error(
            f"{path}.nodes",
            model.nodes,
            "weights streamed from Blob are served on one node per replica: across nodes each pipeline stage would "
            "list and read the whole checkpoint (vLLM 0.34.0 keeps the full file list with pipeline parallel), "
            "which the platform does not size or test; use huggingFace weights for a multi-node model",
        )
    team = weights_team(blob, model.teams)
    if team is None:
        raise field_error(
            f"{path}.weights.blob.team",
            None,
            f"the model lists teams {model.teams}: name the one whose Blob container holds the weights",
        )
    if team not in model.teams:
        raise field_error(
            f"{path}.weights.blob.team",
            team,
            f"must be one of the model's teams {model.teams}: a team's container serves a model only to callers "
            "that include that team",
        )
    # The model's teams are training teams (check_models, run first): the container needs Lustre besides.
    if model.adapters:
        raise field_error(
            f"{path}.adapters",
            [a.name for a in model.adapters],
            "adapters are staged into the weights cache, which a model streamed from Blob does not have: serve the "
            "adapters on a model with huggingFace weights, or merge the adapter into the checkpoint you stream",
        )
    if storage.lustre is None or not storage.lustre.enabled:
        raise field_error(
            f"{path}.weights.blob",
            blob.model_dump(by_alias=True, exclude_none=True),
            f"team {team} has no Blob container: each team's container is made in the Lustre HSM account, and "
            "storage.lustre is off on this stack; enable it, or serve huggingFace weights",
        )
    lustre = storage.lustre
    assert lustre is not None
    if not lustre.blob.public_network_access and network.subnets is None:
        raise field_error(
            f"{path}.weights.blob",
            blob.model_dump(by_alias=True, exclude_none=True),
            "the HSM account is private (storage.lustre.blob.publicNetworkAccess false), reached through its private "
            "endpoint in network.existingSubnets.privateEndpointsSubnetId, whose address range the config does not "
            "hold: the model servers' egress to it cannot be written; serve huggingFace weights, or let the platform "
            "create the subnets (network.subnets)",
        )


def check_streamed_weights(inference: InferenceConfig, storage: StorageConfig, network: NetworkConfig) -> None:
    """Each streamed model against its team's container and the network, after check_models (its teams are
    training teams); the first model that breaks a rule raises, named by its index."""
    for i, model in enumerate(inference.models):
        if streams_weights(model):
            _check_one(f"inference.models[{i}]", model, storage, network)
