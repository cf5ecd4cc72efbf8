"""Issue 29, point 6: the pipe's own OAuth checks are as strict as provision's (they hold when the
AGENTS valve is edited by hand): plain http only to a real loopback address or ``localhost``, not
to any name that starts with ``127.``, and never in a header that would replace one the pipe or
HTTP sets (the backend's key above all)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.pipe_support import FINISHED, SSEStub, T, events, make_pipe, pipe_module, run_pipe

P = pipe_module
HISTORY = [{"role": "user", "content": "q"}]


def _agui(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": url, **extra}


OAUTH = {"access_token": "ya29.user-oauth-access-token-0123456789"}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.attacker.example/agent",
        "http://localhost.attacker.example/",
        "http://127.0.0.1.nip.io/",
        "http://[::ffff:10.0.0.1]/",
    ],
)
def test_the_oauth_token_never_goes_over_plain_http_to_a_name_that_only_looks_like_loopback(url: str) -> None:
    agent = P.AgentSpec(id="a.b", name="B", url=url, oauth_token_header="X-T")
    with pytest.raises(P.PipeConfigError):
        P.oauth_header(agent, OAUTH)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/a", "http://127.8.9.10/a", "http://localhost/a", "http://[::1]/a"])
def test_loopback_by_address_or_localhost_still_gets_it(url: str) -> None:
    agent = P.AgentSpec(id="a.b", name="B", url=url, oauth_token_header="X-T")
    assert P.oauth_header(agent, OAUTH) == {"X-T": OAUTH["access_token"]}


@pytest.mark.parametrize(
    "header",
    [
        "Authorization",
        "authorization",
        "Cookie",
        "Host",
        "Content-Type",
        "X-OpenWebUI-User-Jwt",
        "X-AIHub-Identity",
        "traceparent",
        "Bad Header",
    ],
)
def test_an_oauth_header_that_would_replace_the_pipes_own_is_refused(header: str) -> None:
    agent = P.AgentSpec(id="a.b", name="B", url="https://agents.example/a", oauth_token_header=header)
    with pytest.raises(P.PipeConfigError):
        P.oauth_header(agent, OAUTH)


def test_a_refused_oauth_header_sends_nothing_and_keeps_the_agents_key(sse_stub: SSEStub) -> None:
    agent = _agui(sse_stub.url, api_key="k", oauth_token_header="Authorization")
    pipe = make_pipe([agent], api_keys={"k": "sk-agent-key-0123"})
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    run = run_pipe(pipe, "lab.helper", HISTORY, __oauth_token__=OAUTH)
    assert sse_stub.requests == []
    assert "Agent error" in run.content and OAUTH["access_token"] not in run.content


def test_a_forwarding_header_renamed_in_the_servers_environment_is_not_replaced_either(
    sse_stub: SSEStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = P.forward_settings(
        {"ENABLE_FORWARD_USER_INFO_HEADERS": "true", "FORWARD_USER_INFO_HEADER_USER_ID": "X-Drive-Token"}
    )
    monkeypatch.setattr(P, "server_forward_settings", lambda: settings)
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    run = run_pipe(
        make_pipe([_agui(sse_stub.url, oauth_token_header="X-Drive-Token")]),
        "lab.helper",
        HISTORY,
        __oauth_token__=OAUTH,
    )
    assert sse_stub.requests == [] and "header the pipe already sends" in run.content


def test_the_pipe_and_provision_refuse_the_same_headers() -> None:
    from provisioner.blueprints import Backend
    from provisioner.contract import RESERVED_HEADERS

    for name in RESERVED_HEADERS:
        with pytest.raises(ValueError):
            Backend.model_validate({"url": "https://a.example/x", "oauth_token_header": name.title()})
        with pytest.raises(P.PipeConfigError):
            P.oauth_header(P.AgentSpec(id="a.b", name="B", url="https://a.example/x", oauth_token_header=name), OAUTH)
