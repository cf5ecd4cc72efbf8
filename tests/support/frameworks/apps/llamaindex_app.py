"""LlamaIndex through its own AG-UI server: llama-index-protocols-ag-ui's workflow router, as its README shows.

``get_ag_ui_workflow_router(llm=..., backend_tools=[...], frontend_tools=[...])`` mounted on a
FastAPI app, ``POST <prefix>/run``. The LLM is a ``MockFunctionCallingLLM`` subclass (LlamaIndex's
own function-calling mock) whose ``astream_chat`` streams apps/_common.py's scripts: text
deltas, then the calls as ``ToolCallBlock``s. The package has no interrupts: its way to ask is a
frontend tool, whose call ends the run for the client to answer (the workflow runs the tool's
Python body on the server too, and drops its result); the answer comes back as a ``tool``
message, which the workflow turns into a *user* message. Runs in its own venv
(tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

PINS = (
    "llama-index-protocols-ag-ui==0.6.0",
    "llama-index-core==0.14.25",
    "llama-index-workflows==2.26.1",
    "ag-ui-protocol==1.0.0",
    "fastapi==0.165.0",
    "uvicorn==0.55.0",
)
# How the pipe's ids, identity and files reach the agent's code (docs/agent-frameworks.md).
REACHES = (
    "The workflow gets the conversation the pipe sends, whole, every run (the router keeps no thread state); "
    "a tool message comes back to the model as a user message.",
    "`threadId`, `forwardedProps` and `context` are not passed to the workflow or its tools: a FastAPI "
    "dependency of the router reads them from the request, with the signed identity header "
    "(`X-AIHub-Identity`, verify it there), and puts them in a context variable the tools read (above).",
    "The user's image and document arrive as `ImageBlock` and `DocumentBlock` on the user message (the files row).",
)
AGENT_PATH = "/llamaindex/run"
SCENARIOS = ("stream", "tool", "client", "tool_error", "model_error", "files", "no_args")
NOT_OFFERED = {
    "approve": "llama-index-protocols-ag-ui has no interrupts: its only way to ask is a frontend tool",
    "ask": "llama-index-protocols-ag-ui has no interrupts: its only way to ask is a frontend tool",
}

import asyncio

import _common as common
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_chat_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM


def _media(block: Any) -> dict[str, str] | None:
    try:
        data = block.resolve_image().read() if isinstance(block, ImageBlock) else block.resolve_document().read()
    except Exception:  # noqa: BLE001 - a URL-only block has no bytes here
        return None
    if isinstance(block, ImageBlock):
        return common.media("ImageBlock", block.image_mimetype or "", data)
    return common.media("DocumentBlock", block.document_mimetype or "", data)


def _seen(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        text = "".join(b.text for b in m.blocks if isinstance(b, TextBlock))
        media = [x for b in m.blocks if isinstance(b, (ImageBlock, DocumentBlock)) for x in [_media(b)] if x]
        calls = [b.tool_call_id for b in m.blocks if isinstance(b, ToolCallBlock)]
        if m.role.value == "tool":
            out.append(common.seen("tool", results=[(m.additional_kwargs.get("tool_call_id"), text)]))
        else:
            out.append(common.seen(m.role.value, text, calls=calls, media=media))
    return out


def _as_scripted(seen: list[dict[str, Any]], messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The script counts tool results: a client's answer that the workflow made a user message
    (it keeps the call id) counts as the result it is, not as the user's next question."""
    out = []
    for record, m in zip(seen, messages, strict=False):
        call_id = m.additional_kwargs.get("tool_call_id")
        out.append(
            common.seen("tool", results=[(call_id, record["text"])]) if record["role"] == "user" and call_id else record
        )
    return out


class ScriptedLLM(MockFunctionCallingLLM):
    """LlamaIndex's function-calling mock, streaming the scripted step."""

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> AsyncIterator[ChatResponse]:
        seen = _seen(messages)
        common.keep_model_call(seen)
        step = common.step_for(_as_scripted(seen, messages))

        async def gen() -> AsyncIterator[ChatResponse]:
            text = ""
            for piece in step.text:
                await asyncio.sleep(0)
                text += piece
                yield ChatResponse(message=ChatMessage(role="assistant", content=text), delta=piece)
            if step.fail:
                raise RuntimeError(step.fail)
            if step.calls:
                calls = [
                    ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs="".join(c.pieces))
                    for c in step.calls
                ]
                blocks = [TextBlock(text=text), *calls] if text else calls
                yield ChatResponse(message=ChatMessage(role="assistant", blocks=blocks), delta="")

        return gen()


# snippet: start
from contextvars import ContextVar

from fastapi import Depends, FastAPI, Request
from llama_index.protocols.ag_ui.router import get_ag_ui_workflow_router

CALLER: ContextVar[dict[str, Any] | None] = ContextVar("caller", default=None)


async def caller(request: Request) -> None:
    """Who asks, for the run's tools: the ids the pipe sends and its signed identity header
    (verify it here before you trust it, and raise HTTPException(401) when it does not)."""
    run = await request.json()  # FastAPI keeps the body: the endpoint reads it again
    forwarded = run.get("forwardedProps") or {}
    identity = request.headers.get("X-AIHub-Identity")
    CALLER.set({"thread_id": run.get("threadId"), "user_id": forwarded.get("user_id"), "identity": identity})


def lookup_order(order: str) -> str:
    """Look an order up."""
    seen = CALLER.get() or {}
    thread_id, user_id, identity = seen.get("thread_id"), seen.get("user_id"), seen.get("identity")
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


# snippet: start
def confirm_shipment(order: str) -> str:
    """Confirm a shipment: a frontend tool, answered by the client."""
    return ""


# snippet: end


def current_time() -> str:
    """The time now (a tool that takes no arguments)."""
    common.ran("current_time", {})
    return "12:00"


def broken_lookup(order: str) -> str:
    """A tool that fails."""
    common.ran("broken_lookup", {"order": order})
    raise RuntimeError("the order database is down")


# snippet: start
app = FastAPI(title="LlamaIndex AG-UI")
app.include_router(
    get_ag_ui_workflow_router(
        llm=ScriptedLLM(),
        backend_tools=[lookup_order, broken_lookup, current_time],
        frontend_tools=[confirm_shipment],
    ),
    prefix="/llamaindex",
    dependencies=[Depends(caller)],
)
# snippet: end

if __name__ == "__main__":
    common.serve(
        app,
        AGENT_PATH,
        [
            "llama-index-protocols-ag-ui",
            "llama-index-core",
            "llama-index-workflows",
            "ag-ui-protocol",
            "fastapi",
            "uvicorn",
        ],
    )
