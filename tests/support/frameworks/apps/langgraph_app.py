"""LangGraph through its own AG-UI server (ag-ui-langgraph), in its default configuration.

A ``langchain.agents.create_agent`` graph with a ``MemorySaver`` checkpointer, served by
``LangGraphAgent`` + ``add_langgraph_fastapi_endpoint`` as the package's README shows. The model
is a LangChain ``BaseChatModel`` subclass that streams ``AIMessageChunk``s (text pieces, then
``tool_call_chunks`` with the arguments in pieces) from apps/_common.py's scripts. The approval is
LangChain's ``HumanInTheLoopMiddleware``; the question is LangGraph's own ``interrupt()`` in a tool.
Runs in its own venv (tests/support/frameworks/harness.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, NotRequired

import _common as common
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI, Request
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.tools import ToolRuntime
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.types import interrupt

PINS = (
    "ag-ui-langgraph==0.0.47",
    "ag-ui-protocol==1.0.0",
    "langgraph==1.2.24",
    "langchain==1.5.2",
    "langchain-core==1.8.3",
    "fastapi==0.165.0",
    "uvicorn==0.55.0",
)
AGENT_PATH = "/agent"
ANSWERS = {
    "approve": {
        "approved": {"decisions": [{"type": "approve"}]},
        "declined": {"decisions": [{"type": "reject", "message": "The user declined."}]},
    }
}
CANCELLED = "__agui_cancelled__"  # ag_ui_langgraph.interrupts.DEFAULT_RESUME_SENTINEL_CANCELLED
SCENARIOS = ("stream", "tool", "approve", "ask", "tool_error", "model_error", "files", "no_args")
NOT_OFFERED = {
    "client": "a create_agent graph runs only its own tools (the tools a client sends in "
    "RunAgentInput.tools reach the graph's state, and create_agent does not read them)"
}
REACHES = (
    '`threadId` (the chat id) is the checkpointer\'s thread: `runtime.config["configurable"]["thread_id"]` '
    "in a tool that takes a `ToolRuntime`. ag-ui-langgraph keeps the conversation in the checkpointed thread "
    "and merges what the pipe sends into it by message id: the pipe sends each earlier answer back under the "
    "ids the server gave it (kept with the answer in Open WebUI), so the thread holds it once.",
    "Each `forwardedProps` key the graph's state declares is put in the state (above: `user_id`, read as "
    "`runtime.state`); create_agent's own state declares none.",
    "The signed identity (`X-AIHub-Identity`) is an HTTP header, and ag-ui-langgraph hands the graph only the "
    "RunAgentInput: a middleware of the FastAPI app puts it in a context variable the tools read (verify it "
    "there, as docs/agent-pipe.md, 'Who is asking, signed' says, and reject the request if it does not).",
    "The user's image and document arrive as LangChain multimodal content blocks on the user message.",
    "Keep `LangGraphAgent`'s `emit_raw_events` at its default (on): the pipe reads a question's interrupt id and "
    "the first arguments of each tool call from the events' `rawEvent`.",
)


def _media(block: dict[str, Any]) -> dict[str, str] | None:
    kind = str(block.get("type"))
    data = block.get("base64") or block.get("data")
    mime = block.get("mime_type") or block.get("mimeType") or ""
    if kind == "image_url":
        url = block["image_url"]["url"] if isinstance(block.get("image_url"), dict) else block.get("image_url")
        head, _, data = str(url).partition(",")
        mime = head.removeprefix("data:").split(";")[0]
    return common.media(kind, mime, data) if isinstance(data, str) else None


def _seen(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        content = m.content
        parts = content if isinstance(content, list) else [content]
        text = "".join(
            p if isinstance(p, str) else p.get("text", "")
            for p in parts
            if isinstance(p, str) or p.get("type") == "text"
        )
        media = [x for p in parts if isinstance(p, dict) and p.get("type") != "text" for x in [_media(p)] if x]
        if isinstance(m, HumanMessage):
            out.append(common.seen("user", text, media=media))
        elif isinstance(m, AIMessage):
            out.append(common.seen("assistant", text, calls=[c["id"] for c in m.tool_calls]))
        elif isinstance(m, ToolMessage):
            out.append(common.seen("tool", results=[(m.tool_call_id, text)]))
        else:
            out.append(common.seen(m.type, text))
    return out


class ScriptedChatModel(BaseChatModel):
    """Streams the scripted step as a real provider's chat model does."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        step = common.record_model_call(_seen(messages))
        for piece in step.text:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        if step.fail:
            raise RuntimeError(step.fail)
        for index, call in enumerate(step.calls):
            for n, piece in enumerate(call.pieces):
                tool_chunk = {
                    "name": call.name if n == 0 else None,
                    "args": piece,
                    "id": call.id if n == 0 else None,
                    "index": index,
                    "type": "tool_call_chunk",
                }
                chunk = ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[tool_chunk]))
                if run_manager:
                    run_manager.on_llm_new_token("", chunk=chunk)
                yield chunk
        inp, outp = step.usage
        if inp or outp:
            usage = {"input_tokens": inp, "output_tokens": outp, "total_tokens": inp + outp}
            yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        chunks = list(self._stream(messages, stop, run_manager, **kwargs))
        message: Any = chunks[0].message
        for chunk in chunks[1:]:
            message = message + chunk.message
        final = AIMessage(content=message.content, tool_calls=message.tool_calls, usage_metadata=message.usage_metadata)
        return ChatResult(generations=[ChatGeneration(message=final)])


