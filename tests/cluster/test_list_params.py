"""The lists' query parameters (#15 point 3): what parses, what is refused with a message
naming the parameter, and a page past the end clamped to the last."""

from __future__ import annotations

import pytest

from cluster.lists import jobs, params
from cluster.lists.params import ParamError, Sort


def test_sort_takes_whitelisted_columns_and_a_minus_for_descending():
    assert params.sort({"sort": "name"}, jobs.SORT_KEYS) == Sort("name", False)
    assert params.sort({"sort": "-time"}, jobs.SORT_KEYS) == Sort("time", True)
    assert params.sort({}, jobs.SORT_KEYS) == Sort()
    with pytest.raises(ParamError, match=r"Invalid sort field: 'script' \(one of id, name") as exc:
        params.sort({"sort": "script"}, jobs.SORT_KEYS)
    assert exc.value.param == "sort"


@pytest.mark.parametrize("raw", ["0", "-1", "x", "1.5", "\uff11", "9" * 30])
def test_page_must_be_a_whole_number_from_one(raw):
    with pytest.raises(ParamError, match="Invalid page"):
        params.positive_int({"page": raw}, "page", 1)


def test_page_past_the_end_is_the_last_page():
    assert params.page_span(99, 100, 2000).number == 20
    assert params.page_span(1, 100, 0).number == 1  # an empty list still has its one page
    span = params.page_span(20, 100, 2000)
    assert (span.offset, span.first_row, span.last_row, span.has_next) == (1900, 1901, 2000, False)


def test_page_window_links_the_ends_and_the_neighbours():
    assert params.page_span(10, 10, 200).window() == [1, None, 8, 9, 10, 11, 12, None, 20]
    assert params.page_span(1, 10, 30).window() == [1, 2, 3]


def test_per_page_is_one_of_the_choices():
    assert params.per_page({}) == params.DEFAULT_PER_PAGE
    assert params.per_page({"per_page": "500"}) == 500
    with pytest.raises(ParamError, match=r"Invalid per_page: 100000 \(one of 25, 50"):
        params.per_page({"per_page": "100000"})


def test_comma_lists_drop_empty_items_and_refuse_control_characters():
    assert params.comma_list({"user": " alice,,bob ,"}, "user") == ["alice", "bob"]
    with pytest.raises(ParamError, match="control characters"):
        params.comma_list({"user": "a\x00b"}, "user")
    with pytest.raises(ParamError, match="Too many values for user"):
        params.comma_list({"user": ",".join(["u"] * 1001)}, "user")


def test_job_query_parses_squeue_filters():
    q = jobs.parse(
        {
            "id": "12,13_4",
            "user": "alice,bob",
            "state": "pd,R",
            "node": "node[01-03]",
            "layer": "power(rack1)",
            "expand": "12",
            "sort": "-user",
            "page": "3",
        }
    )
    assert q.ids == ("12", "13_4")
    assert q.users == ("alice", "bob")
    assert q.states == ("PENDING", "RUNNING")
    assert q.nodes == ("node01", "node02", "node03")
    assert q.expand == (12,)
    assert (q.sort, q.page) == (Sort("user", True), 3)
    # The parameters give the same list back, in a stable order.
    assert jobs.parse(dict(q.pairs())) == q
    assert "page" not in dict(q.pairs(page=1))


def test_default_job_query_is_squeues_active_jobs():
    q = jobs.parse({})
    assert q.states == jobs.ACTIVE_STATES and q.state == "" and q.pairs() == []
    assert jobs.parse({"state": "all"}).states is None


@pytest.mark.parametrize(
    ("query", "param", "message"),
    [
        ({"state": "BOGUS"}, "state", "Invalid job state specified: BOGUS"),
        ({"id": "12x"}, "id", "Invalid job id specified: 12x"),
        ({"id": "12_a"}, "id", "Invalid job id specified: 12_a"),
        ({"id": "9" * 20}, "id", "Invalid job id specified"),
        ({"node": "node[01-"}, "node", "Invalid node name specified"),
        ({"node": "n[1-100000]"}, "node", "more than 1000"),
        ({"layer": "a;b"}, "layer", "Invalid layer: a;b"),
        ({"array": "yes"}, "array", "Invalid array: yes"),
        ({"expand": "x"}, "expand", "Invalid job id specified: x"),
        ({"sort": "-secret"}, "sort", "Invalid sort field"),
        ({"page": "0"}, "page", "Invalid page"),
    ],
)
def test_bad_job_parameters_name_themselves(query, param, message):
    with pytest.raises(ParamError, match=message.replace("[", r"\[").replace("(", r"\(")) as exc:
        jobs.parse(query)
    assert exc.value.param == param
