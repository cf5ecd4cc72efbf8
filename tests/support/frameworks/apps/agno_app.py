"""Agno through its own AG-UI server: AgentOS with the AGUI interface, in its default configuration.

``AgentOS(agents=[agent], interfaces=[AGUI(agent=agent, prefix=...)]).get_app()`` as Agno's docs
show, ``POST <prefix>/agui``. The model is an Agno ``Model`` subclass that streams
apps/_common.py's scripts as a provider adapter does (text deltas, then the call's arguments in
pieces, merged by index). The agent keeps its runs in an ``InMemoryDb``: a paused run resumes
from the agent's database, and without one Agno answers a resume with RUN_ERROR "Frontend tool
resume requires a database". Pauses are Agno's own: ``requires_confirmation`` (approve),
``requires_user_input`` (ask), ``external_execution`` (client); each ends the run with the call
open, and the client answers with a ``tool`` message for that call in a new run on the thread.
Runs in its own venv (tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

PINS = (
    "agno==3.1.10",
    "agno[os]==3.1.10",
    "ag-ui-protocol==1.0.0",
    "fastapi==0.165.0",
    "uvicorn==0.55.0",
    "python-multipart==0.0.34",
)
AGENT_PATH = "/agno/agui"
# The answers Agno reads from the client's tool message (agno/os/interfaces/agui/resume.py).
# How the pipe's ids, identity and files reach the agent's code (docs/agent-frameworks.md).
REACHES = (
    "`threadId` (the chat id) is the agent's session: `run_context.session_id` in a tool. Agno reads only the "
    "last user message and keeps the history in the agent's `db`, per session; its model reads that history "
    "only with `Agent(add_history_to_context=True)`, which Agno's AG-UI examples (and this app) leave False.",
    "`forwardedProps.user_id` is the run's `user_id` (`run_context.user_id`): Agno's AG-UI router reads it "
    "when the AgentOS has no authentication of its own (an authenticated caller's id wins).",
    "The `context` entries (language, date and time, timezone) are the run's dependencies: Agno adds them to "
    "the user message.",
    "The user's image and document arrive as Agno `Image` and `File` on the user message (the files row).",
    "The signed identity (`X-AIHub-Identity`) is an HTTP header: a middleware of the AgentOS app puts it in a "
    "context variable the tools read (verify it there, as docs/agent-pipe.md, 'Who is asking, signed' says).",
)
ANSWERS = {
    "approve": {"approved": {"accepted": True}, "declined": {"accepted": False}},
    "ask": {"answered": {"values": {"address": "12 Rue de Rivoli, Paris"}}},
    "client": {"approved": "shipment confirmed"},
}

import asyncio
import json
from contextvars import ContextVar

import _common as common
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from fastapi import Request


def _seen(messages: list[Message]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        text = m.content if isinstance(m.content, str) else "" if m.content is None else json.dumps(m.content)
        media = [common.media("image", i.mime_type or "image/*", i.content) for i in m.images or [] if i.content]
        media += [common.media("file", f.mime_type or "", f.content) for f in m.files or [] if f.content]
        if m.role == "tool":
            out.append(common.seen("tool", results=[(m.tool_call_id, text)]))
        else:
            out.append(common.seen(m.role, text, calls=[c.get("id") for c in m.tool_calls or []], media=media))
    return out


class ScriptedModel(Model):
    """Streams the scripted step as a provider adapter does; parse_tool_calls merges the pieces."""

    def _deltas(self, messages: list[Message]) -> Iterator[ModelResponse]:
        step = common.record_model_call(_seen(messages))
        for piece in step.text:
            yield ModelResponse(role="assistant", content=piece)
        if step.fail:
            raise RuntimeError(step.fail)
        for index, call in enumerate(step.calls):
            for n, piece in enumerate(call.pieces):
                delta = {
                    "index": index,
                    "id": call.id if n == 0 else None,
                    "type": "function",
                    "function": {"name": call.name if n == 0 else None, "arguments": piece},
                }
                yield ModelResponse(role="assistant", tool_calls=[delta])
        inp, outp = step.usage
        if inp or outp:
            yield ModelResponse(
                role="assistant",
                response_usage=MessageMetrics(input_tokens=inp, output_tokens=outp, total_tokens=inp + outp),
            )

    def parse_tool_calls(self, tool_calls_data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        merged: dict[int, dict[str, Any]] = {}
        for delta in tool_calls_data:
            call = merged.setdefault(
                delta["index"], {"id": None, "type": "function", "function": {"name": None, "arguments": ""}}
            )
            call["id"] = call["id"] or delta.get("id")
            call["function"]["name"] = call["function"]["name"] or delta["function"].get("name")
            call["function"]["arguments"] += delta["function"].get("arguments") or ""
        return [merged[i] for i in sorted(merged)]

    def invoke(self, messages: list[Message], assistant_message: Message, **_: Any) -> ModelResponse:
        deltas = list(self._deltas(messages))
        return ModelResponse(
            role="assistant",
            content="".join(d.content or "" for d in deltas),
            tool_calls=self.parse_tool_calls([c for d in deltas for c in d.tool_calls]),
        )

    async def ainvoke(self, messages: list[Message], assistant_message: Message, **kwargs: Any) -> ModelResponse:
        return self.invoke(messages, assistant_message, **kwargs)

    def invoke_stream(self, messages: list[Message], assistant_message: Message, **_: Any) -> Iterator[ModelResponse]:
        yield from self._deltas(messages)

    async def ainvoke_stream(
        self, messages: list[Message], assistant_message: Message, **_: Any
    ) -> AsyncIterator[ModelResponse]:
        for delta in self._deltas(messages):
            await asyncio.sleep(0)
            yield delta

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response


# snippet: start
from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.os import AgentOS
from agno.os.interfaces.agui import AGUI
from agno.run import RunContext
from agno.tools import tool

IDENTITY: ContextVar[str | None] = ContextVar("identity", default=None)


@tool
def lookup_order(order: str, run_context: RunContext) -> str:
    """Look an order up."""
    thread_id, user_id, identity = run_context.session_id, run_context.user_id, IDENTITY.get()
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


# snippet: start
@tool(requires_confirmation=True)
def cancel_order(order: str) -> str:
    """Cancel an order: Agno pauses the run for the user's confirmation first."""
    common.ran("cancel_order", {"order": order})
    return f"order {order} cancelled"


