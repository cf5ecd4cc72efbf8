"""Run an agent framework's own AG-UI server, with a scripted model, from a venv of its own.

Stdlib only: the tests import this module, and each server runs from its framework's venv, so the
project venv never carries a framework. One app file per framework, ``apps/<name>_app.py``, runs the
framework's own AG-UI server code and declares at its top, as literals read here without importing
it::

    PINS = ("ag-ui-langgraph==0.0.47", ...)   # exact versions, installed with uv
    AGENT_PATH = "/agent"                      # the AG-UI route the app serves
    SCENARIOS = ("stream", "tool", ...)        # optional: the scripts of apps/_common.py it serves
    ANSWERS = {"approve": {"approved": ...}}   # optional: the user's answers in the shape it reads
    NOT_OFFERED = {"client": "why"}            # optional: why a scenario it does not serve is missing
    RESUME = "resume"                          # optional: a CUSTOM on_interrupt is answered with
                                               # AG-UI 1.0's resume list (CrewAI), not forwardedProps

Adding a framework is adding such a file (``apps/_common.py`` holds what every app shares: the
port, the recording and control routes, the scripts). Venvs live under the cache dir
(``$AIHUB_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/aihub-provision``) as
``frameworks/<name>-<hash of the pins>/venv``, installed once under a lock and reused while its
``installed.json`` (written after a complete install) holds the same pins.

Command line: ``python tests/support/frameworks/harness.py NAME`` builds the venv if needed, starts
the server and prints its URL until interrupted; ``--install`` only installs (all with ``all``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

APPS = Path(__file__).with_name("apps")
REPO = Path(__file__).resolve().parents[3]
# The scripts of apps/_common.py (its _scripts): an app serves all unless it declares SCENARIOS.
ALL_SCENARIOS = ("stream", "tool", "approve", "ask", "client", "tool_error", "model_error", "files", "no_args")
INSTALL_TIMEOUT_SECONDS = 900
START_TIMEOUT_SECONDS = 90
# Never use a proxy: every request here goes to 127.0.0.1.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class HarnessError(RuntimeError):
    """The venv could not be built or the server not started; the message says why."""


@dataclass(frozen=True)
class Framework:
    """One framework's app file and what it declares."""

    name: str
    app: Path
    pins: tuple[str, ...]
    agent_path: str
    scenarios: tuple[str, ...]
    answers: dict[str, dict[str, Any]]
    not_offered: dict[str, str] = field(default_factory=dict)
    resume: str = ""

    @property
    def home(self) -> Path:
        """One dir per set of pins: checkouts that pin a framework differently (two worktrees, a
        branch that bumps a pin) each keep their own venv instead of rebuilding one under the other."""
        digest = hashlib.sha256("\n".join(self.pins).encode()).hexdigest()[:10]
        return cache_dir() / "frameworks" / f"{self.name}-{digest}"

    @property
    def python(self) -> Path:
        return self.home / "venv" / "bin" / "python"

    @property
    def version(self) -> str:
        """The version of the framework's AG-UI package: the first pin."""
        return self.pins[0].split("==", 1)[-1]

    @property
    def package(self) -> str:
        return self.pins[0].split("==", 1)[0].split("[")[0]


