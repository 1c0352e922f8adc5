"""Resource transforms (`ResourceOptions.transforms`) run as the Pulumi engine runs them, for the mock monitor.

The engine, not the SDK, runs transforms (pulumi/pulumi pkg/resource/deploy/source_eval.go, RegisterResource, at
00cc158c): first the resource's own, then those of its parent, its parent's parent and so on, each on what the one
before returned, and only then reads the registration's aliases and options. It calls each transform through the
program's callback server (`Callbacks.Invoke` with a `TransformRequest`) and keeps the `TransformResponse`'s
properties and options. Pulumi's MockMonitor runs none: without this, what a transform adds (the aliases
components/shared/placement.py gives a platform's descendants) would never reach a recording.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from pulumi.runtime._callbacks import _CallbackServicer
from pulumi.runtime.proto import resource_pb2

# Registration field <-> the transform's option of the same meaning (source_eval.go builds the one from the other).
_OPTIONS = {
    "dependencies": "depends_on",
    "ignoreChanges": "ignore_changes",
    "replaceOnChanges": "replace_on_changes",
    "version": "version",
    "aliases": "aliases",
    "provider": "provider",
    "pluginDownloadURL": "plugin_download_url",
    "deletedWith": "deleted_with",
    "additionalSecretOutputs": "additional_secret_outputs",
    "providers": "providers",
    "pluginChecksums": "plugin_checksums",
}
_OPTIONAL = {"protect": "protect", "retainOnDelete": "retain_on_delete", "customTimeouts": "custom_timeouts"}


class EngineTransforms:
    """The transforms of every registered resource, by URN, and its parent: what a descendant's registration runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parents: dict[str, str] = {}
        self._transforms: dict[str, list[Any]] = {}

    def apply(self, request: Any) -> Any:
        """The registration as the engine goes on with it: the resource's transforms, then its ancestors'."""
        callbacks = list(request.transforms)
        with self._lock:
            ancestor = request.parent
            while ancestor:
                callbacks += self._transforms.get(ancestor, [])
                ancestor = self._parents.get(ancestor, "")
        if not callbacks:
            return request
        transformed = type(request)()
        transformed.CopyFrom(request)
        for callback in callbacks:
            _take(transformed, _invoke(callback, _transform_request(transformed)))
        return transformed

    def remember(self, urn: str, request: Any) -> None:
        """A registration's parent and own transforms, which its descendants' registrations run."""
        with self._lock:
            self._parents[urn] = request.parent
            self._transforms[urn] = list(request.transforms)


def _invoke(callback: Any, transform: Any) -> Any:
    """Run a transform as the engine's `Callbacks.Invoke` does: the program's callback, on the program's event loop
    (free while this registration waits in its executor thread), from and to the wire form. Pulumi's own mock
    monitor finds a program's callbacks the same way (pulumi/runtime/mocks.py `_resolve_callbacks`)."""
    for servicer in _CallbackServicer._servicers:
        if callback.token in servicer._callbacks:
            return asyncio.run_coroutine_threadsafe(
                _respond(servicer, callback.token, transform), servicer._loop
            ).result()
    raise LookupError(f"no callback server of this program holds transform {callback.token}")


async def _respond(servicer: _CallbackServicer, token: str, transform: Any) -> Any:
    return await servicer._callbacks[token](transform.SerializeToString())


def _transform_request(request: Any) -> Any:
    options = resource_pb2.TransformResourceOptions()
    for field, option in _OPTIONS.items():
        _copy(request, field, options, option)
    for field, option in _OPTIONAL.items():
        if request.HasField(field):
            _copy(request, field, options, option)
    if request.deleteBeforeReplaceDefined:
        options.delete_before_replace = request.deleteBeforeReplace
    return resource_pb2.TransformRequest(
        type=request.type,
        name=request.name,
        custom=request.custom,
        parent=request.parent,
        properties=request.object,
        options=options,
    )


def _take(request: Any, response: Any) -> None:
    """Write a transform's result into the registration."""
    request.object.CopyFrom(response.properties)
    options = response.options
    for field, option in _OPTIONS.items():
        request.ClearField(field)
        _copy(options, option, request, field)
    for field, option in _OPTIONAL.items():
        request.ClearField(field)
        if options.HasField(option):
            _copy(options, option, request, field)
    request.deleteBeforeReplaceDefined = options.HasField("delete_before_replace")
    request.deleteBeforeReplace = options.delete_before_replace


def _copy(source: Any, field: Any, target: Any, into: str) -> None:
    value = getattr(source, field)
    if isinstance(value, bool | str):
        setattr(target, into, value)
    elif hasattr(value, "CopyFrom"):
        getattr(target, into).CopyFrom(value)
    elif hasattr(value, "items"):
        getattr(target, into).update(value)
    else:
        getattr(target, into).extend(value)
