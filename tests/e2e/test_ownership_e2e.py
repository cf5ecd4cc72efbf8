"""Through a real Open WebUI 0.12.4: objects without the ownership marker are never written.

Whatever the blueprints say and whatever flags are given (`--prune`, `--adopt` of something
else), a model row or function without `meta.aihub.managed_by == "aihub-provision"` keeps every
byte of its record, and no write request names it; only `--adopt KIND/ID` of exactly that object
takes it over. Every request the CLI sends is recorded with its body, since model writes carry
the id in the body, not the path.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import provisioner.openwebui.client as client_module
from tests.support.chat_support import SAMPLE_MODELS, get, provision

WANTED_MODEL = "aihub_agent_pipe.policy-faq.default"
WANTED_FUNCTION = "aihub_feature_filter"
ADMIN_FILTER = '''"""
title: An admin's own filter
"""

from pydantic import BaseModel


class Filter:
    class Valves(BaseModel):
        priority: int = 0
        note: str = ""

    def __init__(self):
        self.valves = self.Valves()

    def inlet(self, body: dict) -> dict:
        return body
'''


class Wire:
    """Every request the CLI sends: method, URL and JSON body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, httpx.URL, Any]] = []

    def __call__(self, request: httpx.Request) -> None:
        body = json.loads(request.read()) if request.content else None
        self.requests.append((request.method, request.url, body))

    @property
    def writes(self) -> list[tuple[str, httpx.URL, Any]]:
        return [r for r in self.requests if r[0] != "GET"]

    def touching(self, ident: str) -> list[tuple[str, httpx.URL, Any]]:
        """Writes that name `ident` in the path, the query or the body's id."""
        return [
            (method, url, body)
            for method, url, body in self.writes
            if ident in url.path.split("/")
            or ident in url.params.values()
            or (isinstance(body, dict) and body.get("id") == ident)
        ]


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    recorded = Wire()
    monkeypatch.setattr(
        client_module,
        "make_http_client",
        lambda timeout: httpx.Client(timeout=timeout, event_hooks={"request": [recorded]}),
    )
    return recorded


def create_model(owui, model_id: str, meta: dict[str, Any] | None = None, **fields: Any) -> None:
    row = {
        "id": model_id,
        "base_model_id": None,
        "name": f"Hand made {model_id}",
        "meta": meta or {},
        "params": {"system": "An admin's prompt.", "temperature": 0.2},
        "access_grants": [],
        **fields,
    }
    with owui.client() as http:
        http.post("/api/v1/models/create", json=row).raise_for_status()


def create_function(owui, function_id: str, *, meta: dict[str, Any] | None = None) -> None:
    """An admin's function: active, global, with a stored valve, so there is state to lose."""
    form = {
        "id": function_id,
        "name": "Admin filter",
        "content": ADMIN_FILTER,
        "meta": {"description": "mine", **(meta or {})},
    }
    with owui.client() as http:
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        http.post(f"/api/v1/functions/id/{function_id}/toggle").raise_for_status()
        http.post(f"/api/v1/functions/id/{function_id}/toggle/global").raise_for_status()
        http.post(
            f"/api/v1/functions/id/{function_id}/valves/update", json={"priority": 3, "note": "keep"}
        ).raise_for_status()


def record_bytes(owui, kind: str, ident: str) -> bytes:
    """The stored record exactly as Open WebUI serves it (valves included for functions)."""
    with owui.client() as http:
        if kind == "model":
            return http.get("/api/v1/models/model", params={"id": ident}).raise_for_status().content
        record = http.get(f"/api/v1/functions/id/{ident}").raise_for_status().content
        return record + b"\n" + http.get(f"/api/v1/functions/id/{ident}/valves").raise_for_status().content


