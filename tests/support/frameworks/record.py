"""Record what a real AG-UI server sends for one request: the raw SSE bytes and the request.

Stdlib only. ``python tests/support/frameworks/record.py URL OUT.sse --message "scenario:tool"``
POSTs a RunAgentInput (or ``--request FILE``, a whole body) and writes the response bytes as
they came to ``OUT.sse`` and the body sent to ``OUT.request.json``, so a fixture can replay a
framework's real stream byte for byte (tests/data/agui_captures/<framework>/<scenario>.sse).
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any


def run_input(message: str, thread_id: str | None = None, history: list[dict[str, Any]] | None = None,
              tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A minimal AG-UI 1.0 RunAgentInput with the user's message last."""
    messages = list(history or [])
    if message:
        messages.append({"id": f"msg-{uuid.uuid4().hex[:8]}", "role": "user", "content": message})
    return {
        "threadId": thread_id or f"thread-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "state": {},
        "messages": messages,
        "tools": tools or [],
        "context": [],
        "forwardedProps": {},
    }


def post(url: str, body: dict[str, Any], timeout: float = 60) -> bytes:
    """The response body exactly as the server sent it."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def events(raw: bytes) -> list[dict[str, Any]]:
    """The JSON events of an SSE body (``data:`` lines), in order."""
    out = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
        if data:
            out.append(json.loads(data))
    return out


def record(url: str, out: Path, body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = post(url, body)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(raw)
    out.with_suffix(".request.json").write_text(json.dumps({"url_path": urllib.parse.urlsplit(url).path, "body": body}, indent=2) + "\n")
    return events(raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--message", default="")
    parser.add_argument("--request", type=Path, help="a whole RunAgentInput body (JSON)")
    args = parser.parse_args()
    body = json.loads(args.request.read_text()) if args.request else run_input(args.message)
    for event in record(args.url, args.out, body):
        print(event.get("type"), json.dumps(event)[:160])


if __name__ == "__main__":
    main()
