"""What a team member needs from the platform, published in the team's own namespace: the ConfigMap
`platform-info`, which the team Role may get (`kubectl get configmap platform-info -o yaml`) and nothing else of
the platform's stack.

It holds the team's queue and pools, the models it may call (the gateway's base URL per model), the Grafana
address and the title of the team's own dashboard, and its data: the claims already in the namespace and the
classes it may claim, each with how to mount it. Outputs (the Grafana address, the data account) go in as Outputs,
so the ConfigMap is written once they are known.
"""

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.training.section import TrainingConfig

from ..shared.context import ClusterHandle
from .team_storage import AZUREFILE_TEAM_CLASS, team_directory

PLATFORM_INFO = "platform-info"


def _lines(entries: Mapping[str, str]) -> str:
    """`key: "value"` lines, sorted: a small YAML mapping a person reads and a script parses (values quoted: they
    hold colons)."""
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in sorted(entries.items()))


def platform_info_data(
    team: str,
    queue: Mapping[str, Any],
    data: Mapping[str, str] | None,
    endpoints: Mapping[str, Mapping[str, str]],
    grafana: str | None,
    dashboard: str | None,
) -> dict[str, str]:
    """The ConfigMap's `data` for one team: `queue` is its `trainingTeams` entry, `data` its `teamData` entry
    (None without Blob data), `endpoints` the platform's `modelEndpoints`."""
    claims: dict[str, str] = {}
    lustre_claim = queue.get("lustrePvcName")
    if lustre_claim:
        claims[str(lustre_claim)] = (
            f"Lustre, ReadWriteMany, your team's directory {team_directory(team)} (owned by uid {queue['uid']}); "
            f"volumes: [{{name: lustre, persistentVolumeClaim: {{claimName: {lustre_claim}}}}}]"
        )
    if data:
        claims[data["claim"]] = (
            f"Blob container {data['container']} of account {data['account']}, ReadWriteMany; "
            f"volumes: [{{name: data, persistentVolumeClaim: {{claimName: {data['claim']}}}}}] and "
            f"serviceAccountName: {data['serviceAccount']} on the pod (the driver mounts with its token)"
        )
    info = {
        "namespace": str(queue["namespace"]),
        "localQueue": str(queue["localQueue"]),
        "gpuPools": ", ".join(queue["gpuPools"]),
        "uid": str(queue["uid"]),
        "gid": str(queue["gid"]),
        "models": _lines({model: urls[team] for model, urls in endpoints.items() if team in urls}),
        "claims": _lines(claims),
        "storageClasses": _lines(
            {
                AZUREFILE_TEAM_CLASS: "Azure Files, a share per claim, ReadWriteMany; create a claim with "
                f"storageClassName: {AZUREFILE_TEAM_CLASS} and mount it like any claim "
                "(examples/team-jobset/copy-data-dev.yaml)"
            }
        ),
    }
    if grafana:
        info["grafana"] = grafana
    if dashboard:
        info["grafanaDashboard"] = dashboard
    return info


class TeamPlatformInfoArgs(TypedDict):
    """What `team_platform_info` publishes."""

    settings: TrainingConfig
    """The validated `training` section: the teams."""
    namespaces: Mapping[str, pulumi.Input[str]]
    """Team name -> namespace name."""
    teams: pulumi.Input[Mapping[str, Any]]
    """The platform's `trainingTeams` output."""
    team_data: pulumi.Input[Mapping[str, Mapping[str, str]]]
    """The platform's `teamData` output (empty without Blob data)."""
    endpoints: Mapping[str, Mapping[str, str]]
    """The platform's `modelEndpoints`: model -> team -> base URL."""
    cluster: ClusterHandle
    grafana_endpoint: NotRequired[pulumi.Input[str]]
    """Managed Grafana's address (none on a cluster without Grafana)."""
    dashboard_titles: NotRequired[Mapping[str, str]]
    """Team name -> the title of the team's own dashboard in its folder."""


def team_platform_info(name: str, args: TeamPlatformInfoArgs, opts: pulumi.ResourceOptions) -> None:
    """One ConfigMap `platform-info` per team namespace, created with `opts` (the platform's child options)."""
    handle = args["cluster"]
    in_cluster = pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(provider=handle.provider, deleted_with=handle.cluster)
    )
    titles = args.get("dashboard_titles", {})
    for team in args["settings"].teams:
        data = pulumi.Output.all(
            queues=args["teams"], data=args["team_data"], grafana=args.get("grafana_endpoint")
        ).apply(
            lambda v, t=team.name: platform_info_data(
                t, v["queues"][t], v["data"].get(t), args["endpoints"], v["grafana"], titles.get(t)
            )
        )
        k8s.core.v1.ConfigMap(
            f"{name}-{team.name}",
            metadata={"name": PLATFORM_INFO, "namespace": args["namespaces"][team.name]},
            data=data,
            opts=in_cluster,
        )
