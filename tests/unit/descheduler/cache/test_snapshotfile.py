"""Snapshot files: a kubectl List (gzipped or not) read as the live caches project it, NodeReports
judged at capture time, and bad input named item by item (exit 2 from the CLI)."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
from agent.config.errors import ConfigError
from agent.descheduler.cache.projection import project_node, project_pod
from agent.descheduler.cache.snapshotfile import load_snapshot
from tests.harness.deschedulerstate import node, pdb, pod, write_snapshot_file
from tests.harness.kubeobjects import list_document, node_report
from tests.harness.repository import EXAMPLES

NOW = 1_800_000_000.0


def _report(
    name: str, observed: str, *, owner_uid: str | None = None, **status: Any
) -> dict[str, Any]:
    """A NodeReport owned by the Node ``name`` (``tests.harness.deschedulerstate``'s uid)."""
    usage = {"cpu": 0.5, "memory": 2**30}
    return node_report(name, observed, node_uid=owner_uid, **{"usage": usage, **status})


def _created(item: dict[str, Any], stamp: str) -> dict[str, Any]:
    """``item`` as the API server stamped it at ``stamp``."""
    return {**item, "metadata": {**item["metadata"], "creationTimestamp": stamp}}


def test_items_are_projected_as_the_caches_project_them(tmp_path: Path) -> None:
    """Every pod and node of the shipped sample equals the dict path's projection of it; the
    PDBs, namespaces and priority classes are all there."""
    snapshot, ignored, _, _ = load_snapshot(EXAMPLES / "snapshot.json.gz", now=NOW)
    with gzip.open(EXAMPLES / "snapshot.json.gz") as stream:
        items = json.load(stream)["items"]
    pods = {f"{p.namespace}/{p.name}": p for ps in snapshot.pods_by_node.values() for p in ps}
    for item in items:
        if item["kind"] == "Pod":
            expected = project_pod(item)
            assert pods[f"{expected.namespace}/{expected.name}"] == expected
        elif item["kind"] == "Node":
            expected_node = project_node(item, with_images=True)
            assert snapshot.nodes[item["metadata"]["name"]] == expected_node
    assert sum(len(p) for p in snapshot.pods_by_node.values()) == sum(
        1 for i in items if i["kind"] == "Pod"
    )
    assert sorted(b.name for bs in snapshot.disruption_budgets.values() for b in bs) == [
        "postgres",
        "web",
    ]
    assert snapshot.priority_classes["shop-critical"] == 100_000
    assert snapshot.namespaces["shop"] == {"kubernetes.io/metadata.name": "shop"}
    assert snapshot.now == NOW
    assert ignored == {}


def test_gzip_is_recognised_by_its_bytes_not_its_name(tmp_path: Path) -> None:
    """A gzipped file named ``.json`` and a plain one named ``.gz`` read the same."""
    document = list_document(node("n1"), pod("p", "n1"))
    zipped = load_snapshot(
        write_snapshot_file(tmp_path / "a.json", document, gzipped=True), now=NOW
    )
    plain = load_snapshot(write_snapshot_file(tmp_path / "b.json.gz", document), now=NOW)
    assert zipped == plain
    assert [p.name for p in zipped[0].pods_on("n1")] == ["p"]


def test_node_images_are_read_for_placement(tmp_path: Path) -> None:
    """A node's ``status.images`` are kept by every name, with the image's size (a size
    that is not a non-negative integer counts 0): ImageLocality scores them."""
    with_images = node("n1")
    with_images["status"]["images"] = [
        {"names": ["registry.example/app@sha256:ab", "registry.example/app:1"], "sizeBytes": 7},
        {"names": ["bad:size"], "sizeBytes": -3},
        {"names": ["nosize:1"]},
    ]
    snapshot = load_snapshot(
        write_snapshot_file(tmp_path / "s.json", list_document(with_images)), now=NOW
    ).snapshot
    assert snapshot.nodes["n1"].images == {
        "registry.example/app@sha256:ab": 7,
        "registry.example/app:1": 7,
        "bad:size": 0,
        "nosize:1": 0,
    }


def test_typed_lists_and_unknown_kinds(tmp_path: Path) -> None:
    """Items of a typed list (``PodList``) need no kind; other kinds are counted, not read."""
    pods = {**list_document({**pod("p", "n1"), "kind": None}), "kind": "PodList"}
    snapshot = load_snapshot(write_snapshot_file(tmp_path / "pods.json", pods), now=NOW).snapshot
    assert [p.name for p in snapshot.pods_on("n1")] == ["p"]
    mixed = list_document(node("n1"), {"kind": "Service", "metadata": {"name": "s"}})
    ignored = load_snapshot(write_snapshot_file(tmp_path / "mixed.json", mixed), now=NOW).ignored
    assert ignored == {"Service": 1}


def test_node_reports_are_judged_at_the_capture_time_given(tmp_path: Path) -> None:
    """With ``captured_at``, reports are stale against it (not against today), and a fresh
    report saying shutdown makes its node no room."""
    snapshot_file = write_snapshot_file(
        tmp_path / "s.json", list_document(node("a"), node("b"), node("c"))
    )
    reports = write_snapshot_file(
        tmp_path / "r.json.gz",
        list_document(
            _report("a", "2026-11-01T10:00:00Z"),
            _report("b", "2026-11-01T09:00:00Z"),
            _report("c", "2026-11-01T10:00:00Z", shutdown={"state": "inProgress"}),
        ),
        gzipped=True,
    )
    captured = 1_793_527_260.0  # 2026-11-01T10:01:00Z
    loaded = load_snapshot(snapshot_file, now=NOW, node_reports=reports, captured_at=captured)
    usage = loaded.snapshot.node_usage
    assert (usage["a"].stale, usage["b"].stale) == (False, True)
    assert usage["a"].usage == {"cpu": 500, "memory": 2**30}
    assert not usage["c"].usable_as_destination
    assert (loaded.captured_at, loaded.snapshot.now) == (captured, captured)


def test_without_a_capture_time_the_newest_server_stamp_is_taken(tmp_path: Path) -> None:
    """The capture time defaults to the newest time the API server stamped (creation,
    deletion, managedFields), never to a report's own observedTime."""
    stamped = _created(node("b"), "2026-11-01T10:00:30Z")
    stamped["metadata"]["managedFields"] = [{"time": "2026-11-01T10:01:00Z"}]
    items = [_created(node("a"), "2026-01-01T00:00:00Z"), stamped]
    reports = [_report("a", "2026-11-01T10:00:50Z"), _report("b", "2026-11-01T09:00:00Z")]
    loaded = load_snapshot(
        write_snapshot_file(tmp_path / "s.json", list_document(*items, *reports)), now=NOW
    )
    assert loaded.captured_at == 1_793_527_260.0  # 10:01:00, the managedFields time
    assert (loaded.snapshot.node_usage["a"].stale, loaded.snapshot.node_usage["b"].stale) == (
        False,
        True,
    )
    assert loaded.snapshot.now == NOW  # pod ages still count to now without --captured-at


def test_a_report_from_the_future_cannot_make_the_others_stale(tmp_path: Path) -> None:
    """One report dated 2099 is distrusted as from the future; the others are judged at the
    snapshot's own capture time and stay fresh."""
    items = [_created(node("a"), "2026-11-01T10:00:30Z"), node("z")]
    reports = [_report("a", "2026-11-01T10:00:00Z"), _report("z", "2099-01-01T00:00:00Z")]
    loaded = load_snapshot(
        write_snapshot_file(tmp_path / "s.json", list_document(*items, *reports)), now=NOW
    )
    assert not loaded.snapshot.node_usage["a"].stale
    assert "z" not in loaded.snapshot.node_usage
    assert loaded.distrusted["z"].reason == "future-timestamp"


@pytest.mark.parametrize(
    ("report", "reason"),
    [
        pytest.param(
            _report("a", "2026-11-01T10:00:00Z", owner_uid="uid-b"), "not-owned", id="foreign"
        ),
        pytest.param(
            {**_report("a", "2026-11-01T10:00:00Z"), "metadata": {"name": "a"}},
            "not-owned",
            id="unowned",
        ),
        pytest.param(_report("ghost", "2026-11-01T10:00:00Z"), "no-node", id="no-node"),
        pytest.param(
            _report("a", "2026-11-01T10:00:00Z", usage={"cpu": 1e6, "memory": 1}),
            "implausible",
            id="absurd",
        ),
        pytest.param(
            _report("a", "2026-11-01T10:00:00Z", usage={"cpu": 1, "memory": 10**400}),
            "invalid",
            id="overflowing",
        ),
    ],
)
def test_reports_the_descheduler_cannot_believe_are_left_out(
    tmp_path: Path, report: dict[str, Any], reason: str
) -> None:
    """A forged, foreign-owned, orphaned or absurd report gives its node no usage (the
    node falls back to requests) and is named with its reason."""
    items = [_created(node("a"), "2026-11-01T10:00:30Z"), node("b"), report]
    loaded = load_snapshot(write_snapshot_file(tmp_path / "s.json", list_document(*items)), now=NOW)
    assert loaded.snapshot.node_usage == {}
    (distrusted,) = loaded.distrusted.values()
    assert distrusted.reason == reason


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(b"{not json", ["not JSON"], id="not-json"),
        pytest.param(b"\x1f\x8bnot really gzip", ["not a valid gzip file"], id="bad-gzip"),
        pytest.param(
            json.dumps(node("n1")).encode(), ["kind: expected a List", "'Node'"], id="not-a-list"
        ),
        pytest.param(
            json.dumps({"kind": "List", "items": {"a": 1}}).encode(),
            ["items: Expected `array | null`, got `object`"],
            id="items-not-an-array",
        ),
        pytest.param(
            json.dumps(
                list_document(
                    node("n1"),
                    {"kind": "Pod", "metadata": {}},
                    {"metadata": {"name": "x"}},
                    {**pod("p", "n1"), "metadata": {"name": "p", "labels": ["a"]}},
                    {**node("n2"), "status": {"allocatable": "4"}},
                    7,
                )
            ).encode(),
            [
                "items[1].metadata.name: is required",
                "items[2].kind: is required",
                "items[3].metadata.labels: not a map of strings",
                "items[4].status.allocatable: Expected `object | null`, got `str`",
                "items[5]: Expected `object`, got `int`",
            ],
            id="every-bad-item-by-path",
        ),
    ],
)
def test_bad_snapshots_name_every_problem(
    tmp_path: Path, content: bytes, expected: list[str]
) -> None:
    """Bad input raises ConfigError naming each bad item with its path, not just the first."""
    path = tmp_path / "snapshot.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as raised:
        load_snapshot(path, now=NOW)
    text = str(raised.value)
    for part in expected:
        assert part in text


