"""Every framework's own AG-UI server, every behaviour of issue 32, through the real pipe.

The servers are tests/support/frameworks/ (each framework's AG-UI server code in its default
configuration, a scripted model of the framework's own kind, a venv of its own). The pipe is the
built owui_functions/aihub_agent_pipe.py, driven through its ``pipe()`` as Open WebUI calls it.
Each test asserts the behaviour a user should get; its outcome (yes / qualified / no, with why)
is written to ``.frameworks/<framework>.json`` for scripts/framework-table
(docs/agent-frameworks.md). A (framework, behaviour) the pipe does not handle yet is a strict
xfail naming why (KNOWN_GAPS), so it shows the day it starts to pass.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from typing import Any

import pytest

from tests.support.frameworks import harness, matrix
from tests.support.frameworks.matrix import (
    ADDRESS,
    Chat,
    Dialog,
    Wire,
    calls,
    outcome,
    outline,
    pause_kind,
    spinning,
    texts,
)
from tests.support.frameworks.testing import started
from tests.support.pipe_support import FakeStore

pytestmark = pytest.mark.agui

# (framework, behaviour) -> why the pipe does not do it yet (issue 32 items 2-4, being built): a
# strict xfail, so the day the pipe does it the test fails until the entry goes.
KNOWN_GAPS: dict[tuple[str, str], str] = {}

# (framework, behaviour) -> what the framework's own server does instead, and why no client could
# change it (read in its installed code). The test asserts exactly that behaviour and records it as
# the framework's ("no (the framework's own)", or qualified where the behaviour holds with that
# difference), so the table changes the day the framework does.
FRAMEWORKS_OWN: dict[tuple[str, str], str] = {
    ("crewai", "stream+tools"): "CrewAI keeps no text of a model response that calls tools (BaseLLM.call returns "
    "the text or the calls), and ag-ui-crewai streams no agent text (it drops CrewAI's LLM stream chunks): the "
    "lead-in never reaches the client; the call, its result and the answer show in order",
    ("crewai", "later turns"): "CrewAI gives the model the newest user message as its task ('Current Task: ...', "
    "its native_task prompt) and never kept the lead-in of a tool-calling answer (see stream+tools); each earlier "
    "turn reaches the model once",
    ("crewai", "files"): "the pipe sends the image as an AG-UI image part; ag-ui-crewai keeps it in the flow's "
    "state.messages and Agent.kickoff gives the model only the request's text (files reach it only as kickoff's "
    "input_files / a message's 'files', crewai_files)",
    ("crewai", "approval: approved"): "CrewAI asks for approval as free-text feedback (@human_feedback: a "
    "responseSchema only with emit=, which needs an LLM to read the answer): the pipe asks it as a question "
    "with the output under review, and the typed answer resumes the flow, which runs the tool",
    ("crewai", "tool error"): "ag-ui-crewai translates only tool_usage_finished, not tool_usage_error: the failed "
    "call never reaches the client (the model's answer does, nothing spins)",
    ("crewai", "model error"): "ag-ui-crewai streams no agent text (it drops CrewAI's LLM stream chunks): the run's "
    "error shows, the text the model streamed before it never reaches the client",
    ("agno", "later turns"): "Agno's AG-UI router gives the agent only the newest user message (extract_user_input) "
    "and its earlier turns only from the agent's own db with add_history_to_context=True, which Agno's AG-UI "
    "examples leave at its default (False): the model sees no earlier turn, though the pipe sends them all",
    ("llamaindex", "later turns"): "llama-index-protocols-ag-ui turns a tool message into a user message and a "
    "call into '<tool_call>' text of the assistant's (ag_ui_message_to_llama_index_message, 'an opinionated "
    "hack'): the model reads an earlier tool result as the user's words; each earlier turn reaches it once",
}


def params(behaviour: str) -> list[Any]:
    out = []
    for name, b in matrix.cases():
        if b != behaviour:
            continue
        gap = KNOWN_GAPS.get((name, b))
        marks = [pytest.mark.xfail(reason=gap, strict=True)] if gap else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    return Wire().tap(monkeypatch)


def server_for(framework_servers: Any, name: str) -> harness.FrameworkServer:
    return started(framework_servers, name)


SPINS = "a tool block is left Executing…"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _error(content: str) -> str:
    return next((line for line in content.splitlines() if "Agent error" in line), "")[:200]


def _unescaped(markdown: str) -> str:
    """Dialog text as the user reads it: the pipe writes ASCII punctuation as character references."""
    return html.unescape(markdown)


def _first_chunk(chunks: list[str], text: str) -> int:
    """The index of the chunk with which ``text`` has reached the chat (-1: never)."""
    sent = ""
    for index, chunk in enumerate(chunks):
        sent += chunk
        if text in sent:
            return index
    return -1


def ran(server: harness.FrameworkServer, tool: str) -> list[dict[str, Any]]:
    return [r for r in server.ran() if r["name"] == tool]


# --- streaming and tools --------------------------------------------------------------------------


@pytest.mark.parametrize("name", params("stream+tools"))
def test_streamed_text_a_tool_with_its_result_and_more_text_show_once_in_stream_order(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "stream+tools") as note:
        run = Chat(server).say("scenario:tool", stream_interval_ms=0)
        shown = outline(run.content)
        if (name, "stream+tools") in FRAMEWORKS_OWN:  # CrewAI: the lead-in is never sent
            assert "Let me look up" not in json.dumps(wire.events), "the server sent the lead-in: show it"
            assert shown == ["TC[lookup_order]", "tool(lookup_order)", 'A"Order 10023 has shipped."'], shown
            (call,) = calls(run.content)
            assert _json(call.arguments) == {"order": "10023"} and call.result == "order 10023 shipped", call
            assert not spinning(run.content), SPINS
            assert ran(server, "lookup_order") == [{"name": "lookup_order", "args": {"order": "10023"}}]
            note.framework(FRAMEWORKS_OWN[(name, "stream+tools")])
            return
        assert shown == [
            'A"Let me look up order 10023."',
            "TC[lookup_order]",
            "tool(lookup_order)",
            'A"Order 10023 has shipped."',
        ], f"the answer shows as {shown}"
        (call,) = calls(run.content)
        assert _json(call.arguments) == {"order": "10023"}, f"the call's arguments show as {call.arguments!r}"
        assert call.result == "order 10023 shipped", f"the result shows as {call.result!r}, not its text"
        assert not spinning(run.content), SPINS
        assert ran(server, "lookup_order") == [{"name": "lookup_order", "args": {"order": "10023"}}]
        # (the pipe may hold a word back while it could start a key: only the first word is sure to go at once)
        first = {key: _first_chunk(run.chunks, key) for key in ("Let", "<details", "has shipped")}
        assert 0 <= first["Let"] < first["<details"] <= first["has shipped"], (
            f"the chat streamed the parts out of order: {first}"
        )
        pieces = [e for e in wire.of("TOOL_CALL_ARGS") if e.get("toolCallId") == call.id]
        chunks = [e for e in wire.of("TOOL_CALL_CHUNK") if e.get("delta")]
        if len(pieces) + len(chunks) < 2:
            note.qualify("the server sends a call's arguments in one piece (no streamed arguments)")


def _no_args_frameworks() -> list[str]:
    return [name for name, fw in harness.frameworks().items() if "no_args" in fw.scenarios]


@pytest.mark.parametrize("name", _no_args_frameworks())
def test_a_tool_without_arguments_shows_at_its_result_and_the_answer_streams_on(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    # Not a column of the table (every framework does it): ADK sends no TOOL_CALL_ARGS for such a
    # call and no snapshot, LangGraph none but its start's rawEvent and its snapshot last; the block
    # and the rest of the answer waited for the run's end (tests/data/agui_captures/*/no_args.sse)
    server = server_for(framework_servers, name)
    run = Chat(server).say("scenario:no_args", stream_interval_ms=0)
    shown = outline(run.content)
    lead_in = [] if name == "crewai" else ['A"Let me check the time."']  # CrewAI streams no lead-in (stream+tools)
    assert shown == [*lead_in, "TC[current_time]", "tool(current_time)", 'A"It is noon."'], shown
    (call,) = calls(run.content)
    assert _json(call.arguments or "{}") == {} and call.result == "12:00", call
    assert ran(server, "current_time") == [{"name": "current_time", "args": {}}]
    first = {key: _first_chunk(run.chunks, key) for key in ("<details", "noon")}
    assert 0 <= first["<details"] < first["noon"], f"the block went out with the answer's end: {first}"
    assert wire.of("RUN_FINISHED"), "the run did not finish"


# --- later turns ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", params("later turns"))
def test_a_second_and_third_turn_give_the_model_each_earlier_turn_once(framework_servers: Any, name: str) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "later turns") as note:
        chat = Chat(server)
        chat.say("scenario:tool")
        second = chat.say("scenario:stream (second turn)")
        assert texts(second.content) == "Hello from the scripted agent.", second.content
        server.clear()
        third = chat.say("scenario:stream (third turn)")
        assert texts(third.content) == "Hello from the scripted agent.", third.content
        seen = [m for m in server.model_calls()[-1] if m["role"] != "system"]
        users = [m["text"] for m in seen if m["role"] == "user"]
        said = [m["text"] for m in seen if m["role"] == "assistant" and m["text"]]
        results = [r for m in seen for r in m["results"]]
        answers = ["Let me look up order 10023.", "Order 10023 has shipped.", "Hello from the scripted agent."]
        asked = ["scenario:tool", "scenario:stream (second turn)", "scenario:stream (third turn)"]
        own = FRAMEWORKS_OWN.get((name, "later turns"), "")
        if name == "agno" and own:  # only the newest message reaches the model; the pipe sent the whole chat
            sent = [m for m in server.recorded()[-1]["messages"] if m["role"] in ("user", "assistant", "tool")]
            assert [m["content"] for m in sent if m["role"] == "user"] == asked, sent
            shown = json.dumps([m for m in sent if m["role"] != "user"])
            for answer in answers:
                assert shown.count(answer) == 1, f"{answer!r} sent {shown.count(answer)} times: {shown}"
            assert len(users) == 1 and users[0].startswith(asked[2]), users
            assert said == [] and results == [], (said, results)
            note.framework(own)
            return
        if name == "crewai" and own:  # its task prompt frames the newest message; the lead-in was never kept
            assert users == [*asked[:2], "\nCurrent Task: " + asked[2]], users
            answers.remove("Let me look up order 10023.")
            assert not any("Let me look up" in s for s in said), said
        elif name == "llamaindex" and own:  # its conversion: the result as the user's words, the call as text
            assert users == [asked[0], "order 10023 shipped", *asked[1:]], users
            assert results == [], results
            assert sum("<tool_call><name>lookup_order</name>" in s for s in said) == 1, said
            results = [("lookup_order", "order 10023 shipped")]
        else:
            assert users == asked, users
        for answer in answers:
            assert sum(answer in s for s in said) == 1, (
                f"{answer!r} seen {sum(answer in s for s in said)} times: {said}"
            )
        assert len(results) == 1 and "order 10023 shipped" in str(results[0][1]), results
        if own:
            note.qualify(own)


# --- files ----------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(255, -1, -1))
PDF = b"%PDF-1.4 the quarterly report " + bytes(range(256))


@pytest.mark.parametrize("name", params("files"))
def test_the_users_image_and_document_reach_the_model_as_its_own_content(framework_servers: Any, name: str) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "files") as note:
        store = FakeStore()
        refs = [store.add("f-png", "chart.png", "image/png", PNG), store.add("f-pdf", "q3.pdf", "application/pdf", PDF)]
        run = Chat(server).say("scenario:files", store=store, metadata={"files": refs})
        assert "Agent error" not in run.content, f"the agent failed: {texts(run.content)!r}"
        assert texts(run.content) == "I have read your attachments."
        (user,) = [m for m in server.model_calls()[0] if m["role"] == "user"]
        if (name, "files") in FRAMEWORKS_OWN:  # the image went out; the framework gives its model only text
            (sent,) = [m for m in server.recorded()[0]["messages"] if m["role"] == "user"]
            parts = sent["content"] if isinstance(sent["content"], list) else []
            assert any(p.get("type") == "image" for p in parts), f"the pipe sent no image part: {parts}"
            assert user["media"] == [] and "scenario:files" in user["text"], user
            note.framework(FRAMEWORKS_OWN[(name, "files")])
            return
        assert user["text"].strip().endswith("scenario:files") or user["text"].startswith("scenario:files"), user
        got = {m["sha256"]: m for m in user["media"]}
        assert hashlib.sha256(PNG).hexdigest() in got, f"the image did not reach the model: {user['media']}"
        if hashlib.sha256(PDF).hexdigest() not in got:
            note.qualify("the document does not reach the model as a document (images do)")


# --- asking the user: approvals ---------------------------------------------------------------------


def _approval(chat: Chat, dialog: Any, timeout: float = matrix.QUESTION_TIMEOUT) -> Any:
    return chat.say("scenario:approve", event_call=dialog, question_timeout=timeout)


@pytest.mark.parametrize("name", params("approval: approved"))
def test_an_approved_tool_runs_and_the_same_answer_goes_on(framework_servers: Any, name: str, wire: Wire) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "approval: approved") as note:
        if (name, "approval: approved") in FRAMEWORKS_OWN:  # CrewAI: free-text feedback, typed
            dialog = Dialog("approved")
            run = _approval(Chat(server), dialog)
            assert [q["type"] for q in dialog.questions] == ["input"], dialog.questions
            words = _unescaped(dialog.questions[0]["data"]["message"])
            assert "Do you approve cancelling this order?" in words and "Cancel order 10023" in words, words
            assert ran(server, "cancel_order") == [{"name": "cancel_order", "args": {"order": "10023"}}]
            assert not spinning(run.content) and "Agent error" not in run.content, run.content
            assert "Order 10023 is cancelled." in texts(run.content), texts(run.content)
            note.qualify(FRAMEWORKS_OWN[(name, "approval: approved")])
            return
        dialog = Dialog(True)
        run = _approval(Chat(server), dialog)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert len(dialog.questions) == 1, f"asked {len(dialog.questions)} times"
        question = dialog.questions[0]
        assert question["type"] == "confirmation", f"asked as {question['type']}, not as an approval"
        assert "cancel_order" in json.dumps(question) and "10023" in json.dumps(question), (
            f"the dialog names neither the tool nor its arguments: {question['data']}"
        )
        assert ran(server, "cancel_order") == [{"name": "cancel_order", "args": {"order": "10023"}}], (
            "the approved tool did not run"
        )
        assert not spinning(run.content), SPINS
        assert "Agent error" not in run.content, f"the resumed run failed: {_error(run.content)}"
        assert "order 10023 cancelled" in texts(run.content), "the run did not go on after the tool"
        shown = [c.result for c in calls(run.content) if c.name == "cancel_order"]
        assert shown and "order 10023 cancelled" in (shown[-1] or ""), f"the approved tool's block shows {shown}"


@pytest.mark.parametrize("name", params("approval: declined"))
def test_a_declined_tool_never_runs_and_the_run_goes_on(framework_servers: Any, name: str, wire: Wire) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "approval: declined"):
        dialog = Dialog(False)
        run = _approval(Chat(server), dialog)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert ran(server, "cancel_order") == [], "the declined tool ran"
        assert not spinning(run.content), SPINS
        assert "Agent error" not in run.content, f"the resumed run failed: {_error(run.content)}"
        assert "The cancel tool said:" in texts(run.content), "the run did not go on after the decline"


def _no_approval_sent(server: harness.FrameworkServer) -> None:
    """After the first request: nothing the pipe sent approves anything, and a 1.0 resume is cancelled."""
    for request in server.recorded()[1:]:
        text = json.dumps({k: request.get(k) for k in ("resume", "forwardedProps", "messages")})
        assert '"approved": true' not in text and '"confirmed": true' not in text and '"accepted": true' not in text
        for entry in request.get("resume") or []:
            assert entry.get("status") == "cancelled", f"resume sent when nobody answered: {entry}"


@pytest.mark.parametrize("name", params("approval: no answer"))
def test_an_unanswered_approval_never_runs_the_tool_and_the_agent_is_told(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "approval: no answer"):
        dialog = Dialog(True, delay=3)
        run = _approval(Chat(server), dialog, timeout=1)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert ran(server, "cancel_order") == [], "the unanswered tool ran"
        assert not spinning(run.content), SPINS
        (call,) = [c for c in calls(run.content) if c.name == "cancel_order"]
        assert call.result is not None, "the unanswered call's block has no result"
        assert len(server.recorded()) >= 2, "the pipe did not tell the agent (no resume sent)"
        _no_approval_sent(server)


# --- asking the user: questions ---------------------------------------------------------------------

QUESTION = "Which address should the parcel go to?"
# Frameworks whose AG-UI server never sends a question its tool asks: the call reaches the client as
# ask_address(order), like any call left to it, and nothing on the wire tells it apart. Checked
# against what the server sent (the day it sends the question, the test asks for the real thing).
QUESTION_NOT_SENT = {
    "pydantic_ai": "Pydantic AI's AG-UI adapter sends a CallDeferred(kind='question') call as it sends an external "
    "one (a pendingToolCallId, without its kind or metadata): the question stays in the tool, so the pipe asks "
    "about the call (its name and arguments) and its yes goes back as the call's result",
    "agno": "Agno's AG-UI interface sends a requires_user_input call like its other paused calls (no pause type, no "
    "user_input_fields): the question stays in the tool, so the pipe asks about the call and answers it "
    '{"accepted": true, "values": {}}; Agno calls the tool without the value (its validation error is the result)',
}


@pytest.mark.parametrize("name", params("question: answered"))
def test_the_frameworks_question_is_asked_and_its_answer_reaches_the_agent(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "question: answered") as note:
        dialog = Dialog(ADDRESS if name not in QUESTION_NOT_SENT else True)
        run = Chat(server).say("scenario:ask", event_call=dialog)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert len(dialog.questions) == 1, f"asked {len(dialog.questions)} times"
        question = dialog.questions[0]
        if name in QUESTION_NOT_SENT and QUESTION not in json.dumps(wire.events):
            # the framework's limitation: asked as the call it is, and the run goes on with the answer
            assert question["type"] == "confirmation", f"asked as {question['type']}"
            assert "ask_address" in json.dumps(question) and "10023" in json.dumps(question), question["data"]
            assert not spinning(run.content), SPINS
            assert "Agent error" not in run.content, f"the resumed run failed: {_error(run.content)}"
            (call,) = [c for c in calls(run.content) if c.name == "ask_address"]
            later = server.recorded()[1:]
            assert later and call.id in [m.get("toolCallId") for m in later[-1]["messages"] if m.get("role") == "tool"]
            assert "You answered:" in texts(run.content), "the run did not go on with the answer"
            note.no(QUESTION_NOT_SENT[name])
            return
        assert question["type"] == "input", f"asked as {question['type']}, not as a question to answer"
        assert QUESTION in _unescaped(question["data"]["message"]), (
            f"the dialog does not hold the question: {question['data']['message']!r}"
        )
        assert not spinning(run.content), SPINS
        assert "Agent error" not in run.content, f"the resumed run failed: {_error(run.content)}"
        assert ADDRESS in texts(run.content), "the answer did not reach the agent"


@pytest.mark.parametrize("name", params("question: no answer"))
def test_an_unanswered_question_closes_the_call_and_nothing_spins(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "question: no answer"):
        dialog = Dialog(ADDRESS, delay=3)
        run = Chat(server).say("scenario:ask", event_call=dialog, question_timeout=1)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert not spinning(run.content), SPINS
        (call,) = [c for c in calls(run.content) if c.name == "ask_address"]
        assert call.result is not None, "the unanswered call's block has no result"
        assert ADDRESS not in json.dumps(server.recorded())
        assert not [r for r in ran(server, "ask_address") if r["args"].get("answer")]
        for request in server.recorded()[1:]:
            for entry in request.get("resume") or []:
                assert entry.get("status") == "cancelled", f"resume sent when nobody answered: {entry}"


# --- tools left to the client -------------------------------------------------------------------------


@pytest.mark.parametrize("name", params("client tool: answered"))
def test_a_tool_left_to_the_client_is_asked_and_answered_as_its_result(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "client tool: answered"):
        dialog = Dialog(True)
        run = Chat(server).say("scenario:client", event_call=dialog)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert len(dialog.questions) == 1, f"asked {len(dialog.questions)} times"
        shown = json.dumps(dialog.questions[0])
        assert "confirm_shipment" in shown and "10023" in shown, (
            f"the dialog names neither the call nor its arguments: {dialog.questions[0]['data']}"
        )
        assert not spinning(run.content), SPINS
        assert "The client answered:" in texts(run.content), "no new run went on with the answer"
        later = server.recorded()[1:]
        assert later, "no new run carried the answer"
        tool_messages = [m for m in later[-1]["messages"] if m.get("role") == "tool"]
        (call,) = [c for c in calls(run.content) if c.name == "confirm_shipment"]
        assert call.id in [m.get("toolCallId") for m in tool_messages], later[-1]["messages"]


@pytest.mark.parametrize("name", params("client tool: no answer"))
def test_an_unanswered_client_tool_is_closed_as_not_run(framework_servers: Any, name: str, wire: Wire) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "client tool: no answer"):
        dialog = Dialog(True, delay=3)
        run = Chat(server).say("scenario:client", event_call=dialog, question_timeout=1)
        assert dialog.questions, f"nobody was asked: the server paused with {pause_kind(wire)}"
        assert not spinning(run.content), SPINS
        (call,) = [c for c in calls(run.content) if c.name == "confirm_shipment"]
        assert call.result and call.result.startswith("Not run"), f"the block says {call.result!r}"


# --- errors and usage -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", params("tool error"))
def test_a_tool_that_raises_shows_as_the_agents_error_and_nothing_spins(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "tool error") as note:
        run = Chat(server).say("scenario:tool_error")
        assert ran(server, "broken_lookup"), "the tool never ran"
        assert not spinning(run.content), SPINS
        if (name, "tool error") in FRAMEWORKS_OWN:  # the failed call is never sent
            assert not [e for e in wire.events if e.get("toolCallName") == "broken_lookup"], "the server sent the call"
            assert "broken_lookup" not in json.dumps(wire.of("MESSAGES_SNAPSHOT")), "the snapshot has the call"
            assert calls(run.content) == [] and "The tool failed." in texts(run.content), run.content
            note.framework(FRAMEWORKS_OWN[(name, "tool error")])
            return
        (call,) = [c for c in calls(run.content) if c.name == "broken_lookup"]
        assert call.result is not None, "the failed call's block has no result"
        if outline(run.content)[-1] == "ERR":
            assert "Agent error" in run.content
            note.qualify("the run ends with the agent's error (the framework stops at a tool exception)")
        else:
            assert "the order database is down" in call.result or "error" in call.result.lower(), call.result
            assert "The tool failed." in texts(run.content), run.content
            note.qualify("the error is the tool's result and the model goes on (the framework's default)")


@pytest.mark.parametrize("name", params("model error"))
def test_a_model_error_mid_answer_shows_as_the_agents_error_after_the_text(
    framework_servers: Any, name: str, wire: Wire
) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "model error") as note:
        run = Chat(server).say("scenario:model_error")
        if (name, "model error") in FRAMEWORKS_OWN:  # the text before the error is never sent
            assert "Starting to answer" not in json.dumps(wire.events), "the server sent the text: show it"
            assert outline(run.content) == ["ERR"] and not spinning(run.content), outline(run.content)
            note.framework(FRAMEWORKS_OWN[(name, "model error")])
            return
        assert outline(run.content) == ['A"Starting to answer."', "ERR"], f"the answer shows as {outline(run.content)}"
        assert "Agent error" in run.content and not spinning(run.content)


TOKEN_COUNTS = re.compile(rb'"(input_tokens|inputTokens|prompt_tokens|input_token_count|prompt_token_count)"')
# framework -> the setting of its server that turns usage reporting on (its app sets it; the docs show it)
USAGE_SETTING = {
    "pydantic_ai": "with AGUIAdapter's include_usage=True (off by default: it names the model to the client), "
    "RUN_FINISHED.usage",
}
# frameworks whose scripted model reports its own counts, not the script's 12 + 5: the pipe must show
# what RUN_FINISHED.usage says (Pydantic AI's FunctionModel: an estimate, 50 input tokens a request)
ESTIMATED_USAGE = {"pydantic_ai"}


def _finished_usage(wire: Wire) -> tuple[int, int]:
    """The input and output tokens the server's RUN_FINISHED events reported, added up."""
    entries = [u for e in wire.of("RUN_FINISHED") for u in (e.get("usage") or [])]
    return sum(u.get("inputTokens") or 0 for u in entries), sum(u.get("outputTokens") or 0 for u in entries)


