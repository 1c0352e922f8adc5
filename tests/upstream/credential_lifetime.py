"""The contract "credential lifetime": no short-lived credential sits in provider state unless every path that
reuses that state re-runs the program.

Why: a provider's inputs are stored in the stack's state, and `pulumi refresh`, `pulumi destroy` and the refresh
step of `pulumi up --refresh` / `pulumi preview --refresh` reuse them as stored unless told `--run-program`
(Pulumi docs, "Running your program on refresh and destroy",
https://www.pulumi.com/docs/iac/operations/stack-management/run-program/, read 2026-12; the flag is in the CLI the
workflows pin, 3.272.0). A token the program fetched for `pulumi up` has expired by then.

What holds a short-lived credential, read from a recording (each source with its lifetime):
- an input of a `pulumi:providers:*` resource whose value is what `azure-native:authorization:getClientToken`
  returned: a Microsoft Entra ID access token, valid 60-90 minutes (learn.microsoft.com/entra/identity-platform/
  access-tokens, "Token lifetime", read 2026-12);
- a `token` written into a kubeconfig a provider is given (AKS's user credentials with Entra ID carry an exec
  entry for kubelogin instead, which fetches a token at each use).

Where state is reused, read from the repository: every command line in `run:` steps of .github/workflows, a
`pulumi/actions` step with `command: refresh|destroy` or `refresh: true`, the fenced blocks and inline code of
README.md, docs/*.md and examples/*/README.md, tools/*.py and the Makefile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_platform.testing import Recording

PROVIDER_PREFIX = "pulumi:providers:"
SHORT_LIVED_SOURCES = {"getClientToken": "Entra ID access token, 60-90 minutes"}
"""Invoke function -> the credential it returns and how long it lives."""
COMMAND = re.compile(r"\bpulumi\s+(?P<verb>refresh|destroy|up|preview)\b(?P<args>[^`;&|\n]*)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`([^`]+)`")  # a span may wrap onto the next line


@dataclass(frozen=True)
class StoredCredential:
    provider: str
    """URN of the provider whose inputs hold it."""
    path: str
    """Where in the inputs."""
    lifetime: str


@dataclass(frozen=True)
class ReusePath:
    where: str
    """File (and step or line) the command is in."""
    command: str


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            yield from _leaves(item, f"{path}.{key}" if path else str(key))  # pyright: ignore[reportUnknownArgumentType]
    elif isinstance(value, list):
        for i, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType]
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def _kubeconfig_tokens(text: str) -> list[str]:
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    if not isinstance(config, dict):
        return []
    users: list[dict[str, Any]] = config.get("users") or []  # pyright: ignore[reportUnknownMemberType]
    return [u.get("name", "?") for u in users if (u.get("user") or {}).get("token")]


def stored_credentials(recording: Recording) -> list[StoredCredential]:
    """Short-lived credentials the recorded program puts into providers' inputs (that is, into state)."""
    found: list[StoredCredential] = []
    for provider in recording.resources:
        if not provider.type.startswith(PROVIDER_PREFIX):
            continue
        for path, value in _leaves(provider.inputs):
            if not isinstance(value, str):
                continue
            origin = recording.mock_values.get(value, "")
            function = origin.split(".", 1)[0]
            if function in SHORT_LIVED_SOURCES:
                found.append(StoredCredential(provider.urn, path, SHORT_LIVED_SOURCES[function]))
            if path.endswith("kubeconfig"):
                for user in _kubeconfig_tokens(value):
                    found.append(StoredCredential(provider.urn, f"{path} user {user}", "an Entra ID token"))
    return found


def _commands(text: str, where: str) -> Iterator[ReusePath]:
    joined = re.sub(r"\\\n\s*", " ", text)  # shell line continuations
    for match in COMMAND.finditer(joined):
        yield ReusePath(where, match.group(0).strip())


def workflow_reuse_paths(text: str, where: str) -> list[ReusePath]:
    """Every Pulumi command a workflow runs, and every pulumi/actions step that refreshes or destroys."""
    workflow: dict[str, Any] = yaml.safe_load(text)
    paths: list[ReusePath] = []
    for job_name, job in (workflow.get("jobs") or {}).items():
        for i, step in enumerate(job.get("steps") or []):
            at = f"{where} job {job_name} step {step.get('name') or step.get('uses') or i}"
            if "run" in step:
                paths += _commands(str(step["run"]), at)
            uses = str(step.get("uses", ""))
            given = step.get("with") or {}
            if uses.startswith("pulumi/actions") and (
                given.get("command") in ("refresh", "destroy") or given.get("refresh") in (True, "true")
            ):
                paths.append(ReusePath(at, f"pulumi/actions with {dict(given)}"))
    return paths