def test_unmarked_objects_with_wanted_ids_are_left_byte_for_byte_unless_each_is_adopted(
    owui, bundle, wire, capsys
) -> None:
    create_model(owui, WANTED_MODEL, meta={"description": "an admin's row", "voice": {"voice": "alloy"}})
    create_function(owui, WANTED_FUNCTION)
    before = {
        ("model", WANTED_MODEL): record_bytes(owui, "model", WANTED_MODEL),
        ("function", WANTED_FUNCTION): record_bytes(owui, "function", WANTED_FUNCTION),
    }

    attempts = {
        (): ["model", "function"],
        ("--prune",): ["model", "function"],
        ("--prune", "--adopt", f"model/{WANTED_MODEL}"): ["function"],
        ("--adopt", f"function/{WANTED_FUNCTION}"): ["model"],
        ("--prune", "--adopt", "model/aihub_agent_pipe.other.agent", "--adopt", "function/other"): [
            "model",
            "function",
        ],
    }
    for flags, named in attempts.items():
        for command in (["diff"], ["sync", "--yes"]):
            code, out, err = provision(capsys, *command, *bundle, *flags)
            assert code == 1 and "not managed by provision" in err, (flags, err)
            assert (f"model {WANTED_MODEL}" in err) == ("model" in named), (flags, err)
            assert (f"function {WANTED_FUNCTION}" in err) == ("function" in named), (flags, err)
    assert len(wire.requests) >= len(attempts) and wire.writes == []  # every attempt read, none wrote
    for (kind, ident), snapshot in before.items():
        assert record_bytes(owui, kind, ident) == snapshot

    # Adopting both takes them over: marked now, and what provision does not own survives.
    code, _, err = provision(
        capsys, "sync", *bundle, "--prune", "--adopt", f"model/{WANTED_MODEL}", "--adopt", f"function/{WANTED_FUNCTION}"
    )
    assert code == 0, err
    row = get(owui, "/api/v1/models/model", id=WANTED_MODEL)
    assert row["meta"]["aihub"]["managed_by"] == "aihub-provision"
    assert row["params"]["system"] == "An admin's prompt." and row["meta"]["voice"] == {"voice": "alloy"}
    function = get(owui, f"/api/v1/functions/id/{WANTED_FUNCTION}")
    assert (
        function["meta"]["aihub"]["managed_by"] == "aihub-provision" and "AI Hub Feature Filter" in function["content"]
    )


def test_unmarked_objects_the_blueprints_do_not_want_survive_prune_and_adopt(owui, bundle, wire, capsys) -> None:
    assert provision(capsys, "sync", *bundle)[0] == 0
    marker = {"managed_by": "aihub-provision", "blueprint": "gone", "agent": "agent", "features": []}
    create_model(owui, "aihub_agent_pipe.gone.agent", meta={"aihub": marker})  # ours: --prune deletes it
    untouchable = {
        ("model", "team-gpt"): lambda: create_model(
            owui, "team-gpt", base_model_id="aihub_agent_pipe.policy-faq.default"
        ),
        ("model", "aihub_agent_pipe.old.agent"): lambda: create_model(owui, "aihub_agent_pipe.old.agent"),
        ("model", "aihub_agent_pipe.foreign.agent"): lambda: create_model(
            owui, "aihub_agent_pipe.foreign.agent", meta={"aihub": {**marker, "managed_by": "someone-else"}}
        ),
        ("model", "aihub_agent_pipe.spoofed.agent"): lambda: create_model(
            owui, "aihub_agent_pipe.spoofed.agent", meta={"aihub": "aihub-provision"}
        ),
        ("function", "admin_filter"): lambda: create_function(owui, "admin_filter"),
        ("function", "aihub_toggle_retired"): lambda: create_function(owui, "aihub_toggle_retired"),
        ("function", "aihub_spoofed"): lambda: create_function(
            owui, "aihub_spoofed", meta={"aihub": {"managed_by": "AIHUB-PROVISION"}}
        ),
    }
    for make in untouchable.values():
        make()
    before = {key: record_bytes(owui, *key) for key in untouchable}
    # A managed field drifted, so this sync has real writes to make.
    row = get(owui, "/api/v1/models/model", id="aihub_agent_pipe.research-assistant.default")
    row["meta"]["capabilities"]["web_search"] = True
    with owui.client() as http:
        http.post(
            "/api/v1/models/model/update", json={k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
        ).raise_for_status()

    wire.requests.clear()
    adopt = ["--adopt", "model/aihub_agent_pipe.old.agent", "--adopt", "function/admin_filter"]  # not wanted: no effect
    code, out, err = provision(capsys, "sync", *bundle, "--prune", "--yes", *adopt)
    assert code == 0, err
    assert "0 to add, 1 to change, 1 to destroy" in out
    assert wire.touching("aihub_agent_pipe.gone.agent") and wire.touching("aihub_agent_pipe.research-assistant.default")
    for kind, ident in untouchable:
        assert wire.touching(ident) == [], (kind, ident)
        assert record_bytes(owui, kind, ident) == before[(kind, ident)], (kind, ident)
    remaining = {r["id"] for r in get(owui, "/api/v1/models/all")}
    assert remaining == SAMPLE_MODELS | {ident for kind, ident in untouchable if kind == "model"}
    assert provision(capsys, "diff", *bundle, "--prune", "--detailed-exitcode")[0] == 0
