"""Check a live platform stack from its outputs: what `pulumi up` succeeding does not prove.

    pulumi stack output --json --show-secrets > outputs.json   # a 0600 file: it holds the kubeconfig
    python -m tools.e2e_checks --outputs outputs.json

Each check retries until its own deadline (the smoke Job may still run, DCGM series reach the
workspace a minute or two after the exporter starts) and prints one PASS or FAIL line:

- gpu-smoke-job: the GPU smoke Job (label app=gpu-smoke-test) has a succeeded pod;
- gpu-allocatable: a node labelled pool=gpu advertises allocatable nvidia.com/gpu >= 1;
- dcgm-metrics: `DCGM_FI_DEV_GPU_UTIL` returns series from the Azure Monitor workspace's
  Prometheus query endpoint, read with an Entra ID token from `az account get-access-token`;
- lustre-mount: a short-lived restricted pod mounts the Lustre claim, writes a file, reads it
  back and removes it; the pod is deleted afterwards whatever happened.

kubectl and az run as subprocesses behind the `Tools` interface (tests pass fakes); HTTP uses
urllib; nothing outside the standard library. The kubeconfig and the token never reach the
output: every printed message goes through `Redactor`. Exit 0 when every check passes, 1 when
one fails, 2 when the outputs file is unusable.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_NAME_LABEL_KEY,
    GPU_RESOURCE,
    cpu_node_selector,
    gpu_node_selector,
)

SMOKE_JOB_LABELS = {"app": "gpu-smoke-test"}  # components/gpu/smoke_test.py labels its Job so
DCGM_METRIC = "DCGM_FI_DEV_GPU_UTIL"
PROMETHEUS_RESOURCE = "https://prometheus.monitor.azure.com"
LUSTRE_MOUNT = "/mnt/lustre"
LUSTRE_CHECK_IMAGE = "ubuntu:24.04"  # the image of the Lustre verification pod
JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
NOBODY = 65534  # the filesystem's root-squash uid: what a squashed root would write as anyway

Status = Literal["pass", "pending", "fail"]


@dataclass(frozen=True)
class Outcome:
    """One probe's verdict: pass, fail (final: retrying cannot help) or pending (retry)."""

    status: Status
    message: str


def passed(message: str) -> Outcome:
    return Outcome("pass", message)


def pending(message: str) -> Outcome:
    return Outcome("pending", message)


def failed(message: str) -> Outcome:
    return Outcome("fail", message)


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: str


class Tools(Protocol):
    """What the checks need from the outside world; tests substitute a fake."""

    def run(self, args: Sequence[str], stdin: str | None = None, timeout: float = 60) -> CommandResult: ...

    def http_get(self, url: str, headers: Mapping[str, str], timeout: float = 30) -> HttpResponse: ...


class SystemTools:
    """The real thing: subprocesses and urllib."""

    def run(self, args: Sequence[str], stdin: str | None = None, timeout: float = 60) -> CommandResult:
        try:
            done = subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return CommandResult(124, "", f"timed out after {timeout:.0f}s")
        except FileNotFoundError:
            return CommandResult(127, "", f"{args[0]}: command not found")
        return CommandResult(done.returncode, done.stdout, done.stderr)

    def http_get(self, url: str, headers: Mapping[str, str], timeout: float = 30) -> HttpResponse:
        request = urllib.request.Request(url, headers=dict(headers), method="GET")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return HttpResponse(response.status, response.read().decode())
        except urllib.error.HTTPError as err:
            return HttpResponse(err.code, err.read().decode(errors="replace"))
        except (urllib.error.URLError, TimeoutError) as err:
            return HttpResponse(0, f"request failed: {err}")


class Redactor:
    """Replaces every registered secret (and each long token inside it), and any JWT, with ***."""

    MASK = "***"

    def __init__(self) -> None:
        self._secrets: set[str] = set()

    def add(self, secret: str) -> None:
        if not secret:
            return
        self._secrets.add(secret)
        # Certificates and tokens inside a kubeconfig may surface alone in an error message.
        self._secrets.update(re.findall(r"[A-Za-z0-9+/=_.-]{24,}", secret))

    def __call__(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, self.MASK)
        # Any bearer token (a JWT), even one never registered: kubelogin's own, or one echoed back.
        return JWT.sub(self.MASK, text)


