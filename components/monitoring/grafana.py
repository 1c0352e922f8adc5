"""The platform's dashboards, created in Managed Grafana by `pulumi up` (no manual import), and who sees which.

Grafana's own objects (folders, dashboards, teams, folder permissions) live in Grafana's data plane, not in ARM,
so they go through the `pulumiverse-grafana` provider (2.44.0, bridging grafana/terraform-provider-grafana
v4.44.0). It authenticates with a Microsoft Entra ID access token of whoever runs the program, for Managed
Grafana's data-plane audience `https://dashboard.azure.com` (learn.microsoft.com/azure/managed-grafana/
how-to-authenticate-data-plane-api, read 2026-12-02): azure-native's `getClientToken` asks for `<endpoint>/.default`
(pulumi/pulumi-azure-native provider/pkg/provider/provider.go, `tokenRequestOpts`), and the Grafana provider sends a
token without `:` as `Authorization: Bearer` (terraform-provider-grafana pkg/provider/configure_clients.go,
`parseAuth`). No Grafana service account or API key is created, but the token itself is stored: a provider's
inputs are kept in the stack's state (encrypted, as a secret), and `pulumi refresh` and `pulumi destroy` reuse
them unless run with `--run-program` (Pulumi docs, "Running your program on refresh and destroy"). The token
lives 60-90 minutes, so every refresh or destroy of a stack must re-run the program (docs/deploying.md;
tests/upstream/credential_lifetime.py checks every workflow and documented command), and an expired token fails at its
first request instead of being retried (RETRY_STATUS_CODES).

Who sees what: team members hold Grafana Viewer on the instance (components/training/team_tenancy.py).
The platform folder
(every team's data, the fleet of GPUs) is open to Grafana Editors and Admins only; each team gets a folder with
its own dashboard, open to a Grafana team synced from its Entra ID groups (Managed Grafana's team sync,
learn.microsoft.com/azure/managed-grafana/how-to-sync-teams-with-azure-ad-groups). Grafana OSS has no data-source
permissions: a Viewer can still query every series of the Prometheus data source through the API (docs/security.md;
the plan warns when more than one team signs in).
The deploying identity gets Grafana Admin on the instance: creating teams and setting folder permissions is an
organisation administrator's right in Grafana.
"""

import base64
import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumiverse_grafana as grafana
import pulumiverse_grafana.oss as grafana_oss

from ..shared import roles

# Shipped in the wheel as package data of the components (pyproject.toml).
DASHBOARDS_DIR = Path(__file__).resolve().parent / "dashboards"
GRAFANA_AUDIENCE = "https://dashboard.azure.com"
FOLDER_UID = "aks-gpu-platform"
TEAM_TEMPLATE = "gpu-teams"
GRAFANA_TEAM_PREFIX = "gpu-platform-"
"""A team's Grafana team is this prefix and the team's name."""
"""The dashboard each team gets a copy of, with `$team` fixed to the team."""
# Grafana limits dashboard and folder uids to 40 characters (pkg/util/shortid_generator.go, MaxUIDLength).
MAX_UID_LENGTH = 40
# 403 (the deployer's new grant still propagating), 429 and 5xx are retried; 401 is not: it is what an expired
# token gets (the provider keeps the token it was configured with), and retrying it only delays the failure.
# grafana/grafana-openapi-client-go pkg/transport/transport.go at 5b95bb18 (the client terraform-provider-grafana
# v4.44.0 pins): a response whose status matches none of these codes ends the request at once.
RETRY_STATUS_CODES = ["403", "429", "5xx"]
RETRIES = 10
RETRY_WAIT_SECONDS = 30
# Azure documents "up to 10 minutes" before a new role assignment takes effect (components/shared/roles.py).
# The wait runs
# once, when the grant is created, alongside the cluster's creation; the writes then need no 401 retries.
ADMIN_PROPAGATION_SECONDS = 600


def dashboard_files(names: Sequence[str]) -> list[Path]:
    """The dashboard JSON files under components/monitoring/dashboards/, by file stem."""
    return [DASHBOARDS_DIR / f"{name}.json" for name in names]


