"""Attached files reach the agent inside their user message (issue 19, point 1), read through a
fake of Open WebUI's store; the real store is exercised in tests/e2e/test_inbound_e2e.py."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from tests.support.pipe_support import FINISHED, FakeStore, SSEStub, T, drive, events, make_pipe, pipe_module

P = pipe_module
PDF = b"%PDF-1.4 quarterly numbers \x00\x01\x02" * 10
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def _agui(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "docs.analyst", "name": "Analyst", "url": url, **extra}


def _openai(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "docs.analyst", "name": "Analyst", "transport": "openai", "url": url, "model": "m", **extra}


def _run(
    stub: SSEStub,
    agent: dict[str, Any],
    store: Any,
    messages: list[dict[str, Any]],
    *,
    files: list[dict] | None = None,
    valves: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    stub.behaviour.data = (
        [{"choices": [{"index": 0, "delta": {"content": "ok"}}]}, "[DONE]"]
        if agent.get("transport") == "openai"
        else events(T("ok"), FINISHED)
    )
    pipe = make_pipe([agent])
    for key, value in (valves or {}).items():
        setattr(pipe.valves, key, value)
    pipe.store = store
    metadata = {"files": files} if files is not None else {}
    return asyncio.run(drive(pipe, "docs.analyst", messages, metadata=metadata, **kwargs))


def _texts(content: Any) -> list[str]:
    """The text of a sent user message, line by line (text alone stays a string on AG-UI)."""
    if isinstance(content, str):
        return content.split("\n")
    return [p["text"] for p in content if p["type"] == "text"]


def _data(part: dict[str, Any]) -> bytes:
    return base64.b64decode(part["source"]["value"])


def test_a_document_and_an_image_reach_an_agui_agent_inside_their_message(sse_stub: SSEStub) -> None:
    store = FakeStore()
    refs = [store.add("f-pdf", "q3.pdf", "application/pdf", PDF), store.add("f-png", "chart.png", "image/png", PNG)]
    run = _run(sse_stub, _agui(sse_stub.url), store, [{"role": "user", "content": "Summarise"}], files=refs)
    assert run.content == "ok"
    (user,) = sse_stub.requests[0]["json"]["messages"]
    text, document, image = user["content"]
    assert text == {"type": "text", "text": "Summarise"}
    assert document["type"] == "document" and image["type"] == "image"
    assert document["source"]["type"] == "data" and document["source"]["mimeType"] == "application/pdf"
    assert _data(document) == PDF and _data(image) == PNG
    assert document["metadata"] == {"filename": "q3.pdf", "file_id": "f-pdf", "size": len(PDF)}
    assert image["metadata"] == {"filename": "chart.png", "file_id": "f-png", "size": len(PNG)}


def test_an_openai_agent_gets_a_file_part_and_an_image_url(sse_stub: SSEStub) -> None:
    store = FakeStore()
    refs = [store.add("f-pdf", "q3.pdf", "application/pdf", PDF), store.add("f-png", "chart.png", "image/png", PNG)]
    _run(sse_stub, _openai(sse_stub.url), store, [{"role": "user", "content": "Summarise"}], files=refs)
    (user,) = sse_stub.requests[0]["json"]["messages"]
    text, document, image = user["content"]
    assert text == {"type": "text", "text": "Summarise"}
    assert document == {
        "type": "file",
        "file": {"filename": "q3.pdf", "file_data": "data:application/pdf;base64," + base64.b64encode(PDF).decode()},
    }
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
    }


def test_a_file_of_an_earlier_message_stays_with_that_message_next_turn(sse_stub: SSEStub) -> None:
    store = FakeStore()
    first = store.add("f-v1", "v1.txt", "text/plain", b"version one")
    second = store.add("f-v2", "v2.txt", "text/plain", b"version two")
    store.stored = [[first], [second]]  # the stored chat: each file on its own user message
    history = [
        {"role": "user", "content": "Here is v1"},
        {"role": "assistant", "content": "Got it."},
        {"role": "user", "content": "Compare it with v2"},
    ]
    _run(sse_stub, _agui(sse_stub.url), store, history, files=[first, second])
    sent = sse_stub.requests[0]["json"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert _data(sent[0]["content"][1]) == b"version one" and len(sent[0]["content"]) == 2
    assert _data(sent[2]["content"][1]) == b"version two" and len(sent[2]["content"]) == 2


def test_without_a_stored_chat_the_files_go_with_the_newest_user_message(sse_stub: SSEStub) -> None:
    store = FakeStore()
    ref = store.add("f-1", "a.txt", "text/plain", b"alpha")
    history = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    _run(sse_stub, _openai(sse_stub.url), store, history, files=[ref])
    sent = sse_stub.requests[0]["json"]["messages"]
    assert sent[0]["content"] == "one"
    assert sent[2]["content"][1]["file"]["file_data"] == "data:text/plain;base64," + base64.b64encode(b"alpha").decode()


def test_another_users_file_is_left_out_and_named_without_its_owner(sse_stub: SSEStub) -> None:
    store = FakeStore()
    mine = store.add("f-mine", "mine.txt", "text/plain", b"mine")
    theirs = store.add("f-theirs", "secret-plan.txt", "text/plain", b"THEIR SECRET BYTES", owner="user-2")
    injected = {"type": "file", "id": "f-theirs"}  # an API client sends only the id
    run = _run(sse_stub, _agui(sse_stub.url), store, [{"role": "user", "content": "Read both"}], files=[mine, injected])
    raw = json.dumps(sse_stub.requests[0]["json"])
    assert "THEIR SECRET BYTES" not in raw and base64.b64encode(b"THEIR SECRET BYTES").decode() not in raw
    assert "secret-plan" not in raw and "user-2" not in raw  # neither its name nor its owner
    assert store.reads == ["f-mine"]
    note = '[The attached file "f-theirs" was left out: it is not a file you may read.]'
    assert sse_stub.requests[0]["json"]["messages"][0]["content"][-1] == {"type": "text", "text": note}
    assert note in [e["data"]["content"] for e in run.events if e["type"] == "notification"]
    assert theirs["name"] not in run.content


def test_a_file_shared_with_the_user_by_open_webuis_rule_is_read(sse_stub: SSEStub) -> None:
    store = FakeStore()
    ref = store.add("f-kb", "handbook.txt", "text/plain", b"shared text", owner="user-2")
    store.shared.add(("f-kb", "user-1"))
    _run(sse_stub, _agui(sse_stub.url), store, [{"role": "user", "content": "Read"}], files=[ref])
    assert _data(sse_stub.requests[0]["json"]["messages"][0]["content"][1]) == b"shared text"


def test_an_admin_may_read_any_file(sse_stub: SSEStub) -> None:
    store = FakeStore()
    ref = store.add("f-x", "x.txt", "text/plain", b"x", owner="user-2")
    _run(
        sse_stub, _agui(sse_stub.url), store, [{"role": "user", "content": "Read"}], files=[ref], user={"role": "admin"}
    )
    assert _data(sse_stub.requests[0]["json"]["messages"][0]["content"][1]) == b"x"


def test_a_missing_file_reads_the_same_as_a_forbidden_one(sse_stub: SSEStub) -> None:
    store = FakeStore()
    _run(
        sse_stub,
        _agui(sse_stub.url),
        store,
        [{"role": "user", "content": "Read"}],
        files=[{"type": "file", "id": "f-gone", "name": "gone.txt"}],
    )
    lines = _texts(sse_stub.requests[0]["json"]["messages"][0]["content"])
    assert lines == ["Read", '[The attached file "gone.txt" was left out: it is not a file you may read.]']


@pytest.mark.parametrize(
    ("valves", "sizes", "expected"),
    [
        ({"MAX_FILE_MB": 1}, [2 * P.MB], ['"big-0.bin" was left out: 2.0 MB is over the limit of 1 MB per file']),
        (
            {"MAX_TURN_FILES_MB": 1.5},
            [P.MB, P.MB],
            [None, '"big-1.bin" was left out: the files of this message would be over the limit of 1.5 MB'],
        ),
    ],
)
def test_a_file_over_a_limit_is_named_to_the_agent_and_the_user(sse_stub: SSEStub, valves, sizes, expected) -> None:
    store = FakeStore()
    refs = [
        store.add(f"f-{n}", f"big-{n}.bin", "application/octet-stream", b"x" * size) for n, size in enumerate(sizes)
    ]
    run = _run(sse_stub, _agui(sse_stub.url), store, [{"role": "user", "content": "Read"}], files=refs, valves=valves)
    content = sse_stub.requests[0]["json"]["messages"][0]["content"]
    notices = [e["data"]["content"] for e in run.events if e["type"] == "notification"]
    lines = _texts(content)[1:]
    for line in filter(None, expected):
        assert any(line in text for text in lines) and any(line in notice for notice in notices)
    documents = [] if isinstance(content, str) else [p for p in content if p["type"] == "document"]
    assert len(documents) == expected.count(None)  # files are read in order: the first fitted


def test_a_record_that_understates_its_size_is_caught_when_read(sse_stub: SSEStub) -> None:
    store = FakeStore()
    ref = store.add("f-lie", "lie.bin", "application/octet-stream", b"x" * (2 * P.MB), size=10)
    _run(
        sse_stub,
        _agui(sse_stub.url),
        store,
        [{"role": "user", "content": "Read"}],
        files=[ref],
        valves={"MAX_FILE_MB": 1},
    )
    (line,) = _texts(sse_stub.requests[0]["json"]["messages"][0]["content"])[1:]
    assert "2.0 MB is over the limit of 1 MB per file" in line


def test_an_agent_that_reads_no_images_is_told_one_was_left_out(sse_stub: SSEStub) -> None:
    store = FakeStore()
    refs = [store.add("f-png", "chart.png", "image/png", PNG), store.add("f-pdf", "q3.pdf", "application/pdf", PDF)]
    _run(sse_stub, _agui(sse_stub.url, reads=["documents"]), store, [{"role": "user", "content": "Read"}], files=refs)
    parts = sse_stub.requests[0]["json"]["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "document"]
    assert parts[1]["text"] == '[The attached file "chart.png" was left out: this agent does not read images.]'


def test_image_url_parts_become_agui_image_parts_instead_of_being_dropped(sse_stub: SSEStub) -> None:
    png = base64.b64encode(PNG).decode()
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "image_url", "image_url": {"url": "https://example.org/cat.jpg"}},
    ]
    _run(sse_stub, _agui(sse_stub.url), FakeStore(), [{"role": "user", "content": content}])
    (user,) = sse_stub.requests[0]["json"]["messages"]
    assert user["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "data", "value": png, "mimeType": "image/png"}},
        {"type": "image", "source": {"type": "url", "value": "https://example.org/cat.jpg"}},
    ]


def test_open_webuis_attached_files_list_is_not_passed_to_the_agent(sse_stub: SSEStub) -> None:
    listed = (
        '<attached_files>\n<file type="file" id="f-1" url="/api/v1/files/f-1" name="a.txt"/>\n'
        "</attached_files>\n\nSummarise"
    )
    _run(sse_stub, _agui(sse_stub.url), FakeStore(), [{"role": "user", "content": listed}])
    assert sse_stub.requests[0]["json"]["messages"][0]["content"] == "Summarise"


def test_a_chat_without_files_never_touches_the_store(sse_stub: SSEStub) -> None:
    class Untouchable:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"store.{name} used")

    _run(sse_stub, _agui(sse_stub.url), Untouchable(), [{"role": "user", "content": "hi"}], files=[])
    assert sse_stub.requests[0]["json"]["messages"][0]["content"] == "hi"


def test_a_failing_store_leaves_the_file_out_and_the_chat_runs(sse_stub: SSEStub, caplog) -> None:
    class Broken(FakeStore):
        async def read(self, record: Any, limit: int) -> tuple[int, bytes]:
            raise OSError("/srv/data/uploads/f-1 permission denied")

    store = Broken()
    ref = store.add("f-1", "a.txt", "text/plain", b"a")
    run = _run(sse_stub, _agui(sse_stub.url), store, [{"role": "user", "content": "Read"}], files=[ref])
    assert run.content == "ok"
    assert _texts(sse_stub.requests[0]["json"]["messages"][0]["content"])[-1] == (
        '[The attached file "a.txt" was left out: Open WebUI could not read it.]'
    )
    assert "/srv/data" not in caplog.text


def test_file_bytes_never_reach_logs_or_the_answer(sse_stub: SSEStub, caplog) -> None:
    secret = b"CONFIDENTIAL-PAYLOAD-0042"
    store = FakeStore()
    ref = store.add("f-1", "a.txt", "text/plain", secret)
    sse_stub.behaviour.status = 500
    sse_stub.behaviour.error_body = "boom"
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.store = store
    caplog.set_level("DEBUG")
    run = asyncio.run(drive(pipe, "docs.analyst", [{"role": "user", "content": "Read"}], metadata={"files": [ref]}))
    encoded = base64.b64encode(secret).decode()
    for text in (run.content, caplog.text, json.dumps(run.events)):
        assert secret.decode() not in text and encoded not in text


def test_encode_body_puts_the_base64_where_its_token_stands() -> None:
    attachment = P.Attachment(
        id="f", name="n", mime="text/plain", size=3, data=b"YWJj", token="\x00aihub-file-x-0-0\x00"
    )
    payload = {"messages": [{"content": [{"type": "document", "source": {"value": attachment.token}}]}], "n": "\u00e9"}
    assert json.loads(b"".join(P.encode_body(payload, [attachment]).pieces)) == {
        "messages": [{"content": [{"type": "document", "source": {"value": "YWJj"}}]}],
        "n": "\u00e9",
    }


def test_stored_user_files_walks_the_branch_that_ends_at_the_message() -> None:
    messages = {
        "u1": {"id": "u1", "role": "user", "parentId": None, "files": [{"id": "a"}]},
        "a1": {"id": "a1", "role": "assistant", "parentId": "u1"},
        "u2": {"id": "u2", "role": "user", "parentId": "a1", "files": [{"id": "b"}]},
        "u2-other": {"id": "u2-other", "role": "user", "parentId": "a1", "files": [{"id": "c"}]},
    }
    assert P.stored_user_files(messages, "u2") == [[{"id": "a"}], [{"id": "b"}]]
    assert P.stored_user_files(messages, "missing") is None


def test_old_agents_valves_parse_with_safe_defaults() -> None:
    spec = P.AgentSpec.model_validate({"id": "a.b", "name": "B", "url": "http://x"})
    assert (spec.reads, spec.identity, spec.oauth_token_header) == (None, "auto", None)
    spec = P.AgentSpec.model_validate(
        {
            "id": "a.b",
            "name": "B",
            "url": "http://x",
            "reads": ["images"],
            "identity": "signed",
            "oauth_token_header": "X-Drive-Token",
        }
    )
    assert (spec.reads, spec.identity, spec.oauth_token_header) == (("images",), "signed", "X-Drive-Token")


def test_an_image_open_webui_inlined_is_not_read_again_one_it_did_not_is(sse_stub: SSEStub) -> None:
    store = FakeStore()
    inlined = store.add("f-in", "in.png", "image/png", PNG)
    linked = store.add("f-out", "out.png", "image/png", PNG[::-1])
    store.stored = [[{**inlined, "type": "image"}], [{**linked, "type": "image"}]]
    png = base64.b64encode(PNG).decode()
    history: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
            ],
        },
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "two"},
    ]
    _run(sse_stub, _agui(sse_stub.url), store, history, files=[linked])  # a chat without files reads no store
    first, _, second = sse_stub.requests[0]["json"]["messages"]
    assert [p["type"] for p in first["content"]] == ["text", "image"] and store.reads == ["f-out"]
    assert _data(second["content"][1]) == PNG[::-1] and second["content"][1]["metadata"]["file_id"] == "f-out"


def test_a_stored_file_is_read_and_encoded_in_blocks_that_join_to_its_base64(tmp_path) -> None:
    data = bytes(range(256)) * (P.BASE64_BLOCK // 128) + b"tail"  # two blocks and a bit
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    size, pieces = P._read_base64(str, str(path), len(data))
    assert size == len(data) and len(pieces) == 3
    assert b"".join(pieces) == base64.b64encode(data)
    with pytest.raises(P.FileTooLarge) as raised:
        P._read_base64(str, str(path), len(data) - 1)
    assert raised.value.size == len(data)
