"""The live benchmark's one list + watch loop, driven by a scripted client: what it hands
over, when it lists again, and that it stops."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scripts.benchmarks.livecluster import nodes, podwatch, tracker
from scripts.benchmarks.livecluster.api import ApiError
from scripts.benchmarks.livecluster.podwatch import ListWatch


def _pod(uid: str, version: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "name": uid, "namespace": "ns", "resourceVersion": version},
        "spec": {},
        "status": status,
    }


def _event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


class Scripted:
    """A client whose lists and watches play back a script; the last watch sets ``stop``."""

    def __init__(
        self, lists: list[list[dict[str, Any]]], watches: list[Any], stop: threading.Event
    ) -> None:
        self.lists = lists
        self.watches = watches
        self.stop = stop
        self.calls: list[tuple[str, str]] = []

    def list_all(self, path: str) -> tuple[list[dict[str, Any]], str]:
        assert path == "/api/v1/pods"
        items = self.lists.pop(0)
        version = str(10 * (len(self.calls) + 1))
        self.calls.append(("list", version))
        return items, version

    def watch(
        self, path: str, resource_version: str, seconds: int = 240
    ) -> Iterator[dict[str, Any]]:
        assert (path, seconds) == ("/api/v1/pods", 240)
        self.calls.append(("watch", resource_version))
        step = self.watches.pop(0)
        if not self.watches:
            self.stop.set()
        if isinstance(step, BaseException):
            raise step
        yield from step


def _run(lists: list[Any], watches: list[Any]) -> tuple[Scripted, list[Any], list[Any]]:
    stop = threading.Event()
    source = Scripted(lists, watches, stop)
    listed: list[list[str]] = []
    events: list[tuple[str, str]] = []
    ListWatch(
        source,
        "/api/v1/pods",
        on_list=lambda items: listed.append([i["metadata"]["uid"] for i in items]),
        on_event=lambda kind, obj: events.append((kind, obj["metadata"]["uid"])),
        stop=stop,
        pause=0,
    ).run()
    return source, listed, events


def test_it_lists_then_watches_from_the_lists_version_and_bookmarks_move_it() -> None:
    """Events are handed over as they come, bookmarks are not, and a watch the server ended
    resumes from the last version seen (the bookmark's), without a new list."""
    _, listed, events = _run(
        [[_pod("a", "10")]],
        [
            [_event("ADDED", _pod("b", "11")), _event("BOOKMARK", _pod("", "15"))],
            [_event("DELETED", _pod("a", "16"))],
        ],
    )
    assert listed == [["a"]]
    assert events == [("ADDED", "b"), ("DELETED", "a")]


def test_the_watch_resumes_where_it_was() -> None:
    """After a watch ends (the server's timeout), the next one starts at the last version."""
    source, _, _ = _run(
        [[_pod("a", "10")]],
        [[_event("MODIFIED", _pod("a", "12")), _event("BOOKMARK", _pod("", "15"))], []],
    )
    assert source.calls == [("list", "10"), ("watch", "10"), ("watch", "15")]


def test_gone_lists_again_whether_an_error_event_or_an_answer() -> None:
    """A 410 as an ERROR event, and as the watch's answer, both mean the version is too old:
    the loop lists again (and hands over the new list), never watching from a stale one."""
    source, listed, _ = _run(
        [[_pod("a", "10")], [_pod("b", "20")], [_pod("c", "30")]],
        [
            [_event("ERROR", {"code": 410, "message": "too old"})],
            ApiError("WATCH", "/api/v1/pods", 410, "gone"),
            [],
        ],
    )
    assert listed == [["a"], ["b"], ["c"]]
    assert [c[0] for c in source.calls] == ["list", "watch", "list", "watch", "list", "watch"]


def test_any_other_break_resumes_without_a_list() -> None:
    """A dropped connection or another ERROR event resumes the watch from the same version."""
    source, listed, _ = _run(
        [[_pod("a", "10")]],
        [
            ConnectionResetError("dropped"),
            [_event("ERROR", {"code": 500, "message": "internal"})],
            [],
        ],
    )
    assert listed == [["a"]]
    assert source.calls == [("list", "10"), ("watch", "10"), ("watch", "10"), ("watch", "10")]


def test_the_one_loop_is_the_only_watch_in_the_harness() -> None:
    """The kubelet stand-in and the tracker follow pods through ``ListWatch``: no other
    module of the harness opens a watch or lists pods itself."""
    harness = Path(podwatch.__file__).parent
    watching = sorted(
        path.name
        for path in harness.glob("*.py")
        if ".watch(" in path.read_text(encoding="utf-8")
        or 'list_all("/api/v1/pods")' in path.read_text(encoding="utf-8")
    )
    assert watching == ["podwatch.py"]
    for follower in (nodes, tracker):
        assert "ListWatch(" in Path(str(follower.__file__)).read_text(encoding="utf-8")
