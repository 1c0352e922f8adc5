"""A served model's LoRA adapters (config/inference/adapters.py): staged beside the base's weights, loaded statically
by the base's vLLM servers, callable by name through the base's route, scored by the base's endpoint picker, and
watched per adapter.

What it follows (docs/charts.md, "Serving"):
- vLLM 0.34.0 (PyPI sdist sha256 fcad848b...): `--enable-lora`, `--max-loras`, `--max-lora-rank`, `--max-cpu-loras`
  (vllm/engine/arg_utils.py, LoRAConfig group); `--lora-modules` (vllm/entrypoints/common/cli_args.py: one flag
  taking every adapter, nargs "+", LoRAParserAction replaces the list on each occurrence; JSON items name, path,
  base_model_name). An absolute path is used as it is, without the Hub (vllm/lora/utils.py
  get_adapter_absolute_path); static adapters load at start and the start fails if one fails
  (openai/models/serving.py init_static_loras); a request whose body `model` is an adapter's name is served with it
  (serve/engine/serving.py _check_model, _maybe_get_adapters). VLLM_ALLOW_RUNTIME_LORA_UPDATING stays unset: it
  would open /v1/load_lora_adapter on the team route (serve/lora/api_router.py).
- The Hub's cache layout (huggingface_hub at ee0a4510, constants.py HF_HUB_CACHE = HF_HOME/hub, file_download.py
  repo_folder_name `models--<org>--<repo>`, snapshots/<commit>): where `hf download --revision <commit>` leaves an
  adapter, which the servers read offline.
- The endpoint picker, GAIE v1.5.0 (df9f8909): `lora-affinity-scorer` (cmd/epp/runner/runner.go registers it;
  pkg/epp/framework/plugins/scheduling/scorer/loraaffinity: no parameters; 1.0 where the adapter is active, 0.8 with
  a free slot, 0.6 where it waits, 0 when full), reading vllm:lora_requests_info from each server directly. It reads
  the body `model` as the request's target (pkg/epp/requestcontrol/director.go mutateModel) and records
  inference_objective_request_total and, for a response carrying `usage`, inference_objective_input_tokens /
  _output_tokens, labelled model_name (the body's) and target_model_name (what the server was asked for)
  (pkg/epp/metrics/metrics.go, handlers/response.go HandleResponseBody).
- Usage in streamed responses: not forced. `--enable-force-include-usage` puts a cumulative `usage` in every streamed
  chunk (vllm/entrypoints/serve/utils/api_utils.py should_include_usage returns continuous usage too), and the picker
  records the histograms once per chunk that carries one (handlers/response.go; parsers/openai/openai.go
  extractUsageStreaming), so every streamed request would be counted many times over. Counted are the responses
  that carry usage once: non-streamed ones, and streamed ones asked with `stream_options.include_usage`
  (docs/for-ml-teams.md).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from aks_gpu_platform.config.inference.adapters import (
    ADAPTER_CONTAINER_PREFIX,
    AdapterConfig,
    lora_slots,
    max_lora_rank,
)
from aks_gpu_platform.config.inference.models import ServedModelConfig

from ..monitoring.alerts import AlertSpec
from .model_dashboards import picker_pods

HUB_CACHE = "huggingface/hub"
"""HF_HUB_CACHE under HF_HOME, where the staging Job and the servers both point HF_HOME."""
ADAPTER_FILES = ("adapter_config.json", "adapter_model.*")
"""What the staging Job takes of an adapter's repository: what vLLM reads of it (vllm/lora/peft_helper.py
adapter_config.json; vllm/lora/lora_model.py adapter_model.safetensors, .bin or .pt), not the optimizer states or
tokenizer a training run may have pushed beside them."""
LORA_AFFINITY_SCORER = "lora-affinity-scorer"
LORA_AFFINITY_WEIGHT = 1
"""The picker's default scorer weight (GAIE v1.5.0 pkg/epp/config/loader/defaults.go DefaultScorerWeight), as GAIE's
own configs with this scorer leave it (test/integration/epp/testdata/default-config.yaml)."""
LORA_SERIES = "vllm:lora_requests_info"
"""vLLM's only LoRA series (vllm/v1/metrics/loggers.py): a gauge whose labels list the running and waiting adapters,
a new series for each combination seen for the life of the server. The picker reads it from the servers itself;
the managed Prometheus scrape drops it."""
REQUESTS = "inference_objective_request_total"
INPUT_TOKENS = "inference_objective_input_tokens"
OUTPUT_TOKENS = "inference_objective_output_tokens"
TOKEN_WINDOW = "5m"


def snapshot_path(cache_mount: str, adapter: AdapterConfig) -> str:
    """Where the staged adapter lies in the weights cache: the Hub cache's snapshot folder of its commit."""
    repo = adapter.source.hugging_face
    assert repo is not None and adapter.source.revision is not None, "Blob adapters are refused in config"
    folder = "--".join(["models", *repo.split("/")])
    return f"{cache_mount}/{HUB_CACHE}/{folder}/snapshots/{adapter.source.revision}"


def adapter_args(model: ServedModelConfig, cache_mount: str) -> list[str]:
    """`vllm serve` flags for the model's adapters (none without): LoRA on, its slots and rank, every adapter kept in
    host memory, and each adapter loaded at start from its staged folder under its own name."""
    if not model.adapters:
        return []
    modules = [
        json.dumps(
            {"name": adapter.name, "path": snapshot_path(cache_mount, adapter), "base_model_name": model.name},
            separators=(",", ":"),
        )
        for adapter in model.adapters
    ]
    return [
        "--enable-lora",
        "--max-loras",
        str(lora_slots(model)),
        "--max-lora-rank",
        str(max_lora_rank(model.adapters)),
        "--max-cpu-loras",
        str(len(model.adapters)),
        "--lora-modules",
        *modules,
    ]


