"""JSON objects as frozen dataclasses, checked against their annotations, pure.

A :class:`Record` is one JSON object: ``to_wire()`` gives the dict that is sent,
``from_wire(dict)`` checks a received one field by field and builds the record, or raises
:class:`MessageError` naming the message type and the field. A :class:`Message` is a
record with a ``type`` key. The peer at the other end of a websocket is not trusted to be
well-formed (a bug, another release, someone who stole a key): nothing it sends is read
before it has been checked here.

Field rules, read from the annotations:

* ``int``, ``float`` (an int is accepted: JSON has one number type), ``str``, ``bool``,
  ``list[T]``, ``dict[str, T]``, a nested Record, ``Any`` (whatever JSON holds);
* ``T | None`` without a default: the key must be there, its value may be null;
* a default of ``None``: the key may be left out, and ``to_wire`` leaves it out when the
  value is None. Absent is not the same as zero (a completion without ``run`` is of the
  job's current run), so such fields are not given a value the sender never sent;
* keys a record does not know are ignored, so that a newer peer may add one.

A bool is never taken for a number (``True`` is an ``int`` in Python, not on the wire).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, Self


class MessageError(ValueError):
    """A received message that is not what its type says: which type, which field, why."""

    def __init__(self, message_type: str, field: str, problem: str) -> None:
        super().__init__(f"{message_type + ' ' if message_type else ''}message: {field} {problem}")
        self.message_type = message_type
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class _Field:
    name: str
    type: Any
    required: bool
    omitted_when_none: bool


_fields_of: dict[type, tuple[_Field, ...]] = {}


def _described(cls: type) -> tuple[_Field, ...]:
    # Resolved once per class: the annotations are strings (postponed evaluation), and the
    # controller decodes every message an agent sends.
    described = _fields_of.get(cls)
    if described is None:
        hints = typing.get_type_hints(cls)
        described = tuple(
            _Field(
                f.name,
                hints[f.name],
                required=f.default is MISSING and f.default_factory is MISSING,
                omitted_when_none=f.default is None,
            )
            for f in fields(cls)  # type: ignore[arg-type]
        )
        _fields_of[cls] = described
    return described


# Values that go on the wire as they are. Tested by exact type, before any isinstance: a
# launch carries the job's environment (a hundred strings and more), once as the job's
# wire form and again inside the message, and each string cost a call and three
# isinstance tests.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Record):
        return value.to_wire()
    if isinstance(value, list | tuple):
        return [v if type(v) in _SCALARS else _plain(v) for v in value]
    if isinstance(value, dict):
        return {k: v if type(v) in _SCALARS else _plain(v) for k, v in value.items()}
    return value


class Record:
    """One JSON object; subclasses are frozen dataclasses."""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        for f in _described(type(self)):
            value = getattr(self, f.name)
            if value is None and f.omitted_when_none:
                continue
            wire[f.name] = _plain(value)
        return wire

    @classmethod
    def from_wire(cls, wire: object) -> Self:
        return cls._read(wire, cls.__name__, "")

    @classmethod
    def _read(cls, wire: object, kind: str, path: str) -> Self:
        if not isinstance(wire, dict):
            raise MessageError(kind, path or "the message", f"must be an object, not {_what(wire)}")
        values: dict[str, Any] = {}
        for f in _described(cls):
            name = f"{path}.{f.name}" if path else f.name
            value = wire.get(f.name)
            if f.name not in wire or (value is None and f.omitted_when_none):
                if f.required:
                    raise MessageError(kind, name, "is missing")
                continue
            values[f.name] = _checked(f.type, value, kind, name)
        record = cls(**values)
        record.check(kind)
        return record

    def check(self, kind: str) -> None:
        """What the field types cannot say (one field or another); raises MessageError."""


class Message(Record):
    """A record sent with ``"type": TYPE``."""

    TYPE: ClassVar[str]

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.TYPE, **super().to_wire()}

    @classmethod
    def from_wire(cls, wire: object) -> Self:
        if isinstance(wire, dict) and wire.get("type") != cls.TYPE:
            raise MessageError(cls.TYPE, "type", f"must be {cls.TYPE!r}, not {_what(wire.get('type'))}")
        return cls._read(wire, cls.TYPE, "")


def decode(wire: object, registry: Mapping[str, type[Message]]) -> Message:
    """The message ``wire`` is, by its type among ``registry``; MessageError if none or malformed."""
    if not isinstance(wire, dict):
        raise MessageError("", "the message", f"must be an object, not {_what(wire)}")
    kind = wire.get("type")
    if not isinstance(kind, str):
        problem = "is missing" if kind is None else f"must be a string, not {_what(kind)}"
        raise MessageError("", "type", problem)
    cls = registry.get(kind)
    if cls is None:
        raise MessageError(kind, "type", "is unknown (not a message expected here)")
    return cls.from_wire(wire)


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _what(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"{_NAMES.get(type(value), type(value).__name__)} ({value!r:.40})"


@dataclass(frozen=True)
class _Shape:
    """What ``_checked`` needs of an annotation, worked out once per annotation."""

    origin: Any
    args: tuple[Any, ...]
    choices: tuple[Any, ...]  # a union's members other than None
    optional: bool  # a union with None
    # list[T] or dict[str, T] whose T is one exact type (int, str, bool) a value either is
    # or fails: items are checked in one pass, the usual way only when one fails.
    plain_items: type | None


_shapes: dict[Any, _Shape] = {}


def _shape(tp: Any) -> _Shape:
    shape = _shapes.get(tp)
    if shape is None:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        choices = tuple(t for t in args if t is not type(None))
        item = args[-1] if origin in (list, dict) else None
        shape = _Shape(
            origin=origin,
            args=args,
            choices=choices,
            optional=len(choices) < len(args),
            plain_items=item if item in (int, str, bool) else None,
        )
        _shapes[tp] = shape
    return shape


def _checked(tp: Any, value: Any, kind: str, name: str) -> Any:
    if tp is Any:
        return value
    shape = _shape(tp)
    origin = shape.origin
    if origin in (types.UnionType, typing.Union):
        choices = shape.choices
        if value is None and shape.optional:
            return None
        for choice in choices[:-1]:
            try:
                return _checked(choice, value, kind, name)
            except MessageError:
                continue
        return _checked(choices[-1], value, kind, name)
    if origin is list:
        if not isinstance(value, list):
            raise MessageError(kind, name, f"must be a list, not {_what(value)}")
        (item,) = shape.args
        if shape.plain_items is not None and all(type(v) is item for v in value):
            return list(value)
        return [_checked(item, v, kind, f"{name}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise MessageError(kind, name, f"must be an object, not {_what(value)}")
        _, item = shape.args
        if shape.plain_items is not None and all(type(v) is item for v in value.values()):
            return dict(value)
        return {k: _checked(item, v, kind, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp._read(value, kind, name)
    ok = (int, float) if tp is float else tp
    if (isinstance(value, bool) and tp is not bool) or not isinstance(value, ok):
        raise MessageError(kind, name, f"must be {_NAMES[tp]}, not {_what(value)}")
    return value
