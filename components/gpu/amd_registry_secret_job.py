"""The program the AMD driver build's secret Job and CronJob run: the module signing key once, and the registry
token's password, issued with an expiry and re-issued before it lapses.

It runs in the Azure CLI image with the standard library, plus `cryptography` from the CLI's own virtualenv for the
signing key (the image installs the azure-cli RPM, scripts/release/rpm/azurelinux.dockerfile, whose launcher puts
/usr/lib64/az/lib/python3.*/site-packages on PYTHONPATH: azure-cli.spec; msal needs cryptography). Under Azure
Workload Identity the webhook mounts the service account token at AZURE_FEDERATED_TOKEN_FILE and sets AZURE_CLIENT_ID,
AZURE_TENANT_ID and AZURE_AUTHORITY_HOST. Steps:
1. Signing key: when the key and certificate Secrets do not exist, make an RSA key and a self-signed certificate in
   this process and write them as the Secrets KMM's signer reads (ROCm/gpu-operator v1.5.1 docs/drivers/
   secure-boot.md: `key` holds the PEM private key, `cert` the DER certificate). The key never leaves the cluster.
2. Registry password: when the Secret still logs in and its password has more than RENEW_DAYS left, leave it.
   Otherwise exchange the pod's token for an ARM token (client-credentials grant with a federated client
   assertion) and POST `generateCredentials` for the token's other password slot with an expiry LIFETIME_DAYS out.
   The password in use stays valid until its own expiry, so a node pulling meanwhile is not locked out. Azure
   answers 403 until a new role assignment has propagated, so the call is retried until the Job's deadline; a 202
   is polled at its Location (the spec's `final-state-via: location`).
3. Write the docker-registry Secret, with the slot and expiry as annotations, through the Kubernetes API.
The password and the key live only in this process and the Secrets: never in a log, Pulumi's state or its outputs.
"""

from __future__ import annotations

import base64
import datetime
import glob
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
PASSWORD_SLOTS = ("password1", "password2")
SLOT_ANNOTATION = "aks-gpu-platform/password-name"
EXPIRY_ANNOTATION = "aks-gpu-platform/password-expires"
RETRY_SECONDS = 20
# ARM answers these while a new grant or federated credential has not taken effect yet.
NOT_YET_AUTHORISED = (400, 401, 403)
AZURE_CLI_SITE_PACKAGES = "/usr/lib64/az/lib/python3*/site-packages"
SIGNING_KEY_BITS = 4096
SIGNING_CERT_DAYS = 3650


def generate_credentials_body(token_id: str, slot: str, expiry: datetime.datetime) -> dict[str, Any]:
    """The body of Registries_GenerateCredentials: one named password that lapses at `expiry`."""
    return {"tokenId": token_id, "name": slot, "expiry": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}


def docker_config(login_server: str, username: str, password: str) -> dict[str, Any]:
    """A `.dockerconfigjson` document for one registry, as `kubectl create secret docker-registry` writes it."""
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"auths": {login_server: {"username": username, "password": password, "auth": auth}}}


