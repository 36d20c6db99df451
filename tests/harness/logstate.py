"""Logging is process-global: every test gets it back as it found it.

Commands under test configure structlog and the root logger onto the stream they were given
(a captured stderr that is gone after the test); left so, the next test's log lines would go
there, or be filtered at the level the last command chose. Autouse for the whole suite.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Put structlog's defaults and the root logger's handlers and level back after a test."""
    handlers, level = logging.getLogger().handlers[:], logging.getLogger().level
    yield
    structlog.reset_defaults()
    logging.getLogger().handlers[:] = handlers
    logging.getLogger().setLevel(level)
