"""The agent as the soak runs it: ``agent.cli.main`` in a process of its own.

Run as ``python -m tests.soak.agent_child [--break NAME] -- agent --config FILE``; the fork
server (``forkserver.py``) calls ``run`` in a forked child instead. Either way the process
runs the same entry point as ``kubelet-companion agent``; ``--break`` applies one of the
test-only breaks in ``breaks.py`` first (and only ever in this process).
"""

from __future__ import annotations

import sys

from tests.soak import breaks


def run(argv: list[str], break_name: str | None) -> int:
    """Apply ``break_name`` (if any), then run the agent CLI with ``argv``."""
    if break_name:
        breaks.apply(break_name)
    from agent.cli import main  # noqa: PLC0415 - after the break is in place

    return main(argv)


def main(argv: list[str]) -> int:
    break_name = None
    if argv[:1] == ["--break"]:
        break_name, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    return run(argv, break_name)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