def markdown_reuse_paths(text: str, where: str) -> list[ReusePath]:
    """Commands in fenced code blocks and inline code: what a reader copies."""
    paths: list[ReusePath] = []
    for block in FENCE.findall(text):
        paths += _commands(block, f"{where} (code block)")
    prose = FENCE.sub("", text)
    for span in INLINE_CODE.findall(prose):
        paths += _commands(span, where)
    return paths


def reuse_paths(root: Path) -> list[ReusePath]:
    """Every place in the repository that runs or tells someone to run a Pulumi command."""
    paths: list[ReusePath] = []
    for workflow in sorted((root / ".github" / "workflows").glob("*.yml")):
        paths += workflow_reuse_paths(workflow.read_text(), str(workflow.relative_to(root)))
    documents = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted(root.glob("examples/*/README.md"))]
    for document in documents:
        paths += markdown_reuse_paths(document.read_text(), str(document.relative_to(root)))
    for script in [*sorted((root / "tools").glob("*.py")), root / "Makefile"]:
        paths += _commands(script.read_text(), str(script.relative_to(root)))
    return paths


def _flag(args: list[str], *names: str) -> bool:
    """Is a boolean flag on (`--x`, `--x=true`; `-r` style short names too)?"""
    for arg in args:
        name, _, value = arg.partition("=")
        if name in names and value.lower() not in ("false", "0"):
            return True
    return False


def reuses_state_without_the_program(path: ReusePath) -> bool:
    """Does this command reuse stored provider inputs instead of running the program first?"""
    if path.command.startswith("pulumi/actions"):
        return True  # the action has no way to pass --run-program: use a `run:` step
    match = COMMAND.match(path.command)
    assert match is not None
    args = match.group("args").split()
    reuses = match.group("verb") in ("refresh", "destroy") or _flag(args, "--refresh", "-r")
    return reuses and not _flag(args, "--run-program")


def contract_problems(recording: Recording, paths: list[ReusePath]) -> list[str]:
    """The contract: with a short-lived credential in state, every reuse path re-runs the program."""
    stored = stored_credentials(recording)
    if not stored:
        return []
    held = "; ".join(f"{c.provider} {c.path} ({c.lifetime})" for c in stored)
    return [
        f"{p.where}: `{p.command}` reuses provider state without --run-program, which holds {held}"
        for p in paths
        if reuses_state_without_the_program(p)
    ]


# --- How the Grafana provider answers an expired token ----------------------------------------------------------
# terraform-provider-grafana v4.44.0 (what pulumiverse-grafana 2.44.0 bridges) pkg/provider/framework_provider.go:
# `retries` defaults to 3, `retry_wait` to 0 s, `retry_status_codes` to ["429", "5xx"]; configure_clients.go passes
# them to grafana/grafana-openapi-client-go (5b95bb18) pkg/transport/transport.go, whose RoundTrip sends a request
# up to 1 + retries times, sleeping `retry_wait` seconds (2^n s when 0) before each retry, while the status matches
# a code (`x` a digit wildcard), and returns the last response.
PROVIDER_DEFAULTS = {"retries": 3, "retryWait": 0, "retryStatusCodes": ["429", "5xx"]}


def _matches(status: int, code: str) -> bool:
    return len(code) == 3 and all(c in ("x", s) for c, s in zip(code, str(status), strict=True))


def grafana_request(inputs: Mapping[str, Any], status: int) -> tuple[int, float]:
    """(attempts, seconds spent waiting) before a request the server keeps answering `status` fails."""

    def setting(key: str) -> Any:
        value = inputs.get(key, PROVIDER_DEFAULTS[key])
        return yaml.safe_load(value) if isinstance(value, str) else value  # provider inputs arrive as JSON text

    retries, wait, codes = int(setting("retries")), float(setting("retryWait")), list(setting("retryStatusCodes"))
    attempts, waited = 1, 0.0
    while attempts <= retries and any(_matches(status, str(code)) for code in codes):
        waited += wait if wait > 0 else 2.0**attempts
        attempts += 1
    return attempts, waited
