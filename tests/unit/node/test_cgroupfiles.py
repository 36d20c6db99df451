"""The no-symlink, same-filesystem walk under every cgroup read and write."""

import os
from pathlib import Path

import pytest

from agent.node.cgroupfiles import CgroupPathError, open_directory, read_file, write_file


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "memory.swap.max").write_text("max\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "memory.swap.max").write_text("max\n")
    return tmp_path


def test_write_replaces_an_existing_file(tree: Path) -> None:
    """The value replaces the old content entirely (truncated, not overlaid)."""
    with open_directory(tree, ["a", "b"]) as fd:
        write_file(fd, "memory.swap.max", "0")
        assert read_file(fd, "memory.swap.max") == "0"


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "x\0y"])
def test_bad_components_are_refused_before_any_syscall(tree: Path, bad: str) -> None:
    """Empty, dot, dot-dot, slash and NUL components never reach open(2)."""
    with pytest.raises(CgroupPathError), open_directory(tree, ["a", bad]):
        pass


def test_symlinked_directory_is_not_entered(tree: Path) -> None:
    """A symlink where a directory should be fails the walk (ELOOP/ENOTDIR)."""
    (tree / "a" / "link").symlink_to(tree / "outside")
    with pytest.raises(CgroupPathError), open_directory(tree, ["a", "link"]):
        pass


def test_symlinked_file_is_neither_read_nor_written(tree: Path) -> None:
    """A file that is a symlink to somewhere else stays untouched."""
    target = tree / "outside" / "memory.swap.max"
    (tree / "a" / "io.latency").symlink_to(target)
    with open_directory(tree, ["a"]) as fd:
        assert read_file(fd, "io.latency") is None
        with pytest.raises(CgroupPathError):
            write_file(fd, "io.latency", "0")
    assert target.read_text() == "max\n"


def test_missing_file_is_not_created(tree: Path) -> None:
    """Writes never create files: only what the kernel made is changed."""
    with open_directory(tree, ["a"]) as fd, pytest.raises(CgroupPathError):
        write_file(fd, "memory.swap.max", "0")
    assert not (tree / "a" / "memory.swap.max").exists()


def test_fifo_in_place_of_a_file_fails_fast(tree: Path) -> None:
    """A FIFO named like a cgroup file cannot hang the agent."""
    os.mkfifo(tree / "a" / "memory.swap.max")
    with open_directory(tree, ["a"]) as fd:
        assert read_file(fd, "memory.swap.max") is None
        with pytest.raises(CgroupPathError):
            write_file(fd, "memory.swap.max", "0")
