"""Errors at the edges: each names the field (or file, line and column) and says what to do."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.vm_sizes import CPU_SIZES, closest_cpu_sizes, cpu_size, ephemeral_os_disk_limit_gib
from aks_gpu_platform.config.field_paths import model_class, strip_annotated, union_members
from aks_gpu_platform.config.loader import PROJECT, settings_from_runtime_config
from aks_gpu_platform.config.platform import PlatformConfig
from aks_gpu_platform.testing.stack_files import (
    OFFLINE_SECRET,
    load_stack_file,
    read_stack_yaml,
    secret_paths,
    to_runtime_config,
)
from tests.conftest import assert_rejected, plan_in_process, set_path, settings_of
from tools import REPO_ROOT

DEV = settings_of(load_stack_file("dev", REPO_ROOT))


def _dev(**changes: Any) -> dict[str, Any]:
    settings = copy.deepcopy(DEV)
    for path, value in changes.items():
        set_path(settings, path.replace("__", "."), value)
    return settings


# --- YAML syntax errors: file, line, column, the fix, exit 2, no traceback ---------------------------------------

INDENTATION_SLIP = """config:
  aks-gpu-platform:environment: dev
  aks-gpu-platform:cluster:
    name: aks-gpu-dev
   dnsPrefix: aks-gpu-dev
