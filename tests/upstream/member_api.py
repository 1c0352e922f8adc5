"""A member's API server on localhost for the token rotation program: TLS under its own certificate authority (as
an AKS API server is, under the cluster CA its kubeconfig carries), answering the TokenRequest the program sends
(authentication.k8s.io/v1, POST .../serviceaccounts/<name>/token, 201 with status.token) for one caller token."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class MemberApi:
    server: str
    """https://127.0.0.1:<port>, as the program's MEMBERS names a member's API server."""
    ca: str
    """The CA certificate, base64 PEM: a kubeconfig's certificate-authority-data."""
    caller: str
    """The bearer token the server accepts (the rotation identity's Entra token)."""
    issued: str = "issued-by-member"
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(path, body) of every TokenRequest answered."""


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, signer = issuer if issuer else (name, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    else:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        builder = builder.add_extension(san, critical=False)
    return builder.sign(signer, hashes.SHA256())


@contextmanager
def member_api(directory: Path, caller: str) -> Iterator[MemberApi]:
    """Serve TokenRequests on 127.0.0.1 until the block ends; the server's thread is joined before returning."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("member-ca", ca_key, None)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate("apiserver", key, (ca_cert.subject, ca_key))
    cert_file, key_file = directory / "apiserver.crt", directory / "apiserver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    api = MemberApi(server="", ca=base64.b64encode(ca_pem).decode(), caller=caller)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if self.headers.get("Authorization") != f"Bearer {api.caller}":
                self._answer(401, {"kind": "Status", "code": 401})
                return
            if not self.path.endswith("/token"):
                self._answer(404, {"kind": "Status", "code": 404})
                return
            api.requests.append((self.path, body))
            self._answer(201, {**body, "status": {"token": api.issued}})

        def _answer(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    api.server = f"https://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, name="member-api", daemon=True)
    thread.start()
    try:
        yield api
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
