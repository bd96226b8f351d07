"""The Audit page's details say times as every page does (issue 54 item 10): a hand-over's
grace and an idle warning's day in the house's words, never a raw ISO time."""

import re

from apps.audit.models import AuditEvent
from apps.audit_pages.presentation import event_details

ISO = re.compile(r"\d{4}-\d\d-\d\d")


def test_a_hand_over_and_an_idle_warning_name_their_times_in_words():
    handed = AuditEvent(
        action="key.handed_over",
        data={
            "fromKey": {"id": 1, "hint": "gwk_…abcd", "holder": "ada@example.com"},
            "toKey": {"id": 2, "hint": "gwk_…wxyz"},
            "serviceAccount": {"id": 3, "name": "Billing bot"},
            "oldSecretStopsAt": "2026-11-29T08:14:46.707666+00:00",
        },
    )
    text = event_details(handed)
    assert "old secret works until Nov 29, 2026 08:14 UTC" in text, text
    assert not ISO.search(text), text
    warned = AuditEvent(
        action="key.idle_warning", data={"idleDays": 90, "revokedAt": "2026-12-03T08:00:00+00:00"}
    )
    text = event_details(warned)
    assert "revoked on Dec 3, 2026 unless used" in text and not ISO.search(text), text
