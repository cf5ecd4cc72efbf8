"""The pipe never shows a key it holds, and reads a server-side key from the environment.

Canned streams (pipe_support.SSEStub) play backends that echo their key in every place a server
can: an HTTP error body, a RUN_ERROR, the text, a tool result, URL-encoded or JSON-escaped, whole
or split across deltas. The real AG-UI server's 401 echo is in test_agui_real_server.py.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.pipe_support import (
    FINISHED,
    SIGNER,
    SIGNING_KEY,
    C,
    R,
    SSEStub,
    T,
    events,
    make_pipe,
    pipe_module,
    run_pipe,
)

P = pipe_module
KEY = "sk-live/Zq8+w3=x&y"  # characters that URL- and JSON-encoding change
OTHER_KEY = "other-agents-key-5b0c1d"
HISTORY = [{"role": "user", "content": "hi"}]


def _agent(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "ops.desk", "name": "Desk", "url": url, "api_key": "DESK_KEY", "features": [], **extra}


def _pipe(url: str, **extra: Any) -> Any:
    return make_pipe([_agent(url, **extra)], api_keys={"DESK_KEY": KEY, "OTHER": OTHER_KEY})


def _forms(secret: str) -> list[str]:
    return [
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        json.dumps(secret)[1:-1],
    ]


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets or (KEY, OTHER_KEY, SIGNING_KEY):
        for form in _forms(secret):
            assert form not in text, form
        assert secret[:8] not in text and secret[-8:] not in text


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"detail": f"Invalid API key provided: Bearer {KEY}"}),
        json.dumps({"detail": f"Invalid API key provided: Bearer {urllib.parse.quote(KEY, safe='')}"}),
        json.dumps({"error": {"message": "bad key", "header": f"Bearer {KEY}"}}),
        f"unauthorized; you sent {'x' * 300} Bearer {KEY}",  # past where the detail is cut short
        f"unauthorized: key starts with {KEY[:10]}…",  # an excerpt of the key
    ],
)
def test_a_401_body_echoing_the_key_never_reaches_the_chat(sse_stub: SSEStub, body: str, caplog) -> None:
    sse_stub.behaviour.status = 401
    sse_stub.behaviour.error_body = body
    caplog.set_level(logging.DEBUG)
    run = run_pipe(_pipe(sse_stub.url), "ops.desk", HISTORY)
    assert sse_stub.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert "answered HTTP 401 Unauthorized" in run.content
    assert_no_secret(run.content + json.dumps(run.events) + caplog.text)


def test_a_run_error_echoing_the_key_is_masked(sse_stub: SSEStub, caplog) -> None:
    sse_stub.behaviour.data = events(
        T("Working."), [{"type": "RUN_ERROR", "message": f"upstream refused Authorization: Bearer {KEY}"}]
    )
    caplog.set_level(logging.DEBUG)
    run = run_pipe(_pipe(sse_stub.url), "ops.desk", HISTORY)
    assert run.content.startswith("Working.\n\n> [!CAUTION]\n> Agent error: upstream refused Authorization: Bearer ")
    assert "[redacted]" in run.content or P.WITHHELD in run.content
    assert_no_secret(run.content + caplog.text)


def test_keys_in_text_split_across_deltas_tool_results_and_reasoning_are_masked(sse_stub: SSEStub) -> None:
    quoted = urllib.parse.quote(KEY, safe="")
    sse_stub.behaviour.data = events(
        T("my key is "),
        T(KEY[:5]),
        T(KEY[5:11]),
        T(KEY[11:] + " and "),
        T(quoted[:9]),
        T(quoted[9:] + "."),
        C("c1", name="whoami", args=json.dumps({"token": KEY})),
        R("c1", json.dumps({"echo": f"Bearer {KEY}", "other": OTHER_KEY})),
        [{"type": "REASONING_MESSAGE_CONTENT", "messageId": "r", "delta": f"the signing key is {SIGNING_KEY}"}],
        T(f"bye {OTHER_KEY}"),
        FINISHED,
    )
    run = run_pipe(_pipe(sse_stub.url), "ops.desk", HISTORY)
    assert run.content.startswith("my key is [redacted] and [redacted].\n<details")
    assert run.content.endswith("bye [redacted]")
    assert_no_secret(run.content + json.dumps(run.events))
    # what was masked stays masked in the next turn's history, and the masked block still verifies
    messages = P.to_agui_messages([{"role": "assistant", "content": run.content}], SIGNER)
    assert [c["function"]["name"] for m in messages for c in m.get("toolCalls", [])] == ["whoami"]


def test_a_status_naming_the_key_is_masked(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(C("c1", name=f"call-{KEY}"), R("c1", "ok"), FINISHED)
    run = run_pipe(_pipe(sse_stub.url), "ops.desk", HISTORY)
    assert any("[redacted]" in status for status in run.statuses)
    assert_no_secret(run.content + json.dumps(run.events))


def test_an_unexpected_exception_is_logged_masked(sse_stub: SSEStub, monkeypatch, caplog) -> None:
    def explode(*args: Any) -> Any:
        raise RuntimeError(f"client blew up with header Bearer {KEY}")

    monkeypatch.setattr(P, "AgentStream", explode)
    caplog.set_level(logging.DEBUG)
    run = run_pipe(_pipe(sse_stub.url), "ops.desk", HISTORY)
    assert "Agent error: The agent pipe failed (RuntimeError)" in run.content
    assert "client blew up with header Bearer [redacted]" in caplog.text  # the traceback is kept, masked
    assert_no_secret(run.content + caplog.text)


# --- key_from: server --------------------------------------------------------------------------------


def test_a_server_side_key_is_read_from_the_environment_at_chat_time(sse_stub: SSEStub, monkeypatch) -> None:
    sse_stub.behaviour.data = events(T(f"echo {KEY}"), FINISHED)
    pipe = make_pipe([_agent(sse_stub.url, api_key="DESK_SERVER_KEY", key_from="server")])
    monkeypatch.setenv("DESK_SERVER_KEY", KEY)
    run = run_pipe(pipe, "ops.desk", HISTORY)
    assert sse_stub.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert run.content == "echo [redacted]"
    monkeypatch.setenv("DESK_SERVER_KEY", "rotated-key-without-a-sync")
    run_pipe(pipe, "ops.desk", HISTORY)
    assert sse_stub.requests[1]["headers"]["Authorization"] == "Bearer rotated-key-without-a-sync"


def test_each_chat_uses_the_valves_and_server_keys_as_they_are_now(sse_stub: SSEStub, monkeypatch) -> None:
    """The pipe caches what it parses or builds from the valve texts (agents, keys, the key
    masker): a change to a valve or to a server key variable must count at the next chat, for
    the request's key, the masking and the signing alike."""
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    server = _agent(sse_stub.url, id="ops.server", api_key="DESK_SERVER_KEY", key_from="server")
    pipe = make_pipe([_agent(sse_stub.url), server], api_keys={"DESK_KEY": KEY})
    monkeypatch.setenv("DESK_SERVER_KEY", "server-key-one")

    def authorization(model: str) -> str:
        run = run_pipe(pipe, model, HISTORY)
        assert "Agent error" not in run.content, run.content
        return sse_stub.requests[-1]["headers"]["Authorization"]

    assert authorization("ops.desk") == f"Bearer {KEY}"
    assert authorization("ops.server") == "Bearer server-key-one"
    pipe.valves = pipe.Valves(**{**pipe.valves.model_dump(), "API_KEYS": json.dumps({"DESK_KEY": "rotated-synced"})})
    monkeypatch.setenv("DESK_SERVER_KEY", "server-key-two")
    assert authorization("ops.desk") == "Bearer rotated-synced"
    assert authorization("ops.server") == "Bearer server-key-two"

    # the key masker follows: both rotated keys are masked in the agent's text
    sse_stub.behaviour.data = events(T("echo rotated-synced server-key-two"), FINISHED)
    assert run_pipe(pipe, "ops.server", HISTORY).content == "echo [redacted] [redacted]"

    monkeypatch.delenv("DESK_SERVER_KEY")
    requests = len(sse_stub.requests)
    assert "DESK_SERVER_KEY is not set there" in run_pipe(pipe, "ops.server", HISTORY).content
    assert len(sse_stub.requests) == requests  # nothing sent without the key

    # a new signing key: what the old one signed is no longer a call
    sse_stub.behaviour.data = events(C("c1", "get_weather", '{"city": "Paris"}'), R("c1", "sunny"), FINISHED)
    signed = run_pipe(pipe, "ops.desk", HISTORY).content
    history = [*HISTORY, {"role": "assistant", "content": signed}, {"role": "user", "content": "and?"}]
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    run_pipe(pipe, "ops.desk", history)
    assert "toolCalls" in sse_stub.requests[-1]["json"]["messages"][1]  # signed by the pipe: a call again
    pipe.valves = pipe.Valves(**{**pipe.valves.model_dump(), "HISTORY_SIGNING_KEY": "another-signing-key"})
    run_pipe(pipe, "ops.desk", history)
    assert all("toolCalls" not in m for m in sse_stub.requests[-1]["json"]["messages"])


