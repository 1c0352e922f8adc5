"""The GitHub workflows work as shipped: kubelogin, identities, authorized ranges, reports where they are read."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from aks_gpu_platform.plan import pr_comment, preview_report
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.upstream import github_environments
from tools import REPO_ROOT, runner_access
from tools.e2e_stack import validate

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
PREVIEW_ID = "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
IDENTITY_VAR = re.compile(r"vars\.(AZURE_\w*CLIENT_ID)\b")
SECRET = re.compile(r"secrets\.(\w+)")
MAIN_ONLY = "github.ref == 'refs/heads/main'"
SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"
# Resource hooks (the role-assignment waits) arrived in Pulumi CLI 3.182.
HOOKS_CLI = (3, 182, 0)
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")
# Commands that reach the cluster through the kubeconfig (it execs kubelogin).
CLUSTER_COMMANDS = re.compile(r"\bpulumi (preview|up|destroy)\b|tools\.e2e_checks")
KUBELOGIN_INSTALL = re.compile(
    r"az aks install-cli\b.*--kubelogin-version v\d+\.\d+\.\d+.*--kubelogin-install-location", re.S
)


def _jobs() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            yield path.name, name, job


def _runs(job: dict[str, Any]) -> list[str]:
    return [str(step.get("run", "")) for step in job["steps"]]


def _cluster_jobs() -> list[tuple[str, str, dict[str, Any]]]:
    found = [(f, n, j) for f, n, j in _jobs() if any(CLUSTER_COMMANDS.search(r) for r in _runs(j))]
    assert len(found) >= 5, "PR previews (dev, prod matrix), dev and prod deploys, prod preview and e2e talk to AKS"
    return found


def _preview_jobs() -> list[tuple[str, str, dict[str, Any]]]:
    found = [
        (f, n, j)
        for f, n, j in _cluster_jobs()
        if not any(re.search(r"\bpulumi (up|destroy)\b|e2e_checks", r) for r in _runs(j))
    ]
    assert {(f, n) for f, n, _ in found} == {("pull-request.yml", "preview"), ("deploy.yml", "prod-preview")}
    return found


def _stacks_and_environments(job: dict[str, Any]) -> list[tuple[str, str]]:
    """(stack, GitHub environment) for each run of the job: a matrix (`stack: [...]` or `include`) expands both."""
    matrix = (job.get("strategy") or {}).get("matrix", {})
    runs = matrix.get("include") or [{"stack": s} for s in matrix.get("stack") or [job.get("env", {}).get("STACK", "")]]

    def expand(text: object, run: dict[str, str]) -> str:
        return re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: run[m.group(1)], str(text))

    return [(expand(job.get("env", {}).get("STACK", ""), run), expand(job["environment"], run)) for run in runs]


def _workflow(name: str) -> dict[Any, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def test_every_job_that_talks_to_the_cluster_installs_kubelogin_first() -> None:
    for file, name, job in _cluster_jobs():
        runs = _runs(job)
        first_use = next(i for i, r in enumerate(runs) if CLUSTER_COMMANDS.search(r))
        installs = [i for i, r in enumerate(runs) if KUBELOGIN_INSTALL.search(r)]
        assert installs and installs[0] < first_use, (
            f"{file}:{name}: the kubeconfig's exec plugin is kubelogin; without it every Kubernetes call fails"
        )
        assert "GITHUB_PATH" in runs[installs[0]], f"{file}:{name}: kubelogin must be on PATH for later steps"


def test_preview_jobs_use_the_read_only_preview_identity_only() -> None:
    for file, name, job in _preview_jobs():
        for stack, environment in _stacks_and_environments(job):
            assert environment.startswith(f"preview-{stack}"), (
                f"{file}:{name}: the preview of {stack} runs in that stack's read-only environment, got {environment}"
            )
        logins = [s["with"] for s in job["steps"] if str(s.get("uses", "")).startswith("azure/login@")]
        assert logins and all(login["client-id"] == PREVIEW_ID for login in logins), f"{file}:{name}"
        for key in ("ARM_CLIENT_ID", "AZURE_CLIENT_ID"):
            assert job["env"][key] == PREVIEW_ID, f"{file}:{name}: Pulumi ({key}) and kubelogin act as that identity"
        others = set(IDENTITY_VAR.findall(yaml.safe_dump(job))) - {"AZURE_PREVIEW_CLIENT_ID"}
        assert not others, f"{file}:{name}: code under review never gets a deploy identity ({others})"


def _pulumi_credential(job: dict[str, Any]) -> str | None:
    """The Pulumi credential: the secret name if stored, `oidc <scope>` if exchanged, None if the job runs no pulumi."""
    exchanges = [s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/auth-actions@")]
    if exchanges:
        assert "PULUMI_ACCESS_TOKEN" not in job.get("env", {}), "an exchanged token replaces a stored one"
        (exchange,) = exchanges
        return f"oidc {exchange['with']['scope']}"
    if "PULUMI_ACCESS_TOKEN" not in job.get("env", {}):
        assert not any(PULUMI_COMMAND.search(r) for r in _runs(job)), "a job that runs pulumi needs a Pulumi token"
        return None
    stored = SECRET.fullmatch(str(job["env"]["PULUMI_ACCESS_TOKEN"]).removeprefix("${{ ").removesuffix(" }}"))
    assert stored, job["env"]["PULUMI_ACCESS_TOKEN"]
    return stored.group(1)


# pulumi/auth-actions at the pinned commit: its inputs (tests/fixtures/actions/, read from action.yml and src/main.ts).
AUTH_ACTION = json.loads((REPO_ROOT / "tests" / "fixtures" / "actions" / "pulumi-auth-actions-v2.1.0.json").read_text())
PULUMI_COMMAND = re.compile(r"\bpulumi (preview|up|destroy|stack)\b")


def test_previews_get_a_short_lived_pulumi_token_that_reads_their_stack_only() -> None:
    """Code under review runs in the preview: a stored token would read every stack it can (the fleet's included)."""
    for file, name, job in _preview_jobs():
        assert not SECRET.search(yaml.safe_dump(job)), f"{file}:{name}: no stored secret reaches code under review"
        assert job["permissions"].get("id-token") == "write", f"{file}:{name}: the exchange needs the job's OIDC token"
        steps = job["steps"]
        (exchange,) = [i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/auth-actions@")]
        step = steps[exchange]
        assert step["uses"].split("@")[1].split()[0] == AUTH_ACTION["source"]["commit"], (
            f"{file}:{name}: the action at the commit whose inputs were read"
        )
        inputs = step["with"]
        unknown = set(inputs) - set(AUTH_ACTION["inputs"])
        missing = {k for k, v in AUTH_ACTION["inputs"].items() if v["required"] and k not in inputs}
        assert not unknown and not missing, f"{file}:{name}: inputs v2.1.0 ignores {unknown}, or needs {missing}"
        assert inputs["requested-token-type"] == "urn:pulumi:token-type:access_token:team", (
            f"{file}:{name}: a team token, whose team holds Stack Read on one stack; an organization token is admin"
        )
        assert inputs["scope"] == "team:${{ vars.PULUMI_PREVIEW_TEAM }}", (
            f"{file}:{name}: the team comes from the stack's preview environment, so dev's run cannot name prod's"
        )
        assert 0 < int(inputs["token-expiration"]) <= job["timeout-minutes"] * 60, (
            f"{file}:{name}: the token must not outlive the job that asked for it"
        )
        first_pulumi = next(i for i, s in enumerate(steps) if PULUMI_COMMAND.search(str(s.get("run", ""))))
        assert exchange < first_pulumi, f"{file}:{name}: the token exists before the first pulumi command"


# PULUMI_DEFAULT_ORGANIZATION arrived in Pulumi CLI 3.259 (pulumi/pulumi#24384).
DEFAULT_ORGANIZATION_CLI = (3, 259, 0)


def test_every_job_that_runs_pulumi_names_the_organization_of_its_stacks() -> None:
    """`--stack dev` names no organization: the CLI takes the service's default organization for the token, else the
    token's own user name (pulumi/pulumi pkg/backend/httpstate/backend.go, ParseStackReference). The previews' team
    token and a deploy environment's team or organization token belong to no person whose default is ours; a wrong
    owner is "stack not found", or another organization's stack of that name."""
    for file, name, job in _jobs():
        if not any(PULUMI_COMMAND.search(r) or "pulumi config" in r for r in _runs(job)):
            continue
        assert job.get("env", {}).get("PULUMI_DEFAULT_ORGANIZATION") == "${{ vars.PULUMI_ORGANIZATION }}", (
            f"{file}:{name}: its stack names resolve in the organization the setup names (PULUMI_ORGANIZATION)"
        )
        pins = {str(s["with"]["pulumi-version"]) for s in job["steps"] if "pulumi-version" in (s.get("with") or {})}
        assert pins and all(tuple(map(int, v.split("."))) >= DEFAULT_ORGANIZATION_CLI for v in pins), (
            f"{file}:{name}: the CLI it installs reads PULUMI_DEFAULT_ORGANIZATION"
        )


def _environment_credentials() -> dict[str, set[tuple[str, str]]]:
    """Per environment, the (identity variable, Pulumi credential) pairs its jobs use."""
    identities: dict[str, set[str]] = {}
    tokens: dict[str, set[str]] = {}
    for file, name, job in _jobs():
        text = yaml.safe_dump(job)
        if "environment" not in job:
            assert not IDENTITY_VAR.search(text) and not SECRET.search(text), f"{file}:{name}: credentials sit in one"
            continue
        ids, secrets = set(IDENTITY_VAR.findall(text)), set(SECRET.findall(text))
        assert len(ids) == 1 and len(secrets) <= 1, f"{file}:{name}: one identity and one Pulumi token, got {ids}"
        env = job.get("env", {})
        used = {env[k] for k in ("ARM_CLIENT_ID", "AZURE_CLIENT_ID") if k in env}
        used |= {s["with"]["client-id"] for s in job["steps"] if str(s.get("uses", "")).startswith("azure/login@")}
        assert used == {f"${{{{ vars.{next(iter(ids))} }}}}"}, f"{file}:{name}: Pulumi, kubelogin, az act as one"
        credential = _pulumi_credential(job)
        for _, environment in _stacks_and_environments(job):
            identities.setdefault(environment, set()).update(ids)
            tokens.setdefault(environment, set()).update([credential] if credential else [])
    return {env: {(i, t) for i in identities[env] for t in tokens[env]} for env in identities}


def test_each_environment_has_its_own_identity_and_pulumi_token() -> None:
    found = _environment_credentials()
    assert set(found) == {"dev", "prod", "preview-dev", "preview-prod", "preview-prod-pull-request", "e2e"}, found
    for environment, pairs in found.items():
        assert len(pairs) == 1, f"{environment}: its jobs use one identity and one token, got {pairs}"
    # The two preview environments name the same read-only variables, each set on its own environment; a deploy
    # environment's identity or stored token is nobody else's.
    deploy = [name for env, pairs in found.items() if not env.startswith("preview-") for pair in pairs for name in pair]
    previews = {name for env, pairs in found.items() if env.startswith("preview-") for pair in pairs for name in pair}
    assert len(deploy) == len(set(deploy)) and not set(deploy) & previews, (
        f"one environment's identity or token must not be another's ({deploy}): a dev job would hold prod's rights"
    )


def test_jobs_behind_a_deploy_environment_run_from_main_only() -> None:
    for file, name, job in _jobs():
        environments = [e for _, e in _stacks_and_environments(job)] if "environment" in job else []
        for environment in (e for e in environments if not e.startswith("preview-")):
            assert MAIN_ONLY in str(job.get("if", "")), (
                f"{file}:{name}: the {environment} identity is for main; a dispatch from another branch must not "
                "reach it"
            )
    for name, job in _workflow("pull-request.yml")["jobs"].items():
        environments = [e for _, e in _stacks_and_environments(job)] if "environment" in job else []
        assert all(e.startswith("preview-") for e in environments), (
            f"pull-request.yml:{name}: pull requests get the read-only preview environments only"
        )


def test_every_job_has_a_timeout_that_leaves_room_for_its_cleanup() -> None:
    for file, name, job in _jobs():
        limit = job.get("timeout-minutes")
        assert isinstance(limit, int) and limit <= 300, f"{file}:{name}: a hung job must not run for GitHub's 6 hours"
        steps = job["steps"]
        for i, step in enumerate(steps):
            if not re.search(r"\bpulumi (up|destroy)\b", str(step.get("run", ""))) or "always()" in str(
                step.get("if", "")
            ):
                continue
            cleanup = [s for s in steps[i + 1 :] if "always()" in str(s.get("if", ""))]
            budget = step.get("timeout-minutes", limit) + sum(s.get("timeout-minutes", limit) for s in cleanup)
            assert budget < limit, (
                f"{file}:{name}: {step.get('name')} and its always-run cleanup must fit in the job's timeout, "
                "or a hung update leaves the cleanup (the runner's address, the e2e stack) undone"
            )


def test_prod_waits_for_its_preview_which_writes_the_job_summary() -> None:
    jobs = _workflow("deploy.yml")["jobs"]
    assert jobs["prod"]["needs"] == "prod-preview" and jobs["prod"]["environment"] == "prod"
    preview = "\n".join(_runs(jobs["prod-preview"]))
    assert 'pulumi preview --stack "$STACK"' in preview and jobs["prod-preview"]["env"]["STACK"] == "prod"
    assert "aks_gpu_platform.plan.preview_report" in preview and '>> "$GITHUB_STEP_SUMMARY"' in preview, (
        "the approver reads prod's preview in the run before approving the prod environment"
    )


def test_deploys_admit_the_runner_for_the_run_and_always_remove_it() -> None:
    jobs = _workflow("deploy.yml")["jobs"]
    for name in ("dev", "prod"):
        steps = jobs[name]["steps"]
        ids = [s.get("id") for s in steps]
        runs = _runs(jobs[name])
        egress = ids.index("egress")
        up = next(
            i
            for i, r in enumerate(runs)
            if re.search(r"pulumi up --yes --skip-preview --stack \"\$STACK\" --policy-pack policy", r)
        )
        removal = next(i for i, r in enumerate(runs) if "tools.runner_access revoke" in r)
        assert "tools.runner_access authorize" in runs[egress] and egress < up < removal, name
        assert steps[removal]["if"].startswith("${{ always()") and "outcome == 'added'" in steps[removal]["if"], (
            f"{name}: the runner's address leaves the ranges even when the deploy fails"
        )
        assert steps[removal]["env"]["ADDRESS"] == "${{ steps.egress.outputs.address }}", f"{name}: the address added"
        assert re.search(r"--target\b", "\n".join(runs)) is None, (
            f"{name}: the targeted update runs in tools.runner_access revoke, under the policy pack"
        )


def test_the_pulumi_cli_is_pinned_to_the_sdk_with_resource_hooks() -> None:
    sdk = re.search(r"^pulumi==(\d+\.\d+\.\d+)$", (REPO_ROOT / "requirements.txt").read_text(), re.M)
    assert sdk, "requirements.txt pins the Pulumi SDK"
    installs = [
        (f, n, s) for f, n, j in _jobs() for s in j["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")
    ]
    assert len(installs) == len(_cluster_jobs()), "every job that runs pulumi installs the CLI"
    for file, name, step in installs:
        # pulumi/actions v7.0.0 src/libs/pulumi-cli.ts keeps any installed CLI that satisfies the range;
        # an empty `pulumi-version` satisfies every version.
        version = str((step.get("with") or {}).get("pulumi-version", ""))
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{file}:{name}: an exact CLI, not the runner's ({version!r})"
        assert tuple(int(p) for p in version.split(".")) >= HOOKS_CLI, f"{file}:{name}: resource hooks need 3.182"
        assert version == sdk.group(1), f"{file}:{name}: the CLI the program's SDK was released with"


def test_pull_requests_from_forks_skip_the_comments_and_the_preview() -> None:
    # A fork's pull request gets a read-only token, no OIDC token and no secrets: both would fail red.
    for name, job in _workflow("pull-request.yml")["jobs"].items():
        needs_trust = "id-token" in job.get("permissions", {}) or "environment" in job
        if needs_trust:
            assert SAME_REPO in str(job.get("if", "")), f"pull-request.yml:{name}: skipped for forks"
            continue
        for step in job["steps"]:
            if "aks_gpu_platform.plan.pr_comment" in str(step.get("run", "")):
                assert SAME_REPO in str(step.get("if", "")), (
                    f"pull-request.yml:{name}: the comment is skipped for forks"
                )


def test_the_e2e_fallback_delete_follows_any_unfinished_destroy_with_a_fresh_login() -> None:
    steps = _workflow("e2e.yml")["jobs"]["e2e"]["steps"]
    delete = next(i for i, s in enumerate(steps) if "az group delete" in str(s.get("run", "")))
    condition = str(steps[delete]["if"])
    assert "always()" in condition and "steps.destroy.outcome != 'success'" in condition, (
        "a destroy that failed, timed out or was cancelled leaves billed resources: delete the group after each"
    )
    login = steps[delete - 1]
    assert str(login.get("uses", "")).startswith("azure/login@") and login.get("if") == condition, (
        "the az session from before the destroy may have expired: log in right before the delete"
    )


def _step_by_name(job: dict[str, Any], words: str) -> dict[str, Any]:
    return next(s for s in job["steps"] if words in str(s.get("name", "")))


def test_prod_applies_the_previewed_commit_to_the_previewed_state(tmp_path: Path) -> None:
    jobs = _workflow("deploy.yml")["jobs"]
    for name in ("prod-preview", "prod"):
        checkout = next(s for s in jobs[name]["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
        assert checkout["with"]["ref"] == "${{ github.sha }}", (
            f"{name}: the approved preview and the apply share a commit"
        )
    recorded = jobs["prod-preview"]["outputs"]["state-version"]
    assert recorded == "${{ steps.state.outputs.version }}", "prod-preview hands on the stack version it previewed"
    check = _step_by_name(jobs["prod"], "previewed and approved")
    assert check["env"]["PREVIEWED_VERSION"] == "${{ needs.prod-preview.outputs.state-version }}"
    runs = _runs(jobs["prod"])
    assert runs.index(check["run"]) < next(i for i, r in enumerate(runs) if "pulumi up" in r)
    record = next(s for s in jobs["prod-preview"]["steps"] if s.get("id") == "state")
    fake = _fake_pulumi(tmp_path, history=[{"version": 41, "kind": "update"}])
    env = {**fake, "STACK": "prod", "GITHUB_SHA": "0" * 40}
    env |= {"GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    assert subprocess.run(["bash", "-e", "-c", record["run"]], env=env, check=False).returncode == 0
    assert (tmp_path / "out").read_text().strip() == "version=41"
    for previewed, allowed in (("41", True), ("40", False)):
        done = subprocess.run(
            ["bash", "-e", "-c", check["run"]], env={**env, "PREVIEWED_VERSION": previewed}, check=False
        )
        assert (done.returncode == 0) == allowed, f"prod previewed at version {previewed}, now at 41"


def test_the_pull_request_posts_the_diff_against_its_base_then_the_whole_plan_of_both_stacks() -> None:
    job = _workflow("pull-request.yml")["jobs"]["plan"]
    runs = "\n".join(_runs(job))
    diff = 'make --silent plan-diff STACK="$stack" BASE="origin/$BASE_REF" FORMAT=markdown'
    whole = 'make --silent plan STACK="$stack" FORMAT=markdown'
    assert "for stack in dev prod" in runs and diff in runs and whole in runs
    assert runs.index(diff) < runs.index(whole), "the reviewer reads what changes first, the whole plan below"
    assert "<details>" in runs, "the whole plan stays folded"
    (checkout,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert checkout["with"]["fetch-depth"] == 0, "plan-diff plans the base branch, which a shallow clone lacks"
    assert job["steps"][-1]["if"], "the comment step keeps its fork guard"
    assert "aks_gpu_platform.plan.pr_comment --pr" in runs and job["permissions"]["pull-requests"] == "write"
    preview = "\n".join(_runs(_workflow("pull-request.yml")["jobs"]["preview"]))
    assert "aks_gpu_platform.plan.pr_comment" in preview and "aks_gpu_platform.plan.preview_report" in preview


def test_the_setup_docs_name_each_environments_identity_token_and_branch_rule() -> None:
    delivery = (REPO_ROOT / "docs" / "delivery.md").read_text()
    rows = [line for line in delivery.splitlines() if line.startswith("| `")]
    for environment, pairs in _environment_credentials().items():
        (identity, token), *_ = pairs
        row = next((r for r in rows if r.startswith(f"| `{environment}` |")), "")
        shown = "`PULUMI_PREVIEW_TEAM`" if token.startswith("oidc ") else f"`{token}`"
        assert f"`{identity}`" in row and shown in row, f"docs/delivery.md: {environment}'s setup row"
        if not environment.startswith("preview-"):
            assert "`main` only" in row, f"docs/delivery.md: {environment} admits main only"
    used = {m for path in WORKFLOWS.glob("*.yml") for m in re.findall(r"(?:vars|secrets)\.(\w+)", path.read_text())}
    documented = delivery + (REPO_ROOT / "docs" / "e2e.md").read_text()
    assert not {u for u in used if f"`{u}`" not in documented}, "every variable and secret a workflow reads"


# --- prod's secrets: no run of a branch but main reads them without a reviewer ------------------------------

DOCUMENTED_REPOSITORY = "<org>/<repo>"  # docs/delivery.md's placeholder in the subjects it lists
A_PUSHED_BRANCH = "any-branch"  # whoever may push a branch writes its workflows: any event, any environment
Job = tuple[str, str, dict[str, Any]]


def _documented_environments(delivery: str) -> dict[str, tuple[github_environments.Environment, str]]:
    """docs/delivery.md's setup table: per environment, its GitHub protection and its federated credential's subject."""
    found: dict[str, tuple[github_environments.Environment, str]] = {}
    for line in delivery.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not re.fullmatch(r"`[\w-]+`", cells[0]) or not cells[3].startswith("`repo:"):
            continue
        name = cells[0].strip("`")
        branches = frozenset({"main"}) if cells[4].startswith("`main` only") else None
        protection = github_environments.Environment(name, branches, "required reviewers" in cells[5])
        found[name] = (protection, cells[3].strip("`"))
    return found


def _pulumi_subjects(delivery: str, team: str) -> set[str]:
    """The OIDC subjects Pulumi Cloud's documented authorization policy issues `team`'s token to."""
    return set(re.findall(rf"^\s*\| `{re.escape(team)}` \| `([^`]+)` \|", delivery, re.M))


def _prod_read_unreviewed(jobs: list[Job], delivery: str) -> list[str]:
    """Why a run of a branch other than main could read prod's state (and so decrypt its secrets) with nobody's
    approval: an environment that holds prod's read-only credentials and admits the branch without a reviewer."""
    environments = _documented_environments(delivery)
    problems: list[str] = []
    reading = {
        env for _, _, job in jobs if "environment" in job for s, env in _stacks_and_environments(job) if s == "prod"
    }
    for subject in _pulumi_subjects(delivery, "aks-gpu-preview-prod"):
        name = subject.partition(":environment:")[2]
        if not name:
            problems.append(f"prod's Pulumi token is issued to {subject}, which no environment protects")
        reading.add(name)
    for name in sorted(reading):
        if name not in environments:
            problems.append(f"{name}: reads prod and is not in the setup table")
            continue
        protection, subject = environments[name]
        if subject != github_environments.subject(DOCUMENTED_REPOSITORY, name):
            problems.append(f"{name}: its federated credential's subject {subject} is not the environment's")
        if github_environments.runs_unreviewed(protection, A_PUSHED_BRANCH):
            problems.append(f"{name}: a run of any branch gets prod's read credentials without a reviewer")
    return problems


def test_no_run_of_a_branch_but_main_reads_prod_s_secrets_without_a_reviewer() -> None:
    delivery = (REPO_ROOT / "docs" / "delivery.md").read_text()
    jobs = list(_jobs())
    assert _prod_read_unreviewed(jobs, delivery) == []
    environments = _documented_environments(delivery)
    unreviewed = github_environments.runs_unreviewed
    # Positive controls: what the workflows rely on still runs, and where it is meant to, without waiting.
    assert unreviewed(environments["preview-dev"][0], A_PUSHED_BRANCH), "dev's preview of a pull request"
    assert unreviewed(environments["preview-prod"][0], "main"), "deploy's prod-preview, check-prod"
    prod_subjects = _pulumi_subjects(delivery, "aks-gpu-preview-prod")
    for file, name, job in jobs:
        pull_request = "pull_request" in _workflow(file)[True]
        for stack, environment in _stacks_and_environments(job) if "environment" in job else []:
            protection, _ = environments[environment]
            if pull_request:
                assert protection.branches is None, f"{file}:{name}: {environment} must admit a pull request's branch"
            if protection.branches == frozenset({"main"}):
                assert MAIN_ONLY in str(job.get("if", "")), f"{file}:{name}: {environment} admits main only"
            if stack == "prod" and environment.startswith("preview-"):
                subject = github_environments.subject(DOCUMENTED_REPOSITORY, environment)
                assert subject in prod_subjects, f"{file}:{name}: Pulumi Cloud issues prod's token to {subject}"


def _moved_prod_pull_request_preview(jobs: list[Job], environment: str) -> list[Job]:
    moved = copy.deepcopy(jobs)
    for file, name, job in moved:
        if (file, name) == ("pull-request.yml", "preview"):
            for run in job["strategy"]["matrix"]["include"]:
                run["environment"] = environment if run["stack"] == "prod" else run["environment"]
    return moved


@pytest.mark.parametrize(
    ("attack", "docs_from", "docs_to", "environment"),
    [
        (
            "preview-prod admits every branch again (no approval needed to look)",
            "| `main` only (`prod-preview`, `check-prod`) |",
            "| all (pull requests and `prod-preview` use it) |",
            None,
        ),
        (
            "preview-prod-pull-request without its required reviewers",
            "| required reviewers (they read the change first); prevent self-review |",
            "| read-only by its roles |",
            None,
        ),
        (
            "prod's Pulumi token issued to every pull request's job",
            "| `aks-gpu-preview-prod` | `repo:<org>/<repo>:environment:preview-prod-pull-request` |",
            "| `aks-gpu-preview-prod` | `repo:<org>/<repo>:pull_request` |",
            None,
        ),
        (
            "prod's Pulumi token issued to dev's preview environment",
            "| `aks-gpu-preview-prod` | `repo:<org>/<repo>:environment:preview-prod-pull-request` |",
            "| `aks-gpu-preview-prod` | `repo:<org>/<repo>:environment:preview-dev` |",
            None,
        ),
        ("prod's preview of a pull request in dev's preview environment", "", "", "preview-dev"),
    ],
)
def test_a_branch_would_read_prod_s_secrets_unreviewed_without_each_rule(
    attack: str, docs_from: str, docs_to: str, environment: str | None
) -> None:
    delivery = (REPO_ROOT / "docs" / "delivery.md").read_text()
    assert docs_from in delivery, f"{attack}: the rule is documented as {docs_from!r}"
    jobs = list(_jobs())
    if environment:
        jobs = _moved_prod_pull_request_preview(jobs, environment)
    assert _prod_read_unreviewed(jobs, delivery.replace(docs_from, docs_to)), (
        f"{attack}: a pushed branch's job would decrypt prod's secrets, and the check did not say so"
    )


def test_every_action_is_pinned_by_sha() -> None:
    used = {str(s["uses"]) for _, _, job in _jobs() for s in job["steps"] if "uses" in s}
    assert used and all(SHA_PIN.match(u) for u in used), used


# --- tools the workflows call ---


def test_authorize_adds_the_runner_as_a_slash_32_that_the_config_accepts() -> None:
    config = load_stack_file("prod", REPO_ROOT)
    outcome, widened = runner_access.authorize(config, "8.8.4.4")
    ranges = widened["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"]
    assert outcome == "added" and ranges[-1] == "8.8.4.4/32"
    assert ranges[:-1] == config["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"], "others are kept"
    validate(widened)  # the stack loader takes it as `pulumi up` will


def test_a_runner_inside_the_ranges_needs_nothing_and_a_private_cluster_refuses() -> None:
    config = load_stack_file("prod", REPO_ROOT)
    inside = str(next(iter(config["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"]))).split("/")[0]
    assert runner_access.authorize(config, inside) == ("covered", config), "a static-egress runner changes nothing"
    private = {
        **config,
        "aks-gpu-platform:cluster": {**config["aks-gpu-platform:cluster"], "apiServer": {"privateCluster": True}},
    }
    with pytest.raises(runner_access.PrivateClusterError, match="inside the VNet"):
        runner_access.authorize(private, "8.8.4.4")


def test_authorize_rewrites_only_the_given_stack_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "Pulumi.prod.yaml").write_text((REPO_ROOT / "Pulumi.prod.yaml").read_text())
    assert runner_access.main(["authorize", "--stack", "prod", "--address", "8.8.4.4", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "added"
    written = yaml.safe_load((tmp_path / "Pulumi.prod.yaml").read_text())["config"]
    assert "8.8.4.4/32" in written["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"]
    assert runner_access.main(["authorize", "--stack", "prod", "--address", "nope", "--root", str(tmp_path)]) == 2


def test_the_preview_report_puts_destruction_first_and_fails_with_the_guard(tmp_path: Path) -> None:
    fixtures = REPO_ROOT / "tests" / "fixtures" / "preview"
    safe = json.loads((fixtures / "safe-update.json").read_text())
    text = preview_report.report(safe, "prod")
    assert (
        "no stateful or protected resource" in text and "| update | `azure-native:containerservice:AgentPool`" in text
    )
    destructive = fixtures / "stateful-replace.json"
    assert preview_report.main([str(destructive), "--stack", "prod"]) == 1, "the job fails on a guarded loss"
    text = preview_report.report(json.loads(destructive.read_text()), "prod")
    assert text.index("Replacement guard: 4") < text.index("| op |") and text.index("| delete |") < text.index(
        "| replace |"
    ), "an approver reads destruction first"
    unreachable = {**safe, "diagnostics": [{"message": "configured Kubernetes cluster is unreachable: dial tcp"}]}
    assert "diffed client-side" in preview_report.report(unreachable, "prod"), (
        "the reader learns the preview was partial"
    )


def test_a_long_report_is_cut_to_githubs_comment_limit_with_its_fence_closed() -> None:
    report = "```\n" + "\n".join(f"line {i}" for i in range(20_000)) + "\n```\n"
    body = pr_comment.compose("plan", "Offline plan", report, "https://github.com/o/r/actions/runs/1")
    assert len(body) <= pr_comment.MAX_BODY_CHARS < len(report), "GitHub refuses longer comment bodies"
    assert body.count("```") % 2 == 0 and body.rstrip().endswith("runs/1)._"), "the pointer to the full summary shows"


class _JsonApi(BaseHTTPRequestHandler):
    """A stand-in REST API on localhost: JSON answers, no request log."""

    def _reply(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _FakeGitHub(_JsonApi):
    comments: ClassVar[list[dict[str, Any]]] = []

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_GET(self) -> None:
        page = int(self.path.rsplit("page=", 1)[1])
        self._reply(self.comments[(page - 1) * 100 : page * 100])

    def do_POST(self) -> None:
        # Comments posted with a workflow's GITHUB_TOKEN show this author.
        self.comments.append(
            {"id": len(self.comments) + 1, "body": self._body()["body"], "user": {"login": pr_comment.ACTIONS_BOT}}
        )
        self._reply(self.comments[-1], 201)

    def do_PATCH(self) -> None:
        comment_id = int(self.path.rsplit("/", 1)[1])
        next(c for c in self.comments if c["id"] == comment_id)["body"] = self._body()["body"]
        self._reply({})


def test_a_second_run_edits_its_comment_past_the_first_page_instead_of_adding_one() -> None:
    _FakeGitHub.comments = [{"id": i + 1, "body": f"review {i}", "user": {"login": "reviewer"}} for i in range(150)]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api = f"http://127.0.0.1:{server.server_port}"
    try:
        first = pr_comment.compose("plan", "Offline plan", "old", "u")
        second = pr_comment.compose("plan", "Offline plan", "new", "u")
        other = pr_comment.compose("preview-prod", "pulumi preview: prod", "p", "u")
        results = [pr_comment.upsert(api, "o/r", 7, "t", m, b) for m, b in (("plan", first), ("plan", second))]
        results.append(pr_comment.upsert(api, "o/r", 7, "t", "preview-prod", other))
    finally:
        server.shutdown()
    assert results == ["created", "updated", "created"]
    ours = [c["body"] for c in _FakeGitHub.comments if c["body"].startswith("<!-- aks-gpu-platform:")]
    assert ours == [second, other], "one comment per report, holding the latest run's text"


# --- removing the runner's address: a stand-in `pulumi` and `git` on PATH ---

_FAKE_PULUMI = """
import json, os, pathlib, sys
root = pathlib.Path(os.environ["FAKE_PULUMI_DIR"])
args = sys.argv[1:]
with open(root / "calls.log", "a") as log:
    log.write(json.dumps(args) + "\\n")
ups = sum(1 for line in (root / "calls.log").read_text().splitlines() if json.loads(line)[:1] == ["up"])
if args[:2] == ["stack", "export"]:
    states = json.loads((root / "states.json").read_text())
    if ups >= len(states) or states[ups] is None:
        sys.exit("error: could not export the stack")
    pathlib.Path(args[args.index("--file") + 1]).write_text(json.dumps(states[ups]))
elif args[:2] == ["stack", "history"]:
    print((root / "history.json").read_text())
elif args[:1] == ["up"]:
    sys.exit(int(os.environ.get("FAKE_PULUMI_UP_EXIT", "0")))
"""


def _fake_pulumi(
    tmp_path: Path, states: list[dict[str, Any] | None] | None = None, history: list[Any] | None = None
) -> dict[str, str]:
    """Environment whose PATH runs a scripted `pulumi` (state per number of `up`s so far) and a no-op `git`."""
    folder = tmp_path / "fake"
    (folder / "bin").mkdir(parents=True)
    (folder / "states.json").write_text(json.dumps(states or []))
    (folder / "history.json").write_text(json.dumps(history or []))
    (folder / "bin" / "pulumi").write_text(f"#!{sys.executable}\n{_FAKE_PULUMI}")
    (folder / "bin" / "git").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("pulumi", "git"):
        (folder / "bin" / tool).chmod(0o755)
    return {"PATH": f"{folder / 'bin'}:{os.environ['PATH']}", "FAKE_PULUMI_DIR": str(folder)}


def _cluster_state(*ranges: str, pending: bool = False) -> dict[str, Any]:
    cluster = {
        "urn": "urn:pulumi:prod::aks-gpu-platform::azure-native:containerservice:ManagedCluster::aks",
        "type": "azure-native:containerservice:ManagedCluster",
        "outputs": {"apiServerAccessProfile": {"authorizedIPRanges": list(ranges)}},
    }
    deployment: dict[str, Any] = {"resources": [cluster]}
    if pending:
        deployment["pending_operations"] = [{"resource": cluster, "type": "updating"}]
    return {"version": 3, "deployment": deployment}


OPEN = _cluster_state("198.51.100.0/26", "8.8.4.4/32")
CLOSED = _cluster_state("198.51.100.0/26")
# Inputs and outputs can disagree after an update that did not finish cleanly: the address recorded on either side
# may be open on the API server.
INPUTS_ONLY = copy.deepcopy(CLOSED)
INPUTS_ONLY["deployment"]["resources"][0]["inputs"] = {
    "apiServerAccessProfile": {"authorizedIPRanges": ["198.51.100.0/26", "8.8.4.4/32"]}
}


@pytest.mark.parametrize(
    ("case", "states", "up_exit", "removed"),
    [
        ("applied, then removed", [OPEN, CLOSED], "0", True),
        ("never applied: nothing to update", [CLOSED, CLOSED], "0", True),
        ("recorded in the inputs only", [INPUTS_ONLY, CLOSED], "0", True),
        ("state unreadable", [None], "0", False),
        ("cluster update interrupted", [_cluster_state("198.51.100.0/26", pending=True)], "0", False),
        ("targeted update failed", [OPEN, OPEN], "1", False),
        ("update passed but the address stayed", [OPEN, OPEN], "0", False),
    ],
)
def test_revoke_removes_the_address_under_the_policy_pack_or_fails_loudly(
    case: str,
    states: list[dict[str, Any] | None],
    up_exit: str,
    removed: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in _fake_pulumi(tmp_path, states=states).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("FAKE_PULUMI_UP_EXIT", up_exit)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    status = runner_access.main(["revoke", "--stack", "prod", "--address", "8.8.4.4"])
    out = capsys.readouterr().out
    calls = [json.loads(line) for line in (tmp_path / "fake" / "calls.log").read_text().splitlines()]
    for up in (c for c in calls if c[:1] == ["up"]):
        assert up[up.index("--policy-pack") + 1] == "policy", f"{case}: every update runs under the policy pack"
        assert up[up.index("--target") + 1] == OPEN["deployment"]["resources"][0]["urn"], case
    if removed:
        assert status == 0 and "::error" not in out, case
        assert len([c for c in calls if c[:1] == ["up"]]) == (0 if states[0] is CLOSED else 1), (
            f"{case}: every cluster that may still admit the address is updated, and only those"
        )
    else:
        assert status == 1, f"{case}: an address possibly left open fails the step"
        assert "::error title=Runner address left authorized::8.8.4.4" in out, f"{case}: annotated on the run"
        assert "8.8.4.4" in summary.read_text(), f"{case}: and written where the run is read"


def test_the_comment_updater_leaves_a_comment_someone_else_wrote_with_the_marker() -> None:
    forged = pr_comment.compose("plan", "Offline plan", "looks fine to merge", "u")
    _FakeGitHub.comments = [{"id": 1, "body": forged, "user": {"login": "someone"}}]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ours = pr_comment.compose("plan", "Offline plan", "the real plan", "u")
        result = pr_comment.upsert(f"http://127.0.0.1:{server.server_port}", "o/r", 7, "t", "plan", ours)
    finally:
        server.shutdown()
    assert result == "created" and _FakeGitHub.comments[0]["body"] == forged, (
        "a comment anyone can write must not be taken over (and its author's text overwritten) by the workflow"
    )


# --- the plan step's exit status: a failing plan-diff fails the pull request ---

# GitHub runs a `run:` step without `shell:` as `bash -e {0}` on Linux, and `shell: bash` as
# `bash --noprofile --norc -eo pipefail {0}` (docs.github.com, workflow syntax, jobs.<job_id>.steps[*].shell).
STEP_SHELLS = {None: ["bash", "-e"], "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"]}
_FAKE_MAKE = """#!/bin/sh
# A stand-in `make`: prints a report line and exits with FAKE_<TARGET>_EXIT (0 when unset).
target=""
for arg in "$@"; do case "$arg" in plan|plan-diff) target="$arg" ;; esac; done
echo "report of $target"
case "$target" in
  plan-diff) exit "${FAKE_PLAN_DIFF_EXIT:-0}" ;;
  plan) exit "${FAKE_PLAN_EXIT:-0}" ;;
esac
"""


def _run_step(step: dict[str, Any], env: dict[str, str]) -> int:
    """Run a workflow step's script as GitHub's runner would, with `env` on top of the runner's."""
    shell = STEP_SHELLS[step.get("shell")]
    return subprocess.run([*shell, "-c", str(step["run"])], env=env, check=False, capture_output=True).returncode


@pytest.mark.parametrize(
    ("diff_exit", "plan_exit", "passes"),
    [("0", "0", True), ("1", "0", False), ("0", "1", False), ("2", "0", False)],
)
def test_the_plan_step_fails_when_plan_diff_or_plan_fails(
    tmp_path: Path, diff_exit: str, plan_exit: str, passes: bool
) -> None:
    """plan-diff exits 1 on a change Azure would refuse: the step (and the pull request's check) must go red."""
    job = _workflow("pull-request.yml")["jobs"]["plan"]
    step = next(s for s in job["steps"] if s.get("id") == "plan")
    assert "continue-on-error" not in step and "continue-on-error" not in job, (
        "continue-on-error turns a refused change into a green check"
    )
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "make").write_text(_FAKE_MAKE)
    (tmp_path / "bin" / "make").chmod(0o755)
    env = {
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "BASE_REF": "main",
        "FAKE_PLAN_DIFF_EXIT": diff_exit,
        "FAKE_PLAN_EXIT": plan_exit,
    }
    returncode = _run_step(
        step, {**env, **{k: str(v) for k, v in (step.get("env") or {}).items() if "${{" not in str(v)}}
    )
    assert (returncode == 0) == passes, (
        f"plan-diff exit {diff_exit}, plan exit {plan_exit}: the step exited {returncode}; "
        "a swallowed status lets a pull request Azure would refuse show green"
    )
    summary = (tmp_path / "summary.md").read_text()
    assert summary.count("report of plan-diff") == 2 and summary.count("report of plan\n") == 2, (
        "both stacks' reports reach the job summary even when one fails"
    )


# --- the scheduled check: a lost run's /32 is found, alerted and removed ---------------------------------------

PROD_RANGES = ["198.51.100.0/26", "203.0.113.32/28"]  # Pulumi.prod.yaml's cluster.apiServer.authorizedIpRanges

_FAKE_AZ = """
import json, os, pathlib, sys
root = pathlib.Path(os.environ["FAKE_AZ_DIR"])
args = sys.argv[1:]
with open(root / "calls.log", "a") as log:
    log.write(json.dumps(args) + "\\n")
if os.environ.get("FAKE_AZ_FAIL"):
    sys.exit("ERROR: (AuthorizationFailed) the client does not have authorization")
ranges = root / "ranges.json"
if args[:2] == ["aks", "show"]:
    print(json.dumps({"authorizedIpRanges": json.loads(ranges.read_text()), "enablePrivateCluster": False}))
elif args[:2] == ["aks", "update"] and not os.environ.get("FAKE_AZ_UPDATE_IGNORED"):
    given = args[args.index("--api-server-authorized-ip-ranges") + 1]
    ranges.write_text(json.dumps(given.split(",")))
"""


class _FakeRepoApi(_JsonApi):
    """The parts of GitHub's REST API the check reads and writes: deploy runs and their jobs, issues."""

    running_jobs: ClassVar[list[dict[str, Any]]] = []
    issues: ClassVar[list[dict[str, Any]]] = []
    comments: ClassVar[list[tuple[int, str]]] = []

    def do_GET(self) -> None:
        if "/actions/workflows/deploy.yml/runs?status=in_progress" in self.path:
            self._reply({"workflow_runs": [{"id": 7}] if self.running_jobs else []})
        elif "/actions/runs/7/jobs" in self.path:
            self._reply({"jobs": self.running_jobs})
        elif "/issues?state=open" in self.path:
            self._reply(self.issues)
        else:
            self._reply({"message": "Not Found"}, 404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/issues"):
            number = len(self.issues) + 1
            self.issues.append({"number": number, "user": {"login": pr_comment.ACTIONS_BOT}, **body})
            self._reply(self.issues[-1], 201)
        else:
            self.comments.append((int(self.path.split("/")[-2]), body["body"]))
            self._reply({}, 201)


@pytest.fixture
def repo_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_FakeRepoApi]]:
    _FakeRepoApi.running_jobs, _FakeRepoApi.issues, _FakeRepoApi.comments = [], [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeRepoApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    try:
        yield _FakeRepoApi
    finally:
        server.shutdown()


def _fake_az(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, admitted: list[str]) -> Path:
    """A scripted `az` on PATH whose cluster admits `admitted`; returns its folder (calls.log, ranges.json)."""
    folder = tmp_path / "az"
    (folder / "bin").mkdir(parents=True)
    (folder / "ranges.json").write_text(json.dumps(admitted))
    (folder / "bin" / "az").write_text(f"#!{sys.executable}\n{_FAKE_AZ}")
    (folder / "bin" / "az").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_AZ_DIR", str(folder))
    for key in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        monkeypatch.setenv(key, str(tmp_path / key.lower()))
    return folder


def _az_calls(folder: Path) -> list[list[str]]:
    log = folder / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def test_the_check_finds_a_left_address_alerts_once_and_comments_after(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    repo_api: type[_FakeRepoApi],
) -> None:
    # Azure writes a single address without its length too: the same network as the stack file's.
    _fake_az(tmp_path, monkeypatch, ["198.51.100.0/26", "203.0.113.32/28", "8.8.4.4"])
    assert runner_access.main(["check", "--stack", "prod"]) == 0, "the check itself worked"
    out = capsys.readouterr().out
    assert "::error title=Runner address left authorized::" in out and "8.8.4.4/32" in out, out
    assert (tmp_path / "github_output").read_text() == "drift=true\n", "the reconcile job reads this output"
    assert "8.8.4.4/32" in (tmp_path / "github_step_summary").read_text()
    (issue,) = repo_api.issues
    assert "8.8.4.4/32" in issue["body"] and "prod" in issue["title"], "one issue says which address and stack"
    assert runner_access.main(["check", "--stack", "prod"]) == 0
    assert len(repo_api.issues) == 1 and [n for n, _ in repo_api.comments] == [1], (
        "a finding that persists comments on the open issue instead of opening one per hour"
    )


def test_the_check_says_an_api_server_without_ranges_is_open_to_everyone(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    repo_api: type[_FakeRepoApi],
) -> None:
    """`az aks update --api-server-authorized-ip-ranges ""` switches the restriction off: a cluster that admits no
    range admits every address. An alert reading "does not admit the stack file's ranges" sounds like a cluster
    closed too tight, and nobody hurries to approve prod's reconcile for that."""
    folder = _fake_az(tmp_path, monkeypatch, [])
    assert runner_access.main(["check", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    assert "every address" in out and "::error title=Runner address left authorized::" in out, out
    (issue,) = repo_api.issues
    assert "every address" in issue["body"], "the alert issue says the API server is open"
    assert (tmp_path / "github_output").read_text() == "drift=true\n", "the reconcile job sets the ranges back"
    assert runner_access.main(["reconcile", "--stack", "prod"]) == 0
    assert json.loads((folder / "ranges.json").read_text()) == PROD_RANGES, "reconcile restores the stack file's"


def test_the_check_finds_a_range_removed_by_hand_and_reconcile_puts_it_back(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    repo_api: type[_FakeRepoApi],
) -> None:
    """A range of the stack file missing on the cluster (removed beside Pulumi) locks out whoever reaches the API
    server from it, the deploy runners of prod's "deployment runners" range included."""
    folder = _fake_az(tmp_path, monkeypatch, PROD_RANGES[:1])
    assert runner_access.main(["check", "--stack", "prod"]) == 0
    assert PROD_RANGES[1] in capsys.readouterr().out and (tmp_path / "github_output").read_text() == "drift=true\n", (
        "the missing range is named, and the reconcile job runs"
    )
    assert runner_access.main(["reconcile", "--stack", "prod"]) == 0
    assert json.loads((folder / "ranges.json").read_text()) == PROD_RANGES, "the stack file's ranges, all of them"


def test_revoke_applies_the_committed_stack_file_without_the_runners_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`authorize` wrote the runner's /32 into the stack file for the run; the update that closes it again must be
    made from the file as committed, or it applies the address once more."""
    repo = tmp_path / "repo"
    repo.mkdir()
    stack_file = repo / "Pulumi.prod.yaml"
    stack_file.write_text((REPO_ROOT / "Pulumi.prod.yaml").read_text())
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "Pulumi.prod.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "stack"], check=True)
    assert runner_access.main(["authorize", "--stack", "prod", "--address", "8.8.4.4", "--root", str(repo)]) == 0
    assert "8.8.4.4/32" in stack_file.read_text()
    env = _fake_pulumi(tmp_path, states=[OPEN, CLOSED])
    (Path(env["FAKE_PULUMI_DIR"]) / "bin" / "git").unlink()  # the real git restores the file
    # The scripted pulumi notes the stack file it would read at each update.
    script = (Path(env["FAKE_PULUMI_DIR"]) / "bin" / "pulumi").read_text()
    note = "    (root / 'applied.yaml').write_text(pathlib.Path('Pulumi.prod.yaml').read_text())\n"
    up = 'elif args[:1] == ["up"]:\n'
    (Path(env["FAKE_PULUMI_DIR"]) / "bin" / "pulumi").write_text(script.replace(up, up + note))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.chdir(repo)
    assert runner_access.main(["revoke", "--stack", "prod", "--address", "8.8.4.4"]) == 0
    applied = (Path(env["FAKE_PULUMI_DIR"]) / "applied.yaml").read_text()
    assert "8.8.4.4" not in applied and applied == (REPO_ROOT / "Pulumi.prod.yaml").read_text(), (
        "the closing update is made from the committed stack file"
    )


def test_the_check_passes_when_the_cluster_admits_the_stack_files_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_api: type[_FakeRepoApi]
) -> None:
    _fake_az(tmp_path, monkeypatch, ["203.0.113.32/28", "198.51.100.0/26"])
    assert runner_access.main(["check", "--stack", "prod"]) == 0
    assert (tmp_path / "github_output").read_text() == "drift=false\n" and not repo_api.issues


def test_the_check_leaves_a_running_deploys_own_address_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_api: type[_FakeRepoApi]
) -> None:
    folder = _fake_az(tmp_path, monkeypatch, [*PROD_RANGES, "8.8.4.4/32"])
    repo_api.running_jobs = [{"name": "up dev", "status": "completed"}, {"name": "up prod", "status": "in_progress"}]
    assert runner_access.main(["check", "--stack", "prod"]) == 0, "prod's deploy holds its runner's /32 for now"
    assert not repo_api.issues and not _az_calls(folder)
    assert (tmp_path / "github_output").read_text() == "drift=false\n"
    repo_api.running_jobs = [{"name": "up dev", "status": "in_progress"}, {"name": "up prod", "status": "queued"}]
    assert runner_access.main(["check", "--stack", "prod"]) == 0
    assert len(repo_api.issues) == 1, "another stack's deploy, or prod's still queued, excuses nothing on prod"


def test_a_check_that_cannot_read_the_cluster_fails_loudly(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    repo_api: type[_FakeRepoApi],
) -> None:
    _fake_az(tmp_path, monkeypatch, PROD_RANGES)
    monkeypatch.setenv("FAKE_AZ_FAIL", "1")
    assert runner_access.main(["check", "--stack", "prod"]) == 1, "an unchecked cluster must not look clean"
    assert "::error title=Runner ranges not checked::" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("case", "running", "ignored", "status", "updated"),
    [
        ("left address removed", False, False, 0, True),
        ("a deploy started since the check", True, False, 0, False),
        ("the update did not take", False, True, 1, True),
    ],
)
def test_reconcile_sets_the_ranges_back_to_the_stack_file(
    case: str,
    running: bool,
    ignored: bool,
    status: int,
    updated: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    repo_api: type[_FakeRepoApi],
) -> None:
    folder = _fake_az(tmp_path, monkeypatch, [*PROD_RANGES, "8.8.4.4/32"])
    repo_api.running_jobs = [{"name": "up prod", "status": "in_progress"}] if running else []
    if ignored:
        monkeypatch.setenv("FAKE_AZ_UPDATE_IGNORED", "1")
    assert runner_access.main(["reconcile", "--stack", "prod"]) == status, case
    updates = [c for c in _az_calls(folder) if c[:2] == ["aks", "update"]]
    assert bool(updates) == updated, case
    for update in updates:
        given = update[update.index("--api-server-authorized-ip-ranges") + 1]
        assert given.split(",") == PROD_RANGES, f"{case}: exactly the stack file's ranges, nothing kept from before"
        assert update[update.index("--name") + 1] == "aks-gpu-prod-krc", case
    if status == 0 and updated:
        assert json.loads((folder / "ranges.json").read_text()) == PROD_RANGES, case


def test_the_schedule_checks_every_stack_a_deploy_admits_a_runner_to() -> None:
    """Each stack whose deploy job authorizes its runner gets an hourly check and a reconcile after a drift."""
    workflow = _workflow("runner-ranges.yml")
    assert workflow[True]["schedule"], "on a schedule: a lost run leaves nobody to notice"
    deploys = _workflow("deploy.yml")["jobs"]
    admitting = {job["env"]["STACK"]: job for job in deploys.values() if "runner_access authorize" in str(job["steps"])}
    assert set(admitting) == {"dev", "prod"}
    for stack, deploy in admitting.items():
        assert deploy["name"] == runner_access.deploy_job_name(stack), (
            f"the check recognises {stack}'s deploy by its job name; a renamed job makes its /32 look left behind"
        )
        check, reconcile = workflow["jobs"][f"check-{stack}"], workflow["jobs"][f"reconcile-{stack}"]
        assert check["environment"] == f"preview-{stack}" and check["env"]["STACK"] == stack
        assert 'tools.runner_access check --stack "$STACK"' in "\n".join(_runs(check))
        assert check["outputs"]["drift"] == "${{ steps.compare.outputs.drift }}"
        compare = next(i for i, step in enumerate(check["steps"]) if step.get("id") == "compare")
        (red,) = [step for step in check["steps"][compare + 1 :] if "drift == 'true'" in str(step.get("if"))]
        assert _run_step(red, {**os.environ, "STACK": stack}) != 0, "a drift shows the scheduled run red"
        assert {"actions": "read", "issues": "write"}.items() <= check["permissions"].items()
        assert reconcile["needs"] == f"check-{stack}" and reconcile["environment"] == stack, (
            f"{stack}: the ranges are written by the stack's own deploy identity, behind its environment's rules"
        )
        condition = reconcile["if"]
        assert "always()" in condition and f"needs.check-{stack}.outputs.drift == 'true'" in condition, (
            "the check fails on a drift; the reconcile must still run after it, and only then"
        )
        assert 'tools.runner_access reconcile --stack "$STACK"' in "\n".join(_runs(reconcile))
