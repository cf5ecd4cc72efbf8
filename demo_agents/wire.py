"""A demo turn as either transport streams it (pure): AG-UI events or OpenAI chat-completion chunks.

The shapes are the ones the agent pipe reads (docs/agent-pipe.md, "What the agent shows besides its answer"):
AG-UI sources as CUSTOM "aihub.source", the image as CUSTOM "aihub.image", the usage on
RUN_FINISHED, an approval as RUN_FINISHED with an interrupt outcome (Agent Framework 1.7.0's tool
approval); OpenAI sources as ``delta.annotations`` (url_citation), the image as ``delta.images``,
the usage as the final chunk when ``stream_options.include_usage`` asks for it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from demo_agents.answers import Turn


def to_agui(turn: Turn, thread_id: str, run_id: str, model: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}]

    def text(message_id: str, value: str) -> None:
        if value:
            events.extend(
                [
                    {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": value},
                    {"type": "TEXT_MESSAGE_END", "messageId": message_id},
                ]
            )

    text(f"{run_id}-lead", turn.lead)
    calls = turn.calls + ([turn.approval.call] if turn.approval else [])
    for call in calls:
        events.extend(
            [
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": call.id,
                    "toolCallName": call.name,
                    "parentMessageId": f"{run_id}-lead",
                },
                {"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": json.dumps(call.arguments)},
                {"type": "TOOL_CALL_END", "toolCallId": call.id},
            ]
        )
        if call.result is not None:
            events.append(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": f"{call.id}-result",
                    "toolCallId": call.id,
                    "content": call.result,
                    "role": "tool",
                }
            )
    if turn.sources:
        events.append(
            {
                "type": "CUSTOM",
                "name": "aihub.source",
                "value": [{"url": s.url, "title": s.title, "snippet": s.snippet} for s in turn.sources],
            }
        )
    text(f"{run_id}-answer", turn.answer)
    if turn.image:
        mime, data = turn.image
        events.append(
            {
                "type": "CUSTOM",
                "name": "aihub.image",
                "value": {"mimeType": mime, "data": base64.b64encode(data).decode()},
            }
        )
    finished: dict[str, Any] = {
        "type": "RUN_FINISHED",
        "threadId": thread_id,
        "runId": run_id,
        "usage": [{"provider": "demo", "model": model, **turn.usage}],
    }
    if turn.approval:
        approval = turn.approval
        finished["outcome"] = {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": approval.interrupt_id,
                    "reason": "tool_call",
                    "message": approval.message,
                    "toolCallId": approval.call.id,
                    "responseSchema": {
                        "type": "object",
                        "properties": {"approved": {"type": "boolean"}},
                        "required": ["approved"],
                    },
                    "metadata": {"function_call": {"name": approval.call.name, "arguments": approval.call.arguments}},
                }
            ],
        }
    else:
        finished["outcome"] = {"type": "success"}
    events.append(finished)
    return events


def to_openai(turn: Turn, model: str, include_usage: bool) -> list[dict[str, Any] | str]:
    base = {"id": f"chatcmpl-demo-{model}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": turn.lead})]
    calls = turn.calls + ([turn.approval.call] if turn.approval else [])
    for index, call in enumerate(calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                        }
                    ]
                }
            )
        )
        if call.result is not None:  # the result, as the pipe's OpenAI transport reads it (a "tool" delta)
            chunks.append(chunk({"role": "tool", "tool_call_id": call.id, "content": call.result}))
    answer = turn.answer
    if turn.approval:  # OpenAI's protocol has no pause for the user: say so instead
        answer = f"{turn.approval.message} This agent asks for approval over AG-UI only; nothing was done."
    delta: dict[str, Any] = {"content": ("\n\n" if turn.lead else "") + answer}
    citations = [
        {"type": "url_citation", "url_citation": {"url": s.url, "title": s.title, "start_index": 0, "end_index": 0}}
        for s in turn.sources
        if s.url
    ]
    if citations:
        delta["annotations"] = citations
    chunks.append(chunk(delta))
    if turn.image:
        mime, data = turn.image
        uri = f"data:{mime};base64,{base64.b64encode(data).decode()}"
        chunks.append(chunk({"images": [{"type": "image_url", "image_url": {"url": uri}}]}))
    chunks.append(chunk({}, "stop"))
    if include_usage:
        usage = {
            "prompt_tokens": turn.usage["input_tokens"],
            "completion_tokens": turn.usage["output_tokens"],
            "total_tokens": turn.usage["total_tokens"],
        }
        chunks.append(base | {"choices": [], "usage": usage})
    chunks.append("[DONE]")
    return chunks
