"""License requests that may name hierarchical resources, pure.

``-L/--license`` of a job::

    flat:2,natural:1           several licenses, all needed (count 1 when omitted)
    power:1000                 a Mode 3 resource: 1000 per node
    power:full_node            an HRES variable of resources.yaml names the amount
    qpu:1[mode=fast,shots=1000]  plugin arguments of an HRES, after the count
    fluent:2|ansys:1           either one: plain licenses only

and ``licenses=`` of a reservation, where an HRES names its layer::

    natural(low1):30,flat(low2):4,fluent:2

Rules (Slurm's hres.html, "Plugin Arguments", "Mode 3", "Limitations"): arguments are
``name=value`` pairs without whitespace, each name once, one set per resource, only on an
HRES and never in a reservation or with ``|``; an HRES cannot be part of a ``|`` request;
a job or a reservation names at most one Mode 3 resource; a name is requested once.
A variable is resolved when the request is parsed, so the request carries numbers: what
``Licenses=`` shows and what the layers are asked for (see :func:`parse_license_request`).
``--resources`` (Slurm 25.11's option for hierarchical resources) takes the same grammar,
for hierarchical resources only (:func:`parse_resources_request`, :func:`combine`).
Every error is a ``ValueError`` whose message says what is wrong with which item.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from slurmwords.hostlists import split_top

# The characters of a cluster license name (cluster.core.jobspec) — HRES names are a subset.
# The count may be a variable's name (the characters of resources.yaml names).
_ITEM_RE = re.compile(
    r"^(?P<name>[A-Za-z0-9_.\-/@]+)(?::(?P<count>[A-Za-z0-9_.\-]+))?(?:\[(?P<args>[^\[\]]*)\])?$"
)
_RESV_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.\-/@]+)(?:\((?P<layer>[^()]*)\))?(?::(?P<count>[0-9]+))?$")
_ARG_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_ARG_VALUE_RE = re.compile(r"^[^\s,=\[\]]+$")
_LAYER_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


class Mode(enum.IntEnum):
    """The planning mode of a hierarchical resource: how a request is checked against
    its layers."""

    MODE_1 = 1  # enough on one overlapping layer
    MODE_2 = 2  # enough on every overlapping layer
    MODE_3 = 3  # per node, summed up a tree

    @classmethod
    def parse(cls, value: object) -> Mode:
        if isinstance(value, str) and value.strip().upper() in cls.__members__:
            return cls[value.strip().upper()]
        raise ValueError(f"mode must be MODE_1, MODE_2 or MODE_3, not {value!r}")


@dataclass(frozen=True, slots=True)
class LicenseItem:
    """One requested license: ``count`` of ``name`` (per node for a Mode 3 resource)."""

    name: str
    count: int = 1
    args: tuple[tuple[str, str], ...] = ()  # plugin arguments, in the order given
    layer: str | None = None  # reservations only: the HRES layer reserved on

    def __str__(self) -> str:
        text = self.name if self.layer is None else f"{self.name}({self.layer})"
        text += f":{self.count}"
        if self.args:
            text += "[" + ",".join(f"{k}={v}" for k, v in self.args) + "]"
        return text


@dataclass(frozen=True, slots=True)
class LicenseRequest:
    items: tuple[LicenseItem, ...] = ()
    either: bool = False  # the ``a|b`` form: any one of the items

    def __str__(self) -> str:
        return ("|" if self.either else ",").join(str(i) for i in self.items)

    def hres(self, modes: Mapping[str, Mode]) -> tuple[LicenseItem, ...]:
        """The items that are hierarchical resources."""
        return tuple(i for i in self.items if i.name in modes)

    def plain(self, modes: Mapping[str, Mode]) -> tuple[LicenseItem, ...]:
        """The items that are cluster licenses."""
        return tuple(i for i in self.items if i.name not in modes)


def parse_args(text: str, item: str) -> tuple[tuple[str, str], ...]:
    """``mode=fast,shots=1000`` → (("mode", "fast"), ("shots", "1000"))."""
    if any(ch.isspace() for ch in text):
        raise ValueError(f"Invalid license specification {item}: plugin arguments may not contain whitespace")
    if not text:
        raise ValueError(f"Invalid license specification {item}: empty plugin arguments []")
    out: list[tuple[str, str]] = []
    for pair in text.split(","):
        name, eq, value = pair.partition("=")
        if not eq or not name or not value:
            raise ValueError(
                f"Invalid license specification {item}: plugin argument {pair!r} needs a name and a value"
            )
        if not _ARG_NAME_RE.match(name) or not _ARG_VALUE_RE.match(value):
            raise ValueError(f"Invalid license specification {item}: bad plugin argument {pair!r}")
        if any(n == name for n, _ in out):
            raise ValueError(f"Invalid license specification {item}: plugin argument {name} given twice")
        out.append((name, value))
    return tuple(out)


def _count(raw: str | None, item: str) -> int:
    if raw is None:
        return 1
    if not raw.isdigit():
        raise ValueError(f"Invalid license specification {item}: the count must be a number")
    count = int(raw)
    if count < 1:
        raise ValueError(f"Invalid license specification {item}: the count must be at least 1")
    return count


def _check_names(
    items: list[LicenseItem], hres: Mapping[str, Mode], plain: Collection[str] | None, what: str
) -> None:
    seen: set[str] = set()
    mode3: list[str] = []
    for it in items:
        if it.name in seen:
            raise ValueError(f"Invalid license specification: {it.name} requested twice")
        seen.add(it.name)
        if it.name not in hres and plain is not None and it.name not in plain:
            raise ValueError(f"Invalid license specification: unknown license {it.name}")
        if hres.get(it.name) == Mode.MODE_3:
            mode3.append(it.name)
    if len(mode3) > 1:
        raise ValueError(
            f"Invalid license specification: {what} may request only one Mode 3 resource, "
            f"not {', '.join(mode3)}"
        )


def _amount(
    raw: str | None,
    name: str,
    item: str,
    hres: Mapping[str, Mode],
    variables: Mapping[str, Mapping[str, int]],
) -> int:
    """The count of an item: a number, or the value of one of its resource's variables."""
    if raw is None or raw.isdigit():
        return _count(raw, item)
    if raw.startswith("-") and raw[1:].isdigit():
        raise ValueError(f"Invalid license specification {item}: the count must be at least 1")
    if name not in hres:
        raise ValueError(
            f"Invalid license specification {item}: the count must be a number ({name} is not a "
            "hierarchical resource, which alone has variables)"
        )
    known = variables.get(name, {})
    if raw not in known:
        listed = ", ".join(known) if known else "none"
        raise ValueError(
            f"Invalid license specification {item}: {name} has no variable {raw} (its variables: {listed})"
        )
    return _count(str(known[raw]), item)


