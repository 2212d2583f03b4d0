"""``--constraint``'s feature expressions, read into the alternatives a node may satisfy
(pure: no Django, no clock).

What fsched takes of Slurm's grammar (sbatch(1), --constraint): a feature name, ``&``
(AND), ``|`` (OR, each node satisfying any alternative) and parentheses to group, ``&``
binding tighter than ``|``: ``(rack1|rack2)&fast`` is ``rack1&fast | rack2&fast``. The
result is a disjunction of feature sets. Slurm's other forms, matching OR in brackets
(``[rack1|rack2]``: every node the same alternative), counts (``gpu*2``) and ``!``, are
refused with :class:`ConstraintError` naming them, rather than read as something else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Slurm's message for a feature no node has, or an expression it cannot read.
INVALID = "Invalid feature specification"
MAX_ALTERNATIVES = 256  # a product of ORs grows fast: past this, the request is refused
_NAME = re.compile(r"[A-Za-z0-9_.:+\-]+")
_UNSUPPORTED = {
    "[": "matching OR ([...])",
    "]": "matching OR ([...])",
    "*": "feature counts (*N)",
    "!": "NOT (!)",
}

Alternatives = tuple[frozenset[str], ...]


class ConstraintError(ValueError):
    pass


def parse(expr: str) -> Alternatives:
    """The alternatives of ``expr`` (``()``: no constraint); ConstraintError if refused."""
    tokens = _tokens(expr)
    if not tokens:
        return ()
    parser = _Parser(tokens)
    result = parser.either()
    if parser.pos != len(tokens):
        raise ConstraintError(f"{INVALID}: unexpected {tokens[parser.pos]!r}")
    return tuple(dict.fromkeys(result))


def unknown_features(alternatives: Alternatives, known: Iterable[str]) -> list[str]:
    """The features no node has (``known``: every node's), sorted."""
    have = set(known)
    return sorted({f for alt in alternatives for f in alt} - have)


def _tokens(expr: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(expr):
        char = expr[i]
        if char.isspace():
            i += 1
        elif char in "&|()":
            out.append(char)
            i += 1
        elif match := _NAME.match(expr, i):
            out.append(match.group())
            i = match.end()
        elif char in _UNSUPPORTED:
            raise ConstraintError(f"{INVALID}: {_UNSUPPORTED[char]} is not supported by fsched")
        else:
            raise ConstraintError(f"{INVALID}: unexpected {char!r}")
    return out


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def either(self) -> list[frozenset[str]]:
        result = self.both()
        while self._peek() == "|":
            self.pos += 1
            result = result + self.both()
        return result

    def both(self) -> list[frozenset[str]]:
        result = self.atom()
        while self._peek() == "&":
            self.pos += 1
            right = self.atom()
            result = [a | b for a in result for b in right]
            if len(result) > MAX_ALTERNATIVES:
                raise ConstraintError(f"{INVALID}: more than {MAX_ALTERNATIVES} alternatives")
        return result

    def atom(self) -> list[frozenset[str]]:
        word = self._peek()
        if word is None:
            raise ConstraintError(f"{INVALID}: a feature name is missing at the end")
        self.pos += 1
        if word == "(":
            inner = self.either()
            if self._peek() != ")":
                raise ConstraintError(f"{INVALID}: ')' is missing")
            self.pos += 1
            return inner
        if not _NAME.fullmatch(word):
            raise ConstraintError(f"{INVALID}: a feature name is missing before {word!r}")
        return [frozenset({word})]
