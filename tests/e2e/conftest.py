"""Fixtures for end-to-end tests against a real Open WebUI started by `scripts/openwebui-local`.

One private instance (`pytest-<pid>`) serves the whole session; `clean_openwebui` empties it
before each test. When the instance cannot start, CI (`CI` set) fails loudly and a developer
run skips with the reason, which `-ra` prints in the summary. `agui_server` is the scripted
AG-UI server (Agent Framework 1.7.0, tests/support/agui_server) the chat tests' agents run on, one
for the session, under the same rule.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agui_server import harness
from tests.support.builders import REPO, samples_on, write_function_dir
from tests.support.chat_support import AGENT_PIPE, ChatRig, install_observer, provision
from tests.support.owui_instance import (
    IDENTITY_ENV,
    SERVER_KEY,
    SERVER_KEY_ENV,
    OpenWebUIInstance,
    OpenWebUIUnavailable,
    unavailable,
)
from tests.support.recording import Recorder, record_cli_requests

E2E_DIR = Path(__file__).resolve().parent
AGUI_VERSION = "1.7.0"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/e2e needs a real Open WebUI: mark it `e2e`."""
    for item in items:
        if E2E_DIR in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Keep each phase's report on the item (`item.rep_call`), so a fixture can tell a failure."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def start_instance(name: str, extra_env: dict[str, str] | None = None) -> OpenWebUIInstance:
    """Start a fresh private instance or end the test through `unavailable`."""
    instance = OpenWebUIInstance(name, extra_env=extra_env)
    try:
        instance.start(reuse_data=False)
        return instance
    except OpenWebUIUnavailable as exc:
        reason = str(exc)
    try:
        instance.stop(keep_data=False)  # the script already stopped it; this only drops the data
    except OpenWebUIUnavailable:
        pass
    unavailable(f"Open WebUI could not be started:\n{reason}")


@pytest.fixture(scope="session")
def openwebui(request: pytest.FixtureRequest) -> Iterator[OpenWebUIInstance]:
    """The session's Open WebUI: `.url`, `.token`, `.admin_jwt`, `.stop()`, `.start()`, `.reset()`."""
    instance = start_instance(f"pytest-{os.getpid()}", extra_env={SERVER_KEY_ENV: SERVER_KEY, **IDENTITY_ENV})
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


@pytest.fixture(scope="session")
def agui_server() -> Iterator[Any]:
    """The scripted AG-UI server every chat test's agents run on: `.agent_url`, `.recorded()`, `.clear()`."""
    try:
        server = harness.AguiServer(AGUI_VERSION).start()
    except Exception as exc:  # HarnessError, or pip/venv trouble surfacing as OSError
        reason = f"AG-UI server {AGUI_VERSION} unavailable: {exc}"
        unavailable(reason)
    try:
        yield server
    finally:
        server.stop()


# --- the CLI against the session instance, and the chat rig -------------------------------------


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    return record_cli_requests(monkeypatch)


@pytest.fixture
def owui(clean_openwebui, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENWEBUI_URL", clean_openwebui.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", clean_openwebui.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    return clean_openwebui


@pytest.fixture
def bundle(tmp_path: Path) -> list[str]:
    """The sample blueprints and a copy of the real function bundle (tests may edit the copy)."""
    functions = tmp_path / "functions"
    shutil.copytree(REPO / "owui_functions", functions, ignore=shutil.ignore_patterns("__pycache__"))
    return ["-p", str(REPO / "blueprints"), "--bundle", str(functions)]


@pytest.fixture(scope="module")
def chat_bundle(tmp_path_factory: pytest.TempPathFactory, agui_server: Any) -> list[str]:
    """The sample blueprints with every backend on the scripted AG-UI server, and the real bundle:
    the feature filter, the toggle filters generated for these blueprints, the agent pipe.

    The agents keep the samples' features: policy-faq none, research-assistant web_search,
    code_interpreter and image_generation, document-analyst user_files, support-desk web_search
    and deep_research.
    """
    tmp = tmp_path_factory.mktemp("chat-bundle")
    root = samples_on(tmp / "blueprints", agui_server.agent_url)
    functions = write_function_dir(tmp / "functions", root, AGENT_PIPE)
    return ["-p", str(root), "--bundle", str(functions)]


@pytest.fixture
def chat_rig(owui, chat_bundle: list[str], agui_server: Any, tmp_path: Path, capsys) -> ChatRig:
    """The chat bundle synced, the observer installed, both records empty."""
    code, out, err = provision(capsys, "sync", *chat_bundle)
    assert code == 0, out + err
    rig = ChatRig(owui, agui_server, tmp_path / "observed.jsonl")
    install_observer(owui, rig.log)
    rig.clear()
    return rig
