"""The number bounds every reader applies, in one place.

Inputs name counts, sizes, ports and PR numbers: no meaningful one exceeds 64 bits. A longer
integer is refused where it is read (YAML, JSON, TOML, a PR link), before Python's own
4,300-digit conversion limit turns it into a traceback, and before later arithmetic on it
(``range(n)``, products of sizes) hangs or overflows.
"""

from __future__ import annotations

import re

#: Largest integer any input may hold (SQLite's and every engine's 64-bit range).
MAX_INT = 2**63 - 1
#: Most digits an integer may be written with in JSON (64-bit integers have 19 or 20; leading
#: zeros and a sign leave room).
MAX_INT_DIGITS = 40
#: A run of more digits than any 64-bit integer needs, in text.
LONG_DIGITS = re.compile(f"[0-9]{{{MAX_INT_DIGITS + 1},}}")
#: The digits of a PR or issue number inside a larger pattern (at most 18: always within 64 bits).
NUMBER_ID = r"[1-9][0-9]{0,17}"


def int_in_range(value: int) -> bool:
    """Whether an integer is within the 64-bit range every input is held to."""
    return -MAX_INT <= value <= MAX_INT


def line_of_long_digits(text: str) -> int | None:
    """1-based line of the first over-long run of digits in ``text`` (None: there is none)."""
    m = LONG_DIGITS.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None
