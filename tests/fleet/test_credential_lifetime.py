"""The credential-lifetime contract (tests/upstream/credential_lifetime.py) over every stack and variant, and how the
Grafana
provider treats the token it keeps: the Entra ID token in the Grafana provider's state expires after 60-90 minutes,
so refresh and destroy must re-run the program, and an expired token must fail at once."""

from __future__ import annotations

import pytest

from aks_gpu_platform.components.shared.roles import GRAFANA_ADMIN, propagation_seconds
from tests.harness.contract_stacks import CONTRACT_STACKS, contract_recording
from tests.upstream.credential_lifetime import (
    contract_problems,
    grafana_request,
    reuse_paths,
    stored_credentials,
    workflow_reuse_paths,
)
from tools import REPO_ROOT

GRAFANA_PROVIDER = "pulumi:providers:grafana"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
E2E_WORKFLOW = REPO_ROOT / ".github" / "workflows" / "e2e.yml"


@pytest.mark.parametrize("stack", CONTRACT_STACKS)
def test_every_path_that_reuses_a_stored_token_runs_the_program_first(stack: str) -> None:
    recording = contract_recording(stack)
    stored = stored_credentials(recording)
    assert any(c.provider.endswith("dashboards-provider") for c in stored), (
        "the contract must see the Grafana provider's Entra ID token, or it checks nothing"
    )
    problems = contract_problems(recording, reuse_paths(REPO_ROOT))
    assert not problems, "a refresh or destroy with an expired token fails (and leaves resources behind):\n" + (
        "\n".join(problems)
    )


def test_the_contract_sees_the_e2e_destroy_that_reused_an_expired_token() -> None:
    """The motivating defect: the e2e workflow destroyed with the state's token, hours after `pulumi up`."""
    text = E2E_WORKFLOW.read_text()
    assert "--run-program" in text
    before = workflow_reuse_paths(text.replace(" --run-program", ""), "e2e.yml")
    problems = contract_problems(contract_recording("dev"), before)
    assert any("pulumi destroy" in p for p in problems), "the destroy without --run-program must be caught"


def test_the_workflows_and_docs_are_read_by_the_contract() -> None:
    commands = {p.command.split()[1] for p in reuse_paths(REPO_ROOT)}
    assert {"up", "preview", "destroy"} <= commands, "the scan must find the workflows' and docs' commands"


@pytest.mark.parametrize("stack", CONTRACT_STACKS)
def test_an_expired_grafana_token_fails_at_its_first_request(stack: str) -> None:
    providers = contract_recording(stack).of_type(GRAFANA_PROVIDER)
    assert providers
    for provider in providers:
        attempts, waited = grafana_request(provider.inputs, 401)
        assert (attempts, waited) == (1, 0), (
            f"{provider.name}: a 401 is retried for {waited:.0f} s ({attempts} attempts): an expired token "
            "must fail at once, not hold a refresh or destroy for minutes"
        )
        attempts, _ = grafana_request(provider.inputs, 429)
        assert attempts > 1, "throttling is still retried"


@pytest.mark.parametrize("stack", CONTRACT_STACKS)
def test_grafana_writes_wait_for_the_deployers_grant_instead_of_retrying_401(stack: str) -> None:
    recording = contract_recording(stack)
    for provider in recording.of_type(GRAFANA_PROVIDER):
        prefix = provider.name.removesuffix("-provider")
        (grant,) = [
            r
            for r in recording.of_type(ROLE_ASSIGNMENT)
            if r.name.startswith(prefix) and r.inputs["roleDefinitionId"].endswith(GRAFANA_ADMIN)
        ]
        assert propagation_seconds(grant.after_create_hooks) >= 600, (
            "Azure documents up to 10 minutes before a new grant takes effect; without 401 retries, the first "
            "`pulumi up` must wait that long before writing to Grafana"
        )
