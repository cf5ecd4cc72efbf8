"""Google ADK through its own AG-UI middleware (ag-ui-adk), as its README's HITL option shows.

An ``LlmAgent`` in an ADK ``App`` with ``ResumabilityConfig(is_resumable=True)``, served by
``ADKAgent.from_app`` + ``add_adk_fastapi_endpoint`` with in-memory services (the defaults). The
model is a ``BaseLlm`` subclass that streams apps/_common.py's scripts as partial
``LlmResponse``s (text pieces), then the aggregated response with its function calls and usage,
as ADK's SSE streaming mode expects (Gemini gives a call's arguments whole). The approval is
ADK's own tool confirmation (``FunctionTool(require_confirmation=True)``); the question is a
confirmation the tool requests with a hint and a payload to fill in
(``tool_context.request_confirmation(hint=..., payload=...)``); the client-side call is a
``LongRunningFunctionTool`` the client answers. Runs in its own venv
(tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import _common as common
from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import FunctionTool, LongRunningFunctionTool, ToolContext
from google.genai import types

PINS = (
    "ag-ui-adk==0.11.0",
    "ag-ui-protocol==1.0.0",
    "google-adk==2.13.0",
    "google-genai==2.34.0",
    "fastapi==0.165.0",
    "uvicorn==0.55.0",
)
AGENT_PATH = "/agent"
# ADK's tool confirmation is answered with its ToolConfirmation shape, as a tool message for the
# adk_request_confirmation call.
ANSWERS = {
    "approve": {"approved": {"confirmed": True}, "declined": {"confirmed": False}},
    "ask": {"answered": {"confirmed": True, "payload": {"address": "12 Rue de Rivoli, Paris"}}},
}
REACHES = (
    "`threadId` (the chat id) is kept in the session's state as `_ag_ui_thread_id` (ag-ui-adk names its ADK "
    "session itself): `tool_context.state` in a tool. The session keeps the conversation.",
    "`user_id_extractor=` of ADKAgent gets each RunAgentInput (above: `forwardedProps.user_id`, the pipe's "
    "user): the session's user, `tool_context.user_id`.",
    "`extract_headers=` of add_adk_fastapi_endpoint copies the signed identity header (`X-AIHub-Identity`) "
    "into the state's `headers` as `aihub_identity`; a client's own `state.headers` win over it, so verify its "
    "signature (docs/agent-pipe.md, 'Who is asking, signed') before you trust it.",
    "The user's image and document arrive as genai `inline_data` parts (bytes and mime type) on the user content.",
)


def _seen(contents: list[types.Content]) -> list[dict[str, Any]]:
    out = []
    for content in contents:
        parts = content.parts or []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        media = [
            common.media("inline_data", p.inline_data.mime_type or "", p.inline_data.data or b"")
            for p in parts
            if p.inline_data
        ]
        calls = [p.function_call.id or "" for p in parts if p.function_call]
        results = [(p.function_response.id or "", p.function_response.response) for p in parts if p.function_response]
        if results:
            out.append(common.seen("tool", results=results))
        elif content.role == "user":
            out.append(common.seen("user", text, media=media))
        else:
            out.append(common.seen("assistant", text, calls=calls))
    return out


class ScriptedLlm(BaseLlm):
    """Plays the scripted step as a streaming Gemini model would."""

    model: str = "scripted"

    @classmethod
    def supported_models(cls) -> list[str]:
        return ["scripted"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        step = common.record_model_call(_seen(list(llm_request.contents)))
        if stream:
            for piece in step.text:
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=piece)]), partial=True)
        if step.fail:
            raise RuntimeError(step.fail)
        parts = [types.Part(text="".join(step.text))] if step.text else []
        parts += [types.Part(function_call=types.FunctionCall(id=c.id, name=c.name, args=c.args)) for c in step.calls]
        inp, outp = step.usage
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=inp, candidates_token_count=outp, total_token_count=inp + outp
        )
        yield LlmResponse(
            content=types.Content(role="model", parts=parts), usage_metadata=usage, partial=False, turn_complete=True
        )


# snippet: start
def lookup_order(order: str, tool_context: ToolContext) -> str:
    """Look an order up."""
    thread_id = tool_context.state["_ag_ui_thread_id"]  # the chat id; the ADK session is ag-ui-adk's own
    user_id = tool_context.user_id
    identity = tool_context.state.get("headers", {}).get("aihub_identity")  # verify it before you trust it
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


def cancel_order(order: str) -> str:
    """Cancel an order (ADK asks the user to confirm it first)."""
    common.ran("cancel_order", {"order": order})
    return f"order {order} cancelled"


def ask_address(order: str, tool_context: ToolContext) -> str:
    """Ask the user where an order goes: ADK's tool confirmation with a hint (the question) and a
    payload (the answer's shape, which the user fills in), as ADK's docs ask a user for input."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint=common.QUESTION, payload={"address": ""})
        return "waiting for the user's address"
    if not confirmation.confirmed:
        return "the user gave no address"
    address = str((confirmation.payload or {}).get("address", ""))
    common.ran("ask_address", {"order": order, "answer": address})
    return address


def confirm_shipment(order: str) -> None:
    """Confirmed by the client: a long-running call the client answers."""
    return None


def current_time() -> str:
    """The time now (a tool that takes no arguments)."""
    common.ran("current_time", {})
    return "12:00"


def broken_lookup(order: str) -> str:
    """A tool that fails."""
    common.ran("broken_lookup", {"order": order})
    raise RuntimeError("the order database is down")


# snippet: start
root = LlmAgent(
    name="scripted",
    model=ScriptedLlm(),
    instruction="You are a scripted agent.",
    tools=[
        lookup_order,
        FunctionTool(cancel_order, require_confirmation=True),
        ask_address,
        LongRunningFunctionTool(confirm_shipment),
        broken_lookup,
        current_time,
    ],
)
adk_app = App(name="scripted_app", root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True))
agent = ADKAgent.from_app(
    adk_app,
    user_id_extractor=lambda run: (run.forwarded_props or {}).get("user_id") or "anonymous",
    use_in_memory_services=True,
)
app = FastAPI(title="ADK AG-UI")
add_adk_fastapi_endpoint(app, agent, path=AGENT_PATH, extract_headers=["X-AIHub-Identity"])
# snippet: end

if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["ag-ui-adk", "google-adk", "google-genai", "ag-ui-protocol"])
