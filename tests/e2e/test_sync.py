"""`provision` against a real Open WebUI 0.12.4: sync, idempotence, drift, ownership, prune, chat.

The CLI runs in-process through `main()`, with its HTTP client wrapped so each test can count
the requests it sends. The bundle is the real one (feature filter, toggle filters, agent pipe).
For the chat tests the agents run on the scripted AG-UI server (tests/agui_server), which
records every RunAgentInput: what reaches an agent is its `forwardedProps.features`. What Open
WebUI itself keeps after the filters (its `features` dict, which the agent never sees) is
written down by a test-only observer filter (tests/e2e/fixtures/observer_filter.py) that runs
after every filter of the bundle.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import provisioner.cli as cli
from provisioner.function_files import extract_frontmatter
from tests.builders import REPO, SAMPLE_MODEL_IDS, blueprint, write_blueprint_dir, write_function_dir
from tests.recording import Recorder, record_cli_requests

AGENT_PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
OBSERVER = Path(__file__).parent / "fixtures" / "observer_filter.py"
OBSERVER_ID = "zz_test_observer"
AGENT_ANSWER = "Hello from the scripted agent."  # the scripted agent's reply to a plain message
SAMPLE_MODELS = set(SAMPLE_MODEL_IDS)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    return record_cli_requests(monkeypatch)


@pytest.fixture
def owui(clean_openwebui, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENWEBUI_URL", clean_openwebui.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", clean_openwebui.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    return clean_openwebui


@pytest.fixture
def bundle(tmp_path: Path) -> list[str]:
    """The sample blueprints and a copy of the real function bundle (tests may edit the copy)."""
    functions = tmp_path / "functions"
    shutil.copytree(REPO / "owui_functions", functions, ignore=shutil.ignore_patterns("__pycache__"))
    return ["-p", str(REPO / "blueprints"), "--functions", str(functions)]


@pytest.fixture(scope="module")
def chat_bundle(tmp_path_factory: pytest.TempPathFactory, agui_server: Any) -> list[str]:
    """The sample blueprints with every backend on the scripted AG-UI server, and the real bundle:
    the feature filter, the toggle filters generated for these blueprints, the agent pipe.

    The agents keep the samples' features: policy-faq none, research-assistant web_search and
    code_interpreter, document-analyst user_files, support-desk web_search and deep_research.
    """
    tmp = tmp_path_factory.mktemp("chat-bundle")
    root = tmp / "blueprints"
    shutil.copytree(REPO / "blueprints", root)
    for path in root.glob("*.yaml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "agents" not in data:
            continue  # capabilities.yaml, features.yaml
        data["backend"] = {"transport": "agui", "url": agui_server.agent_url}
        for agent in data["agents"]:
            agent.pop("backend", None)
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    functions = write_function_dir(tmp / "functions", root, AGENT_PIPE)
    return ["-p", str(root), "--functions", str(functions)]


def provision(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def get(owui, path: str, **params: Any) -> Any:
    with owui.client() as http:
        return http.get(path, params=params).raise_for_status().json()


@dataclass
class Seen:
    """One chat request from both ends: what reached the agent and what Open WebUI kept."""

    run: dict[str, Any]  # the RunAgentInput the AG-UI server received
    observed: dict[str, Any]  # the observer's record, taken after every filter of the bundle ran

    @property
    def forwarded(self) -> list[str]:
        """The features the agent was asked for (`forwardedProps.features`)."""
        return self.run["forwardedProps"]["features"]

    @property
    def requested(self) -> Any:
        """`__metadata__["aihub_requested_features"]` after the filters: what the pipe reads."""
        return self.observed["requested"]

    @property
    def features(self) -> dict[str, Any]:
        """Open WebUI's own `features` dict after the filters: what it acts on afterwards."""
        return self.observed["features"]

    @property
    def model(self) -> str:
        return self.observed["model"]


@dataclass
class ChatRig:
    """A synced Open WebUI whose agents run on the scripted AG-UI server, the observer on."""

    owui: Any
    server: Any  # tests/agui_server/harness.py AguiServer
    log: Path  # the observer's JSON lines

    def client(self, **kwargs: Any) -> httpx.Client:
        return self.owui.client(**kwargs)

    def clear(self) -> None:
        self.server.clear()
        self.log.write_text("", encoding="utf-8")

    def observed(self) -> list[dict[str, Any]]:
        """The observer's records since `clear()`, Open WebUI's housekeeping tasks left out."""
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return [record for record in map(json.loads, filter(None, lines)) if not record.get("task")]

    def one_request(self) -> Seen:
        """The single agent run and the single observed request since `clear()`."""
        runs, observed = self.server.recorded(), self.observed()
        assert len(runs) == 1 and len(observed) == 1, (runs, observed)
        return Seen(runs[0], observed[0])


