"""Benchmark one long SSE line through the agent pipe: wall time and event-loop stalls (issue 29.2).

Not a test. Run from the project root:

    .venv/bin/python bench/sse_long_line.py [--mb 40] [--pipe PATH] [--max-event-mb N]

A loopback server (a process of its own, so it does not compete for the GIL) answers with one
SSE event whose single ``data:`` line is ``--mb`` MB (a CUSTOM event the pipe ignores, so only the
reading counts), then RUN_FINISHED, written in 64 KB pieces. ``pipe()`` reads it as Open WebUI
calls it, with a 1 ms ticker on the same event loop: the longest gap between ticks is the longest
the loop (every chat on the worker) stood still. ``--pipe`` loads another build of the pipe (e.g.
the one before a change, ``git show main:owui_functions/aihub_agent_pipe.py > /tmp/before.py``);
``--max-event-mb`` sets the MAX_EVENT_MB valve where the pipe has one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.loading import load_file  # noqa: E402  (a function file loaded as Open WebUI loads it)

SERVER_CODE = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
body = open(sys.argv[1], "rb").read()
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *args):
        pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for start in range(0, len(body), 65536):
                self.wfile.write(body[start:start + 65536])
        except (BrokenPipeError, ConnectionResetError):
            pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def long_line_body(size_mb: float) -> bytes:
    filler = "a" * int(size_mb * 1024 * 1024)
    line = json.dumps({"type": "CUSTOM", "name": "bench.noise", "value": filler})
    finished = json.dumps({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return f"data: {line}\n\ndata: {finished}\n\n".encode()


async def measure(pipe_path: Path, size_mb: float, max_event_mb: float | None) -> dict[str, Any]:
    pipe = load_file(pipe_path, "aihub_agent_pipe")
    with tempfile.NamedTemporaryFile(suffix=".sse") as handle:
        handle.write(long_line_body(size_mb))
        handle.flush()
        server = subprocess.Popen([sys.executable, "-c", SERVER_CODE, handle.name], stdout=subprocess.PIPE)
        try:
            assert server.stdout is not None
            url = f"http://127.0.0.1:{int(server.stdout.readline())}/agent"
            instance = pipe.Pipe()
            agent = {"id": "bench.agent", "name": "Bench", "transport": "agui", "url": url, "identity": "none"}
            valves: dict[str, Any] = {"AGENTS": json.dumps([agent])}
            if max_event_mb is not None and "MAX_EVENT_MB" in instance.Valves.model_fields:
                valves["MAX_EVENT_MB"] = max_event_mb
            instance.valves = instance.Valves(**valves)
            loop = asyncio.get_running_loop()
            gaps: list[float] = []
            done = False

            async def ticker() -> None:
                last = loop.time()
                while not done:
                    await asyncio.sleep(0.001)
                    now = loop.time()
                    gaps.append(now - last - 0.001)
                    last = now

            watch = asyncio.ensure_future(ticker())
            await asyncio.sleep(0.05)
            body = {
                "model": "aihub_agent_pipe.bench.agent",
                "messages": [{"role": "user", "content": "go"}],
                "stream": True,
            }
            start = time.perf_counter()
            chunks = [
                c
                async for c in instance.pipe(
                    body=body, __user__={"id": "u", "role": "user"}, __metadata__={"chat_id": "c", "message_id": "m"}
                )
            ]
            elapsed = time.perf_counter() - start
            done = True
            await watch
            for _, client in list(pipe._pool().clients.values()):
                await client.close()
        finally:
            server.terminate()
            server.wait()
    answer = "".join(c for c in chunks if isinstance(c, str))
    return {
        "line_mb": size_mb,
        "seconds": round(elapsed, 3),
        "longest_stall_ms": round(max(gaps) * 1000, 1),
        "stalls_over_50ms": sum(g > 0.05 for g in gaps),
        "answer": answer.strip()[-160:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=40, help="size of the one long data line, in MB")
    parser.add_argument("--pipe", type=Path, default=ROOT / "owui_functions" / "aihub_agent_pipe.py")
    parser.add_argument("--max-event-mb", type=float, default=None, help="the MAX_EVENT_MB valve, if the pipe has it")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.pipe, args.mb, args.max_event_mb)), ensure_ascii=False))


if __name__ == "__main__":
    main()
