"""Oracle test: slurmwords.wire's field checks and wire forms against the code they
replaced (kept below as it was), on random values for every annotation of every agent
message, valid and not: the same value back, or the same MessageError words."""

from __future__ import annotations

import random
import types
import typing
from dataclasses import fields
from typing import Any

from slurmwords import agent_messages as am
from slurmwords import wire
from slurmwords.wire import MessageError, Record, _what


def old_checked(tp: Any, value: Any, kind: str, name: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        choices = [t for t in typing.get_args(tp) if t is not type(None)]
        if value is None and len(choices) < len(typing.get_args(tp)):
            return None
        for choice in choices[:-1]:
            try:
                return old_checked(choice, value, kind, name)
            except MessageError:
                continue
        return old_checked(choices[-1], value, kind, name)
    if origin is list:
        if not isinstance(value, list):
            raise MessageError(kind, name, f"must be a list, not {_what(value)}")
        (item,) = typing.get_args(tp)
        return [old_checked(item, v, kind, f"{name}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise MessageError(kind, name, f"must be an object, not {_what(value)}")
        _, item = typing.get_args(tp)
        return {k: old_checked(item, v, kind, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp._read(value, kind, name)
    ok = (int, float) if tp is float else tp
    if (isinstance(value, bool) and tp is not bool) or not isinstance(value, ok):
        raise MessageError(kind, name, f"must be {wire._NAMES[tp]}, not {_what(value)}")
    return value


def old_plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_wire()
    if isinstance(value, list | tuple):
        return [old_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: old_plain(v) for k, v in value.items()}
    return value


def annotations() -> list[Any]:
    """Every field annotation of every agent message and record, and the lists and dicts of
    scalars the fast paths are for."""
    found: dict[str, Any] = {}
    for cls in {*am.REGISTRY.values(), am.LaunchJob, am.Completion, am.JobStart, am.NodeInfo}:
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            found[repr(hints[f.name])] = hints[f.name]
    for tp in (
        list[int],
        list[str],
        list[bool],
        dict[str, str],
        dict[str, int],
        dict[str, bool],
        list[float],
    ):
        found[repr(tp)] = tp
    return list(found.values())


def scalar(rng: random.Random) -> Any:
    return rng.choice([0, 7, -3, 2.5, True, False, None, "", "x", "node01", 10**12])


def value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return scalar(rng)
    if roll < 0.75:
        # Mostly one type, sometimes a stray item: the fast path must fall back.
        base = rng.choice([0, "s", True, 1.5])
        items = [type(base)(base) for _ in range(rng.randint(0, 5))]
        if items and rng.random() < 0.4:
            items[rng.randrange(len(items))] = value(rng, depth + 1)
        return items
    base = rng.choice([0, "s", True])
    out = {f"k{i}": base for i in range(rng.randint(0, 5))}
    if out and rng.random() < 0.4:
        out[rng.choice(list(out))] = value(rng, depth + 1)
    return out


def outcome(check: Any, tp: Any, v: Any) -> tuple[str, Any]:
    try:
        result = check(tp, v, "kind", "field")
    except MessageError as exc:
        return "error", str(exc)
    return "value", (result, type(result))


def test_field_checks_agree_with_the_old_ones():
    rng = random.Random(18)
    types_ = annotations()
    for _ in range(20000):
        tp = rng.choice(types_)
        v = value(rng)
        assert outcome(wire._checked, tp, v) == outcome(old_checked, tp, v), (tp, v)


def test_wire_forms_agree_with_the_old_ones():
    rng = random.Random(18)
    completion = am.Completion(job_id=1, node="n", exit_code=0, signal=0, end_time=1.0, seq=1)
    for _ in range(5000):
        v = value(rng)
        if rng.random() < 0.3:
            v = (completion, v) if rng.random() < 0.5 else {"c": completion, "v": [v, (v,)]}
        new, old = wire._plain(v), old_plain(v)
        assert new == old and type(new) is type(old)
        assert new is not v or type(v) in wire._SCALARS  # containers are copies, as before
