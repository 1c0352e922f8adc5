"""tools/e2e_checks.py against fake kubectl, az and HTTP: healthy and broken platforms, retries, secrets."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE, cpu_node_selector
from aks_gpu_platform.testing import Recording
from tools import e2e_checks
from tools.e2e_checks import Clock, CommandResult, HttpResponse

TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.secret-prometheus-token-payload.signature"
KUBE_SECRET = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUU2VENDQXRHZ0F3SUJBZ0lSQUtzZWNyZXQ="
KUBECONFIG = f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {KUBE_SECRET}
    server: https://aks-gpu-e2e-1-abcd.hcp.koreacentral.azmk8s.io:443
  name: aks-gpu-e2e-1
users:
- name: clusterUser
  user:
    exec:
      command: kubelogin
"""
ENDPOINT = "https://amw-aksgpu-e2e-abcd.koreacentral.prometheus.monitor.azure.com"
OUTPUTS: dict[str, Any] = {
    "kubeconfig": KUBECONFIG,
    "clusterName": "aks-gpu-e2e-1",
    "gpuPoolNames": ["gput4"],
    "prometheusQueryEndpoint": ENDPOINT,
    "lustreNamespace": "training",
    "lustrePvcName": "lustre-pvc",
}
FAST = {"gpu-smoke-job": 60.0, "gpu-allocatable": 60.0, "dcgm-metrics": 120.0, "lustre-mount": 60.0}


def ok(payload: Any) -> CommandResult:
    return CommandResult(0, json.dumps(payload) if not isinstance(payload, str) else payload, "")


def job(succeeded: int = 0, failed: int = 0, condition: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"succeeded": succeeded, "failed": failed}
    if condition:
        status["conditions"] = [{"status": "True", **condition}]
    return {"metadata": {"name": "gpu-smoke-test-1a2b3c4d", "namespace": "gpu-resources"}, "status": status}


def node(name: str, gpus: str | None) -> dict[str, Any]:
    allocatable = {"cpu": "3860m"} | ({GPU_RESOURCE: gpus} if gpus is not None else {})
    return {
        "metadata": {"name": name, "labels": {"pool": "gpu", "gpu-pool": "gput4"}},
        "status": {"allocatable": allocatable},
    }


