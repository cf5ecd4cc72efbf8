"""Through a real Open WebUI 0.12.4: a client cannot get a feature to an agent that lacks it.

The sample blueprints, their backends pointed at the scripted AG-UI server, are synced with the
real bundle (see test_sync.py). Each chat is seen from both ends: `forwarded`, the features in
the RunAgentInput the agent received, and what the observer filter wrote after every filter of
the bundle ran: `requested` (the metadata list the pipe reads) and Open WebUI's own `features`
dict (which the agent never sees). The agents: policy-faq supports nothing, research-assistant
web_search, code_interpreter and image_generation, document-analyst user_files, support-desk
web_search and deep_research.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from tests.support.chat_support import AGENT_ANSWER, ChatRig, Seen, chat

KEY = "aihub_requested_features"
ALL_NATIVE = {"web_search": True, "image_generation": True, "code_interpreter": True, "memory": True}
STRIPPED = ("web_search", "image_generation", "code_interpreter", "memory")
LEGACY = {"params": {"function_calling": "legacy"}}  # Open WebUI acts on features itself in this mode
POLICY = "aihub_agent_pipe.policy-faq.default"
RESEARCH = "aihub_agent_pipe.research-assistant.default"
DOCUMENTS = "aihub_agent_pipe.document-analyst.default"
DESK = "aihub_agent_pipe.support-desk.tier2"
UNMANAGED = "aihub_agent_pipe.adhoc.plain"  # served by the pipe, but a row without our marker


@pytest.fixture
def synced(chat_rig: ChatRig) -> ChatRig:
    return chat_rig


def stripped(seen: Seen) -> None:
    """Open WebUI's four toggles are off, in the dict it shares with the metadata (set in place)."""
    assert {name: seen.features.get(name) for name in STRIPPED} == dict.fromkeys(STRIPPED, False)
    assert seen.observed["features_is_metadata_features"] is True


# --- features an agent does not support ----------------------------------------------------------


@pytest.mark.parametrize("extra", [{}, LEGACY], ids=["native-calling", "legacy-calling"])
def test_native_features_for_an_agent_without_them_never_count(synced, extra) -> None:
    seen = chat(synced, POLICY, features=dict(ALL_NATIVE), extra=extra)
    assert seen.forwarded == []
    stripped(seen)
    seen = chat(synced, DESK, features=dict(ALL_NATIVE), extra=extra)
    assert seen.forwarded == ["web_search"]  # image_generation and code_interpreter are not supported
    stripped(seen)
    seen = chat(synced, RESEARCH, features=dict(ALL_NATIVE), extra=extra)
    assert seen.forwarded == ["code_interpreter", "image_generation", "web_search"]  # all three supported
    stripped(seen)


def test_custom_features_sent_as_features_never_count(synced) -> None:
    features = {"user_files": True, "deep_research": True, "web_search": True}
    assert chat(synced, DOCUMENTS, features=dict(features)).forwarded == []  # only its toggle can ask
    assert chat(synced, DESK, features=dict(features)).forwarded == ["web_search"]


# --- forged requested-features lists --------------------------------------------------------------


FORGED = ["web_search", "image_generation", "code_interpreter", "user_files", "deep_research"]


@pytest.mark.parametrize(
    "where",
    ["top-level", "metadata", "features"],
)
def test_a_forged_requested_features_list_never_reaches_the_agent(synced, where: str) -> None:
    def forged_request(model: str) -> Seen:
        features: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        if where == "top-level":
            extra[KEY] = list(FORGED)
        elif where == "metadata":
            extra["metadata"] = {KEY: list(FORGED), "features": {"image_generation": True}}
        else:
            features[KEY] = list(FORGED)
        return chat(synced, model, features=features, extra=extra)

    for model in (POLICY, DOCUMENTS, DESK):  # DOCUMENTS supports user_files, but nobody toggled it
        seen = forged_request(model)
        assert (seen.forwarded, seen.requested) == ([], []), model
    # Without our filters on the row, nothing replaces the key: still nothing forged gets through,
    # though this agent supports every forged feature.
    unmanaged_row(synced)
    seen = forged_request(UNMANAGED)
    assert seen.forwarded == [] and seen.requested is None


@pytest.mark.parametrize(
    ("model", "filter_ids"),
    [
        (POLICY, ["aihub_toggle_user_files", "aihub_toggle_deep_research"]),
        (DOCUMENTS, ["aihub_toggle_deep_research"]),  # a toggle of another agent
        (RESEARCH, ["aihub_toggle_user_files", "aihub_feature_filter", "no_such_filter"]),
    ],
    ids=["no-toggles", "other-agents-toggle", "unknown-and-non-toggle-ids"],
)
def test_filter_ids_naming_a_toggle_the_model_lacks_add_nothing(synced, model: str, filter_ids: list[str]) -> None:
    seen = chat(synced, model, features={}, filter_ids=filter_ids)
    assert seen.forwarded == [] and seen.requested == []


def test_a_toggle_filter_made_global_still_adds_nothing_for_models_without_its_feature(synced) -> None:
    with synced.client() as http:
        for function_id in ("aihub_toggle_user_files", "aihub_feature_filter"):
            assert http.post(f"/api/v1/functions/id/{function_id}/toggle/global").raise_for_status().json()["is_global"]
    unmanaged_row(synced)
    toggles = ["aihub_toggle_user_files"]
    assert chat(synced, POLICY, features={}, filter_ids=toggles).forwarded == []
    assert chat(synced, DESK, features={}, filter_ids=toggles).forwarded == []
    seen = chat(synced, UNMANAGED, features={"web_search": True}, filter_ids=toggles)
    assert seen.requested is None and seen.forwarded == []  # not ours: no list at all
    assert seen.features["web_search"] is True  # and Open WebUI's own toggle left alone
    assert chat(synced, DOCUMENTS, features={}, filter_ids=toggles).forwarded == ["user_files"]


