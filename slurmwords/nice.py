"""A job's nice (``sbatch --nice[=adjustment]``, ``scontrol update Nice=``), shared by the
CLI and the controller.

Slurm stores nice offset by NICE_OFFSET (2**31) in an unsigned 32-bit field and accepts
adjustments within +/- (NICE_OFFSET - 3); ``--nice`` without a value means 100
(sbatch(1)).  Only an operator may give a negative one.
"""

from __future__ import annotations

MAX_NICE = 2**31 - 3  # 2147483645: NICE_OFFSET - 3, sbatch's bound
DEFAULT_NICE = 100  # sbatch --nice with no adjustment
OUT_OF_RANGE = f"Invalid --nice value, out of range (+/- {MAX_NICE})"
# ESLURM_INVALID_NICE: what slurmctld answers a non-operator's negative nice at submission.
INVALID_NICE = "Invalid --nice value"

# Beyond this many characters a number is surely out of range: refused before int() reads it.
_MAX_TEXT = 64


def parse_nice(value: object) -> int:
    """The adjustment of an integer, or of text holding one; ValueError with the message
    sbatch prints otherwise.

    Slurm reads the text with strtoll and takes what does not parse as 0; here it is
    refused instead, naming the value, so a typo does not submit a job of another nice.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{INVALID_NICE}: {value!r}")
    if isinstance(value, str):
        # An optional sign and ASCII digits (no re: sbatch's start-up does without it).
        digits = value.strip()
        digits = digits[1:] if digits[:1] in ("+", "-") else digits
        if len(value) > _MAX_TEXT or not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"{INVALID_NICE}: {value[:_MAX_TEXT]}")
        if len(digits.lstrip("0")) > 12:
            raise ValueError(OUT_OF_RANGE)
        value = int(value)
    if abs(value) > MAX_NICE:
        raise ValueError(OUT_OF_RANGE)
    return value