def prometheus(series: list[dict[str, Any]]) -> HttpResponse:
    return HttpResponse(200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": series}}))


SERIES = [{"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "aks-gput4-1-vmss000000"}, "value": [1, "3"]}]


def pod(phase: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "e2e-lustre-check-7"}, "status": {"phase": phase, **status}}


class FakeTools:
    """Answers kubectl/az by verb (the next queued answer; the last one repeats) and HTTP from a queue."""

    def __init__(self) -> None:
        self.routes: dict[str, list[CommandResult]] = {}
        self.http: list[HttpResponse] = []
        self.calls: list[tuple[list[str], str | None]] = []
        self.http_calls: list[tuple[str, dict[str, str]]] = []
        self.kubeconfig_seen: list[tuple[str, int]] = []

    def on(self, route: str, *answers: CommandResult) -> FakeTools:
        self.routes[route] = list(answers)
        return self

    def on_http(self, *answers: HttpResponse) -> FakeTools:
        self.http = list(answers)
        return self

    @staticmethod
    def route(args: Sequence[str]) -> str:
        if args[0] == "kubectl":
            assert args[1] == "--kubeconfig", "every kubectl call names the run's kubeconfig file"
            rest = list(args[3:])
            return "kubectl logs" if rest[0] == "logs" else f"kubectl {rest[0]} {rest[1]}"
        return " ".join(args[:3])

    def run(self, args: Sequence[str], stdin: str | None = None, timeout: float = 60) -> CommandResult:
        self.calls.append((list(args), stdin))
        if args[0] == "kubectl":
            path = args[2]
            self.kubeconfig_seen.append((Path(path).read_text(), stat.S_IMODE(os.stat(path).st_mode)))
        queue = self.routes.get(self.route(args))
        if not queue:
            return CommandResult(1, "", f"no fake answer for {self.route(args)}")
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def http_get(self, url: str, headers: Mapping[str, str], timeout: float = 30) -> HttpResponse:
        self.http_calls.append((url, dict(headers)))
        if not self.http:
            return HttpResponse(0, "no fake answer")
        return self.http.pop(0) if len(self.http) > 1 else self.http[0]

    def count(self, route: str) -> int:
        return sum(1 for args, _ in self.calls if self.route(args) == route)


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []
        super().__init__(now=lambda: self.t, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def healthy() -> FakeTools:
    return (
        FakeTools()
        .on("kubectl get jobs", ok({"items": [job(succeeded=1)]}))
        .on("kubectl get nodes", ok({"items": [node("aks-gput4-1-vmss000000", "1")]}))
        .on("az account get-access-token", ok({"accessToken": TOKEN, "expiresOn": "2026-12-02 15:00:00"}))
        .on_http(prometheus(SERIES))
        .on("kubectl create -f", ok("pod/e2e-lustre-check-7 created"))
        .on("kubectl get pod", ok(pod("Pending")), ok(pod("Running")), ok(pod("Succeeded")))
        .on("kubectl delete pod", ok('pod "e2e-lustre-check-7" deleted'))
    )


def run(tools: FakeTools, outputs: dict[str, Any] | None = None, only: Sequence[str] = ()) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = e2e_checks.run_all(
        OUTPUTS if outputs is None else outputs,
        tools,
        out=lines.append,
        clock=FakeClock(),
        only=only,
        timeouts=FAST,
        run_suffix="7",
    )
    return code, lines


def verdict(lines: list[str], check: str) -> str:
    found = [line for line in lines if line.startswith(("PASS ", "FAIL ")) and f" {check}:" in line]
    assert len(found) == 1, f"one verdict line for {check}, got {found}"
    return found[0]


def test_a_healthy_platform_passes_every_check_and_exits_zero() -> None:
    tools = healthy()
    code, lines = run(tools)
    assert code == 0, lines
    for check in FAST:
        assert verdict(lines, check).startswith("PASS"), f"{check} must pass on a healthy platform: {lines}"
    assert lines[-1] == "4 passed, 0 failed", "the summary line counts the verdicts"
    assert tools.count("kubectl delete pod") == 1, "the Lustre check pod is deleted after it ran"


def test_the_smoke_job_is_found_by_the_label_the_component_sets(dev_recording: Recording) -> None:
    [smoke] = [r for r in dev_recording.of_type("kubernetes:batch/v1:Job") if "gpu-smoke-test" in r.name]
    assert smoke.inputs["metadata"]["labels"] == e2e_checks.SMOKE_JOB_LABELS, (
        "the check looks the Job up by this label: it must be the one the program puts on it"
    )
    tools = healthy()
    run(tools, only=["gpu-smoke-job"])
    [(args, _)] = [c for c in tools.calls if FakeTools.route(c[0]) == "kubectl get jobs"]
    assert args[-4:] == ["-l", "app=gpu-smoke-test", "-o", "json"] and "--all-namespaces" in args


def test_a_failed_smoke_job_fails_at_once_with_its_reason() -> None:
    tools = healthy().on(
        "kubectl get jobs",
        ok({"items": [job(failed=3, condition={"type": "Failed", "reason": "BackoffLimitExceeded"})]}),
    )
    code, lines = run(tools, only=["gpu-smoke-job"])
    line = verdict(lines, "gpu-smoke-job")
    assert code == 1 and line.startswith("FAIL"), lines
    assert "gpu-resources/gpu-smoke-test-1a2b3c4d failed: BackoffLimitExceeded" in line, "say which Job and why"
    assert "failed pods: 3" in line
    assert tools.count("kubectl get jobs") == 1, "a failed Job cannot recover: no retries"


def test_a_running_smoke_job_is_awaited_until_it_succeeds() -> None:
    tools = healthy().on(
        "kubectl get jobs", ok({"items": []}), ok({"items": [job()]}), ok({"items": [job(succeeded=1)]})
    )
    code, lines = run(tools, only=["gpu-smoke-job"])
    assert code == 0, lines
    waits = [line for line in lines if line.startswith("wait gpu-smoke-job")]
    assert len(waits) == 2 and "no Job labelled app=gpu-smoke-test yet" in waits[0], waits
    assert "active=0 failed=0" in waits[1], "progress says what the Job is doing"


def test_zero_allocatable_gpus_retry_until_the_deadline_then_fail() -> None:
    tools = healthy().on("kubectl get nodes", ok({"items": [node("aks-gput4-1-vmss000000", "0"), node("n2", None)]}))
    clock = FakeClock()
    lines: list[str] = []
    code = e2e_checks.run_all(OUTPUTS, tools, lines.append, clock, ["gpu-allocatable"], FAST, "7")
    line = verdict(lines, "gpu-allocatable")
    assert code == 1 and line.startswith("FAIL"), lines
    assert "still not ready after 60s" in line and f"0 allocatable {GPU_RESOURCE}" in line, line
    assert "aks-gput4-1-vmss000000 (pool gput4): 0" in line, "name the nodes that have no GPU"
    assert clock.t - 1000.0 <= FAST["gpu-allocatable"], "the check stops at its deadline"
    assert tools.count("kubectl get nodes") == len(clock.slept) + 1 >= 4, "it retried every interval"
    [(args, _)] = tools.calls[:1]
    assert args[3:6] == ["get", "nodes", "-l"] and args[6] == "pool=gpu", "GPU nodes by the pool=gpu label"


def test_a_transient_kubectl_error_is_retried() -> None:
    tools = healthy().on(
        "kubectl get nodes",
        CommandResult(1, "", "Unable to connect to the server: i/o timeout"),
        ok({"items": [node("aks-gput4-1-vmss000000", "1")]}),
    )
    code, lines = run(tools, only=["gpu-allocatable"])
    assert code == 0, lines
    assert any("wait gpu-allocatable: kubectl get nodes exited 1: Unable to connect" in line for line in lines)


def test_dcgm_metrics_are_queried_with_a_prometheus_token_from_az() -> None:
    tools = healthy()
    code, lines = run(tools, only=["dcgm-metrics"])
    assert code == 0 and "1 series from aks-gput4-1-vmss000000" in verdict(lines, "dcgm-metrics"), lines
    [(url, headers)] = tools.http_calls
    assert url == f"{ENDPOINT}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL", "PromQL API of the workspace's endpoint"
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    [(az, _)] = [c for c in tools.calls if c[0][0] == "az"]
    assert az == [
        "az",
        "account",
        "get-access-token",
        "--resource",
        "https://prometheus.monitor.azure.com",
        "--output",
        "json",
    ], "the token's audience is the Azure Monitor Prometheus resource"


def test_an_empty_prometheus_result_fails_after_the_deadline() -> None:
    tools = healthy().on_http(prometheus([]))
    code, lines = run(tools, only=["dcgm-metrics"])
    line = verdict(lines, "dcgm-metrics")
    assert code == 1 and line.startswith("FAIL"), lines
    assert "DCGM_FI_DEV_GPU_UTIL has no series in the workspace yet" in line
    assert tools.count("az account get-access-token") == 1, "one token serves every retry"


def test_metrics_that_arrive_late_pass_and_a_forbidden_answer_names_the_role() -> None:
    tools = healthy().on_http(HttpResponse(403, '{"error":"forbidden"}'), prometheus([]), prometheus(SERIES))
    code, lines = run(tools, only=["dcgm-metrics"])
    assert code == 0, lines
    assert any("HTTP 403 (the identity needs Monitoring Data Reader" in line for line in lines), lines


def test_a_failed_lustre_pod_fails_with_its_log_and_is_deleted() -> None:
    failed_pod = pod(
        "Failed",
        containerStatuses=[{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}],
    )
    tools = healthy().on("kubectl get pod", ok(failed_pod))
    tools.on("kubectl logs", ok("sh: 1: cannot create /mnt/lustre/.e2e-lustre-check-7: Permission denied\n"))
    code, lines = run(tools, only=["lustre-mount"])
    line = verdict(lines, "lustre-mount")
    assert code == 1 and line.startswith("FAIL"), lines
    assert "terminated Error" in line and "Permission denied" in line, "the failure says what the pod saw"
    assert tools.count("kubectl delete pod") == 1, "the pod is deleted even when the check fails"


def test_a_lustre_pod_that_never_mounts_fails_with_the_waiting_reason() -> None:
    waiting = pod("Pending", containerStatuses=[{"state": {"waiting": {"reason": "ContainerCreating"}}}])
    tools = healthy().on("kubectl get pod", ok(waiting))
    code, lines = run(tools, only=["lustre-mount"])
    assert code == 1 and "is Pending: waiting ContainerCreating" in verdict(lines, "lustre-mount"), lines
    assert tools.count("kubectl delete pod") == 1


def test_the_lustre_check_fails_when_the_stack_has_no_lustre() -> None:
    outputs = {k: v for k, v in OUTPUTS.items() if not k.startswith("lustre")}
    tools = healthy()
    code, lines = run(tools, outputs, only=["lustre-mount"])
    assert code == 1 and "exports no lustreNamespace/lustrePvcName" in verdict(lines, "lustre-mount"), lines
    assert tools.count("kubectl create -f") == 0 and tools.count("kubectl delete pod") == 0


def test_the_lustre_pod_is_restricted_valid_and_mounts_the_exported_claim() -> None:
    tools = healthy()
    run(tools, only=["lustre-mount"])
    [(_, stdin)] = [c for c in tools.calls if FakeTools.route(c[0]) == "kubectl create -f"]
    manifest = json.loads(stdin or "")
    kubernetes_validate.validate(manifest, "1.33.0", strict=True)
    spec = manifest["spec"]
    assert manifest["metadata"]["namespace"] == "training", "the claim's namespace, from the stack outputs"
    assert spec["volumes"] == [{"name": "lustre", "persistentVolumeClaim": {"claimName": "lustre-pvc"}}]
    assert spec["nodeSelector"] == cpu_node_selector(), "the CPU pool mounts Lustre; no GPU is held"
    assert spec["securityContext"]["runAsNonRoot"] and spec["securityContext"]["seccompProfile"]
    container = spec["containers"][0]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert not container["securityContext"]["allowPrivilegeEscalation"]
    assert container["resources"]["limits"], "bounded like every other pod of the platform"
    script = container["command"][-1]
    assert '> "/mnt/lustre/.e2e-lustre-check-7"' in script and 'cat "/mnt/lustre/' in script, "write, read back"


def test_one_failing_check_makes_the_exit_code_non_zero_and_the_others_still_run() -> None:
    tools = healthy().on_http(prometheus([]))
    code, lines = run(tools)
    assert code == 1
    assert [verdict(lines, c)[:4] for c in FAST] == ["PASS", "PASS", "FAIL", "PASS"], lines
    assert lines[-1] == "3 passed, 1 failed"


def test_secrets_never_reach_the_output() -> None:
    leaky = f"error: token {TOKEN} rejected; certificate-authority-data: {KUBE_SECRET}"
    tools = (
        healthy()
        .on("kubectl get jobs", CommandResult(1, "", leaky))
        .on("kubectl get nodes", CommandResult(1, "", f"error loading config {KUBECONFIG}"))
        .on_http(HttpResponse(401, f'{{"error": "invalid token {TOKEN}"}}'))
    )
    code, lines = run(tools)
    text = "\n".join(lines)
    assert code == 1
    assert TOKEN not in text and KUBE_SECRET not in text and KUBECONFIG not in text, text
    assert "***" in text, "the messages stay readable, with the secret masked"
    assert "invalid token ***" in text and "kubectl get jobs exited 1: error: token *** rejected" in text


def test_the_redactor_masks_registered_secrets_and_any_bearer_token() -> None:
    redact = e2e_checks.Redactor()
    redact.add(KUBECONFIG)
    unregistered = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJrdWJlbG9naW4ifQ.c2ln"
    masked = redact(f"ca {KUBE_SECRET} and token {unregistered} at node aks-gput4-1")
    assert masked == "ca *** and token *** at node aks-gput4-1", "secrets go, the rest stays readable"


def test_the_kubeconfig_is_handed_over_in_a_private_file_that_is_removed() -> None:
    tools = healthy()
    run(tools)
    assert tools.kubeconfig_seen, "kubectl was called"
    assert all(content == KUBECONFIG and mode == 0o600 for content, mode in tools.kubeconfig_seen), (
        "only the owner may read the kubeconfig"
    )
    path = tools.calls[0][0][2]
    assert not Path(path).exists(), "the kubeconfig file is removed after the checks"


def test_the_cli_rejects_unusable_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "outputs.json"
    broken.write_text("{not json")
    assert e2e_checks.main(["--outputs", str(broken)]) == 2
    assert "cannot read stack outputs" in capsys.readouterr().err
    assert e2e_checks.main(["--outputs", str(tmp_path / "missing.json")]) == 2
    no_kubeconfig = tmp_path / "no-kubeconfig.json"
    no_kubeconfig.write_text(json.dumps({"clusterName": "x"}))
    assert e2e_checks.main(["--outputs", str(no_kubeconfig)]) == 2
    assert "no kubeconfig output" in capsys.readouterr().out


def test_an_unexpected_error_fails_its_check_alone_and_stays_redacted() -> None:
    class BrokenNodes(FakeTools):
        def run(self, args: Sequence[str], stdin: str | None = None, timeout: float = 60) -> CommandResult:
            if self.route(args) == "kubectl get nodes":
                raise ValueError(f"unexpected reply quoting {KUBE_SECRET}")
            return super().run(args, stdin, timeout)

    tools = healthy()
    broken = BrokenNodes()
    broken.routes, broken.http = tools.routes, tools.http
    code, lines = run(broken)
    text = "\n".join(lines)
    assert code == 1, "a check that crashed is a failed check"
    assert [verdict(lines, c)[:4] for c in FAST] == ["PASS", "FAIL", "PASS", "PASS"], "the other checks still run"
    assert KUBE_SECRET not in text and "ValueError: unexpected reply quoting ***" in text, text
