"""Who sees what in the shared Managed Grafana: each team its own folder, the platform's folder only Grafana Editors
and Admins, and nobody's container logs through Grafana unless the platform opts in.

A small model of Grafana's folder permissions, as the recorded objects set them:
- the organisation role comes from the Azure assignment (Grafana Admin/Editor/Viewer -> Admin/Editor/Viewer;
  learn.microsoft.com/azure/managed-grafana/how-to-manage-access-permissions-users-identities); no assignment, no
  sign-in;
- a folder permission item for a basic role applies to that role and the roles above it (grafana/grafana
  pkg/services/org/model.go `RoleType.Children`: Admin includes Editor and Viewer, Editor includes Viewer), an
  organisation Admin sees every folder, a team item applies to the team's members;
- a team's members are the users whose token carries one of its synced Entra ID groups (Managed Grafana team sync,
  learn.microsoft.com/azure/managed-grafana/how-to-sync-teams-with-azure-ad-groups);
- `grafana_folder_permission` replaces the folder's whole list (terraform-provider-grafana v4.44.0
  internal/resources/grafana/resource_folder_permission.go: "Items that are omitted from the list will be
  removed"), so Grafana's default Viewer/Editor items are gone;
- data sources: any user with an organisation role may query every data source through Grafana's API. Data source
  permissions are Grafana Enterprise's only (grafana.com/docs/grafana/latest, HTTP API "Data source permissions":
  "only available in Grafana Enterprise"), served by the RBAC API (`/api/access-control/datasources/:uid`), which
  Managed Grafana disables (learn.microsoft.com/azure/managed-grafana/known-limitations: "doesn't currently support
  the Grafana Role Based Access Control (RBAC) feature ... the RBAC API is therefore disabled"). The Prometheus data
  source of each integrated Azure Monitor workspace returns every series the workspace holds.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.components.monitoring import grafana as gd
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.plan.mock_values import MockValueMarker
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.plan.report import build_report
from aks_gpu_platform.plan.verdicts import shared_metrics_warnings
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.harness.contract_stacks import contract_recording
from tests.training.test_team_access import FLEET_MEMBERS, raw_teams, two_team_config
from tests.upstream.rbac import azure_allows
from tools import REPO_ROOT

ASSIGNMENT = "azure-native:authorization:RoleAssignment"
DASHBOARD = "grafana:oss/dashboard:Dashboard"
GRAFANA = "azure-native:dashboard:Grafana"
LOGS = "azure-native:operationalinsights:Workspace"
ROLE_ORDER = ("Viewer", "Editor", "Admin")
ACT_AS = "Microsoft.Dashboard/grafana/ActAsGrafana{}/action"
LOG_QUERY = "Microsoft.OperationalInsights/workspaces/query/ContainerLogV2/read"


@dataclass
class GrafanaWorld:
    """One Grafana instance as the recording sets it up, and the stack's teams."""

    recording: Recording
    grafana_id: str
    teams: dict[str, tuple[str, set[str]]]

    def org_role(self, groups: set[str]) -> str | None:
        assignments = [r.inputs for r in self.recording.of_type(ASSIGNMENT)]
        held = [role for role in ROLE_ORDER if azure_allows(assignments, groups, self.grafana_id, ACT_AS.format(role))]
        return held[-1] if held else None

    def teams_of(self, groups: set[str]) -> set[str]:
        """Grafana teams whose synced groups the user's token carries."""
        found: set[str] = set()
        for team in self.recording.of_type("grafana:oss/team:Team"):
            if groups & set(team.inputs.get("teamSync", {}).get("groups", [])):
                found.add(str(team.outputs["teamId"]))
        return found

    def visible_dashboards(self, groups: set[str]) -> set[str]:
        role = self.org_role(groups)
        if role is None:
            return set()
        roles = set(ROLE_ORDER[: ROLE_ORDER.index(role) + 1])
        teams = self.teams_of(groups)
        permissions = {
            p.inputs["folderUid"]: p.inputs["permissions"]
            for p in self.recording.of_type("grafana:oss/folderPermission:FolderPermission")
        }
        visible: set[str] = set()
        for board in self.recording.of_type(DASHBOARD):
            items = permissions.get(board.inputs["folder"])
            assert items is not None, "every folder's permissions are set, or Grafana's defaults let Viewers in"
            if role == "Admin" or any(i.get("role") in roles or str(i.get("teamId")) in teams for i in items):
                visible.add(json.loads(board.inputs["configJson"])["uid"])
        return visible

    def queryable_teams(self, groups: set[str]) -> set[str]:
        """Teams whose series the user reads through the data sources: every team whose namespace sends to an
        integrated workspace (one per cluster, every namespace's series), when the user has any role."""
        grafana = next(g for g in self.recording.of_type(GRAFANA) if g.outputs["id"] == self.grafana_id)
        integrated = grafana.inputs["properties"]["grafanaIntegrations"]["azureMonitorWorkspaceIntegrations"]
        return set(self.teams) if self.org_role(groups) and integrated else set()