"""


def test_plan_reports_a_yaml_indentation_slip_with_file_line_and_column_and_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "Pulumi.slip.yaml"
    broken.write_text(INDENTATION_SLIP)
    result = plan_in_process("--stack", "dev", "--config-file", str(broken), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, "a syntax error is a config error (2), not a crash (1)"
    assert "Traceback" not in result.stderr + result.stdout, "a YAML slip must not print Python internals"
    assert f"{broken}:5:4:" in result.stderr, f"the message must name file:line:column:\n{result.stderr}"
    assert "indent it exactly like its siblings" in result.stderr, "and say how to fix it"
    assert "5 |    dnsPrefix: aks-gpu-dev" in result.stderr, "and show the offending line"
    assert len(result.stderr.splitlines()) < 6, f"a few lines, not a 40-line traceback:\n{result.stderr}"


@pytest.mark.parametrize(
    ("text", "where", "fix"),
    [
        ("config:\n  aks-gpu-platform:cluster:\n    name: a\n      dnsPrefix: b\n", ":4:16:", "indented deeper"),
        ("config:\n\taks-gpu-platform:location: x\n", ":2:1:", "spaces, not tabs"),
        ('config:\n  aks-gpu-platform:location: "krc\n  aks-gpu-platform:environment: dev\n', ":4:1:", "quote"),
        ("config:\n  - aks-gpu-platform:location\n", "", "a `config:` mapping"),
    ],
    ids=["key too deep", "tab", "unclosed quote", "config is a list"],
)
def test_stack_file_syntax_errors_name_the_place_and_the_fix(tmp_path: Path, text: str, where: str, fix: str) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_stack_yaml(path)
    message = str(caught.value)
    assert f"{path}{where}" in message, f"the message must name {path}{where}:\n{message}"
    assert fix in message, f"the message must say what to fix ({fix!r}):\n{message}"


# --- a number where a version string belongs ---------------------------------------------------------------------


def test_an_unquoted_kubernetes_version_says_to_quote_it_with_the_minor_it_meant(tmp_path: Path) -> None:
    stack = yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text())
    text = yaml.safe_dump(stack).replace("kubernetesVersion: '1.36'", "kubernetesVersion: 1.30")
    assert "kubernetesVersion: 1.30\n" in text, "the test must write the version unquoted, as a user would"
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    encoded, _ = to_runtime_config(read_stack_yaml(path), PROJECT)
    error = assert_rejected(
        settings_from_runtime_config(encoded),
        "YAML reads 1.30 as the number 1.3; the message must not leave the user guessing",
        "cluster.kubernetesVersion",
        'got 1.3 (a number); quote it: kubernetesVersion: "1.30"',
    )
    assert len(error.problems) == 1, f"one problem, not a cascade: {error.problems}"


def test_a_number_in_any_text_field_says_to_quote_it() -> None:
    assert_rejected(
        _dev(monitoring__dcgmExporter__chartVersion=4.8),
        "chart versions are text; YAML makes 4.8 a number",
        "monitoring.dcgmExporter.chartVersion",
        'got 4.8 (a number); quote it: chartVersion: "4.8"',
    )


# --- bounds say why they exist -----------------------------------------------------------------------------------


def test_a_two_hour_maintenance_window_says_the_range_and_why() -> None:
    assert_rejected(
        _dev(upgrade__autoUpgradeWindow__durationHours=2),
        "a bare 'greater than or equal to 4' does not say that AKS imposes the bound",
        "upgrade.autoUpgradeWindow.durationHours",
        "must be from 4 to 24; AKS requires maintenance windows of 4 to 24 hours",
    )


def test_a_too_long_drain_timeout_names_the_aks_limit() -> None:
    assert_rejected(
        _dev(upgrade__gpuPools__drainTimeoutInMinutes=2000),
        "the user must learn the limit is AKS's, not the project's whim",
        "upgrade.gpuPools.drainTimeoutInMinutes",
        "must be from 1 to 1440; Long enough for training jobs to checkpoint; AKS allows 1-1440 min",
    )


def _models(model: type[Any], seen: set[type[Any]]) -> None:
    seen.add(model)
    for info in model.model_fields.values():
        stack = [info.annotation]
        while stack:
            annotation = strip_annotated(stack.pop())[0]
            found = model_class(annotation)
            if found is not None and found not in seen:
                _models(found, seen)
            for member in union_members(annotation):
                stack.extend(getattr(member, "__args__", ()))


def test_every_field_has_a_description_so_every_bound_can_say_why() -> None:
    seen: set[type[Any]] = set()
    _models(PlatformConfig, seen)
    assert len(seen) > 40, "the walk must reach every section's models"
    missing = [f"{m.__name__}.{name}" for m in seen for name, info in m.model_fields.items() if not info.description]
    assert not missing, f"these fields have no description (the reference and bound errors use it): {missing}"


# --- CPU VM sizes are checked against the catalog ----------------------------------------------------------------


@pytest.mark.parametrize("pool", ["systemPool", "cpuPool"])
def test_a_cpu_vm_size_typo_is_rejected_with_the_size_it_meant(pool: str) -> None:
    assert_rejected(
        _dev(**{f"{pool}__vmSize": "Standard_D4dsv5"}),
        "a typo used to reach Azure and fail halfway through a deploy",
        f"{pool}.vmSize",
        "did you mean Standard_D4ds_v5",
    )


def test_a_gpu_size_is_not_a_cpu_pool_size() -> None:
    assert_rejected(
        _dev(cpuPool__vmSize="Standard_NC4as_T4_v3"),
        "the CPU pool runs monitoring and API servers; a GPU VM there wastes GPUs",
        "cpuPool.vmSize",
        "not a CPU size of the catalog",
    )


def test_a_catalogued_v6_size_is_accepted_and_looked_up_as_azure_does() -> None:
    cfg = load_platform_config(_dev(cpuPool__vmSize="Standard_E8ads_v6", systemPool__vmSize="Standard_F4as_v6"))
    assert (cfg.cpu_pool.vm_size, cfg.system_pool.vm_size) == ("Standard_E8ads_v6", "Standard_F4as_v6")
    assert cpu_size("STANDARD_E8ADS_V6") == cpu_size("Standard_E8ads_v6"), "Azure size names are case-insensitive"
    assert closest_cpu_sizes("Standard_E8adsv6")[0] == "Standard_E8ads_v6"


def test_an_ephemeral_os_disk_on_a_size_without_local_disk_points_at_the_size_with_one() -> None:
    assert_rejected(
        _dev(cpuPool__vmSize="Standard_D8s_v5", cpuPool__osDiskType="Ephemeral"),
        "Ephemeral needs a local disk; the message names the sibling size that has one",
        "cpuPool.osDiskType",
        "or Standard_D8ds_v5",
    )


def test_edsv6_takes_no_ephemeral_os_disk_though_it_has_local_disks() -> None:
    assert ephemeral_os_disk_limit_gib("Standard_E8ds_v6") is None, "its series page lists no ephemeral OS disk"
    assert ephemeral_os_disk_limit_gib("Standard_D8ds_v6") == 440, "Ddsv6 supports it on its (one) NVMe disk"
    assert ephemeral_os_disk_limit_gib("Standard_D32ds_v6") == 440, "the OS disk uses one NVMe drive, not all four"


def _ratio(name: str) -> int:
    family = name.removeprefix("Standard_")
    if family.startswith("E"):
        return 8
    if family.startswith("F"):
        return {"as": 4, "als": 2, "ams": 8}[family.split("_")[0].lstrip("F0123456789")]
    return 2 if "l" in family.split("_")[0] else 4


# Sizes whose memory the series pages list off the per-vCPU ratio.
MEMORY_EXCEPTIONS = {
    "Standard_E96s_v5": 672,
    "Standard_E96ds_v5": 672,
    "Standard_E104is_v5": 672,
    "Standard_E104ids_v5": 672,
    "Standard_E96as_v5": 672,
    "Standard_E96ads_v5": 672,
    "Standard_E112ias_v5": 672,
    "Standard_E112iads_v5": 672,
    "Standard_E96as_v6": 672,
    "Standard_E96ads_v6": 672,
    "Standard_E192is_v6": 1832,
    "Standard_E192ids_v6": 1832,
}


def test_the_cpu_catalog_rows_follow_their_series_rules() -> None:
    assert len(CPU_SIZES) > 200, "D, E and F v5/v6 families"
    for name, size in CPU_SIZES.items():
        assert f"{size.vcpus}" in name, f"{name}: the vCPU count is in the size name"
        expected = MEMORY_EXCEPTIONS.get(name, size.vcpus * _ratio(name))
        assert size.memory_gib == expected, f"{name}: memory {size.memory_gib} GiB, series rule says {expected}"
        total = size.temp_disks * size.temp_disk_gib
        local = "d" in name.removeprefix("Standard_").split("_")[0].lstrip("DEF0123456789")
        assert (total > 0) == local, f"{name}: sizes with 'd' in the name have a local disk, others none"
        if name.endswith("_v6") and local:
            assert total == 55 * size.vcpus, f"{name}: v6 NVMe temp storage is 55 GiB per vCPU"
        elif local and name not in ("Standard_E104ids_v5", "Standard_E112iads_v5"):
            assert total * 2 == 75 * size.vcpus, f"{name}: v5 temp disks are 37.5 GiB per vCPU"
    d4 = cpu_size("Standard_D4ds_v5")
    assert d4 is not None and (d4.vcpus, d4.memory_gib, d4.temp_disk_gib) == (4, 16, 150), "the dev stack's size"


# --- nested secrets in the offline plan ---------------------------------------------------------------------------


def _with_nested_secret() -> dict[str, Any]:
    config = load_stack_file("dev", REPO_ROOT)
    # What `pulumi config set --secret --path 'monitoring.alerts.emailReceivers[0].email' ...` writes.
    config["aks-gpu-platform:monitoring"]["alerts"]["emailReceivers"][0]["email"] = {"secure": "v1:Zm9vYmFy"}
    config["aks-gpu-platform:tags"]["costCenter"] = {"secure": "v1:YmF6"}
    return config


def test_nested_secrets_become_placeholders_that_fit_their_field_and_mark_the_key_secret() -> None:
    encoded, secret_keys = to_runtime_config(_with_nested_secret(), PROJECT)
    assert set(secret_keys) == {"aks-gpu-platform:monitoring", "aks-gpu-platform:tags"}, (
        "the CLI marks a key secret when any value inside it is; so must the offline plan"
    )
    cfg = load_platform_config(settings_from_runtime_config(encoded))
    email = cfg.monitoring.alerts.email_receivers[0].email
    assert email == "offline-secret@example.com", "an email field gets a placeholder address, not a generic string"
    assert cfg.tags["costCenter"] == OFFLINE_SECRET
    assert secret_paths(_with_nested_secret()) == ["tags.costCenter", "monitoring.alerts.emailReceivers[0].email"]


def test_plan_accepts_a_stack_file_with_a_nested_secret(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": _with_nested_secret()}))
    result = plan_in_process("--stack", "dev", "--config-file", str(path), "--out", str(tmp_path / "out"), "--detail")
    assert result.returncode == 0, f"a nested secret must not stop the offline plan:\n{result.stderr}"
    assert "Secrets (2): encrypted (secure:)" in result.stdout, "the plan says which values it stood in for"
    assert "monitoring.alerts.emailReceivers[0].email" in result.stdout
    assert "emails=[offline-secret@example.com]" in result.stdout, "the action group gets the placeholder address"
    warnings = [line for line in result.stdout.splitlines() if line.strip().startswith("warning:")]
    assert warnings, "the dev stack's real placeholders are still listed"
    assert not [w for w in warnings if "emailReceivers[0].email" in w], (
        "a secret's stand-in is not a placeholder to replace: the CLI decrypts the real value"
    )


# --- "did you mean" for unknown keys -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field", "hint"),
    [
        ({"cpuPool__vmsize": "Standard_D4ds_v5"}, "cpuPool.vmsize", "did you mean vmSize?"),
        ({"gpuPools__0__migprofile": "MIG1g"}, "gpuPools[0].migprofile", "did you mean migProfile?"),
        ({"upgrade__autoUpgradeWindow__durationHour": 4}, "upgrade.autoUpgradeWindow.durationHour", "durationHours"),
        ({"storage__lustre__capacityTib": 4}, "storage.lustre.capacityTib", "did you mean capacityTiB?"),
    ],
    ids=["case slip", "inside a list", "missing letter", "alias with capitals"],
)
def test_an_unknown_key_suggests_the_closest_known_one(change: dict[str, Any], field: str, hint: str) -> None:
    assert_rejected(_dev(**change), "a misspelt key must point at the right one", field, hint)


def test_an_unknown_top_level_key_suggests_the_stack_key() -> None:
    settings = copy.deepcopy(DEV)
    settings["gpuPool"] = settings.pop("gpuPools")
    error = assert_rejected(settings, "a top-level typo", "gpuPool", "did you mean gpuPools")
    assert any(p.startswith("gpuPools: required setting is missing") for p in error.problems), error.problems


def test_an_unknown_key_with_no_close_match_lists_the_keys_allowed_there() -> None:
    assert_rejected(
        _dev(gpuStack__foo=True), "nothing close: list what is allowed", "gpuStack.foo", "keys here: mode, operatorDcgm"
    )
