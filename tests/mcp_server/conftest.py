"""Fixtures for the MCP server's tests: a fake hypd REST API on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp_server.mcp_fake_api import FakeApi


@pytest.fixture(scope="session")
def fake_api_server() -> Iterator[FakeApi]:
    api = FakeApi().start()
    yield api
    api.stop()


@pytest.fixture
def fake_api(fake_api_server: FakeApi) -> FakeApi:
    """The fake API, emptied for each test."""
    fake_api_server.reset()
    return fake_api_server
