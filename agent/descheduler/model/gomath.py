"""Go's arithmetic where a decision must come out as upstream's does.

Python's ``round`` goes to even on halves; Go's ``math.Round`` goes away from zero. Where
upstream rounds (a usage percentage in a log line, an EWMA of a node's usage), a half must
round Go's way or the same numbers classify a node differently.
"""

from __future__ import annotations

import math


def go_round(value: float) -> int:
    """Go's ``math.Round``: halves away from zero (Python's ``round`` goes to even)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))
