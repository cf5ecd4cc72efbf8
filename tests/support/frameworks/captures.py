"""Record every scenario of one framework's running server into tests/data/agui_captures/<framework>/.

``python tests/support/frameworks/captures.py FRAMEWORK URL`` (stdlib only). Each scenario is
one request (``<scenario>.sse`` + ``<scenario>.request.json``); a pause is followed by its
resumes in the framework's own shape (``approve_accepted``, ``approve_declined``). The user's
files are a 1x1 PNG and a short text document, as the pipe sends them (AG-UI 1.0 parts).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from record import events, record, run_input  # noqa: E402

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "agui_captures"
PNG_1X1 = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)).decode()
DOCUMENT = base64.b64encode(b"Order 10023: two chairs, shipped 2026-12-01.\n").decode()
PLAIN = ("stream", "tool", "error", "tool_error", "usage")


def files_message() -> dict[str, Any]:
    return {
        "id": "msg-files", "role": "user",
        "content": [
            {"type": "text", "text": "scenario:image what is in these files?"},
            {"type": "image", "source": {"type": "data", "value": PNG_1X1, "mimeType": "image/png"}},
            {"type": "document", "source": {"type": "data", "value": DOCUMENT, "mimeType": "text/plain"},
             "metadata": {"filename": "order.txt"}},
        ],
    }


def pending_call(seen: list[dict[str, Any]]) -> tuple[str, str, str]:
    """The last tool call the stream left without a result: (id, name, args)."""
    calls: dict[str, list[str]] = {}
    for event in seen:
        if event["type"] in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and event.get("toolCallName"):
            calls.setdefault(event["toolCallId"], [event["toolCallName"], ""])
        if event["type"] in ("TOOL_CALL_ARGS", "TOOL_CALL_CHUNK") and event.get("toolCallId") in calls:
            calls[event["toolCallId"]][1] += event.get("delta") or ""
        if event["type"] == "TOOL_CALL_RESULT":
            calls.pop(event["toolCallId"], None)
    call_id = list(calls)[-1]
    return call_id, calls[call_id][0], calls[call_id][1]


def resume_body(framework: str, first: dict[str, Any], seen: list[dict[str, Any]], yes: bool) -> dict[str, Any]:
    """The next run that answers the pause, in the shape ``framework`` expects."""
    body = run_input("", thread_id=first["threadId"], history=first["messages"], tools=first["tools"])
    if framework == "crewai":
        body["forwardedProps"] = {"command": {"resume": "approved" if yes else "declined"}}
        return body
    call_id, name, args = pending_call(seen)
    answer = json.dumps({"accepted": yes}) if framework == "agno" else json.dumps({"approved": yes})
    body["messages"] = [
        *first["messages"],
        {"id": "msg-call", "role": "assistant", "content": "",
         "toolCalls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]},
        {"id": "msg-answer", "role": "tool", "toolCallId": call_id, "content": answer},
    ]
    return body


def record_all(framework: str, url: str, frontend_tools: list[dict[str, Any]] | None = None) -> None:
    out = CAPTURES / framework
    for scenario in PLAIN:
        record(url, out / f"{scenario}.sse", run_input(f"scenario:{scenario}"))
    body = run_input("")
    body["messages"] = [files_message()]
    record(url, out / "image.sse", body)
    for yes, name in ((True, "approve_accepted"), (False, "approve_declined")):
        first = run_input("scenario:approve", tools=frontend_tools)
        seen = record(url, out / "approve.sse", first)
        record(url, out / f"{name}.sse", resume_body(framework, first, seen, yes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework")
    parser.add_argument("url")
    args = parser.parse_args()
    record_all(args.framework, args.url)
    for path in sorted((CAPTURES / args.framework).glob("*.sse")):
        print(path.name, [e["type"] for e in events(path.read_bytes())])


if __name__ == "__main__":
    main()
