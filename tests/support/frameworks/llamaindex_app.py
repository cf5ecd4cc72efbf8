"""A real LlamaIndex AG-UI server (llama-index-protocols-ag-ui's workflow router) whose LLM is a script.

Runs inside a venv with ``llama-index-protocols-ag-ui`` (tests/support/frameworks/pins), never
in the project venv. The workflow (AGUIChatWorkflow), its tool steps and the FastAPI router are
LlamaIndex's own, in their default configuration; the LLM is a ``MockFunctionCallingLLM``
subclass that streams a script: no LLM, no network.

The scenario is named in the latest user message that says ``scenario:<name>``; the step is the
number of assistant messages after it (LlamaIndex sends a frontend tool's answer back to the
model as a user message, so a resumed run counts on). AG-UI endpoint: ``POST /llamaindex/run``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from app_common import EFFECTS, MODEL_CALLS, SCENARIO_PREFIX, add_test_routes, scenario_of, serve, words  # noqa: E402

from llama_index.core.base.llms.types import (  # noqa: E402
    ChatMessage,
    ChatResponse,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_chat_callback  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402

Step = list[tuple[str, Any]]
SCRIPTS: dict[str, list[Step]] = {
    "stream": [[("text", "Hello from the scripted LlamaIndex agent.")]],
    "tool": [
        [("text", "Let me look up the weather."), ("call", ("get_weather", {"city": "Paris"}))],
        [("text", "It is sunny in Paris.")],
    ],
    # confirm_booking is a frontend tool: the run ends for the client to answer it
    "approve": [
        [("text", "I need you to confirm the booking."), ("call", ("confirm_booking", {"hotel": "Ritz"}))],
        [("answer", None)],
        [("text", "The Ritz is booked.")],
    ],
    "error": [
        [("text", "Let me look up the weather."), ("call", ("get_weather", {"city": "Paris"}))],
        [("raise", "scripted model failure")],
    ],
    "tool_error": [
        [("text", "Let me check the order."), ("call", ("check_order", {"order": "10023"}))],
        [("text", "The order service failed.")],
    ],
    "usage": [[("text", "Counted answer.")]],
    "image": [[("text", "I received your files.")]],
}


def _bytes(block: Any) -> bytes | None:
    try:
        stream = block.resolve_image() if isinstance(block, ImageBlock) else block.resolve_document()
    except Exception:  # noqa: BLE001 - a URL-only block has no bytes here
        return None
    return stream.read()


def describe(message: ChatMessage) -> dict[str, Any]:
    """A message as the model saw it; media as type, mime type and hash, never the bytes."""
    media = []
    for block in message.blocks:
        if isinstance(block, (ImageBlock, DocumentBlock)):
            data = _bytes(block)
            media.append({"kind": block.block_type,
                          "mime_type": getattr(block, "image_mimetype", None) or getattr(block, "document_mimetype", None),
                          "sha256": hashlib.sha256(data).hexdigest() if data else None})
    return {
        "role": message.role.value,
        "text": "".join(b.text for b in message.blocks if isinstance(b, TextBlock)),
        "calls": [b.tool_name for b in message.blocks if isinstance(b, ToolCallBlock)],
        "tool_call_id": message.additional_kwargs.get("tool_call_id"),
        "media": media,
    }


def _step(messages: Sequence[ChatMessage]) -> Step:
    MODEL_CALLS.append([describe(m) for m in messages])
    texts = [describe(m)["text"] for m in messages]
    asked = max((i for i, m in enumerate(messages) if m.role.value == "user" and SCENARIO_PREFIX in texts[i]), default=-1)
    name = scenario_of(texts[asked]) if asked >= 0 else "stream"
    rounds = sum(1 for m in messages[asked + 1 :] if m.role.value == "assistant")
    steps = SCRIPTS.get(name, SCRIPTS["stream"])
    step = steps[min(rounds, len(steps) - 1)]
    if step == [("answer", None)]:  # the user's answer to confirm_booking came back as the last message
        accepted = '"approved": true' in texts[-1] or '"accepted": true' in texts[-1]
        return ([("text", "Booking it now."), ("call", ("book_hotel", {"hotel": "Ritz"}))] if accepted
                else [("text", "All right, I will not book it.")])
    return step


class ScriptedLLM(MockFunctionCallingLLM):
    """A function-calling LLM that streams ``SCRIPTS``: text deltas, then whole tool calls."""

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> AsyncIterator[ChatResponse]:
        step = _step(messages)

        async def gen() -> AsyncIterator[ChatResponse]:
            text = ""
            calls: list[ToolCallBlock] = []
            for n, (kind, value) in enumerate(step):
                await asyncio.sleep(0)
                if kind == "raise":
                    raise RuntimeError(value)
                if kind == "text":
                    for delta in words(value):
                        text += delta
                        yield ChatResponse(message=ChatMessage(role="assistant", content=text), delta=delta)
                elif kind == "call":
                    name, args = value
                    calls.append(ToolCallBlock(tool_call_id=f"call_{os.urandom(4).hex()}_{n}", tool_name=name, tool_kwargs=args))
                    blocks = [TextBlock(text=text), *calls] if text else [*calls]
                    yield ChatResponse(message=ChatMessage(role="assistant", blocks=blocks), delta="")

        return gen()


def check_order(order: str) -> str:
    """An order lookup that fails, to show a tool exception."""
    raise RuntimeError(f"order service unavailable for {order}")


def book_hotel(hotel: str) -> str:
    """Book a hotel (a backend tool, called once the user confirmed)."""
    EFFECTS.append(f"booked {hotel}")
    return f"Booked {hotel}."


# region llamaindex-server
from fastapi import FastAPI  # noqa: E402
from llama_index.core.workflow import Context  # noqa: E402
from llama_index.protocols.ag_ui.router import get_ag_ui_workflow_router  # noqa: E402


async def get_weather(ctx: Context, city: str) -> str:
    """Weather for a city (canned). A tool that takes the workflow's Context reads the
    AG-UI state the client sent (ctx.store "state")."""
    state = await ctx.store.get("state", default={})
    return json.dumps({"city": city, "sky": "sunny", "temp_c": 21, "state_keys": sorted(state)})


def confirm_booking(hotel: str) -> str:
    """Ask the user to confirm a booking: a frontend tool, answered by the client."""
    return ""


app = FastAPI()
app.include_router(get_ag_ui_workflow_router(
    llm=ScriptedLLM(),
    backend_tools=[get_weather, check_order, book_hotel],
    frontend_tools=[confirm_booking],
), prefix="/llamaindex")
# endregion llamaindex-server

add_test_routes(app, "/llamaindex/run", ("llama-index-protocols-ag-ui", "llama-index-core", "ag-ui-protocol", "fastapi"))

if __name__ == "__main__":
    serve(app)