def install_observer(owui, log: Path) -> None:
    """Upload the observer filter: active, global (it runs for every model), writing to `log`."""
    form = {"id": OBSERVER_ID, "name": "Test observer", "content": OBSERVER.read_text(encoding="utf-8"),
            "meta": {"description": "e2e only"}}
    with owui.client() as http:
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        assert http.post(f"/api/v1/functions/id/{OBSERVER_ID}/toggle").raise_for_status().json()["is_active"]
        assert http.post(f"/api/v1/functions/id/{OBSERVER_ID}/toggle/global").raise_for_status().json()["is_global"]
        http.post(f"/api/v1/functions/id/{OBSERVER_ID}/valves/update", json={"path": str(log)}).raise_for_status()


@pytest.fixture
def chat_rig(owui, chat_bundle: list[str], agui_server: Any, tmp_path: Path, capsys) -> ChatRig:
    """The chat bundle synced, the observer installed, both records empty."""
    code, out, err = provision(capsys, "sync", *chat_bundle)
    assert code == 0, out + err
    rig = ChatRig(owui, agui_server, tmp_path / "observed.jsonl")
    install_observer(owui, rig.log)
    rig.clear()
    return rig


def chat(rig: ChatRig, model: str, *, features: dict | None = None, filter_ids: list[str] | None = None,
         extra: dict | None = None) -> Seen:
    """One API chat completion through the real pipe to the agent, seen from both ends."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": False}
    if features is not None:
        body["features"] = features
    if filter_ids is not None:
        body["filter_ids"] = filter_ids
    body.update(extra or {})
    rig.clear()
    with rig.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == AGENT_ANSWER, response.text
    seen = rig.one_request()
    assert seen.model == model
    return seen


def test_sync_from_empty_creates_every_row_and_function(owui, bundle, recorder, capsys) -> None:
    code, out, _ = provision(capsys, "sync", *bundle)
    assert code == 0, out
    rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert set(rows) == SAMPLE_MODELS
    row = rows["aihub_agent_pipe.research-assistant.default"]
    assert row["base_model_id"] is None
    assert row["meta"]["capabilities"]["web_search"] is True and row["meta"]["capabilities"]["memory"] is False
    assert row["meta"]["filterIds"] == ["aihub_feature_filter"]
    functions = {f["id"]: f for f in get(owui, "/api/v1/functions/export")}
    assert set(functions) == {"aihub_feature_filter", "aihub_toggle_deep_research", "aihub_toggle_user_files", "aihub_agent_pipe"}
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
    assert recorder.requests == [("GET", "/api/version"), ("GET", "/api/v1/models/all"), ("GET", "/api/v1/functions/export")]
    assert provision(capsys, "diff", *bundle, "--detailed-exitcode")[0] == 0


def test_hand_edit_of_a_managed_field_is_one_field_in_diff_and_reverted(owui, bundle, recorder, capsys) -> None:
    assert provision(capsys, "sync", *bundle)[0] == 0
    model_id = "aihub_agent_pipe.policy-faq.default"
    row = get(owui, "/api/v1/models/model", id=model_id)
    form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
    form["meta"]["capabilities"]["web_search"] = True  # managed: the agent has no web search
    form["meta"]["capabilities"]["admin_note"] = True  # an admin's own key
    form["meta"]["tags"] = [{"name": "finance"}]  # not ours
    form["params"] = {"system": "Be brief.", "temperature": 0.3}  # not ours
    with owui.client() as http:
        http.post("/api/v1/models/model/update", json=form).raise_for_status()

    code, out, _ = provision(capsys, "diff", *bundle, "-o", "json", "--detailed-exitcode")
    assert code == 2
    assert json.loads(out)["changes"] == [
        {"kind": "model", "id": model_id, "action": "update",
         "fields": [{"path": "meta.capabilities.web_search", "before": True, "after": False}]}
    ]
    assert provision(capsys, "sync", *bundle)[0] == 0
    after = get(owui, "/api/v1/models/model", id=model_id)
    assert after["meta"]["capabilities"]["web_search"] is False
    assert after["meta"]["capabilities"]["admin_note"] is True
    assert after["meta"]["tags"] == [{"name": "finance"}]
    assert after["params"]["system"] == "Be brief." and after["params"]["temperature"] == 0.3
    assert provision(capsys, "diff", *bundle, "--detailed-exitcode")[0] == 0


def test_unmanaged_rows_and_functions_are_never_touched(owui, bundle, recorder, capsys, tmp_path: Path) -> None:
    foreign_row = {"id": "team-gpt", "base_model_id": "gpt-4o", "name": "Team GPT", "meta": {"description": "admin's"}, "params": {}}
    foreign_fn = (REPO / "owui_functions" / "aihub_feature_filter.py").read_text()
    with owui.client() as http:
        http.post("/api/v1/models/create", json=foreign_row).raise_for_status()
        http.post("/api/v1/functions/create", json={"id": "admin_filter", "name": "Admin", "content": foreign_fn, "meta": {"description": ""}}).raise_for_status()
    before_rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert provision(capsys, "sync", *bundle, "--prune")[0] == 0
    rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert rows["team-gpt"] == before_rows["team-gpt"]
    assert "admin_filter" in {f["id"] for f in get(owui, "/api/v1/functions/export")}
    assert not any(("team-gpt" in p or "admin_filter" in p) for _, p in recorder.writes)


def test_a_row_with_our_id_but_no_marker_stops_sync_before_any_write(owui, bundle, recorder, capsys) -> None:
    model_id = "aihub_agent_pipe.policy-faq.default"
    with owui.client() as http:
        http.post("/api/v1/models/create", json={"id": model_id, "name": "Hand made", "meta": {}, "params": {}}).raise_for_status()
    code, _, err = provision(capsys, "sync", *bundle)
    assert code == 1 and "not managed by provision" in err and model_id in err
    assert recorder.writes == []
    assert get(owui, "/api/v1/models/model", id=model_id)["name"] == "Hand made"


def test_prune_removes_a_dropped_blueprint_and_nothing_else(owui, bundle, recorder, capsys, tmp_path: Path) -> None:
    assert provision(capsys, "sync", *bundle)[0] == 0
    smaller = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints", smaller)
    (smaller / "support_desk.yaml").unlink()
    args = ["-p", str(smaller), "--functions", bundle[3]]
    code, out, err = provision(capsys, "sync", *args)
    # the pipe stops serving the dropped agents (its AGENTS valve), but without --prune
    # their rows are only reported, not deleted
    assert code == 0 and "0 to destroy" in out and "--prune" in err
    assert len(get(owui, "/api/v1/models/all")) == 6
    code, out, _ = provision(capsys, "sync", *args, "--prune")
    assert code == 0 and "0 to add, 0 to change, 3 to destroy" in out
    remaining = {r["id"] for r in get(owui, "/api/v1/models/all")}
    assert remaining == SAMPLE_MODELS - {m for m in SAMPLE_MODELS if ".support-desk." in m}
    assert len(get(owui, "/api/v1/functions/export")) == 4


def test_group_access_is_resolved_by_name_and_a_missing_group_changes_nothing(owui, recorder, capsys, tmp_path: Path) -> None:
    with owui.client() as http:
        group = http.post("/api/v1/groups/create", json={"name": "Legal", "description": ""}).raise_for_status().json()
    agents = [{"id": "counsel", "name": "Counsel", "access": {"groups": ["Legal"]}}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    functions = write_function_dir(tmp_path / "fn", root)
    args = ["-p", str(root), "--functions", str(functions)]
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
        seen = chat(synced, "aihub_agent_pipe.research-assistant.default",
                    features={"web_search": True, "image_generation": True, "code_interpreter": True, "memory": True})
        assert seen.forwarded == ["code_interpreter", "web_search"]  # image_generation is not supported
        assert {k: v for k, v in seen.features.items() if k in ("web_search", "image_generation", "code_interpreter", "memory")} == {
            "web_search": False, "image_generation": False, "code_interpreter": False, "memory": False}
        # stripped in place: the dict Open WebUI reads from the metadata later is this one
        assert seen.observed["features_is_metadata_features"] is True

    def test_web_search_sent_to_an_agent_without_it_never_counts(self, synced) -> None:
        seen = chat(synced, "aihub_agent_pipe.policy-faq.default", features={"web_search": True},
                    extra={"params": {"function_calling": "legacy"}})
        assert seen.forwarded == [] and seen.requested == []
        assert seen.features["web_search"] is False

    def test_toggle_filter_adds_its_feature_only_when_in_filter_ids(self, synced) -> None:
        model = "aihub_agent_pipe.document-analyst.default"
        assert chat(synced, model, features={}).forwarded == []
        assert chat(synced, model, features={}, filter_ids=["aihub_toggle_user_files"]).forwarded == ["user_files"]

    def test_a_toggle_for_a_feature_the_model_lacks_does_nothing(self, synced) -> None:
        seen = chat(synced, "aihub_agent_pipe.policy-faq.default", features={},
                    filter_ids=["aihub_toggle_user_files", "aihub_toggle_deep_research"])
        assert seen.forwarded == [] and seen.requested == []

    def test_several_features_together(self, synced) -> None:
        seen = chat(synced, "aihub_agent_pipe.support-desk.tier2", features={"web_search": True},
                    filter_ids=["aihub_toggle_deep_research", "aihub_toggle_user_files"])
        assert seen.forwarded == ["web_search", "deep_research"]


def test_parallel_sync_converges_like_a_sequential_one(owui, bundle, recorder, capsys) -> None:
    code, out, _ = provision(capsys, "sync", *bundle, "--parallelism", "4")
    assert code == 0, out
    assert {r["id"] for r in get(owui, "/api/v1/models/all")} == SAMPLE_MODELS
    recorder.clear()
    assert provision(capsys, "sync", *bundle, "--parallelism", "4")[0] == 0
    assert recorder.writes == []
