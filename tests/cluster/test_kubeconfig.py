"""The exported kubeconfig never waits for an interactive login."""

from __future__ import annotations

import base64

import pytest
import yaml

from aks_gpu_platform.components.cluster.kubeconfig import AKS_SERVER_APP_ID, non_interactive_kubeconfig

AZURE_STYLE = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://x:443"}}],
    "users": [
        {
            "name": "clusterUser_rg_c",
            "user": {"exec": {"command": "kubelogin", "args": ["get-token", "--login", "devicecode"]}},
        }
    ],
}


@pytest.mark.parametrize("login", ["azurecli", "workloadidentity", "spn"])
def test_every_user_is_rewritten_to_the_chosen_login(login: str) -> None:
    encoded = base64.b64encode(yaml.safe_dump(AZURE_STYLE).encode()).decode()
    result = yaml.safe_load(non_interactive_kubeconfig(encoded, login))  # type: ignore[arg-type]
    exec_ = result["users"][0]["user"]["exec"]
    assert exec_["args"][exec_["args"].index("--login") + 1] == login
    assert exec_["args"][exec_["args"].index("--server-id") + 1] == AKS_SERVER_APP_ID
    assert exec_["interactiveMode"] == "Never"
    assert result["clusters"] == AZURE_STYLE["clusters"], "the server and CA stay as Azure returned them"