class CommandError(RuntimeError):
    """A kubectl or az call that failed; the message carries its stderr (redacted when printed)."""


@dataclass
class Context:
    """What every check reads: the stack outputs, the tools and the kubeconfig file."""

    outputs: Mapping[str, Any]
    tools: Tools
    kubeconfig_path: str
    redact: Redactor
    run_suffix: str
    _token: str | None = None

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        result = self.tools.run(["kubectl", "--kubeconfig", self.kubeconfig_path, *args], stdin=stdin)
        if result.returncode != 0:
            raise CommandError(
                f"kubectl {' '.join(args[:2])} exited {result.returncode}: {result.stderr.strip()[-400:]}"
            )
        return result.stdout

    def kubectl_json(self, *args: str) -> dict[str, Any]:
        text = self.kubectl(*args, "-o", "json")
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise CommandError(f"kubectl {' '.join(args[:2])} printed no JSON ({err.msg})") from None

    def prometheus_token(self) -> str:
        if self._token is None:
            result = self.tools.run(
                ["az", "account", "get-access-token", "--resource", PROMETHEUS_RESOURCE, "--output", "json"]
            )
            if result.returncode != 0:
                raise CommandError(
                    f"az account get-access-token exited {result.returncode}: {result.stderr.strip()[-400:]}"
                )
            try:
                token = str(json.loads(result.stdout)["accessToken"])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise CommandError("az account get-access-token printed no accessToken") from None
            self.redact.add(token)
            self._token = token
        return self._token


def selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def check_smoke_job(ctx: Context) -> Outcome:
    jobs = ctx.kubectl_json("get", "jobs", "--all-namespaces", "-l", selector(SMOKE_JOB_LABELS)).get("items") or []
    if not jobs:
        return pending(f"no Job labelled {selector(SMOKE_JOB_LABELS)} yet")
    states: list[str] = []
    for job in jobs:
        meta, status = job.get("metadata") or {}, job.get("status") or {}
        name = f"{meta.get('namespace')}/{meta.get('name')}"
        if int(status.get("succeeded") or 0) >= 1:
            return passed(f"Job {name} succeeded ({status.get('succeeded')} pod(s) completed)")
        failure = _condition(job, "Failed")
        if failure is not None:
            return failed(
                f"Job {name} failed: {failure.get('reason', 'unknown')}: {failure.get('message', '')}".rstrip(": ")
                + f" (failed pods: {status.get('failed', 0)})"
            )
        states.append(f"{name} active={status.get('active', 0)} failed={status.get('failed', 0)}")
    return pending("no smoke Job has succeeded yet: " + "; ".join(states))


