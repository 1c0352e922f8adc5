"""The evaluation API's edges a consumer meets first: secrets in their stack file, a missing extra, a wrong name."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
from pathlib import Path

import pulumi
import pytest

from aks_gpu_platform.config.loader import settings_from_runtime_config
from aks_gpu_platform.testing import Recording, evaluate, evaluate_stack_file, schema_verdicts
from aks_gpu_platform.testing.mocks import RecordingMocks
from aks_gpu_platform.testing.recording import RecordedResource
from aks_gpu_platform.testing.stack_files import to_runtime_config


def test_a_secret_in_a_consumer_project_gets_a_placeholder_that_fits_the_platform_field() -> None:
    # What `pulumi config set --secret --path` writes in a project called `gpu-team`, which configures the
    # platform through its `aks-gpu-platform:*` keys like any consumer.
    config = {
        "aks-gpu-platform:monitoring": {"alerts": {"emailReceivers": [{"name": "ops", "email": {"secure": "v1:x"}}]}}
    }
    encoded, secret_keys = to_runtime_config(config, "gpu-team")
    assert secret_keys == ["aks-gpu-platform:monitoring"], "the key holding a secret is marked secret, as the CLI does"
    receiver = settings_from_runtime_config(encoded)["monitoring"]["alerts"]["emailReceivers"][0]
    assert receiver["email"] == "offline-secret@example.com", (
        "the platform's e-mail field gets an address whatever the consumer's project is called; a generic "
        "string would fail validation and stop the consumer's offline test"
    )


def test_schema_checks_without_the_testing_extra_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = RecordedResource(
        type="kubernetes:core/v1:Namespace", name="team", urn="urn:team", parent="", custom=True,
        inputs={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, outputs={},
        protect=False, ignore_changes=[], replace_on_changes=[], delete_before_replace=False,
        retain_on_delete=False, depends_on=[], deleted_with="", provider="",
    )  # fmt: skip
    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)  # as where the extra is not installed
    with pytest.raises(ModuleNotFoundError) as missing:
        schema_verdicts(Recording(resources=[namespace]), "1.33")
    assert "aks-gpu-platform[testing]" in str(missing.value), "the error names the extra that brings the schemas"


def test_an_unknown_stack_names_the_stacks_there_are(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-team\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    with pytest.raises(FileNotFoundError) as missing:
        evaluate_stack_file("prod", project_dir=tmp_path)
    assert "known stacks: dev" in str(missing.value), "a typo in the stack name is answered with the stacks there are"


def test_a_failed_evaluation_returns_only_when_everything_it_started_has_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK stops waiting at the first failed registration; the rest run on in the loop's worker threads. Left
    # running, they share the process with the next test (python/cpython#106905: `ast` in two threads at once
    # fails with "AST constructor recursion depth mismatch") and fill the log with never-retrieved errors.
    in_flight = 0
    lock = threading.Lock()
    original = RecordingMocks.new_resource

    def slow(self: RecordingMocks, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, object]]:
        nonlocal in_flight
        with lock:
            in_flight += 1
        try:
            time.sleep(0.05)
            return original(self, args)
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(RecordingMocks, "new_resource", slow)

    def program() -> None:
        first = pulumi.CustomResource("test:index:Thing", "first", {"value": "a"})
        for i in range(12):
            pulumi.CustomResource("test:index:Thing", f"other-{i}", {"value": str(i)})
        pulumi.CustomResource("test:index:Thing", "broken", {"value": first.urn.apply(_fail)})

    reports: list[dict[str, object]] = []
    loop = asyncio.get_event_loop()
    with pytest.raises(pulumi.RunError, match="broken on purpose"):
        evaluate(program)
    assert in_flight == 0, f"{in_flight} registrations still running after the failed evaluation returned"
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    assert not pending, f"tasks of the failed evaluation would resume inside the next one: {pending[:3]}"
    handler = loop.get_exception_handler()
    monkeypatch.setattr(loop, "default_exception_handler", lambda context: reports.append(context))
    gc.collect()
    if handler is not None:
        handler(loop, {"message": "Future exception was never retrieved", "exception": pulumi.RunError("other")})
    assert [str(r.get("exception")) for r in reports] == ["other"], (
        "copies of the error the caller already received are not printed again; any other error still is"
    )
    assert evaluate(lambda: pulumi.CustomResource("test:index:Thing", "next", {})).resources, (
        "the next evaluation starts clean"
    )


def _fail(_: str) -> str:
    raise pulumi.RunError("broken on purpose")


def test_a_components_transforms_reach_its_descendants_as_the_engine_runs_them() -> None:
    """pulumi/pulumi source_eval.go RegisterResource: a resource's own transforms, then its parent's, then its
    grandparent's, each on what the one before returned; a transform's aliases and options reach the registration."""
    seen: dict[tuple[str, str], list[str]] = {}

    def mark(tag: str) -> pulumi.ResourceTransform:
        async def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult:
            seen[(tag, args.name)] = [str(a.name) for a in args.opts.aliases or [] if isinstance(a, pulumi.Alias)]
            alias = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=f"{args.name}-{tag}")])
            return pulumi.ResourceTransformResult(args.props, pulumi.ResourceOptions.merge(args.opts, alias))

        return transform

    def program() -> None:
        outer = pulumi.ComponentResource(
            "test:index:Outer", "outer", None, pulumi.ResourceOptions(transforms=[mark("o")])
        )
        inner = pulumi.ComponentResource("test:index:Inner", "inner", None, pulumi.ResourceOptions(parent=outer))
        pulumi.CustomResource(
            "test:index:Leaf", "leaf", {"size": 1}, pulumi.ResourceOptions(parent=inner, transforms=[mark("l")])
        )

    recording = evaluate(program)
    names = {r.name: [spec["name"] for spec in r.alias_specs] for r in recording.resources}
    assert names["outer"] == ["outer-o"], "a transform runs on its own resource"
    assert names["inner"] == ["inner-o"], "and on its children"
    assert names["leaf"] == ["leaf-l", "leaf-o"], "a grandchild gets its own transform's and its grandparent's"
    assert seen[("l", "leaf")] == [] and seen[("o", "leaf")] == ["leaf-l"], (
        "its own transform runs first, its grandparent's on what that returned"
    )
    assert recording.one("test:index:Leaf").inputs == {"size": 1}, "the properties pass through unchanged"
