"""Where a syslog stream may send: a host name or address, a TCP port, and the CA
certificates (PEM) its TLS server's certificate must chain to."""

import ipaddress
import re
from typing import Any

from cryptography import x509
from django.conf import settings

from apps.common.validation import InvalidInput
from apps.webhooks.destinations import address_allowed

HOST_NAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$")
MAX_CA_BYTES = 65_536


def clean_syslog_target(host: Any, port: Any, ca_pem: Any) -> tuple[str, int, str]:
    """The host, port and CA as stored, or InvalidInput naming what is wrong."""
    if not isinstance(host, str) or not host.strip():
        raise InvalidInput("host", "Enter the syslog server's host name or address.")
    host = host.strip().strip("[]")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
        if not HOST_NAME.match(host):
            raise InvalidInput("host", "This is not a host name or an IP address.") from None
    if literal is not None and not address_allowed(literal):
        raise InvalidInput("host", "This address is private or reserved: streams cannot reach it.")
    if literal is None and host.lower() == "localhost" and not settings.WEBHOOKS_ALLOW_PRIVATE:
        raise InvalidInput("host", "Loopback is reachable only in development.")
    if isinstance(port, str) and port.strip().isdigit():
        port = int(port)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidInput("port", "port must be a TCP port from 1 to 65535 (6514 for syslog-tls).")
    return host, port, clean_ca(ca_pem)


def clean_ca(ca_pem: Any) -> str:
    """One or more PEM certificates: the server's certificate must chain to one of them."""
    if not isinstance(ca_pem, str) or "-----BEGIN CERTIFICATE-----" not in ca_pem:
        raise InvalidInput(
            "caCertificate", "Paste the CA certificate (PEM, -----BEGIN CERTIFICATE-----)."
        )
    text = ca_pem.strip().replace("\r\n", "\n") + "\n"
    if len(text.encode()) > MAX_CA_BYTES:
        raise InvalidInput("caCertificate", "The CA certificates may be 64 KB at most.")
    try:
        certificates = x509.load_pem_x509_certificates(text.encode())
    except ValueError:
        raise InvalidInput("caCertificate", "This PEM holds no readable certificate.") from None
    if not certificates:
        raise InvalidInput("caCertificate", "This PEM holds no readable certificate.")
    return text
