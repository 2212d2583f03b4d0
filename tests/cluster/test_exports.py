"""The console's exports: the three formats carry the same table."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime

from openpyxl import load_workbook

from cluster.exports import table_bytes, table_response

HEADERS = ["JOBID", "NAME", "CPUS", "START"]
ROWS = [[12, "sim", 4, datetime(2026, 12, 2, 9, 0, 0)], [13, "=HYPERLINK(1)", 1, None]]


def test_csv_json_xlsx_agree():
    text = table_bytes("csv", HEADERS, ROWS).decode()
    assert list(csv.reader(io.StringIO(text))) == [
        HEADERS,
        ["12", "sim", "4", "2026-12-02T09:00:00"],
        ["13", "'=HYPERLINK(1)", "1", ""],
    ]
    assert json.loads(table_bytes("json", HEADERS, ROWS)) == [
        {"JOBID": 12, "NAME": "sim", "CPUS": 4, "START": "2026-12-02T09:00:00"},
        {"JOBID": 13, "NAME": "=HYPERLINK(1)", "CPUS": 1, "START": None},
    ]
    sheet = load_workbook(io.BytesIO(table_bytes("xlsx", HEADERS, ROWS))).active
    assert [list(r) for r in sheet.iter_rows(values_only=True)] == [
        HEADERS,
        [12, "sim", 4, "2026-12-02T09:00:00"],
        [13, "'=HYPERLINK(1)", 1, None],
    ]


def test_response_names_the_file_and_refuses_unknown_formats():
    ok = table_response("csv", "jobs 2026/12", HEADERS, ROWS)
    assert ok.status_code == 200
    assert ok["Content-Disposition"] == 'attachment; filename="jobs_2026_12.csv"'
    bad = table_response("pdf", "jobs", HEADERS, ROWS)
    assert bad.status_code == 400
    assert b"csv, json, xlsx" in bad.content
