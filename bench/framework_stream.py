"""What a framework's default stream costs the pipe: LangGraph's against Agent Framework's (issue 32).

Not a test. Run from the project root:

    .venv/bin/python bench/framework_stream.py [--tokens 1000] [--rounds 30] [--read 16384]
    .venv/bin/python bench/framework_stream.py --against OLD_BUILD.py   # both pipes, side by side

With its defaults, ag-ui-langgraph sends a ``RAW`` event holding its whole callback payload beside
every token, and every TEXT_MESSAGE_CONTENT carries that payload again as ``rawEvent``: about 1 KB
each, where Agent Framework sends a 90-byte TEXT_MESSAGE_CONTENT. Both streams here hold the same
answer of ``--tokens`` tokens. The LangGraph one is built from the real capture
(tests/data/agui_captures/langgraph/stream.sse: its RAW on_chat_model_stream event and its
TEXT_MESSAGE_CONTENT, with the token put in), encoded as ag-ui-langgraph encodes it (compact); the Agent
Framework one as its EventEncoder does (compact JSON). Each body goes through what the pipe does
per read: AgentStream (SSE, JSON), the Recorder and ``drain``, read as a model streams it (one read
per token: what arrived since the last one, for LangGraph its RAW event and its content event)
and as a body that is already there (``--read 16384``: 16 KB reads, aiohttp's ``readany`` of a
full buffer). Reported: the pipe's CPU time per answer (median of the rounds, ``time.thread_time``)
and the ratio LangGraph / Agent Framework (goal: at most 1.2x). With ``--against``, a second pipe
file is measured in the same run, its rounds interleaved with the first's, so a before/after is
not two runs at two loads of a shared machine.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.loading import load_file  # noqa: E402  (a function file loaded as Open WebUI loads it)

CAPTURE = ROOT / "tests" / "data" / "agui_captures" / "langgraph" / "stream.sse"
READ = 16 * 1024


def load_pipe(path: Path = ROOT / "owui_functions" / "aihub_agent_pipe.py") -> ModuleType:
    return load_file(path, "aihub_agent_pipe")


def _captured() -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in CAPTURE.read_text().splitlines() if line.startswith("data:")]


def _token(i: int) -> str:
    return f"word{i} "


def _reads(events: list[dict[str, Any]], per_token: bool) -> list[bytes]:
    """The SSE frames as reads: one per token (a token's events together), or the body in 16 KB."""
    frames = [f"data: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in events]
    if not per_token:
        body = b"".join(frames)
        return [body[i : i + READ] for i in range(0, len(body), READ)]
    reads: list[bytes] = []
    for event, frame in zip(events, frames, strict=False):
        joins = event["type"] == "TEXT_MESSAGE_CONTENT" and reads and reads[-1].startswith(b'data: {"type":"RAW"')
        if joins:
            reads[-1] += frame  # LangGraph's RAW and the token's content event, sent together
        else:
            reads.append(frame)
    return reads


def langgraph_events(tokens: int) -> list[dict[str, Any]]:
    """LangGraph's default stream of the answer: the capture's head, then per token its RAW
    on_chat_model_stream and its TEXT_MESSAGE_CONTENT (with rawEvent), then the capture's tail."""
    events = _captured()
    raw = next(e for e in events if e["type"] == "RAW" and e["event"].get("event") == "on_chat_model_stream")
    content = next(e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    first = events.index(content) - 1  # the RAW before the first token
    last = max(i for i, e in enumerate(events) if e["type"] == "TEXT_MESSAGE_CONTENT")
    out = [e for e in events[:first] if e["type"] != "TEXT_MESSAGE_START"]
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    out.append(start)
    for i in range(tokens):
        r, c = copy.deepcopy(raw), copy.deepcopy(content)
        r["event"]["data"]["chunk"]["content"] = _token(i)
        c["rawEvent"]["data"]["chunk"]["content"] = _token(i)
        c["delta"] = _token(i)
        out += [r, c]
    out += [
        e for e in events[last + 1 :] if e["type"] not in ("RAW",) or e["event"].get("event") != "on_chat_model_stream"
    ]
    return out


def agent_framework_events(tokens: int) -> list[dict[str, Any]]:
    """The same answer as Agent Framework 1.7.0 streams it (EventEncoder: compact JSON)."""
    mid = "msg_7f3c2a9e4b1d4e0f8a6c5b3d2e1f0a9b"
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"},
    ]
    events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": _token(i)} for i in range(tokens)]
    events += [
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
        {"type": "CUSTOM", "name": "usage", "value": {"input_token_count": 60, "output_token_count": tokens}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    return events


def pipe_cpu(P: ModuleType, reads: list[bytes]) -> float:
    """The pipe's CPU for one answer: reads through AgentStream, the Recorder and drain."""
    start = time.thread_time()
    stream, recorder = P.AgentStream("agui"), P.Recorder(scrubber=P.Scrubber())
    out = []
    for raw in reads:
        for event in stream.feed(raw):
            recorder.feed(event)
            out.append(recorder.drain())
    for event in stream.end():
        recorder.feed(event)
    out.append(recorder.drain())
    elapsed = time.thread_time() - start
    assert recorder.finished and not recorder.error, recorder.error
    return elapsed


def measure(P: ModuleType, bodies: dict[str, list[bytes]], tokens: int) -> None:
    """Warm up, and check that each body gives the whole answer through this pipe."""
    for name, reads in bodies.items():
        stream, recorder = P.AgentStream("agui"), P.Recorder(scrubber=P.Scrubber())
        for event in [e for raw in reads for e in stream.feed(raw)] + list(stream.end()):
            recorder.feed(event)
        answer = recorder.render()
        assert answer == "".join(_token(i) for i in range(tokens)), (name, answer[:80])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--read", default="token", help="token (one read per token) or 16384 (16 KB reads)")
    parser.add_argument(
        "--pipe",
        type=Path,
        default=ROOT / "owui_functions" / "aihub_agent_pipe.py",
        help="the pipe file to measure (e.g. an older build, for a before/after)",
    )
    parser.add_argument("--against", type=Path, help="a second pipe file, measured in the same run")
    args = parser.parse_args()
    pipes = {str(args.pipe): load_pipe(args.pipe)}
    if args.against:
        pipes[str(args.against)] = load_file(args.against, "aihub_agent_pipe_against")
    per_token = args.read == "token"
    bodies = {
        "langgraph": _reads(langgraph_events(args.tokens), per_token),
        "agent_framework": _reads(agent_framework_events(args.tokens), per_token),
    }
    times: dict[tuple[str, str], list[float]] = {(pipe, name): [] for pipe in pipes for name in bodies}
    for P in pipes.values():
        measure(P, bodies, args.tokens)
    for _ in range(args.rounds):  # interleaved, so a busy moment of the machine hits both (and both pipes)
        for pipe, P in pipes.items():
            for name, reads in bodies.items():
                times[(pipe, name)].append(pipe_cpu(P, reads))
    print(f"reads: {'one per token' if per_token else '16 KB'}")
    for pipe in pipes:
        if len(pipes) > 1:
            print(f"pipe: {pipe}")
        for name, reads in bodies.items():
            median = statistics.median(times[(pipe, name)])
            size = sum(map(len, reads))
            print(
                f"{name:16} {size / 1024:8.1f} KB in {len(reads):5} reads  {median * 1000:7.2f} ms CPU per answer "
                f"(min {min(times[(pipe, name)]) * 1000:.2f}, max {max(times[(pipe, name)]) * 1000:.2f})"
            )
        ratio = statistics.median(times[(pipe, "langgraph")]) / statistics.median(times[(pipe, "agent_framework")])
        print(f"ratio langgraph / agent_framework: {ratio:.2f}x (goal: at most 1.2x)")


if __name__ == "__main__":
    main()