def test_a_missing_server_side_variable_is_named_in_plain_words_and_nothing_is_sent(
    sse_stub: SSEStub, monkeypatch
) -> None:
    monkeypatch.delenv("DESK_SERVER_KEY", raising=False)
    pipe = make_pipe([_agent(sse_stub.url, api_key="DESK_SERVER_KEY", key_from="server")])
    run = run_pipe(pipe, "ops.desk", HISTORY)
    assert sse_stub.requests == []
    assert run.content == (
        "> [!CAUTION]\n> Agent error: The agent's API key is read from the environment variable DESK_SERVER_KEY "
        "of the Open WebUI server, and DESK_SERVER_KEY is not set there. An administrator has to set it and "
        "restart Open WebUI.\n"
    )


@pytest.mark.parametrize("name", ["WEBUI_SECRET_KEY", "DATABASE_URL", "OPENWEBUI_TOKEN", "not a name"])
def test_open_webuis_own_secrets_are_never_sent_as_a_key(sse_stub: SSEStub, monkeypatch, name: str) -> None:
    monkeypatch.setenv("WEBUI_SECRET_KEY", "the-servers-session-secret")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:pw@db/owui")
    pipe = make_pipe([_agent(sse_stub.url, api_key=name, key_from="server")])
    run = run_pipe(pipe, "ops.desk", HISTORY)
    assert sse_stub.requests == []
    assert "is not allowed: the pipe never sends Open WebUI's own settings to an agent" in run.content


