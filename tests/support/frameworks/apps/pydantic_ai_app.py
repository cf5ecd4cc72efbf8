"""Pydantic AI through its own AG-UI adapter (``pydantic_ai.ui.ag_ui.AGUIAdapter``), as its docs show.

A Starlette route calls ``AGUIAdapter.dispatch_request(request, agent=agent)`` with the adapter's
defaults but one: ``include_usage=True``, without which RUN_FINISHED reports no token usage. The
model is ``FunctionModel(stream_function=...)`` playing apps/_common.py's scripts: text pieces,
then ``DeltaToolCalls`` with the arguments in pieces (its usage is FunctionModel's own estimate,
not the script's). A tool needing approval is ``requires_approval=True`` (the agent's
``output_type`` includes ``DeferredToolRequests``, as Pydantic AI requires); a question and a
client-side call are ``CallDeferred`` (kind ``question`` and ``external``). Runs in its own venv
(tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import _common as common
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

PINS = (
    "pydantic-ai-slim[ag-ui]==2.68.0",
    "ag-ui-protocol==1.0.0",
    "pydantic==2.14.4",
    "starlette==1.10.0",
    "uvicorn==0.55.0",
)
AGENT_PATH = "/agent"
REACHES = (
    "`threadId` (the chat id) is the run's conversation id: `ctx.conversation_id` in a tool. The agent gets "
    "the conversation the pipe sends, whole, every run.",
    "The route builds the run's deps from the request (above: `forwardedProps.user_id` and the signed identity "
    "header `X-AIHub-Identity`, to verify as docs/agent-pipe.md, 'Who is asking, signed' says); a tool reads them as `ctx.deps`.",
    "The user's image and document arrive as Pydantic AI `BinaryContent` on the user prompt.",
)


def _user(part: UserPromptPart) -> dict[str, Any]:
    items = [part.content] if isinstance(part.content, str) else list(part.content)
    text = "".join(i for i in items if isinstance(i, str))
    media = [common.media(type(i).__name__, i.media_type, i.data) for i in items if isinstance(i, BinaryContent)]
    media += [
        {"type": type(i).__name__, "media_type": getattr(i, "media_type", ""), "sha256": ""}
        for i in items
        if not isinstance(i, (str, BinaryContent))
    ]
    return common.seen("user", text, media=media)


def _seen(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    out.append(_user(part))
                elif isinstance(part, ToolReturnPart):
                    out.append(common.seen("tool", results=[(part.tool_call_id, part.model_response_str())]))
                elif isinstance(part, RetryPromptPart):
                    out.append(common.seen("tool", results=[(part.tool_call_id or "", part.model_response())]))
                elif isinstance(part, SystemPromptPart):
                    out.append(common.seen("system", part.content))
        elif isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)]
            out.append(common.seen("assistant", text, calls=calls))
    return out


async def scripted(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """The stream function: one kind per response, text first, then the calls."""
    step = common.record_model_call(_seen(messages))
    for piece in step.text:
        yield piece
    if step.fail:
        raise RuntimeError(step.fail)
    for index, call in enumerate(step.calls):
        for n, piece in enumerate(call.pieces):
            first = n == 0
            yield {
                index: DeltaToolCall(
                    name=call.name if first else None, json_args=piece, tool_call_id=call.id if first else None
                )
            }


# snippet: start
@dataclass
class Caller:
    """The run's deps: who the pipe says is asking."""

    user_id: str | None
    identity: str | None  # the signed identity header: verify it before you trust it


agent = Agent(
    FunctionModel(stream_function=scripted),
    output_type=[str, DeferredToolRequests],
    name="scripted",
    deps_type=Caller,
)


@agent.tool
def lookup_order(ctx: RunContext[Caller], order: str) -> str:
    """Look an order up."""
    thread_id, user_id, identity = ctx.conversation_id, ctx.deps.user_id, ctx.deps.identity
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


# snippet: start
@agent.tool_plain(requires_approval=True)
def cancel_order(order: str) -> str:
    """Cancel an order (the user approves it first)."""
    common.ran("cancel_order", {"order": order})
    return f"order {order} cancelled"


# snippet: end


@agent.tool_plain
def ask_address(order: str) -> str:
    """Ask the user where an order goes: a question the client answers."""
    raise CallDeferred({"question": common.QUESTION}, kind="question")


@agent.tool_plain
def confirm_shipment(order: str) -> str:
    """Confirmed by the client (work done outside the agent)."""
    raise CallDeferred()


@agent.tool_plain
def current_time() -> str:
    """The time now (a tool that takes no arguments)."""
    common.ran("current_time", {})
    return "12:00"


@agent.tool_plain
def broken_lookup(order: str) -> str:
    """A tool that fails."""
    common.ran("broken_lookup", {"order": order})
    raise RuntimeError("the order database is down")


# snippet: start
async def run_agent(request: Request) -> Response:
    run = await request.json()  # Starlette keeps the body: the adapter reads it again
    forwarded = run.get("forwardedProps") or {}
    caller = Caller(user_id=forwarded.get("user_id"), identity=request.headers.get("X-AIHub-Identity"))
    # include_usage: RUN_FINISHED reports the run's token usage (off by default: it names the model to the client)
    return await AGUIAdapter.dispatch_request(request, agent=agent, deps=caller, include_usage=True)


app = Starlette(routes=[Route(AGENT_PATH, run_agent, methods=["POST"])])
# snippet: end

if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["pydantic-ai-slim", "ag-ui-protocol"])