def _world(recording: Recording, teams: dict[str, tuple[str, set[str]]]) -> GrafanaWorld:
    return GrafanaWorld(recording, recording.one(GRAFANA).outputs["id"], teams)


@pytest.fixture(scope="module")
def worlds() -> dict[str, GrafanaWorld]:
    from tests.fleet.test_fleet import member_recording

    found = {
        "dev": _world(contract_recording("dev"), raw_teams(load_stack_file("dev", REPO_ROOT))),
        "prod": _world(contract_recording("prod"), raw_teams(load_stack_file("prod", REPO_ROOT))),
        "two-teams": _world(run_stack("dev", two_team_config()), raw_teams(two_team_config())),
    }
    fleet = contract_recording("fleet")
    fleet_teams = raw_teams(load_stack_file("fleet", REPO_ROOT))
    for platform in fleet.of_type("aks-gpu-platform:index:AksGpuPlatform"):
        member = next(m for m in FLEET_MEMBERS if platform.name.endswith(f"-{m}"))
        found[member] = _world(member_recording(fleet, platform.urn), fleet_teams)
    return found


@pytest.mark.parametrize("stack", ["dev", "prod", "two-teams", *FLEET_MEMBERS])
def test_a_team_member_sees_its_own_team_dashboard_and_no_other(worlds: dict[str, GrafanaWorld], stack: str) -> None:
    world = worlds[stack]
    for team, (_, groups) in world.teams.items():
        assert world.org_role(groups) == "Viewer", f"{team}: members sign in to Grafana as Viewers"
        assert world.visible_dashboards(groups) == {gd.team_dashboard_uid(team)}, (
            f"{team}: a member sees the team's own dashboard, not the platform's (every team's GPUs and "
            "chargeback) nor another team's"
        )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_platform_admins_see_every_dashboard(worlds: dict[str, GrafanaWorld], stack: str) -> None:
    world = worlds[stack]
    admins = world.recording.one("azure-native:containerservice:ManagedCluster").inputs["aadProfile"]
    everything = {json.loads(d.inputs["configJson"])["uid"] for d in world.recording.of_type(DASHBOARD)}
    for group in admins["adminGroupObjectIDs"]:
        assert world.visible_dashboards({group}) == everything


@pytest.mark.parametrize("stack", ["dev", "prod", "two-teams", *FLEET_MEMBERS])
def test_the_plan_warns_when_a_team_member_can_query_another_team_s_series(
    worlds: dict[str, GrafanaWorld], stack: str
) -> None:
    """Folders hide dashboards, not series: with Managed Grafana's one data source open to every Viewer, a second
    team reads the first's. The platform cannot close that inside one Grafana, so the plan says so."""
    world = worlds[stack]
    exposed = {team for team, (_, groups) in world.teams.items() if world.queryable_teams(groups) - {team}}
    warnings = shared_metrics_warnings(world.recording)
    if exposed:
        (warning,) = warnings
        assert all(f"{team}" in warning for team in world.teams) and "docs/security.md" in warning, warning
    else:
        assert warnings == [], f"{stack}: one team shares its series with nobody"
    assert bool(exposed) == (len(world.teams) > 1), f"{stack}: the model has every team's series in one workspace"


