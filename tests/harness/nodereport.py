"""NodeReport test helpers: our CRD on the fake API server, and a fixture /proc to sample."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.kubeobjects import node_report

JSON = dict[str, Any]
GIB = 2**30
CRD_PATH = Path(__file__).parents[2] / "daemonset" / "base" / "nodereport-crd.yaml"


@dataclass
class NodeProc:
    """The fixture ``/proc`` counters the sampler reads; each ``set`` is the next sample."""

    host: HostTree
    busy: int = 0
    total: int = 0

    def set(self, *, cpu_fraction: float, memory_fraction: float, ticks: int = 1000) -> None:
        """The next interval runs at ``cpu_fraction`` busy; memory in use as given."""
        self.busy += round(ticks * cpu_fraction)
        self.total += ticks
        idle = self.total - self.busy
        self.host.write(
            "proc/stat",
            f"cpu  {self.busy} 0 0 {idle} 0 0 0 0 0 0\n"
            + "".join(f"cpu{i} 0 0 0 0 0 0 0 0 0 0\n" for i in range(4)),
        )
        total = 16 * GIB // 1024
        available = round(16 * GIB * (1 - memory_fraction)) // 1024
        lines = [
            f"MemTotal: {total} kB",
            f"MemFree: {available} kB",
            f"MemAvailable: {available} kB",
            "Buffers: 0 kB",
            "Cached: 0 kB",
            "SwapCached: 0 kB",
            "Active: 0 kB",
            "Inactive: 0 kB",
            "Shmem: 0 kB",
            "Slab: 0 kB",
            "SReclaimable: 0 kB",
            "SwapTotal: 0 kB",
            "SwapFree: 0 kB",
        ]
        self.host.write("proc/meminfo", "\n".join(lines) + "\n")


def register_crd(server: FakeApiServer) -> JSON:
    """Our CRD from ``daemonset/base/``, as a cluster admin would apply it."""
    return server.create(yaml.safe_load(CRD_PATH.read_text()))


def put_report(
    server: FakeApiServer, name: str, status: JSON, *, node_uid: str | None = None
) -> None:
    """Write ``name``'s report as its agent does: create it (owned by its Node, see
    ``kubeobjects.node_report``) if it is not there yet, then merge ``status`` into it."""
    if server.try_get("nodereports", name) is None:
        server.create(node_report(name, node_uid=node_uid))
    server.patch("nodereports", name, {"status": status}, subresource="status", patch_type="merge")
