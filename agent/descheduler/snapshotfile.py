"""A ``ClusterSnapshot`` read from files: what ``descheduler plan`` plans on, with no cluster.

The input is what ``kubectl get nodes,pods,pdb,namespaces,priorityclasses -A -o json``
prints: a ``v1`` List of mixed kinds (PersistentVolumeClaims and NodeReports are read too
when present; other kinds are counted and ignored). NodeReports may also come in a second
file (``kubectl get nodereports -o json``). Either file may be gzipped (recognised by its
magic bytes, not its name).

The snapshot is the one the live loop builds: every item is decoded and projected by the
caches' own code, not a copy of it. Pods take the pod-list path (``podlist``: the struct
decoder, the memoized projection, equal parts shared), the other kinds ``wire``'s structs and
``projection``'s functions, nodes and namespace labels shared as the caches share them
(``sharing``). Items stay raw slices of the file's bytes until their turn, so the peak is the
bytes plus the projections (the 1,000-node parity state is measured in a test).

NodeReports are judged at the time they were captured, the newest ``observedTime`` among
them: a report three heartbeats older than the others is stale, as the live loop would have
found it then, while a file read a day later does not make every report stale.

Bad input (unreadable, not gzip or JSON, not a List, items of the wrong shape) raises
``ConfigError`` naming every bad item with its path (``items[3].metadata.name``): exit 2.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from agent.config.errors import ConfigError, FieldError
from agent.descheduler import projection
from agent.descheduler.model import (
    ClaimInfo,
    ClusterSnapshot,
    DisruptionBudget,
    NodeInfo,
    PodInfo,
)
from agent.descheduler.podlist import PodListProjector
from agent.descheduler.sharing import Sharing
from agent.descheduler.usage import usage_by_node
from agent.descheduler.wire import codec_for
from agent.kube import nodereports
from agent.kube.nodereports import NodeUsageReport

GZIP_MAGIC = b"\x1f\x8b"
MAX_LISTED_ERRORS = 20
"""A file with thousands of bad items names the first ones and counts the rest."""
NODE_REPORT = "NodeReport"


class _Meta(msgspec.Struct):
    name: Any = None


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


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, gunzipped when they start with gzip's magic bytes."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ConfigError(source, [FieldError("", f"cannot read: {error.strerror}")]) from error
    if data[:2] == GZIP_MAGIC:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            reason = f"not a valid gzip file: {error}"
            raise ConfigError(source, [FieldError("", reason)]) from error
    return data


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
    ignored: Counter[str] = field(default_factory=Counter)
    """Items of kinds a snapshot does not read, by kind."""

    def __post_init__(self) -> None:
        self._pod_list = PodListProjector()
        self._node_sharing = Sharing()
        self._label_sharing = Sharing()
        self._decoders: dict[str, Callable[[bytes], Any]] = {}

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
            kind = head.kind if head.kind is not None else default_kind
            if not isinstance(kind, str) or not kind:
                errors.add(FieldError(f"{prefix}.kind", "is required"))
                continue
            name = head.metadata.name if head.metadata is not None else None
            if not isinstance(name, str) or not name:
                errors.add(FieldError(f"{prefix}.metadata.name", "is required"))
                continue
            if reports_only and kind != NODE_REPORT:
                errors.add(FieldError(f"{prefix}.kind", f"expected NodeReport, got {kind!r}"))
                continue
            try:
                self._add(kind, bytes(raw))
            except msgspec.ValidationError as error:
                errors.add(_path(prefix, self._located(kind, bytes(raw), error)))
            except (TypeError, ValueError, AttributeError) as error:
                errors.add(FieldError(prefix, f"cannot be read as a {kind}: {error}"))
        errors.raise_any()

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
            node = self._node_sharing.node(projection.project_node(self._decode(kind, raw)))
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
            self.priority_classes[str(obj["metadata"]["name"])] = int(obj.get("value") or 0)
        elif kind == NODE_REPORT:
            report = nodereports.project(msgspec.json.decode(raw))
            self.reports[report.node] = report
        else:
            self.ignored[kind] += 1

    def snapshot(self, now: float) -> ClusterSnapshot:
        """The snapshot, as ``ClusterState.snapshot`` makes it of the caches."""
        pods_by_node: dict[str, list[PodInfo]] = {}
        for pod in self.pods.values():
            pods_by_node.setdefault(pod.node_name, []).append(pod)
        budgets: dict[str, list[DisruptionBudget]] = {}
        for budget in self.budgets.values():
            budgets.setdefault(budget.namespace, []).append(budget)
        captured = max((r.observed_time or 0.0 for r in self.reports.values()), default=now)
        return ClusterSnapshot(
            nodes=dict(self.nodes),
            pods_by_node={node: tuple(pods) for node, pods in pods_by_node.items()},
            namespaces=dict(self.namespaces),
            disruption_budgets={ns: tuple(items) for ns, items in budgets.items()},
            claims=dict(self.claims),
            priority_classes=dict(self.priority_classes),
            node_usage=usage_by_node(self.reports.values(), captured),
            now=now,
        )


def load_snapshot(
    path: str | os.PathLike[str],
    *,
    now: float,
    node_reports: str | os.PathLike[str] | None = None,
) -> tuple[ClusterSnapshot, Mapping[str, int]]:
    """The snapshot in ``path`` (and the NodeReports in ``node_reports``), and the counts
    of the items it ignored, by kind."""
    reader = SnapshotReader()
    data = read_bytes(path)
    reader.read(data, str(path))
    del data
    if node_reports is not None:
        reader.read(read_bytes(node_reports), str(node_reports), reports_only=True)
    return reader.snapshot(now), dict(reader.ignored)
