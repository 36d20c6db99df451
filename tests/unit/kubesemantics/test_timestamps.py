"""API timestamps: one formatter and one parser for events, annotations and state files."""

import pytest

from agent.kubesemantics.timestamps import parse_rfc3339, rfc3339


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-02T03:04:05Z", 1704164645.0),
        ("2024-01-02T03:04:05.123456789Z", 1704164645.123456),  # Go's RFC3339Nano
        ("2024-01-02T04:04:05+01:00", 1704164645.0),
    ],
)
def test_rfc3339_parsing(text: str, expected: float) -> None:
    """RFC 3339 with Z, offsets and nanosecond fractions parses to Unix seconds."""
    assert parse_rfc3339(text) == pytest.approx(expected)


def test_rfc3339_round_trips_microseconds() -> None:
    """What we write parses back to the same instant."""
    assert parse_rfc3339(rfc3339(1234.5, micros=True)) == 1234.5


def test_seconds_form_is_what_metav1_time_writes() -> None:
    """Without micros the form is metav1.Time's: whole seconds and a Z."""
    assert rfc3339(1_700_000_000.9) == "2023-11-14T22:13:20Z"


def test_times_without_a_zone_are_refused() -> None:
    """A timestamp with no zone is ambiguous, so it is an error."""
    with pytest.raises(ValueError, match="no time zone"):
        parse_rfc3339("2024-01-02T03:04:05")
