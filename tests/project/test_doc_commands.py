"""Doc-command contract: every kubectl command a team page gives exists in the CLI version we name and is
allowed for a member of the page's team by the team's RBAC (tests/upstream/cli.py, tests/upstream/rbac.py).

A command that does not exist, or that the team Role forbids, is what a researcher meets on their first day
with nobody to ask; both are checked over the rendered RBAC of the stack the page is written for.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.upstream.cli import KUBECTL_VERSION, KUEUECTL_VERSION, requests, unknown_command
from tests.upstream.rbac import Request, kubernetes_allows
from tools import REPO_ROOT

# team page -> (the stack its examples run on, the team whose member reads it)
TEAM_PAGES = {
    "docs/for-ml-teams.md": ("dev", "ml"),
    "docs/training.md": ("prod", "llm"),
    "examples/team-jobset/jobset.yaml": ("dev", "ml"),
    "examples/team-jobset/copy-data-dev.yaml": ("dev", "ml"),
    "examples/team-jobset/copy-data-prod.yaml": ("prod", "llm"),
    "examples/llm-serving/chat-job.yaml": ("dev", "ml"),
    "examples/llm-serving/README.md": ("dev", "ml"),
}


def page_commands(path: str) -> list[str]:
    """Every `kubectl ...` the page gives: shell lines in code blocks and comments, and inline code spans."""
    text = (REPO_ROOT / path).read_text()
    found = re.findall(r"(?m)^(?:#\s*)?(?:[A-Z][a-z]+: )?(kubectl [^\n`]+?)(?:\s{2,}\S.*)?$", text)
    found += re.findall(r"`(kubectl [^`]+)`", text)
    commands: list[str] = []
    for command in found:
        for part in re.split(r"\s{2,}[A-Z][a-z]+: ", command):  # `Submit: kubectl ...    Cancel: kubectl ...`
            part = part.split(" #", 1)[0].strip()
            if part.startswith("kubectl ") and part not in commands:
                commands.append(part.replace("<", "").replace(">", ""))
    return commands


def test_the_pages_name_the_cli_versions_the_contract_checks() -> None:
    page = (REPO_ROOT / "docs" / "for-ml-teams.md").read_text()
    assert f"kubectl {KUBECTL_VERSION}" in page and f"kueuectl {KUEUECTL_VERSION}" in page, (
        "the page names the versions its commands are checked against"
    )


@pytest.mark.parametrize("page", sorted(TEAM_PAGES))
def test_every_command_on_a_team_page_exists_and_the_team_may_run_it(
    page: str, dev_recording: Recording, prod_recording: Recording
) -> None:
    stack, team_name = TEAM_PAGES[page]
    recording = {"dev": dev_recording, "prod": prod_recording}[stack]
    commands = page_commands(page)
    assert commands, f"{page} gives kubectl commands"
    assert not [(c, why) for c in commands if (why := unknown_command(c))], "every command exists"
    # A command in another stack's team namespace (the page's prod example) is checked as that team on that stack.
    owners = {
        t["namespace"]: (s, name, r)
        for s, r in (("dev", dev_recording), ("prod", prod_recording))
        for name, t in r.stack_outputs["trainingTeams"].items()
    }
    forbidden = [
        (c, r)
        for c in commands
        for r in requests(c, REPO_ROOT, (REPO_ROOT / page).parent)
        if not allowed(*_as(owners, r.namespace, stack, team_name, recording), r)
    ]
    assert not forbidden, f"a member of team {team_name} on {stack} is refused: {forbidden}"


def _as(
    owners: dict[str, tuple[str, str, Recording]], namespace: str | None, stack: str, team: str, recording: Recording
) -> tuple[Recording, str, str]:
    """The recording, stack and team a request in `namespace` is checked as: the page's own, unless the namespace
    is a team namespace of the other stack only."""
    own = {n for n, (s, _, _) in owners.items() if s == stack}
    if namespace is None or namespace in own or namespace not in owners:
        return recording, stack, team
    other_stack, other_team, other = owners[namespace]
    return other, other_stack, other_team


def allowed(recording: Recording, stack: str, team_name: str, request: Request) -> bool:
    rbac = [kubernetes_object(r) for r in recording.resources if r.type.startswith("kubernetes:rbac")]
    teams = load_stack_file(stack, REPO_ROOT)["aks-gpu-platform:training"]["teams"]
    (team,) = [t for t in teams if t["name"] == team_name]
    return kubernetes_allows(rbac, set(team["members"]), request)


def test_the_contract_refuses_the_commands_that_failed_before(dev_recording: Recording, tmp_path: Path) -> None:
    assert unknown_command("kubectl kueue list pending-workloads --namespace team-ml"), (
        "kueuectl v0.19.2 has no `list pending-workloads`"
    )
    assert unknown_command("kubectl kueue list workload -n team-ml") is None
    watched = requests("kubectl get clusterqueues", REPO_ROOT)
    assert not any(allowed(dev_recording, "dev", "ml", r) for r in watched), "ClusterQueues are cluster-scoped"
    provisioning = requests("kubectl -n team-ml get provisioningrequests", REPO_ROOT)
    assert not all(allowed(dev_recording, "dev", "ml", r) for r in provisioning), (
        "the team Role does not read ProvisioningRequests"
    )
    pending = requests("kubectl kueue list workload -n team-ml", REPO_ROOT)
    assert not all(allowed(dev_recording, "dev", "ml", r) for r in pending), (
        "kueuectl reads the cluster-scoped pending summary for pending workloads: forbidden to a team"
    )
    own = requests(
        "kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-ml/localqueues/ml/pendingworkloads",
        REPO_ROOT,
    )
    assert all(allowed(dev_recording, "dev", "ml", r) for r in own), "the queue's own pending list is readable"


def test_a_watch_is_checked_as_a_watch(dev_recording: Recording) -> None:
    """`-w` streams changes: the team Role needs `watch`, which `get` alone does not prove."""
    sent = requests("kubectl get jobsets,workloads -n team-ml -w", REPO_ROOT)
    watches = [r for r in sent if r.verb == "watch"]
    assert {(r.group, r.resource) for r in watches} == {("jobset.x-k8s.io", "jobsets"), ("kueue.x-k8s.io", "workloads")}
    assert all(allowed(dev_recording, "dev", "ml", r) for r in sent), "a member may watch the team's jobs"
    cluster = requests("kubectl get clusterqueues -w", REPO_ROOT)
    assert Request("watch", "kueue.x-k8s.io", "clusterqueues") in cluster, "the watch of a cluster-scoped kind"
    assert not all(allowed(dev_recording, "dev", "ml", r) for r in cluster), "which a team member may not"
