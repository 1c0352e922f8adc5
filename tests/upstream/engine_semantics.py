"""What each server we run does at runtime, from its source at the pinned version: what SIGTERM does to in-flight
requests, what memory it budgets, where its latency clocks start. The contract (tests/inference/
test_engine_semantics.py) holds the rendered pods to it.

- vLLM 0.34.0, the PyPI sdist (sha256 fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113):
  SIGTERM: vllm/engine/arg_utils.py `--shutdown-timeout` (int, default 0, "0 = abort, >0 = wait");
  vllm/v1/engine/core.py EngineCore._handle_shutdown (timeout 0 aborts every unfinished request, >0 drains until no
  work is left) and _reject_add_in_shutdown (a request arriving after SIGTERM is aborted);
  vllm/entrypoints/launchers/launcher.py serve_http (SIGTERM -> engine_client.shutdown(timeout=shutdown_timeout),
  then the HTTP server exits). /health (vllm/entrypoints/serve/instrumentator/health.py) answers 503 only when the
  engine is dead (AsyncLLM.check_health): it stays 200 while draining, so readiness does not take a draining pod out.
  Startup: VLLM_ENGINE_READY_TIMEOUT_S, default 600 s (vllm/envs.py), is how long the API server waits for its
  engine (weights included) before failing (vllm/v1/engine/core_client.py); HF_HUB_OFFLINE makes the Hub client read
  its cache only (vllm/transformers_utils/config.py local_files_only).
  Memory: vllm/v1/worker/utils.py request_memory budgets ceil(total x gpu_memory_utilization) of the memory the
  device reports; vllm/v1/worker/gpu_worker.py determine_available_memory gives the KV cache that budget less the
  weights, the profiled activation peak and the CUDA-graph estimate. gpu_memory_utilization defaults to 0.92, or 1.0
  with the extensible KV cache, the default on CUDA (vllm/config/cache.py resolved_gpu_memory_utilization).
  Port: 8000 (vllm/entrypoints/common/cli_args.py); `--headless` (same file) runs no API server.
  Latency clock: time to first token runs from the request's arrival at the engine client (vllm/v1/metrics/stats.py
  IterationStats, first_token_latency = now - arrival_time), i.e. after the gateway and the picker.
- Triton 25.01 (triton-inference-server/server tag v2.54.0, commit 8da6a4f8): src/command_line_parser.h
  `exit_timeout_secs_{30}`, src/command_line_parser.cc `--exit-timeout-secs` ("wait for in-flight inferences to
  finish. After the timeout expires the server exits"); src/main.cc on SIGTERM stops the HTTP endpoint (no new
  requests) and waits up to that timeout. Memory: Triton budgets none of its own (the model's backend allocates);
  nothing to check. Latency clock: the server's request duration starts when the request reaches the core: not read.
- The endpoint picker, gateway-api-inference-extension v1.5.0 (df9f8909): internal/runnable/grpc.go GracefulStop on
  SIGTERM (open ext_proc streams finish), bounded by controller-runtime's manager GracefulShutdownTimeout, 30 s
  when unset (pkg/manager/internal.go defaultGracefulShutdownPeriod; controller-runtime v0.23.3 per go.mod, the
  constant read from its published source, not at that tag: UNSOURCED_FACTS). Its chart gives the pod
  terminationGracePeriodSeconds 130 (config/charts/epplib/templates/_deployment.yaml). It drops a pod from its
  candidates as soon as the pod has a deletion timestamp (pkg/epp/util/pod/pod.go IsPodReady), whatever /health says.
- The gateway: Gateway API v1.5.1 GEP-1742 (geps/gep-1742): `timeouts.request` becomes Envoy's route timeout in
  Istio, which runs until the last byte of the response, so it cuts a streamed response at that age; "0s" disables.
- GPU memory as `nvidia-smi` (and CUDA) reports it, not the marketed GB: modal-labs/modal-client pull request 2797
  (T4 15360MiB, A10 23028MiB, A100 40GB 40960MiB, A100 80GB 81920MiB, H100 80GB 81559MiB), google/gvisor issue 10413
  (H100 80GB HBM3 81559MiB), NVIDIA/gpu-admin-tools issue 4 (H100 NVL 95830MiB).
- Kubernetes (kubelet pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer): the grace period is counted
  from the preStop hook; SIGTERM comes after the hook, SIGKILL when the grace period is spent.
- GPU memory as vLLM sees it: vllm/utils/mem_utils.py device_memory_info takes the total from the CUDA runtime
  (torch.accelerator.get_memory_info), below nvidia-smi's: H100 80GB HBM3 "79.11 GiB" = 81,008 MiB in vLLM's log
  (vllm-project/vllm issue 27508). Other GPUs: no CUDA figure found; the gap measured there (551 MiB) is taken as
  theirs (UNSOURCED_FACTS).
- Prefix cache: vllm/config/cache.py CacheConfig.enable_prefix_caching (on by default for these models);
  vllm/engine/arg_utils.py adds `--enable-prefix-caching` with argparse.BooleanOptionalAction (bool fields,
  get_kwargs), so `--no-enable-prefix-caching` turns it off and the last of the two wins. Cached prefixes are told
  apart only by the request body's `cache_salt` (vllm/entrypoints/openai/chat_completion/protocol.py).
- Weights download: vllm/model_executor/model_loader/default_loader.py loads `*.safetensors` when the folder has any
  (the first allow pattern with files wins), so Meta's `original/*.pth` copy is never read.
- The Hub CLI, huggingface_hub 2.4.0 (vLLM 0.34.0 requires >= 2.0.0) huggingface_hub/cli/download.py: `hf download
  <repo> [FILENAMES]...`; `--include`/`--exclude` are repeatable options (click `multiple=True`, one pattern each,
  cli/_framework.py), `--revision` one value; any positional after the repo id is a file name, and with file names
  the patterns are ignored. Without file names or patterns the whole repository is downloaded; with patterns, a file
  is fetched when it matches an `--include` (if any) and no `--exclude` (utils/_paths.py filter_repo_objects,
  fnmatchcase).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

VLLM_DEFAULT_PORT = 8000
VLLM_DEFAULT_SHUTDOWN_TIMEOUT = 0
VLLM_DEFAULT_ENGINE_READY_TIMEOUT_S = 600
VLLM_DEFAULT_GPU_MEMORY_UTILIZATION = 1.0
"""The CUDA default (extensible KV cache on); 0.92 where that cache is off."""
TRITON_DEFAULT_EXIT_TIMEOUT_SECS = 30
EPP_GRACEFUL_SHUTDOWN_SECONDS = 30
EPP_CHART_GRACE_SECONDS = 130

NVIDIA_SMI_TOTAL_MIB = {
    "T4": 15_360,
    "A10": 23_028,
    "A100-40GB": 40_960,
    "A100-80GB": 81_920,
    "H100-80GB": 81_559,
    "H100-NVL": 95_830,
}

CUDA_TOTAL_MIB = {"H100-80GB": 81_008}
MEASURED_CUDA_GAP_MIB = NVIDIA_SMI_TOTAL_MIB["H100-80GB"] - CUDA_TOTAL_MIB["H100-80GB"]


def cuda_total_mib(gpu: str) -> int:
    """The total vLLM budgets from: the CUDA figure, else nvidia-smi's less the one measured gap."""
    return CUDA_TOTAL_MIB.get(gpu, NVIDIA_SMI_TOTAL_MIB[gpu] - MEASURED_CUDA_GAP_MIB)


