"""`provision` against a real Open WebUI 0.12.4: sync, idempotence, drift, ownership, prune, chat.

The CLI runs in-process through `main()`, with its HTTP client wrapped so each test can count
the requests it sends. The bundle is the real one (feature filter, toggle filters, agent pipe).
For the chat tests the agents run on the scripted AG-UI server (tests/support/agui_server), which
records every RunAgentInput: what reaches an agent is its `forwardedProps.features`. What Open
WebUI itself keeps after the filters (its `features` dict, which the agent never sees) is
written down by a test-only observer filter (tests/e2e/fixtures/observer_filter.py) that runs
after every filter of the bundle.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from provisioner.function_files import extract_frontmatter
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import SAMPLE_MODELS, ChatRig, chat, get, provision


def test_sync_from_empty_creates_every_row_and_function(owui, bundle, recorder, capsys) -> None:
    code, out, _ = provision(capsys, "sync", *bundle)
    assert code == 0, out
    rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert set(rows) == SAMPLE_MODELS
    row = rows["aihub_agent_pipe.research-assistant.default"]
    assert row["base_model_id"] is None
    # Open WebUI's own toggles stay off; the agent's features are the bundle's toggle filters.
    assert row["meta"]["capabilities"]["web_search"] is False and row["meta"]["capabilities"]["memory"] is False
    assert row["meta"]["filterIds"] == [
        "aihub_feature_filter",
        "aihub_toggle_code_interpreter",
        "aihub_toggle_image_generation",
        "aihub_toggle_web_search",
    ]
    functions = {f["id"]: f for f in get(owui, "/api/v1/functions/export")}
    assert set(functions) == {
        "aihub_feature_filter",
        "aihub_toggle_deep_research",
        "aihub_toggle_user_files",
        "aihub_toggle_web_search",
        "aihub_toggle_code_interpreter",
        "aihub_toggle_image_generation",
        "aihub_agent_pipe",
    }
    assert all(f["is_active"] for f in functions.values())
    assert not any(f["is_global"] for f in functions.values())  # every file says global: false
    assert functions["aihub_toggle_user_files"]["meta"]["toggle"] is True
    # our copy of Open WebUI's frontmatter parser reads the files exactly as the server does
    for fn in functions.values():
        assert fn["meta"]["manifest"] == extract_frontmatter(fn["content"])
    # the registry was refreshed: the pipe's sub-models are served at once
    served = {m["id"] for m in get(owui, "/api/models")["data"]}
    assert SAMPLE_MODELS <= served


def test_global_frontmatter_is_honoured(owui, bundle, recorder, capsys) -> None:
    functions = Path(bundle[3])
    source = functions / "aihub_feature_filter.py"
    source.write_text(source.read_text().replace("global: false", "global: true", 1))
    assert provision(capsys, "sync", *bundle)[0] == 0
    assert get(owui, "/api/v1/functions/id/aihub_feature_filter")["is_global"] is True
    source.write_text(source.read_text().replace("global: true", "global: false", 1))
    code, out, _ = provision(capsys, "diff", *bundle, "-o", "json")
    fields = [f["path"] for c in json.loads(out)["changes"] for f in c["fields"]]
    assert "is_global" in fields and "content" in fields
    assert provision(capsys, "sync", *bundle)[0] == 0
    assert get(owui, "/api/v1/functions/id/aihub_feature_filter")["is_global"] is False


def test_second_sync_makes_zero_write_calls(owui, bundle, recorder, capsys) -> None:
    assert provision(capsys, "sync", *bundle)[0] == 0
    assert recorder.writes  # the first sync did write
    recorder.clear()
    code, out, _ = provision(capsys, "sync", *bundle)
    assert code == 0 and "No changes." in out
    assert recorder.writes == []
    assert recorder.requests == [
        ("GET", "/api/version"),
        ("GET", "/api/v1/models/all"),
        ("GET", "/api/v1/functions/export"),
    ]
    assert provision(capsys, "diff", *bundle, "--detailed-exitcode")[0] == 0


def test_hand_edit_of_a_managed_field_is_one_field_in_diff_and_reverted(owui, bundle, recorder, capsys) -> None:
    assert provision(capsys, "sync", *bundle)[0] == 0
    model_id = "aihub_agent_pipe.policy-faq.default"
    row = get(owui, "/api/v1/models/model", id=model_id)
    form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
    form["meta"]["capabilities"]["web_search"] = True  # managed: Open WebUI's own toggle stays off
    form["meta"]["capabilities"]["admin_note"] = True  # an admin's own key
    form["meta"]["voice"] = {"voice": "alloy"}  # not ours
    form["params"] = {"system": "Be brief.", "temperature": 0.3}  # not ours
    with owui.client() as http:
        http.post("/api/v1/models/model/update", json=form).raise_for_status()

    code, out, _ = provision(capsys, "diff", *bundle, "-o", "json", "--detailed-exitcode")
    assert code == 2
    assert json.loads(out)["changes"] == [
        {
            "kind": "model",
            "id": model_id,
            "action": "update",
            "fields": [{"path": "meta.capabilities.web_search", "before": True, "after": False, "origin": "openwebui"}],
        }
    ]
    assert provision(capsys, "sync", *bundle)[0] == 0
    after = get(owui, "/api/v1/models/model", id=model_id)
    assert after["meta"]["capabilities"]["web_search"] is False
    assert after["meta"]["capabilities"]["admin_note"] is True
    assert after["meta"]["voice"] == {"voice": "alloy"}
    assert after["params"]["system"] == "Be brief." and after["params"]["temperature"] == 0.3
    assert provision(capsys, "diff", *bundle, "--detailed-exitcode")[0] == 0


def test_unmanaged_rows_and_functions_are_never_touched(owui, bundle, recorder, capsys, tmp_path: Path) -> None:
    foreign_row = {
        "id": "team-gpt",
        "base_model_id": "gpt-4o",
        "name": "Team GPT",
        "meta": {"description": "admin's"},
        "params": {},
    }
    foreign_fn = (REPO / "owui_functions" / "aihub_feature_filter.py").read_text()
    with owui.client() as http:
        http.post("/api/v1/models/create", json=foreign_row).raise_for_status()
        http.post(
            "/api/v1/functions/create",
            json={"id": "admin_filter", "name": "Admin", "content": foreign_fn, "meta": {"description": ""}},
        ).raise_for_status()
    before_rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert provision(capsys, "sync", *bundle, "--prune")[0] == 0
    rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert rows["team-gpt"] == before_rows["team-gpt"]
    assert "admin_filter" in {f["id"] for f in get(owui, "/api/v1/functions/export")}
    assert not any(("team-gpt" in p or "admin_filter" in p) for _, p in recorder.writes)


def test_a_row_with_our_id_but_no_marker_stops_sync_before_any_write(owui, bundle, recorder, capsys) -> None:
    model_id = "aihub_agent_pipe.policy-faq.default"
    with owui.client() as http:
        http.post(
            "/api/v1/models/create", json={"id": model_id, "name": "Hand made", "meta": {}, "params": {}}
        ).raise_for_status()
    code, _, err = provision(capsys, "sync", *bundle)
    assert code == 1 and "not managed by provision" in err and model_id in err
    assert recorder.writes == []
    assert get(owui, "/api/v1/models/model", id=model_id)["name"] == "Hand made"


def test_prune_removes_a_dropped_blueprint_and_nothing_else(owui, bundle, recorder, capsys, tmp_path: Path) -> None:
    assert provision(capsys, "sync", *bundle)[0] == 0
    smaller = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints", smaller)
    (smaller / "support_desk.yaml").unlink()
    args = ["-p", str(smaller), "--bundle", bundle[3]]
    code, out, err = provision(capsys, "sync", *args)
    # without --prune the rows are only reported, not deleted, and the pipe keeps serving them
    assert code == 0 and "No changes." in out and "--prune" in err and "still served by the pipe" in err
    assert len(get(owui, "/api/v1/models/all")) == 6
    code, out, _ = provision(capsys, "sync", *args, "--prune")
    # the rows go, and their entries leave the pipe's AGENTS valve
    assert code == 0 and "0 to add, 1 to change, 3 to destroy" in out and "valves.AGENTS[support-desk.tier1]" in out
    remaining = {r["id"] for r in get(owui, "/api/v1/models/all")}
    assert remaining == SAMPLE_MODELS - {m for m in SAMPLE_MODELS if ".support-desk." in m}
    assert len(get(owui, "/api/v1/functions/export")) == 7  # bundle (2) + toggles (5)


def test_group_access_is_resolved_by_name_and_a_missing_group_changes_nothing(
    owui, recorder, capsys, tmp_path: Path
) -> None:
    with owui.client() as http:
        group = http.post("/api/v1/groups/create", json={"name": "Legal", "description": ""}).raise_for_status().json()
    agents = [{"id": "counsel", "name": "Counsel", "access": {"groups": ["Legal"]}}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    functions = write_function_dir(tmp_path / "fn", root)
    args = ["-p", str(root), "--bundle", str(functions)]
    assert provision(capsys, "sync", *args)[0] == 0
    row = get(owui, "/api/v1/models/model", id="aihub_agent_pipe.legal.counsel")
    assert [(g["principal_type"], g["principal_id"]) for g in row["access_grants"]] == [("group", group["id"])]

    agents[0]["access"] = {"groups": ["Legal", "Compliance"]}
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    recorder.clear()
    code, _, err = provision(capsys, "sync", *args)
    assert code == 1
    assert "legal.yaml:" in err and "agents[0].access.groups[1]: no group named 'Compliance'" in err
    assert recorder.writes == []


class TestChatThroughOpenWebUI:
    """Real chat completions: what reaches the agent after the feature filter and toggle filters."""

    @pytest.fixture
    def synced(self, chat_rig: ChatRig) -> ChatRig:
        return chat_rig

    def test_native_toggles_are_stripped_and_only_supported_requests_count(self, synced) -> None:
        seen = chat(
            synced,
            "aihub_agent_pipe.support-desk.tier2",
            features={"web_search": True, "image_generation": True, "code_interpreter": True, "memory": True},
        )
        assert seen.forwarded == ["web_search"]  # image_generation and code_interpreter are not supported
        assert {
            k: v
            for k, v in seen.features.items()
            if k in ("web_search", "image_generation", "code_interpreter", "memory")
        } == {"web_search": False, "image_generation": False, "code_interpreter": False, "memory": False}
        # stripped in place: the dict Open WebUI reads from the metadata later is this one
        assert seen.observed["features_is_metadata_features"] is True

    def test_web_search_sent_to_an_agent_without_it_never_counts(self, synced) -> None:
        seen = chat(
            synced,
            "aihub_agent_pipe.policy-faq.default",
            features={"web_search": True},
            extra={"params": {"function_calling": "legacy"}},
        )
        assert seen.forwarded == [] and seen.requested == []
        assert seen.features["web_search"] is False

    def test_toggle_filter_adds_its_feature_only_when_in_filter_ids(self, synced) -> None:
        model = "aihub_agent_pipe.document-analyst.default"
        assert chat(synced, model, features={}).forwarded == []
        assert chat(synced, model, features={}, filter_ids=["aihub_toggle_user_files"]).forwarded == ["user_files"]

    def test_a_toggle_for_a_feature_the_model_lacks_does_nothing(self, synced) -> None:
        seen = chat(
            synced,
            "aihub_agent_pipe.policy-faq.default",
            features={},
            filter_ids=["aihub_toggle_user_files", "aihub_toggle_deep_research"],
        )
        assert seen.forwarded == [] and seen.requested == []

    def test_several_features_together(self, synced) -> None:
        seen = chat(
            synced,
            "aihub_agent_pipe.support-desk.tier2",
            features={"web_search": True},
            filter_ids=["aihub_toggle_deep_research", "aihub_toggle_user_files"],
        )
        assert seen.forwarded == ["web_search", "deep_research"]


def test_parallel_sync_converges_like_a_sequential_one(owui, bundle, recorder, capsys) -> None:
    code, out, _ = provision(capsys, "sync", *bundle, "--parallelism", "4")
    assert code == 0, out
    assert {r["id"] for r in get(owui, "/api/v1/models/all")} == SAMPLE_MODELS
    recorder.clear()
    assert provision(capsys, "sync", *bundle, "--parallelism", "4")[0] == 0
    assert recorder.writes == []