def _gpu_count(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def check_gpu_allocatable(ctx: Context) -> Outcome:
    nodes = ctx.kubectl_json("get", "nodes", "-l", selector(gpu_node_selector())).get("items") or []
    if not nodes:
        return pending(f"no node labelled {selector(gpu_node_selector())} yet")
    counts: list[str] = []
    for node in nodes:
        meta = node.get("metadata") or {}
        gpus = _gpu_count(((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, 0))
        pool = (meta.get("labels") or {}).get(GPU_POOL_NAME_LABEL_KEY, "?")
        if gpus >= 1:
            return passed(f"node {meta.get('name')} (pool {pool}) has {gpus} allocatable {GPU_RESOURCE}")
        counts.append(f"{meta.get('name')} (pool {pool}): 0")
    return pending(f"0 allocatable {GPU_RESOURCE} on GPU nodes: " + ", ".join(counts))


def check_dcgm_metrics(ctx: Context) -> Outcome:
    endpoint = str(ctx.outputs.get("prometheusQueryEndpoint") or "")
    if not endpoint.startswith("https://"):
        return failed(f"stack output prometheusQueryEndpoint is {endpoint!r}, not an https URL")
    url = f"{endpoint.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': DCGM_METRIC})}"
    headers = {"Authorization": f"Bearer {ctx.prometheus_token()}", "Accept": "application/json"}
    response = ctx.tools.http_get(url, headers)
    if response.status != 200:
        hint = " (the identity needs Monitoring Data Reader on the workspace)" if response.status == 403 else ""
        return pending(f"query returned HTTP {response.status}{hint}: {response.body[:200]}")
    try:
        body = json.loads(response.body)
    except json.JSONDecodeError:
        return pending("query answered with something other than JSON")
    if body.get("status") != "success":
        return pending(f"query status {body.get('status')!r}: {body.get('error', '')}")
    series = (body.get("data") or {}).get("result") or []
    if not series:
        return pending(f"{DCGM_METRIC} has no series in the workspace yet")
    hosts = sorted(
        {str((s.get("metric") or {}).get("Hostname") or (s.get("metric") or {}).get("instance")) for s in series}
    )
    return passed(f"{DCGM_METRIC}: {len(series)} series from {', '.join(hosts)}")


def lustre_pod_manifest(name: str, namespace: str, claim: str) -> dict[str, Any]:
    """A restricted one-shot pod on the CPU pool (the Lustre CSI node plugin runs on every pool)."""
    probe = f"{LUSTRE_MOUNT}/.{name}"
    script = (
        f'set -eu; printf %s "{name}" > "{probe}"; got="$(cat "{probe}")"; rm -f "{probe}"; '
        f'test "$got" = "{name}"; echo "wrote and read back {probe}"'
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "e2e-lustre-check"}},
        "spec": {
            "nodeSelector": cpu_node_selector(),
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "activeDeadlineSeconds": 600,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": NOBODY,
                "runAsGroup": NOBODY,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "write-read",
                    "image": LUSTRE_CHECK_IMAGE,
                    "command": ["sh", "-c", script],
                    "volumeMounts": [{"name": "lustre", "mountPath": LUSTRE_MOUNT}],
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "16Mi"},
                        "limits": {"cpu": "100m", "memory": "64Mi"},
                    },
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "runAsNonRoot": True,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                }
            ],
            "volumes": [{"name": "lustre", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


class LustreMountCheck:
    """Creates the write/read pod once, polls its phase, deletes it at the end."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.namespace = str(ctx.outputs.get("lustreNamespace") or "")
        self.claim = str(ctx.outputs.get("lustrePvcName") or "")
        self.name = f"e2e-lustre-check-{ctx.run_suffix}"
        self.created = False

    def setup(self) -> Outcome | None:
        if not self.namespace or not self.claim:
            return failed("the stack exports no lustreNamespace/lustrePvcName: is storage.lustre.enabled true?")
        self.ctx.kubectl(
            "create", "-f", "-", stdin=json.dumps(lustre_pod_manifest(self.name, self.namespace, self.claim))
        )
        self.created = True
        return None

    def probe(self) -> Outcome:
        pod = self.ctx.kubectl_json("get", "pod", self.name, "-n", self.namespace)
        phase = (pod.get("status") or {}).get("phase", "Unknown")
        where = f"pod {self.namespace}/{self.name}"
        if phase == "Succeeded":
            return passed(f"{where} mounted claim {self.claim}, wrote and read back a file")
        if phase == "Failed":
            return failed(f"{where} failed: {self._why(pod)}; log: {self._log()}")
        return pending(f"{where} is {phase}: {self._why(pod)}")

    def _why(self, pod: Mapping[str, Any]) -> str:
        status = pod.get("status") or {}
        for container in status.get("containerStatuses") or []:
            state = container.get("state") or {}
            for kind in ("waiting", "terminated"):
                if kind in state:
                    detail = state[kind]
                    return f"{kind} {detail.get('reason', '')} {detail.get('message', '')}".strip()
        scheduled = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if scheduled and scheduled.get("status") != "True":
            return f"unschedulable: {scheduled.get('message', '')}"
        return str(status.get("reason") or "no container state yet")

    def _log(self) -> str:
        try:
            return " | ".join(self.ctx.kubectl("logs", self.name, "-n", self.namespace, "--tail", "20").splitlines())
        except CommandError as err:
            return f"(no log: {err})"

    def cleanup(self) -> None:
        if self.created:
            self.ctx.kubectl("delete", "pod", self.name, "-n", self.namespace, "--ignore-not-found", "--wait=false")


@dataclass
class Check:
    name: str
    probe: Callable[[], Outcome]
    timeout_s: float
    interval_s: float = 15
    setup: Callable[[], Outcome | None] | None = None
    cleanup: Callable[[], None] | None = None


@dataclass
class Clock:
    """Injectable time, so tests run retries without waiting."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def run_check(check: Check, out: Callable[[str], None], redact: Redactor, clock: Clock) -> bool:
    """Probe until pass, fail or the deadline; print progress and one PASS/FAIL line."""
    started = clock.now()
    deadline = started + check.timeout_s
    outcome = pending("not run")
    try:
        if check.setup is not None:
            early = check.setup()
            if early is not None:
                outcome = early
        while outcome.status == "pending":
            try:
                outcome = check.probe()
            except CommandError as err:  # a flaky API call is retried like any other not-yet
                outcome = pending(str(err))
            if outcome.status != "pending":
                break
            if clock.now() + check.interval_s > deadline:
                outcome = failed(f"still not ready after {check.timeout_s:.0f}s: {outcome.message}")
                break
            out(redact(f"wait {check.name}: {outcome.message}"))
            clock.sleep(check.interval_s)
    except CommandError as err:
        outcome = failed(str(err))
    except Exception as err:  # an unexpected reply fails this check alone, printed redacted (a traceback is not)
        outcome = failed(f"{type(err).__name__}: {err}")
    finally:
        if check.cleanup is not None:
            try:
                check.cleanup()
            except CommandError as err:
                out(redact(f"warn {check.name}: cleanup failed: {err}"))
    elapsed = clock.now() - started
    out(redact(f"{'PASS' if outcome.status == 'pass' else 'FAIL'} {check.name}: {outcome.message} [{elapsed:.0f}s]"))
    return outcome.status == "pass"


TIMEOUTS = {"gpu-smoke-job": 1200.0, "gpu-allocatable": 600.0, "dcgm-metrics": 900.0, "lustre-mount": 600.0}


def build_checks(ctx: Context, timeouts: Mapping[str, float] = TIMEOUTS) -> list[Check]:
    lustre = LustreMountCheck(ctx)
    return [
        Check("gpu-smoke-job", lambda: check_smoke_job(ctx), timeouts["gpu-smoke-job"]),
        Check("gpu-allocatable", lambda: check_gpu_allocatable(ctx), timeouts["gpu-allocatable"]),
        Check("dcgm-metrics", lambda: check_dcgm_metrics(ctx), timeouts["dcgm-metrics"], interval_s=30),
        Check("lustre-mount", lustre.probe, timeouts["lustre-mount"], setup=lustre.setup, cleanup=lustre.cleanup),
    ]


def run_all(
    outputs: Mapping[str, Any],
    tools: Tools,
    out: Callable[[str], None] = print,
    clock: Clock | None = None,
    only: Sequence[str] = (),
    timeouts: Mapping[str, float] = TIMEOUTS,
    run_suffix: str | None = None,
) -> int:
    """Run every check (or those named in `only`); 0 if all pass, 1 otherwise."""
    kubeconfig = outputs.get("kubeconfig")
    if not isinstance(kubeconfig, str) or not kubeconfig.strip():
        out("FAIL outputs: no kubeconfig output (run `pulumi stack output --json --show-secrets`)")
        return 2
    redact = Redactor()
    redact.add(kubeconfig)
    clock = clock or Clock()
    fd, path = tempfile.mkstemp(prefix="e2e-kubeconfig-")  # mode 0600, removed below
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(kubeconfig)
        ctx = Context(outputs, tools, path, redact, run_suffix or str(int(time.time())))
        checks = [c for c in build_checks(ctx, timeouts) if not only or c.name in only]
        results = [run_check(check, out, redact, clock) for check in checks]
    finally:
        os.unlink(path)
    failures = results.count(False)
    out(f"{len(results) - failures} passed, {failures} failed")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outputs", type=Path, required=True, help="`pulumi stack output --json --show-secrets` file")
    parser.add_argument("--check", action="append", choices=sorted(TIMEOUTS), default=[], help="run only these")
    parser.add_argument("--run-suffix", default=None, help="names the check pod (default: the time)")
    options = parser.parse_args(argv)
    try:
        outputs = json.loads(options.outputs.read_text())
    except (OSError, json.JSONDecodeError) as err:
        print(f"error: cannot read stack outputs from {options.outputs}: {err}", file=sys.stderr)
        return 2
    if not isinstance(outputs, dict):
        print(f"error: {options.outputs} holds no JSON object of stack outputs", file=sys.stderr)
        return 2
    return run_all(outputs, SystemTools(), only=options.check, run_suffix=options.run_suffix)


if __name__ == "__main__":
    sys.exit(main())
