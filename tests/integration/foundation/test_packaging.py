"""Packaging: a fresh wheel build prints no deprecation warning (setuptools' license table)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.harness.wheel import build_wheel


def test_a_fresh_wheel_build_prints_no_deprecation_warning(tmp_path: Path) -> None:
    """Building the wheel (setuptools>=77 from the test extras, no network) warns about nothing."""
    pytest.importorskip(
        "setuptools", minversion="77", reason="the test extras bring setuptools>=77"
    )
    wheel, output = build_wheel(tmp_path, verbose=True)
    assert wheel is not None, output
    assert "Deprecation" not in output, output
    assert "deprecated" not in output.lower(), output
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(metadata_name).decode()
    assert "License-Expression: Apache-2.0" in metadata
