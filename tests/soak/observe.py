"""Independent observers of a scenario: what logind lists, what the state file holds, what
happens to the Node, and a writer of its own that shares the Node with the agent.

None of them asks the agent anything. The lock is seen through logind's ``ListInhibitors``
(from the harness's own bus connection), the state file by reading it, the Node through a
hook on the fake API server's store that sees every committed version of it, in order.
"""

from __future__ import annotations

import copy
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.shutdown.inhibitor import WHO
from agent.shutdown.record import ShutdownRecord
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.fake_apiserver.resources import ResourceType
from tests.harness.fake_apiserver.status import ApiError
from tests.harness.fake_apiserver.store import StoredEvent
from tests.harness.logind import LogindHarness

OUR_DOMAIN = "kubelet-companion.io/"
FOREIGN_PREFIX = "soak.example.com/"
JSON = dict[str, Any]


def _stoppable_loop(stop: threading.Event, interval: float, step: Callable[[], None]) -> None:
    while not stop.is_set():
        step()
        stop.wait(interval)


# -- logind's view of our lock ----------------------------------------------------------------


@dataclass(frozen=True)
class LockSample:
    sent: float
    """``time.monotonic()`` when ListInhibitors was sent: logind's answer is no older."""
    pids: tuple[int, ...]
    """The pids of the ``kubelet-companion`` delay locks it listed."""


class LockMonitor:
    """Polls ``ListInhibitors`` every ``interval`` seconds (answers while logind is down are
    simply missing)."""

    def __init__(self, harness: LogindHarness, interval: float = 0.02) -> None:
        self.harness = harness
        self.interval = interval
        self.samples: list[LockSample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_stoppable_loop, args=(self._stop, interval, self._poll), daemon=True
        )

    def start(self) -> LockMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _poll(self) -> None:
        sent = time.monotonic()
        try:
            listed = self.harness.list_inhibitors(timeout=1)
        except Exception:  # noqa: BLE001 - logind restarting or gone: no sample
            return
        pids = tuple(pid for what, who, _, mode, _, pid in listed if who == WHO and mode == "delay")
        self.samples.append(LockSample(sent, pids))

    def latest_pids(self) -> tuple[int, ...] | None:
        return self.samples[-1].pids if self.samples else None

    def held_since(self, since: float) -> float | None:
        """When a sample sent after ``since`` first showed exactly one lock of ours."""
        for sample in self.samples:
            if sample.sent >= since and len(sample.pids) == 1:
                return sample.sent
        return None


# -- the state file ---------------------------------------------------------------------------


@dataclass
class TornRead:
    at: float
    error: str
    head: str


@dataclass(frozen=True)
class SeenRecord:
    start_time: float
    start_monotonic: float | None
    budget: int
    first_seen: float


class StateFileMonitor:
    """Reads the shutdown state file every ``interval`` and whenever asked (after a kill):
    every read must parse as a record the agent wrote."""

    def __init__(self, path: Path, interval: float = 0.02) -> None:
        self.path = path
        self.reads = 0
        self.torn: list[TornRead] = []
        self.records: dict[float, SeenRecord] = {}
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_stoppable_loop, args=(self._stop, interval, self.check_now), daemon=True
        )

    def start(self) -> StateFileMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.check_now()

    def check_now(self) -> None:
        with self._guard:
            now = time.monotonic()
            try:
                raw = self.path.read_bytes()
            except FileNotFoundError:
                return
            self.reads += 1
            try:
                record = ShutdownRecord.from_json(json.loads(raw))
            except Exception as error:  # noqa: BLE001 - any failure to parse is the finding
                self.torn.append(TornRead(now, repr(error), raw[:120].decode(errors="replace")))
                return
            if record.start_time not in self.records:
                self.records[record.start_time] = SeenRecord(
                    record.start_time, record.start_monotonic, record.budget_seconds, now
                )


# -- the Node: a foreign writer, and a checker of every committed version ----------------------


def foreign_view(node: JSON) -> JSON:
    """Everything on the Node that is not ours: labels, annotations, taints."""
    metadata = node.get("metadata") or {}
    taints = (node.get("spec") or {}).get("taints") or []
    return {
        "labels": {
            k: v for k, v in (metadata.get("labels") or {}).items() if not k.startswith(OUR_DOMAIN)
        },
        "annotations": {
            k: v
            for k, v in (metadata.get("annotations") or {}).items()
            if not k.startswith(OUR_DOMAIN)
        },
        "taints": sorted(
            (
                (str(t.get("key")), str(t.get("effect")), str(t.get("value", "")))
                for t in taints
                if not str(t.get("key", "")).startswith(OUR_DOMAIN)
            ),
        ),
    }


