"""The program the manager's rotation CronJob runs: a short-lived token per member, written to Kueue's Secret.

Kueue v0.19.2 accepts only a static bearer token in a MultiKueueCluster's kubeconfig Secret (`validateKubeconfig`
in pkg/controller/admissionchecks/multikueue/multikueuecluster.go refuses exec plugins and token files), but it
watches those Secrets and reconnects when one changes. So the token can be short-lived as long as something
replaces it before it expires, without a person and without Pulumi: this program, every few minutes.

It runs in the Azure CLI image with python3's standard library only, under Azure Workload Identity (the webhook
mounts the pod's federated token at AZURE_FEDERATED_TOKEN_FILE and sets AZURE_CLIENT_ID, AZURE_TENANT_ID,
AZURE_AUTHORITY_HOST). For each member in MEMBERS (JSON: name, server, certificate authority, Secret):
1. exchange the federated token for an Entra token for the AKS API server application (the same application ID
   on every AKS cluster with AKS-managed Entra ID; what kubelogin asks for);
2. ask the member's API server for a TokenRequest of MULTIKUEUE_ACCOUNT with TOKEN_SECONDS of life (the member
   lets this identity create tokens for that one service account and do nothing else);
3. patch the member's Secret on the manager (in SECRET_NAMESPACE) with a kubeconfig Kueue accepts.
A token lives only in this process and that Secret: never in a log, Pulumi's state or its outputs. A member that
fails is reported and the others still get their tokens; the exit status is then 1, so the CronJob shows it.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

# The server application AKS-managed Entra ID clusters accept tokens for (kubelogin's --server-id default).
AKS_SERVER_APPLICATION = "6dae42f8-4368-4678-94ff-3960e28e3630"
IN_CLUSTER_API = "https://kubernetes.default.svc"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def token_request(seconds: int) -> dict[str, Any]:
    """An authentication.k8s.io/v1 TokenRequest for the API server's own audience, `seconds` long."""
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}


def member_kubeconfig(name: str, server: str, ca_data: str, user: str, token: str) -> str:
    """A kubeconfig `validateKubeconfig` accepts: embedded CA, https server, a bearer token and nothing else. JSON
    (a kubeconfig is YAML, of which JSON is a subset): the image's python3 has no YAML library."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
            "current-context": name,
        }
    )


def kubeconfig_patch(kubeconfig: str) -> dict[str, Any]:
    """The merge patch that replaces only the Secret's kubeconfig (its type and name cannot change)."""
    return {"data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()}}


def _call(
    method: str, url: str, headers: dict[str, str], body: bytes | None, context: ssl.SSLContext | None
) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def entra_token(scope: str) -> str:
    """Client-credentials grant with the pod's federated token as the client assertion."""
    with open(os.environ["AZURE_FEDERATED_TOKEN_FILE"]) as assertion:
        form = {
            "grant_type": "client_credentials",
            "client_id": os.environ["AZURE_CLIENT_ID"],
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion.read().strip(),
            "scope": scope,
        }
    url = f"{os.environ['AZURE_AUTHORITY_HOST'].rstrip('/')}/{os.environ['AZURE_TENANT_ID']}/oauth2/v2.0/token"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    status, payload = _call("POST", url, headers, urllib.parse.urlencode(form).encode(), None)
    if status != 200:
        raise PermissionError(f"Entra ID answered {status} to the token exchange")
    return json.loads(payload)["access_token"]


def issue_token(member: dict[str, str], entra: str, account: str, namespace: str, seconds: int) -> str:
    """A TokenRequest on the member for `namespace/account`, verified against the member's own CA. The CA goes to
    ssl from memory: the pod's root filesystem is read-only and it mounts no writable volume."""
    context = ssl.create_default_context(cadata=base64.b64decode(member["ca"]).decode())
    url = f"{member['server']}/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    headers = {"Authorization": f"Bearer {entra}", "Content-Type": "application/json"}
    status, payload = _call("POST", url, headers, json.dumps(token_request(seconds)).encode(), context)
    if status != 201:
        raise PermissionError(f"the member answered {status} to the TokenRequest")
    return json.loads(payload)["status"]["token"]


def write_secret(namespace: str, name: str, kubeconfig: str) -> None:
    with open(f"{SERVICE_ACCOUNT_DIR}/token") as own:
        headers = {"Authorization": f"Bearer {own.read().strip()}", "Content-Type": "application/merge-patch+json"}
    context = ssl.create_default_context(cafile=f"{SERVICE_ACCOUNT_DIR}/ca.crt")
    url = f"{IN_CLUSTER_API}/api/v1/namespaces/{namespace}/secrets/{name}"
    status, _ = _call("PATCH", url, headers, json.dumps(kubeconfig_patch(kubeconfig)).encode(), context)
    if status != 200:
        raise PermissionError(f"patching {namespace}/{name} answered {status}")


def main() -> int:
    env = os.environ
    account, namespace, seconds = env["MULTIKUEUE_ACCOUNT"], env["SECRET_NAMESPACE"], int(env["TOKEN_SECONDS"])
    entra = entra_token(f"{AKS_SERVER_APPLICATION}/.default")
    failed: list[str] = []
    for member in json.loads(env["MEMBERS"]):
        name = member["name"]
        try:
            token = issue_token(member, entra, account, namespace, seconds)
            kubeconfig = member_kubeconfig(name, member["server"], member["ca"], account, token)
            write_secret(namespace, member["secret"], kubeconfig)
            print(f"{name}: a {seconds} s token written to {namespace}/{member['secret']}", flush=True)
        except (PermissionError, OSError, KeyError, ValueError) as error:
            print(f"{name}: not rotated: {error}", flush=True)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
