"""`aks-gpu-platform`: the package's console command.

    aks-gpu-platform plan [--stack dev] [--format markdown] [--project-dir DIR]
    aks-gpu-platform plan-diff [--stack dev] [--base REF] [--project-dir DIR]
    aks-gpu-platform check [--stack dev] [--project-dir DIR] MANIFEST.yaml...
    aks-gpu-platform schema [--write stack-config.schema.json]
    aks-gpu-platform constraints [--write constraints.txt]

Each subcommand takes the options of the function that runs it (`--help` lists them). The project is
the folder of the nearest `Pulumi.yaml` at or above the working directory, as for the Pulumi CLI.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from importlib import import_module
from importlib.util import find_spec

# subcommand: (module of this package, its function that takes the remaining arguments, what it does).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "plan": ("report", "main", "evaluate a stack offline: verdicts, quota, cost, cold start, what would be created"),
    "plan-diff": (
        "diff_command",
        "main",
        "what the working tree changes against a git ref: creates, updates, replaces, deletes",
    ),
    "check": (
        "check",
        "main",
        "will the stack's cluster take these Jobs, JobSets, Pods, Deployments: admission, quota, nodes",
    ),
    "schema": ("shipped", "schema_main", "the stack file's JSON Schema, for your editor's $schema reference"),
    "constraints": ("shipped", "constraints_main", "the exact versions this release was tested with (pip -c)"),
}


# The plan checks every rendered object against the upstream Kubernetes schemas: the `plan` extra's
# kubernetes-validate. Without it the plan would stop with a traceback after evaluating the whole stack.
NEEDS_SCHEMAS = ("plan", "plan-diff")
# `check` evaluates the stack's admission policies' CEL: the `plan` extra's cel-python.
NEEDS_CEL = ("check",)
PLAN_INSTALL = 'pip install "aks-gpu-platform[plan] @ <where you installed aks-gpu-platform from>"'


def missing_schemas(command: str) -> str | None:
    """Why `command` cannot run in this environment, or None when it can."""
    if command in NEEDS_SCHEMAS and find_spec("kubernetes_validate") is None:
        return (
            f"aks-gpu-platform {command}: the plan checks rendered objects against the Kubernetes schemas, "
            f"which the `plan` extra installs (kubernetes-validate): {PLAN_INSTALL}\n"
        )
    if command in NEEDS_CEL and find_spec("celpy") is None:
        return (
            f"aks-gpu-platform {command}: the check evaluates the stack's admission policies (CEL), which the `plan` "
            f"extra installs (cel-python): {PLAN_INSTALL}\n"
        )
    return None


def usage() -> str:
    lines = ["usage: aks-gpu-platform COMMAND [options]", "", "commands:"]
    lines += [f"  {name:12s} {what}" for name, (_, _, what) in COMMANDS.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0 if args else 2
    if args[0] not in COMMANDS:
        sys.stderr.write(f"aks-gpu-platform: unknown command {args[0]!r}\n\n{usage()}")
        return 2
    if (why := missing_schemas(args[0])) is not None:
        sys.stderr.write(why)
        return 2
    module, function, _ = COMMANDS[args[0]]
    run: Callable[[list[str]], int] = getattr(import_module(f"aks_gpu_platform.plan.{module}"), function)
    status = run(args[1:])
    ending_process()
    return status


def ending_process() -> None:
    """Before a command's process exits: spare the interpreter's collections at exit the walk over the heap an
    evaluation leaves (every SDK module and recorded resource: 0.8 s of a 3 s `make plan`). Only for a process about
    to end: frozen objects are never collected."""
    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