class ForeignWriter:
    """Another controller on the same Node: adds, changes and removes taints, labels and
    annotations of its own (``soak.example.com/``) every few tens of milliseconds, and keeps
    its own record of what the Node's foreign part must be after each write."""

    def __init__(self, server: FakeApiServer, node: str, rng: random.Random) -> None:
        self.server = server
        self.node = node
        self.rng = rng
        self.writes = 0
        self.expected: JSON = foreign_view(server.get("nodes", node))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="foreign-writer")

    def start(self) -> ForeignWriter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        # About four writes a second: a busy controller. Much faster, and the agent's own
        # guarded patches lose the resourceVersion race again and again (correctly retried,
        # but then its backoff, not the rule under test, decides how long a write takes).
        while not self._stop.wait(self.rng.uniform(0.05, 0.4)):
            self.write_once()

    def write_once(self) -> None:
        section = self.rng.choice(("labels", "annotations", "taints"))
        key = f"{FOREIGN_PREFIX}{section[0]}{self.rng.randint(0, 2)}"
        remove = self.rng.random() < 0.4
        value = f"v{self.rng.randint(0, 99)}"
        effect = self.rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute"))
        expected = copy.deepcopy(self.expected)
        if section == "taints":
            kept = [t for t in expected["taints"] if t[0] != key]
            expected["taints"] = sorted(kept if remove else [*kept, (key, effect, value)])
        elif remove:
            expected[section].pop(key, None)
        else:
            expected[section][key] = value

        def change(node: JSON) -> JSON:
            node = copy.deepcopy(node)
            metadata = node.setdefault("metadata", {})
            if section == "taints":
                spec = node.setdefault("spec", {})
                taints = [t for t in spec.get("taints") or [] if t.get("key") != key]
                if not remove:
                    taints.append({"key": key, "effect": effect, "value": value})
                spec["taints"] = taints
            else:
                values = metadata.setdefault(section, {}) or {}
                metadata[section] = values
                if remove:
                    values.pop(key, None)
                else:
                    values[key] = value
            return node

        # The record changes under the store's lock, in the same critical section as the
        # commit: the checker (a store hook, run inside the commit) sees both or neither.
        with self.server.store.locked():
            previous, self.expected = self.expected, expected
            try:
                self.server.mutate("nodes", self.node, change)
            except ApiError:
                self.expected = previous
                return
        self.writes += 1


@dataclass
class NodeFinding:
    invariant: str
    at: float
    detail: str


@dataclass
class ReadinessTruth:
    """What the soak made true about the critical components, as it did it."""

    ready: bool = False
    ready_at: float | None = None


@dataclass
class NodeChecker:
    """Sees every committed version of the Node (a store hook, inside the commit)."""

    node: str
    writer: ForeignWriter | None
    gate_taint: str
    truth: ReadinessTruth = field(default_factory=ReadinessTruth)
    findings: list[NodeFinding] = field(default_factory=list)
    versions: int = 0
    lifted_at: float | None = None
    _tainted: bool | None = None

    def hook(self, rt: ResourceType, event: StoredEvent) -> None:
        if rt.key != "nodes":
            return
        obj = event.obj
        if (obj.get("metadata") or {}).get("name") != self.node or event.type == "DELETED":
            return
        now = time.monotonic()
        self.versions += 1
        if self.writer is not None:
            seen = foreign_view(obj)
            if seen != self.writer.expected:
                self.findings.append(
                    NodeFinding(
                        "foreign-keys",
                        now,
                        f"rv {event.rv}: node shows {_diff(self.writer.expected, seen)}",
                    )
                )
        tainted = any(
            t.get("key") == self.gate_taint for t in (obj.get("spec") or {}).get("taints") or []
        )
        if self._tainted and not tainted:
            self.lifted_at = self.lifted_at or now
            if not self.truth.ready:
                self.findings.append(
                    NodeFinding(
                        "readiness-gate",
                        now,
                        f"rv {event.rv}: gate taint lifted while the critical pod is not Ready",
                    )
                )
        elif self._tainted is False and tainted and self.lifted_at is not None:
            self.findings.append(
                NodeFinding("readiness-gate", now, f"rv {event.rv}: gate taint re-added")
            )
        self._tainted = tainted


def _diff(expected: JSON, seen: JSON) -> str:
    parts = []
    for section in ("labels", "annotations"):
        for key in sorted(set(expected[section]) | set(seen[section])):
            want, got = expected[section].get(key), seen[section].get(key)
            if want != got:
                parts.append(f"{section}[{key}]={got!r} (want {want!r})")
    want_taints, got_taints = set(expected["taints"]), set(seen["taints"])
    parts += [f"taint {t} missing" for t in sorted(want_taints - got_taints)]
    parts += [f"taint {t} unexpected" for t in sorted(got_taints - want_taints)]
    return "; ".join(parts)
