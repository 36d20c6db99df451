"""A ``ClusterSnapshot`` read from files: what ``descheduler plan`` plans on, with no cluster.

The input is what ``kubectl get nodes,pods,pdb,namespaces,priorityclasses -A -o json``
prints: a ``v1`` List of mixed kinds (PersistentVolumeClaims, NodeReports, and the
Deployments, ReplicaSets, StatefulSets and ReplicationControllers implicit budgets read, are
read too when present; other kinds are counted and ignored). Without them the file still
loads: implicit budgets then count the pods seen of each controller of a kind the file holds
none of, and the plan says so. NodeReports may also come
in a second file (``kubectl get nodereports -o json``). Either file may be gzipped
(recognised by its magic bytes, not its name).

The snapshot is the one the live loop builds: every item is decoded and projected by the
caches' own code, not a copy of it. Pods take the pod-list path (``podlist``: the struct
decoder, the memoized projection, equal parts shared), the other kinds ``wire``'s structs and
``projection``'s functions, nodes and namespace labels shared as the caches share them
(``sharing``). Items stay raw slices of the file's bytes until their turn, so the peak is the
bytes plus the projections (the 1,000-node parity state is measured in a test).

NodeReports are judged as the live loop judges them (``usage.judge``: owned by the Node of the
same name and uid, well-formed, plausible, not from the future), at the **capture time**: the
one given (``--captured-at``), else the newest time the API server itself stamped on an object
of the snapshot (``creationTimestamp``, ``deletionTimestamp``, ``managedFields[].time``),
never a time a writer chose: one report dated 2099 cannot make every other report stale. A
report's own ``observedTime`` is the only time offline of when it changed; it can make the
report older, never newer than the capture.

Hostile input is refused, never half-read: a file larger than ``--max-snapshot-bytes``
(default ``DEFAULT_MAX_BYTES``, well above a 150,000-pod cluster's ``kubectl get -o json``),
counted as read (``agent.config.boundedread``: a FIFO or ``/dev/zero`` says 0 to ``stat``), or
a gzip that expands past it (its members decoded in linear work, ``_gunzip``); JSON nested
deeper than the decoder allows; an object twice, or two objects with one uid (both paths
named); metadata, sub-objects, quantities, integers or timestamps the API server would not
have stored (``shapes.object_meta_problems``, ``projection.ProjectionError``). Bad input
raises ``ConfigError`` naming every bad item with its path (``items[3].metadata.name``):
exit 2.
"""

from __future__ import annotations

import os
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from agent.config.boundedread import read_limited, too_large
from agent.config.errors import ConfigError, FieldError
from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist import PodListProjector
from agent.descheduler.cache.projection import ProjectionError
from agent.descheduler.cache.shapes import object_meta_problems
from agent.descheduler.cache.sharing import Sharing
from agent.descheduler.cache.usage import Distrusted, judge_all
from agent.descheduler.cache.wire import codec_for
from agent.descheduler.cache.workloads import project_workload
from agent.descheduler.model.cluster import (
    WORKLOAD_KINDS,
    ClaimInfo,
    ClusterSnapshot,
    DisruptionBudget,
    NodeInfo,
    PodInfo,
    WorkloadInfo,
)
from agent.kube import nodereports
from agent.kube.nodereports import NodeUsageReport

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_BYTES = 8 * 2**30
"""8 GiB: a ``kubectl get -o json`` of a 150,000-pod cluster is about 1.5 GiB (10 KiB a pod)."""
MAX_LISTED_ERRORS = 20
"""A file with thousands of bad items names the first ones and counts the rest."""
NODE_REPORT = "NodeReport"


class _ManagedField(msgspec.Struct):
    time: Any = None


class _Meta(msgspec.Struct, rename="camel"):
    name: Any = None
    namespace: Any = None
    uid: Any = None
    labels: Any = None
    creation_timestamp: Any = None
    deletion_timestamp: Any = None
    managed_fields: list[_ManagedField] | None = None


