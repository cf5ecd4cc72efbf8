"""Drive `scripts/openwebui-local` from tests: one object per local Open WebUI instance.

The tests go through the script rather than around it, so the quick start and the suite
share one tested way of running Open WebUI.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "openwebui-local"
# A first start on an empty cache installs open-webui (about a minute here); leave room.
SCRIPT_TIMEOUT = 900.0


class OpenWebUIUnavailable(RuntimeError):
    """The script could not start the instance; the message carries its stderr and log tail."""


# In the session instance's own environment, for agents whose key the server reads at chat time
# (`api_key_from: server`); the test process never sets it. Derived from the process id, not
# random: this module may be imported under two names, and both must hold the same key.
SERVER_KEY_ENV = "AIHUB_E2E_SERVER_KEY"
SERVER_KEY = "e2e-server-key-" + hashlib.sha256(f"aihub-e2e-{os.getpid()}".encode()).hexdigest()[:32]


def _identity_pem() -> str:
    """The session's Ed25519 identity key, derived from the process id like SERVER_KEY."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    seed = hashlib.sha256(f"aihub-e2e-identity-{os.getpid()}".encode()).digest()
    return (
        Ed25519PrivateKey.from_private_bytes(seed)
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )


# Also in the session instance's environment (issue 19): Open WebUI's user-info forwarding with an
# HS256 secret, and the pipe's identity key, so every chat test's agent can verify who asks.
FORWARD_JWT_SECRET = "e2e-forward-" + hashlib.sha256(f"aihub-e2e-jwt-{os.getpid()}".encode()).hexdigest()[:32]
IDENTITY_KID = "e2e-identity"
IDENTITY_PEM = _identity_pem()
IDENTITY_ENV = {
    "ENABLE_FORWARD_USER_INFO_HEADERS": "true",
    "FORWARD_USER_INFO_HEADER_JWT_SECRET": FORWARD_JWT_SECRET,
    "AIHUB_IDENTITY_PRIVATE_KEY": IDENTITY_PEM,
    "AIHUB_IDENTITY_KEY_ID": IDENTITY_KID,
}


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """A real part the test needs is missing: fail in CI (it must not pass silently there), skip
    elsewhere with the reason printed."""
    if running_in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def parse_env_lines(stdout: str) -> dict[str, str]:
    """Read the `KEY=value` lines `start`/`env` print (values are shell-quoted)."""
    result: dict[str, str] = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            words = shlex.split(value)
            result[key] = words[0] if words else ""
    return result


