"""A syslog audit stream into a real rsyslog over TLS (its certificate made by the test): every
event arrives once, rsyslog parses it as RFC 5424, and a receiver stopped for 30 seconds costs
nothing: the events wait, then arrive, none lost, none twice."""

import json
import re
import socket
import time
from datetime import timedelta

import pytest
from django.db import transaction

from apps.audit.services import Actor, audit_record
from apps.audit_streams import delivery
from apps.audit_streams.models import AuditStream, AuditStreamItem
from apps.audit_streams.services import stream_create
from apps.deliveries.engine import RetrySchedule
from tests.conftest import run_tasks
from tests.factories import owner_of

from .syslog_receiver import rsyslog
from .test_https_stream import run_until

pytestmark = pytest.mark.django_db(transaction=True)

# RFC 5424 §6: HEADER SP STRUCTURED-DATA [SP MSG]; SD-PARAM values escape '"', '\' and ']'.
HEADER = re.compile(
    r"^<(?P<pri>\d{1,3})>1 "
    r"(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d))"
    r" (?P<host>[!-~]{1,255}) (?P<app>[!-~]{1,48}) (?P<proc>[!-~]{1,128}) (?P<msgid>[!-~]{1,32}) "
)
ELEMENT = re.compile(
    r'\[(?P<id>[^ =\]"]{1,32})(?P<params>(?: [^ =\]"]{1,32}="(?:[^"\\\]]|\\.)*")*)\]'
)
PARAM = re.compile(r' ([^ =\]"]{1,32})="((?:[^"\\\]]|\\.)*)"')


def parse_5424(raw: str) -> dict:
    """A message by the grammar of RFC 5424 (raises on anything else)."""
    head = HEADER.match(raw)
    assert head, raw
    rest = raw[head.end() :]
    sd: dict[str, dict[str, str]] = {}
    while (element := ELEMENT.match(rest)) is not None:
        sd[element["id"]] = {
            k: re.sub(r"\\(.)", r"\1", v) for k, v in PARAM.findall(element["params"])
        }
        rest = rest[element.end() :]
    assert sd, raw
    assert rest.startswith(" \ufeff"), "MSG is UTF-8 with its BOM"
    return {**head.groupdict(), "sd": sd, "msg": json.loads(rest[2:])}


def free_port(first: int) -> int:
    """A free port of this helper's range (18200-18299), each test from its own part of it."""
    for port in range(first, first + 20):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise AssertionError(f"no free port from {first}")


def record(owner, n: int):
    with transaction.atomic():
        return audit_record(
            workspace=owner.memberships.get().workspace,
            action="settings.changed",
            actor=Actor.of_user(owner),
            subject=f'Acme "{n}" ]',  # quotes and a bracket, escaped in structured data
            data={"field": "name", "before": "Acme", "after": f"Acme {n}"},
        )


def test_events_reach_rsyslog_over_tls_once_in_order_through_30_seconds_down(tmp_path, monkeypatch):
    monkeypatch.setattr(
        delivery, "RETRIES", RetrySchedule([timedelta(seconds=1), timedelta(seconds=3)], True)
    )
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    with rsyslog(tmp_path / "rsyslog", free_port(18210)) as server:
        stream_create(
            workspace,
            kind="syslog",
            name="rsyslog",
            host="127.0.0.1",
            port=server.port,
            ca_certificate=server.ca_pem,
            actor=Actor.of_user(owner),
        )
        sent = [record(owner, n) for n in range(10)]
        run_until(lambda: len(server.lines()) >= 11, 60)

        server.stop()
        down_since = time.monotonic()
        sent += [record(owner, n) for n in range(10, 20)]
        while time.monotonic() - down_since < 30:
            run_tasks()
            time.sleep(0.5)
        stream = AuditStream.objects.get()
        assert AuditStreamItem.objects.count() == 10 and stream.failures >= 3
        assert "Could not connect" in stream.last_error and stream.failing_since

        server.start()
        run_until(lambda: not AuditStreamItem.objects.exists(), 60)
        run_until(lambda: len(server.lines()) >= 21, 30)
        time.sleep(1)  # anything sent twice would be written by now
        lines = server.lines()

    messages = []
    for version, msgid, structured, raw in lines:
        assert version == "1", "rsyslog parsed it as RFC 5424"
        message = parse_5424(raw)
        assert message["msgid"] == msgid and structured.startswith("[gatehouse@32473 ")
        messages.append(message)
    ids = [m["sd"]["gatehouse@32473"]["eventId"] for m in messages]
    assert len(ids) == len(set(ids)), "an event arrived twice"
    assert ids[1:] == [str(e.pk) for e in sent]  # after the stream's own creation, in order
    first = messages[1]
    assert first["pri"] == "110" and first["app"] == "gatehouse"
    assert first["sd"]["gatehouse@32473"]["workspace"] == str(workspace.pk)
    assert first["sd"]["gatehouse@32473"]["workspaceName"] == workspace.name
    assert first["msg"]["id"] == ids[1] and first["msg"]["subject"] == 'Acme "0" ]'
    stream = AuditStream.objects.get()
    assert stream.failures == 0 and stream.delivered_count == 21


def test_a_server_whose_certificate_the_ca_does_not_sign_is_refused(tmp_path, monkeypatch):
    from .syslog_receiver import make_ca_and_server

    owner = owner_of(email="owner@example.com")
    other_ca, *_ = make_ca_and_server(tmp_path)
    with rsyslog(tmp_path / "rsyslog", free_port(18240)) as server:
        stream_create(
            owner.memberships.get().workspace,
            kind="syslog",
            name="wrong CA",
            host="127.0.0.1",
            port=server.port,
            ca_certificate=other_ca,
            actor=Actor.of_user(owner),
        )
        run_tasks()
        stream = AuditStream.objects.get()
        assert "not trusted" in stream.last_error and AuditStreamItem.objects.count() == 1
        assert server.lines() == []
