"""Fixtures for end-to-end tests against a real Open WebUI started by `scripts/openwebui-local`.

One private instance (`pytest-<pid>`) serves the whole session; `clean_openwebui` empties it
before each test. When the instance cannot start, CI (`CI` set) fails loudly and a developer
run skips with the reason, which `-ra` prints in the summary. `agui_server` is the scripted
AG-UI server (Agent Framework 1.7.0, tests/agui_server) the chat tests' agents run on, one
for the session, under the same rule.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, NoReturn

import pytest

try:  # tests/e2e may become a package; work either way
    from .owui_instance import OpenWebUIInstance, OpenWebUIUnavailable, running_in_ci
except ImportError:
    from owui_instance import OpenWebUIInstance, OpenWebUIUnavailable, running_in_ci

E2E_DIR = Path(__file__).resolve().parent
HARNESS_FILE = E2E_DIR.parent / "agui_server" / "harness.py"
AGUI_VERSION = "1.7.0"


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


def agui_harness() -> ModuleType:
    """tests/agui_server/harness.py, loaded by path (stdlib only) under the name the pipe tests use."""
    loaded = sys.modules.get("agui_harness")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("agui_harness", HARNESS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agui_harness"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def agui_server() -> Iterator[Any]:
    """The scripted AG-UI server every chat test's agents run on: `.agent_url`, `.recorded()`, `.clear()`."""
    harness = agui_harness()
    try:
        server = harness.AguiServer(AGUI_VERSION).start()
    except Exception as exc:  # HarnessError, or pip/venv trouble surfacing as OSError
        reason = f"AG-UI server {AGUI_VERSION} unavailable: {exc}"
        if running_in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        yield server
    finally:
        server.stop()
