"""LangGraph, Pydantic AI and Agno agents through a real Open WebUI 0.12.4 chat, on their own AG-UI servers.

`provision sync` uploads the real bundle with agents whose backends are the frameworks' own AG-UI
servers (tests/support/frameworks/: ag-ui-langgraph's endpoint around a create_agent graph,
Pydantic AI's AGUIAdapter, Agno's AgentOS with its AGUI interface; scripted models of each
framework's kind). The chat is sent as the
0.12.4 browser sends it (tests/support/chat_support.py ui_turn): the first message, then a second
one whose history Open WebUI loads from the stored chat. Each outcome is recorded for the
framework table (behaviour "Open WebUI chat").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import provisioner.cli as cli
from tests.e2e.test_agent_pipe_e2e import output_text, ui_blocks
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import stored_message, ui_turn
from tests.support.frameworks import harness, matrix
from tests.support.owui_instance import OpenWebUIInstance, unavailable

pytestmark = pytest.mark.agui
PIPE_FILE = REPO / "owui_functions" / "aihub_agent_pipe.py"
FRAMEWORKS = ("langgraph", "pydantic_ai", "agno")
LEAD, SUMMARY = "Let me look up order 10023.", "Order 10023 has shipped."
# (framework, test) -> why it does not pass yet: a strict xfail (see tests/functions/test_framework_matrix.py)
KNOWN_GAPS: dict[tuple[str, str], str] = {}
# (framework, test) -> what the framework's own server does instead: the test asserts that (see
# FRAMEWORKS_OWN in tests/functions/test_framework_matrix.py)
FRAMEWORKS_OWN = {
    ("agno", "later"): "Agno's AG-UI router gives the agent only the newest user message, and its earlier turns "
    "only from its db with add_history_to_context=True (False in Agno's AG-UI examples)",
}


def params(test: str) -> list[Any]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(reason=KNOWN_GAPS[(name, test)], strict=True)]
            if (name, test) in KNOWN_GAPS
            else [],
        )
        for name in FRAMEWORKS
    ]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, harness.FrameworkServer]]:
    started: dict[str, harness.FrameworkServer] = {}
    try:
        for name in FRAMEWORKS:
            try:
                started[name] = harness.FrameworkServer(name).start()
            except harness.HarnessError as exc:
                unavailable(f"{name} AG-UI server unavailable: {exc}")
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, servers: dict[str, harness.FrameworkServer]) -> list[str]:
    tmp = tmp_path_factory.mktemp("framework-chat")
    prints = [
        blueprint(name.replace("_", "-"), backend={"transport": "agui", "url": server.agent_url})
        for name, server in servers.items()
    ]
    root = write_blueprint_dir(tmp / "blueprints", prints)
    return ["-p", str(root), "--bundle", str(write_function_dir(tmp / "functions", root, PIPE_FILE))]


@pytest.fixture
def synced(owui: OpenWebUIInstance, bundle: list[str], capsys: pytest.CaptureFixture[str]) -> OpenWebUIInstance:
    code = cli.main(["sync", *bundle])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return owui


def model_of(name: str) -> str:
    return f"aihub_agent_pipe.{name.replace('_', '-')}.default"


@pytest.mark.parametrize("name", params("tool"))
def test_a_tool_turn_is_stored_in_stream_order_with_its_arguments_and_result(
    synced: OpenWebUIInstance, servers: dict[str, harness.FrameworkServer], name: str
) -> None:
    server = servers[name]
    server.clear()
    with matrix.outcome(server, "Open WebUI chat"):
        chat_id, _, answer = ui_turn(synced, model_of(name), "scenario:tool", chat_id=None, parent_id=None, first=True)
        (run,) = server.recorded()  # title, tags and follow-ups never reach the agent
        assert run["threadId"] == chat_id
        stored = stored_message(synced, chat_id, answer)
        assert output_text(stored) == stored["content"], "what the browser renders is not what was stored"
        blocks = ui_blocks(output_text(stored))
        shape = [b if isinstance(b, str) else b["attrs"]["type"] for b in blocks]
        assert shape == [LEAD, "tool_calls", SUMMARY], f"the stored answer shows as {shape}"
        tool = blocks[1]["attrs"]
        assert (tool["name"], tool["done"]) == ("lookup_order", "true")
        assert json.loads(tool["arguments"]) == {"order": "10023"}, f"arguments stored as {tool['arguments']!r}"
        assert tool["result"] == "order 10023 shipped", f"result stored as {tool['result']!r}"


@pytest.mark.parametrize("name", params("later"))
def test_the_next_message_of_the_chat_gives_the_model_the_first_turn_once(
    synced: OpenWebUIInstance, servers: dict[str, harness.FrameworkServer], name: str
) -> None:
    server = servers[name]
    chat_id, _, first = ui_turn(synced, model_of(name), "scenario:tool", chat_id=None, parent_id=None, first=True)
    server.clear()
    _, _, second = ui_turn(synced, model_of(name), "scenario:stream", chat_id=chat_id, parent_id=first, first=False)
    assert stored_message(synced, chat_id, second)["content"] == "Hello from the scripted agent."
    seen = [m for m in server.model_calls()[-1] if m["role"] != "system"]
    users = [m["text"] for m in seen if m["role"] == "user"]
    said = [m["text"] for m in seen if m["role"] == "assistant" and m["text"]]
    if (name, "later") in FRAMEWORKS_OWN:  # the pipe sent the first turn from the stored chat; the model saw none
        sent = json.dumps(server.recorded()[-1]["messages"])
        assert sent.count(LEAD) == 1 and sent.count(SUMMARY) == 1 and "scenario:tool" in sent, sent
        assert len(users) == 1 and users[0].startswith("scenario:stream") and said == [], (users, said)
        return
    assert users == ["scenario:tool", "scenario:stream"]
    assert said == [LEAD, SUMMARY], f"the model was given the first answer as {said}"