class _Head(msgspec.Struct):
    """What is read of an item before its kind's decoder takes it."""

    kind: Any = None
    metadata: _Meta | None = None


class _Document(msgspec.Struct, rename="camel"):
    api_version: Any = None
    kind: Any = None
    items: list[msgspec.Raw] | None = None


_DOCUMENT = msgspec.json.Decoder(_Document)
_HEAD = msgspec.json.Decoder(_Head)


LIMIT_HINT = "raise --max-snapshot-bytes to read it"
_FIRST_FEED = 64
"""Bytes of compressed input first given to each gzip member's decoder (doubling after)."""
_MAX_FEED = 4 * 2**20


def _gunzip(data: bytes, source: str, limit: int) -> bytes:
    """Every gzip member of ``data``; past ``limit`` bytes of output it stops and refuses.

    ``max_length`` bounds what each call may produce, so a bomb (a few hundred KB that expand
    to gigabytes) costs at most ``limit`` bytes before it is refused.

    The cost is linear in the input, however many members it has. A decoder that reaches the
    end of its member copies what it was given past that end (``unused_data``), so handing
    each member the rest of the input would copy the rest once per member: 8 MB of empty
    members took 42 s. Here each member is fed slices of a view that start small and double,
    so what is copied past a member's end is at most about twice the member itself.
    """
    out = bytearray()
    view = memoryview(data)
    at = 0
    while True:
        stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
        feed = _FIRST_FEED
        while not stream.eof:
            if at >= len(view):
                raise zlib.error("the compressed data ends early")
            piece = view[at : at + feed]
            at += len(piece)
            # ``limit + 1 - len(out)`` is at least 1 here: 0 would mean "no limit" to zlib.
            out += stream.decompress(piece, limit + 1 - len(out))
            while stream.unconsumed_tail and len(out) <= limit:
                out += stream.decompress(stream.unconsumed_tail, limit + 1 - len(out))
            if len(out) > limit:
                raise too_large(source, limit, LIMIT_HINT, doing="gunzipping")
            feed = min(feed * 2, _MAX_FEED)
        at -= len(stream.unused_data)
        if view[at : at + 2] != GZIP_MAGIC:
            # Done; trailing bytes after the last member are ignored, as gzip(1) does.
            return bytes(out)


def read_bytes(path: str | os.PathLike[str], *, limit: int = DEFAULT_MAX_BYTES) -> bytes:
    """The file's bytes, gunzipped when they start with gzip's magic bytes; never more than
    ``limit`` bytes read, nor more than ``limit`` bytes gunzipped, whatever the file is (a
    FIFO or a device too: counted as read, see ``agent.config.boundedread``)."""
    data = read_limited(path, limit, hint=LIMIT_HINT)
    if data[:2] == GZIP_MAGIC:
        try:
            return _gunzip(data, str(path), limit)
        except (OSError, EOFError, zlib.error) as error:
            reason = f"not a valid gzip file: {error}"
            raise ConfigError(str(path), [FieldError("", reason)]) from error
    return data


TOO_DEEP = "nested deeper than the decoder allows"


def _path(prefix: str, error: msgspec.ValidationError) -> FieldError:
    """msgspec's "Expected ... - at `$.a.b[0]`" as a FieldError at ``prefix.a.b[0]``."""
    text = str(error)
    reason, _, where = text.partition(" - at `$")
    where = where.rstrip("`")
    path = f"{prefix}{where}" if where.startswith("[") else prefix + where
    return FieldError(path.lstrip("."), reason)


