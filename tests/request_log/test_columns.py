"""The request log's columns are defined once (docs/architecture.md): their names and order as
RequestEntry's fields, which the flush writes with COPY, and the text columns' lengths as
COLUMN_LIMITS, which the writer cuts to."""

from apps.metering.records import COLUMN_LIMITS, REQUEST_LOG_COLUMNS
from apps.request_log.models import RequestLogEntry


def test_the_table_has_exactly_the_entry_s_columns_and_its_limits():
    table = {
        field.attname
        for field in RequestLogEntry._meta.concrete_fields
        if field.attname not in ("id", "workspace_id")  # the row's own, and the flush's join
    }
    assert table == set(REQUEST_LOG_COLUMNS)
    lengths = {
        field.attname: field.max_length
        for field in RequestLogEntry._meta.concrete_fields
        if field.get_internal_type() == "CharField" and field.attname != "door"
    }
    assert lengths == COLUMN_LIMITS
