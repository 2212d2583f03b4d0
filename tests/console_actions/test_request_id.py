"""Every request gets a correlation id (#15 point 4): kept from a safe X-Request-ID, made
otherwise, sent back, and written into the log records."""

from __future__ import annotations

import logging
import re

import pytest

from config.request_id import RequestIdLogFilter, current_request_id, request_id_for

pytestmark = pytest.mark.django_db


def test_a_safe_incoming_id_is_kept_and_returned(client):
    response = client.get("/api/whoami/", HTTP_X_REQUEST_ID="abc-123.x:y")
    assert response["X-Request-ID"] == "abc-123.x:y"


@pytest.mark.parametrize("bad", ["", "a b", "x" * 65, "line\ninjected", "<script>"])
def test_an_unsafe_id_is_replaced(bad):
    rid = request_id_for(bad)
    assert rid != bad and re.fullmatch(r"[0-9a-f]{32}", rid)


def test_a_request_without_one_gets_a_fresh_id(client):
    first = client.get("/api/whoami/")["X-Request-ID"]
    second = client.get("/api/whoami/")["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", first) and first != second


def test_log_records_carry_the_id_and_none_outside_a_request():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    assert RequestIdLogFilter().filter(record) and record.request_id == "-"
    assert current_request_id() is None


def test_a_log_line_written_during_the_request_carries_its_id(rf):
    from django.http import HttpResponse

    from config.request_id import RequestIdMiddleware

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(RequestIdLogFilter())
    logger = logging.getLogger("fsched.test.request_id")
    logger.addHandler(handler)
    try:

        def view(request):
            logger.warning("inside the view")
            return HttpResponse("ok")

        response = RequestIdMiddleware(view)(rf.get("/", HTTP_X_REQUEST_ID="trace-7"))
    finally:
        logger.removeHandler(handler)
    assert response["X-Request-ID"] == "trace-7"
    assert [r.request_id for r in records] == ["trace-7"]
    assert current_request_id() is None  # reset once the request is answered
