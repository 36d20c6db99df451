"""Node-wide CPU, memory, swap and pressure counters from ``/proc`` (the host's, injectable).

- CPU: the ``cpu`` line of ``/proc/stat``; busy = all time but ``idle`` and ``iowait``
  (guest time is already inside ``user``/``nice``, so it is left out of the sum). A rate
  needs two samples (``agent.report.rates``). Capacity is the number of ``cpuN`` lines.
- Memory working set: ``MemTotal - MemAvailable`` from ``/proc/meminfo``. metrics-server
  reports the root cgroup's working set instead; ``MemAvailable`` is the kernel's own
  estimate of what can be had without swapping, which is what a descheduler weighs, and
  it exists on cgroup v1 and v2 alike.
- Swap: ``SwapTotal - SwapFree``.
- Pressure: ``avg10`` of ``some`` and ``full`` for cpu, memory and io from
  ``/proc/pressure`` (absent on kernels without PSI, or with ``psi=0``: then empty).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.node.paths import HostPaths, read_text

PRESSURE_RESOURCES = ("cpu", "memory", "io")


@dataclass(frozen=True)
class NodeCounters:
    cpus: int
    cpu_busy_ticks: int
    cpu_total_ticks: int
    memory_total: int
    memory_available: int
    swap_total: int
    swap_free: int
    pressure: dict[str, dict[str, float]] = field(default_factory=dict)
    """``{"cpu": {"some": avg10, "full": avg10}, ...}`` for the resources that have it."""

    @property
    def memory_working_set(self) -> int:
        return max(0, self.memory_total - self.memory_available)

    @property
    def swap_used(self) -> int:
        return max(0, self.swap_total - self.swap_free)


def parse_proc_stat(text: str) -> tuple[int, int, int]:
    """``(cpus, busy ticks, total ticks)`` from ``/proc/stat``."""
    cpus, busy, total = 0, 0, 0
    for line in text.splitlines():
        name, *values = line.split()
        if name == "cpu":
            ticks = [int(value) for value in values[:8]]
            ticks += [0] * (8 - len(ticks))
            total = sum(ticks)
            busy = total - ticks[3] - ticks[4]
        elif name.startswith("cpu") and name[3:].isdigit():
            cpus += 1
    return cpus, busy, total


def parse_meminfo(text: str) -> dict[str, int]:
    """Bytes by key (``kB`` values scaled)."""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if parts[1:] == ["kB"] else 1
            values[key.strip()] = int(parts[0]) * scale
    return values


def parse_pressure(text: str) -> dict[str, float]:
    """``{"some": avg10, "full": avg10}`` from one ``/proc/pressure/<resource>`` file."""
    values = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        for item in fields:
            key, _, value = item.partition("=")
            if key == "avg10" and kind in ("some", "full"):
                try:
                    values[kind] = float(value)
                except ValueError:
                    continue
    return values


def read_node_counters(paths: HostPaths) -> NodeCounters:
    """One sample; ``OSError`` when ``/proc/stat`` or ``/proc/meminfo`` cannot be read."""
    stat = read_text(paths.proc / "stat")
    meminfo = read_text(paths.proc / "meminfo")
    if stat is None or meminfo is None:
        raise OSError(f"cannot read {paths.proc}/stat or {paths.proc}/meminfo")
    cpus, busy, total = parse_proc_stat(stat)
    memory = parse_meminfo(meminfo)
    pressure = {}
    for resource in PRESSURE_RESOURCES:
        text = read_text(paths.proc / "pressure" / resource)
        if text is not None and (parsed := parse_pressure(text)):
            pressure[resource] = parsed
    mem_total = memory.get("MemTotal", 0)
    return NodeCounters(
        cpus=cpus,
        cpu_busy_ticks=busy,
        cpu_total_ticks=total,
        memory_total=mem_total,
        memory_available=memory.get("MemAvailable", memory.get("MemFree", mem_total)),
        swap_total=memory.get("SwapTotal", 0),
        swap_free=memory.get("SwapFree", 0),
        pressure=pressure,
    )
