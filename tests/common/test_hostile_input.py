"""No input gives a 500 (docs/product.md §3.1, issue 31's sweep): NUL bytes, dates past 9999
or before year 1, offsets out of range, IPv6 zone ids and over-long values, through query
parameters of every page, OAuth's parameters, the API's bodies and headers. PostgreSQL is
where most of these used to fail (its text refuses NUL, its timestamps refuse wide offsets),
so CI runs this module there too."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.api.scopes import EVERY_SCOPE
from apps.common.validation import EARLIEST, LATEST, InvalidInput, parse_day, parse_moment
from tests.client import Client
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db

HOSTILE = [
    "\x00",
    "a\x00b",
    "9999-12-31",
    "10000-01-01",
    "0001-01-01",
    "0000-00-00",
    "2026-12-01T00:00:00+99:00",
    "2026-12-01T00:00:00+24:00",
    "2026-12-01T00:00:00-16:00",
    "2026-12-01T25:00:00Z",
    "9999-12-31T23:59:59-15:00",
    "2001:db8::1%eth0",
    "fe80::1%eth0/128",
    "x" * 5000,
    "%",
    "-1",
    "99999999999999999999999",
    "é\u202e",
]

# Every query parameter a page or the API reads.
QUERY_NAMES = [
    "page", "state", "kind", "holder", "q", "action", "actor", "key", "since", "until",
    "unused", "no_expiry", "expiring", "workspace", "user_code", "next", "status", "cursor",
    "limit", "from", "to", "error", "operation", "door", "address",
]  # fmt: skip

PAGES = [
    "/integrations/api/",
    "/integrations/api/export.csv",
    "/integrations/connected-apps/",
    "/audit/",
    "/audit/export.csv",
    "/usage/",
    "/logs/",
    "/logs/export.csv",
    "/settings/",
    "/settings/team/",
    "/settings/webhooks/",
    "/communities/",
    "/device",
    "/portal/",
    "/account/security/",
]


@pytest.fixture
def owner():
    return owner_of(WorkspaceFactory(name="Acme"))


@pytest.fixture
def browser(owner):
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    return client


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_no_page_answers_500_to_a_hostile_query(browser, value):
    for path in PAGES:
        # Every parameter at once (the pages ignore a filter they cannot read, so each is read).
        answer = browser.get(path, dict.fromkeys(QUERY_NAMES, value))
        assert answer.status_code < 500, (path, value, answer.status_code)


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_no_oauth_endpoint_answers_500_to_a_hostile_parameter(browser, value):
    machine = Client(raise_request_exception=False)
    forms = {
        "/oauth/token": {"grant_type": "refresh_token", "refresh_token": "x", "client_id": value},
        "/oauth/revoke": {"token": value, "client_id": value},
        "/oauth/device/code": {"client_id": value, "scope": value, "device_name": value},
    }
    for path, form in forms.items():
        answer = machine.post(path, form)
        assert answer.status_code < 500, (path, value, answer.status_code)
        assert "error" in answer.json()
    registration = {"client_name": value, "redirect_uris": [value, f"https://a.example/{value}"]}
    answer = machine.post(
        "/oauth/register", json.dumps(registration), content_type="application/json"
    )
    assert answer.status_code in (201, 400), answer.content[:300]
    consent = browser.get("/oauth/authorize", {"client_id": value, "redirect_uri": value})
    assert consent.status_code < 500


def test_a_nul_byte_in_an_oauth_parameter_is_invalid_request():
    answer = Client().post("/oauth/token", {"grant_type": "refresh_token", "client_id": "a\x00"})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"
    assert "NUL" in answer.json()["error_description"]


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_no_api_answer_is_500_for_a_hostile_value(value):
    client = Client(raise_request_exception=False)
    secret = make_key(scopes=EVERY_SCOPE).secret
    for field in ("expiresAt", "name", "description"):
        body = {"name": "k", "scopes": ["products:read"], field: value}
        answer = client.post(
            "/api/v1/keys", json.dumps(body), content_type="application/json", **auth(secret)
        )
        assert answer.status_code < 500, (field, value, answer.content[:300])
    for name in ("state", "kind", "holder", "cursor", "limit"):
        answer = client.get("/api/v1/keys", {name: value}, **auth(secret))
        assert answer.status_code < 500, (name, value, answer.content[:300])
    answer = client.get(
        "/api/v1/workspace", HTTP_X_FORWARDED_FOR=value, HTTP_USER_AGENT=value, **auth(secret)
    )
    assert answer.status_code < 500


@pytest.mark.parametrize(
    "moment",
    [
        "2026-12-01T00:00:00+99:00",
        "2026-12-01T00:00:00+24:00",
        "2026-12-01T00:00:00+16:00",
        "2026-12-01T00:00:00-23:59",
        "2026-12-01T25:00:00Z",
        "9999-12-31T23:59:59-15:00",
        "2026-12-01T00:00:00",
        "2027-12-01T00:00:00Z\n",
        " 2027-12-01T00:00:00Z",
        "2027-12-01T00:00:00\x00Z",
        "2027-12-01\x00T00:00:00Z",
        "2027-12-01T00:00:00+14:01",
        "2027-12-01T00:00:00-12:01",
        "2027-12-01T00:00:00+0100",
        "2027-12-01T00:00:00.1234567Z",
        "2027-W48-1T00:00:00Z",
        "２０２７-12-01T00:00:00Z",
    ],
)
def test_an_impossible_expiry_is_invalid_input_naming_the_field(moment):
    secret = make_key(scopes=EVERY_SCOPE).secret
    body = {"name": "k", "scopes": ["products:read"], "expiresAt": moment}
    answer = Client().post(
        "/api/v1/keys", json.dumps(body), content_type="application/json", **auth(secret)
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid-input" and "expiresAt" in answer.json()["message"]


@pytest.mark.parametrize(
    "clock,offset,hours",
    [("00:00:00", "+14:00", -14), ("00:00:00", "-12:00", 12), ("00:00:00.5", "Z", 0)],
)
def test_every_offset_a_place_uses_is_an_expiry(clock, offset, hours):
    secret = make_key(scopes=EVERY_SCOPE).secret
    day = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
    body = {"name": "k", "scopes": ["products:read"], "expiresAt": f"{day}T{clock}{offset}"}
    answer = Client().post(
        "/api/v1/keys", json.dumps(body), content_type="application/json", **auth(secret)
    )
    assert answer.status_code == 201, answer.content
    expected = parse_moment(f"{day}T{clock}Z", "x") + timedelta(hours=hours)
    assert parse_moment(answer.json()["expiresAt"], "x") == expected


def test_the_audit_log_takes_the_last_day_there_is(browser):
    for path in ("/audit/", "/audit/export.csv"):
        assert browser.get(path, {"until": "9999-12-31"}).status_code == 200
        assert browser.get(path, {"since": "0001-01-01"}).status_code == 200


def test_a_zone_id_behind_a_trusted_proxy_is_not_an_address(settings):
    """An IPv6 address with an interface (2001:db8::1%eth0) passed an allow-list of
    2001:db8::/32 and then broke the usage flush on PostgreSQL: it is no address at all, so
    the peer's own address counts, which the list does not allow."""
    from apps.api_keys.restrictions import Restrictions

    settings.TRUSTED_PROXY_COUNT = 1
    created = make_key(
        scopes=["products:read"], restrictions=Restrictions(networks=("2001:db8::/32",))
    )
    answer = Client().get(
        "/api/v1/workspace", HTTP_X_FORWARDED_FOR="2001:db8::1%eth0", **auth(created.secret)
    )
    assert answer.status_code == 403 and answer.json()["error"] == "ip-not-allowed"
    allowed = Client().get(
        "/api/v1/workspace", HTTP_X_FORWARDED_FOR="2001:db8::1", **auth(created.secret)
    )
    assert allowed.status_code == 200


def test_a_network_with_an_interface_is_refused():
    from apps.api_keys.restrictions import clean_networks

    with pytest.raises(InvalidInput, match="interface"):
        clean_networks(["fe80::1%eth0/128"])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60) | st.datetimes(timezones=st.timezones()).map(datetime.isoformat))
def test_parse_moment_answers_a_utc_moment_in_range_or_invalid_input(text):
    try:
        moment = parse_moment(text, "when")
    except InvalidInput as error:
        assert error.field == "when"
        return
    assert moment.tzinfo is UTC and EARLIEST <= moment <= LATEST


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12) | st.dates().map(lambda d: d.isoformat()))
def test_parse_day_answers_a_day_in_range_or_none(text):
    day = parse_day(text)
    assert day is None or EARLIEST.date() <= day <= LATEST.date()


def test_parse_moment_keeps_the_instant():
    assert parse_moment("2027-03-31T14:00:00+02:00", "when") == datetime(
        2027, 3, 31, 12, tzinfo=UTC
    )
    assert parse_moment("2027-03-31T12:00:00Z", "when") - timedelta(hours=1) == datetime(
        2027, 3, 31, 11, tzinfo=UTC
    )
