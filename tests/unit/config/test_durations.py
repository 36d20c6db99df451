"""Go-style durations and Kubernetes quantities, as kubelet configs spell them."""

from fractions import Fraction

import pytest

from agent.config.durations import format_duration, parse_duration
from agent.kubesemantics.quantities import (
    format_bytes,
    parse_quantity,
    quantity_to_bytes,
    quantity_to_millis,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("0s", 0.0),
        ("30s", 30.0),
        ("1m30s", 90.0),
        ("1h", 3600.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("2m0.5s", 120.5),
        ("100us", 0.0001),
    ],
)
def test_parse_duration_accepts_go_forms(text: str, seconds: float) -> None:
    """Every form time.ParseDuration accepts for positive values parses to seconds."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "s", "1x", "1m 30s", "-5s", "1.2.3s", "m1"])
def test_parse_duration_rejects_malformed(text: str) -> None:
    """Anything that is not a Go duration is refused with ValueError."""
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (0.5, "500ms"), (30, "30s"), (90, "1m30s"), (3661, "1h1m1s")]
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    """Durations print the way Go prints them, and parse back to the same value."""
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "exact"),
    [
        ("1Gi", Fraction(2**30)),
        ("512Mi", Fraction(512 * 2**20)),
        ("1G", Fraction(10**9)),
        ("100m", Fraction(1, 10)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1e3", Fraction(1000)),
        (1024, Fraction(1024)),
        ("0", Fraction(0)),
    ],
)
def test_parse_quantity_is_exact(value: str | int, exact: Fraction) -> None:
    """Quantities parse to exact fractions, binary and decimal suffixes alike."""
    assert parse_quantity(value) == exact


@pytest.mark.parametrize("value", ["", "1Gb", "Gi", "1 Gi", "1e3Mi", True])
def test_parse_quantity_rejects_malformed(value: object) -> None:
    """Malformed quantities raise ValueError instead of guessing."""
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(value)  # type: ignore[arg-type]


def test_bytes_and_millis_round_up_like_the_api_server() -> None:
    """Fractional bytes and millicores round up, as resource.Quantity's Value() does."""
    assert quantity_to_bytes("100m") == 1
    assert quantity_to_bytes("1Ki") == 1024
    assert quantity_to_millis("0.0001") == 1
    assert quantity_to_millis("250m") == 250


def test_format_bytes_uses_binary_units() -> None:
    """Whole units print bare, others with one decimal; small values stay bytes."""
    assert [format_bytes(v) for v in (2**30, 3 * 2**29, 512 * 2**20, 12)] == [
        "1Gi",
        "1.5Gi",
        "512Mi",
        "12",
    ]
