"""What the command-line tools the team pages name accept, and what each command asks the API server.

kubectl 1.36: the commands kubernetes/kubectl v0.36.3 (commit 8f8760b5, pkg/cmd/cmd.go NewKubectlCommand, and
pkg/cmd/auth/auth.go) registers. Kueue's plugin, `kubectl kueue` (kueuectl v0.19.2, kubernetes-sigs/kueue commit
c3785e52, cmd/kueuectl/app): create/stop/resume/list with their subcommands and aliases, and the pass-through
get/delete/edit/describe/patch of Kueue's four kinds (passthrough.go).

The requests follow what each command sends: `get`/`describe` read the named object or list the kind, and
describe also lists the namespace's events (pkg/describe); `logs` reads the pod and its `log` subresource, and
lists pods for a selector; `delete` deletes, then waits on the object (--wait, default true); `apply` reads each
object and creates it when absent, patching an existing one only when the file changed it (pkg/cmd/apply
patcher.go: an empty patch is not sent), so applying the same file again sends reads only; `get --raw PATH` is
one GET of that path; kueuectl `list workload` lists workloads, reads their LocalQueues and, for pending ones,
the cluster-scoped ClusterQueue pending-workloads summary of the visibility API (list_workload.go
pendingWorkloads); `auth can-i` is a self access review any
authenticated user may create (the `system:basic-user` ClusterRole).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.upstream.rbac import Request

KUBECTL_VERSION = "1.36"
KUBECTL_COMMANDS = frozenset(
    [
        "proxy",
        "get",
        "debug",
        "create",
        "expose",
        "run",
        "set",
        "explain",
        "edit",
        "delete",
        "rollout",
        "scale",
        "autoscale",
        "certificate",
        "cluster-info",
        "top",
        "cordon",
        "uncordon",
        "drain",
        "taint",
        "describe",
        "logs",
        "attach",
        "exec",
        "port-forward",
        "cp",
        "auth",
        "events",
        "diff",
        "apply",
        "patch",
        "replace",
        "wait",
        "kustomize",
        "label",
        "annotate",
        "completion",
        "alpha",
        "config",
        "plugin",
        "version",
        "api-versions",
        "api-resources",
        "options",
        "kuberc",
    ]
)
KUBECTL_AUTH = frozenset({"can-i", "reconcile", "whoami"})

KUEUECTL_VERSION = "v0.19.2"
_WORKLOAD = ("workload", "kwl", "kueueworkload", "kueueworkloads")
_QUEUES = {"clusterqueue": ("cq",), "localqueue": ("lq",)}
_PASS_THROUGH = {"workload": _WORKLOAD[1:], **_QUEUES, "resourceflavor": ("rf",)}
KUEUECTL_COMMANDS: dict[str, dict[str, tuple[str, ...]]] = {
    "create": {**_QUEUES, "resourceflavor": ("rf",)},
    "stop": {"workload": _WORKLOAD[1:], **_QUEUES},
    "resume": {"workload": _WORKLOAD[1:], **_QUEUES},
    "list": {"workload": _WORKLOAD[1:], **_QUEUES, "resourceflavor": ("rf",), "pods": ("po",)},
    **{verb: _PASS_THROUGH for verb in ("get", "delete", "edit", "describe", "patch")},
    "version": {},
}

# name a command may use -> (API group, resource, namespaced); the kinds the team pages name.
RESOURCES: dict[str, tuple[str, str, bool]] = {}
for names, target in (
    (("pods", "pod", "po"), ("", "pods", True)),
    (("events", "event", "ev"), ("", "events", True)),
    (("configmaps", "configmap", "cm"), ("", "configmaps", True)),
    (("persistentvolumeclaims", "persistentvolumeclaim", "pvc"), ("", "persistentvolumeclaims", True)),
    (("jobsets", "jobset", "jobsets.jobset.x-k8s.io"), ("jobset.x-k8s.io", "jobsets", True)),
    (("jobs", "job"), ("batch", "jobs", True)),
    (("workloads", "workload", *_WORKLOAD[1:]), ("kueue.x-k8s.io", "workloads", True)),
    (("localqueues", "localqueue", "lq"), ("kueue.x-k8s.io", "localqueues", True)),
    (("clusterqueues", "clusterqueue", "cq"), ("kueue.x-k8s.io", "clusterqueues", False)),
    (("resourceflavors", "resourceflavor", "rf"), ("kueue.x-k8s.io", "resourceflavors", False)),
    (("provisioningrequests", "provisioningrequest"), ("autoscaling.x-k8s.io", "provisioningrequests", True)),
    (("nodes", "node", "no"), ("", "nodes", False)),
):
    for name in names:
        RESOURCES[name] = target
KINDS = {"PersistentVolumeClaim": "persistentvolumeclaims", "JobSet": "jobsets", "Job": "jobs", "Pod": "pods"}

_VALUE_FLAGS = {"-n", "--namespace", "-l", "--selector", "-f", "--filename", "-o", "--output", "--tail", "--status"}
_VALUE_FLAGS |= {"--localqueue", "--clusterqueue", "--for", "--field-selector", "-c", "--container", "--since"}


@dataclass(frozen=True)
class Parsed:
    words: list[str]
    namespace: str | None
    flags: dict[str, str]
    selector: str | None


def parse(command: str) -> Parsed:
    words, flags, positional = shlex.split(command.split(" #", 1)[0]), {}, []
    i = 1
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            name, _, value = word.partition("=")
            if not value and name in _VALUE_FLAGS and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            flags[name] = value
        else:
            positional.append(word)
        i += 1
    namespace = flags.get("-n") or flags.get("--namespace")
    return Parsed(positional, namespace, flags, flags.get("-l") or flags.get("--selector"))


def unknown_command(command: str) -> str | None:
    """Why the CLI version we name has no such command; None when it has."""
    parsed = parse(command)
    words = parsed.words
    if not words or words[0] not in KUBECTL_COMMANDS | {"kueue"}:
        return f"kubectl {KUBECTL_VERSION} has no command {words[:1]}"
    if words[0] == "auth" and (len(words) < 2 or words[1] not in KUBECTL_AUTH):
        return f"kubectl auth has no subcommand {words[1:2]}"
    if words[0] == "kueue":
        verb = words[1] if len(words) > 1 else ""
        if verb not in KUEUECTL_COMMANDS:
            return f"kueuectl {KUEUECTL_VERSION} has no command {verb!r}"
        subcommands = KUEUECTL_COMMANDS[verb]
        if subcommands:
            names = {n for name, aliases in subcommands.items() for n in (name, *aliases)}
            if len(words) < 3 or words[2] not in names:
                return f"kueuectl {KUEUECTL_VERSION} `{verb}` has no subcommand {words[2:3]}: {sorted(subcommands)}"
    return None


def _resource(name: str) -> tuple[str, str, bool]:
    if name not in RESOURCES:
        raise KeyError(f"resource {name!r} is not modelled: add it to tests/upstream/cli.py RESOURCES")
    return RESOURCES[name]


def _on(name: str, namespace: str | None, *verbs: str, subresource: str = "", named: str = "") -> list[Request]:
    group, resource, namespaced = _resource(name)
    return [Request(v, group, resource, namespace if namespaced else None, subresource, named) for v in verbs]


def _raw(path: str) -> Request:
    match = re.fullmatch(r"/apis/([^/]+)/[^/]+(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?(?:/([^/]+))?", path)
    if not match:
        raise ValueError(f"get --raw {path}: not an API path")
    group, namespace, resource, name, subresource = match.groups()
    return Request("get", group, resource, namespace, subresource or "", name or "")


def requests(command: str, *folders: Path) -> list[Request]:
    """The API requests `kubectl ...` sends, with files named by `-f` looked up in `folders` in order; raises on a
    command the model does not know."""
    parsed = parse(command)
    words, ns = parsed.words, parsed.namespace
    verb = words[0]
    if verb == "auth":
        return []  # can-i / whoami: self reviews any authenticated user may create
    if verb == "get" and "--raw" in parsed.flags:
        return [_raw(parsed.flags["--raw"] or words[1])]
    if verb in ("get", "describe"):
        found: list[Request] = []
        for name in words[1].split(","):
            # `get <kind> <name>` is a GET of that object (a rule's resourceNames may allow it); no name lists.
            found += _on(name, ns, "get", named=words[2]) if len(words) > 2 else _on(name, ns, "list")
            if "-w" in parsed.flags or "--watch" in parsed.flags:
                found += _on(name, ns, "watch")
        return found + (_on("events", ns, "list") if verb == "describe" else [])
    if verb == "logs":
        pods = _on("pods", ns, "list") if parsed.selector else _on("pods", ns, "get")
        return pods + _on("pods", ns, "get", subresource="log")
    if verb == "delete":
        return _on(words[1], ns, "delete", "get")
    if verb == "apply":
        found = []
        (path,) = [f / parsed.flags["-f"] for f in folders if (f / parsed.flags["-f"]).is_file()][:1]
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                kind = KINDS[document["kind"]]
                found += _on(kind, document["metadata"].get("namespace", ns), "get", "create")
        return found
    if verb == "kueue" and words[1:3] and words[1] == "list":
        name = words[2]
        if RESOURCES.get(name, ("", "", True))[1] == "workloads":
            return [
                *_on("workloads", ns, "list"),
                *_on("localqueues", ns, "get"),
                # pending workloads: their ClusterQueue's summary, cluster-scoped
                Request("get", "visibility.kueue.x-k8s.io", "clusterqueues", None, "pendingworkloads"),
            ]
        return _on(name, ns, "list")
    if verb == "kueue" and words[1] in ("stop", "resume"):
        return _on(words[2], ns, "patch")
    raise ValueError(f"`kubectl {command}`: the model does not know what this command requests")