# snippet: end


@tool(requires_user_input=True, user_input_fields=["address"])
def ask_address(order: str, address: str = "") -> str:
    """Ask the user where an order goes: the user fills in ``address``."""
    common.ran("ask_address", {"order": order, "answer": address})
    return f"shipping to {address}"


@tool(external_execution=True)
def confirm_shipment(order: str) -> str:
    """Confirm a shipment: run by the client, which sends back the result."""
    return ""


@tool
def current_time() -> str:
    """The time now (a tool that takes no arguments)."""
    common.ran("current_time", {})
    return "12:00"


@tool
def broken_lookup(order: str) -> str:
    """A tool that fails."""
    common.ran("broken_lookup", {"order": order})
    raise RuntimeError("the order database is down")


# snippet: start
agent = Agent(
    name="scripted",
    model=ScriptedModel(id="scripted"),
    db=InMemoryDb(),
    tools=[lookup_order, cancel_order, ask_address, confirm_shipment, broken_lookup, current_time],
)
app = AgentOS(agents=[agent], interfaces=[AGUI(agent=agent, prefix="/agno")]).get_app()


@app.middleware("http")
async def signed_identity(request: Request, call_next: Any) -> Any:
    """The signed identity header, for the run's tools (verify it before you trust it)."""
    IDENTITY.set(request.headers.get("X-AIHub-Identity"))
    return await call_next(request)


# snippet: end

if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["agno", "ag-ui-protocol", "fastapi", "uvicorn", "python-multipart"])
