"""Fixtures for the fake API server's own tests (``fake_apiserver`` and ``fake_api_client``
come from its plugin, which ``tests/conftest.py`` registers)."""

import pytest
from kubernetes import client


@pytest.fixture
def core(fake_api_client: client.ApiClient) -> client.CoreV1Api:
    """CoreV1Api on the fake server."""
    return client.CoreV1Api(fake_api_client)
