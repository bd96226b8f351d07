"""A real rsyslog receiving syslog over TLS (RFC 5425) on a port of the tests, run as a
subprocess with a configuration, CA and server certificate made here: what a SIEM's collector
is. It writes each message it parsed as RFC 5424 to a file, one line each."""

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

RSYSLOGD = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca_and_server(directory: Path) -> tuple[str, Path, Path, Path]:
    """A CA, and a certificate for localhost and 127.0.0.1 it signed: (CA PEM, CA, cert, key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("Gatehouse test CA"))
        .issuer_name(_name("Gatehouse test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM).decode()
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_text(ca_pem)
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return ca_pem, *paths


# Tab-separated: what rsyslog's RFC 5424 parser made of the message, then the message itself.
CONFIG = """
global(workDirectory="{work}"
       defaultNetstreamDriver="gtls"
       defaultNetstreamDriverCAFile="{ca}"
       defaultNetstreamDriverCertFile="{cert}"
       defaultNetstreamDriverKeyFile="{key}")
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1"
       streamDriver.authMode="anon")
input(type="imtcp" port="{port}" address="127.0.0.1")
template(name="parsed" type="string"
         string="%protocol-version%\\t%msgid%\\t%structured-data%\\t%rawmsg%\\n")
action(type="omfile" file="{out}" template="parsed" flushOnTXEnd="on" asyncWriting="off")
"""


@dataclass
class Rsyslog:
    port: int
    ca_pem: str
    directory: Path
    process: "subprocess.Popen[bytes] | None" = None

    @property
    def output(self) -> Path:
        return self.directory / "received.log"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                RSYSLOGD,
                "-n",
                "-f",
                str(self.directory / "rsyslog.conf"),
                "-i",
                str(self.directory / "rsyslogd.pid"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.directory / "rsyslogd.err", "ab"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.directory / "rsyslogd.err").read_text()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("rsyslogd did not listen within 30 seconds")

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it: it writes what it read, then exits."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process = None

    def lines(self) -> list[list[str]]:
        if not self.output.exists():
            return []
        text = self.output.read_text(encoding="utf-8")
        return [line.split("\t", 3) for line in text.splitlines() if line]


@contextmanager
def rsyslog(directory: Path, port: int) -> Iterator[Rsyslog]:
    """rsyslogd on 127.0.0.1:`port` with TLS under a certificate made here, until the end."""
    if not os.path.exists(RSYSLOGD):
        pytest.fail("rsyslogd is not installed (apt-get install rsyslog rsyslog-gnutls)")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "work").mkdir(exist_ok=True)
    ca_pem, ca, cert, key = make_ca_and_server(directory)
    (directory / "rsyslog.conf").write_text(
        CONFIG.format(
            work=directory / "work",
            ca=ca,
            cert=cert,
            key=key,
            port=port,
            out=directory / "received.log",
        )
    )
    server = Rsyslog(port, ca_pem, directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()
