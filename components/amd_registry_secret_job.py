"""The program the AMD driver build's secret Job runs: issue the registry token's password once, write the Secret.

It runs in the Azure CLI image (its RPM requires python3) with the standard library only, under Azure Workload
Identity: the webhook mounts the service account token at AZURE_FEDERATED_TOKEN_FILE and sets AZURE_CLIENT_ID,
AZURE_TENANT_ID and AZURE_AUTHORITY_HOST. Steps:
1. If the Secret exists and its password still logs in to the registry, leave it (no rotation on a rerun).
2. Exchange the pod's token for an ARM token (client-credentials grant with a federated client assertion) and POST
   `generateCredentials` for `password1` of the one token. Azure answers 403 until the new role assignment has
   propagated, so it retries until the Job's deadline; a 202 is polled at its Location (the spec's
   `final-state-via: location`).
3. Create or patch the docker-registry Secret through the Kubernetes API with the pod's service account.
The password lives only in this process and the Secret: never in a log, Pulumi's state or its outputs.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

ARM = "https://management.azure.com"
KUBERNETES_API = "https://kubernetes.default.svc"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
PASSWORD_NAME = "password1"
RETRY_SECONDS = 20
# ARM answers these while a new grant or federated credential has not taken effect yet.
NOT_YET_AUTHORISED = (400, 401, 403)


def generate_credentials_body(token_id: str) -> dict[str, Any]:
    """The body of Registries_GenerateCredentials: one named password, no expiry (the driver build is long-lived)."""
    return {"tokenId": token_id, "name": PASSWORD_NAME}


def docker_config(login_server: str, username: str, password: str) -> dict[str, Any]:
    """A `.dockerconfigjson` document for one registry, as `kubectl create secret docker-registry` writes it."""
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"auths": {login_server: {"username": username, "password": password, "auth": auth}}}


def secret_manifest(name: str, namespace: str, config: dict[str, Any]) -> dict[str, Any]:
    encoded = base64.b64encode(json.dumps(config).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": encoded},
    }


def _request(
    method: str, url: str, headers: dict[str, str], body: bytes | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _kubernetes(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    with open(f"{SERVICE_ACCOUNT_DIR}/token") as token_file:
        token = token_file.read().strip()
    context = ssl.create_default_context(cafile=f"{SERVICE_ACCOUNT_DIR}/ca.crt")
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    data = json.dumps(body).encode() if body is not None else None
    status, _, payload = _request(method, f"{KUBERNETES_API}{path}", headers, data, context)
    return status, json.loads(payload or b"{}")


def password_still_works(secret: dict[str, Any], login_server: str, repository: str) -> bool:
    """Does the stored password still get a pull token for the repository (ACR's token endpoint, basic auth)?"""
    config = json.loads(base64.b64decode(secret.get("data", {}).get(".dockerconfigjson", "") or b"e30="))
    auth = config.get("auths", {}).get(login_server, {}).get("auth")
    if not auth:
        return False
    query = urllib.parse.urlencode({"service": login_server, "scope": f"repository:{repository}:pull"})
    status, _, _ = _request("GET", f"https://{login_server}/oauth2/token?{query}", {"Authorization": f"Basic {auth}"})
    return status == 200


def arm_token() -> str:
    with open(os.environ["AZURE_FEDERATED_TOKEN_FILE"]) as assertion_file:
        assertion = assertion_file.read().strip()
    form = urllib.parse.urlencode(
        {
            "grant_type": "client_credentials",
            "client_id": os.environ["AZURE_CLIENT_ID"],
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion,
            "scope": f"{ARM}/.default",
        }
    ).encode()
    authority = os.environ["AZURE_AUTHORITY_HOST"].rstrip("/")
    url = f"{authority}/{os.environ['AZURE_TENANT_ID']}/oauth2/v2.0/token"
    status, _, payload = _request("POST", url, {"Content-Type": "application/x-www-form-urlencoded"}, form)
    if status != 200:
        raise PermissionError(f"token exchange answered {status}")
    return json.loads(payload)["access_token"]


def generate_password(registry_id: str, token_id: str, api_version: str) -> str | None:
    """password1 of the token, or None while Azure does not yet honour the grant."""
    try:
        headers = {"Authorization": f"Bearer {arm_token()}", "Content-Type": "application/json"}
    except PermissionError as refused:
        print(f"waiting for the federated credential: {refused}", flush=True)
        return None
    url = f"{ARM}{registry_id}/generateCredentials?api-version={api_version}"
    body = json.dumps(generate_credentials_body(token_id)).encode()
    status, response_headers, payload = _request("POST", url, headers, body)
    while status == 202:
        time.sleep(int(response_headers.get("Retry-After", "5")))
        status, response_headers, payload = _request("GET", response_headers["Location"], headers)
    if status in NOT_YET_AUTHORISED:
        print(f"waiting for the role assignment to take effect: generateCredentials answered {status}", flush=True)
        return None
    if status != 200:
        raise RuntimeError(f"generateCredentials answered {status}: {payload[:500]!r}")
    passwords = json.loads(payload)["passwords"]
    return next(p["value"] for p in passwords if p["name"] == PASSWORD_NAME)


def main() -> int:
    env = os.environ
    namespace, name = env["SECRET_NAMESPACE"], env["SECRET_NAME"]
    login_server, username = env["LOGIN_SERVER"], env["TOKEN_NAME"]
    path = f"/api/v1/namespaces/{namespace}/secrets"
    status, existing = _kubernetes("GET", f"{path}/{name}")
    if status == 200 and password_still_works(existing, login_server, env["REPOSITORY"]):
        print(f"secret {namespace}/{name} already logs in to {login_server}; left as it is", flush=True)
        return 0
    password = None
    while password is None:
        password = generate_password(env["REGISTRY_ID"], env["TOKEN_ID"], env["API_VERSION"])
        if password is None:
            time.sleep(RETRY_SECONDS)
    manifest = secret_manifest(name, namespace, docker_config(login_server, username, password))
    if status == 200:
        # The type is immutable; a Secret made by the documented manual step already is a docker-registry one.
        written, _ = _kubernetes("PATCH", f"{path}/{name}", {"data": manifest["data"]})
    else:
        written, _ = _kubernetes("POST", path, manifest)
    if written not in (200, 201):
        print(f"writing secret {namespace}/{name} answered {written}", flush=True)
        return 1
    print(f"secret {namespace}/{name} written for {username}@{login_server}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
