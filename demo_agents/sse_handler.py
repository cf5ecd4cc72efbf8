"""The HTTP side of the loopback agents (the demo agents and the tests' own): a quiet HTTP/1.1
handler that answers with a chunked ``text/event-stream``, as AG-UI and OpenAI-compatible servers
do, or with one JSON body. Standard library only: the demo agents run before any venv exists."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class SSEHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send_json(self, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

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


def serve_loopback(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    """`handler` served on a free 127.0.0.1 port in a daemon thread: (the server, its base URL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def stop_loopback(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()
