"""C's number readers as Slurm's commands use them on their arguments, so that fsched
takes the same words (``12_3`` is 12, ``x`` is 0)."""


def atoi(text: str) -> int:
    """C's atoi: leading blanks, a sign, the digits that follow; 0 without any."""
    s = text.lstrip(" \t\n\v\f\r")
    sign = -1 if s[:1] == "-" else 1
    s = s[1:] if s[:1] in "+-" else s
    digits = s[: len(s) - len(s.lstrip("0123456789"))]
    return sign * int(digits) if digits else 0
