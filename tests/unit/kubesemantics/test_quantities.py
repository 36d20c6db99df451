"""Our quantity parser against the Kubernetes client's: equal where valid, stricter elsewhere."""

from decimal import Decimal
from fractions import Fraction

import pytest
from kubernetes.utils import parse_quantity as client_parse_quantity

from agent.descheduler.cache.projection import fast_amount
from agent.kubesemantics import quantities
from agent.kubesemantics.quantities import MAX_LENGTH, parse_quantity, quantity_to_bytes

VALID = [
    pytest.param("512Mi", id="binary"),
    pytest.param("1G", id="decimal-suffix"),
    pytest.param("100m", id="milli"),
    pytest.param("1.5Gi", id="fraction-binary"),
    pytest.param("0.5m", id="fraction-milli"),
    pytest.param("1n", id="nano"),
    pytest.param("1E", id="exa-not-exponent"),
    pytest.param("1e3", id="exponent"),
    pytest.param("1E3", id="exponent-capital"),
    pytest.param("1e-3", id="negative-exponent"),
    pytest.param("-1Gi", id="negative"),
    pytest.param("+1k", id="plus-sign"),
    pytest.param(".5", id="leading-dot"),
    pytest.param("5.", id="trailing-dot"),
    pytest.param("123456789012345678901234567890", id="thirty-digits"),
    pytest.param("8Ei", id="largest-suffix"),
]


@pytest.mark.parametrize("text", VALID)
def test_both_parsers_agree_exactly_on_valid_quantities(text: str) -> None:
    """On quantities the API server accepts, ours equals the client's value exactly."""
    assert parse_quantity(text) == Fraction(client_parse_quantity(text))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("NaN", id="nan"),
        pytest.param("Infinity", id="infinity"),
        pytest.param("1K", id="capital-k"),
        pytest.param("1e3Ki", id="exponent-and-suffix"),
        pytest.param("1_000", id="underscores"),
    ],
)
def test_ours_rejects_what_the_api_server_rejects_and_the_client_accepts(text: str) -> None:
    """Forms the API server refuses are config errors here, though the client parses them."""
    client_parse_quantity(text)  # no error there: the reason we keep our own
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1.0000000000000000000000000001Ei", id="29-significant-digits"),
        pytest.param("999999999999999999999999999999Ei", id="30-digit-count-of-Ei"),
    ],
)
def test_ours_stays_exact_where_the_client_rounds(text: str) -> None:
    """Decimal's 28-digit context rounds these; our byte count keeps every digit."""
    number, suffix = text[:-2], 2**60
    exact = Fraction(Decimal(number)) * suffix
    assert parse_quantity(text) == exact
    assert Fraction(client_parse_quantity(text)) != exact
    assert quantity_to_bytes(text) == -((-exact.numerator) // exact.denominator)


def test_a_yaml_float_is_taken_as_written() -> None:
    """0.1 from YAML is one tenth here, the client reads its binary expansion."""
    assert parse_quantity(0.1) == Fraction(1, 10)
    assert Fraction(client_parse_quantity(0.1)) != Fraction(1, 10)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\u0661\u0660\u0660m", id="arabic-indic-digits"),
        pytest.param("1\u0660", id="one-arabic-indic-zero"),
        pytest.param("\uff11Gi", id="fullwidth-digit"),
        pytest.param("1e\u0663", id="arabic-indic-exponent"),
        pytest.param("1.\u0665", id="arabic-indic-decimal"),
        pytest.param("1 00", id="inner-space"),
        pytest.param("1 Gi", id="space-before-the-suffix"),
        pytest.param("1\u00a0Gi", id="inner-no-break-space"),
        pytest.param("\x1c1", id="a-separator-go-does-not-trim"),
    ],
)
def test_only_ascii_digits_and_no_inner_whitespace(text: str) -> None:
    """The API server's scanner reads '0'-'9' only and trims only the ends: Python's
    ``\\d``, ``int()`` and ``Decimal`` take any Unicode digit (Arabic-Indic "100m" was 100m)."""
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(text)


@pytest.mark.parametrize("text", [" 100m", "100m\n", "\u3000100m\t", "\u2028100m\u0085"])
def test_whitespace_at_the_ends_is_trimmed_as_the_api_server_trims_it(text: str) -> None:
    """``Quantity.UnmarshalJSON`` trims ``unicode.IsSpace`` from both ends before parsing."""
    assert parse_quantity(text) == Fraction(1, 10)


def test_a_quantity_longer_than_the_limit_is_refused_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """800,000 digits (a 0.9 MB file) took 18 s of exact arithmetic, quadratic in the
    digits: anything over ``MAX_LENGTH`` characters is refused before ``Decimal`` (or the
    pattern) sees it, so parsing costs at most what 100 characters cost."""

    def no_decimal(text: str) -> Decimal:
        raise AssertionError(f"parsed {len(text)} characters")

    monkeypatch.setattr(quantities, "Decimal", no_decimal)
    for text in ("1" * 800_000, "0." + "1" * 800_000, "1" * (MAX_LENGTH + 1)):
        with pytest.raises(ValueError, match=f"longer than {MAX_LENGTH} characters"):
            parse_quantity(text)
    assert fast_amount("1" * 800_000, millis=True) is None  # left to the exact path: refused


def test_the_longest_quantity_allowed_still_parses() -> None:
    """``MAX_LENGTH`` characters of a valid quantity parse exactly (zeros written by hand)."""
    text = "0" * (MAX_LENGTH - 3) + "1Mi"
    assert len(text) == MAX_LENGTH
    assert parse_quantity(text) == 2**20
