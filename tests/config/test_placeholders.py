"""Placeholder IDs, documentation IP ranges and example addresses never reach a real deployment."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub

from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.loader import running_under_engine
from aks_gpu_platform.config.placeholders import (
    EXAMPLE_DOMAIN,
    IP_RANGE,
    OBJECT_ID,
    find_placeholders,
    refuse_placeholders,
)
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.recording_cache import RECORDING_CACHE
from aks_gpu_platform.testing import evaluate, runtime
from aks_gpu_platform.testing.mocks import RecordingMocks, RecordingMonitor
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import STACKS, set_path, settings_of
from tools import REPO_ROOT

PROJECT = "aks-gpu-platform"
STACK_TYPE = "pulumi:pulumi:Stack"


class EngineMonitor(ResourceMonitorStub):
    """Stands in for the engine's gRPC resource monitor: a ResourceMonitorStub, so the program takes the path of a
    real `pulumi preview` / `pulumi up`, that answers like the recording mocks instead of over gRPC."""

    def __init__(self, mocks: RecordingMocks) -> None:  # no channel: every call goes to the recording mocks
        self._inner = RecordingMonitor(mocks)
        self.registered: list[str] = []

    # The stub's RegisterResource is a gRPC callable; this one answers in-process, as the monitor's methods are called.
    def RegisterResource(self, request: Any) -> Any:  # pyright: ignore[reportIncompatibleVariableOverride]
        if request.type != STACK_TYPE:
            self.registered.append(request.type)
        return self._inner.RegisterResource(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EngineMonitor]]:
    """Run the offline evaluations of this test as if the engine drove them; yields the monitors used."""
    monitors: list[EngineMonitor] = []
    monkeypatch.setenv(RECORDING_CACHE, "")  # the evaluations must run against the stand-in, not be read back

    def make(mocks: RecordingMocks) -> EngineMonitor:
        monitors.append(EngineMonitor(mocks))
        return monitors[-1]

    monkeypatch.setattr(runtime, "RecordingMonitor", make)
    yield monitors


def _clean(config: dict[str, Any]) -> dict[str, Any]:
    """The stack config with every stand-in replaced by a value a real tenant could have."""
    cluster = config[f"{PROJECT}:cluster"]
    cluster["entraId"]["adminGroupObjectIds"] = [str(uuid.uuid4()) for _ in cluster["entraId"]["adminGroupObjectIds"]]
    cluster["apiServer"]["authorizedIpRanges"] = ["20.41.128.0/24", "52.141.7.19/32"]
    for i, receiver in enumerate(config[f"{PROJECT}:monitoring"]["alerts"]["emailReceivers"]):
        receiver["email"] = f"gpu-oncall-{i}@aksgpu-platform.io"
    config[f"{PROJECT}:storage"]["lustre"]["hpcCacheProviderObjectId"] = str(uuid.uuid4())
    for team in config[f"{PROJECT}:training"]["teams"]:
        team["members"] = [str(uuid.uuid4()) for _ in team.get("members", [])]
    config[f"{PROJECT}:huggingFaceToken"] = f"hf_{uuid.uuid4().hex}"
    return config


@pytest.mark.parametrize("stack", STACKS)
def test_a_real_deployment_of_a_stack_file_is_refused_naming_every_placeholder(
    stack: str, engine: list[EngineMonitor]
) -> None:
    with pytest.raises(ConfigError) as caught:
        run_stack(stack)
    message = str(caught.value)
    assert message.startswith("invalid stack config for a real deployment"), message
    assert engine, "the evaluation must have run against the engine stand-in"
    assert engine[0].registered == [], "nothing may be registered in Azure from a config that still has placeholders"
    for path, hint in (
        ("cluster.entraId.adminGroupObjectIds[0]: got '00000000-0000-4000-8000-", "az ad group show --group"),
        ("cluster.apiServer.authorizedIpRanges[0]:", "`pulumi up` runs from"),
        ("monitoring.alerts.emailReceivers[0].email:", "a mailbox"),
        ("training.teams[0].members[0]:", "the team's Entra ID group"),
    ):
        assert path in message, f"the error must name {path}, or the user hunts for the field:\n{message}"
        assert hint in message, f"and say what to put instead ({hint!r}):\n{message}"
    lustre = "storage.lustre.hpcCacheProviderObjectId:"
    if stack == "prod":
        assert lustre in message, "prod deploys Lustre: its HSM grants would go to a principal that does not exist"
        assert 'az ad sp list --display-name "HPC Cache Resource Provider"' in message, "how to find the real ID"
    else:
        assert lustre not in message, "dev switches Lustre off: nothing of that section reaches Azure"
    cfg = load_platform_config(settings_of(load_stack_file(stack, REPO_ROOT)))
    deployed = [p for p in find_placeholders(cfg) if p.deployed]
    assert len(caught.value.problems) == len(deployed) >= 3, "one error listing every placeholder, not the first"


def test_a_clean_config_deploys_for_real(
    engine: list[EngineMonitor], stack_config: Callable[[str], dict[str, Any]]
) -> None:
    config = _clean(stack_config("prod"))
    assert find_placeholders(load_platform_config(settings_of(config))) == [], "the cleaned config has none left"
    recording = run_stack("prod", config)
    assert engine, "the evaluation must have run against the engine stand-in"
    assert "azure-native:containerservice:ManagedCluster" in engine[0].registered, "a clean config deploys"
    assert len(recording.of_type("azure-native:storagecache:AmlFilesystem")) == 1


def test_a_real_deployment_needs_the_hub_token_its_models_read(
    engine: list[EngineMonitor], stack_config: Callable[[str], dict[str, Any]]
) -> None:
    config = _clean(stack_config("prod"))
    del config[f"{PROJECT}:huggingFaceToken"]
    with pytest.raises(ConfigError) as caught:
        run_stack("prod", config)
    assert "pulumi config set --secret huggingFaceToken" in str(caught.value), (
        "a gated model's weights cannot be read without the token: stop before any resource, saying how to set it"
    )
    assert not engine or not engine[0].registered, "nothing may reach Azure"


def test_the_program_knows_mocks_from_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    evaluate(lambda: seen.append(running_under_engine()))
    monkeypatch.setattr(runtime, "RecordingMonitor", EngineMonitor)
    evaluate(lambda: seen.append(running_under_engine()))
    assert seen == [False, True], "the engine's gRPC monitor means a real run; the mocks' monitor, offline"


RECEIVERS = "monitoring.alerts.emailReceivers"
RANGES = "cluster.apiServer.authorizedIpRanges"


@pytest.mark.parametrize(
    ("path", "value", "kind", "named"),
    [
        ("cluster.entraId.tenantId", "00000000-0000-0000-0000-000000000000", OBJECT_ID, "cluster.entraId.tenantId"),
        (
            "cluster.entraId.adminGroupObjectIds",
            [str(uuid.uuid4()), "11111111-1111-1111-1111-111111111111"],
            OBJECT_ID,
            "cluster.entraId.adminGroupObjectIds[1]",
        ),
        (RANGES, ["192.0.2.10/32"], IP_RANGE, f"{RANGES}[0]"),
        (RANGES, ["52.141.7.19/32", "198.51.100.128/25"], IP_RANGE, f"{RANGES}[1]"),
        (RANGES, ["203.0.113.0/24"], IP_RANGE, f"{RANGES}[0]"),
        ("tags.contact", "2001:db8::7", IP_RANGE, "tags.contact"),
        (
            "storage.lustre.rootSquash.noSquashNidLists",
            "10.50.[0-15].[0-255]@tcp;192.0.2.5@tcp",
            IP_RANGE,
            "storage.lustre.rootSquash.noSquashNidLists",
        ),
        (RECEIVERS, [{"name": "oncall", "email": "oncall@gpu.example.net"}], EXAMPLE_DOMAIN, f"{RECEIVERS}[0].email"),
        (RECEIVERS, [{"name": "oncall", "email": "oncall@example.org"}], EXAMPLE_DOMAIN, f"{RECEIVERS}[0].email"),
        ("tags.owner", "team@corp.example", EXAMPLE_DOMAIN, "tags.owner"),
        ("tags.runbook", "https://wiki.example.com/gpu", EXAMPLE_DOMAIN, "tags.runbook"),
    ],
)
def test_each_kind_of_placeholder_is_found_where_it_is(
    stack_config: Callable[[str], dict[str, Any]], path: str, value: Any, kind: str, named: str
) -> None:
    settings = settings_of(_clean(stack_config("prod")))
    set_path(settings, path, value)
    found = find_placeholders(load_platform_config(settings))
    assert [(p.path, p.kind) for p in found] == [(named, kind)], f"{value!r} holds one stand-in ({kind}): {found}"
    assert found[0].deployed, "prod deploys every section it is in"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("cluster.apiServer.authorizedIpRanges", ["192.0.3.0/24", "198.51.101.0/24", "203.0.112.0/24"]),
        ("cluster.apiServer.authorizedIpRanges", ["10.0.0.0/8"]),
        ("tags.contact", "2001:db9::7"),
        ("monitoring.alerts.emailReceivers", [{"name": "oncall", "email": "oncall@myexample.com"}]),
        ("tags.owner", "team@example.company.io"),
        ("cluster.entraId.tenantId", "0a1b2c3d-0000-4000-8000-5e6f7a8b9c0d"),
    ],
)
def test_real_values_next_to_the_reserved_ones_are_left_alone(
    stack_config: Callable[[str], dict[str, Any]], path: str, value: Any
) -> None:
    settings = settings_of(_clean(stack_config("prod")))
    set_path(settings, path, value)
    assert find_placeholders(load_platform_config(settings)) == [], f"{value!r} is a real value, not a placeholder"


def test_team_members_of_a_switched_off_training_section_reach_nothing(
    stack_config: Callable[[str], dict[str, Any]],
) -> None:
    config = stack_config("dev")
    config[f"{PROJECT}:training"]["kueue"]["enabled"] = False
    del config[f"{PROJECT}:inference"]  # its callers are training teams
    members = [p for p in find_placeholders(load_platform_config(settings_of(config))) if ".members[" in p.path]
    assert members and not any(p.deployed for p in members), (
        "with Kueue off no team access is created, so its placeholder groups must not block a deploy"
    )


# IDs typed by hand: zeros, a digit or two repeated, counting up, hex words, and the example IDs Microsoft Learn
# pages use for tenants, clients and objects (e.g. planned-maintenance.md's 00000000-0000-0000-0000-000000000000,
# Entra pages' aaaabbbb-0000-cccc-1111-dddd2222eeee).
HAND_MADE_IDS = [
    "00000000-0000-0000-0000-000000000000",
    "00000000-0000-4000-8000-0000000000a1",
    "4b1c2f77-0000-0000-0000-000000000001",
    "00000000-5e3a-4c71-9b2d-8f6e1a7c3d95",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "12121212-1212-1212-1212-121212121212",
    "11111111-2222-3333-4444-555555555555",
    "abababab-cdcd-efef-abab-cdcdefefabab",
    "deadbeef-dead-beef-dead-beefdeadbeef",
    "12345678-1234-1234-1234-123456789abc",
    "12345678-90ab-cdef-1234-567890abcdef",
    "01234567-89ab-cdef-0123-456789abcdef",
    "aaaabbbb-0000-cccc-1111-dddd2222eeee",
    "00001111-aaaa-2222-bbbb-3333cccc4444",
    "11112222-bbbb-3333-cccc-4444dddd5555",
    "00aa00aa-bb11-cc22-dd33-44ee44ee44ee",
    "aaaaaaaa-bbbb-cccc-1111-222222222222",
]


@pytest.mark.parametrize("guid", HAND_MADE_IDS)
def test_a_hand_made_object_id_is_refused_naming_its_field(
    stack_config: Callable[[str], dict[str, Any]], guid: str
) -> None:
    settings = settings_of(_clean(stack_config("prod")))
    set_path(settings, "cluster.entraId.adminGroupObjectIds", [str(uuid.uuid4()), guid])
    with pytest.raises(ConfigError) as caught:
        refuse_placeholders(load_platform_config(settings))
    (problem,) = caught.value.problems
    assert problem.startswith(f"cluster.entraId.adminGroupObjectIds[1]: got {guid!r}"), (
        f"{guid} names no group in any tenant: the cluster would get an admin group nobody is in\n{problem}"
    )
    assert "az ad group show --group" in problem, "and the error says how to find the real ID"


def test_generated_ids_are_never_taken_for_placeholders(stack_config: Callable[[str], dict[str, Any]]) -> None:
    draw = random.Random(20261201)  # fixed seed: the same version-4 IDs Entra ID could have issued, every run
    generated = [str(uuid.UUID(int=draw.getrandbits(128), version=4)) for _ in range(20000)]
    settings = settings_of(_clean(stack_config("prod")))
    set_path(settings, "cluster.entraId.adminGroupObjectIds", generated)
    found = find_placeholders(load_platform_config(settings))
    assert found == [], f"a real tenant's IDs would block its deployment: {[p.value for p in found]}"