@dataclass
class _Errors:
    source: str
    found: list[FieldError] = field(default_factory=list)
    more: int = 0

    def add(self, error: FieldError) -> None:
        if len(self.found) < MAX_LISTED_ERRORS:
            self.found.append(error)
        else:
            self.more += 1

    def add_all(self, prefix: str, problems: list[tuple[str, str]]) -> bool:
        """Add each ``(path within the item at prefix, reason)``; whether there was one."""
        for path, reason in problems:
            self.add(FieldError(f"{prefix}.{path}", reason))
        return bool(problems)

    def raise_any(self) -> None:
        if self.found:
            errors = list(self.found)
            if self.more:
                errors.append(FieldError("", f"... and {self.more} more"))
            raise ConfigError(self.source, errors)


def _items(data: bytes, source: str) -> tuple[list[msgspec.Raw], str]:
    """The List's items (raw) and the kind its items have when they say none."""
    try:
        document = _DOCUMENT.decode(data)
    except msgspec.ValidationError as error:
        raise ConfigError(source, [_path("", error)]) from error
    except msgspec.DecodeError as error:
        raise ConfigError(source, [FieldError("", f"not JSON: {error}")]) from error
    except RecursionError as error:
        raise ConfigError(source, [FieldError("", TOO_DEEP)]) from error
    kind = document.kind
    if not isinstance(kind, str) or not kind.endswith("List"):
        raise ConfigError(
            source,
            [
                FieldError(
                    "kind",
                    f"expected a List (kubectl get ... -o json), got {kind!r}",
                )
            ],
        )
    if document.items is None:
        raise ConfigError(source, [FieldError("items", "is required")])
    # A typed list (``PodList``) names its items' kind once, on the list.
    return document.items, kind.removesuffix("List") if kind != "List" else ""


def _stamp(value: Any) -> float | None:
    """A server-stamped time of an object's metadata; ``None`` when absent."""
    return projection.parse_timestamp(value) if isinstance(value, str) and value else None


