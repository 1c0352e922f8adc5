"""vLLM loading a model from object storage with the Run:ai Model Streamer (vllm/model_executor/model_loader/
runai_streamer_loader.py and what it calls), the streamer's Azure backend signing in, and the AKS workload identity
webhook that gives it a token, as their source has them. The contract (tests/inference/test_blob_weights.py) runs
the rendered server containers through it.

- vLLM 0.34.0, the PyPI sdist (sha256 fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113):
  vllm/engine/arg_utils.py types `--model-loader-extra-config` with union_dict_and_str (text matching
  `^\\s*{.*}\\s*$` is parsed as JSON, anything else stays text) and, under HF_HUB_OFFLINE, rewrites a model id to a
  local path unless it is a cloud-storage URI; vllm/config/load.py lower-cases `--load-format`;
  vllm/transformers_utils/runai_utils.py is_runai_obj_uri (s3://, gs://, az://, compared lower-cased);
  vllm/config/vllm.py (the object-storage check after the model config): such a model with load format `auto` is
  loaded with `runai_streamer`, any format but modelexpress, runai_streamer or runai_streamer_sharded raises;
  runai_streamer_loader.py RunaiModelStreamerLoader.__init__: extra-config keys only distributed, concurrency,
  memory_limit (distributed a bool; concurrency an int > 0, not a bool; memory_limit an int >= -1, not a bool), set
  as RUNAI_STREAMER_CONCURRENCY and RUNAI_STREAMER_MEMORY_LIMIT; distributed defaults to False.
- runai-model-streamer 0.17.1 (PyPI wheel runai_model_streamer-0.17.1-py3-none-manylinux_2_28_x86_64.whl,
  sha256 2dd7b4dd5bc6b0c0dd2cfc875a32af40a5dd408db8026374e93ca34f8039321f): s3_utils/s3_utils.py is_azure_path
  (`az://`, case-sensitive); file_streamer/requests_iterator.py: RUNAI_STREAMER_MEMORY_LIMIT defaults to
  40,000,000,000 bytes, -1 is unlimited (a buffer of the whole stream), 0 one largest range, a limit below the
  largest range raises, the ring never holds more than min(limit, stream) (_ring_sizing); distributed_streamer.py
  rank_memory_limit: with distributed streaming the limit is the node's total, each of the node's ranks buffering
  max(limit // ranks, largest range); without it every rank reads the whole checkpoint with the whole limit.
- runai-model-streamer-azure 0.17.0 (PyPI wheel, sha256 19d89d841001ec93c17855bc57e80c77ddaad02d2a815782352947fa
  9988257f; 0.17.1 is not on the registry reachable here): files/files.py reads `az://<container>/<prefix>` (the
  first segment is the container); credentials/credentials.py takes AZURE_STORAGE_CONNECTION_STRING, else
  AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_SAS_TOKEN or AZURE_STORAGE_ACCOUNT_KEY, else the account name with
  DefaultAzureCredential, and refuses to start with neither a connection string nor an account name.
- DefaultAzureCredential signs in with workload identity when AZURE_CLIENT_ID, AZURE_TENANT_ID and
  AZURE_FEDERATED_TOKEN_FILE are set (azure-identity's documented chain). Azure/azure-workload-identity
  pkg/webhook/webhook.go (main at 0042363d; AKS runs its own build) sets them on pods the webhook admits, the pods
  labelled `azure.workload.identity/use: "true"`: AZURE_CLIENT_ID from the service account's
  `azure.workload.identity/client-id` annotation, and only when that is non-empty; the token volume is projected
  whatever automountServiceAccountToken says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.upstream.engine_semantics import flag

OBJECT_STORAGE_SCHEMES = ("s3://", "gs://", "az://")
STREAMER_FORMATS = ("modelexpress", "runai_streamer", "runai_streamer_sharded")
LOADER_KEYS = frozenset({"distributed", "concurrency", "memory_limit"})
DEFAULT_MEMORY_LIMIT = 40_000_000_000
AZURE_PREFIX = "az://"
USE_LABEL = "azure.workload.identity/use"
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
WORKLOAD_IDENTITY_ENV = ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE")


class LoadRefused(ValueError):
    """What vLLM or the streamer raises before a weight is read."""


@dataclass(frozen=True)
class StreamedLoad:
    """How a `vllm serve` command line loads its weights."""

    model: str
    load_format: str
    distributed: bool
    memory_limit: int
    """RUNAI_STREAMER_MEMORY_LIMIT as the streamer reads it (its default when unset)."""
    backend: str
    """`azure`, `s3`, `gcs` or `none` (a local folder or a Hub id)."""
    container: str
    prefix: str


def _extra_config(text: str | None) -> dict[str, Any]:
    """union_dict_and_str, then the loader's own checks."""
    if text is None:
        return {}
    if not re.match(r"(?s)^\s*{.*}\s*$", text):
        raise LoadRefused(f"--model-loader-extra-config {text!r} is text, not a JSON object")
    config = json.loads(text)
    unexpected = set(config) - LOADER_KEYS
    if unexpected:
        raise LoadRefused(f"Unexpected extra config keys for runai_streamer: {unexpected}")
    if "distributed" in config and not isinstance(config["distributed"], bool):
        raise LoadRefused(f"distributed must be a bool, got {config['distributed']!r}")
    concurrency = config.get("concurrency", 1)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency <= 0:
        raise LoadRefused(f"concurrency must be a positive integer, got {concurrency!r}")
    limit = config.get("memory_limit", -1)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < -1:
        raise LoadRefused(f"memory_limit must be an integer >= -1, got {limit!r}")
    return config


