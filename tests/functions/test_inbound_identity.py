"""Who asks, in which chat, under which trace (issue 19, points 3 to 7): the identity headers and
tokens, the chat and message ids, the traceparent, the user's context and the delegated OAuth
token, as a loopback agent (pipe_support.SSEStub) receives them. The tokens are verified with
PyJWT, an implementation the pipe does not use."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
import types
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.support.pipe_support import FINISHED, SSEStub, T, drive, events, make_pipe, pipe_module

P = pipe_module
MODEL = "aihub_agent_pipe.docs.analyst"
SECRET = "hs256-forward-secret-for-tests-0123456789"
USER = {"id": "u-42", "email": "ada@example.org", "name": "Ada Lovelace", "role": "user"}
GROUPS = [{"id": "g-1", "name": "Finance"}, {"id": "g-2", "name": "Analysts"}]
META = {
    "chat_id": "chat-9",
    "message_id": "msg-a",
    "user_message_id": "msg-u",
    "variables": {
        "{{USER_LANGUAGE}}": "de-DE",
        "{{CURRENT_DATETIME}}": "2026-12-02 09:30:00",
        "{{CURRENT_TIMEZONE}}": "Europe/Berlin",
    },
}
FORWARD_ENV = (
    "ENABLE_FORWARD_USER_INFO_HEADERS",
    "FORWARD_USER_INFO_HEADER_JWT_SECRET",
    "FORWARD_USER_INFO_HEADER_JWT",
    "FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS",
    "AIHUB_IDENTITY_PRIVATE_KEY",
    "AIHUB_IDENTITY_KEY_ID",
    "FORWARD_SESSION_INFO_HEADER_CHAT_ID",
    "FORWARD_SESSION_INFO_HEADER_MESSAGE_ID",
)


def _key() -> tuple[str, Any]:
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, private.public_key()


PEM, PUBLIC = _key()
KEYS_VALVE = json.dumps({"signing": {"kid": "k-2026", "private_key_pem": PEM}, "retired": []})


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in FORWARD_ENV:
        monkeypatch.delenv(name, raising=False)
    yield
    _reread_environment()


def _reread_environment() -> None:
    """The pipe reads the server's settings once per process, as Open WebUI does: a test that
    changes them restarts the server, so to speak."""
    P.server_environment.cache_clear()
    P.server_forward_settings.cache_clear()


class Groups:
    def __init__(self, groups: list[dict[str, str]] | Exception = GROUPS) -> None:
        self.found = groups
        self.asked: list[str] = []

    async def groups(self, user_id: str) -> list[dict[str, str]]:
        self.asked.append(user_id)
        if isinstance(self.found, Exception):
            raise self.found
        return self.found


def _agent(url: str, transport: str = "agui", **extra: Any) -> dict[str, Any]:
    agent = {"id": "docs.analyst", "name": "Analyst", "url": url, "transport": transport, **extra}
    if transport == "openai":
        agent["model"] = "m"
    return agent


def _answer(stub: SSEStub, transport: str, text: str = "ok") -> None:
    stub.behaviour.data = (
        [{"choices": [{"index": 0, "delta": {"content": text}}]}, "[DONE]"]
        if transport == "openai"
        else events(T(text), FINISHED)
    )


def _run(
    stub: SSEStub,
    *,
    transport: str = "agui",
    keys: str = "",
    store: Any = None,
    metadata: dict | None = None,
    user: dict | None = None,
    agent: dict | None = None,
    **kwargs: Any,
) -> Any:
    _reread_environment()
    if not stub.behaviour.data:
        _answer(stub, transport)
    pipe = make_pipe([agent or _agent(stub.url, transport)])
    pipe.valves.IDENTITY_KEYS = keys
    pipe.store = store or Groups()
    return asyncio.run(
        drive(
            pipe,
            "docs.analyst",
            [{"role": "user", "content": "Who am I?"}],
            metadata=metadata if metadata is not None else dict(META),
            user=user or USER,
            **kwargs,
        )
    )


def _headers(stub: SSEStub) -> dict[str, str]:
    return {k.lower(): v for k, v in stub.requests[0]["headers"].items()}


def _forwarding(monkeypatch: pytest.MonkeyPatch, secret: str | None = SECRET) -> None:
    monkeypatch.setenv("ENABLE_FORWARD_USER_INFO_HEADERS", "true")
    if secret:
        monkeypatch.setenv("FORWARD_USER_INFO_HEADER_JWT_SECRET", secret)


# --- Open WebUI's convention: the HS256 JWT, or the plain headers ---------------------------------


@pytest.mark.parametrize("transport", ["agui", "openai"])
def test_the_hs256_jwt_verifies_with_the_servers_secret_and_carries_our_claims(
    sse_stub: SSEStub, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    _forwarding(monkeypatch)
    before = int(time.time())
    _run(sse_stub, transport=transport)
    token = _headers(sse_stub)["x-openwebui-user-jwt"]
    claims = jwt.decode(token, SECRET, algorithms=["HS256"])  # no audience: as a platform verifies Open WebUI's
    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "JWT"}
    assert before <= claims.pop("iat") <= int(time.time())
    assert claims.pop("exp") - before in range(300, 302)
    assert claims == {
        "sub": "u-42",
        "email": "ada@example.org",
        "name": "Ada Lovelace",
        "role": "user",
        "iss": "open-webui",
        "groups": GROUPS,
        "model": MODEL,
        "chat_id": "chat-9",
        "message_id": "msg-a",
    }
    assert not {"x-openwebui-user-id", "x-openwebui-user-email", "x-aihub-identity"} & set(_headers(sse_stub))


def test_the_jwt_header_name_and_lifetime_follow_the_servers_settings(sse_stub: SSEStub, monkeypatch) -> None:
    _forwarding(monkeypatch)
    monkeypatch.setenv("FORWARD_USER_INFO_HEADER_JWT", "X-Platform-User")
    monkeypatch.setenv("FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS", "60")
    _run(sse_stub)
    claims = jwt.decode(_headers(sse_stub)["x-platform-user"], SECRET, algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 60


def test_without_a_secret_the_plain_headers_go_as_open_webui_sends_them(sse_stub: SSEStub, monkeypatch) -> None:
    _forwarding(monkeypatch, secret=None)
    store = Groups()
    _run(sse_stub, store=store, user={**USER, "name": " Zoë Ünal "})
    headers = _headers(sse_stub)
    assert headers["x-openwebui-user-name"] == "Zo%C3%AB %C3%9Cnal"  # quote(name.strip(), safe=" ")
    assert (headers["x-openwebui-user-id"], headers["x-openwebui-user-email"], headers["x-openwebui-user-role"]) == (
        "u-42",
        "ada@example.org",
        "user",
    )
    assert "x-openwebui-user-jwt" not in headers and store.asked == []  # no token: no groups read


def test_with_forwarding_off_and_no_key_nothing_about_the_user_is_sent_but_the_id(sse_stub: SSEStub) -> None:
    store = Groups()
    _run(sse_stub, store=store)
    assert not [h for h in _headers(sse_stub) if h.startswith("x-openwebui-user") or h == "x-aihub-identity"]
    assert sse_stub.requests[0]["json"]["forwardedProps"]["user_id"] == "u-42"  # as before: Open WebUI's id only
    assert store.asked == []


# --- the asymmetric token ----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["agui", "openai"])
def test_the_eddsa_token_verifies_with_the_public_key_for_this_agent_alone(sse_stub: SSEStub, transport: str) -> None:
    _run(sse_stub, transport=transport, keys=KEYS_VALVE)
    token = _headers(sse_stub)["x-aihub-identity"]
    assert jwt.get_unverified_header(token) == {"alg": "EdDSA", "typ": "JWT", "kid": "k-2026"}
    claims = jwt.decode(token, PUBLIC, algorithms=["EdDSA"], audience=MODEL, issuer="aihub-agent-pipe")
    assert (claims["sub"], claims["groups"], claims["chat_id"], claims["message_id"]) == (
        "u-42",
        GROUPS,
        "chat-9",
        "msg-a",
    )
    with pytest.raises(jwt.InvalidAudienceError):  # another agent cannot replay it
        jwt.decode(token, PUBLIC, algorithms=["EdDSA"], audience="aihub_agent_pipe.other.agent")


def test_the_servers_key_wins_over_the_valve(sse_stub: SSEStub, monkeypatch) -> None:
    pem, public = _key()
    monkeypatch.setenv("AIHUB_IDENTITY_PRIVATE_KEY", pem)
    monkeypatch.setenv("AIHUB_IDENTITY_KEY_ID", "server-1")
    _run(sse_stub, keys=KEYS_VALVE)
    token = _headers(sse_stub)["x-aihub-identity"]
    assert jwt.get_unverified_header(token)["kid"] == "server-1"
    jwt.decode(token, public, algorithms=["EdDSA"], audience=MODEL)


def test_a_staged_key_is_published_but_the_pipe_signs_with_the_signing_key_alone(sse_stub: SSEStub) -> None:
    from provisioner.identity_keys import jwks, next_identity_keys

    first = next_identity_keys(None, now=time.time())
    staged = next_identity_keys(first, now=time.time(), rotate=True)  # what sync --rotate-identity-key writes
    signing_kid, staged_kid = json.loads(staged)["signing"]["kid"], json.loads(staged)["staged"]["kid"]
    _run(sse_stub, keys=staged)
    token = _headers(sse_stub)["x-aihub-identity"]
    assert jwt.get_unverified_header(token)["kid"] == signing_kid != staged_kid
    keys = jwt.PyJWKSet.from_dict(jwks(staged, now=time.time()) or {})
    claims = jwt.decode(token, keys[signing_kid].key, algorithms=["EdDSA"], audience=MODEL)
    assert claims["sub"] == "u-42"
    with pytest.raises(jwt.InvalidSignatureError):  # and not with the staged key
        jwt.decode(token, keys[staged_kid].key, algorithms=["EdDSA"], audience=MODEL)


def test_the_staged_private_key_is_masked_like_the_signing_one() -> None:
    from provisioner.identity_keys import next_identity_keys

    staged = next_identity_keys(next_identity_keys(None, now=time.time()), now=time.time(), rotate=True)
    data = json.loads(staged)
    secrets = pipe_module.identity_secrets(staged, environ={})
    assert set(secrets) == {data["signing"]["private_key_pem"].strip(), data["staged"]["private_key_pem"].strip()}


def test_a_key_that_does_not_load_signs_nothing_and_says_so_in_the_log(sse_stub: SSEStub, caplog) -> None:
    bad = json.dumps({"signing": {"kid": "k", "private_key_pem": "-----BEGIN PRIVATE KEY-----\nnope\n"}})
    _run(sse_stub, keys=bad)
    assert "x-aihub-identity" not in _headers(sse_stub)
    assert "identity signing key does not load" in caplog.text and "nope" not in caplog.text


def test_identity_none_sends_no_identity_at_all(sse_stub: SSEStub, monkeypatch) -> None:
    _forwarding(monkeypatch)
    _run(sse_stub, keys=KEYS_VALVE, agent=_agent(sse_stub.url, identity="none"))
    headers = _headers(sse_stub)
    assert not [h for h in headers if h.startswith("x-openwebui-user") or h == "x-aihub-identity"]
    assert "user_id" not in sse_stub.requests[0]["json"]["forwardedProps"]


def test_identity_none_on_openai_sends_no_user(sse_stub: SSEStub) -> None:
    _run(sse_stub, transport="openai", agent=_agent(sse_stub.url, "openai", identity="none"))
    assert "user" not in sse_stub.requests[0]["json"]


@pytest.mark.parametrize("secret", [None, ""])
def test_identity_signed_without_a_key_fails_the_chat_and_sends_nothing(sse_stub: SSEStub, monkeypatch, secret) -> None:
    if secret is None:
        _forwarding(monkeypatch, secret=None)  # forwarding on, no secret: only plain headers could go
    run = _run(sse_stub, agent=_agent(sse_stub.url, identity="signed"))
    assert sse_stub.requests == []
    assert "accepts only a signed identity, and no key is set" in run.content
    assert "Nothing was sent to the agent." in run.content


def test_identity_signed_with_a_key_sends_only_signed_identity(sse_stub: SSEStub, monkeypatch) -> None:
    _forwarding(monkeypatch, secret=None)
    _run(sse_stub, keys=KEYS_VALVE, agent=_agent(sse_stub.url, identity="signed"))
    headers = _headers(sse_stub)
    assert "x-aihub-identity" in headers and not [h for h in headers if h.startswith("x-openwebui-user")]


def test_groups_that_cannot_be_read_leave_the_token_without_groups(sse_stub: SSEStub, caplog) -> None:
    _run(sse_stub, keys=KEYS_VALVE, store=Groups(RuntimeError("db down")))
    claims = jwt.decode(_headers(sse_stub)["x-aihub-identity"], PUBLIC, algorithms=["EdDSA"], audience=MODEL)
    assert claims["groups"] == [] and "reading the user's groups failed" in caplog.text


# --- chat and message ids ---------------------------------------------------------------------------


def test_openai_requests_carry_open_webuis_chat_and_message_id_headers(sse_stub: SSEStub, monkeypatch) -> None:
    _run(sse_stub, transport="openai")
    headers = _headers(sse_stub)
    assert (headers["x-openwebui-chat-id"], headers["x-openwebui-message-id"]) == ("chat-9", "msg-a")
    monkeypatch.setenv("FORWARD_SESSION_INFO_HEADER_CHAT_ID", "X-Conversation")
    sse_stub.requests.clear()
    _run(sse_stub, transport="openai")
    assert _headers(sse_stub)["x-conversation"] == "chat-9"


def test_agui_thread_is_the_chat_run_is_the_message_and_the_ids_are_forwarded(sse_stub: SSEStub) -> None:
    _run(sse_stub)
    body = sse_stub.requests[0]["json"]
    assert (body["threadId"], body["runId"]) == ("chat-9", "msg-a")
    assert body["forwardedProps"] == {
        "features": [],
        "user_id": "u-42",
        "message_id": "msg-a",
        "user_message_id": "msg-u",
    }


# --- the trace --------------------------------------------------------------------------------------

TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]")


def test_every_request_carries_a_new_trace_when_open_webui_traces_nothing(sse_stub: SSEStub) -> None:
    _run(sse_stub)
    _run(sse_stub)
    first, second = (TRACEPARENT.fullmatch(r["headers"]["traceparent"]) for r in sse_stub.requests)
    assert first and second and first.group(1) != second.group(1)


def test_the_traceparent_is_the_child_of_open_webuis_current_span(sse_stub: SSEStub, monkeypatch) -> None:
    context = types.SimpleNamespace(
        is_valid=True, trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736, span_id=0x00F067AA0BA902B7, trace_flags=1
    )
    fake: Any = types.ModuleType("opentelemetry.trace")  # a module, with the function set here
    fake.get_current_span = lambda: types.SimpleNamespace(get_span_context=lambda: context)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", fake)
    _run(sse_stub)
    assert sse_stub.requests[0]["headers"]["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_the_error_alert_and_the_log_line_carry_the_trace_id(sse_stub: SSEStub, caplog) -> None:
    sse_stub.behaviour.status = 502
    caplog.set_level(logging.WARNING)
    run = _run(sse_stub)
    found = TRACEPARENT.fullmatch(sse_stub.requests[0]["headers"]["traceparent"])
    trace = found.group(1) if found else ""
    assert run.raw.endswith(f"answered HTTP 502 Bad Gateway: agent exploded (trace {trace})\n")
    assert f"trace {trace}" in caplog.text


def test_the_agents_own_run_error_alert_carries_the_trace_id_too(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("half"), [{"type": "RUN_ERROR", "message": "model overloaded"}])
    run = _run(sse_stub)
    found = TRACEPARENT.fullmatch(sse_stub.requests[0]["headers"]["traceparent"])
    trace = found.group(1) if found else ""
    assert run.raw.endswith(f"> Agent error: model overloaded (trace {trace})\n")


# --- the user's context -----------------------------------------------------------------------------


def test_agui_context_has_the_users_language_time_and_timezone(sse_stub: SSEStub) -> None:
    _run(sse_stub)
    assert sse_stub.requests[0]["json"]["context"] == [
        {"description": "The user's language", "value": "de-DE"},
        {"description": "The current date and time", "value": "2026-12-02 09:30:00"},
        {"description": "The user's timezone", "value": "Europe/Berlin"},
    ]


def test_openai_metadata_has_them_as_strings(sse_stub: SSEStub) -> None:
    _run(sse_stub, transport="openai")
    metadata = sse_stub.requests[0]["json"]["metadata"]
    assert {k: metadata[k] for k in ("user_language", "current_datetime", "current_timezone")} == {
        "user_language": "de-DE",
        "current_datetime": "2026-12-02 09:30:00",
        "current_timezone": "Europe/Berlin",
    }


def test_an_api_client_without_variables_still_gets_the_servers_time(sse_stub: SSEStub) -> None:
    _run(sse_stub, metadata={"chat_id": "c"})
    (entry,) = sse_stub.requests[0]["json"]["context"]
    assert entry["description"] == "The current date and time" and entry["value"].endswith(" UTC")


def test_the_servers_time_follows_the_clock_second_by_second(sse_stub: SSEStub, monkeypatch) -> None:
    """It is formatted once per second (utc_time_text): a later chat must still get its own time."""
    now = [0.0]
    monkeypatch.setattr(pipe_module.time, "time", lambda: now[0])
    stamps = []
    for now[0] in (1796205000.2, 1796205000.9, 1796205061.5):
        sse_stub.requests.clear()
        _run(sse_stub, metadata={"chat_id": "c"}, agent=_agent(sse_stub.url, identity="none"))
        stamps.append(sse_stub.requests[0]["json"]["context"][0]["value"])
    assert stamps == ["2026-12-02 09:50:00 UTC", "2026-12-02 09:50:00 UTC", "2026-12-02 09:51:01 UTC"]


# --- delegated access -------------------------------------------------------------------------------

OAUTH = {
    "access_token": "ya29.user-oauth-access-token-0123456789",
    "refresh_token": "1//refresh-token-abcdefgh",
    "token_type": "Bearer",
}


def test_the_oauth_token_goes_in_the_backends_header_to_loopback(sse_stub: SSEStub) -> None:
    _run(sse_stub, agent=_agent(sse_stub.url, oauth_token_header="X-Drive-Token"), __oauth_token__=OAUTH)
    assert _headers(sse_stub)["x-drive-token"] == OAUTH["access_token"]
    assert OAUTH["refresh_token"] not in json.dumps(sse_stub.requests[0])


def test_without_the_opt_in_the_oauth_token_is_never_sent(sse_stub: SSEStub) -> None:
    _run(sse_stub, __oauth_token__=OAUTH)
    assert OAUTH["access_token"] not in json.dumps(sse_stub.requests[0])


def test_the_oauth_token_never_goes_over_plain_http_to_another_host() -> None:
    agent = P.AgentSpec(id="a.b", name="B", url="http://agents.internal:8080/agent", oauth_token_header="X-T")
    with pytest.raises(P.PipeConfigError, match="only over https"):
        P.oauth_header(agent, OAUTH)
    secure = agent.model_copy(update={"url": "https://agents.internal/agent"})
    assert P.oauth_header(secure, OAUTH) == {"X-T": OAUTH["access_token"]}
    assert P.oauth_header(secure, None) == {}  # a user who did not log in with OAuth


# --- nothing leaks ----------------------------------------------------------------------------------


def test_tokens_echoed_by_the_agent_are_masked_in_the_answer_even_split_across_deltas(
    sse_stub: SSEStub, monkeypatch
) -> None:
    _forwarding(monkeypatch)
    _reread_environment()
    pipe = make_pipe([_agent(sse_stub.url, oauth_token_header="X-Drive-Token")])
    pipe.store = Groups()
    # the agent echoes the OAuth token whole, and a refresh token split over two deltas
    refresh = OAUTH["refresh_token"]
    sse_stub.behaviour.data = events(
        T(f"token {OAUTH['access_token']} and {refresh[:9]}"), T(f"{refresh[9:]} done"), FINISHED
    )
    run = asyncio.run(
        drive(
            pipe,
            "docs.analyst",
            [{"role": "user", "content": "q"}],
            metadata=dict(META),
            user=USER,
            __oauth_token__=OAUTH,
        )
    )
    assert run.content == "token [redacted] and [redacted] done"


def test_a_server_that_echoes_the_identity_headers_in_an_error_shows_none_of_them(
    sse_stub: SSEStub, monkeypatch, caplog
) -> None:
    _forwarding(monkeypatch)
    caplog.set_level(logging.DEBUG)
    sse_stub.behaviour.status = 401
    _reread_environment()
    pipe = make_pipe([_agent(sse_stub.url, oauth_token_header="X-Drive-Token")])
    pipe.store = Groups()
    pipe.valves.IDENTITY_KEYS = KEYS_VALVE

    # the stub's error body is fixed before a request: the first one shows what the pipe sends
    asyncio.run(
        drive(
            pipe,
            "docs.analyst",
            [{"role": "user", "content": "q"}],
            metadata=dict(META),
            user=USER,
            __oauth_token__=OAUTH,
        )
    )
    sent = sse_stub.requests[0]["headers"]
    sse_stub.behaviour.error_body = json.dumps({"detail": f"bad auth: {json.dumps(sent)}"})
    run = asyncio.run(
        drive(
            pipe,
            "docs.analyst",
            [{"role": "user", "content": "q"}],
            metadata=dict(META),
            user=USER,
            __oauth_token__=OAUTH,
        )
    )
    secrets = [SECRET, PEM.splitlines()[1], OAUTH["access_token"], OAUTH["refresh_token"]]
    for text in (run.raw, caplog.text, json.dumps(run.events)):
        for secret in secrets:
            assert secret not in text
        assert "eyJ" not in text  # no token's header, let alone a whole token
    assert "answered HTTP 401" in run.content


def test_token_mask_holds_back_only_a_possible_start_of_a_token() -> None:
    mask = P.TokenMask(["eyJsecret-token-value"])
    assert mask.stream("plain text, nothing held") == "plain text, nothing held"
    assert mask.stream("here it comes: eyJsec") == "here it comes: "
    assert mask.stream("ret-token-value!") == "[redacted]!"
    assert mask.stream("a key? e") == "a key? "
    assert mask.stream("xactly.") + mask.flush() == "exactly."


def test_the_servers_settings_are_read_once_per_process_as_open_webui_reads_its_own(
    sse_stub: SSEStub, monkeypatch
) -> None:
    _forwarding(monkeypatch)
    _run(sse_stub)
    monkeypatch.setenv("ENABLE_FORWARD_USER_INFO_HEADERS", "false")  # without a restart: not seen
    pipe = make_pipe([_agent(sse_stub.url)])
    pipe.store = Groups()
    asyncio.run(drive(pipe, "docs.analyst", [{"role": "user", "content": "q"}], metadata=dict(META), user=USER))
    assert all("x-openwebui-user-jwt" in {k.lower() for k in r["headers"]} for r in sse_stub.requests)


# --- the groups claim as Open WebUI's store reads it -----------------------------------------------


class _Group:
    def __init__(self, gid: str, name: str) -> None:
        self.id, self.name = gid, name


def _groups_module(monkeypatch: pytest.MonkeyPatch, groups: Any) -> None:
    """``open_webui.models.groups`` with the ``Groups`` given, as the pipe imports it."""
    module: Any = types.ModuleType("open_webui.models.groups")  # a module, with Groups set here
    module.Groups = groups
    for name in ("open_webui", "open_webui.models"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name) or types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "open_webui.models.groups", module)


def test_groups_where_they_nest_count_every_group_above(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.12 nests groups, and its own access rules count a member of "EU" as one of its parent
    "Finance" too (``include_inherited=True``); the claim must say the same, or an agent that
    checks "Finance" denies a user Open WebUI lets in."""
    calls: list[dict[str, Any]] = []

    class Groups:  # 0.12: asynchronous, with include_inherited
        @staticmethod
        async def get_groups_by_member_id(user_id: str, db: Any = None, *, include_inherited: bool = False):
            calls.append({"user_id": user_id, "include_inherited": include_inherited})
            direct = [_Group("g-eu", "EU")]
            return direct + [_Group("g-fin", "Finance")] if include_inherited else direct

    _groups_module(monkeypatch, Groups)
    found = asyncio.run(P.OpenWebUIStore().groups("u-42"))
    assert found == [{"id": "g-eu", "name": "EU"}, {"id": "g-fin", "name": "Finance"}]
    assert calls == [{"user_id": "u-42", "include_inherited": True}]


