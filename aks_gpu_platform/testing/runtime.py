"""Evaluate a Pulumi program under the recording mocks: no cloud, no Pulumi CLI, no credentials."""

from __future__ import annotations

import asyncio
import gc
import os
import runpy
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from aks_gpu_platform.config.loader import PROJECT

from .mocks import RecordingMocks, RecordingMonitor
from .recording import Recording
from .stack_files import known_stacks, read_stack_yaml, to_runtime_config
from .unknowns import acyclic_unknowns_check


def _reset_runtime(
    recording: Recording,
    stack: str,
    preview: bool,
    project: str,
    stack_references: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    pulumi_settings.set_root_resource(None)  # type: ignore[arg-type]
    # A failed earlier run leaves failed RPCs and outputs behind; they must not re-raise in this one.
    pulumi_settings._get_rpc_manager().clear()
    pulumi_settings.SETTINGS.outputs.clear()  # pyright: ignore[reportAttributeAccessIssue]
    references = {name: dict(outputs) for name, outputs in (stack_references or {}).items()}
    mocks = RecordingMocks(recording, references)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=RecordingMonitor(mocks))


def evaluate(
    program: Callable[[], Any],
    config: Mapping[str, Any] | None = None,
    *,
    stack: str = "test",
    project: str = PROJECT,
    preview: bool = False,
    stack_references: Mapping[str, Mapping[str, Any]] | None = None,
) -> Recording:
    """Run `program` under fresh recording mocks and return what it registered and exported.

    `config` is shaped like a stack file's `config:` map: `namespace:key` (a key without a namespace
    belongs to `project`) to the value as YAML reads it. Objects and lists reach the program as
    JSON, as the Pulumi CLI hands them over; a `secure:` value cannot be decrypted offline and
    becomes a placeholder that fits its field, marked secret. `stack_references` maps a referenced
    stack's name (`org/project/stack`) to the outputs `pulumi.StackReference` should read.

    `preview=True` evaluates as `pulumi preview` does. Only one evaluation runs at a time per
    process (Pulumi's runtime is global).
    """
    encoded, secret_keys = to_runtime_config(dict(config or {}), project)
    recording = Recording()
    _reset_runtime(recording, stack, preview, project, stack_references)
    set_all_config(encoded, secret_keys)
    with _cyclic_gc_paused(), acyclic_unknowns_check():
        try:
            _sync_await(run_pulumi_func(program))
        except BaseException as failure:
            _settle(failure)
            raise
        root = pulumi_settings.get_root_resource()
        outputs = getattr(root, "outputs", {}) or {}
        for key, value in outputs.items():
            output = pulumi.Output.from_input(value)
            recording.stack_outputs[key] = _sync_await(output.future())
            if _sync_await(output.is_secret()):
                recording.secret_outputs.add(key)
    return recording


# A failed evaluation's outstanding registrations must finish before the next one: they run in the event
# loop's worker threads, and the next evaluation (or test) would otherwise share the process with them.
SETTLE_TIMEOUT_SECONDS = 60.0


def _settle(failure: BaseException) -> None:
    """After a failed program: finish every task it left on the loop, then drop the copies of its error.

    The SDK's `wait_for_rpcs` stops at the first failed RPC; the others keep running in executor threads and
    resume whenever the loop next runs, inside the next evaluation. Each failed Output also keeps a Future whose
    error is the one the caller receives: asyncio would print it again at collection ("Future exception was
    never retrieved") for every resource that depended on the failure.
    """
    loop = asyncio.get_event_loop()

    async def drain() -> None:
        me = asyncio.current_task()
        deadline = loop.time() + SETTLE_TIMEOUT_SECONDS
        while pending := [t for t in asyncio.all_tasks() if t is not me and not t.done()]:
            left = deadline - loop.time()
            if left <= 0:
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                return
            await asyncio.wait(pending, timeout=left)

    _sync_await(drain())
    for task in asyncio.all_tasks(loop):
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: asyncio no longer reports it at collection
    pulumi_settings._get_rpc_manager().clear()
    pulumi_settings.SETTINGS.outputs.clear()  # pyright: ignore[reportAttributeAccessIssue]
    _RAISED.append((type(failure), str(failure)))
    if loop.get_exception_handler() is not _quiet_copies:
        loop.set_exception_handler(_quiet_copies)


# The errors evaluations raised to their callers, most recent last.
_RAISED: deque[tuple[type[BaseException], str]] = deque(maxlen=64)


