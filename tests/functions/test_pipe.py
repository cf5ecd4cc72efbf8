"""The pipe as Open WebUI calls it: valves, the request it sends, and every way a run can fail.

The agent here is a loopback HTTP server (pipe_support.SSEStub) that records requests and plays
canned SSE streams; the real Agent Framework server is in test_agui_real_server.py.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any

from tests.support.pipe_support import FINISHED, C, R, SSEStub, T, events, make_pipe, pipe_module, run_pipe

P = pipe_module


def _agent(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "travel.concierge",
        "name": "Concierge",
        "transport": "agui",
        "url": url,
        "model": None,
        "api_key": None,
        "features": ["web_search", "user_files"],
        **extra,
    }


HISTORY = [{"role": "user", "content": "Weather in Paris?"}]


# --- valves -----------------------------------------------------------------------------------------


def test_pipes_lists_exactly_the_configured_agents() -> None:
    pipe = make_pipe([_agent("http://a"), {**_agent("http://b"), "id": "travel.scout", "name": "Scout"}])
    assert pipe.pipes() == [{"id": "travel.concierge", "name": "Concierge"}, {"id": "travel.scout", "name": "Scout"}]


def test_pipes_is_empty_for_bad_json_and_skips_invalid_entries() -> None:
    pipe = P.Pipe()
    pipe.valves = pipe.Valves(AGENTS="{not json")
    assert pipe.pipes() == []
    pipe.valves = pipe.Valves(AGENTS='{"id": "x"}')
    assert pipe.pipes() == []
    pipe.valves = pipe.Valves(AGENTS=json.dumps([{"id": "no.url", "name": "x"}, _agent("http://a"), 7]))
    assert pipe.pipes() == [{"id": "travel.concierge", "name": "Concierge"}]


def test_valve_defaults_and_names_match_what_provision_writes() -> None:
    valves = P.Pipe().valves
    assert (valves.AGENTS, valves.API_KEYS, valves.TIMEOUT_SECONDS) == ("[]", "{}", 300)
    assert P.METADATA_KEY == "aihub_requested_features"


def test_file_starts_with_frontmatter_marked_not_global() -> None:
    lines = open(str(P.__file__)).read().splitlines()
    assert lines[0] == '"""'
    front = lines[1 : lines.index('"""', 1)]
    keys = dict(line.split(":", 1) for line in front)
    assert {"title", "version", "description", "global"} <= set(keys)
    assert keys["global"].strip() == "false"


def test_file_imports_only_what_open_webui_ships() -> None:
    source = open(str(P.__file__)).read()
    imported = {
        line.split()[1].split(".")[0]
        for line in source.splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    }
    allowed_third_party = {"aiohttp", "pydantic"}
    assert imported - set(sys.stdlib_module_names) <= allowed_third_party


# --- the AG-UI request ------------------------------------------------------------------------------


