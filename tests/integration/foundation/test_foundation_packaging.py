"""Packaging: a fresh wheel build prints no deprecation warning (setuptools' license table)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def test_a_fresh_wheel_build_prints_no_deprecation_warning(tmp_path: Path) -> None:
    """Building the wheel (setuptools>=77 from the test extras, no network) warns about nothing."""
    pytest.importorskip(
        "setuptools", minversion="77", reason="the test extras bring setuptools>=77"
    )
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "agent", source / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-v", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Deprecation" not in output, output
    assert "deprecated" not in output.lower(), output
    (wheel,) = (tmp_path / "dist").glob("kubelet_companion-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(metadata_name).decode()
    assert "License-Expression: Apache-2.0" in metadata