def test_a_synced_key_is_not_looked_up_in_the_environment(sse_stub: SSEStub, monkeypatch) -> None:
    monkeypatch.setenv("DESK_KEY", "from-the-environment")
    pipe = make_pipe([_agent(sse_stub.url)], api_keys={})
    run = run_pipe(pipe, "ops.desk", HISTORY)
    assert sse_stub.requests == []
    assert "The API key 'DESK_KEY' is not configured in the pipe's API_KEYS valve." in run.content


# --- the scrubber on its own -------------------------------------------------------------------------


def _stream_through(scrubber: Any, pieces: list[str]) -> str:
    recorder = P.Recorder(scrubber=scrubber)
    out = []
    for piece in pieces:
        recorder.feed({"type": "TEXT_MESSAGE_CONTENT", "messageId": "t", "delta": piece})
        out.append(recorder.drain())
        assert_no_secret("".join(out), KEY)  # nothing that went out so far holds a key
    recorder.feed({"type": "RUN_FINISHED"})
    out.append(recorder.drain())
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([KEY, urllib.parse.quote(KEY, safe=""), "<details", "</DETAILS", "a", " ", "sk-", "%2F"]),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=40),
)
def test_streamed_text_never_shows_a_key_wherever_the_deltas_split_it(parts: list[str], sizes: list[int]) -> None:
    text = "x" + "".join(parts)
    pieces, position = [], 0
    for size in sizes * (len(text) // len(sizes) + 1):
        if position >= len(text):
            break
        pieces.append(text[position : position + size])
        position += size
    scrubber = P.Scrubber([KEY])
    streamed = _stream_through(scrubber, pieces)
    assert streamed == scrubber.text(text)  # the same as scrubbing it whole
    assert "<details" not in streamed.lower() and "</details" not in streamed.lower()
