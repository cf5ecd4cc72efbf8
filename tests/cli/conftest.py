"""Fixtures the unit tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_owui import FakeOpenWebUI, fake_instance_for_cli


@pytest.fixture
def fake(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenWebUI]:
    """The in-memory Open WebUI behind the CLI's environment, with the test module's own TOKEN
    (each module's token differs, so a leak names the test that let it out)."""
    with fake_instance_for_cli(monkeypatch, request.module.TOKEN) as server:
        yield server
