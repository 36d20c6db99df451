"""Fixtures for the fake API server's own tests."""

from tests.harness.fake_apiserver.fixtures import fake_api_client, fake_apiserver  # noqa: F401