def test_the_shared_series_warning_is_in_the_plan_of_two_teams_and_not_of_one(tmp_path: Path) -> None:
    for config, teams in ((two_team_config(), 2), (load_stack_file("dev", REPO_ROOT), 1)):
        recording = run_stack("dev", config)
        cfg = load_platform_config(settings_of(config))
        report = build_report("dev", cfg, recording, [], [], MockValueMarker(recording.mock_values), tmp_path)
        shared = [w for w in report.warnings if w.startswith("Grafana: the members of teams")]
        assert len(shared) == (teams > 1), f"{teams} team(s): {report.warnings}"


def test_each_team_dashboard_is_the_teams_dashboard_fixed_to_that_team() -> None:
    board = json.loads(gd.dashboard_files([gd.TEAM_TEMPLATE])[0].read_text())
    fixed = gd.team_dashboard(board, "ml")
    (team,) = [v for v in fixed["templating"]["list"] if v["name"] == "team"]
    assert team["type"] == "constant" and team["query"] == "ml" and team["hide"] == 2, (
        "the team's folder shows its own data only: $team is a hidden constant"
    )
    assert fixed["panels"] == board["panels"], "the same panels as the platform's teams dashboard"
    assert len(gd.team_uid("gpu-team-folder", "a" * 63)) <= gd.MAX_UID_LENGTH, "Grafana refuses longer uids"


def _grafana_principal(recording: Recording) -> str:
    return recording.one(GRAFANA).outputs["identity"]["principalId"]


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet"])
def test_grafana_cannot_read_container_logs_by_default(stack: str) -> None:
    """Grafana queries Log Analytics as itself: any Viewer would read every namespace's logs through it."""
    recording = contract_recording(stack)
    assignments = [r.inputs for r in recording.of_type(ASSIGNMENT)]
    for grafana in recording.of_type(GRAFANA):
        principal = grafana.outputs["identity"]["principalId"]
        for workspace in recording.of_type(LOGS):
            assert not azure_allows(assignments, {principal}, workspace.outputs["id"], LOG_QUERY), (
                f"{grafana.name} can query {workspace.name}: every team would read every team's container logs"
            )


def test_container_logs_in_grafana_are_an_explicit_choice(stack_config: Any) -> None:
    config = stack_config("dev")
    config["aks-gpu-platform:monitoring"].setdefault("grafana", {})["containerLogs"] = True
    recording = run_stack("dev", config)
    assignments = [r.inputs for r in recording.of_type(ASSIGNMENT)]
    workspace = recording.one(LOGS).outputs["id"]
    assert azure_allows(assignments, {_grafana_principal(recording)}, workspace, LOG_QUERY), (
        "containerLogs: true lets Grafana (and so every Grafana user) query the logs"
    )


def _token(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.signature"


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"oid": "o", "scp": "user_impersonation"}, "User"),  # az login as a person
        ({"oid": "o", "idtyp": "user", "scp": "user_impersonation"}, "User"),
        ({"oid": "o", "appid": "a", "roles": []}, "ServicePrincipal"),  # client credentials, no idtyp emitted
        ({"oid": "o", "appid": "a", "idtyp": "app"}, "ServicePrincipal"),  # GitHub OIDC, managed identity
    ],
)
def test_the_deployers_principal_type_is_read_from_its_token(claims: dict[str, Any], expected: str) -> None:
    assert gd.principal_type_of_token(_token(claims)) == expected


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet"])
def test_the_deployers_grafana_grant_names_a_service_principal_for_a_ci_deploy(stack: str) -> None:
    """Without principalType ARM assumes User (RoleAssignment REST spec, stable/2022-04-01, its default) and refuses
    a service principal's assignment with UnmatchedPrincipalType: every CI deploy would fail. The mocks' token is
    the app-only token a CI deploy gets."""
    from aks_gpu_platform.testing.mocks import _guid  # pyright: ignore[reportPrivateUsage]

    recording = contract_recording(stack)
    deployer = _guid("deployer/object")  # the object ID the mocked getClientConfig answers
    grants = [
        r
        for r in recording.of_type(ASSIGNMENT)
        if r.inputs["principalId"] == deployer and r.inputs["roleDefinitionId"].endswith(gd.roles.GRAFANA_ADMIN)
    ]
    assert grants, "the deploying identity is granted Grafana Admin to write dashboards, folders and teams"
    for grant in grants:
        assert grant.inputs.get("principalType") == "ServicePrincipal", grant.name