def _backend(model: str) -> str:
    if model.startswith(AZURE_PREFIX):
        return "azure"
    if model.startswith("s3://"):
        return "s3"
    if model.startswith("gs://"):
        return "gcs"
    return "none"


def streamed_load(args: Sequence[str], env: Mapping[str, str]) -> StreamedLoad:
    """`vllm serve <args>` with `env`: how the weights load, or LoadRefused with vLLM's or the streamer's reason."""
    model = args[0]
    object_storage = model.lower().startswith(OBJECT_STORAGE_SCHEMES)
    load_format = (flag(args, "load-format") or "auto").lower()
    if object_storage:
        if load_format == "auto":
            load_format = "runai_streamer"
        elif load_format not in STREAMER_FORMATS:
            raise LoadRefused(f"an object-storage model loads with {STREAMER_FORMATS}, got {load_format!r}")
    config = _extra_config(flag(args, "model-loader-extra-config")) if load_format == "runai_streamer" else {}
    memory = config.get("memory_limit", int(env.get("RUNAI_STREAMER_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)))
    backend = _backend(model)
    container, _, prefix = model[len(AZURE_PREFIX) :].partition("/") if backend == "azure" else ("", "", "")
    return StreamedLoad(model, load_format, config.get("distributed", False), memory, backend, container, prefix)


def host_buffer_bytes(load: StreamedLoad, ranks: int, checkpoint_bytes: int, largest_tensor: int) -> int:
    """The most host memory the streamer holds at once in one pod of `ranks` tensor-parallel ranks."""
    if load.memory_limit == -1:
        per_rank = checkpoint_bytes // ranks if load.distributed else checkpoint_bytes
        return per_rank * ranks
    if load.memory_limit == 0:
        return largest_tensor * ranks
    if load.distributed:
        return max(load.memory_limit // ranks, largest_tensor) * ranks
    if load.memory_limit < largest_tensor:
        raise LoadRefused(f"Memory limit supplied: {load.memory_limit} cannot be smaller than: {largest_tensor}")
    return min(load.memory_limit, checkpoint_bytes) * ranks


def webhook_env(pod_labels: Mapping[str, str], service_account: Mapping[str, Any], tenant: str) -> dict[str, str]:
    """The variables the workload identity webhook adds to a pod's containers (none for a pod it does not admit)."""
    if pod_labels.get(USE_LABEL) != "true":
        return {}
    annotations = (service_account.get("metadata") or {}).get("annotations") or {}
    found = {
        "AZURE_CLIENT_ID": str(annotations.get(CLIENT_ID_ANNOTATION) or ""),
        "AZURE_TENANT_ID": tenant,
        "AZURE_FEDERATED_TOKEN_FILE": "/var/run/secrets/azure/tokens/azure-identity-token",
    }
    return {name: value for name, value in found.items() if value}


def azure_sign_in(env: Mapping[str, str]) -> str:
    """Which credential the Azure backend signs in with, or LoadRefused: `connection string`, `sas`, `account key`,
    `workload identity`; DefaultAzureCredential without the workload identity variables falls to the managed
    identity on IMDS, which a pod under an egress policy does not reach (named `managed identity (IMDS)`)."""
    if env.get("AZURE_STORAGE_CONNECTION_STRING"):
        return "connection string"
    if not env.get("AZURE_STORAGE_ACCOUNT_NAME"):
        raise LoadRefused("Azure credentials required: set AZURE_STORAGE_ACCOUNT_NAME (or a connection string)")
    if env.get("AZURE_STORAGE_SAS_TOKEN"):
        return "sas"
    if env.get("AZURE_STORAGE_ACCOUNT_KEY"):
        return "account key"
    if all(env.get(name) for name in WORKLOAD_IDENTITY_ENV):
        return "workload identity"
    return "managed identity (IMDS)"


def offline_keeps_model(model: str) -> bool:
    """HF_HUB_OFFLINE rewrites a Hub id to a local cache path, never a cloud-storage URI (vllm/engine/
    arg_utils.py)."""
    return model.lower().startswith(OBJECT_STORAGE_SCHEMES)
