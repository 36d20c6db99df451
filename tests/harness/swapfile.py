"""A real swap file, switched on for a test and always switched off and removed after.

Swap files need a filesystem that supports them (not tmpfs), so the file lives under
``/var/tmp``. Root only; the fixture skips with the reason otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SWAP_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class SwapFile:
    path: Path
    size_bytes: int

    def active(self) -> bool:
        text = Path("/proc/swaps").read_text(encoding="utf-8")
        return any(line.split()[0] == str(self.path) for line in text.splitlines()[1:] if line)


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run swapon/swapoff"
    for tool in ("mkswap", "swapon", "swapoff"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (util-linux)"
    return None


def _write_zeros(path: Path, size: int) -> None:
    # Written out, not fallocated: some filesystems refuse swap on preallocated extents.
    chunk = b"\0" * (1024 * 1024)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for _ in range(size // len(chunk)):
            os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)


@pytest.fixture
def swap_file() -> Iterator[SwapFile]:
    """A 32 MiB swap file that is on for the duration of the test."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kc-swap-", dir="/var/tmp"))
    swap = SwapFile(directory / "swapfile", SWAP_BYTES)
    try:
        _write_zeros(swap.path, SWAP_BYTES)
        subprocess.run(["mkswap", str(swap.path)], check=True, capture_output=True)
        result = subprocess.run(
            ["swapon", str(swap.path)], check=False, capture_output=True, text=True
        )
        if result.returncode != 0:
            pytest.skip(f"swapon refused a swap file here: {result.stderr.strip()}")
        yield swap
    finally:
        refusals = _switch_off(swap)
        shutil.rmtree(directory, ignore_errors=True)
        if refusals:  # the test that left it on fails, not a later one that finds it
            pytest.fail(f"swapoff {swap.path} kept refusing: {refusals}")


def _switch_off(swap: SwapFile, attempts: int = 5) -> list[str]:
    """Switch the file off, trying again while swapoff refuses (it can, briefly, when the
    kernel is still paging the file's contents back in); the refusals if it stays on."""
    refusals: list[str] = []
    for _ in range(attempts):
        if not swap.active():
            return []
        result = subprocess.run(
            ["swapoff", str(swap.path)], check=False, capture_output=True, text=True
        )
        if result.returncode != 0:
            refusals.append(result.stderr.strip() or f"exit {result.returncode}")
    return refusals if swap.active() else []