def principal_type_of_token(token: str | None) -> authorization.PrincipalType | None:
    """Whether an Entra ID access token was issued to a user or to an application (service principal, managed or
    workload identity): a role assignment must say which, and ARM takes `User` when it is left out (the
    RoleAssignment REST spec, Microsoft.Authorization stable/2022-04-01, `principalType` default), so a service
    principal's assignment without it fails with UnmatchedPrincipalType.

    Microsoft identity platform, "Access token claims reference": `idtyp` is `app` for app-only tokens (`user`
    when a user is present) where the resource emits it, and `scp` (delegated scopes) is only included for user
    tokens. Entra ID always issues a JWT; a token that is none comes from a test's own mocks, and is left to ARM's
    default.
    """
    parts = (token or "").split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload))
    kind = claims.get("idtyp")
    is_user = kind == "user" if kind in ("app", "user") else "scp" in claims
    return authorization.PrincipalType.USER if is_user else authorization.PrincipalType.SERVICE_PRINCIPAL


def team_uid(kind: str, team: str) -> str:
    """`<kind>-<team>`, shortened with a hash past Grafana's limit (folders and dashboards share one uid space)."""
    uid = f"{kind}-{team}"
    if len(uid) <= MAX_UID_LENGTH:
        return uid
    keep = MAX_UID_LENGTH - len(kind) - 10
    return f"{kind}-{team[:keep]}-{hashlib.sha256(team.encode()).hexdigest()[:8]}"


def team_dashboard_uid(team: str) -> str:
    return team_uid("gpu-team", team)


def team_dashboard_title(team: str) -> str:
    """The title of the team's own dashboard, in its folder "Team <team>"."""
    board = json.loads(dashboard_files([TEAM_TEMPLATE])[0].read_text())
    return f"{board['title']}: {team}"


def team_dashboard(board: dict[str, Any], team: str) -> dict[str, Any]:
    """The teams dashboard fixed to one team: `$team` becomes a hidden constant; its own uid and title."""
    fixed = copy.deepcopy(board)
    fixed["uid"] = team_dashboard_uid(team)
    fixed["title"] = f"{board['title']}: {team}"
    variables = fixed["templating"]["list"]
    (index,) = [i for i, v in enumerate(variables) if v["name"] == "team"]
    variables[index] = {"name": "team", "label": "Team", "type": "constant", "query": team, "hide": 2}
    return fixed