UNSOURCED_FACTS = (
    "the memory H200, GB200 and GB300 GPUs report was not found",
    "the CUDA runtime's total was found for H100 80GB only",
    "controller-runtime's 30 s default manager shutdown was read from its published source, not at v0.23.3",
    "Triton's request-duration clock start was not read",
)


def flag(args: Sequence[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value` in a command line, or None."""
    for i, arg in enumerate(args):
        if arg == f"--{name}":
            return args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


@dataclass(frozen=True)
class Stop:
    """What a server does between SIGTERM and its exit."""

    drains: bool
    """In-flight requests finish (True) or are aborted at once (False)."""
    drain_seconds: int
    """The longest it waits for them."""
    accepts_new: bool
    """Whether requests arriving after SIGTERM are served."""
    healthy_while_draining: bool
    """Whether its readiness endpoint still answers 200 while it drains."""


def vllm_stop(args: Sequence[str]) -> Stop:
    timeout = int(flag(args, "shutdown-timeout") or VLLM_DEFAULT_SHUTDOWN_TIMEOUT)
    return Stop(drains=timeout > 0, drain_seconds=timeout, accepts_new=False, healthy_while_draining=True)


def vllm_port(args: Sequence[str]) -> int | None:
    """The port its OpenAI API listens on; None for a headless node of a multi-node group."""
    if flag(args, "headless") is not None:
        return None
    return int(flag(args, "port") or VLLM_DEFAULT_PORT)


def vllm_budget_bytes(args: Sequence[str], reported_total_bytes: int) -> int:
    """What vLLM lets itself use of one GPU (weights, activations, CUDA graphs, KV cache together)."""
    util = float(flag(args, "gpu-memory-utilization") or VLLM_DEFAULT_GPU_MEMORY_UTILIZATION)
    return math.ceil(reported_total_bytes * util)


def vllm_engine_ready_seconds(env: Mapping[str, str]) -> int:
    """How long the API server waits for its engine, weights included, before it fails."""
    return int(env.get("VLLM_ENGINE_READY_TIMEOUT_S", VLLM_DEFAULT_ENGINE_READY_TIMEOUT_S))


def vllm_downloads(env: Mapping[str, str]) -> bool:
    """Whether a starting server may fetch from the Hub (HF_HUB_OFFLINE unset or false)."""
    return env.get("HF_HUB_OFFLINE", "").upper() not in ("1", "ON", "YES", "TRUE")


def triton_stop(args: Sequence[str]) -> Stop:
    timeout = int(flag(args, "exit-timeout-secs") or TRITON_DEFAULT_EXIT_TIMEOUT_SECS)
    return Stop(drains=timeout > 0, drain_seconds=timeout, accepts_new=False, healthy_while_draining=False)


def epp_stop() -> Stop:
    return Stop(
        drains=True, drain_seconds=EPP_GRACEFUL_SHUTDOWN_SECONDS, accepts_new=False, healthy_while_draining=False
    )


def route_cuts_after(rule: Mapping[str, object]) -> float:
    """Seconds after which the gateway cuts a response on this HTTPRoute rule, streamed or not (inf: never)."""
    timeouts = rule.get("timeouts") or {}
    assert isinstance(timeouts, Mapping)
    request = str(timeouts.get("request", "0s"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    unit = "ms" if request.endswith("ms") else request[-1]
    seconds = float(request[: -len(unit)]) * units[unit]
    return math.inf if seconds == 0 else seconds


def killed_after(pod: Mapping[str, object], stop: Stop, pre_stop_seconds: int) -> bool:
    """Whether the kubelet kills the server before its drain ends: the grace period (30 s when unset) counts from
    the preStop hook, so it must exceed the hook plus the drain."""
    grace = int(str(pod.get("terminationGracePeriodSeconds", 30)))
    return grace <= pre_stop_seconds + stop.drain_seconds


def pre_stop_seconds(container: Mapping[str, object]) -> int:
    """The preStop sleep of a container (the kubelet's sleep action), 0 without one."""
    lifecycle = container.get("lifecycle") or {}
    assert isinstance(lifecycle, Mapping)
    hook = lifecycle.get("preStop") or {}  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    assert isinstance(hook, Mapping)
    sleep = hook.get("sleep") or {}  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    assert isinstance(sleep, Mapping)
    return int(str(sleep.get("seconds", 0)))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


# vLLM 0.34.0 vllm/entrypoints/scale_out/factories.py register_scale_out_api_routers: the render, derender, generate
# and abort routes answer 403 "Restart vllm serve with --enable-scale-out" unless the server runs the render task,
# --tokens-only, or --enable-scale-out (vllm/entrypoints/common/cli_args.py: default False).
SCALE_OUT_PATHS = (
    "/v1/completions/render",
    "/v1/chat/completions/render",
    "/v1/completions/derender",
    "/v1/chat/completions/derender",
    "/inference/v1/generate",
    "/inference/v1/abort_requests",
)


def vllm_serves_scale_out(args: Sequence[str]) -> bool:
    """Whether `vllm serve` answers SCALE_OUT_PATHS (the render endpoints a picker tokenises with)."""
    return "--enable-scale-out" in args or "--tokens-only" in args


def vllm_prefix_caching(args: Sequence[str]) -> bool:
    """Whether the engine keeps a prefix cache: the last of --enable-prefix-caching / --no-enable-prefix-caching."""
    state = True
    for arg in args:
        if arg == "--enable-prefix-caching":
            state = True
        elif arg == "--no-enable-prefix-caching":
            state = False
    return state


HUB_CLI_VALUED_OPTIONS = {
    "--revision",
    "--include",
    "--exclude",
    "--cache-dir",
    "--local-dir",
    "--repo-type",
    "--token",
}


@dataclass(frozen=True)
class HubDownload:
    """What `hf download` fetches."""

    repo: str
    filenames: tuple[str, ...]
    excluded: tuple[str, ...]
    included: tuple[str, ...] = ()

    def fetches(self, repository_files: Sequence[str]) -> list[str]:
        """The repository's files it downloads: with patterns, those matching an `--include` (if any) and no
        `--exclude`, case-sensitive fnmatch (huggingface_hub utils/_paths.py filter_repo_objects)."""
        return [
            f
            for f in repository_files
            if (not self.included or any(fnmatch.fnmatchcase(f, p) for p in self.included))
            and not any(fnmatch.fnmatchcase(f, p) for p in self.excluded)
        ]


def hub_download(args: Sequence[str]) -> HubDownload:
    """Parse `hf download ...` arguments as huggingface_hub 2.4.0 does: each valued option takes exactly one value."""
    assert args and args[0] == "download", args
    positional: list[str] = []
    excluded: list[str] = []
    included: list[str] = []
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        if arg in HUB_CLI_VALUED_OPTIONS:
            value = rest.pop(0)
            if arg == "--exclude":
                excluded.append(value)
            elif arg == "--include":
                included.append(value)
        elif not arg.startswith("--"):
            positional.append(arg)
    return HubDownload(positional[0], tuple(positional[1:]), tuple(excluded), tuple(included))
