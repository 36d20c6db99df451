"""CLI subcommands of the readiness capability."""

from __future__ import annotations

import argparse


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add this capability's subcommands (none yet)."""