def _metadata(name: str, namespace: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "aks-gpu-platform"},
    }
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def secret_manifest(
    name: str, namespace: str, config: dict[str, Any], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    encoded = base64.b64encode(json.dumps(config).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(name, namespace, annotations),
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": encoded},
    }


def opaque_secret(name: str, namespace: str, key: str, value: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(name, namespace),
        "type": "Opaque",
        "data": {key: base64.b64encode(value).decode()},
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


def signing_key_and_certificate(common_name: str) -> tuple[bytes, bytes]:
    """A new RSA key (PKCS#8 PEM) and its self-signed X.509 certificate (DER), as `openssl req -x509 -nodes
    -outform DER` makes them for KMM's signer."""
    sys.path.extend(glob.glob(AZURE_CLI_SITE_PACKAGES))
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=SIGNING_KEY_BITS)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=SIGNING_CERT_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem, certificate.public_bytes(serialization.Encoding.DER)


def ensure_signing_key(namespace: str, key_secret: str, cert_secret: str, common_name: str) -> bool:
    """Create the signing key pair's Secrets when either is missing; an existing pair is never replaced."""
    path = f"/api/v1/namespaces/{namespace}/secrets"
    present = [_kubernetes("GET", f"{path}/{name}")[0] == 200 for name in (key_secret, cert_secret)]
    if all(present):
        return True
    if any(present):
        # Half a pair: a new key signs modules the old certificate cannot verify. A person decides.
        print(f"only one of {key_secret}, {cert_secret} exists; delete both to make a new pair", flush=True)
        return False
    key, certificate = signing_key_and_certificate(common_name)
    for manifest in (
        opaque_secret(key_secret, namespace, "key", key),
        opaque_secret(cert_secret, namespace, "cert", certificate),
    ):
        status, _ = _kubernetes("POST", path, manifest)
        if status != 201:
            print(f"writing secret {namespace}/{manifest['metadata']['name']} answered {status}", flush=True)
            return False
    print(f"module signing key {namespace}/{key_secret} created", flush=True)
    return True


def password_still_works(secret: dict[str, Any], login_server: str, repository: str) -> bool:
    """Does the stored password still get a pull token for the repository (ACR's token endpoint, basic auth)?"""
    config = json.loads(base64.b64decode(secret.get("data", {}).get(".dockerconfigjson", "") or b"e30="))
    auth = config.get("auths", {}).get(login_server, {}).get("auth")
    if not auth:
        return False
    query = urllib.parse.urlencode({"service": login_server, "scope": f"repository:{repository}:pull"})
    status, _, _ = _request("GET", f"https://{login_server}/oauth2/token?{query}", {"Authorization": f"Basic {auth}"})
    return status == 200


def _annotation(secret: dict[str, Any], key: str) -> str | None:
    metadata: dict[str, Any] = secret.get("metadata") or {}
    annotations: dict[str, str] = metadata.get("annotations") or {}
    return annotations.get(key)


def renewal_due(secret: dict[str, Any], now: datetime.datetime, renew_days: int) -> bool:
    """True when the Secret records no expiry, or one less than `renew_days` away."""
    stamp = _annotation(secret, EXPIRY_ANNOTATION)
    if not stamp:
        return True
    expires = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return expires - now < datetime.timedelta(days=renew_days)


def next_slot(secret: dict[str, Any]) -> str:
    """The password slot not in use, so the one in use keeps working until its own expiry."""
    current = _annotation(secret, SLOT_ANNOTATION)
    return PASSWORD_SLOTS[1] if current == PASSWORD_SLOTS[0] else PASSWORD_SLOTS[0]


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


def generate_password(
    registry_id: str, token_id: str, api_version: str, slot: str, expiry: datetime.datetime
) -> str | None:
    """The new password of `slot`, or None while Azure does not yet honour the grant."""
    try:
        headers = {"Authorization": f"Bearer {arm_token()}", "Content-Type": "application/json"}
    except PermissionError as refused:
        print(f"waiting for the federated credential: {refused}", flush=True)
        return None
    url = f"{ARM}{registry_id}/generateCredentials?api-version={api_version}"
    body = json.dumps(generate_credentials_body(token_id, slot, expiry)).encode()
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
    return next(p["value"] for p in passwords if p["name"] == slot)


def main() -> int:
    env = os.environ
    namespace, name = env["SECRET_NAMESPACE"], env["SECRET_NAME"]
    login_server, username = env["LOGIN_SERVER"], env["TOKEN_NAME"]
    signer = f"amdgpu module signing ({login_server})"
    signed = ensure_signing_key(namespace, env["SIGNING_KEY_SECRET"], env["SIGNING_CERT_SECRET"], signer)
    path = f"/api/v1/namespaces/{namespace}/secrets"
    status, existing = _kubernetes("GET", f"{path}/{name}")
    now = datetime.datetime.now(datetime.UTC)
    if (
        status == 200
        and not renewal_due(existing, now, int(env["RENEW_DAYS"]))
        and password_still_works(existing, login_server, env["REPOSITORY"])
    ):
        print(f"secret {namespace}/{name} logs in and is not due for renewal; left as it is", flush=True)
        return 0 if signed else 1
    slot = next_slot(existing if status == 200 else {})
    expiry = now + datetime.timedelta(days=int(env["LIFETIME_DAYS"]))
    password = None
    while password is None:
        password = generate_password(env["REGISTRY_ID"], env["TOKEN_ID"], env["API_VERSION"], slot, expiry)
        if password is None:
            time.sleep(RETRY_SECONDS)
    annotations = {SLOT_ANNOTATION: slot, EXPIRY_ANNOTATION: expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}
    manifest = secret_manifest(name, namespace, docker_config(login_server, username, password), annotations)
    if status == 200:
        # The type is immutable; a Secret made by the documented manual step already is a docker-registry one.
        patch = {"metadata": {"annotations": annotations}, "data": manifest["data"]}
        written, _ = _kubernetes("PATCH", f"{path}/{name}", patch)
    else:
        written, _ = _kubernetes("POST", path, manifest)
    if written not in (200, 201):
        print(f"writing secret {namespace}/{name} answered {written}", flush=True)
        return 1
    print(
        f"secret {namespace}/{name} written for {username}@{login_server} ({slot}, until {expiry:%Y-%m-%d})", flush=True
    )
    return 0 if signed else 1


if __name__ == "__main__":
    sys.exit(main())
