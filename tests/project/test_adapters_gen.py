"""provider/adapters.py is generated: a new config field or component arg reaches other languages with no hand edit.

The proof runs where nothing can be edited by hand: a copy of the checkout whose config model and component
gain a key, the generator run there, and the schema the plugin serves from the copy read back.
"""

import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pulumi
import pytest

from aks_gpu_platform.plan.diff_command import planning_python
from tools import REPO_ROOT, adapters_gen

# What the generator and the plugin import: the package, components, config, provider, tools; and what installs the
# package from the copy (pyproject.toml's package-dir, the licence it names).
COPIED = ("aks_gpu_platform", "components", "config", "provider", "tools")
COPIED_FILES = ("pyproject.toml", "LICENSE")
NEW_FIELD = """
    gpu_sharing: Literal["exclusive", "timeSlicing"] = Field(
        default="exclusive", description="How pods share each GPU: whole GPUs or time slices"
    )
"""
NEW_ARG = '''
    audit_label: str
    """Label every registry audit record carries."""
'''
# Run in the copy: is the checked-in file stale after the edit, then regenerate and serve the schema.
IN_COPY = textwrap.dedent(
    """
    import importlib.util, json
    from tools import adapters_gen
    stale = adapters_gen.main(["--check"])
    adapters_gen.main([])
    spec = importlib.util.spec_from_file_location("plugin", "provider/__main__.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    from pulumi.provider.experimental.component import ComponentProvider
    served = ComponentProvider(plugin.COMPONENTS, plugin.PACKAGE, version="0.0.0").schema
    print(json.dumps({"stale": stale, "schema": json.loads(served)}))
    """
)


def edit(path: Path, anchor: str, addition: str) -> None:
    text = path.read_text()
    assert text.count(anchor) == 1, f"{path}: the anchor {anchor!r} moved; pick another line to add after"
    path.write_text(text.replace(anchor, anchor + addition))


@pytest.fixture(scope="module")
def edited_copy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The copy's staleness verdict and served schema after adding a GPU pool field and a Registry arg."""
    root = tmp_path_factory.mktemp("checkout")
    for name in COPIED:
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in COPIED_FILES:
        shutil.copy(REPO_ROOT / name, root / name)
    edit(
        root / "config" / "gpu" / "section.py",
        '    taints: list[str] = Field(default_factory=list, description="Extra taints, key=value:Effect")\n',
        NEW_FIELD.lstrip("\n"),
    )
    edit(root / "components" / "monitoring" / "registry.py", "class RegistryArgs(TypedDict):", NEW_ARG.rstrip("\n"))
    # The copy's own package: this interpreter's editable install maps aks_gpu_platform to the repository's folders.
    python = planning_python(root, tmp_path_factory.mktemp("interpreter"))
    run = subprocess.run([python, "-c", IN_COPY], cwd=root, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_model_edit_makes_the_checked_in_adapters_stale(edited_copy: dict[str, Any]) -> None:
    assert edited_copy["stale"] == 1, "`--check` (and the currency test) must fail until the adapters are regenerated"


def test_a_new_config_field_reaches_the_schema_typed_and_documented(edited_copy: dict[str, Any]) -> None:
    types = edited_copy["schema"]["types"]
    pool = types["aks-gpu-platform:index:GpuPoolSettings"]
    field = pool["properties"].get("gpuSharing")
    assert field is not None, "a GPU pool field added to the model is a key of other languages' pool settings"
    assert "How pods share each GPU" in field["description"] and "Default: exclusive" in field["description"], (
        "its description and default reach other languages' IDEs"
    )
    enum = types[field["$ref"].removeprefix("#/types/")]
    assert {e["value"] for e in enum["enum"]} == {"exclusive", "timeSlicing"}, "its Literal is a schema enum"
    assert "gpuSharing" not in pool.get("required", []), "a field with a default stays optional"


def test_a_new_component_arg_reaches_the_schema(edited_copy: dict[str, Any]) -> None:
    registry = edited_copy["schema"]["resources"]["aks-gpu-platform:index:Registry"]
    assert registry["inputProperties"]["auditLabel"]["description"] == "Label every registry audit record carries."
    assert "auditLabel" in registry["requiredInputs"], "a required arg is required in every language"


class ProbeArgs(TypedDict):
    settings: str
    """Anything representable."""
    waits_for: NotRequired[pulumi.Resource]
    """A resource of any kind (bare pulumi.Resource has no type token)."""


class Probe(pulumi.ComponentResource):
    """A component with an arg other languages cannot pass."""

    def __init__(self, name: str, args: ProbeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:index:Probe", name, None, opts)


class StrictProbeArgs(TypedDict):
    waits_for: pulumi.Resource
    """A resource of any kind, required."""


class StrictProbe(pulumi.ComponentResource):
    """A component that cannot be built without an arg other languages cannot pass."""

    def __init__(self, name: str, args: StrictProbeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:index:StrictProbe", name, None, opts)


def test_an_optional_arg_without_a_schema_type_is_left_out_and_said_so() -> None:
    body, left_out = adapters_gen.Writer().inputs(Probe)
    assert left_out == ["waits_for"], "other languages build the component without it"
    assert any(line.startswith("    settings: str") for line in body)


def test_a_required_arg_without_a_schema_type_stops_the_generator_naming_the_fix() -> None:
    with pytest.raises(adapters_gen.Unrepresentable, match=r"StrictProbe\.waits_for.*provider/__main__\.py"):
        adapters_gen.Writer().inputs(StrictProbe)