def parse_license_request(
    text: str,
    *,
    hres: Mapping[str, Mode] | None = None,
    plain: Collection[str] | None = None,
    variables: Mapping[str, Mapping[str, int]] | None = None,
) -> LicenseRequest:
    """Parse a job's ``--license`` value.

    ``hres`` maps the configured HRES names to their modes (``HresConfig.modes()``);
    ``plain``, when given, is the set of cluster licenses, and any other name is refused.
    ``variables`` maps an HRES name to its ``variables`` (name -> value): a count naming
    one is replaced by its value, the amount per node in Mode 3 and the count in Modes 1
    and 2.  Resolved here, at submission, the stored request and ``Licenses=`` show the
    amount and the layers never see a name; a later change of the value in resources.yaml
    leaves submitted jobs as they were, as a count typed as a number would be.
    """
    hres = hres or {}
    variables = variables or {}
    text = text.strip()
    if not text:
        return LicenseRequest()
    commas = split_top(text, ",")
    pipes = split_top(text, "|")
    if len(commas) > 1 and len(pipes) > 1:
        raise ValueError(f"Invalid license specification {text}: use ',' or '|' between licenses, not both")
    either = len(pipes) > 1
    items: list[LicenseItem] = []
    for raw in pipes if either else commas:
        piece = raw.strip()
        if not piece:
            raise ValueError(f"Invalid license specification {text}: empty license name")
        match = _ITEM_RE.match(piece)
        if not match:
            raise ValueError(
                f"Invalid license specification {piece} (expected name[:count][[arg=value,...]])"
            )
        name = match.group("name")
        args = parse_args(match.group("args"), piece) if match.group("args") is not None else ()
        if args and name not in hres:
            raise ValueError(
                f"Invalid license specification {piece}: plugin arguments are only allowed on a "
                "hierarchical resource"
            )
        if either and name in hres:
            raise ValueError(
                f"Invalid license specification {text}: hierarchical resource {name} cannot be "
                "requested with the | form"
            )
        items.append(LicenseItem(name, _amount(match.group("count"), name, piece, hres, variables), args))
    _check_names(items, hres, plain, "a job")
    return LicenseRequest(tuple(items), either)


