"""What an add-on is to the platform: the software it installs into the cluster (a Helm chart, an operator, checks),
described once next to the component that installs it (`components/<concern>/addons.py`) and listed in
`components/addons.py`.

From the descriptors the platform derives what used to be kept by hand in several places: the namespaces GPU
remediation leaves alone and those the pod security policy leaves to their own Pod Security level, the Grafana
dashboards, the charts pulling rate-limited images that `make plan` names, and the tables of docs/charts.md
(`make docs`). The component itself pins its chart and image (its constants, next to their sources); the descriptor
reads them from there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from aks_gpu_platform.config.platform import PlatformConfig

from .workloads import PodSecurityLevel

DEFAULT_RELEASE_TIMEOUT_SECONDS = 300
"""What Pulumi gives Helm when a release sets no `timeout` (pulumi/pulumi-kubernetes provider/pkg/provider/
helm_release.go, `defaultTimeoutSeconds`)."""


@dataclass(frozen=True)
class Readiness:
    """What Helm waits for when it installs the chart at our values (docs/charts.md, "Every release can finish";
    modelled per chart in tests/upstream/release_contract.py)."""

    longest_wait: str
    """The longest operation Helm waits on, and why (e.g. "115 s: readiness delay 45 s")."""
    registries: str = ""
    """The registries its pods pull from, when none limits anonymous pulls (e.g. "nvcr.io")."""
    runtime_class: str = "none"
    """The `runtimeClassName` its pods ask for, and where that RuntimeClass comes from."""
    timeout_seconds: int = DEFAULT_RELEASE_TIMEOUT_SECONDS
    """The release's `timeout`: the component's own where the longest wait needs more than the default."""
    timeout_basis: str = ""
    """Where a timeout other than the default comes from (the component's constant, upstream's install command)."""
    docker_hub_images: tuple[str, ...] = ()
    """Images the chart pulls anonymously from Docker Hub at our values; `make plan` names each one."""


@dataclass(frozen=True)
class Chart:
    """A Helm chart at its pinned version, and where the pin and the facts about it come from."""

    reference: str
    """What a release names as its chart: the chart's name in an `https://` repository, the whole `oci://` address
    of an OCI chart."""
    version: str
    source: str
    """Where the pin comes from: the upstream tag, its date, why this version (docs/charts.md, "source of the pin")."""
    templates_read: str
    """The chart's files read at the pinned tag (docs/charts.md, "templates read")."""
    readiness: Readiness
    repository: str | None = None
    """The `https://` chart repository (its index) a chart named by its name comes from; None for an OCI chart."""

    @property
    def name(self) -> str:
        return self.reference.rsplit("/", 1)[-1]


class Board(NamedTuple):
    """One Grafana dashboard of the platform folder."""

    role: str
    """Its resource name under the platform (`<platform name>-<role>`)."""
    json: dict[str, Any]
    """The dashboard (uid, title, panels); its hidden constants get the stack's thresholds when it is created."""


@dataclass(frozen=True)
class Dashboard:
    """A dashboard an add-on brings: a file shipped in components/monitoring/dashboards/, or one per configured
    object (a served model's)."""

    name: str
    """What it is, for docs/charts.md."""
    boards: Callable[[PlatformConfig], Sequence[Board]]
    """The boards a stack gets: none where its config leaves the dashboard out."""


@dataclass(frozen=True)
class AddOn:
    """Software the platform installs into the cluster, and what the platform must know about it."""

    name: str
    summary: str
    """What it is and does, in a few words."""
    namespace: str
    """The namespace its pods run in (the default of the setting where the stack chooses it)."""
    pod_security: PodSecurityLevel | None
    """The Pod Security level the stack creates its namespace with (`enforce`); None for a namespace AKS owns.
    The pod security policy leaves every add-on's namespace to that level."""
    charts: tuple[Chart, ...] = ()
    dashboards: tuple[Dashboard, ...] = ()
    undrained: bool = False
    """GPU remediation's drain (NVSentinel's `systemNamespaces`) leaves its pods alone: controllers, node agents and
    checks are what replaces and checks a failing node. Workloads (model servers) are drained like a team's jobs."""
    active: Callable[[PlatformConfig], bool] | None = None
    """Whether a stack counts the add-on (its namespace, its dashboards); None: every stack does, installed or not
    (a namespace listed where nothing runs changes nothing)."""
    configured_namespace: Callable[[PlatformConfig], str] | None = None
    """Where the stack config chooses the namespace: the configured one."""

    def in_stack(self, cfg: PlatformConfig) -> bool:
        return self.active is None or self.active(cfg)

    def namespace_in(self, cfg: PlatformConfig) -> str:
        return self.configured_namespace(cfg) if self.configured_namespace is not None else self.namespace

    def chart(self, name: str | None = None) -> Chart:
        """The add-on's chart: its only one, or the one named `name`."""
        found = [c for c in self.charts if name is None or c.name == name]
        if len(found) != 1:
            raise LookupError(f"add-on {self.name}: {len(found)} charts {'named ' + name if name else ''}")
        return found[0]
