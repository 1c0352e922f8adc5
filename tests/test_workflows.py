"""The GitHub workflows work as shipped: kubelogin, identities, authorized ranges, reports where they are read."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from tools import pr_comment, preview_report, runner_access
from tools.e2e_stack import validate
from tools.stack_files import REPO_ROOT, load_stack_file

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
PREVIEW_ID = "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
DEPLOY_ID = "${{ vars.AZURE_CLIENT_ID }}"
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
        assert job["environment"] == "preview", f"{file}:{name}: the preview identity lives in the preview environment"
        logins = [s["with"] for s in job["steps"] if str(s.get("uses", "")).startswith("azure/login@")]
        assert logins and all(login["client-id"] == PREVIEW_ID for login in logins), f"{file}:{name}"
        for key in ("ARM_CLIENT_ID", "AZURE_CLIENT_ID"):
            assert job["env"][key] == PREVIEW_ID, f"{file}:{name}: Pulumi ({key}) and kubelogin act as that identity"
        assert DEPLOY_ID not in yaml.safe_dump(job), f"{file}:{name}: code under review never gets the deploy identity"


def test_the_deploy_identity_appears_only_behind_deploy_environments() -> None:
    holders = [(f, n, j) for f, n, j in _jobs() if DEPLOY_ID in yaml.safe_dump(j)]
    assert holders, "the deploy and e2e jobs use the deploy identity"
    for file, name, job in holders:
        assert file in {"deploy.yml", "e2e.yml"}, f"{file}:{name}: pull requests run untrusted code"
        assert job["environment"] in {"dev", "prod", "e2e"}, f"{file}:{name}: only a protected environment holds it"


def test_prod_waits_for_its_preview_which_writes_the_job_summary() -> None:
    jobs = _workflow("deploy.yml")["jobs"]
    assert jobs["prod"]["needs"] == "prod-preview" and jobs["prod"]["environment"] == "prod"
    preview = "\n".join(_runs(jobs["prod-preview"]))
    assert 'pulumi preview --stack "$STACK"' in preview and jobs["prod-preview"]["env"]["STACK"] == "prod"
    assert "tools.preview_report" in preview and '>> "$GITHUB_STEP_SUMMARY"' in preview, (
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
            if re.search(r"pulumi up --yes --skip-preview --stack \"\$STACK\" --policy", r)
        )
        removal = next(i for i, r in enumerate(runs) if "--target" in r)
        assert "tools.runner_access authorize" in runs[egress] and egress < up < removal, name
        assert steps[removal]["if"].startswith("${{ always()") and "outcome == 'added'" in steps[removal]["if"], (
            f"{name}: the runner's address leaves the ranges even when the deploy fails"
        )
        assert 'git checkout -- "Pulumi.$STACK.yaml"' in runs[removal], f"{name}: restore the ranges before the cluster"


def test_the_pull_request_posts_the_markdown_plan_of_both_stacks() -> None:
    job = _workflow("pull-request.yml")["jobs"]["plan"]
    runs = "\n".join(_runs(job))
    assert "for stack in dev prod" in runs and 'make --silent plan STACK="$stack" FORMAT=markdown' in runs
    assert "tools.pr_comment --pr" in runs and job["permissions"]["pull-requests"] == "write"
    preview = "\n".join(_runs(_workflow("pull-request.yml")["jobs"]["preview"]))
    assert "tools.pr_comment" in preview and "tools.preview_report" in preview


def test_every_action_is_pinned_by_sha() -> None:
    used = {str(s["uses"]) for _, _, job in _jobs() for s in job["steps"] if "uses" in s}
    assert used and all(SHA_PIN.match(u) for u in used), used


# --- tools the workflows call ---


def test_authorize_adds_the_runner_as_a_slash_32_that_the_config_accepts() -> None:
    config = load_stack_file("prod")
    outcome, widened = runner_access.authorize(config, "8.8.4.4")
    ranges = widened["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"]
    assert outcome == "added" and ranges[-1] == "8.8.4.4/32"
    assert ranges[:-1] == config["aks-gpu-platform:cluster"]["apiServer"]["authorizedIpRanges"], "others are kept"
    validate(widened)  # the stack loader takes it as `pulumi up` will


def test_a_runner_inside_the_ranges_needs_nothing_and_a_private_cluster_refuses() -> None:
    config = load_stack_file("prod")
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


class _FakeGitHub(BaseHTTPRequestHandler):
    comments: ClassVar[list[dict[str, Any]]] = []

    def _reply(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_GET(self) -> None:
        page = int(self.path.rsplit("page=", 1)[1])
        self._reply(self.comments[(page - 1) * 100 : page * 100])

    def do_POST(self) -> None:
        self.comments.append({"id": len(self.comments) + 1, "body": self._body()["body"]})
        self._reply(self.comments[-1], 201)

    def do_PATCH(self) -> None:
        comment_id = int(self.path.rsplit("/", 1)[1])
        next(c for c in self.comments if c["id"] == comment_id)["body"] = self._body()["body"]
        self._reply({})

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_second_run_edits_its_comment_past_the_first_page_instead_of_adding_one() -> None:
    _FakeGitHub.comments = [{"id": i + 1, "body": f"review {i}"} for i in range(150)]
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
