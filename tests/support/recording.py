"""Count the HTTP requests the CLI sends: the seam is provisioner.openwebui.client.make_http_client."""

from __future__ import annotations

import httpx
import pytest

import provisioner.openwebui.client as client_module


class Recorder:
    """Every request the CLI sends, as (method, path)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> None:
        self.requests.append((request.method, request.url.path))

    @property
    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    def clear(self) -> None:
        self.requests.clear()


def record_cli_requests(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Make every httpx client the CLI builds report its requests to a new Recorder."""
    recorder = Recorder()
    monkeypatch.setattr(
        client_module,
        "make_http_client",
        lambda timeout: httpx.Client(timeout=timeout, event_hooks={"request": [recorder]}),
    )
    return recorder
