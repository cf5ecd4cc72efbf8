"""`provision explain`: why each toggle shows (capability and calling step, with file and line),
why each other feature does not, what the row will say, and what an instance adds (issue 31)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from provisioner.doctor import Facts
from provisioner.errors import ConfigError
from provisioner.explain import explain_agent, find_agent, instance_notes
from provisioner.loader import load_catalog

CAPABILITIES = """\
capabilities:
  web_research:
    serves: web_search
  search_again:
    serves: web_search
  sandbox:
    serves: code_interpreter
  read_docs:
    reads: [documents]
  drive:
    serves: user_files
  summarise:
"""
FEATURES = """\
features:
  user_files:
    title: My files
  deep_research:
    title: Deep research
"""
DESK = """\
id: desk
name: Desk
backend:
  url: http://127.0.0.1:9/agui
steps:
  - id: look
    calls: [web_research]
  - id: read
    calls:
      - read_docs
      - search_again
  - id: sum
    calls: [summarise]
agents:
  - id: one
    name: One
    access:
      groups: [Support]
    defaults: [web_search]
  - id: two
    name: Two
"""
OTHER = """\
id: other
name: Other
backend:
  url: http://127.0.0.1:9/agui
steps:
  - id: only
    calls: [drive]
agents:
  - id: one
    name: Other one
    access: public
"""

TEAM = """\
id: team
name: Team
backend:
  url: http://127.0.0.1:9/agui
steps:
  - id: only
    calls: [summarise]
agents:
  - id: crew
    name: Crew
    access:
      groups: [Empty, Ghosts]
"""


@pytest.fixture
def catalog(tmp_path: Path):
    for name, text in {
        "capabilities.yaml": CAPABILITIES,
        "features.yaml": FEATURES,
        "desk.yaml": DESK,
        "other.yaml": OTHER,
        "team.yaml": TEAM,
    }.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return load_catalog(tmp_path)


def test_each_toggle_names_its_capabilities_and_the_steps_that_call_them_with_lines(catalog, tmp_path) -> None:
    explained = explain_agent(catalog, "desk.one")
    [toggle] = explained["toggles"]
    assert toggle["feature"] == "web_search" and toggle["native"] and toggle["filter"] == "aihub_toggle_web_search"
    assert toggle["on_by_default"] is True
    desk, caps = str(tmp_path / "desk.yaml"), str(tmp_path / "capabilities.yaml")
    assert toggle["served_by"] == [
        {
            "capability": "search_again",
            "at": {"file": caps, "line": 4},
            "steps": [{"step": "read", "file": desk, "line": 11}],
        },
        {
            "capability": "web_research",
            "at": {"file": caps, "line": 2},
            "steps": [{"step": "look", "file": desk, "line": 7}],
        },
    ]
    assert (explained["file"], explained["line"]) == (desk, 15)


def test_each_feature_not_shown_says_why(catalog, tmp_path) -> None:
    why = {item["feature"]: item["why"] for item in explain_agent(catalog, "desk.one")["not_shown"]}
    assert set(why) == {"code_interpreter", "image_generation", "user_files", "deep_research"}
    assert why["image_generation"].startswith("no capability in capabilities.yaml serves image_generation")
    assert why["deep_research"].startswith("no capability in capabilities.yaml serves deep_research")
    assert (
        f"served by sandbox ({tmp_path / 'capabilities.yaml'}:6), but no step of blueprint desk"
        in why["code_interpreter"]
    )
    assert "drive" in why["user_files"] and "add it to a step's `calls`" in why["user_files"]


def test_the_row_says_what_sync_writes_and_why(catalog) -> None:
    row = explain_agent(catalog, "desk.one")["row"]
    assert row["meta.capabilities"]["file_upload"] is True and row["meta.capabilities"]["web_search"] is False
    assert row["why_capabilities"]["file_upload"] == "the agent reads documents (capability read_docs)"
    assert "no retrieval" in row["why_capabilities"]["file_context"]
    assert row["why_capabilities"]["web_search"].startswith("always off on agent rows")
    assert row["meta.filterIds"] == ["aihub_feature_filter", "aihub_toggle_web_search"]
    assert row["meta.defaultFilterIds"] == ["aihub_toggle_web_search"]
    assert row["access"] == "the members of Support (and admins)" and row["groups"] == ["Support"]
    assert explain_agent(catalog, "desk.two")["row"]["access"] == "private: admins only"
    assert explain_agent(catalog, "other")["row"]["access"] == "public: every user of the instance"


def test_an_agent_is_found_by_key_model_id_agent_id_or_blueprint(catalog) -> None:
    assert find_agent(catalog, "aihub_agent_pipe.desk.two").key == "desk.two"
    assert find_agent(catalog, "two").key == "desk.two"
    assert find_agent(catalog, "other").key == "other.one"
    with pytest.raises(ConfigError, match=r"'one' names 2 agents \(desk.one, other.one\)"):
        find_agent(catalog, "one")
    with pytest.raises(ConfigError, match=r"no agent 'desk.tow' .*did you mean 'desk.two'"):
        find_agent(catalog, "desk.tow")
    with pytest.raises(ConfigError, match="names 2 agents"):
        find_agent(catalog, "desk")  # a blueprint with two agents names neither


def facts(**overrides) -> Facts:
    functions = [
        {"id": "aihub_agent_pipe", "is_active": True, "is_global": False},
        {"id": "aihub_feature_filter", "is_active": True, "is_global": False},
        {"id": "aihub_toggle_web_search", "is_active": False, "is_global": False},
    ]
    values: dict[str, Any] = dict(
        version="0.12.4",
        release_problem=None,
        tested=True,
        functions=functions,
        pipe_by_id=None,
        models=[
            {"id": "aihub_agent_pipe.desk.one", "is_active": True},
            {"id": "mine", "name": "My desk", "base_model_id": "aihub_agent_pipe.desk.one"},
        ],
        groups=[{"id": "g1", "name": "Support", "permissions": {"chat": {"file_upload": False}}}],
        default_permissions={"chat": {"file_upload": False}},
        retrieval={"web": {"ENABLE_WEB_SEARCH": False}},
        native_switches={"web_search": False, "image_generation": True, "code_interpreter": None},
    )
    values.update(overrides)
    return Facts(**values)


def test_the_instance_adds_inactive_toggles_groups_without_uploads_wrappers_and_switched_off_natives(catalog) -> None:
    notes = [n["note"] for n in instance_notes(explain_agent(catalog, "desk.one"), facts())]
    assert "aihub_toggle_web_search is inactive: its toggle does not show on any agent" in notes
    assert (
        "group 'Support' lacks the chat.file_upload permission: its members see no attach button for this agent"
        in notes
    )
    assert any(n.startswith("workspace model mine (My desk) wraps this agent") for n in notes)
    assert any("Open WebUI's own Web Search is switched off" in n and "shows anyway" in n for n in notes)
    assert len(notes) == 4, notes
    # each finding to act on says what to do, and comes before the news (a native feature switched off)
    found = instance_notes(explain_agent(catalog, "desk.one"), facts())
    assert [bool(n.get("fix")) for n in found] == [True, True, True, False], found
    assert "allow File Upload in the permissions of group 'Support'" in found[1]["fix"] + found[2]["fix"]


def test_the_instance_says_functions_off_and_a_missing_row(catalog) -> None:
    off = instance_notes(explain_agent(catalog, "desk.one"), facts(functions=[], pipe_by_id={"id": "aihub_agent_pipe"}))
    assert [n["about"] for n in off] == ["functions"]
    notes = [n["note"] for n in instance_notes(explain_agent(catalog, "desk.two"), facts(models=[]))]
    assert notes[0] == "the instance has no row for this agent yet: nobody sees it"


def test_groups_that_give_the_agent_to_nobody_are_named_whatever_it_reads(catalog) -> None:
    """An agent that reads no files: a group missing or without members still leaves its users
    without it; users' upload permissions are not its concern."""
    groups = [{"id": "g2", "name": "Empty", "member_count": 0, "permissions": None}]
    rows = [{"id": "aihub_agent_pipe.team.crew", "is_active": True}]
    notes = instance_notes(explain_agent(catalog, "team.crew"), facts(groups=groups, models=rows))
    assert [(n["about"], n["note"]) for n in notes] == [
        ("Empty", "group 'Empty' has no members: nobody gets the agent through it"),
        ("Ghosts", "group 'Ghosts' does not exist on the instance: nobody gets the agent through it"),
    ]
    assert all(n["fix"] for n in notes)
    # the group's own permissions unset and the default off: its members may not upload either
    unset = [{"id": "g1", "name": "Support", "member_count": 3, "permissions": None}]
    said = [n["note"] for n in instance_notes(explain_agent(catalog, "desk.one"), facts(groups=unset))]
    assert any("group 'Support' lacks the chat.file_upload permission" in n for n in said), said
    # a private agent is the admins', who may always upload
    assert not any("upload" in n["note"] for n in instance_notes(explain_agent(catalog, "desk.two"), facts()))


