"""The What-if pages: administrators only, the form from A's files, a refused B shown with
its reason and nothing stored."""

from __future__ import annotations

import re

import pytest

from whatif.models import WhatIf

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, demo, users):
    client.force_login(users["admin"])
    return client


def test_pages_are_for_administrators(client, demo, users):
    assert client.get("/whatif/").status_code == 302
    client.force_login(users["alice"])
    assert client.get("/whatif/").status_code == 403
    assert client.get("/whatif/new/").status_code == 403
    assert client.post("/whatif/new/", {"workload": "sample"}).status_code == 403
    assert "What-if" not in client.get("/").content.decode()


def test_the_form_offers_a_s_values(admin_client):
    page = admin_client.get("/whatif/new/").content.decode()
    assert 'name="power.ResumeTimeout" value="60" data-a="60"' in page
    assert "flat / top" in page
    assert "What-if</a>" in admin_client.get("/").content.decode()


def test_a_refused_b_is_a_400_with_the_reason(admin_client):
    response = admin_client.post(
        "/whatif/new/", {"base": "current", "workload": "sample", "power.ResumeTimeout": "later"}
    )
    assert response.status_code == 400
    assert "ResumeTimeout" in response.content.decode()
    assert not WhatIf.objects.exists()


def test_an_unknown_comparison_is_a_404(admin_client):
    assert admin_client.get("/whatif/99/").status_code == 404
    assert admin_client.get("/whatif/99/a/report.html").status_code == 404


def test_a_finished_comparison_shows_both_sides_with_better_and_worse_marked(admin_client, users):
    import copy

    from django.utils import timezone

    from simulator.report import build_report
    from tests.simulator.report_log import LOG

    a = build_report(LOG)
    b = copy.deepcopy(a)
    b["summary"]["wait"]["mean"] = a["summary"]["wait"]["mean"] / 2  # B waits less: better
    b["summary"]["utilisation_all"] = a["summary"]["utilisation_all"] / 2  # B uses less: worse
    row = WhatIf.objects.create(
        owner=users["admin"], created=timezone.now(), workload="sample", state=WhatIf.DONE,
        changes=[["SuspendTime", "", "120"]], report_a=a, report_b=b,
    )  # fmt: skip
    page = admin_client.get(f"/whatif/{row.pk}/").content.decode()
    assert "A and B side by side" in page
    better = page.split('<tr class="whatif-better">', 1)[1].split("</tr>", 1)[0]
    assert "wait mean" in better and "-50.0%" in better
    worse = page.split('<tr class="whatif-worse">', 1)[1].split("</tr>", 1)[0]
    assert "utilisation all" in worse
    assert "Partition batch" in page
    # The headline first: each figure A → B, marked the way it went.
    card = page.split('<div role="listitem" class="whatif-card whatif-better">', 1)[1].split("</div>", 1)[0]
    assert "Mean wait" in card and "better" in card
    assert page.index("whatif-headline") < page.index("Whole workload")
    # A part where B differs opens; one where nothing differs is folded, saying so.
    assert re.search(r'<details class="whatif-part" open>\s*<summary><strong>Whole workload</strong> '
                     r'<span class="muted">2 of \d+ figures differ', page)  # fmt: skip
    assert re.search(r'<details class="whatif-part">\s*<summary><strong>Partition batch</strong> '
                     r'<span class="muted">no difference in \d+ figures', page)  # fmt: skip
    # The status fragment the page polls is the same section.
    assert "whatif-compare" in admin_client.get(f"/whatif/{row.pk}/_status").content.decode()