def _quiet_copies(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Drop asyncio's report of a never-retrieved copy of an error an evaluation raised; report the rest."""
    error = context.get("exception")
    never_retrieved = "never retrieved" in str(context.get("message"))
    if never_retrieved and isinstance(error, BaseException) and (type(error), str(error)) in _RAISED:
        return
    loop.default_exception_handler(context)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Run one evaluation without the cyclic garbage collector, then collect its garbage once.

    An evaluation allocates enough to trip the collector's thresholds again and again, and each full
    collection walks every imported SDK module (some 4x10^5 objects): paused, evaluations take half
    the time. What is left in cycles at the end (a few hundred objects, once `acyclic_unknowns_check`
    has removed the SDK's main source) is young and freed by one collection of the young generations.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect(1)  # what the evaluation allocated is young; older runs' leftovers sit in generation 1
        if enabled:
            gc.enable()


def program_from_file(path: str | os.PathLike[str]) -> Callable[[], None]:
    """A program that runs the Python file at `path` as its `__main__`, as the Pulumi CLI runs `__main__.py`."""
    entry = str(path)

    def run() -> None:
        runpy.run_path(entry, run_name="__main__")

    return run


def stack_file_path(path_or_stack: str | os.PathLike[str], project_dir: str | os.PathLike[str] | None = None) -> Path:
    """`Pulumi.<stack>.yaml` given as a path, or as a stack name in `project_dir` (default: the working directory)."""
    given = Path(path_or_stack)
    path = given if given.suffix in (".yaml", ".yml") else Path(project_dir or ".") / f"Pulumi.{given}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no stack file {path}; known stacks: {', '.join(known_stacks(path.parent)) or 'none'}")
    return path


def project_config(stack_file: Path) -> tuple[str, dict[str, Any], Path]:
    """The project's name, the stack's config and the program's entry file, as the Pulumi CLI finds them.

    The stack file's values win; keys it leaves out take the default `Pulumi.yaml` declares
    (pulumi/pulumi sdk/go/common/workspace/config.go, mergeConfig). The entry is `Pulumi.yaml`'s
    `main` (a file, or a folder holding `__main__.py`), else `__main__.py` beside it.
    """
    if not (stack_file.parent / "Pulumi.yaml").is_file():
        raise FileNotFoundError(f"no Pulumi.yaml beside {stack_file}: a stack file belongs to a Pulumi project")
    card = _project_card(stack_file.parent)
    name = str(card["name"])
    merged = read_stack_yaml(stack_file)
    for key, declared in (card.get("config") or {}).items():
        full_key = key if ":" in key else f"{name}:{key}"
        value = declared.get("default", declared.get("value")) if isinstance(declared, dict) else declared
        if full_key not in merged and value is not None:
            merged[full_key] = value
    return name, merged, project_entry(stack_file.parent)[1]


def _project_card(project_dir: Path) -> dict[str, Any]:
    return yaml.safe_load((project_dir / "Pulumi.yaml").read_text()) or {}


def project_entry(project_dir: Path) -> tuple[str, Path]:
    """The project's name and its program's entry file: `Pulumi.yaml`'s `main` (a file, or a folder holding
    `__main__.py`), else `__main__.py` beside it."""
    card = _project_card(project_dir)
    entry = project_dir / str(card.get("main") or "__main__.py")
    return str(card["name"]), entry / "__main__.py" if entry.is_dir() else entry


def evaluate_stack_file(
    path_or_stack: str | os.PathLike[str],
    program: Callable[[], Any] | None = None,
    *,
    project_dir: str | os.PathLike[str] | None = None,
    preview: bool = False,
    stack_references: Mapping[str, Mapping[str, Any]] | None = None,
) -> Recording:
    """Evaluate a Pulumi project with one of its stack files, as `pulumi up` in its folder would.

    `path_or_stack` is the path of a `Pulumi.<stack>.yaml`, or a stack name whose file sits in
    `project_dir` (default: the working directory). The project's name and config defaults come
    from the `Pulumi.yaml` beside it; `program` defaults to the project's own `__main__.py`.
    """
    stack_file = stack_file_path(path_or_stack, project_dir)
    project, config, entry = project_config(stack_file)
    return evaluate(
        program or program_from_file(entry),
        config,
        stack=stack_file.name.removeprefix("Pulumi.").rsplit(".", 1)[0],
        project=project,
        preview=preview,
        stack_references=stack_references,
    )
