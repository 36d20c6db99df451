"""A pod list page cut into items by byte search gives exactly what parsing it gives."""

import copy
import gzip
import json
from typing import Any

import msgspec
import pytest

from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist.pagesplit import compact_page, pieces
from agent.descheduler.cache.podlist.projector import PodListProjector
from tests.harness.repository import CLUSTER_1K
from tests.unit.descheduler.cache.test_wire import PENDING_ADDON, RICH_POD


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    pod = copy.deepcopy(RICH_POD)
    pod["metadata"]["name"] = name
    pod.update(extra)
    return pod


def _compact(page: dict[str, Any]) -> bytes:
    return json.dumps(page, separators=(",", ":")).encode()


def _page(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "PodList", "metadata": {"resourceVersion": "42"}, "items": items}


def _entries(data: bytes) -> tuple[dict[str, Any], list[Any]]:
    listing = PodListProjector().decode_page(data)
    return listing["metadata"], list(listing["entries"])


def _exact(data: bytes) -> list[Any]:
    return [
        (f"{pod['metadata']['namespace']}/{pod['metadata']['name']}", projection.project_pod(pod))
        for pod in json.loads(data)["items"]
    ]


# A list of objects whose first key is ``metadata``, inside a pod: the boundary's bytes
# occur in the middle of the item, so the cut there is wrong and must be caught.
LOOKALIKE = {"spec": {**RICH_POD["spec"], "x": [{"metadata": {"a": 1}}, {"metadata": {"b": 2}}]}}

PAGES = [
    pytest.param([_pod("a"), _pod("b"), _pod("c")], id="plain"),
    pytest.param([], id="no-items"),
    pytest.param([_pod("only")], id="one-item"),
    pytest.param([_pod("a"), _pod("look", **LOOKALIKE), _pod("c")], id="lookalike-in-the-middle"),
    pytest.param([_pod("look", **LOOKALIKE), _pod("b")], id="lookalike-first"),
    pytest.param([_pod("a"), _pod("look", **LOOKALIKE)], id="lookalike-last"),
    pytest.param(
        [{"kind": "Pod", **_pod("k1")}, {"kind": "Pod", **_pod("k2")}], id="items-open-with-kind"
    ),
    pytest.param([_pod("a"), PENDING_ADDON], id="pending"),
]


@pytest.mark.parametrize("items", PAGES)
def test_a_compact_page_projects_as_parsed(items: list[dict[str, Any]]) -> None:
    """Every item of a compact page comes out once, in order, projected as ``project_pod``
    projects the parsed item, with the page's own metadata; a cut inside an item is caught."""
    data = _compact(_page(items))
    assert compact_page(data) is not None
    metadata, entries = _entries(data)
    assert metadata == {"resourceVersion": "42"}
    assert entries == _exact(data)


def test_trailing_whitespace_keeps_a_page_compact() -> None:
    """A newline after the page (as a server may send) still lets it be cut."""
    data = _compact(_page([_pod("a"), _pod("b")])) + b"\r\n\n"
    assert compact_page(data) is not None
    assert _entries(data)[1] == _exact(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(json.dumps(_page([_pod("a"), _pod("b")])).encode(), id="spaces"),
        pytest.param(json.dumps(_page([_pod("a"), _pod("b")]), indent=2).encode(), id="indented"),
        pytest.param(
            _compact({"items": [_pod("a"), _pod("b")], "metadata": {"resourceVersion": "42"}}),
            id="items-not-last",
        ),
    ],
)
def test_any_other_page_is_parsed(data: bytes) -> None:
    """A page not in the compact shape is read by parsing it, with the same result."""
    assert compact_page(data) is None
    metadata, entries = _entries(data)
    assert metadata == {"resourceVersion": "42"}
    assert entries == _exact(data)


def test_a_lookalike_cut_is_a_proposal_only() -> None:
    """The byte search does propose a cut inside the lookalike item (so the check above is
    what keeps the result right), and every proposed piece before it is a whole item."""
    items = [_pod("a"), _pod("look", **LOOKALIKE), _pod("c")]
    data = _compact(_page(items))
    layout = compact_page(data)
    assert layout is not None
    proposed = [bytes(piece) for piece in pieces(data, layout)]
    assert len(proposed) == 4  # one too many: the lookalike is cut in two
    assert json.loads(proposed[0]) == items[0]
    with pytest.raises(json.JSONDecodeError):
        json.loads(proposed[1])


def test_a_truncated_page_fails_as_a_parse_would() -> None:
    """A page cut short raises a decode error (the list is retried) rather than yielding
    the items before the cut as if they were all."""
    data = _compact(_page([_pod("a"), _pod("b")]))[:-40]
    with pytest.raises(msgspec.DecodeError):
        _entries(data)


def test_the_page_is_not_held_after_its_last_item() -> None:
    """The previous pod's raw parts (slices of the page) are dropped with the page's last
    item, so a 400 MB page is not kept alive by the projector until the next list."""
    projector = PodListProjector()
    listing = projector.decode_page(_compact(_page([_pod("a"), _pod("b")])))
    assert len(list(listing["entries"])) == 2
    assert projector._last.labels_raw is None
    assert projector._last.probe is None


def test_every_fixture_pod_is_cut_where_parsing_finds_it() -> None:
    """On the parity fixture's 30,024 pods, the cut pieces are the items, byte for byte."""
    with gzip.open(CLUSTER_1K) as stream:
        items = [item for item in json.load(stream)["items"] if item["kind"] == "Pod"]
    data = _compact(_page(items))
    layout = compact_page(data)
    assert layout is not None
    assert [json.loads(bytes(piece)) for piece in pieces(data, layout)] == items
