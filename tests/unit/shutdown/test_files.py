"""Our files: the logind drop-in and the state file, written atomically, never lost."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import stat
import subprocess
import sys
from pathlib import Path

from agent.config.shutdown import PriorityBucket
from agent.logind.dropin import dropin_text, write_dropin
from agent.node.statefile import read_json, write_json_atomic
from agent.shutdown.record import ShutdownRecord, begin_record
from agent.shutdown.store import RecordStore
from tests.harness.repository import REPO


def test_dropin_sets_the_delay_in_whole_seconds() -> None:
    """The drop-in has a [Login] section with InhibitDelayMaxSec rounded up."""
    text = dropin_text(35.2)
    assert "[Login]\n" in text
    assert text.endswith("InhibitDelayMaxSec=36\n")


def test_dropin_is_written_with_modes_and_only_when_changed(tmp_path: Path) -> None:
    """Parents 0755 are made, the file is 0644, and a rewrite with the same value is skipped."""
    path = tmp_path / "logind.conf.d" / "99-zz-kubelet-companion.conf"
    assert write_dropin(path, 35) is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755
    assert write_dropin(path, 35) is False
    assert write_dropin(path, 40) is True
    assert "InhibitDelayMaxSec=40" in path.read_text()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left


def test_state_file_write_is_atomic_and_readable(tmp_path: Path) -> None:
    """A write replaces the file whole and leaves no temp file beside it."""
    path = tmp_path / "state" / "shutdown-state.json"
    write_json_atomic(path, {"a": 1})
    write_json_atomic(path, {"a": 2})
    assert read_json(path) == {"a": 2}
    assert sorted(p.name for p in path.parent.iterdir()) == ["shutdown-state.json"]


def _record() -> ShutdownRecord:
    return begin_record(
        (PriorityBucket(0, 5),), start_time=10.0, start_monotonic=1.0, boot_id="b", mode="delete"
    )


def test_store_round_trips_a_record(tmp_path: Path) -> None:
    """A saved record loads back equal."""
    store = RecordStore(tmp_path / "s.json")
    asyncio.run(store.save(_record()))
    assert store.load() == _record()


def test_store_without_a_file_loads_nothing(tmp_path: Path) -> None:
    """No state file means no earlier shutdown."""
    assert RecordStore(tmp_path / "missing.json").load() is None


def test_corrupt_state_file_is_moved_aside_not_lost(tmp_path: Path) -> None:
    """A file that is not ours loads as nothing and is kept beside, renamed .corrupt-<time>."""
    path = tmp_path / "s.json"
    path.write_text("{not json")
    assert RecordStore(path).load() is None
    assert not path.exists()
    (kept,) = tmp_path.glob("s.json.corrupt-*")
    assert kept.read_text() == "{not json"


def test_state_file_of_the_wrong_shape_is_moved_aside(tmp_path: Path) -> None:
    """Valid JSON without our fields is also moved aside, with its content intact."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"startTime": "2024-01-01T00:00:00Z"}))
    assert RecordStore(path).load() is None
    (kept,) = tmp_path.glob("s.json.corrupt-*")
    assert json.loads(kept.read_text()) == {"startTime": "2024-01-01T00:00:00Z"}


async def test_store_coalesces_to_the_latest_record(tmp_path: Path) -> None:
    """Many saves in a burst end with the newest record on disk."""
    store = RecordStore(tmp_path / "s.json")
    records = [dataclasses.replace(_record(), budget_seconds=n) for n in range(1, 20)]
    for each in records:
        store.save_soon(each)
    await store.flush()
    await asyncio.sleep(0)
    loaded = store.load()
    assert loaded is not None
    assert loaded.budget_seconds == 19


async def test_store_reports_a_failed_write(tmp_path: Path) -> None:
    """An unwritable location makes save return False instead of raising."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = RecordStore(blocker / "sub" / "s.json")
    assert await store.save(_record()) is False


async def test_an_earlier_background_save_never_overwrites_a_later_save(tmp_path: Path) -> None:
    """save_soon(A) then save(B): B is what stays on disk, whatever order the tasks run in."""
    store = RecordStore(tmp_path / "s.json")
    store.save_soon(dataclasses.replace(_record(), budget_seconds=1))
    await store.save(dataclasses.replace(_record(), budget_seconds=2))
    await store.flush()
    loaded = store.load()
    assert loaded is not None
    assert loaded.budget_seconds == 2


_SAVE_UNDER_A_FILE_SIZE_LIMIT = """
import asyncio, resource, signal, sys
from pathlib import Path
from agent.config.shutdown import PriorityBucket
from agent.shutdown.record import begin_record
from agent.shutdown.store import RecordStore

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
big = begin_record(
    tuple(PriorityBucket(priority, 1) for priority in range(200)),
    start_time=20.0, start_monotonic=2.0, boot_id="b", mode="delete",
)
sys.exit(0 if asyncio.run(RecordStore(Path(sys.argv[1])).save(big)) else 3)
"""


def test_a_write_that_fails_midway_leaves_the_previous_record_whole(tmp_path: Path) -> None:
    """A state-file write cut short (here by the file size limit) never tears the old file."""
    path = tmp_path / "s.json"
    asyncio.run(RecordStore(path).save(_record()))
    # A real failure, in a child process: no part of the writer is replaced.
    result = subprocess.run(
        [sys.executable, "-c", _SAVE_UNDER_A_FILE_SIZE_LIMIT, str(path)],
        capture_output=True,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 3, result.stderr.decode()[-2000:]  # the save failed...
    assert RecordStore(path).load() == _record()  # ...and the old record is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # no temp file left
