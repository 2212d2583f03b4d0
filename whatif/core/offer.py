"""The what-if form's fields, read from configuration A's files, and B made from the
values posted for them.

Field names are positional (``power.SuspendTime``, ``layer.3``, ``limit.qos.0.GrpTRES``):
a layer's or an account's name may hold any text, so names never go into a field name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from whatif.core import changes
from whatif.core.changes import ChangeError, Files

Apply = Callable[[Files, str], dict[str, str]]


@dataclass(frozen=True)
class Offer:
    key: str  # the form field's name
    group: str  # power | layers | qos | accounts
    label: str
    value: str  # A's value, "" when unset
    apply: Apply
    row: str = ""  # the table row (a QOS' or an account's name) for limits
    column: str = ""


def _layer(resource: str, layer: str, files: Files, value: str) -> dict[str, str]:
    try:
        count = int(value)
    except ValueError:
        raise ChangeError(f"{resource}/{layer}: count must be a whole number, not {value!r}") from None
    return changes.set_layer_count(files, resource, layer, count)


def _conf(key: str, files: Files, value: str) -> dict[str, str]:
    return changes.set_conf_key(files, key, value)


def _limit(kind: str, name: str, column: str, files: Files, value: str) -> dict[str, str]:
    return changes.set_limit(files, kind, name, column, value)


def offers(files: Files) -> list[Offer]:
    out = [
        Offer(f"power.{key}", "power", key, changes.conf_value(files, key) or "", partial(_conf, key))
        for key in changes.POWER_KEYS
    ]
    for i, (resource, layer, count) in enumerate(changes.layer_counts(files)):
        out.append(
            Offer(
                f"layer.{i}", "layers", f"{resource} / {layer}", str(count), partial(_layer, resource, layer)
            )
        )
    limits = changes.dump_limits(files)
    rows = {"QOS": 0, "Account": 0}
    for (kind, name), opts in limits.items():
        if kind == "Account" and name == "root":
            continue
        columns = changes.QOS_LIMITS if kind == "QOS" else changes.ACCOUNT_LIMITS
        group = "qos" if kind == "QOS" else "accounts"
        i = rows[kind]
        rows[kind] += 1
        for column in columns:
            out.append(
                Offer(
                    f"limit.{group}.{i}.{column}",
                    group,
                    f"{kind} {name} {column}",
                    opts.get(column.lower(), ""),
                    partial(_limit, kind, name, column),
                    row=name,
                    column=column,
                )
            )
    return out


def make_b(files: Files, posted: Mapping[str, str]) -> tuple[dict[str, str], list[list[str]], list[str]]:
    """B's files from A's and the posted values; the changes ``[label, A, B]``; the errors."""
    out = dict(files)
    done: list[list[str]] = []
    errors: list[str] = []
    for offer in offers(files):
        value = posted.get(offer.key)
        if value is None:
            continue
        value = value.strip()
        if value == offer.value:
            continue
        try:
            out = offer.apply(out, value)
        except ChangeError as exc:
            errors.append(str(exc))
            continue
        done.append([offer.label, offer.value, value])
    return out, done, errors