def test_groups_of_a_release_without_nesting(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.6: synchronous, no include_inherited keyword (passing it would raise TypeError)."""

    class Groups:
        @staticmethod
        def get_groups_by_member_id(user_id: str):
            return [_Group("g-1", "Finance")] if user_id == "u-42" else []

    _groups_module(monkeypatch, Groups)
    assert asyncio.run(P.OpenWebUIStore().groups("u-42")) == [{"id": "g-1", "name": "Finance"}]


# --- the groups read, at most every GROUPS_TTL_SECONDS per user ----------------------------------------


def test_a_users_groups_are_read_once_for_the_chats_of_the_next_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read costs Open WebUI ~4-5 ms of CPU a chat (bench/owui_chat.py --identity): a user's
    next chats within GROUPS_TTL_SECONDS use what was read; after that, and for another user, it
    is read again."""
    clock = [1000.0]
    monkeypatch.setattr(P.time, "monotonic", lambda: clock[0])
    store, cache = Groups(), P.GroupsCache(ttl=30)
    assert asyncio.run(cache.groups(store, "u-42")) == GROUPS
    clock[0] += 29.9
    assert asyncio.run(cache.groups(store, "u-42")) == GROUPS
    assert asyncio.run(cache.groups(store, "u-7")) == GROUPS
    assert store.asked == ["u-42", "u-7"]
    clock[0] += 0.2  # u-42's read is 30.1 s old
    store.found = [{"id": "g-3", "name": "Auditors"}]
    assert asyncio.run(cache.groups(store, "u-42")) == [{"id": "g-3", "name": "Auditors"}]
    assert store.asked == ["u-42", "u-7", "u-42"]


def test_a_failed_groups_read_is_tried_again_at_the_next_chat() -> None:
    store, cache = Groups(RuntimeError("db down")), P.GroupsCache()
    with pytest.raises(RuntimeError):
        asyncio.run(cache.groups(store, "u-42"))
    store.found = GROUPS
    assert asyncio.run(cache.groups(store, "u-42")) == GROUPS and store.asked == ["u-42", "u-42"]


def test_the_cache_starts_again_past_its_size() -> None:
    store, cache = Groups(), P.GroupsCache(users=2)
    for user in ("a", "b", "c", "a"):
        asyncio.run(cache.groups(store, user))
    assert store.asked == ["a", "b", "c", "a"]  # c found it full: a was dropped with b


def test_two_chats_of_one_user_read_the_groups_once(sse_stub: SSEStub) -> None:
    """Through the pipe: the second chat's token carries the groups the first read."""
    _reread_environment()
    _answer(sse_stub, "agui")
    pipe, store = make_pipe([_agent(sse_stub.url)]), Groups()
    pipe.valves.IDENTITY_KEYS, pipe.store = KEYS_VALVE, store
    for message_id in ("msg-a", "msg-b"):
        asyncio.run(
            drive(
                pipe,
                "docs.analyst",
                [{"role": "user", "content": "Who am I?"}],
                metadata={**META, "message_id": message_id},
                user=USER,
            )
        )
    for request, message_id in zip(sse_stub.requests, ("msg-a", "msg-b"), strict=True):
        token = {k.lower(): v for k, v in request["headers"].items()}["x-aihub-identity"]
        claims = jwt.decode(token, PUBLIC, algorithms=["EdDSA"], audience=MODEL)
        assert (claims["groups"], claims["message_id"]) == (GROUPS, message_id)
    assert store.asked == ["u-42"]