def with_constants(board: dict[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """The dashboard with its hidden constants (`idle_threshold`, `idle_window`...) set to `values`, so its panels
    read the thresholds the stack alerts and charges on; a constant not in `values` keeps the file's default."""
    fixed = copy.deepcopy(board)
    for variable in fixed.get("templating", {}).get("list", []):
        if variable.get("type") == "constant" and variable["name"] in values:
            value = values[variable["name"]]
            variable["query"] = value
            variable["current"] = {"text": value, "value": value}
    return fixed


class TeamDashboardArgs(TypedDict):
    """A training team that gets its own Grafana folder and dashboard."""

    name: str
    """The team's name (its ClusterQueue and the `team` label of the chargeback series)."""
    member_groups: Sequence[str]
    """Entra ID group object IDs whose members see the team's folder (lower case, as tokens carry them)."""


class GrafanaDashboardsArgs(TypedDict):
    grafana_id: pulumi.Input[str]
    """ARM ID of the Managed Grafana instance (scope of the deployer's Grafana Admin role)."""
    grafana_endpoint: pulumi.Input[str]
    """`https://<name>-<hash>.<region>.grafana.azure.com` of the instance."""
    dashboards: Sequence[str]
    """Stems of the monitoring/dashboards/ JSON files to create in the platform folder (Editors and Admins only)."""
    teams: NotRequired[Sequence[TeamDashboardArgs]]
    """Teams that get a folder with their own copy of the teams dashboard."""
    constants: NotRequired[Mapping[str, str]]
    """Values of the dashboards' hidden constants (see `with_constants`)."""


# Editors (the deployer) keep Edit on every folder; the Viewer role, which every team member holds, gets nothing.
_EDITORS: grafana_oss.FolderPermissionPermissionArgsDict = {"role": "Editor", "permission": "Edit"}


class GrafanaDashboards(pulumi.ComponentResource):
    """The platform's folder and one folder per team in Managed Grafana, in step with monitoring/dashboards/."""

    dashboard_uids: list[str]
    """UIDs of the dashboards created (their URLs are `<endpoint>/d/<uid>`)."""

    def __init__(self, name: str, args: GrafanaDashboardsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GrafanaDashboards", name, None, opts)
        self._in_grafana = self._as_grafana_admin(name, args)
        self.dashboard_uids = []
        constants = args.get("constants", {})
        self._folder = self._platform_folder(name, args["dashboards"], constants)
        template = with_constants(json.loads(dashboard_files([TEAM_TEMPLATE])[0].read_text()), constants)
        for team in args.get("teams", []):
            self._team_folder(name, team, template)
        self.register_outputs({"dashboard_uids": self.dashboard_uids})

    def _as_grafana_admin(self, name: str, args: GrafanaDashboardsArgs) -> pulumi.ResourceOptions:
        """The deployer's Grafana Admin grant, and the provider that writes to Grafana with the deployer's token:
        the options of every Grafana object."""
        deployer = authorization.get_client_config_output()
        token = authorization.get_client_token_output(endpoint=GRAFANA_AUDIENCE).token
        propagation = roles.propagation_wait(f"{name}-deployer-admin", ADMIN_PROPAGATION_SECONDS)
        assert propagation is not None  # a positive wait always makes a hook
        admin = authorization.RoleAssignment(
            f"{name}-deployer-admin",
            principal_id=deployer.object_id,
            principal_type=pulumi.Output.unsecret(token.apply(principal_type_of_token)),
            role_definition_id=roles.role_definition_id(roles.GRAFANA_ADMIN),
            scope=args["grafana_id"],
            opts=pulumi.ResourceOptions(
                parent=self,
                hooks=pulumi.ResourceHookBinding(after_create=[propagation]),
            ),
        )
        provider = grafana.Provider(
            f"{name}-provider",
            url=args["grafana_endpoint"],
            auth=pulumi.Output.secret(token),
            retries=RETRIES,
            retry_status_codes=RETRY_STATUS_CODES,
            retry_wait=RETRY_WAIT_SECONDS,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[admin])

    def _platform_folder(
        self, name: str, dashboards: Sequence[str], constants: Mapping[str, str]
    ) -> grafana_oss.Folder:
        """The platform folder, for Editors and Admins only, with the platform's dashboards."""
        in_grafana = self._in_grafana
        folder = grafana_oss.Folder(f"{name}-folder", title="AKS GPU platform", uid=FOLDER_UID, opts=in_grafana)
        grafana_oss.FolderPermission(
            f"{name}-folder-permissions", folder_uid=folder.uid, permissions=[_EDITORS], opts=in_grafana
        )
        for path in dashboard_files(dashboards):
            self._dashboard(f"{name}-{path.stem}", with_constants(json.loads(path.read_text()), constants), folder)
        return folder

    def _team_folder(self, name: str, team: TeamDashboardArgs, template: dict[str, Any]) -> None:
        """The team's folder, open to a Grafana team synced from its groups, with its copy of `template`."""
        in_grafana, prefix = self._in_grafana, f"{name}-team-{team['name']}"
        team_folder = grafana_oss.Folder(
            f"{prefix}-folder",
            title=f"Team {team['name']}",
            uid=team_uid("gpu-team-folder", team["name"]),
            opts=in_grafana,
        )
        permissions: list[grafana_oss.FolderPermissionPermissionArgsDict] = [_EDITORS]
        if team["member_groups"]:
            members = grafana_oss.Team(
                f"{prefix}-members",
                name=f"{GRAFANA_TEAM_PREFIX}{team['name']}",
                # Kept in step with the Entra ID groups by Managed Grafana's team sync at each sign-in.
                team_sync={"groups": list(team["member_groups"])},
                opts=in_grafana,
            )
            permissions.append({"team_id": members.team_id.apply(str), "permission": "View"})
        grafana_oss.FolderPermission(
            f"{prefix}-folder-permissions", folder_uid=team_folder.uid, permissions=permissions, opts=in_grafana
        )
        self._dashboard(f"{prefix}-dashboard", team_dashboard(template, team["name"]), team_folder)

    def _dashboard(self, resource: str, board: dict[str, Any], folder: grafana_oss.Folder) -> None:
        grafana_oss.Dashboard(
            resource,
            config_json=json.dumps(board, sort_keys=True),
            folder=folder.uid,
            # A dashboard imported by hand before (same uid) is taken over instead of failing the update.
            overwrite=True,
            opts=self._in_grafana,
        )
        self.dashboard_uids.append(board["uid"])

    def add(self, resource: str, board: dict[str, Any]) -> None:
        """Another dashboard in the platform folder, built by the concern that owns its series."""
        self._dashboard(resource, board, self._folder)
