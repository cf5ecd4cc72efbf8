"""The quick start's demo agents (demo_agents/): what each sample agent answers on both transports,
as served over loopback HTTP, read raw and through the real agent pipe."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from demo_agents.answers import AGENTS, growth_chart
from demo_agents.server import start_servers
from tests.support.pipe_support import make_pipe, run_pipe

MANUAL = "Our office opens at 8 am. Invoices are due by 2026-03-31.\nStaff must file expenses within 30 days."
MANUAL_V2 = "Our office opens at 9 am. Invoices are due by 2026-03-31.\nStaff must file expenses within 30 days."
REFUND = "The customer was charged twice for order 10023. Check it and refund the duplicate."
DOUBLE = "How long would 10,000 EUR take to double at 3.5% a year? Show the calculation."


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    (server,) = start_servers([0])
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def sse(response: httpx.Response) -> list[Any]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/event-stream"
    items = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    return [item if item == "[DONE]" else json.loads(item) for item in items]


def agui(demo: str, agent: str, messages: list[dict[str, Any]], **extra: Any) -> list[dict[str, Any]]:
    return sse(httpx.post(f"{demo}/{agent}", json={"threadId": "t", "runId": "r", "messages": messages, **extra}))


def openai(demo: str, agent: str, messages: list[dict[str, Any]]) -> list[Any]:
    body = {"model": agent, "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    return sse(httpx.post(f"{demo}/v1/chat/completions", json=body))


def user(text: str, *parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": text}, *parts] if parts else text}]


def agui_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def openai_text(chunks: list[Any]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c != "[DONE]" and c["choices"])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_models_list_and_health_name_every_sample_agent(demo: str) -> None:
    assert [m["id"] for m in httpx.get(f"{demo}/v1/models").json()["data"]] == list(AGENTS)
    assert httpx.get(f"{demo}/health").json()["status"] == "ok"
    assert httpx.post(f"{demo}/nobody", json={}).status_code == 404
    assert httpx.post(f"{demo}/v1/chat/completions", json={"model": "nobody"}).status_code == 404


# --- the Document Analyst -----------------------------------------------------------------------------


def test_document_analyst_quotes_an_openai_file_part(demo: str) -> None:
    part = {"type": "file", "file": {"filename": "manual.txt", "file_data": f"data:text/plain;base64,{b64(MANUAL)}"}}
    chunks = openai(demo, "document-analyst", user("Summarise the document I shared in five key points.", part))
    text = openai_text(chunks)
    assert '"Our office opens at 8 am."' in text and "manual.txt" in text
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0]["function"]
        for c in chunks
        if c != "[DONE]" and c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert [c["name"] for c in calls] == ["read_user_files", "summarise"]
    assert chunks[-1] == "[DONE]" and chunks[-2]["usage"]["total_tokens"] > 0


def test_document_analyst_reads_agui_document_parts_finds_deadlines_and_compares_versions(demo: str) -> None:
    def doc(text: str, name: str) -> dict[str, Any]:
        return {
            "type": "document",
            "source": {"type": "data", "value": b64(text), "mimeType": "text/plain"},
            "metadata": {"filename": name, "file_id": "f1", "size": len(text)},
        }

    deadlines = agui_text(agui(demo, "document-analyst", user("List every deadline", doc(MANUAL, "a.txt"))))
    assert '"Invoices are due by 2026-03-31."' in deadlines and "8 am" not in deadlines
    history = user("Here is v1", doc(MANUAL, "v1.txt")) + [{"role": "assistant", "content": "ok"}]
    history += user("Compare the two versions I shared", doc(MANUAL_V2, "v2.txt"))
    compared = agui_text(agui(demo, "document-analyst", history))
    assert "from *v1.txt* to *v2.txt*" in compared
    assert (
        'removed: "Our office opens at 8 am. Invoices' in compared and 'added: "Our office opens at 9 am.' in compared
    )


def test_document_analyst_without_a_file_says_how_to_attach_one(demo: str) -> None:
    for text in (
        agui_text(agui(demo, "document-analyst", user("Summarise my document"))),
        openai_text(openai(demo, "document-analyst", user("Summarise my document"))),
    ):
        assert "No file reached me" in text and "Upload files" in text


def test_document_analyst_names_a_file_it_cannot_read_and_sees_images(demo: str) -> None:
    image = {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(b"\x89PNG\x00\x01").decode()},
    }
    text = openai_text(openai(demo, "document-analyst", user("What is this?", image)))
    assert "could not read *image 1* (image/png, 6 bytes)" in text


# --- the Research Assistant: a tool call, sources, usage, a chart ---------------------------------------


def test_research_assistant_agui_streams_a_call_sources_usage_and_a_chart(demo: str) -> None:
    events = agui(demo, "research-assistant", user(DOUBLE))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert [e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"] == ["web_research", "python_sandbox"]
    assert kinds.index("TOOL_CALL_RESULT") < kinds.index("CUSTOM")  # results come with their calls, in order
    custom = {e["name"]: e["value"] for e in events if e["type"] == "CUSTOM"}
    assert [s["url"] for s in custom["aihub.source"]] == [
        "https://example.org/demo-research/overview",
        "https://example.com/demo-research/figures",
    ]
    assert base64.b64decode(custom["aihub.image"]["data"]).startswith(b"\x89PNG")
    assert "**20.1 years**" in agui_text(events)
    usage = events[-1]["usage"][0]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert events[-1]["outcome"] == {"type": "success"}


def test_research_assistant_openai_sends_annotations_images_and_the_usage_chunk(demo: str) -> None:
    chunks = openai(demo, "research-assistant", user(DOUBLE))
    deltas = [c["choices"][0]["delta"] for c in chunks if c != "[DONE]" and c["choices"]]
    citations = [a["url_citation"]["url"] for d in deltas for a in d.get("annotations", [])]
    assert citations == ["https://example.org/demo-research/overview", "https://example.com/demo-research/figures"]
    assert [d["images"][0]["image_url"]["url"][:22] for d in deltas if "images" in d] == ["data:image/png;base64,"]
    assert [d["tool_call_id"] for d in deltas if d.get("role") == "tool"] == [
        d["tool_calls"][0]["id"] for d in deltas if "tool_calls" in d
    ]
    assert set(chunks[-2]["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_the_growth_chart_is_a_png_of_the_asked_size() -> None:
    png = growth_chart(3.5, 21, width=100, height=50)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[16:24] == (100).to_bytes(4, "big") + (50).to_bytes(4, "big")


# --- the Support Desk: an approval before the refund ---------------------------------------------------


def test_support_desk_asks_for_approval_before_the_refund_and_runs_it_only_when_approved(demo: str) -> None:
    events = agui(demo, "support-desk", user(REFUND))
    names = [e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert names == ["classify_ticket", "lookup_order", "refund_payment"]
    refund = next(e["toolCallId"] for e in events if e.get("toolCallName") == "refund_payment")
    assert refund not in {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    assert events[-1]["outcome"]["type"] == "interrupt"
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == refund
    assert interrupt["responseSchema"]["properties"] == {"approved": {"type": "boolean"}}

    def resumed(status: str, approved: bool) -> list[dict[str, Any]]:
        answer = {"interruptId": interrupt["id"], "status": status, "payload": {"approved": approved}}
        return agui(demo, "support-desk", user(REFUND), resume=[answer])

    approved = resumed("resolved", True)
    assert [json.loads(e["content"])["status"] for e in approved if e["type"] == "TOOL_CALL_RESULT"] == ["done"]
    assert [e["toolCallId"] for e in approved if e["type"] == "TOOL_CALL_RESULT"] == [refund]
    assert "is refunded" in agui_text(approved) and approved[-1]["outcome"] == {"type": "success"}
    # Declined, or not answered at all (an API client, a timeout: the pipe sends approved: false
    # then too), so the answer must not claim the user declined.
    for answer in (resumed("resolved", False), resumed("cancelled", True)):
        assert "I did not refund anything: the refund was not approved." in agui_text(answer)
        assert "declined" not in agui_text(answer)
        assert [json.loads(e["content"])["status"] for e in answer if e["type"] == "TOOL_CALL_RESULT"] == ["not run"]


def test_support_desk_over_openai_says_approval_needs_agui_and_does_nothing(demo: str) -> None:
    text = openai_text(openai(demo, "support-desk", user(REFUND)))
    assert "asks for approval over AG-UI only; nothing was done" in text


def test_support_desk_and_policy_faq_answer_with_their_calls_in_order(demo: str) -> None:
    order = agui(demo, "support-desk", user("Where is order 10023? The customer says it was due last week."))
    assert [e["toolCallName"] for e in order if e["type"] == "TOOL_CALL_START"] == [
        "classify_ticket",
        "lookup_order",
        "draft_reply",
    ]
    assert "Order 10023 shows as delivered" in agui_text(order)
    policy = agui(demo, "policy-faq", user("How many days of paid leave do I get this year?"))
    assert [e["toolCallName"] for e in policy if e["type"] == "TOOL_CALL_START"] == ["retrieve_policies", "draft_reply"]
    assert "28 days of paid leave" in agui_text(policy)


# --- through the real agent pipe -----------------------------------------------------------------------


def _pipe_agent(demo: str, agent: str, transport: str) -> dict[str, Any]:
    url = f"{demo}/v1" if transport == "openai" else f"{demo}/{agent}"
    return {
        "id": f"{agent}.default",
        "name": agent,
        "transport": transport,
        "url": url,
        "model": agent,
        **({"api_key": "k"} if transport == "openai" else {}),
    }


@pytest.mark.parametrize("transport", ["agui", "openai"])
@pytest.mark.parametrize(
    "agent,prompt,expected",
    [
        ("document-analyst", "Summarise my document", "No file reached me"),
        ("policy-faq", "Can I expense a client dinner?", "60 EUR a person"),
        ("research-assistant", "Compare heat pumps and gas boilers, with sources.", "source chips"),
        ("support-desk", "Draft a friendly reply to a customer whose parcel arrived damaged.", "reply you can send"),
    ],
)
def test_every_sample_agent_answers_through_the_pipe(
    demo: str, transport: str, agent: str, prompt: str, expected: str
) -> None:
    pipe = make_pipe([_pipe_agent(demo, agent, transport)], api_keys={"k": "demo-key"})
    run = run_pipe(pipe, f"{agent}.default", [{"role": "user", "content": prompt}])
    assert expected in run.content and "cannot be reached" not in run.content
    assert '<details type="tool_calls"' in run.content  # its tool calls show, in stream order
    usage = [item["usage"] for item in run.data if "usage" in item]
    assert len(usage) == 1 and usage[0]["total_tokens"] > 0
    if agent == "research-assistant":
        assert [s["source"]["url"] for s in run.sources] == [
            "https://example.org/demo-research/overview",
            "https://example.com/demo-research/figures",
        ]


@pytest.mark.parametrize("approved,expected", [(True, "is refunded"), (False, "I did not refund anything")])
def test_the_billing_refund_asks_in_the_pipes_dialog_and_resumes_the_same_answer(
    demo: str, approved: bool, expected: str
) -> None:
    questions: list[dict[str, Any]] = []

    async def dialog(question: dict[str, Any]) -> Any:  # Open WebUI's __event_call__, as a browser answers it
        questions.append(question)
        return approved

    pipe = make_pipe([_pipe_agent(demo, "support-desk", "agui")])
    run = run_pipe(pipe, "support-desk.default", [{"role": "user", "content": REFUND}], event_call=dialog)
    (question,) = questions
    assert question["type"] == "confirmation" and "refund_payment" in question["data"]["title"]
    assert "once you approve it" in run.content and expected in run.content
    assert run.content.count('name="refund_payment"') == 1