@dataclass
class SnapshotReader:
    """Projects the items of one or more Lists as the live caches do; ``snapshot()`` at the end."""

    pods: dict[str, PodInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    budgets: dict[str, DisruptionBudget] = field(default_factory=dict)
    claims: dict[str, ClaimInfo] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)
    reports: dict[str, NodeUsageReport] = field(default_factory=dict)
    workloads: dict[str, WorkloadInfo] = field(default_factory=dict)
    """The ``WORKLOAD_KINDS``, by UID."""
    ignored: Counter[str] = field(default_factory=Counter)
    """Items of kinds a snapshot does not read, by kind."""
    newest_stamp: float | None = None
    """The newest time the API server stamped on any item (creation, deletion, a write)."""

    def __post_init__(self) -> None:
        self._pod_list = PodListProjector()
        self._node_sharing = Sharing()
        self._label_sharing = Sharing()
        self._workload_sharing = Sharing()
        self._decoders: dict[str, Callable[[bytes], Any]] = {}
        self._first: dict[tuple[str, str], str] = {}
        """(kind, namespace/name) -> where the object was first read (``file: items[i]``)."""
        self._uids: dict[str, str] = {}
        """uid -> where the object with it was first read: the API server gives every object
        a uid of its own, and evictions are keyed by it."""

    def _decode(self, kind: str, raw: bytes) -> Any:
        decode = self._decoders.get(kind)
        if decode is None:
            decode = self._decoders[kind] = codec_for(kind).decode_item
        return decode(raw)

    def read(self, data: bytes, source: str, *, reports_only: bool = False) -> None:
        """Add every item of the List in ``data``; raises ``ConfigError`` for bad items."""
        raws, default_kind = _items(data, source)
        errors = _Errors(source)
        for index, raw in enumerate(raws):
            raws[index] = msgspec.Raw(b"")  # the slice goes as soon as its item is read
            prefix = f"items[{index}]"
            try:
                head = _HEAD.decode(raw)
            except msgspec.ValidationError as error:
                errors.add(_path(prefix, error))
                continue
            except RecursionError:
                errors.add(FieldError(prefix, TOO_DEEP))
                continue
            kind = head.kind if head.kind is not None else default_kind
            if not isinstance(kind, str) or not kind:
                errors.add(FieldError(f"{prefix}.kind", "is required"))
                continue
            meta = head.metadata or _Meta()
            name = meta.name
            if not isinstance(name, str) or not name:
                errors.add(FieldError(f"{prefix}.metadata.name", "is required"))
                continue
            if reports_only and kind != NODE_REPORT:
                errors.add(FieldError(f"{prefix}.kind", f"expected NodeReport, got {kind!r}"))
                continue
            if kind not in KINDS:
                self.ignored[kind] += 1
                continue
            if errors.add_all(prefix, self._refused(kind, meta, name, f"{source}: {prefix}")):
                continue
            try:
                self._note_stamps(meta)
                self._add(kind, bytes(raw))
            except msgspec.ValidationError as error:
                errors.add(_path(prefix, self._located(kind, bytes(raw), error)))
            except ProjectionError as error:
                path = f"{prefix}.{error.path}" if error.path else prefix
                errors.add(FieldError(path, error.reason))
            except RecursionError:
                errors.add(FieldError(prefix, TOO_DEEP))
            except (TypeError, ValueError, AttributeError, OverflowError) as error:
                errors.add(FieldError(prefix, f"cannot be read as a {kind}: {error}"))
        errors.raise_any()

    def _refused(self, kind: str, meta: _Meta, name: str, where: str) -> list[tuple[str, str]]:
        """``(path, reason)`` for each reason the API server would not have stored the item
        at ``where`` beside the others: its metadata (``shapes.object_meta_problems``), or
        a kind and name, or a uid, already read. Empty when it is to be read."""
        namespace = meta.namespace
        problems = object_meta_problems(kind, name, namespace, meta.labels)
        if problems:
            return problems
        key = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
        first = self._first.setdefault((kind, key), where)
        if first != where:
            return [("metadata.name", f"{kind} {key} again (first at {first})")]
        uid = meta.uid
        if isinstance(uid, str) and uid:
            first = self._uids.setdefault(uid, where)
            if first != where:
                return [("metadata.uid", f"uid {uid!r:.80} again (first at {first})")]
        return []

    def _note_stamps(self, meta: _Meta | None) -> None:
        if meta is None:
            return
        stamps = [
            _stamp(meta.creation_timestamp),
            _stamp(meta.deletion_timestamp),
            *(_stamp(entry.time) for entry in meta.managed_fields or ()),
        ]
        newest = max((stamp for stamp in stamps if stamp is not None), default=None)
        if newest is not None and (self.newest_stamp is None or newest > self.newest_stamp):
            self.newest_stamp = newest

    def _located(
        self, kind: str, raw: bytes, error: msgspec.ValidationError
    ) -> msgspec.ValidationError:
        """The error with its path: the pod-list path decodes repeating parts on their own
        (without the path), so a bad pod is decoded again by the watch path's struct."""
        if kind != "Pod":
            return error
        try:
            self._decode(kind, raw)
        except msgspec.ValidationError as located:
            return located
        return error

    def _add(self, kind: str, raw: bytes) -> None:
        if kind == "Pod":
            pod = self._pod_list.project(self._pod_list.decode_item(raw))
            self.pods[f"{pod.namespace}/{pod.name}"] = pod
        elif kind == "Node":
            decoded = self._decode("NodeWithImages", raw)
            node = self._node_sharing.node(projection.project_node(decoded, with_images=True))
            self.nodes[node.name] = node
        elif kind == "Namespace":
            metadata = self._decode(kind, raw).get("metadata") or {}
            labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
            self.namespaces[str(metadata["name"])] = self._label_sharing.labels(labels)
        elif kind == "PodDisruptionBudget":
            budget = projection.project_disruption_budget(self._decode(kind, raw))
            self.budgets[f"{budget.namespace}/{budget.name}"] = budget
        elif kind == "PersistentVolumeClaim":
            claim = projection.project_claim(self._decode(kind, raw))
            self.claims[f"{claim.namespace}/{claim.name}"] = claim
        elif kind == "PriorityClass":
            obj = self._decode(kind, raw)
            value = projection.priority_class_value(obj)
            self.priority_classes[str(obj["metadata"]["name"])] = value
        elif kind in WORKLOAD_KINDS:
            workload = project_workload(self._decode(kind, raw), kind)
            self.workloads[workload.uid] = self._workload_sharing.workload(workload)
        else:  # NODE_REPORT
            report = nodereports.project(msgspec.json.decode(raw))
            self.reports[report.node] = report

    def capture_time(self, given: float | None, fallback: float) -> float:
        """When the snapshot was taken: ``given``, else the newest server stamp, else
        ``fallback`` (a hand-written file with no times at all)."""
        if given is not None:
            return given
        return self.newest_stamp if self.newest_stamp is not None else fallback

    def snapshot(self, now: float, *, captured_at: float | None = None) -> Snapshot:
        """The snapshot, as ``ClusterState.snapshot`` makes it of the caches, and the reports
        it does not believe. Pod ages count to ``captured_at`` when given, else to ``now``."""
        pods_by_node: dict[str, list[PodInfo]] = {}
        for pod in self.pods.values():
            pods_by_node.setdefault(pod.node_name, []).append(pod)
        budgets: dict[str, list[DisruptionBudget]] = {}
        for budget in self.budgets.values():
            budgets.setdefault(budget.namespace, []).append(budget)
        capture = self.capture_time(captured_at, now)
        # Offline nothing was witnessed: each report is as old as its own observedTime says,
        # and never newer than the capture.
        verdicts = judge_all(
            ((report, capture, False) for report in self.reports.values()), self.nodes, capture
        )
        snapshot = ClusterSnapshot(
            nodes=dict(self.nodes),
            pods_by_node={node: tuple(pods) for node, pods in pods_by_node.items()},
            namespaces=dict(self.namespaces),
            disruption_budgets={ns: tuple(items) for ns, items in budgets.items()},
            claims=dict(self.claims),
            priority_classes=dict(self.priority_classes),
            node_usage=verdicts.usage,
            now=captured_at if captured_at is not None else now,
            workloads=dict(self.workloads),
            workload_kinds=frozenset(w.kind for w in self.workloads.values()),
        )
        return Snapshot(snapshot, dict(self.ignored), verdicts.distrusted, capture)