def parse_resources_request(
    text: str,
    *,
    hres: Mapping[str, Mode] | None = None,
    variables: Mapping[str, Mapping[str, int]] | None = None,
) -> LicenseRequest:
    """Parse a job's ``--resources`` value: the grammar of ``--license`` (counts,
    variables, plugin arguments), hierarchical resources only."""
    hres = hres or {}
    request = parse_license_request(text, hres=hres, variables=variables)
    for it in request.items:
        if it.name not in hres:
            raise ValueError(
                f"Invalid --resources specification {text.strip()}: {it.name} is not a hierarchical "
                "resource (request licenses with --licenses)"
            )
    return request


def combine(
    licenses: LicenseRequest, resources: LicenseRequest, *, hres: Mapping[str, Mode]
) -> LicenseRequest:
    """One job's ``--licenses`` and ``--resources`` as one request (what ``Licenses=`` shows)."""
    if not resources.items:
        return licenses
    if licenses.either:
        names = ", ".join(it.name for it in resources.items)
        raise ValueError(
            f"Invalid license specification {licenses}: hierarchical resource {names} cannot be "
            "requested with the | form"
        )
    items = [*licenses.items, *resources.items]
    _check_names(items, hres, None, "a job")
    return LicenseRequest(tuple(items))


def parse_reservation_licenses(
    text: str, *, hres: Mapping[str, Mode] | None = None, plain: Collection[str] | None = None
) -> tuple[LicenseItem, ...]:
    """Parse a reservation's ``licenses=``: an HRES must name its layer, ``natural(low1):30``."""
    hres = hres or {}
    text = text.strip()
    if not text:
        return ()
    if len(split_top(text, "|")) > 1:
        raise ValueError(f"Invalid license specification {text}: '|' is not allowed in a reservation")
    items: list[LicenseItem] = []
    for raw in split_top(text, ","):
        piece = raw.strip()
        if not piece:
            raise ValueError(f"Invalid license specification {text}: empty license name")
        if "[" in piece:
            raise ValueError(
                f"Invalid license specification {piece}: plugin arguments are not allowed in a reservation"
            )
        match = _RESV_RE.match(piece)
        if not match:
            raise ValueError(f"Invalid license specification {piece} (expected name[(layer)][:count])")
        name, layer = match.group("name"), match.group("layer")
        if name in hres:
            if not layer:
                raise ValueError(
                    f"Invalid license specification {piece}: name the layer of hierarchical resource "
                    f"{name}, as in {name}(LAYER):{match.group('count') or 1}"
                )
            if not _LAYER_RE.match(layer):
                raise ValueError(f"Invalid license specification {piece}: bad layer name {layer!r}")
        elif layer is not None:
            raise ValueError(f"Invalid license specification {piece}: {name} is not a hierarchical resource")
        items.append(LicenseItem(name, _count(match.group("count"), piece), (), layer))
    # A reservation may reserve several layers of one HRES; names repeat only that way.
    seen: set[tuple[str, str | None]] = set()
    mode3 = sorted({it.name for it in items if hres.get(it.name) == Mode.MODE_3})
    for it in items:
        key = (it.name, it.layer)
        if key in seen:
            where = f"{it.name}({it.layer})" if it.layer else it.name
            raise ValueError(f"Invalid license specification: {where} given twice")
        seen.add(key)
        if it.name not in hres and plain is not None and it.name not in plain:
            raise ValueError(f"Invalid license specification: unknown license {it.name}")
    if len(mode3) > 1:
        raise ValueError(
            "Invalid license specification: a reservation may request only one Mode 3 resource, "
            f"not {', '.join(mode3)}"
        )
    return tuple(items)


__all__ = [
    "LicenseItem",
    "LicenseRequest",
    "combine",
    "parse_args",
    "parse_license_request",
    "parse_reservation_licenses",
    "parse_resources_request",
]