def _declared(app: Path) -> Framework:
    values: dict[str, Any] = {}
    for node in ast.parse(app.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("PINS", "AGENT_PATH", "SCENARIOS", "ANSWERS", "NOT_OFFERED", "RESUME"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    pins = tuple(values.get("PINS") or ())
    if not pins or not all("==" in pin for pin in pins):
        raise HarnessError(f"{app}: PINS must be a literal tuple of exact pins (name==version)")
    scenarios = tuple(values.get("SCENARIOS") or ALL_SCENARIOS)
    return Framework(
        app.stem.removesuffix("_app"),
        app,
        pins,
        str(values.get("AGENT_PATH", "/agent")),
        scenarios,
        dict(values.get("ANSWERS") or {}),
        dict(values.get("NOT_OFFERED") or {}),
        str(values.get("RESUME") or ""),
    )


def frameworks() -> dict[str, Framework]:
    """Every app file, ``apps/<name>_app.py`` (named so, it never shadows the framework's own package), by name."""
    return {fw.name: fw for fw in (_declared(app) for app in sorted(APPS.glob("*_app.py")))}


def framework(name: str) -> Framework:
    known = frameworks()
    if name not in known:
        raise HarnessError(f"unknown framework {name!r}; known: {', '.join(known)}")
    return known[name]


def cache_dir() -> Path:
    """``$AIHUB_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/aihub-provision`` (as scripts/openwebui-local)."""
    explicit = os.environ.get("AIHUB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg).expanduser() / "aihub-provision").resolve()


def find_uv() -> str:
    """uv beside the running python (the project's test extra), in the repo's .venv, or on PATH."""
    for candidate in (Path(sys.executable).parent / "uv", REPO / ".venv" / "bin" / "uv", shutil.which("uv")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise HarnessError("no uv found: it is one of the project's test extras (pip install -e '.[test]')")


def ensure_venv(name: str) -> Path:
    """The venv's python for framework ``name``, installing it first when no complete install exists."""
    fw = framework(name)
    fw.home.mkdir(parents=True, exist_ok=True)
    stamp = fw.home / "installed.json"
    with open(fw.home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs must not build the same venv at once
        if _stamp_matches(stamp, fw) and fw.python.exists():
            return fw.python
        stamp.unlink(missing_ok=True)
        shutil.rmtree(fw.home / "venv", ignore_errors=True)
        log = fw.home / "install.log"
        log.write_text("", encoding="utf-8")
        uv = find_uv()
        started = time.monotonic()
        python = sys.executable if sys.version_info >= (3, 11) else "python3.11"
        _run([uv, "venv", "--quiet", "--python", python, str(fw.home / "venv")], log, "creating the venv")
        _run([uv, "pip", "install", "--python", str(fw.python), *fw.pins], log, f"installing {fw.name}")
        seconds = round(time.monotonic() - started, 1)
        frozen = subprocess.run(
            [uv, "pip", "freeze", "--python", str(fw.python)], capture_output=True, text=True, check=True
        ).stdout.split()
        stamp.write_text(json.dumps({"pins": list(fw.pins), "freeze": frozen, "seconds": seconds}, indent=2))
    return fw.python


def installed(name: str) -> dict[str, Any]:
    """What installed.json says of a framework's venv (pins, freeze, seconds), or {}."""
    try:
        return json.loads((framework(name).home / "installed.json").read_text())
    except (OSError, ValueError):
        return {}


def _stamp_matches(stamp: Path, fw: Framework) -> bool:
    try:
        return json.loads(stamp.read_text()).get("pins") == list(fw.pins)
    except (OSError, ValueError):
        return False


def _run(command: list[str], log: Path, step: str) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            result = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=INSTALL_TIMEOUT_SECONDS
            )
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"{step} timed out after {INSTALL_TIMEOUT_SECONDS}s (log: {log})") from exc
    if result.returncode != 0:
        tail = log.read_text().splitlines()[-15:]
        raise HarnessError(f"{step} failed (log: {log}):\n" + "\n".join(tail))


class FrameworkServer:
    """One framework's AG-UI server with its scripted model, on a free loopback port.

    Every app serves, beside its AG-UI route, the control routes of apps/_common.py: what it
    received, what the scripted model was given, which tools really ran.
    """

    def __init__(self, name: str) -> None:
        self.framework = framework(name)
        self.name = name
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self._stderr: list[str] = []

    @property
    def agent_url(self) -> str:
        return self.url + self.framework.agent_path

    @property
    def version(self) -> str:
        return self.framework.version

    def start(self) -> FrameworkServer:
        python = ensure_venv(self.name)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        # No framework may reach the network: no telemetry, no model downloads, no proxies.
        env.update(
            {
                "OTEL_SDK_DISABLED": "true",
                "LANGCHAIN_TRACING_V2": "false",
                "HF_HUB_OFFLINE": "1",
                "NO_PROXY": "*",
                "no_proxy": "*",
            }
        )
        for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
            env.pop(proxy, None)
        self.process = subprocess.Popen(
            [str(python), str(self.framework.app)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        port = self._read_port()
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                self.health()
                return self
            except OSError as exc:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise HarnessError(f"{self.name} server did not answer: {exc}\n{self.stderr_tail()}") from exc
                time.sleep(0.1)

    def _read_port(self) -> int:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_SECONDS)
        line = found[0] if found else ""
        if not line.startswith("PORT "):
            code = self.process.poll()
            how = f"exited with {code}" if code is not None else f"printed no port within {START_TIMEOUT_SECONDS}s"
            self.stop()
            raise HarnessError(f"{self.name} server did not start ({how}):\n{self.stderr_tail()}")
        # Keep reading what the app prints after that (CrewAI prints a console panel per run):
        # a full stdout pipe would block the server in its next print.
        threading.Thread(target=self._drain, args=(self.process.stdout,), daemon=True).start()
        return int(line.split()[1])

    def _drain(self, stream: Any) -> None:
        """Keep the server's output (its tracebacks), the last lines only, so the pipe never fills."""
        for line in stream:
            self._stderr.append(line)
            del self._stderr[:-200]

    def stderr_tail(self, lines: int = 40) -> str:
        time.sleep(0.2)
        return "".join(self._stderr[-lines:])

    def _request(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.url + path, method=method)
        with _HTTP.open(request, timeout=10) as response:
            return json.loads(response.read())

    def health(self) -> dict[str, Any]:
        """The installed versions of the app's packages."""
        return self._request("GET", "/_health")

    def recorded(self) -> list[dict[str, Any]]:
        """Every RunAgentInput the AG-UI route received, oldest first."""
        return self._request("GET", "/_recorded")

    def model_calls(self) -> list[list[dict[str, Any]]]:
        """What the scripted model was given, per model call: a list of messages
        ``{role, text, calls, results, media}`` (apps/_common.py ``seen``)."""
        return self._request("GET", "/_model_calls")

    def ran(self) -> list[dict[str, Any]]:
        """The tools whose bodies really ran, in order: ``{name, args}``."""
        return self._request("GET", "/_ran")

    def reached(self) -> list[dict[str, Any]]:
        """What tools' own code read of their runs, in order (apps/_common.py ``reached``)."""
        return self._request("GET", "/_reached")

    def arrived(self) -> int:
        """How many requests the AG-UI route has had, counted as each came in (before its body)."""
        return self._request("GET", "/_arrived")

    def clear(self) -> None:
        """Forget what was recorded, and anything a run whose request came in before records later
        (the framework's own thread state stays)."""
        self._request("DELETE", "/_recorded")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


class ServerPool:
    """Servers started on first use and kept for the session (tests/functions/conftest.py
    ``framework_servers``); a server that failed to start is not retried, its error is re-raised."""

    def __init__(self) -> None:
        self.servers: dict[str, FrameworkServer] = {}
        self.failed: dict[str, HarnessError] = {}

    def get(self, name: str) -> FrameworkServer:
        if name in self.failed:
            raise self.failed[name]
        if name not in self.servers:
            try:
                self.servers[name] = FrameworkServer(name).start()
            except (HarnessError, OSError) as exc:
                self.failed[name] = exc if isinstance(exc, HarnessError) else HarnessError(str(exc))
                raise self.failed[name] from exc
        return self.servers[name]

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()


@contextlib.contextmanager
def running(name: str) -> Iterator[FrameworkServer]:
    server = FrameworkServer(name).start()
    try:
        yield server
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run one framework's scripted AG-UI server.")
    parser.add_argument("name", help=f"one of: {', '.join(frameworks())} (or all, with --install)")
    parser.add_argument("--install", action="store_true", help="only build the venv(s) and print the seconds")
    args = parser.parse_args()
    if args.install:
        for name in frameworks() if args.name == "all" else [args.name]:
            started = time.monotonic()
            ensure_venv(name)
            print(
                f"{name}: ready in {time.monotonic() - started:.1f} s "
                f"(install took {installed(name).get('seconds')} s)",
                flush=True,
            )
        return
    with running(args.name) as server:
        print(
            f"{args.name} {server.version} at {server.agent_url} (recorded inputs: {server.url}/_recorded)", flush=True
        )
        with contextlib.suppress(KeyboardInterrupt):
            if server.process is not None:
                server.process.wait()


if __name__ == "__main__":
    main()
