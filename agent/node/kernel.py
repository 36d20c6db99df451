"""Kernel identity and the few sysctls the swap guide cares about."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.node.paths import HostPaths, read_text

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class KernelFacts:
    release: str
    version: tuple[int, int, int]
    min_free_kbytes: int | None
    boot_id: str | None
    in_user_namespace: bool


def parse_kernel_version(release: str) -> tuple[int, int, int]:
    match = _VERSION.match(release)
    if not match:
        return (0, 0, 0)
    major, minor, patch = match.groups()
    return (int(major), int(minor), int(patch or 0))


def in_user_namespace(uid_map: str | None) -> bool:
    """The rule of runc's ``RunningInUserNS``: the initial namespace maps all 2^32-1 ids."""
    if uid_map is None:
        return False
    lines = [line.split() for line in uid_map.strip().splitlines()]
    return lines != [["0", "0", "4294967295"]]


def read_boot_id(paths: HostPaths) -> str | None:
    text = read_text(paths.proc / "sys" / "kernel" / "random" / "boot_id")
    return text.strip() if text else None


def read_min_free_kbytes(paths: HostPaths) -> int | None:
    """``vm.min_free_kbytes``, the free memory below which the kernel reclaims (and swaps)."""
    text = read_text(paths.proc / "sys" / "vm" / "min_free_kbytes")
    return int(text) if text and text.strip().isdigit() else None


def read_kernel(paths: HostPaths) -> KernelFacts:
    release = (read_text(paths.proc / "sys" / "kernel" / "osrelease") or "").strip()
    min_free = read_min_free_kbytes(paths)
    return KernelFacts(
        release=release,
        version=parse_kernel_version(release),
        min_free_kbytes=min_free,
        boot_id=read_boot_id(paths),
        in_user_namespace=in_user_namespace(read_text(paths.proc / "self" / "uid_map")),
    )
