"""Delegated access end to end (issue 19, point 7): a user signs in to a real Open WebUI 0.12.4
through OpenID Connect, chats with an agent whose backend sets `oauth_token_header`, and the
backend receives exactly the access token the provider issued, in that header, and nowhere else.

The provider (tests/support/oidc_provider.py) and the agent run on loopback (plain http is allowed there);
the sign-in goes through Open WebUI's own /oauth/oidc/login and /oauth/oidc/callback, hop by hop
with one cookie jar, as a browser follows them. The agent echoes the header it got in its answer,
so the pipe's mask is what keeps the token out of the answer and the stored chat. One private
instance (OAuth settings are read at start), about 40 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from demo_agents.sse_handler import SSEHandler, serve_loopback, stop_loopback
from tests.support.builders import CAPABILITIES, FEATURES, write_function_dir
from tests.support.chat_support import AGENT_PIPE
from tests.support.oidc_provider import OIDCProvider
from tests.support.owui_instance import OpenWebUIInstance, started

HEADER = "X-Drive-Token"
EMAIL = "olga.oauth@example.org"
DELEGATED = "aihub_agent_pipe.delegated.default"
PLAIN = "aihub_agent_pipe.plain.default"


@dataclass
class EchoAgent:
    """An AG-UI agent on loopback that records each request and echoes the delegated header back."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    def start(self) -> EchoAgent:
        agent = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.read_body())
                headers = {k.lower(): v for k, v in self.headers.items()}
                agent.requests.append({"path": self.path, "headers": headers, "json": body})
                ids = {"threadId": body.get("threadId"), "runId": body.get("runId")}
                self.start_stream()
                self.send_event({"type": "RUN_STARTED", **ids})
                self.send_event({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
                self.send_event(
                    {
                        "type": "TEXT_MESSAGE_CONTENT",
                        "messageId": "m",
                        "delta": f"I got {headers.get(HEADER.lower(), 'no token')}.",
                    }
                )
                self.send_event({"type": "TEXT_MESSAGE_END", "messageId": "m"})
                self.send_event({"type": "RUN_FINISHED", **ids})
                self.end_stream()

        self.server, self.url = serve_loopback(Handler)
        return self

    def stop(self) -> None:
        stop_loopback(self.server)


def _blueprints(root: Path, url: str) -> Path:
    root.mkdir(parents=True)
    (root / "capabilities.yaml").write_text(yaml.safe_dump(CAPABILITIES), encoding="utf-8")
    (root / "features.yaml").write_text(yaml.safe_dump(FEATURES), encoding="utf-8")
    for bp_id, extra in (("delegated", {"oauth_token_header": HEADER}), ("plain", {})):
        blueprint = {
            "id": bp_id,
            "name": bp_id.title(),
            "description": "issue 19, point 7",
            "backend": {"transport": "agui", "url": f"{url}/{bp_id}", **extra},
            "steps": [{"id": "main", "calls": ["summarise"]}],
            "agents": [{"id": "default", "name": f"{bp_id} agent", "access": "public"}],
        }
        (root / f"{bp_id}.yaml").write_text(yaml.safe_dump(blueprint, sort_keys=False), encoding="utf-8")
    return root


@dataclass
class Site:
    owui: OpenWebUIInstance
    provider: OIDCProvider
    agent: EchoAgent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    provider = OIDCProvider(client_id="aihub-e2e", client_secret=uuid.uuid4().hex, email=EMAIL).start()
    env = {
        "ENABLE_OAUTH_SIGNUP": "true",
        "ENABLE_OAUTH_PERSISTENT_CONFIG": "false",
        "DEFAULT_USER_ROLE": "user",
        "OAUTH_CLIENT_ID": provider.client_id,
        "OAUTH_CLIENT_SECRET": provider.client_secret,
        "OPENID_PROVIDER_URL": provider.discovery_url,
        "OAUTH_PROVIDER_NAME": "Test OIDC",
        "OAUTH_SCOPES": "openid email profile",
    }
    try:
        owui = started(OpenWebUIInstance(f"oauth-{os.getpid()}", extra_env=env), "Open WebUI with OAuth")
    except BaseException:  # unavailable: skipped (or failed in CI); the provider goes with it
        provider.stop()
        raise
    agent = EchoAgent().start()
    try:
        tmp = tmp_path_factory.mktemp("delegated")
        root = _blueprints(tmp / "blueprints", agent.url)
        functions = write_function_dir(tmp / "functions", root, AGENT_PIPE)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OPENWEBUI_URL", owui.url)
            patch.setenv("OPENWEBUI_TOKEN", owui.token)
            patch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
            import provisioner.cli as cli

            assert cli.main(["sync", "-p", str(root), "--bundle", str(functions)]) == 0
        yield Site(owui, provider, agent)
    finally:
        agent.stop()
        provider.stop()
        owui.purge()


def _sign_in(site: Site) -> httpx.Client:
    """Follow /oauth/oidc/login through the provider and back, as a browser does: one cookie jar."""
    http = httpx.Client(base_url=site.owui.url, timeout=60, trust_env=False)
    response = http.get("/oauth/oidc/login")
    for _ in range(5):
        if "token" in http.cookies or response.status_code != 302:
            break
        response = http.get(response.headers["location"])
    assert "token" in http.cookies, (response.status_code, response.headers.get("location"), site.owui.log_tail())
    http.headers["Authorization"] = f"Bearer {http.cookies['token']}"
    return http


def _chat(http: httpx.Client, model: str) -> tuple[str, str]:
    """One stored chat turn as the browser sends it; returns (chat id, the answer)."""
    user_id, answer_id = str(uuid.uuid4()), str(uuid.uuid4())
    user = {
        "id": user_id,
        "parentId": None,
        "childrenIds": [answer_id],
        "role": "user",
        "content": "Read my drive",
        "timestamp": 1,
        "models": [model],
    }
    chat = {
        "title": "delegated",
        "models": [model],
        "history": {"messages": {user_id: user}, "currentId": user_id},
        "messages": [user],
    }
    chat_id = http.post("/api/v1/chats/new", json={"chat": chat}).raise_for_status().json()["id"]
    body = {
        "model": model,
        "stream": False,
        "chat_id": chat_id,
        "id": answer_id,
        "user_message": user,
        "messages": [{"role": "user", "content": "Read my drive"}],
    }
    response = http.post("/api/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    content = response.json()["choices"][0]["message"]["content"]
    answer = {
        "id": answer_id,
        "parentId": user_id,
        "childrenIds": [],
        "role": "assistant",
        "content": content,
        "model": model,
        "done": True,
        "timestamp": 2,
    }
    chat["history"] = {"messages": {user_id: user, answer_id: answer}, "currentId": answer_id}
    chat["messages"] = [user, answer]
    http.post(f"/api/v1/chats/{chat_id}", json={"chat": chat}).raise_for_status()
    return chat_id, content


def test_the_backend_gets_the_users_access_token_in_its_header_and_nothing_else_shows_it(site: Site) -> None:
    with contextlib.closing(_sign_in(site)) as http:
        me = http.get("/api/v1/auths/").raise_for_status().json()
        assert me["email"] == EMAIL
        (access,) = site.provider.issued  # one sign-in, one token

        site.agent.requests.clear()
        chat_id, content = _chat(http, DELEGATED)
        (request,) = site.agent.requests
        assert request["path"] == "/delegated"
        assert request["headers"][HEADER.lower()] == access
        # the agent echoed it: the pipe's mask keeps it out of the answer, so out of the stored chat
        assert content == "I got [redacted]."
        stored = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().text
        assert access not in stored and "[redacted]" in stored

        # an agent that did not opt in gets no such header, nor the token anywhere in its request
        site.agent.requests.clear()
        _, content = _chat(http, PLAIN)
        (request,) = site.agent.requests
        assert HEADER.lower() not in request["headers"]
        assert access not in json.dumps(request)
        assert content == "I got no token."

    log = site.owui.log_file.read_text(encoding="utf-8", errors="replace")
    assert "/oauth/oidc/callback" in log and "/api/chat/completions" in log  # it logged the sign-in and the chats
    assert access not in log
