"""Pytest fixtures for the fake API server.

Register them with `pytest_plugins = ["tests.harness.fake_apiserver.fixtures"]` in a top-level
conftest, or import the fixture names into a conftest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from .server import FakeApiServer


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    """A started fake API server, stopped after the test."""
    with FakeApiServer() as server:
        yield server


@pytest.fixture
def fake_api_client(fake_apiserver: FakeApiServer) -> Iterator[client.ApiClient]:
    """An official-client `ApiClient` pointed at `fake_apiserver`."""
    with fake_apiserver.api_client() as api:
        yield api
