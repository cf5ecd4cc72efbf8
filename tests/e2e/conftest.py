"""Fixtures for end-to-end tests against a real Open WebUI started by `scripts/openwebui-local`.

One private instance (`pytest-<pid>`) serves the whole session; `clean_openwebui` empties it
before each test. When the instance cannot start, CI (`CI` set) fails loudly and a developer
run skips with the reason, which `-ra` prints in the summary.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, NoReturn

import pytest

try:  # tests/e2e may become a package; work either way
    from .owui_instance import OpenWebUIInstance, OpenWebUIUnavailable, running_in_ci
except ImportError:
    from owui_instance import OpenWebUIInstance, OpenWebUIUnavailable, running_in_ci

E2E_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/e2e needs a real Open WebUI: mark it `e2e`."""
    for item in items:
        if E2E_DIR in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)


def unavailable(reason: str) -> NoReturn:
    """Fail in CI (a missing instance must not pass silently there), skip elsewhere."""
    if running_in_ci():
        pytest.fail(f"Open WebUI could not be started (CI is set):\n{reason}", pytrace=False)
    pytest.skip(f"Open WebUI could not be started: {reason}")


def start_instance(name: str) -> OpenWebUIInstance:
    """Start a fresh private instance or end the test through `unavailable`."""
    instance = OpenWebUIInstance(name)
    try:
        instance.start(reuse_data=False)
        return instance
    except OpenWebUIUnavailable as exc:
        reason = str(exc)
    try:
        instance.stop(keep_data=False)  # the script already stopped it; this only drops the data
    except OpenWebUIUnavailable:
        pass
    unavailable(reason)


@pytest.fixture(scope="session")
def openwebui(request: pytest.FixtureRequest) -> Iterator[OpenWebUIInstance]:
    """The session's Open WebUI: `.url`, `.token`, `.admin_jwt`, `.stop()`, `.start()`, `.reset()`."""
    instance = start_instance(f"pytest-{os.getpid()}")
    yield instance
    if request.session.testsfailed:
        instance.stop(keep_data=False)  # keep server.log for the post-mortem
        print(f"\nOpen WebUI log kept at {instance.log_file}")
    else:
        instance.purge()


@pytest.fixture
def clean_openwebui(openwebui: OpenWebUIInstance) -> OpenWebUIInstance:
    """The session instance, emptied of model rows, functions and groups; restarted if a test stopped it."""
    if not openwebui.healthy():
        openwebui.start()
    openwebui.reset()
    return openwebui