KINDS = frozenset(
    {
        "Pod",
        "Node",
        "Namespace",
        "PodDisruptionBudget",
        "PersistentVolumeClaim",
        "PriorityClass",
        NODE_REPORT,
        *WORKLOAD_KINDS,
    }
)
"""The kinds a snapshot reads; items of any other kind are counted and ignored."""


class Snapshot(NamedTuple):
    """What a snapshot file gives: the cycle's input and what was left out of it."""

    snapshot: ClusterSnapshot
    ignored: Mapping[str, int]
    """Items of kinds a snapshot does not read, by kind."""
    distrusted: Mapping[str, Distrusted]
    """NodeReports not believed, by name."""
    captured_at: float
    """The time the reports were judged at."""


def load_snapshot(
    path: str | os.PathLike[str],
    *,
    now: float,
    node_reports: str | os.PathLike[str] | None = None,
    captured_at: float | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Snapshot:
    """The snapshot in ``path`` (and the NodeReports in ``node_reports``)."""
    reader = SnapshotReader()
    try:
        data = read_bytes(path, limit=max_bytes)
        reader.read(data, str(path))
        del data
        if node_reports is not None:
            reports = read_bytes(node_reports, limit=max_bytes)
            reader.read(reports, str(node_reports), reports_only=True)
    except MemoryError as error:
        raise ConfigError(
            str(path),
            [
                FieldError(
                    "",
                    "ran out of memory reading it: give the process more memory (a "
                    "--max-snapshot-bytes below what it has refuses such a file up front)",
                )
            ],
        ) from error
    return reader.snapshot(now, captured_at=captured_at)
