"""Build a venv per Agent Framework AG-UI version and run the scripted AG-UI server from it.

Stdlib only: the project's tests import this module (`tests.support.agui_server.harness`) and drive ``app.py`` in a venv of
its own, so the project venv never carries Agent Framework. Venvs live under the cache dir
(``$AIHUB_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/aihub-provision``) as
``agui-<version>/venv`` and are reused when ``agui-<version>/installed.json`` (written after a
complete install) matches the pins.

Command line: ``python tests/support/agui_server/harness.py [--version 1.7.0]`` builds the venv if needed,
starts the server and prints its URL until interrupted (``scripts/agui-server`` wraps this).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

APP = Path(__file__).with_name("app.py")

# ag-ui-protocol is pinned to what both versions were checked against (they require <0.2).
# rc8 imports httpx without declaring it (only its "dev" extra does), so it is pinned here.
PINS: dict[str, list[str]] = {
    "1.7.0": [
        "agent-framework-ag-ui==1.7.0",
        "agent-framework-core==1.23.0",
        "ag-ui-protocol==0.1.22",
    ],
    "1.0.0rc8": [
        "agent-framework-ag-ui==1.0.0rc8",
        "agent-framework-core==1.11.0",
        "ag-ui-protocol==0.1.22",
        "httpx==0.28.1",
    ],
}
VERSIONS = tuple(PINS)
INSTALL_TIMEOUT_SECONDS = 900
START_TIMEOUT_SECONDS = 60


class HarnessError(RuntimeError):
    """The venv could not be built or the server not started; the message says why."""


def cache_dir() -> Path:
    """``$AIHUB_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/aihub-provision`` (as scripts/openwebui-local)."""
    explicit = os.environ.get("AIHUB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg).expanduser() / "aihub-provision").resolve()


def venv_python(version: str) -> Path:
    return cache_dir() / f"agui-{version}" / "venv" / "bin" / "python"


def ensure_venv(version: str) -> Path:
    """The venv's python for ``version``, installing it first when no complete install exists."""
    if version not in PINS:
        raise HarnessError(f"unknown AG-UI version {version!r}; known: {', '.join(VERSIONS)}")
    home = cache_dir() / f"agui-{version}"
    home.mkdir(parents=True, exist_ok=True)
    stamp = home / "installed.json"
    python = venv_python(version)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs must not build the same venv at once
        if _stamp_matches(stamp, version) and python.exists():
            return python
        stamp.unlink(missing_ok=True)
        shutil.rmtree(home / "venv", ignore_errors=True)
        started = time.monotonic()
        _run([sys.executable, "-m", "venv", str(home / "venv")], home / "install.log")
        _run(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", *PINS[version]],
            home / "install.log",
        )
        frozen = subprocess.run(
            [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
        ).stdout.split()
        stamp.write_text(
            json.dumps(
                {"pins": PINS[version], "freeze": frozen, "seconds": round(time.monotonic() - started, 1)},
                indent=2,
            )
        )
    return python


def _stamp_matches(stamp: Path, version: str) -> bool:
    try:
        return json.loads(stamp.read_text()).get("pins") == PINS[version]
    except (OSError, ValueError):
        return False


def _run(command: list[str], log: Path) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"{command[2]} timed out after {INSTALL_TIMEOUT_SECONDS}s (log: {log})") from exc
    if result.returncode != 0:
        tail = log.read_text().splitlines()[-15:]
        raise HarnessError(f"{' '.join(command[:4])} failed (log: {log}):\n" + "\n".join(tail))


class AguiServer:
    """The scripted AG-UI server of one Agent Framework version, on a free loopback port."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    @property
    def agent_url(self) -> str:
        return f"{self.url}/agent"

    def start(self) -> AguiServer:
        python = ensure_venv(self.version)
        self.process = subprocess.Popen(
            [str(python), str(APP)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        port = self._read_port()
        self.url = f"http://127.0.0.1:{port}"
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                self.health()
                return self
            except OSError as exc:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise HarnessError(f"AG-UI server {self.version} did not answer: {exc}") from exc
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
            self.stop()
            err = self.process.stderr.read() if self.process.stderr else ""
            raise HarnessError(f"AG-UI server {self.version} did not start:\n{err[-2000:]}")
        return int(line.split()[1])

    @staticmethod
    def _drain(stream: Any) -> None:
        """Keep reading the server's stderr (its tracebacks) so the pipe never fills up."""
        for _ in stream:
            pass

    def _request(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def health(self) -> dict[str, str]:
        return self._request("GET", "/_health")

    def recorded(self) -> list[dict[str, Any]]:
        """Every RunAgentInput the server received, oldest first."""
        return self._request("GET", "/_recorded")

    def model_calls(self) -> list[list[dict[str, Any]]]:
        """The messages the scripted model was given, per model call (role, text, calls, results)."""
        return self._request("GET", "/_model_calls")

    def booked(self) -> list[str]:
        """The hotels the approval-requiring tool really booked (tests/support/agui_server/app.py book_hotel)."""
        return self._request("GET", "/_booked")

    def clear(self) -> None:
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


@contextlib.contextmanager
def running_server(version: str) -> Iterator[AguiServer]:
    server = AguiServer(version).start()
    try:
        yield server
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the scripted AG-UI server of one Agent Framework version.")
    parser.add_argument("--version", default=VERSIONS[0], choices=VERSIONS)
    args = parser.parse_args()
    with running_server(args.version) as server:
        print(f"AG-UI {args.version} at {server.agent_url} (recorded inputs: {server.url}/_recorded)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            if server.process is not None:
                server.process.wait()


if __name__ == "__main__":
    main()
