"""A served model whose weights stream from its team's Blob container (`weights.blob`): vLLM reads the checkpoint
with the Run:ai Model Streamer straight into the GPUs, signed in as an identity of the model's own that may only
read that container. No weights cache claim, no staging Job, no Hub.

What it follows (docs/charts.md, "Serving"):
- vLLM 0.34.0 (PyPI sdist sha256 fcad848b...): `vllm serve az://<container>/<path> --load-format runai_streamer`
  (vllm/transformers_utils/runai_utils.py SUPPORTED_SCHEMES; vllm/config/vllm.py refuses any other explicit format
  for an object-storage model); `--model-loader-extra-config` is JSON whose keys may only be `distributed`,
  `concurrency` and `memory_limit` (vllm/model_executor/model_loader/runai_streamer_loader.py
  RunaiModelStreamerLoader). vLLM copies the config and tokenizer files into VLLM_ASSETS_CACHE under HOME (the pod's
  /tmp) and serves from there (vllm/config/model.py maybe_pull_model_tokenizer_for_runai), so the served name comes
  from --served-model-name; HF_HUB_OFFLINE leaves an object-storage model alone (vllm/engine/arg_utils.py).
- runai-model-streamer 0.17.1 (PyPI wheel): the streamer buffers up to RUNAI_STREAMER_MEMORY_LIMIT bytes of host
  memory, 40 GB unless told (file_streamer/requests_iterator.py DEFAULT_MEMORY_LIMIT_STRING), refuses a limit below
  the largest tensor (_ring_sizing); with distributed streaming the limit is a node total split between the ranks
  on the node, each reading its share once and broadcasting it over NCCL (distributed_streamer.py
  rank_memory_limit); without it every tensor-parallel rank reads the whole checkpoint.
- runai-model-streamer-azure 0.17.0 (PyPI wheel; 0.17.1, which vLLM's image resolves, is not on the registry
  reachable here): `az://` selects it, the account comes from AZURE_STORAGE_ACCOUNT_NAME, and with no key, SAS or
  connection string it signs in with DefaultAzureCredential (credentials/credentials.py), hence with the workload
  identity the AKS webhook injects (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE) into pods labelled
  `azure.workload.identity/use: "true"` whose service account names a client ID; the webhook projects its own token
  volume whatever automountServiceAccountToken says (Azure/azure-workload-identity pkg/webhook/webhook.go at
  0042363d).
- The image: vllm/vllm-openai:v0.34.0 installs `runai-model-streamer[s3,gcs,azure]>=0.17.1` (docker/Dockerfile,
  stage vllm-runtime-base): the Azure backend is there, at whatever version its build resolved (config/known_limits.py
  `streamed-weights-version-unpinned`).

Why an identity per model: the team's own identity (`team-data`, components/training/team_storage.py) holds Storage
Blob Data Contributor and is federated to the team's namespace; model servers get read on one container only, from
their own service account in the models namespace.
"""

import json
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.inference.models import ServedModelConfig
from aks_gpu_platform.config.inference.streamed_weights import streamed_weights_team

from ..network.policies import internet_https_egress
from ..shared import roles
from ..shared.context import ClusterHandle
from ..shared.workload_identity import federated_identity
from ..training.team_storage import TeamContainer, team_container

STREAMER_LOAD_FORMAT = "runai_streamer"
BLOB_SCHEME = "az://"
ACCOUNT_ENV = "AZURE_STORAGE_ACCOUNT_NAME"
USE_WORKLOAD_IDENTITY = "azure.workload.identity/use"
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
STREAMER_MEMORY_SHARE = 0.5
"""Of the server container's memory limit, what the streamer's host buffers may hold (its memory_limit, a total
across the pod's ranks with distributed streaming); the rest is for vLLM's own processes (API server, engine, a
worker per GPU: Python, torch, CUDA contexts), which no source sizes: a stated half."""
HTTPS = 443
GIB = 1024**3


def weights_uri(model: ServedModelConfig) -> str:
    """`az://<the owning team's container>/<path>`: the container as team storage names it, the account apart."""
    blob = model.weights.blob
    assert blob is not None, "only streamed models have a Blob folder"
    return f"{BLOB_SCHEME}{team_container(streamed_weights_team(model))}/{blob.path}"


def reader_service_account(model: ServedModelConfig) -> str:
    """The service account the model's servers run as, federated to its reader identity."""
    return f"weights-reader-{model.name}"


def _gibibytes(quantity: str) -> int:
    """Bytes of a `<n>Gi` quantity, the unit pod_resources writes memory in."""
    assert quantity.endswith("Gi"), f"memory limits are written in Gi: {quantity}"
    return int(quantity[: -len("Gi")]) * GIB