@pytest.mark.parametrize("name", params("usage"))
def test_usage_shows_wherever_the_framework_reports_it(framework_servers: Any, name: str, wire: Wire) -> None:
    server = server_for(framework_servers, name)
    with outcome(server, "usage") as note:
        run = Chat(server).say("scenario:stream")
        assert texts(run.content) == "Hello from the scripted agent."
        reported = [
            e for e in wire.events if e.get("usage") or (e.get("type") == "CUSTOM" and e.get("name") == "usage")
        ]
        # token counts anywhere in the bytes, also in what the pipe drops unread (Agno: a RAW event)
        counted = TOKEN_COUNTS.findall(bytes(wire.raw))
        shown = [d["usage"] for d in run.data if "usage" in d]
        if not reported and not counted:
            assert shown == [], f"usage shown that the server never sent: {shown}"
            note.no("the server reports no usage in its default configuration")
        else:
            where = sorted({f"{e['type']}.usage" if e.get("usage") else "CUSTOM usage" for e in reported})
            where = where or [f"token counts in its stream ({b', '.join(sorted(set(counted))).decode()})"]
            assert len(shown) == 1, f"the usage the server sent ({', '.join(where)}) is shown {len(shown)} times"
            usage = shown[0]
            inp, out = _finished_usage(wire) if name in ESTIMATED_USAGE else (12, 5)
            assert inp and out, f"no counts in RUN_FINISHED.usage: {wire.of('RUN_FINISHED')}"
            counts = (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
            assert counts == (inp, out, inp + out), usage
            if name in USAGE_SETTING:
                note.qualify(USAGE_SETTING[name])