def test_agui_request_carries_history_thread_and_only_supported_requested_features(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi"), FINISHED)
    pipe = make_pipe([_agent(sse_stub.url + "/agent")])
    run = run_pipe(
        pipe,
        "travel.concierge",
        HISTORY,
        features=["user_files", "image_generation", "web_search"],
        chat_id="chat-42",
        user_id="u-7",
    )
    assert run.content == "Hi"
    request = sse_stub.requests[0]
    assert request["path"] == "/agent"
    assert request["headers"]["Accept"] == "text/event-stream"
    assert "Authorization" not in request["headers"]
    body = request["json"]
    assert body["threadId"] == "chat-42"
    assert body["forwardedProps"] == {"features": ["user_files", "web_search"], "user_id": "u-7", "message_id": "m-1"}
    assert (body["tools"], body["state"]) == ([], {})
    assert [c["description"] for c in body["context"]] == ["The current date and time"]
    assert body["messages"] == [{"id": "aihub-0", "role": "user", "content": "Weather in Paris?"}]
    assert body["runId"]
    assert body["protocolVersion"] == "1.0"  # AG-UI 1.0: Pydantic AI sends 1.0 outcomes only to a 1.0 client


def test_run_ids_are_fresh_and_thread_id_falls_back_to_a_fresh_id(sse_stub: SSEStub) -> None:
    """Without Open WebUI's message id (an API client's chat): the run id is the message id otherwise."""
    sse_stub.behaviour.data = events(T("Hi"), FINISHED)
    pipe = make_pipe([_agent(sse_stub.url)])
    run_pipe(pipe, "travel.concierge", HISTORY, chat_id="", metadata={"message_id": ""})
    run_pipe(pipe, "travel.concierge", HISTORY, chat_id="", metadata={"message_id": ""})
    first, second = (r["json"] for r in sse_stub.requests)
    assert first["runId"] != second["runId"]
    assert first["threadId"] and first["threadId"] != second["threadId"]


def test_requested_features_come_only_from_the_metadata_key(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi"), FINISHED)
    pipe = make_pipe([_agent(sse_stub.url)])

    async def go() -> None:
        body = {"model": "aihub_agent_pipe.travel.concierge", "messages": HISTORY, "features": {"web_search": True}}
        metadata = {"chat_id": "c", "features": {"web_search": True}}  # Open WebUI's own toggles: ignored
        async for _ in pipe.pipe(body=body, __user__={"id": "u"}, __metadata__=metadata):
            pass

    asyncio.run(go())
    assert sse_stub.requests[0]["json"]["forwardedProps"]["features"] == []


def test_api_key_is_sent_as_bearer_and_never_shown(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi"), FINISHED)
    pipe = make_pipe([_agent(sse_stub.url, api_key="concierge")], api_keys={"concierge": "s3cr3t-value"})
    run = run_pipe(pipe, "travel.concierge", HISTORY)
    assert sse_stub.requests[0]["headers"]["Authorization"] == "Bearer s3cr3t-value"
    assert "s3cr3t" not in run.content + json.dumps(run.events)


def test_missing_api_key_is_an_error_and_sends_nothing(sse_stub: SSEStub) -> None:
    pipe = make_pipe([_agent(sse_stub.url, api_key="nope")], api_keys={"other": "x"})
    run = run_pipe(pipe, "travel.concierge", HISTORY)
    assert sse_stub.requests == []
    assert "Agent error: The API key 'nope' is not configured in the pipe's API_KEYS valve." in run.content


def test_unknown_model_is_an_error_not_an_exception() -> None:
    run = run_pipe(make_pipe([]), "travel.ghost", HISTORY)
    assert run.content.startswith("> [!CAUTION]\n> Agent error: No agent is configured")


def test_open_webui_tasks_do_not_run_the_agent(sse_stub: SSEStub) -> None:
    pipe = make_pipe([_agent(sse_stub.url)])

    async def go() -> list[str]:
        body = {"model": "aihub_agent_pipe.travel.concierge", "messages": HISTORY}
        return [c async for c in pipe.pipe(body=body, __metadata__={}, __task__="title_generation")]

    assert asyncio.run(go()) == ["{}"]
    assert sse_stub.requests == []


# --- streaming to Open WebUI ------------------------------------------------------------------------


def test_stream_is_rendered_in_order_and_statuses_are_emitted(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [
        ": keepalive comment",
        *events(T("Let me check."), C("c1"), R("c1", "sunny"), T("Sunny."), FINISHED),
    ]
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    content = run.content
    assert content.index("Let me check.") < content.index('id="c1"') < content.index("</details>\nSunny.")
    assert run.chunks[0] == "Let me check."  # streamed before the call even started
    # an agent that answers at once needs no "Asking…" (in a browser chat each status is socket
    # messages and a rewrite of the chat in Open WebUI's database)
    assert run.statuses == ["Running get_weather…", "Done"]


def test_a_slow_agent_gets_an_asking_status_while_the_request_is_already_out(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Here."), FINISHED)
    sse_stub.behaviour.pauses = {0: 1.2}  # the agent thinks before its first event
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.statuses == ["Asking Concierge…", "Done"]
    assert run.content == "Here."


def test_an_agent_that_answered_at_once_gets_no_asking_status_however_long_it_runs(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi."), T(" More."), FINISHED)
    sse_stub.behaviour.pauses = {1: 1.0}  # first words at once, then a long pause
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.statuses == ["Done"]


def test_a_status_waits_for_a_delayed_asking_status_still_on_its_way(sse_stub: SSEStub) -> None:
    """A slow event emitter (a browser chat: socket messages, a database write): the delayed
    "Asking…" is still being sent when the next status comes; the next one must land after it."""
    sse_stub.behaviour.data = events(C("c1"), R("c1", "ok"), T("Done it."), FINISHED)
    sse_stub.behaviour.pauses = {0: 0.6}  # "Asking…" fires at 0.5 s and takes 0.4 s to send
    seen: list[str] = []

    async def slow_emitter(event: dict[str, Any]) -> None:
        description = event["data"]["description"]
        if description.startswith("Asking"):
            await asyncio.sleep(0.4)
        seen.append(description)

    async def chat() -> None:
        pipe = make_pipe([_agent(sse_stub.url)])
        body = {"model": "aihub_agent_pipe.travel.concierge", "messages": HISTORY, "stream": True}
        metadata = {"chat_id": "c"}
        async for _ in pipe.pipe(
            body=body, __user__={"id": "u"}, __metadata__=metadata, __event_emitter__=slow_emitter
        ):
            pass

    asyncio.run(chat())
    assert seen == ["Asking Concierge…", "Running get_weather…", "Done"]


def test_works_without_an_event_emitter(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi"), FINISHED)
    pipe = make_pipe([_agent(sse_stub.url)])

    async def go() -> str:
        body = {"model": "aihub_agent_pipe.travel.concierge", "messages": HISTORY}
        return "".join(
            [c async for c in pipe.pipe(body=body, __user__={"id": "u"}, __metadata__={}, __event_emitter__=None)]
        )

    assert asyncio.run(go()) == "Hi"


def test_text_starting_with_data_colon_is_not_passed_as_raw_sse(sse_stub: SSEStub) -> None:
    # Open WebUI forwards a yielded line that starts with "data:" as a raw SSE line.
    sse_stub.behaviour.data = events(T("data: looks like SSE"), FINISHED)
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.content == "data: looks like SSE"
    assert not any(chunk.startswith("data:") for chunk in run.chunks)


# --- failures: what streamed stays, the error is shown below it --------------------------------------


def test_run_error_keeps_what_streamed(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(
        T("lead"), C("c1"), R("c1"), [{"type": "RUN_ERROR", "message": "model failed", "code": "RuntimeError"}]
    )
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.content.startswith("lead\n<details")
    assert run.content.endswith("\n> [!CAUTION]\n> Agent error: model failed (RuntimeError)\n")
    assert run.statuses[-1] == "The agent stopped with an error"


def test_http_error_says_status_reason_and_the_servers_short_detail(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.status = 503
    host = sse_stub.url.removeprefix("http://")
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert (
        run.content
        == f"> [!CAUTION]\n> Agent error: The agent at {host} answered HTTP 503 Service Unavailable: agent exploded\n"
    )


def test_http_error_detail_is_cut_short(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.status = 500
    sse_stub.behaviour.error_body = "<html>" + "x" * 5000 + "</html>"
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert "answered HTTP 500 Internal Server Error: &lt;html&gt;xxx" in run.content
    assert len(run.content) < 400


def test_dropped_connection_keeps_what_streamed_and_closes_the_open_call(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("partial answer"), C("c1"))
    sse_stub.behaviour.drop_after = True
    host = sse_stub.url.removeprefix("http://")
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.content.startswith("partial answer\n<details")
    # the call whose run broke is closed as failed: Open WebUI shows it done, not "Executing..."
    assert 'done="true"' in run.content and 'status="failed"' in run.content
    assert "Executing..." not in run.content and 'done="false"' not in run.content
    assert 'result="Error: the run ended before this tool returned a result."' in run.content
    assert run.content.endswith(
        f"> Agent error: The connection to the agent at {host} broke while it was answering "
        "(ClientPayloadError). The answer above is incomplete.\n"
    )


def test_timeout_keeps_what_streamed(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("thinking out loud"))
    sse_stub.behaviour.hang_after = True
    run = run_pipe(make_pipe([_agent(sse_stub.url)], timeout=0.5), "travel.concierge", HISTORY)
    assert run.content.startswith("thinking out loud")
    assert run.content.endswith(
        "> Agent error: The agent did not finish within 0.5 seconds, so the run was stopped. "
        "The answer above is incomplete.\n"
    )


def test_stream_that_ends_without_run_finished_says_so(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("half"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.content == (
        "half\n\n> [!CAUTION]\n> Agent error: The agent's stream ended before the run finished. "
        "The answer above is incomplete.\n"
    )


def test_unreachable_agent_says_it_cannot_be_reached_and_which_host() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    run = run_pipe(make_pipe([_agent(f"http://127.0.0.1:{port}/agent")]), "travel.concierge", HISTORY)
    assert run.content == (
        f"> [!CAUTION]\n> Agent error: The agent cannot be reached at 127.0.0.1:{port} "
        "(connection refused: nothing listens there).\n"
    )


def test_agent_whose_host_does_not_resolve_says_so() -> None:
    # .invalid never resolves (RFC 2606); the lookup fails locally, nothing leaves the machine
    run = run_pipe(make_pipe([_agent("http://agents.invalid:8443/agent")]), "travel.concierge", HISTORY)
    assert "Agent error: The agent cannot be reached at agents.invalid:8443 (" in run.content


def test_sse_split_anywhere_with_crlf_comments_and_multiline_data_reads_the_same(sse_stub: SSEStub) -> None:
    stream = events(T("Grüße, "), T("naïve ☕"), C("c1"), R("c1", "ok"), T("fin"), FINISHED)
    frames = [": ping\r\n\r\n"] + [f"data: {json.dumps(e, ensure_ascii=False)}\r\n\r\n" for e in stream]
    # an event whose JSON is split over two data lines, as SSE allows
    frames.insert(2, 'data: {"type": "TEXT_MESSAGE_CONTENT",\r\ndata:  "messageId": "t1", "delta": "!"}\r\n\r\n')
    sse_stub.behaviour.raw = "".join(frames).encode()
    sse_stub.behaviour.fragment = 5  # cuts lines, CRLF pairs and UTF-8 sequences apart
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "travel.concierge", HISTORY)
    assert run.content.startswith("Grüße, !naïve ☕\n<details")
    assert run.content.endswith("</details>\nfin")