def test_it_says_where_the_agents_chats_go_and_with_which_key(tmp_path: Path) -> None:
    """After the toggles, a newcomer asks where a chat goes: the URL and transport, the key's
    variable (never its value) and who reads it, each agent's override with its own line."""
    from provisioner.render_explain import explain_lines

    (tmp_path / "capabilities.yaml").write_text("capabilities:\n  summarise:\n", encoding="utf-8")
    (tmp_path / "weather.yaml").write_text(
        textwrap.dedent(
            """\
            id: weather
            name: Weather
            backend:
              url: http://127.0.0.1:8810/agent
              api_key_env: WEATHER_AGENT_KEY
            steps:
              - id: answer
                calls: [summarise]
            agents:
              - id: one
                name: One
              - id: two
                name: Two
                backend:
                  transport: openai
                  url: http://127.0.0.1:8811/v1
                  api_key_from: server
            """
        ),
        encoding="utf-8",
    )
    catalog = load_catalog(tmp_path)
    one, two = explain_agent(catalog, "weather.one"), explain_agent(catalog, "weather.two")
    path = str(tmp_path / "weather.yaml")
    assert one["backend"] == {
        "transport": "agui",
        "url": "http://127.0.0.1:8810/agent",
        "model": None,
        "api_key_env": "WEATHER_AGENT_KEY",
        "api_key_from": "sync",
        "identity": "auto",
        "oauth_token_header": None,
        "insecure": False,
        "file": path,
        "line": 3,
    }
    assert explain_lines(one)[-4:] == [
        "Its backend (`provision doctor` says whether Open WebUI reaches it):",
        f"  AG-UI at http://127.0.0.1:8810/agent ({path}:3)",
        "  key: $WEATHER_AGENT_KEY (api_key_env), read where provision sync runs; sent as Authorization: Bearer",
        "  about the user: what Open WebUI's settings allow (identity: auto)",
    ]
    assert explain_lines(two)[-3:-1] == [
        f"  OpenAI-compatible at http://127.0.0.1:8811/v1, model weather.two ({path}:14)",
        "  key: $WEATHER_AGENT_KEY (api_key_from: server), read by the Open WebUI server at chat time; "
        "sent as Authorization: Bearer",
    ]
