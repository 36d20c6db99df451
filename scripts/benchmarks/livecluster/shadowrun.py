"""A dry-run descheduler beside the one a run measures: its process, its plans, its trace.

``parity`` says why ours runs as upstream's shadow on a usage scenario. Here: the process
(started right after upstream, stopped with it), a thread reading its stdout (one JSON plan
per cycle) that stamps each plan with the run's clock as it arrives and keeps it in
``shadow-plans.jsonl``, its log in ``shadow.log``, and the check that it wrote nothing the
measured descheduler could see: every pod deletion the watch saw is one upstream logged as
its eviction, no taint of ours is on a node, and our Lease does not exist.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from agent import DOMAIN
from agent.descheduler.options import LEASE_NAME, LEASE_NAMESPACE
from scripts.benchmarks.livecluster import parity
from scripts.benchmarks.livecluster.api import Api
from scripts.benchmarks.livecluster.controlplane import STOP_SECONDS
from tests.harness.childprocess import stop_process


class Shadow:
    def __init__(self, command: list[str], directory: Path, origin: float) -> None:
        self.command = command
        self.directory = directory
        self.origin = origin
        """The run's start (``time.monotonic``): plans are stamped from it."""
        self.cycles: list[parity.Cycle] = []
        self._lock = threading.Lock()
        with (directory / "shadow.log").open("wb") as log:
            self.process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._reader = threading.Thread(target=self._read, name="shadow-plans", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout = self.process.stdout
        if stdout is None:
            return
        buffer = ""
        with (self.directory / "shadow-plans.jsonl").open("w", encoding="utf-8") as kept:
            for chunk in _chunks(stdout):
                buffer += chunk
                consumed = 0
                for plan, consumed in parity.json_documents(buffer):  # noqa: B007 - the last offset is used
                    t = time.monotonic() - self.origin
                    cycle = parity.ours_cycle(plan, t)
                    with self._lock:
                        self.cycles.append(cycle)
                    kept.write(json.dumps({"t": cycle.t, "plan": plan}) + "\n")
                    kept.flush()
                buffer = buffer[consumed:]

    def stop(self) -> int | str:
        """SIGTERM (as the measured one gets); the exit, ``stopped`` when it was running."""
        status: int | str
        if self.process.poll() is None:
            stop_process(self.process, STOP_SECONDS)
            status = "stopped"
        else:
            status = self.process.returncode
        self._reader.join(10)
        return status

    def record(
        self, exit_status: int | str, upstream_log: str, origin_wall: float, writes: dict[str, Any]
    ) -> dict[str, Any]:
        """What the run's record keeps: both sides' cycles (``parity`` pairs them later)."""
        with self._lock:
            ours = list(self.cycles)
        tail = (self.directory / "shadow.log").read_text(encoding="utf-8", errors="replace")
        theirs = parity.upstream_cycles(upstream_log, origin_wall)
        return {
            "command": self.command,
            "exit": exit_status,
            "log_tail": tail.splitlines()[-3:] if exit_status != "stopped" else [],
            "upstream_cycles": [asdict(c) for c in theirs],
            "ours_cycles": [asdict(c) for c in ours],
            "writes": writes,
        }


def _chunks(stream: IO[bytes]) -> Any:
    while chunk := stream.read1(65536):  # type: ignore[attr-defined] # a BufferedReader
        yield chunk.decode(errors="replace")


def writes_seen(api: Api, deletions: int, upstream_log: str) -> dict[str, Any]:
    """What a dry run must not have done, checked on the cluster after the run: pod
    deletions beyond upstream's logged evictions, taints of ours on nodes, our Lease."""
    evicted = upstream_log.count('"Evicted pod"')
    nodes, _ = api.list_all("/api/v1/nodes")
    ours = [
        t["key"]
        for n in nodes
        for t in (n.get("spec") or {}).get("taints") or []
        if DOMAIN in str(t.get("key"))
    ]
    lease, _ = api.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}"
    )
    return {
        "deletions_seen": deletions,
        "upstream_evicted": evicted,
        "our_taints": len(ours),
        "lease_status": lease,
        "none": deletions == evicted and not ours and lease == 404,
    }
