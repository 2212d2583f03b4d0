"""Oracle test: the API's job, node and partition representations with the serializers'
fields built once per class (cluster/api/serializers.py, FieldsBuiltOnce) against
ModelSerializer building them for each serializer, as before: random jobs in every state
the scheduler gives them, nodes and partitions, each serialized several times (a copy
used once must not change the next)."""

from __future__ import annotations

import copy
import random

import pytest
from rest_framework import serializers
from rest_framework.test import APIRequestFactory

from cluster.api import serializers as api_serializers
from cluster.api.serializers import JobSerializer, NodeSerializer, PartitionSerializer, shallow_copy
from cluster.models import Job, Node, Partition
from cluster.services.jobs import job_cancel, job_hold, job_submit
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db


def built_each_time(cls: type) -> type:
    """``cls`` as ModelSerializer makes it: its fields worked out for every serializer."""

    def get_fields(self):  # type: ignore[no-untyped-def]
        return serializers.ModelSerializer.get_fields(self)

    return type(f"Old{cls.__name__}", (cls,), {"get_fields": get_fields})


SPECS = [
    {"wrap": "true"},
    {"wrap": "sleep 9", "partition": "batch", "nodes": "2", "ntasks": "4", "mem": "100M"},
    {"wrap": "true", "time": "1:00:00", "name": "n", "comment": "c", "array": "1-3"},
    {"wrap": "true", "hold": True, "begin": "now+1hour", "exclusive": True},
    {"wrap": "true", "output": "/tmp/o-%j", "error": "/tmp/e-%j", "cpus_per_task": "2"},
]


def test_representations_agree_with_fields_built_for_each_serializer(demo, users):
    rng = random.Random(18)
    for _ in range(12):
        spec = {**rng.choice(SPECS), "work_dir": "/tmp"}
        job_submit(user=users[rng.choice(["alice", "bob"])], spec=spec)
    schedule_pass()
    jobs = list(Job.objects.order_by("id"))
    job_hold(actor=users["admin"], job_id=jobs[1].id)
    job_cancel(actor=users["admin"], job_id=jobs[2].id)
    request = APIRequestFactory().get("/api/jobs/")
    for cls, objects in (
        (JobSerializer, list(Job.objects.order_by("id"))),
        (NodeSerializer, list(Node.objects.order_by("name"))),
        (PartitionSerializer, list(Partition.objects.order_by("name"))),
    ):
        old = built_each_time(cls)
        for user in ("alice", "admin", None):
            request.user = users[user] if user else None
            context = {"request": request} if user else {}
            for _ in range(2):
                assert (
                    cls(objects, many=True, context=context).data
                    == old(objects, many=True, context=context).data
                )
                one = rng.choice(objects)
                assert cls(one, context=context).data == old(one, context=context).data


class Copying(serializers.Field):
    """A field that says how it is copied: shallow_copy must leave it to copy.copy."""

    def __copy__(self):  # type: ignore[no-untyped-def]
        new = type(self)()
        new.copied = True
        return new


class Slotted(serializers.Field):
    __slots__ = ("extra",)


def test_shallow_copy_is_copy_copy_for_every_field():
    for cls in (JobSerializer, NodeSerializer, PartitionSerializer):
        cls().get_fields()
        for name, field in cls._fields_built.items():
            mine, theirs = shallow_copy(field), copy.copy(field)
            assert type(mine) is type(theirs), name
            assert mine.__dict__ == theirs.__dict__, name
            assert mine is not field and mine.__dict__ is not field.__dict__, name
    assert shallow_copy(Copying()).copied is True
    slotted = Slotted()
    slotted.extra = 5
    assert shallow_copy(slotted).extra == 5


def test_a_page_copies_its_fields_without_the_copy_protocol(demo, users, monkeypatch):
    """copy.copy cost 1.7 us a field: a job list page's serializer copies seventy-odd."""
    job_submit(user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp"})
    calls = []
    real = copy.copy
    monkeypatch.setattr(api_serializers.copy, "copy", lambda x: calls.append(x) or real(x))
    request = APIRequestFactory().get("/api/jobs/")
    request.user = users["alice"]
    data = JobSerializer(list(Job.objects.all()), many=True, context={"request": request}).data
    assert len(data) == 1 and data[0]["user"] == "alice"
    assert calls == []
