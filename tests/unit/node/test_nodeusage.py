"""The node's counters as /proc gives them: cpu ticks, meminfo bytes, pressure."""

from __future__ import annotations

from agent.node.nodeusage import parse_meminfo, parse_pressure, parse_proc_stat

STAT = """cpu  100 0 50 800 50 0 0 0 0 0
cpu0 50 0 25 400 25 0 0 0 0 0
cpu1 50 0 25 400 25 0 0 0 0 0
intr 12345
"""


def test_proc_stat_busy_excludes_idle_and_iowait() -> None:
    """Busy time is everything but idle and iowait; capacity is the number of cpuN lines."""
    assert parse_proc_stat(STAT) == (2, 150, 1000)


def test_meminfo_and_pressure_parse() -> None:
    """meminfo values are bytes; PSI gives avg10 of some and full."""
    assert parse_meminfo("MemTotal: 4 kB\nHugePages_Total: 0\n") == {
        "MemTotal": 4096,
        "HugePages_Total": 0,
    }
    text = (
        "some avg10=1.50 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.25 avg60=0 avg300=0 total=2\n"
    )
    assert parse_pressure(text) == {"some": 1.5, "full": 0.25}