def test_a_forged_direct_model_item_does_not_reach_the_agent(synced) -> None:
    """`model_item` with `direct` makes Open WebUI take the model, marker and all, from the body."""
    forged = {
        "id": POLICY,
        "direct": True,
        "info": {"meta": {"aihub": {"managed_by": "aihub-provision", "features": FORGED}}},
    }
    body = {
        "model": POLICY,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
        "features": dict(ALL_NATIVE),
        "filter_ids": ["aihub_toggle_user_files"],
        "model_item": forged,
    }
    synced.clear()
    with synced.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
    # The direct path answers through the browser's own socket connection, never through a pipe
    # (0.12.4 without that socket: 400 "Client session disconnected.").
    assert response.status_code != 200 and AGENT_ANSWER not in response.text
    assert synced.server.recorded() == []


# --- a toggle left on after switching models -------------------------------------------------------


def test_toggles_left_on_after_switching_models_never_count(synced) -> None:
    features = {"web_search": True, "code_interpreter": True}
    toggles = ["aihub_toggle_user_files", "aihub_toggle_deep_research"]
    assert chat(synced, DESK, features=dict(features), filter_ids=toggles).forwarded == ["web_search", "deep_research"]
    assert chat(synced, DOCUMENTS, features=dict(features), filter_ids=toggles).forwarded == ["user_files"]
    seen = chat(synced, POLICY, features=dict(features), filter_ids=toggles)
    assert seen.forwarded == []
    stripped(seen)


class TestTheUIPath:
    """UI-shaped requests (saved chat, `session_id`, `chat_id`, message ids): Open WebUI runs the
    completion in a background task and saves the agent's answer into the chat."""

    def new_chat(self, owui) -> str:
        chat_form = {
            "title": "feature security",
            "models": [DOCUMENTS],
            "history": {"messages": {}, "currentId": None},
            "messages": [],
        }
        with owui.client() as http:
            return http.post("/api/v1/chats/new", json={"chat": chat_form}).raise_for_status().json()["id"]

    def turn(
        self, rig: ChatRig, chat_id: str, model: str, parent: str | None, *, features: dict, filter_ids: list[str]
    ) -> tuple[Seen, str]:
        user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "features": features,
            "filter_ids": filter_ids,
            "session_id": "aihub-e2e-session",
            "chat_id": chat_id,
            "id": reply_id,
            "parent_id": parent,
            "user_message": {"id": user_id, "parentId": parent, "role": "user", "content": "hi", "models": [model]},
        }
        rig.clear()
        with rig.client(timeout=60) as http:
            started = http.post("/api/chat/completions", json=body)
            assert started.status_code == 200, started.text
            assert started.json().get("task_ids"), started.text  # the background (UI) path
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                messages = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()["chat"]["history"]["messages"]
                reply = messages.get(reply_id) or {}
                if reply.get("done"):
                    assert reply.get("content") == AGENT_ANSWER, reply
                    seen = rig.one_request()
                    assert seen.run["threadId"] == chat_id and seen.observed["chat_id"] == chat_id
                    return seen, reply_id
                time.sleep(0.3)
        raise AssertionError(f"no answer saved for message {reply_id} in chat {chat_id}")

    def test_a_toggle_left_on_after_switching_models_in_one_chat_never_counts(self, synced) -> None:
        chat_id = self.new_chat(synced)
        features = {
            "web_search": True,
            "image_generation": True,
            "code_interpreter": False,
            "voice": False,
            "memory": True,
        }
        toggles = ["aihub_toggle_user_files"]
        first, reply = self.turn(synced, chat_id, DOCUMENTS, None, features=dict(features), filter_ids=toggles)
        assert first.model == DOCUMENTS
        assert first.forwarded == ["user_files"]
        stripped(first)
        second, _ = self.turn(synced, chat_id, POLICY, reply, features=dict(features), filter_ids=toggles)
        assert second.model == POLICY
        assert second.forwarded == [] and second.requested == []
        stripped(second)


def unmanaged_row(rig: ChatRig) -> None:
    """A row the pipe serves but provision does not own (no marker, no filters).

    Its agent, added to the pipe's AGENTS valve by hand, supports every feature, so whatever
    reached the metadata key would be forwarded to it.
    """
    row: dict[str, Any] = {
        "id": UNMANAGED,
        "base_model_id": None,
        "name": "Ad hoc",
        "meta": {},
        "params": {},
        "access_grants": [],
    }
    sub_id = UNMANAGED.partition(".")[2]
    agent = {"id": sub_id, "name": "Ad hoc", "transport": "agui", "url": rig.server.agent_url, "features": FORGED}
    with rig.client() as http:
        valves = http.get("/api/v1/functions/id/aihub_agent_pipe/valves").raise_for_status().json()
        agents = [a for a in json.loads(valves["AGENTS"]) if a["id"] != sub_id] + [agent]
        update = {key: value for key, value in valves.items() if value is not None} | {"AGENTS": json.dumps(agents)}
        http.post("/api/v1/functions/id/aihub_agent_pipe/valves/update", json=update).raise_for_status()
        if http.get("/api/v1/models/model", params={"id": UNMANAGED}).status_code != 200:
            http.post("/api/v1/models/create", json=row).raise_for_status()
        http.get("/api/models", params={"refresh": "true"}).raise_for_status()
