"""Exec a program tied to the harness's lifetime, in a private mount namespace if asked.

systemd-logind hard-codes its paths (/run/systemd, /etc/systemd/logind.conf[.d],
/var/lib/systemd/linger), so the only way to give it harness-owned state without
touching the host is to bind-mount temp directories over those paths in a mount
namespace that only the logind process sees. This launcher does exactly that and
then ``execv``s the program, so the pid the harness holds *is* the program's pid.
``--die-with-parent`` sets PR_SET_PDEATHSIG (kept across exec) so logind and
dbus-daemon die with the harness thread that spawned them even if the test process
is SIGKILLed and never runs its teardown.

It is deliberately stdlib-only and self-contained: the harness runs it as
``python -I <this file>`` (no package imports, no PYTHONPATH), and it can also be
run by hand as ``python -m tests.harness.logind.launch``. No shell is involved:
every path arrives as a separate argv element.

Usage::

    launch.py [--die-with-parent PPID] [--bind SRC DST]... -- PROGRAM [ARG]...
    launch.py --probe   # exit 0 iff namespaces and bind mounts work here
"""

import argparse
import ctypes
import ctypes.util
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
SIGKILL = 9

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, flags: int) -> None:
    src = source.encode() if source is not None else None
    _check(_libc.mount(src, target.encode(), None, flags, None), f"mount {source} -> {target}")


def enter_private_mount_namespace() -> None:
    """Detach from the host's mount namespace so later mounts stay invisible to it."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # Without this, bind mounts would propagate back to the host's shared "/".
    _mount(None, "/", MS_REC | MS_PRIVATE)


def bind(source: str, target: str) -> None:
    """Bind-mount ``source`` over ``target`` (both must already exist)."""
    _mount(source, target, MS_BIND | MS_REC)


def die_with_parent(expected_parent: int) -> None:
    """SIGKILL us when the spawning thread goes away (and now, if it already has)."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != expected_parent:
        raise SystemExit(f"parent {expected_parent} is already gone")


def launcher_argv() -> list[str]:
    """argv prefix that runs this file, isolated, with the current interpreter."""
    return [sys.executable, "-I", str(Path(__file__).resolve())]


def command(
    program: list[str],
    *,
    binds: Sequence[tuple[str, str]] = (),
    die_with_parent_pid: int | None = None,
) -> list[str]:
    """argv that runs ``program`` through this launcher with the current interpreter."""
    argv = launcher_argv()
    if die_with_parent_pid is not None:
        argv += ["--die-with-parent", str(die_with_parent_pid)]
    for source, target in binds:
        argv += ["--bind", source, target]
    return [*argv, "--", *program]


def _probe() -> None:
    enter_private_mount_namespace()
    with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dst:
        bind(src, dst)
        _check(_libc.umount2(dst.encode(), 0), f"umount {dst}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", action="store_true", help="only check that this works")
    parser.add_argument(
        "--die-with-parent", type=int, metavar="PPID", help="SIGKILL when pid PPID's thread exits"
    )
    parser.add_argument(
        "--bind",
        nargs=2,
        action="append",
        default=[],
        metavar=("SRC", "DST"),
        help="bind mount SRC over DST in a private mount namespace",
    )
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARG]...")
    args = parser.parse_args(argv)
    if args.probe:
        _probe()
        return
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given")
    if args.die_with_parent is not None:
        die_with_parent(args.die_with_parent)
    if args.bind:
        enter_private_mount_namespace()
        for source, target in args.bind:
            bind(source, target)
    os.execv(program[0], program)  # noqa: S606 - argv list, no shell; replaces this process


if __name__ == "__main__":
    main(sys.argv[1:])