class OpenWebUIInstance:
    """A named instance of the script, with the URL and API key of its admin.

    Parameters:
        name: instance name (the data lives under `<cache>/instances/<name>`).
        extra_env: extra server environment (`--env KEY=VALUE`), re-sent on every start.
    """

    def __init__(
        self,
        name: str,
        *,
        extra_env: dict[str, str] | None = None,
        version: str | None = None,
        topology: str | None = None,
        replica_env: dict[int, dict[str, str]] | None = None,
    ) -> None:
        self.name = name
        self.extra_env = dict(extra_env or {})
        self.replica_env = {index: dict(env) for index, env in (replica_env or {}).items()}  # ha: per replica
        self.version = version  # None: the script's pinned release
        self.topology = topology  # None: a single server; "ha": PostgreSQL + Redis + replicas
        self.replica_urls: list[str] = []
        self.url = ""
        self.token = ""
        self.admin_jwt: str | None = None

    def __repr__(self) -> str:  # never show the token
        return f"OpenWebUIInstance(name={self.name!r}, url={self.url!r})"

    # ----------------------------------------------------------------- script

    def run_script(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `openwebui-local <args> --name <name>`; raise OpenWebUIUnavailable on failure."""
        cmd = [sys.executable, str(SCRIPT), *args, "--name", self.name]
        try:
            result = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=SCRIPT_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            raise OpenWebUIUnavailable(f"{shlex.join(cmd[1:])} timed out after {exc.timeout} s") from None
        if check and result.returncode != 0:
            raise OpenWebUIUnavailable(
                f"{shlex.join(['openwebui-local', *args])} exited {result.returncode}:\n{result.stderr}"
            )
        return result

    def start(self, *, reuse_data: bool = True, timeout: float = 120.0) -> None:
        """Start (or restart) the server; by default on the same data dir, so the token stays."""
        args = ["start", "--timeout", str(timeout)]
        if reuse_data:
            args.append("--reuse-data")
        if self.version:
            args += ["--version", self.version]
        if self.topology:
            args += ["--topology", self.topology]
        for key, value in self.extra_env.items():
            args += ["--env", f"{key}={value}"]
        for index, env in self.replica_env.items():
            args += [arg for key, value in env.items() for arg in ("--replica-env", f"{index}:{key}={value}")]
        env = parse_env_lines(self.run_script(*args).stdout)
        self.url, self.token = env["OPENWEBUI_URL"], env["OPENWEBUI_TOKEN"]
        self.replica_urls = [u for u in env.get("OPENWEBUI_REPLICA_URLS", "").split(",") if u] or [self.url]
        self.admin_jwt = self._state().get("admin_jwt")

    def stop(self, *, keep_data: bool = True) -> None:
        args = ["stop"] + (["--keep-data"] if keep_data else [])
        self.run_script(*args)

    def purge(self) -> None:
        """Stop and remove everything of this instance, log included."""
        self.run_script("stop", "--purge")

    def status(self) -> dict[str, Any]:
        """The script's `status --json` (running, healthy, url, pid, paths)."""
        return json.loads(self.run_script("status", "--json", check=False).stdout)

    @property
    def instance_dir(self) -> Path:
        return Path(self.status()["instance_dir"])

    @property
    def data_dir(self) -> Path:
        return self.instance_dir / "data"

    @property
    def log_file(self) -> Path:
        return self.instance_dir / "server.log"

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def _state(self) -> dict[str, Any]:
        try:
            return json.loads((self.instance_dir / "state.json").read_text())
        except (OSError, ValueError):
            return {}

    # ----------------------------------------------------------------- HTTP

    def client(self, *, token: str | None = None, timeout: float = 30.0, url: str | None = None) -> httpx.Client:
        """An httpx client on the instance (or on one replica's `url`), authorised with the API
        key unless told otherwise."""
        auth = token if token is not None else self.token
        headers = {"Authorization": f"Bearer {auth}"} if auth else {}
        return httpx.Client(base_url=url or self.url, headers=headers, timeout=timeout, trust_env=False)

    def healthy(self) -> bool:
        """Whether `/health` answers now (cheaper than `status()`, which runs the script)."""
        if not self.url:
            return False
        try:
            with httpx.Client(base_url=self.url, timeout=3.0, trust_env=False) as http:
                return http.get("/health").json() == {"status": True}
        except (httpx.HTTPError, ValueError):
            return False

    def reset(self) -> None:
        """Delete every model row, function and group, so a test starts from an empty instance."""
        with self.client() as http:
            http.delete("/api/v1/models/delete/all").raise_for_status()
            for function in http.get("/api/v1/functions/list").raise_for_status().json():
                http.delete(f"/api/v1/functions/id/{function['id']}/delete").raise_for_status()
            # Deleting a parent group promotes its children, so list again until none are left.
            for _ in range(20):
                groups = http.get("/api/v1/groups/").raise_for_status().json()
                if not groups:
                    break
                for group in groups:
                    http.delete(f"/api/v1/groups/id/{group['id']}/delete")
            http.get("/api/models").raise_for_status()  # refresh the in-memory model registry
            leftovers = {
                "models": http.get("/api/v1/models/all").json(),
                "functions": http.get("/api/v1/functions/list").json(),
                "groups": http.get("/api/v1/groups/").json(),
            }
        if any(leftovers.values()):
            raise RuntimeError(f"reset left objects behind on {self.url}: {leftovers}")


def started(instance: OpenWebUIInstance, what: str, *, timeout: float = 300.0) -> OpenWebUIInstance:
    """`instance` started on fresh data, or the test ended through `unavailable` (in CI: failed)."""
    try:
        instance.start(reuse_data=False, timeout=timeout)
    except OpenWebUIUnavailable as exc:
        try:
            instance.stop(keep_data=False)  # the script already stopped it; this only drops the data
        except OpenWebUIUnavailable:
            pass
        unavailable(f"{what} could not be started: {exc}")
    return instance


@contextlib.contextmanager
def throwaway_instance(
    name: str, *, keep: bool = False, topology: str | None = None, extra_env: dict[str, str] | None = None
) -> Iterator[OpenWebUIInstance]:
    """A fresh instance for a script (the benchmarks): started, then purged unless `keep`."""
    instance = OpenWebUIInstance(name, topology=topology, extra_env=extra_env)
    try:
        instance.start(reuse_data=False, timeout=300.0)
    except OpenWebUIUnavailable as exc:
        raise SystemExit(f"cannot start Open WebUI: {exc}") from None
    try:
        yield instance
    finally:
        if keep:
            print(f"kept instance {name} at {instance.url}", file=sys.stderr)
        else:
            instance.purge()