def streamer_memory_limit(container_memory: str) -> int:
    """The streamer's memory_limit in bytes: STREAMER_MEMORY_SHARE of the container's memory limit."""
    return int(_gibibytes(container_memory) * STREAMER_MEMORY_SHARE)


def streamer_config(model: ServedModelConfig, container_memory: str) -> dict[str, Any]:
    """`--model-loader-extra-config`: the buffer bound, and distributed streaming across tensor-parallel ranks, so
    the pod reads the checkpoint from Blob once instead of once per GPU."""
    config: dict[str, Any] = {"memory_limit": streamer_memory_limit(container_memory)}
    if model.tensor_parallel > 1:
        config["distributed"] = True
    return config


def _streaming_container(container: dict[str, Any], model: ServedModelConfig, account: pulumi.Input[str]) -> None:
    """The vLLM container reads its weights with the streamer from `account`, the Hub out of reach."""
    limit = container["resources"]["limits"]["memory"]
    loader = json.dumps(streamer_config(model, limit), sort_keys=True)
    container["args"] = [
        *container["args"],
        "--load-format",
        STREAMER_LOAD_FORMAT,
        "--model-loader-extra-config",
        loader,
    ]
    container["env"] = [
        *container["env"],
        {"name": ACCOUNT_ENV, "value": account},
        # Only Hub weights have a cache to read offline (vllm_server.py): here nothing may reach for the Hub.
        {"name": "HF_HUB_OFFLINE", "value": "1"},
    ]


def streaming_pod(pod: dict[str, Any], model: ServedModelConfig, account: pulumi.Input[str]) -> dict[str, Any]:
    """A server pod template turned to streaming: its service account and the webhook's label, the loader flags
    and the account on its vLLM container."""
    pod["metadata"]["labels"] = {**pod["metadata"]["labels"], USE_WORKLOAD_IDENTITY: "true"}
    pod["spec"]["serviceAccountName"] = reader_service_account(model)
    for container in pod["spec"]["containers"]:
        _streaming_container(container, model, account)
    return pod


def weights_egress(
    servers: Mapping[str, str], endpoint_range: str | None
) -> k8s.networking.v1.NetworkPolicySpecArgsDict:
    """The servers of a streamed model: HTTPS to Entra ID's token endpoint (login.microsoftonline.com, public) and
    to the account, on its public endpoint or, for a private account, its private endpoint in `endpoint_range`
    (internet_https_egress leaves the private ranges out)."""
    egress: list[k8s.networking.v1.NetworkPolicyEgressRuleArgsDict] = [internet_https_egress()]
    if endpoint_range is not None:
        egress.append({"to": [{"ip_block": {"cidr": endpoint_range}}], "ports": [{"protocol": "TCP", "port": HTTPS}]})
    return {"pod_selector": {"match_labels": dict(servers)}, "policy_types": ["Egress"], "egress": egress}


def blob_reader(
    name: str,
    model: ServedModelConfig,
    namespace: str,
    servers: Mapping[str, str],
    container: TeamContainer,
    endpoint_range: str | None,
    handle: ClusterHandle,
    parent: pulumi.Resource,
    in_cluster: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The model's reader identity, federated to its service account, with Storage Blob Data Reader on its team's
    container only; that service account; the servers' egress to Entra ID and the account. Returns what the servers
    wait for: without the credential and the grant their first sign-in fails (a new grant can still take minutes
    to apply, docs/for-ml-teams.md), without the egress the connection does."""
    azure = pulumi.ResourceOptions(parent=parent)
    account = reader_service_account(model)
    identity, credential = federated_identity(
        f"{name}-weights-identity",
        f"{name}-weights-credential",
        handle=handle,
        namespace=namespace,
        service_account=account,
        opts=azure,
    )
    grant = roles.assign_role(
        f"{name}-weights-reader",
        role_guid=roles.STORAGE_BLOB_DATA_READER,
        principal_id=identity.principal_id,
        scope=container.id,
        opts=azure,
    )
    service_account = k8s.core.v1.ServiceAccount(
        f"{name}-weights-service-account",
        metadata={"name": account, "namespace": namespace, "annotations": {CLIENT_ID_ANNOTATION: identity.client_id}},
        automount_service_account_token=False,
        opts=in_cluster,
    )
    policy = k8s.networking.v1.NetworkPolicy(
        f"{name}-egress-weights",
        metadata={"name": f"egress-weights-{model.name}", "namespace": namespace},
        spec=weights_egress(servers, endpoint_range),
        opts=in_cluster,
    )
    return [credential, grant, service_account, policy]
