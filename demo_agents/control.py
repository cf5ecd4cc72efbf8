"""Run the demo agents in the background for the quick start: start (reuses a healthy one,
restarts one that does not answer), stop, status. Its pid, ports and log live in a state
directory (``--dir``; default ``<cache>/demo-agents``, the cache being scripts/openwebui-local's).

    python -m demo_agents serve  [--agui-port 8700] [--openai-port 8701]   # in the foreground
    python -m demo_agents start  [--dir D] [ports]
    python -m demo_agents stop   [--dir D]
    python -m demo_agents status [--dir D]                                  # exit 3 when not running
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only: never a proxy


def default_dir() -> Path:
    cache = os.environ.get("AIHUB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aihub-provision"
    )
    return Path(cache) / "demo-agents"


def healthy(port: int) -> bool:
    try:
        with _HTTP.open(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return json.load(response).get("status") == "ok"
    except (OSError, ValueError):
        return False


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def is_demo_agents(pid: int) -> bool:
    """The pid runs and is a demo agents server (a reused pid of another program is not)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    return not cmdline.exists() or b"demo_agents" in cmdline.read_bytes()


def read_state(state_dir: Path) -> dict | None:
    try:
        state = json.loads((state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return (
        state
        if isinstance(state, dict) and isinstance(state.get("pid"), int) and is_demo_agents(state["pid"])
        else None
    )


def stop(state_dir: Path) -> str:
    state = read_state(state_dir)
    (state_dir / "state.json").unlink(missing_ok=True)
    if not state:
        return "demo agents are not running"
    try:
        os.killpg(state["pid"], signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 5
    while is_demo_agents(state["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_demo_agents(state["pid"]):
        os.killpg(state["pid"], signal.SIGKILL)
    try:
        os.waitpid(state["pid"], os.WNOHANG)  # our own child when started in this process
    except ChildProcessError:
        pass
    return f"demo agents stopped (pid {state['pid']})"


def start(state_dir: Path, agui_port: int, openai_port: int) -> str:
    state_dir.mkdir(parents=True, exist_ok=True)
    state = read_state(state_dir)
    ports = [agui_port, openai_port]
    if state and state.get("ports") == ports and all(map(healthy, ports)):
        return f"demo agents already running (pid {state['pid']}), reused"
    if state:
        stop(state_dir)  # not answering, or on other ports: start it again
    for port in ports:
        if listening(port):
            raise SystemExit(f"demo-agents: port {port} on 127.0.0.1 is in use by another program; stop it first")
    log = state_dir / "server.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "demo_agents",
                "serve",
                "--agui-port",
                str(agui_port),
                "--openai-port",
                str(openai_port),
            ],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 15
    while not all(map(healthy, ports)):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"demo-agents: the server did not start; see {log}")
        time.sleep(0.1)
    (state_dir / "state.json").write_text(json.dumps({"pid": process.pid, "ports": ports}))
    return f"demo agents started (pid {process.pid}), log in {log}"


def serve(agui_port: int, openai_port: int) -> None:
    from demo_agents.server import start_servers  # noqa: PLC0415 (start/stop need no server code)

    servers = start_servers([agui_port, openai_port])
    a, o = (s.server_port for s in servers)
    print(f"demo agents: AG-UI http://127.0.0.1:{a}/<agent>, OpenAI http://127.0.0.1:{o}/v1", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo-agents", description="The quick start's scripted demo agents.")
    parser.add_argument("command", choices=["serve", "start", "stop", "status"])
    parser.add_argument("--dir", type=Path, default=None, help="state directory (pid, log)")
    parser.add_argument("--agui-port", type=int, default=8700)
    parser.add_argument("--openai-port", type=int, default=8701)
    args = parser.parse_args(argv)
    state_dir = args.dir or default_dir()
    if args.command == "serve":
        serve(args.agui_port, args.openai_port)
    elif args.command == "start":
        print(start(state_dir, args.agui_port, args.openai_port), file=sys.stderr)
    elif args.command == "stop":
        print(stop(state_dir), file=sys.stderr)
    else:
        state = read_state(state_dir)
        print(json.dumps(state or {"running": False}))
        return 0 if state else 3
    return 0