def test_node_reports_file_takes_only_node_reports(tmp_path: Path) -> None:
    """A NodeReports file holding something else is an error at that item."""
    snapshot_file = write_snapshot_file(tmp_path / "s.json", list_document(node("a")))
    reports = write_snapshot_file(
        tmp_path / "r.json", list_document(_report("a", "2026-11-01T10:00:00Z"), node("b"))
    )
    with pytest.raises(ConfigError, match=r"items\[1\]\.kind: expected NodeReport, got 'Node'"):
        load_snapshot(snapshot_file, now=NOW, node_reports=reports)


def test_cli_exits_2_naming_the_bad_policy_and_the_bad_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``descheduler plan`` with a bad policy arg and a bad snapshot item exits 2 and names
    both, each with its file and path, with no traceback."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "- name: p\n  pluginConfig:\n  - name: LowNodeUtilization\n    args:\n"
        "      thresholds: {cpu: 120}\n  plugins:\n    balance:\n"
        "      enabled: [LowNodeUtilization]\n"
    )
    snapshot = write_snapshot_file(
        tmp_path / "s.json", list_document(node("n1"), {"kind": "Pod", "metadata": {}})
    )
    code = main(
        ["descheduler", "plan", "--snapshot", str(snapshot), "--policy-config-file", str(policy)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"{policy}: profiles[0].pluginConfig[0].args.thresholds" in err
    assert f"{snapshot}: items[1].metadata.name: is required" in err
    assert "Traceback" not in err


def test_cli_exits_2_for_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A snapshot that cannot be read is exit 2 naming the file."""
    code = main(
        [
            "descheduler",
            "plan",
            "--snapshot",
            str(tmp_path / "absent.json"),
            "--policy-config-file",
            str(EXAMPLES / "policy.yaml"),
        ]
    )
    assert code == 2
    assert "absent.json: cannot read" in capsys.readouterr().err


def test_budgets_in_a_snapshot_block_as_the_api_server_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PDB with no disruption left in the file holds the eviction in the plan, as in
    ``--dry-run``; the JSON is the plan shape with destinations (the held one's where it
    goes once its budget allows)."""
    items = [node("n1"), node("n2"), node("n3")]
    items += [pod(f"db-{i}", "n1", labels={"app": "db"}) for i in range(3)]
    items += [pdb("db", match_labels={"app": "db"}, disruptions_allowed=1)]
    snapshot = write_snapshot_file(tmp_path / "s.json", list_document(*items))
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "- name: p\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n"
    )
    argv = ["descheduler", "plan", "--snapshot", str(snapshot), "--policy-config-file"]
    assert main([*argv, str(policy), "--output", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [(e["pod"], e["blockedByPDB"], e["destination"]) for e in plan["evictions"]] == [
        ("default/db-1", False, "n2"),
        ("default/db-2", True, "n3"),
    ]
    assert plan["summary"]["blockedByPDB"] == 1


class _Counted:
    """A zlib decompressor that counts the bytes it is handed (each call copies its input
    into ``unused_data`` or ``unconsumed_tail`` when it stops early) and that it produces."""

    handed = 0
    produced = 0

    def __init__(self, make: Any, wbits: int) -> None:
        self._stream = make(wbits)

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        _Counted.handed += len(data)
        out: bytes = self._stream.decompress(data, max_length)
        _Counted.produced += len(out)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[_Counted]:
    make = zlib.decompressobj
    monkeypatch.setattr(zlib, "decompressobj", lambda wbits: _Counted(make, wbits))
    _Counted.handed = _Counted.produced = 0
    return _Counted


def test_gzip_members_cost_linear_work(tmp_path: Path, counted: type[_Counted]) -> None:
    """20,000 gzip members (empty ones, 20 bytes each, then the document) are decoded
    handing each decoder about its own member, never the rest of the input: the bytes
    handed stay within a few times the file (handing each the rest was quadratic: 8 MB of
    empty members took 42 s)."""
    document = json.dumps(list_document(node("a"))).encode()
    data = gzip.compress(b"") * 20_000 + gzip.compress(document)
    path = tmp_path / "members.json.gz"
    path.write_bytes(data)
    assert load_snapshot(path, now=NOW).snapshot.nodes.keys() == {"a"}
    assert counted.handed <= 4 * len(data)


def test_a_gzip_bomb_stops_at_the_limit(tmp_path: Path, counted: type[_Counted]) -> None:
    """What a gzip expands to is bounded too: 50 MB from 50 KB stops one byte past a 1 MB
    limit, not at its end."""
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * 50_000_000, compresslevel=9))
    with pytest.raises(ConfigError, match="larger than 1000000 bytes: refused after gunzipping"):
        load_snapshot(path, now=NOW, max_bytes=1_000_000)
    assert counted.produced == 1_000_001