def adapter_staging(model: ServedModelConfig, base_download: dict[str, Any]) -> dict[str, Any]:
    """The staging Job's init containers (none without adapters): `adapter-<name>` downloads the files vLLM reads of
    each adapter at its commit into the same Hub cache, with the base download's image, environment (its Hub token
    included) and mounts, one after the other before it."""
    containers: list[dict[str, Any]] = []
    for adapter in model.adapters:
        source = adapter.source
        assert source.hugging_face is not None and source.revision is not None, "Blob adapters are refused in config"
        container = copy.deepcopy(base_download)
        container["name"] = f"{ADAPTER_CONTAINER_PREFIX}{adapter.name}"
        container["args"] = ["download", source.hugging_face, "--revision", source.revision]
        for pattern in ADAPTER_FILES:
            container["args"] += ["--include", pattern]  # one pattern per flag, as the base's --exclude
        containers.append(container)
    return {"initContainers": containers} if containers else {}


def lora_series_drop(model: ServedModelConfig) -> list[dict[str, Any]]:
    """The servers' scrape: metric relabelings dropping vLLM's LoRA series (none without adapters)."""
    if not model.adapters:
        return []
    return [{"sourceLabels": ["__name__"], "regex": LORA_SERIES, "action": "drop"}]


def _picker_selector(namespace: str, model: str) -> str:
    return f'namespace="{namespace}",pod=~"{picker_pods(model)}"'


def served_rate(namespace: str, model: str, metric: str, name: str) -> str:
    """PromQL: per second over TOKEN_WINDOW, what the model's picker recorded for requests the servers were asked to
    serve as `name` (a counter, or a histogram's `_sum`)."""
    return f'sum(rate({metric}{{{_picker_selector(namespace, model)},target_model_name="{name}"}}[{TOKEN_WINDOW}]))'


def output_share(namespace: str, model: str, name: str) -> str:
    """PromQL: `name`'s share of the output tokens the model's servers produced (among responses carrying usage)."""
    total = f"sum(rate({OUTPUT_TOKENS}_sum{{{_picker_selector(namespace, model)}}}[{TOKEN_WINDOW}]))"
    return f"{served_rate(namespace, model, OUTPUT_TOKENS + '_sum', name)} / {total}"


def adapter_panel_queries(namespace: str, model: ServedModelConfig) -> dict[str, list[tuple[str, str, str]]]:
    """Panel title -> its targets (legend, PromQL, unit), one panel per adapter."""
    panels: dict[str, list[tuple[str, str, str]]] = {}
    for adapter in model.adapters:
        name = adapter.name
        panels[f"Adapter {name}"] = [
            ("requests/s", served_rate(namespace, model.name, REQUESTS, name), "reqps"),
            ("input tokens/s", served_rate(namespace, model.name, INPUT_TOKENS + "_sum", name), "none"),
            ("output tokens/s", served_rate(namespace, model.name, OUTPUT_TOKENS + "_sum", name), "none"),
            ("share of the model's output tokens", output_share(namespace, model.name, name), "percentunit"),
        ]
    return panels


def with_adapter_panels(board: dict[str, Any], namespace: str, model: ServedModelConfig) -> dict[str, Any]:
    """The model's dashboard with a row of panels per adapter appended below its own."""
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    panels = list(board["panels"])
    below = max((p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels), default=0)
    for index, (title, targets) in enumerate(adapter_panel_queries(namespace, model).items()):
        panels.append(
            {
                "id": len(panels) + 1,
                "type": "timeseries",
                "title": title,
                "datasource": datasource,
                "gridPos": {"x": 0, "y": below + index * 8, "w": 24, "h": 8},
                # Rates and a share on one panel: each target on its own axis unit through an override.
                "fieldConfig": {
                    "defaults": {"unit": "none"},
                    "overrides": [
                        {
                            "matcher": {"id": "byFrameRefID", "options": chr(ord("A") + i)},
                            "properties": [{"id": "unit", "value": unit}],
                        }
                        for i, (_, _, unit) in enumerate(targets)
                    ],
                },
                "targets": [
                    {"refId": chr(ord("A") + i), "datasource": datasource, "expr": expr, "legendFormat": legend}
                    for i, (legend, expr, _) in enumerate(targets)
                ],
            }
        )
    return {**board, "panels": panels}


def with_adapters_named(alert: AlertSpec, model: ServedModelConfig) -> AlertSpec:
    """The model's SLO alert, its description naming the adapters whose requests it covers: vLLM labels every series
    with the base's served name, adapters' requests included, and keeps no per-adapter latency."""
    if not model.adapters:
        return alert
    name, expr, for_, severity, description = alert
    names = ", ".join(adapter.name for adapter in model.adapters)
    return (name, expr, for_, severity, f"{description}. It covers the requests to its adapters too: {names}")


def adapter_endpoints(model: ServedModelConfig, team_urls: dict[str, str]) -> dict[str, dict[str, str]]:
    """Adapter -> team -> its base URL: the base's listener with the adapter's path."""
    return {
        adapter.name: {
            team: url.removesuffix(f"/{model.name}/v1") + f"/{adapter.name}/v1" for team, url in team_urls.items()
        }
        for adapter in model.adapters
    }
