"""A run resumed within the same turn gives the model that turn's text, calls and results once.

After the user answers a pause, the pipe goes on with a request that carries the turn so far
(agent_pipe/questions.py ``_turn``) under the pipe's own ids (``aihub-resume-*``), not the ids the
server streamed them under (agent_pipe/agent_ids.py passes those only to later turns). A server
that merges the messages it receives into a thread it keeps, by message id, would add them a second
time: ag-ui-langgraph's checkpoint, ADK's session with its processed message ids. Each framework's
own server is asked here, for every way it pauses in the matrix's scenarios (an approval, a
question, a call left to the client), what its model was given on the model call after the resume.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.frameworks import harness
from tests.support.frameworks.matrix import ADDRESS, Chat, Dialog
from tests.support.frameworks.testing import started

pytestmark = pytest.mark.agui

# scenario -> (the answer the dialog gives, the lead-in the model said before the pause, the tool)
PAUSES = {
    "approve": (True, "I will cancel order 10023.", "cancel_order"),
    "ask": (ADDRESS, "I need to ask you something.", "ask_address"),
    "client": (True, None, "confirm_shipment"),
}


def cases() -> list[Any]:
    return [
        pytest.param(name, scenario, id=f"{name}-{scenario}")
        for name, framework in harness.frameworks().items()
        for scenario in PAUSES
        if scenario in framework.scenarios
    ]


def seen_once(model_call: list[dict[str, Any]], scenario: str, where: str) -> None:
    """No text, call, result or user message of the chat reaches the model twice in this call."""
    _, lead_in, _ = PAUSES[scenario]
    seen = [m for m in model_call if m["role"] != "system"]
    said = [m["text"] for m in seen if m["role"] == "assistant" and m["text"]]
    made = [c for m in seen for c in m.get("calls") or []]
    results = [r[0] for m in seen for r in m["results"] if r and r[0]]
    users = [m["text"] for m in seen if m["role"] == "user"]
    for text in ("Hello from the scripted agent.", lead_in):
        if text:
            assert sum(text in s for s in said) <= 1, f"{where}: {text!r} seen twice: {said}"
    assert len(made) == len(set(made)), f"{where}: a call seen twice: {made}"
    assert len(results) == len(set(results)), f"{where}: a result seen twice: {results}"
    assert sum(f"scenario:{scenario}" in u for u in users) <= 1, f"{where}: the question seen twice: {users}"


@pytest.mark.parametrize(("name", "scenario"), cases())
def test_the_resumed_run_and_the_next_turn_give_the_model_the_paused_turn_once(
    framework_servers: Any, name: str, scenario: str
) -> None:
    server = started(framework_servers, name)
    answer, _, tool = PAUSES[scenario]
    dialog = Dialog(answer)
    chat = Chat(server)
    chat.say("scenario:stream (an earlier turn)")  # the pause comes in a chat with history
    server.clear()
    run = chat.say(f"scenario:{scenario}", event_call=dialog)
    assert dialog.questions, f"nobody was asked: {run.content[:300]}"
    assert len(server.recorded()) >= 2, "the run was not resumed"
    assert tool in run.content and "Agent error" not in run.content, run.content[-300:]
    model_calls = server.model_calls()
    assert len(model_calls) >= 2, f"the model was called {len(model_calls)} times"
    seen_once(model_calls[-1], scenario, "the resumed run")
    server.clear()
    after = chat.say("scenario:stream (the turn after)")
    assert "Hello from the scripted agent." in after.content, after.content[-300:]
    seen_once(server.model_calls()[-1], scenario, "the next turn")
