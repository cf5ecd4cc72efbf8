"""Microsoft Agent Framework through its own AG-UI endpoint (agent-framework-ag-ui), as its docs show.

``add_agent_framework_fastapi_endpoint(app, agent, path)`` with an ``Agent`` whose chat client is a
``BaseChatClient`` (with the framework's own function-invocation layer) that streams
apps/_common.py's scripts: text updates, then whole function calls, and the usage each model call
reports. The same server as tests/support/agui_server/app.py (which keeps its own scripts for
the older tests), in the matrix's scenarios. Approval is the framework's own
``approval_mode="always_require"``; the client tool is a declaration-only ``FunctionTool``.
Runs in its own venv (tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

PINS = (
    "agent-framework-ag-ui==1.7.0",
    "agent-framework-core==1.23.0",
    "ag-ui-protocol==0.1.22",
)
AGENT_PATH = "/agent"
SCENARIOS = ("stream", "tool", "approve", "client", "tool_error", "model_error", "files", "no_args")
NOT_OFFERED = {"ask": "Agent Framework asks the user only to approve a tool (approval_mode), not a question"}
REACHES = (
    "`threadId` is the AG-UI thread the endpoint runs; the agent gets the conversation the pipe sends, whole, "
    "every run.",
    "The user's image and document arrive as `data` contents (their bytes and media type) on the user message.",
    "The signed identity (`X-AIHub-Identity`) and the ids (`threadId`, `forwardedProps.user_id`) are in the HTTP "
    "request: a FastAPI dependency passed as `dependencies=` to add_agent_framework_fastapi_endpoint reads them "
    "and puts them in a context variable the tools read (above); verify the identity there.",
)

import asyncio
import base64

import _common as common
from agent_framework import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
)


def _role(message: Message) -> str:
    return str(getattr(message.role, "value", message.role))


def _media(content: Content) -> dict[str, str] | None:
    head, _, data = (content.uri or "").partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        return None
    return common.media(content.type, content.media_type or "", base64.b64decode(data))


def _seen(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        contents = m.contents or []
        calls = [c.call_id for c in contents if c.type == "function_call"]
        results = [(c.call_id, str(c.result)) for c in contents if c.type == "function_result"]
        media = [x for c in contents if c.type in ("data", "uri") for x in [_media(c)] if x]
        role = "tool" if results and not calls and _role(m) == "tool" else _role(m)
        out.append(common.seen(role, m.text or "", calls=calls, results=results, media=media))
    return out


class ScriptedChatClient(FunctionInvocationLayer, BaseChatClient):
    """A chat client that plays the scripted step instead of calling a model."""

    OTEL_PROVIDER_NAME = "scripted"

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any) -> Any:
        step = common.record_model_call(_seen(messages))

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            for piece in step.text:
                await asyncio.sleep(0)
                yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(piece)])
            if step.fail:
                raise RuntimeError(step.fail)
            for call in step.calls:
                yield ChatResponseUpdate(
                    role="assistant",
                    contents=[
                        Content.from_function_call(call_id=call.id, name=call.name, arguments="".join(call.pieces))
                    ],
                )
            inp, outp = step.usage
            if inp or outp:
                details = {"input_token_count": inp, "output_token_count": outp, "total_token_count": inp + outp}
                yield ChatResponseUpdate(role="assistant", contents=[Content.from_usage(usage_details=details)])

        if stream:
            return ResponseStream(updates(), finalizer=lambda ups: ChatResponse.from_updates(ups))

        async def whole() -> ChatResponse:
            return ChatResponse.from_updates([u async for u in updates()])

        return whole()


# snippet: start
from contextvars import ContextVar

from agent_framework import Agent, FunctionTool, tool
from agent_framework_ag_ui import add_agent_framework_fastapi_endpoint
from fastapi import Depends, FastAPI, Request

CALLER: ContextVar[dict[str, Any] | None] = ContextVar("caller", default=None)


async def caller(request: Request) -> None:
    """Who asks, for the run's tools: the ids the pipe sends and its signed identity header
    (verify it here before you trust it, and raise HTTPException(401) when it does not)."""
    run = await request.json()  # FastAPI keeps the body: the endpoint reads it again
    forwarded = run.get("forwardedProps") or {}
    identity = request.headers.get("X-AIHub-Identity")
    CALLER.set({"thread_id": run.get("threadId"), "user_id": forwarded.get("user_id"), "identity": identity})


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    seen = CALLER.get() or {}
    thread_id, user_id, identity = seen.get("thread_id"), seen.get("user_id"), seen.get("identity")
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


# snippet: start
@tool(approval_mode="always_require")
def cancel_order(order: str) -> str:
    """Cancel an order (the user approves it first)."""
    common.ran("cancel_order", {"order": order})
    return f"order {order} cancelled"


# Declaration only (no function): the framework hands the call back to the client.
confirm_shipment = FunctionTool(
    name="confirm_shipment",
    description="Confirm a shipment (client side).",
    func=None,
    input_model={"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
)
# snippet: end


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
    instructions="You are a scripted agent.",
    client=ScriptedChatClient(),
    tools=[lookup_order, cancel_order, confirm_shipment, broken_lookup, current_time],
)
app = FastAPI(title="Agent Framework AG-UI")
add_agent_framework_fastapi_endpoint(app, agent, path=AGENT_PATH, single_user=True, dependencies=[Depends(caller)])
# snippet: end

if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["agent-framework-ag-ui", "agent-framework-core", "ag-ui-protocol"])
