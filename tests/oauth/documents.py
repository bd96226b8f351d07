"""An https server on 127.0.0.1 for client metadata documents, with a certificate made for
the test (the server under test trusts it through OAUTH_DOCUMENT_CA_FILE)."""

import datetime
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class DocumentServer:
    url: str
    ca_file: Path
    answers: dict[str, Answer]
    hits: list[str]

    def serve(self, path: str, document: dict | None = None, **answer) -> str:
        """Answer `path` with `document` (JSON) or the given Answer fields; returns its URL."""
        body = json.dumps(document).encode() if document is not None else answer.pop("body", b"")
        self.answers[path] = Answer(body=body, **answer)
        return self.url + path


@contextmanager
def document_server(folder: Path) -> Iterator[DocumentServer]:
    cert_file, key_file = make_certificate(folder)
    answers: dict[str, Answer] = {}
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            answer = answers.get(self.path, Answer(status=404))
            time.sleep(answer.delay)
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            try:
                self.wfile.write(answer.body)
            except OSError:
                pass  # the server under test hung up: that is what some tests want

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield DocumentServer(f"https://127.0.0.1:{server.server_port}", cert_file, answers, hits)
    finally:
        server.shutdown()
        server.server_close()


Serve = Callable[..., str]
