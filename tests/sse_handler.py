"""The HTTP side of the loopback agents the tests run: a quiet HTTP/1.1 handler that answers
with a chunked ``text/event-stream``, as AG-UI and OpenAI-compatible servers do."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class SSEHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def start_stream(self, *headers: tuple[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def send_chunk(self, payload: bytes) -> None:
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()

    def send_event(self, data: dict[str, Any] | str) -> None:
        """One SSE event: a dict goes out as JSON, a string as it is (e.g. "[DONE]" or bad JSON)."""
        self.send_chunk(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode())

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
