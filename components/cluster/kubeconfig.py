"""Make the AKS user kubeconfig non-interactive (kubelogin exec) for Pulumi and CI."""

from __future__ import annotations

import base64
from typing import Any, Literal

import yaml

# Entra ID application that AKS uses as the audience of every cluster token.
AKS_SERVER_APP_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"

LoginMode = Literal["azurecli", "workloadidentity", "spn"]


def kubelogin_args(login: LoginMode) -> list[str]:
    """kubelogin arguments per login mode; identities come from the environment, never the file."""
    args = ["get-token", "--login", login, "--server-id", AKS_SERVER_APP_ID]
    if login == "spn":
        # kubelogin reads AAD_SERVICE_PRINCIPAL_CLIENT_ID/SECRET and AZURE_TENANT_ID from the environment.
        args += ["--environment", "AzurePublicCloud"]
    return args


def non_interactive_kubeconfig(encoded: str, login: LoginMode) -> str:
    """Decode the base64 kubeconfig Azure returns and point every user at kubelogin `login`."""
    document: dict[str, Any] = yaml.safe_load(base64.b64decode(encoded).decode())
    for user in document.get("users", []):
        user["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "kubelogin",
                "args": kubelogin_args(login),
                "env": None,
                "provideClusterInfo": False,
                "interactiveMode": "Never",
            }
        }
    return yaml.safe_dump(document, sort_keys=False)
