"""The platform's dashboards, created in Managed Grafana by `pulumi up` (no manual import).

Grafana's own objects (folder, dashboards) live in Grafana's data plane, not in ARM, so they go through the
`pulumiverse-grafana` provider (grafana/terraform-provider-grafana bridged). It authenticates with a
Microsoft Entra ID access token of whoever runs `pulumi up`, for Managed Grafana's data-plane audience
`https://dashboard.azure.com` (learn.microsoft.com/azure/managed-grafana/how-to-authenticate-data-plane-api,
read 2026-12-02): azure-native's `getClientToken` asks for `<endpoint>/.default` (pulumi/pulumi-azure-native
provider/pkg/provider/provider.go, `tokenRequestOpts`), and the Grafana provider sends a token without `:` as
`Authorization: Bearer` (terraform-provider-grafana pkg/provider/configure_clients.go, `parseAuth`). No service
account, API key or secret is created or stored: the token is fetched fresh on every run.
The deploying identity gets Grafana Editor on the instance so the first `pulumi up` can write.
"""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import pulumi
import pulumi_azure_native.authorization as authorization
import pulumiverse_grafana as grafana
import pulumiverse_grafana.oss as grafana_oss

from . import roles

# Shipped in the wheel as package data of the components (pyproject.toml).
DASHBOARDS_DIR = Path(__file__).resolve().parent / "dashboards"
GRAFANA_AUDIENCE = "https://dashboard.azure.com"
FOLDER_UID = "aks-gpu-platform"
# A new Grafana role assignment is honoured only after it has propagated; until then the API answers 401/403.
# Retrying those (besides the provider's default 429 and 5xx) for up to ~10 minutes covers Azure's documented
# "up to 10 minutes" (components/roles.py) on top of the propagation wait.
RETRY_STATUS_CODES = ["401", "403", "429", "5xx"]
RETRIES = 20
RETRY_WAIT_SECONDS = 30
EDITOR_PROPAGATION_SECONDS = 120


def dashboard_files(names: Sequence[str]) -> list[Path]:
    """The dashboard JSON files under components/dashboards/, by file stem."""
    return [DASHBOARDS_DIR / f"{name}.json" for name in names]


class GrafanaDashboardsArgs(TypedDict):
    grafana_id: pulumi.Input[str]
    """ARM ID of the Managed Grafana instance (scope of the deployer's Grafana Editor role)."""
    grafana_endpoint: pulumi.Input[str]
    """`https://<name>-<hash>.<region>.grafana.azure.com` of the instance."""
    dashboards: Sequence[str]
    """Stems of the components/dashboards/ JSON files to create."""


class GrafanaDashboards(pulumi.ComponentResource):
    """A folder of the platform's dashboards in Managed Grafana, kept in step with components/dashboards/*.json."""

    dashboard_uids: list[str]
    """UIDs of the dashboards created (their URLs are `<endpoint>/d/<uid>`)."""

    def __init__(self, name: str, args: GrafanaDashboardsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GrafanaDashboards", name, None, opts)
        deployer = authorization.get_client_config_output()
        propagation = roles.propagation_wait(f"{name}-deployer-editor", EDITOR_PROPAGATION_SECONDS)
        assert propagation is not None  # a positive wait always makes a hook
        # No principalType: the deployer may be a user or a service principal, and it exists long before this
        # run, so the directory lookup principalType saves is not needed.
        editor = authorization.RoleAssignment(
            f"{name}-deployer-editor",
            principal_id=deployer.object_id,
            role_definition_id=roles.role_definition_id(roles.GRAFANA_EDITOR),
            scope=args["grafana_id"],
            opts=pulumi.ResourceOptions(
                parent=self,
                hooks=pulumi.ResourceHookBinding(after_create=[propagation]),
            ),
        )
        token = authorization.get_client_token_output(endpoint=GRAFANA_AUDIENCE).token
        provider = grafana.Provider(
            f"{name}-provider",
            url=args["grafana_endpoint"],
            auth=pulumi.Output.secret(token),
            retries=RETRIES,
            retry_status_codes=RETRY_STATUS_CODES,
            retry_wait=RETRY_WAIT_SECONDS,
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_grafana = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[editor])
        folder = grafana_oss.Folder(f"{name}-folder", title="AKS GPU platform", uid=FOLDER_UID, opts=in_grafana)
        self.dashboard_uids = []
        for path in dashboard_files(args["dashboards"]):
            board = json.loads(path.read_text())
            grafana_oss.Dashboard(
                f"{name}-{path.stem}",
                config_json=json.dumps(board, sort_keys=True),
                folder=folder.uid,
                # A dashboard imported by hand before (same uid) is taken over instead of failing the update.
                overwrite=True,
                opts=in_grafana,
            )
            self.dashboard_uids.append(board["uid"])
        self.register_outputs({"dashboard_uids": self.dashboard_uids})
