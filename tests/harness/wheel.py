"""Building the product's wheel in a test, from a private copy of the source.

``pip wheel`` on the repository itself builds in its ``build/`` directory, which two test
processes (xdist workers) building at once trip over ("File exists"). A copy of what the
wheel is made of, in the test's own directory, builds alone; setuptools>=77 from the test
extras, no build isolation and no network.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md")
"""The files beside ``agent/`` the build reads (the README is the long description)."""


def build_wheel(workdir: Path, *, verbose: bool = False) -> tuple[Path | None, str]:
    """Build the wheel under ``workdir``; the wheel (``None`` on failure) and pip's output."""
    source = workdir / "src"
    source.mkdir()
    for name in SOURCES:
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "agent", source / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    dist = workdir / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-v" if verbose else "-q", "-w", str(dist), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    if result.returncode != 0:
        return None, output
    (wheel,) = dist.glob("kubelet_companion-*.whl")
    return wheel, output
