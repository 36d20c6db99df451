"""The numbers in cgroup files, parsed the one way every reader (usage, swap scan) uses.

Working set is the kubelet's (and cAdvisor's): usage minus the inactive file cache, with
v2's ``memory.current`` and ``inactive_file`` or v1's ``memory.usage_in_bytes`` and
``total_inactive_file``. On cgroup v1 swap in use is memory+swap minus memory
(``memory.memsw.usage_in_bytes - memory.usage_in_bytes``), where swap accounting is on.
"""

from __future__ import annotations

from agent.node.cgroupfiles import read_file

V1_USAGE = "memory.usage_in_bytes"
V1_MEMSW_USAGE = "memory.memsw.usage_in_bytes"
V1_STAT = "memory.stat"
V1_INACTIVE_FILE = "total_inactive_file"


def parse_int(text: str | None) -> int | None:
    """A file holding one non-negative number; ``None`` when missing or anything else."""
    value = (text or "").strip()
    return int(value) if value.isdigit() else None


def stat_field(text: str | None, key: str) -> int | None:
    """One ``key value`` line of a ``cpu.stat`` / ``memory.stat`` file (the first, if
    repeated). Found with ``str.find``, not by splitting: ``memory.stat`` has dozens of
    lines, read for every pod every few seconds."""
    if not text:
        return None
    prefix = f"{key} "
    if text.startswith(prefix):
        start = len(prefix)
    elif (at := text.find(f"\n{prefix}")) >= 0:
        start = at + 1 + len(prefix)
    else:
        return None
    end = text.find("\n", start)
    return parse_int(text[start:] if end < 0 else text[start:end])


def working_set(usage: int | None, inactive_file: int | None) -> int | None:
    if usage is None:
        return None
    return max(0, usage - (inactive_file or 0))


def read_v1_memory(directory_fd: int) -> tuple[int | None, int | None]:
    """``(working set, swap in use)`` of an open cgroup v1 memory directory; swap is ``None``
    without swap accounting (no ``memory.memsw.*``)."""
    usage = parse_int(read_file(directory_fd, V1_USAGE))
    memsw = parse_int(read_file(directory_fd, V1_MEMSW_USAGE))
    inactive = stat_field(read_file(directory_fd, V1_STAT), V1_INACTIVE_FILE)
    swap = None if memsw is None or usage is None else max(0, memsw - usage)
    return working_set(usage, inactive), swap
