"""Kubernetes resource quantities (``512Mi``, ``1G``, ``100m``), parsed exactly.

Swap limits are byte counts that must match kubelet's integer arithmetic, so quantities
become ``Fraction``/``int`` values, never floats.

Why not ``kubernetes.utils.parse_quantity``, which ships with the client we depend on? On
every quantity the API server accepts, the two agree exactly (tests/unit/kubesemantics pins it
on a table), but the client's version differs where it matters here:

- it computes in ``Decimal`` with the default 28-digit context, so a quantity with more
  significant digits (``1.0000000000000000000000000001Ei``) is rounded; byte limits must not be;
- it accepts what the API server rejects (``NaN``, ``Infinity``, ``1K``, ``1e3Ki``,
  ``1_000``), and a config file that kubelet or the API server would refuse must be refused
  here too, with the field's path;
- it reads a YAML float through its binary expansion (``0.1`` becomes 0.1000000000000000055…),
  where we take the number as written;
- this module is below every layer (``agent.kubesemantics``: the config parses its sizes with
  it), and only ``agent.kube`` may import the Kubernetes client (an import contract).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
MAX_EXPONENT = 40
"""Decimal exponents beyond +-40 are refused: no resource comes near 1e40 of its unit, and an
exponent of millions would make the exact arithmetic below take minutes."""
MAX_LENGTH = 100
"""Longer quantities are refused before they are parsed. The API server has no length limit of
its own, but it stores every quantity in its canonical form: at most the 19 digits of an
int64 and 9 decimals, a sign and a suffix (under 40 characters), so nothing read from it is
longer. 100 leaves room for zeros written by hand, and keeps the exact arithmetic (quadratic
in the digits: 800,000 of them took 18 s) to a bounded cost."""
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)\Z"
)
"""ASCII digits only (``\\d`` and ``Decimal`` would take any Unicode digit, Arabic-Indic
``100m`` too), no inner whitespace or underscores."""
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""What Go's ``strings.TrimSpace`` trims (``unicode.IsSpace``): the API server trims it from
both ends of a quantity before parsing it (``Quantity.UnmarshalJSON``)."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a quantity, or raise ``ValueError``; a string is checked for
    its length (``MAX_LENGTH``) before anything else reads it."""
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")  # noqa: TRY004 - config input, reported as a value error
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"invalid quantity {value!r}: not finite")
        return Fraction(Decimal(repr(value)))
    if len(value) > MAX_LENGTH:
        raise ValueError(f"invalid quantity {value[:20]!r}...: longer than {MAX_LENGTH} characters")
    match = _QUANTITY.match(value.strip(_GO_SPACE))
    if match is None:
        raise ValueError(f"invalid quantity {value!r} (expected a form like 512Mi, 1G, 100m)")
    number, suffix = match.groups()
    if suffix and ("e" in number.lower()):
        raise ValueError(f"invalid quantity {value!r}: exponent and suffix together")
    try:
        decimal = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"invalid quantity {value!r}") from error
    if decimal and not -MAX_EXPONENT <= decimal.adjusted() <= MAX_EXPONENT:
        # ``Fraction`` would build the power of ten exactly: 1e400000000 would take minutes.
        raise ValueError(f"invalid quantity {value!r}: out of range")
    return Fraction(decimal) * _SUFFIX[suffix]


def whole_bytes(exact: Fraction) -> int:
    """Bytes are whole: round up like the API server's ``Quantity.Value()`` does."""
    return -((-exact.numerator) // exact.denominator)


def quantity_to_bytes(value: str | int | float) -> int:
    return whole_bytes(parse_quantity(value))


def format_bytes(value: int) -> str:
    """Binary units for people: ``4Gi``, ``1.5Gi``, ``512Mi``; small values stay bytes."""
    for unit, size in (
        ("Ei", 2**60),
        ("Pi", 2**50),
        ("Ti", 2**40),
        ("Gi", 2**30),
        ("Mi", 2**20),
        ("Ki", 2**10),
    ):
        if abs(value) >= size:
            amount = value / size
            return f"{amount:.0f}{unit}" if value % size == 0 else f"{amount:.1f}{unit}"
    return str(value)


def quantity_to_millis(value: str | int | float) -> int:
    """CPU in millicores, rounded up like ``MilliValue()``."""
    exact = parse_quantity(value) * 1000
    return -((-exact.numerator) // exact.denominator)