# snippet: start
IDENTITY: ContextVar[str | None] = ContextVar("identity", default=None)


class OrderState(AgentState):
    """The graph's state: ag-ui-langgraph puts each forwardedProps key the state declares in it."""

    user_id: NotRequired[str]


@tool
def lookup_order(order: str, runtime: ToolRuntime) -> str:
    """Look an order up."""
    thread_id = runtime.config["configurable"]["thread_id"]  # the chat id (the checkpointer's thread)
    user_id, identity = runtime.state.get("user_id"), IDENTITY.get()
    # snippet: end
    common.reached(thread_id=thread_id, user_id=user_id, identity=identity)
    common.ran("lookup_order", {"order": order})
    return f"order {order} shipped"


@tool
def cancel_order(order: str) -> str:
    """Cancel an order (HumanInTheLoopMiddleware asks the user to approve the call first)."""
    common.ran("cancel_order", {"order": order})
    return f"order {order} cancelled"


@tool
def ask_address(order: str) -> str:
    """Ask the user where an order goes (LangGraph's interrupt() with a question)."""
    answer = interrupt(common.QUESTION)
    if isinstance(answer, dict) and answer.get(CANCELLED):  # ag-ui-langgraph's cancelled resume
        return "no address given"
    common.ran("ask_address", {"order": order, "answer": answer})
    return f"shipping to {answer}"


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


# The approval is LangChain's own human-in-the-loop middleware in its default (batched) mode: an
# interrupt whose value is a HITLRequest {action_requests, review_configs}, answered with
# {"decisions": [{"type": "approve" | "reject", ...}]}.
# snippet: start
graph = create_agent(
    ScriptedChatModel(),
    [lookup_order, cancel_order, ask_address, broken_lookup, current_time],
    middleware=[HumanInTheLoopMiddleware(interrupt_on={"cancel_order": True})],
    checkpointer=MemorySaver(),
    state_schema=OrderState,
)


app = FastAPI(title="LangGraph AG-UI")
add_langgraph_fastapi_endpoint(app, LangGraphAgent(name="scripted", graph=graph), AGENT_PATH)


@app.middleware("http")
async def signed_identity(request: Request, call_next: Any) -> Any:
    """The signed identity header, for the run's tools (verify it before you trust it)."""
    IDENTITY.set(request.headers.get("X-AIHub-Identity"))
    return await call_next(request)


# snippet: end


if __name__ == "__main__":
    common.serve(app, AGENT_PATH, ["ag-ui-langgraph", "langgraph", "langchain", "langchain-core", "ag-ui-protocol"])
