"""provision dump: rows in, blueprint files out, and back through the loader unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from provisioner.desired import PIPE_FUNCTION_ID, build_desired
from provisioner.dump import DumpSelectionError, dump_rows, select_rows, write_dump
from provisioner.errors import ProvisionError
from provisioner.loader import load_catalog
from provisioner.state import set_path
from provisioner.toggle_filters import rendered_toggle_functions

SAMPLES = Path(__file__).resolve().parents[2] / "blueprints"
GROUPS = {"g1": "Support"}


def _instance(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """The rows and functions a sync of `root` leaves on an instance (as Open WebUI lists them)."""
    catalog = load_catalog(root)
    toggles = rendered_toggle_functions(catalog)
    desired = build_desired(catalog, toggles, groups={v: k for k, v in GROUPS.items()})
    models = []
    for state in desired.models.values():
        raw: dict[str, Any] = {"id": state.id}
        for path, value in state.fields.items():
            if path == "access_grants":
                raw["access_grants"] = value
            else:
                set_path(raw, path, value)
        models.append(raw)
    functions = [
        {"id": f.id, "name": f.name, "meta": {"description": f.description}, "content": f.content} for f in toggles
    ]
    functions.append({"id": PIPE_FUNCTION_ID, "valves": {"AGENTS": _agents(catalog)}})
    return models, functions, desired


def _agents(catalog: Any) -> str:
    from provisioner.desired import agent_backends

    return json.dumps(
        [e for lb in catalog.blueprints for e in agent_backends(lb)], ensure_ascii=False, separators=(",", ":")
    )


def _round_trip(models: list[dict[str, Any]], functions: list[dict[str, Any]], tmp_path: Path) -> Any:
    dumped = dump_rows(select_rows(models, []), functions, GROUPS)
    write_dump(tmp_path / "out", dumped)
    catalog = load_catalog(tmp_path / "out")
    return (
        dumped,
        catalog,
        build_desired(catalog, rendered_toggle_functions(catalog), groups={v: k for k, v in GROUPS.items()}),
    )


def test_samples_round_trip_with_no_change(tmp_path: Path) -> None:
    models, functions, desired = _instance(SAMPLES)
    dumped, catalog, again = _round_trip(models, functions, tmp_path)
    assert {r.id: r.not_expressed for r in dumped.rows} == {m: [] for m in desired.models}
    assert dumped.adopting == []
    for ident, state in desired.models.items():
        assert dict(again.models[ident].fields) == dict(state.fields), ident
    assert _agents(catalog) == _agents(load_catalog(SAMPLES))  # the pipe's AGENTS valve, byte for byte
    toggles = {f.id: f.content for f in rendered_toggle_functions(load_catalog(SAMPLES))}
    assert {f.id: f.content for f in rendered_toggle_functions(catalog)} == toggles
    assert (tmp_path / "out" / "icons").is_dir()  # data-URI icons became files the loader reads back


def _hand_made(**meta: Any) -> dict[str, Any]:
    return {
        "id": "aihub_agent_pipe.helpdesk.first",
        "name": "Helpdesk",
        "base_model_id": None,
        "meta": {"description": "Answers IT questions.", **meta},
        "access_grants": [{"principal_type": "group", "principal_id": "g1", "permission": "read"}],
    }


PIPE = {
    "id": PIPE_FUNCTION_ID,
    "valves": {
        "AGENTS": json.dumps(
            [
                {
                    "id": "helpdesk.first",
                    "transport": "openai",
                    "url": "https://llm.example/v1",
                    "model": "gpt-x",
                    "api_key": "HELPDESK_KEY",
                    "key_from": "server",
                }
            ]
        ),
        "API_KEYS": json.dumps({"HELPDESK_KEY": "sk-secret-value"}),
    },
}


def test_hand_made_row_fields_and_backend_key_name_only(tmp_path: Path) -> None:
    row = _hand_made(
        tags=[{"name": "IT"}],
        suggestion_prompts=[{"title": ["Reset", "my password"], "content": "How do I reset my password?"}],
        profile_image_url="https://cdn.example/helpdesk.png",
        filterIds=["aihub_toggle_web_search"],
        defaultFilterIds=["aihub_toggle_web_search"],
    )
    dumped = dump_rows(select_rows([row], []), [PIPE], GROUPS)
    assert dumped.adopting == ["aihub_agent_pipe.helpdesk.first"]
    text = dumped.files["helpdesk.yaml"].decode()
    assert "sk-secret-value" not in text and "sk-secret" not in b"".join(dumped.files.values()).decode()
    doc = yaml.safe_load(text)
    agent = doc["agents"][0]
    assert doc["backend"] == {
        "transport": "openai",
        "url": "https://llm.example/v1",
        "model": "gpt-x",
        "api_key_env": "HELPDESK_KEY",
        "api_key_from": "server",
    }
    assert agent == {
        "id": "first",
        "name": "Helpdesk",
        "description": "Answers IT questions.",
        "icon": "https://cdn.example/helpdesk.png",
        "access": {"groups": ["Support"]},
        "defaults": ["web_search"],
        "tags": ["IT"],
        "suggestions": [{"title": "Reset", "subtitle": "my password", "prompt": "How do I reset my password?"}],
    }
    caps = yaml.safe_load(dumped.files["capabilities.yaml"])["capabilities"]
    assert caps["web_search"]["serves"] == "web_search" and doc["steps"][0]["calls"] == ["web_search"]
    write_dump(tmp_path, dumped)
    catalog = load_catalog(tmp_path)
    desired = build_desired(catalog, [], groups={"Support": "g1"}, env={})
    fields = desired.models["aihub_agent_pipe.helpdesk.first"].fields
    assert fields["meta.tags"] == row["meta"]["tags"]
    assert fields["meta.suggestion_prompts"] == row["meta"]["suggestion_prompts"]
    assert fields["access_grants"] == row["access_grants"]
    assert fields["meta.defaultFilterIds"] == ["aihub_toggle_web_search"]


def test_what_cannot_be_expressed_is_reported_per_row() -> None:
    row = _hand_made(
        profile_image_url="/static/favicon.png", defaultFeatureIds=["web_search"], capabilities={"memory": True}
    )
    row["access_grants"] = [
        {"principal_type": "user", "principal_id": "u7", "permission": "read"},
        {"principal_type": "group", "principal_id": "gone", "permission": "read"},
        {"principal_type": "group", "principal_id": "g1", "permission": "write"},
    ]
    row["is_active"] = False
    dumped = dump_rows([row], [], GROUPS)
    notes = " | ".join(dumped.rows[0].not_expressed)
    for expected in (
        "/static/favicon.png",
        "defaultFeatureIds",
        "memory",
        "user u7",
        "group id gone",
        "write grant",
        "is_active",
        "no backend",
    ):
        assert expected in notes
    assert yaml.safe_load(dumped.files["helpdesk.yaml"])["agents"][0]["access"] == "private"


def test_selection_refuses_non_agents_and_unknown_names() -> None:
    rows = [
        _hand_made(),
        {"id": "gpt-4o", "meta": {}},
        {"id": "my-wrapper", "base_model_id": "aihub_agent_pipe.helpdesk.first"},
    ]
    assert [r["id"] for r in select_rows(rows, [])] == ["aihub_agent_pipe.helpdesk.first"]
    assert [r["id"] for r in select_rows(rows, ["aihub_agent_pipe.*"])] == ["aihub_agent_pipe.helpdesk.first"]
    with pytest.raises(DumpSelectionError) as info:
        select_rows(rows, ["gpt-4o", "my-wrapper", "nothing*"])
    message = str(info.value)
    assert "plain model row" in message and "base model" in message and "nothing*" in message


def test_an_id_no_blueprint_can_make_is_not_written() -> None:
    dumped = dump_rows([{"id": "aihub_agent_pipe.Single", "meta": {}}], [], GROUPS)
    assert dumped.files == {} and "not written" in dumped.rows[0].not_expressed[0]


def test_existing_files_stop_the_dump_before_any_write(tmp_path: Path) -> None:
    dumped = dump_rows([_hand_made()], [PIPE], GROUPS)
    (tmp_path / "helpdesk.yaml").write_text("mine\n")
    with pytest.raises(ProvisionError, match="wrote nothing"):
        write_dump(tmp_path, dumped)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["helpdesk.yaml"]
    assert (tmp_path / "helpdesk.yaml").read_text() == "mine\n"
    write_dump(tmp_path, dumped, force=True)
    assert (tmp_path / "helpdesk.yaml").read_bytes() == dumped.files["helpdesk.yaml"]


@pytest.mark.parametrize(
    "row",
    [
        {"id": "aihub_agent_pipe.helpdesk.first\n", "meta": {}},  # `$` matches before a trailing newline
        {"id": "aihub_agent_pipe.helpdesk\n.first", "meta": {}},
        {
            "id": "aihub_agent_pipe.x.y",
            "meta": {"aihub": {"managed_by": "aihub-provision", "blueprint": "helpdesk\n", "agent": "first"}},
        },
        {
            "id": "aihub_agent_pipe.x.y",
            "meta": {"aihub": {"managed_by": "aihub-provision", "blueprint": "helpdesk", "agent": "first\n"}},
        },
        {
            "id": "aihub_agent_pipe.x.y",
            "meta": {"aihub": {"managed_by": "aihub-provision", "blueprint": "../up", "agent": "first"}},
        },
    ],
)
def test_a_name_with_a_newline_or_a_slash_never_becomes_a_file_name(row: dict[str, Any]) -> None:
    dumped = dump_rows([row], [], GROUPS)
    assert dumped.files == {} and "not written" in dumped.rows[0].not_expressed[0]


@pytest.mark.parametrize("feature", ["web_search\n", "../../escape", "web/search"])
def test_a_toggle_name_no_blueprint_can_make_is_reported_and_makes_no_file(feature: str) -> None:
    icon = (
        "data:image/png;base64,"
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    marker = {"managed_by": "aihub-provision", "blueprint": "helpdesk", "agent": "first", "features": [feature]}
    row = {"id": "aihub_agent_pipe.helpdesk.first", "meta": {"aihub": marker}}
    toggle = {"id": "aihub_toggle_" + feature, "name": "T", "content": f"        self.icon = {icon!r}\n"}
    dumped = dump_rows([row], [toggle], GROUPS)
    assert all(name.count("/") <= 1 and "\n" not in name and ".." not in name for name in dumped.files), dumped.files
    assert set(dumped.files) <= {"helpdesk.yaml", "capabilities.yaml", "features.yaml"}
    assert any(feature.strip() in note for note in dumped.rows[0].not_expressed)
    assert feature not in yaml.safe_load(dumped.files["helpdesk.yaml"])["steps"][0]["calls"]


def test_write_dump_refuses_a_file_name_outside_the_directory(tmp_path: Path) -> None:
    from provisioner.dump import Dumped

    for name in ("../escape.yaml", "/abs.yaml", "icons/a\n.png", "icons/../../x.png", "a\\b.yaml"):
        with pytest.raises(ProvisionError, match="wrote nothing"):
            write_dump(tmp_path / "out", Dumped({"ok.yaml": b"x", name: b"y"}, []))
        assert not (tmp_path / "out").exists() and not (tmp_path / "escape.yaml").exists()


def test_translations_round_trip_on_agents_and_custom_toggles(tmp_path: Path) -> None:
    """A sample agent and the custom features carry i18n (issue 30): dump writes it back whole."""
    from provisioner.toggle_filters import toggle_translations

    models, functions, desired = _instance(SAMPLES)
    translations = toggle_translations(load_catalog(SAMPLES))
    for function in functions:
        for locale, text in translations.get(function["id"], {}).items():
            function["meta"].setdefault("i18n", {})[locale] = dict(text)
    research = "aihub_agent_pipe.research-assistant.default"
    assert {k for k in desired.models[research].fields if k.startswith("meta.i18n.de.")} == {
        "meta.i18n.de.name",
        "meta.i18n.de.description",
        "meta.i18n.de.suggestion_prompts",
    }
    dumped, catalog, again = _round_trip(models, functions, tmp_path)
    assert dict(again.models[research].fields) == dict(desired.models[research].fields)
    custom = {
        k: v
        for k, v in toggle_translations(catalog).items()
        if k in ("aihub_toggle_user_files", "aihub_toggle_deep_research")
    }
    assert (
        custom == {k: translations[k] for k in custom}
        and custom["aihub_toggle_user_files"]["de"]["name"] == "Meine Dateien"
    )
    # A tag no blueprint can hold is reported, not written.
    row = next(m for m in models if m["id"] == research)
    row["meta"]["i18n"]["de_ch"] = {"name": "Recherche"}
    report = next(r for r in dump_rows(select_rows(models, []), functions, GROUPS).rows if r.id == research)
    assert any("de_ch" in line and "write 'de-CH'" in line for line in report.not_expressed)
