"""Issue 29, points 1 and 9: what an agent shows beside its answer is bounded. Images and image
links per answer (MAX_IMAGES, MAX_TURN_IMAGES_MB; AG-UI events and OpenAI's ``delta.images``),
with one line in the answer for what was left out; usage counts (an absurd one is dropped, sums
stop at MAX_USAGE_COUNT); status text from the agent's words (MAX_STATUS_CHARS)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.support.pipe_support import FINISHED, SSEStub, T, events, make_pipe, pipe_module, run_pipe

P = pipe_module
HISTORY = [{"role": "user", "content": "q"}]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PNG_B64 = base64.b64encode(PNG).decode()


def _agui(url: str) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": url}


def _openai(url: str) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "openai", "url": url}


def _custom(name: str, value: Any) -> list[dict[str, Any]]:
    return [{"type": "CUSTOM", "name": name, "value": value}]


def _delta(**delta: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


def _files(run: Any) -> list[dict[str, Any]]:
    return [f for e in run.events if e.get("type") == "files" for f in e["data"]["files"]]


def test_the_number_of_images_an_answer_stores_is_capped_and_the_rest_named_once(
    sse_stub: SSEStub, stored_images: list
) -> None:
    image = _custom("aihub.image", {"mimeType": "image/png", "data": PNG_B64})
    sse_stub.behaviour.data = events(T("Drawn."), *[image] * 12, T(" End."), FINISHED)
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.valves.MAX_IMAGES = 10
    run = run_pipe(pipe, "lab.helper", HISTORY)
    assert [len(call) for call in stored_images] == [10] and len(_files(run)) == 10
    assert run.content.count("not shown") == 1
    assert "at most 10 images per answer" in run.content
    assert run.content.startswith("Drawn.") and run.content.endswith(" End.")


def test_the_total_bytes_of_an_answers_images_are_capped(sse_stub: SSEStub, stored_images: list) -> None:
    third = base64.b64encode(b"\x89PNG" + b"\0" * 300_000).decode()  # 0.29 MB each
    image = _custom("aihub.image", {"mimeType": "image/png", "data": third})
    sse_stub.behaviour.data = events(T("x"), *[image] * 3, FINISHED)
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.valves.MAX_TURN_IMAGES_MB = 0.5
    run = run_pipe(pipe, "lab.helper", HISTORY)
    assert [len(call) for call in stored_images] == [1]
    assert run.content.count("not shown") == 1 and "0.5 MB" in run.content


def test_image_links_count_against_the_same_cap(sse_stub: SSEStub, stored_images: list) -> None:
    links = [{"url": f"https://img.example.org/{n}.png"} for n in range(5000)]
    sse_stub.behaviour.data = events(T("x"), _custom("aihub.image", links), FINISHED)
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert len(_files(run)) == P.Pipe.Valves().MAX_IMAGES
    assert run.content.count("not shown") == 1


def test_openai_delta_images_are_capped_too(sse_stub: SSEStub, stored_images: list) -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}}
    sse_stub.behaviour.data = [_delta(content="Drawn."), *[_delta(images=[image])] * 4, "[DONE]"]
    pipe = make_pipe([_openai(sse_stub.url)])
    pipe.valves.MAX_IMAGES = 2
    run = run_pipe(pipe, "lab.helper", HISTORY)
    assert [len(call) for call in stored_images] == [2]
    assert run.content.count("not shown") == 1


def test_the_image_valves_have_sane_defaults() -> None:
    valves = P.Pipe.Valves()
    assert 1 <= valves.MAX_IMAGES <= 50
    assert valves.MAX_IMAGE_MB <= valves.MAX_TURN_IMAGES_MB <= 100


@pytest.mark.parametrize("over", [1, 2])
def test_an_image_a_byte_or_two_over_max_image_mb_is_not_stored(
    sse_stub: SSEStub, stored_images: list, over: int
) -> None:
    # its base64 is within the 3 bytes of padding the size check before decoding allows
    image = b"\x89PNG" + b"\0" * (262_144 - 4 + over)
    value = {"mimeType": "image/png", "data": base64.b64encode(image).decode()}
    sse_stub.behaviour.data = events(T("x"), _custom("aihub.image", value), FINISHED)
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.valves.MAX_IMAGE_MB = 0.25
    run = run_pipe(pipe, "lab.helper", HISTORY)
    assert stored_images == [] and "over this chat's limit of 0.25 MB" in run.content


# --- 9. usage and status text ----------------------------------------------------------------------------------


@pytest.mark.parametrize("absurd", [10**30, 2**63, 10**13])
def test_an_absurd_usage_count_is_dropped(absurd: int) -> None:
    assert "input" not in P.usage_counts({"input_tokens": absurd, "output_tokens": 5})
    assert P.usage_counts({"input_tokens": absurd, "output_tokens": 5})["output"] == 5


def test_usage_added_up_stays_bounded(sse_stub: SSEStub) -> None:
    huge = {"input_tokens": 10**9, "output_tokens": 10**9, "total_tokens": 2 * 10**9}
    finished = [{**FINISHED[0], "usage": [huge] * 200}]
    sse_stub.behaviour.data = events(T("Hi."), finished)
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    (usage,) = [item["usage"] for item in run.data if "usage" in item]
    assert max(v for v in usage.values() if isinstance(v, int)) <= P.MAX_USAGE_COUNT


@pytest.mark.parametrize(
    "event",
    [
        {"type": "STEP_STARTED", "stepName": "s" * 100_000},
        {"type": "CUSTOM", "name": "status", "value": {"state": "w" * 100_000}},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "t" * 100_000},
    ],
)
def test_status_text_from_the_agent_is_cut_short(event: dict[str, Any]) -> None:
    recorder = P.Recorder(scrubber=P.Scrubber())
    recorder.feed(event)
    (status,) = recorder.take_statuses()
    assert 0 < len(status["description"]) <= P.MAX_STATUS_CHARS
