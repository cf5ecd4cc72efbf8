"""Which agents take files follows from the capabilities they call (`reads`); what the pipe tells
each backend about the user (`identity`, `oauth_token_header`) is written into its AGENTS entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from provisioner.desired import build_desired
from provisioner.errors import BlueprintError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.owui_capabilities import model_capabilities
from tests.support.builders import CAPABILITIES, REPO, blueprint, write_blueprint_dir

READERS: dict[str, Any] = {
    "capabilities": {
        **CAPABILITIES["capabilities"],
        "read_docs": {"reads": ["documents"]},
        "read_images": {"reads": "images"},  # one input may be written without the list
    }
}


def _desired(root: Path):
    return build_desired(load_catalog(root), load_function_files(REPO / "owui_functions"), groups=None)


def _caps(state, bp: str, agent: str = "default") -> dict[str, bool]:
    fields = state.models[f"aihub_agent_pipe.{bp}.{agent}"].fields
    return {k.removeprefix("meta.capabilities."): v for k, v in fields.items() if k.startswith("meta.capabilities.")}


def _entries(state) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in json.loads(state.functions["aihub_agent_pipe"].fields["valves.AGENTS"])}


def test_capabilities_that_read_give_their_agents_the_inputs_with_no_second_declaration(tmp_path: Path) -> None:
    root = write_blueprint_dir(
        tmp_path,
        [
            blueprint("docs", calls=["summarise", "read_docs"]),
            blueprint("pics", calls=["read_images"]),
            blueprint("both", calls=["read_docs", "read_images"]),
            blueprint("plain", calls=["summarise"]),
        ],
        capabilities=READERS,
    )
    state = _desired(root)
    pick = ("file_upload", "file_context", "vision")
    assert {bp: tuple(_caps(state, bp)[k] for k in pick) for bp in ("docs", "pics", "both", "plain")} == {
        "docs": (True, False, False),  # the attach button, and no retrieval by Open WebUI
        "pics": (False, False, True),
        "both": (True, False, True),
        "plain": (False, False, False),
    }
    entries = _entries(state)
    assert {i: e["reads"] for i, e in entries.items()} == {
        "docs.default": ["documents"],
        "pics.default": ["images"],
        "both.default": ["documents", "images"],
        "plain.default": [],
    }


def test_openwebui_capabilities_still_override_what_reads_derives(tmp_path: Path) -> None:
    root = write_blueprint_dir(
        tmp_path,
        [
            blueprint("docs", calls=["read_docs"], openwebui_capabilities={"file_upload": False}),
            blueprint("ctx", calls=["read_docs"], openwebui_capabilities={"file_context": True}),
            blueprint("pics", calls=["read_images"], openwebui_capabilities={"file_upload": True}),
        ],
        capabilities=READERS,
    )
    state = _desired(root)
    assert _caps(state, "docs")["file_upload"] is False
    assert _caps(state, "ctx")["file_context"] is True and _caps(state, "ctx")["file_upload"] is True
    assert (_caps(state, "pics")["file_upload"], _caps(state, "pics")["vision"]) == (True, True)
    assert _entries(state)["docs.default"]["reads"] == ["documents"]  # the agent still reads them


def test_model_capabilities_keeps_the_always_off_keys_off_whatever_is_read() -> None:
    values = model_capabilities([], {}, reads=["documents", "images"])
    assert (values["memory"], values["builtin_tools"], values["web_search"]) == (False, False, False)


@pytest.mark.parametrize(
    ("calls", "overrides", "refused"),
    [
        (["summarise"], {"file_upload": True}, ["openwebui_capabilities.file_upload"]),
        (
            ["summarise"],
            {"vision": True, "file_upload": True},
            ["openwebui_capabilities.vision", "openwebui_capabilities.file_upload"],
        ),
        (["read_docs"], {"vision": True}, ["openwebui_capabilities.vision"]),
        (["read_images"], {"file_upload": True}, []),  # images come through the attach button too
        (["read_docs"], {"file_upload": True}, []),  # says what reads derives already: allowed
        (["summarise"], {"file_upload": False, "vision": False}, []),
    ],
)
def test_validate_refuses_uploads_that_no_capability_reads(
    tmp_path: Path, calls: list[str], overrides: dict[str, bool], refused: list[str]
) -> None:
    root = write_blueprint_dir(
        tmp_path, [blueprint("demo", calls=calls, openwebui_capabilities=overrides)], capabilities=READERS
    )
    if not refused:
        load_catalog(root)
        return
    with pytest.raises(BlueprintError) as info:
        load_catalog(root)
    assert sorted(p.field for p in info.value.problems) == sorted(refused)
    assert all(p.file.endswith("demo.yaml") and p.line for p in info.value.problems)


def test_identity_and_oauth_header_go_into_each_agents_entry_overrides_included(tmp_path: Path) -> None:
    bp = blueprint(
        "desk",
        agents=[
            {"id": "a", "name": "A"},
            {"id": "b", "name": "B", "backend": {"identity": "none"}},
            {"id": "c", "name": "C", "backend": {"oauth_token_header": "X-Drive-Token"}},
        ],
    )
    bp["backend"].update({"identity": "signed", "url": "https://agents.example.com/desk"})
    entries = _entries(_desired(write_blueprint_dir(tmp_path, [bp])))
    assert {i: (e["identity"], e["oauth_token_header"]) for i, e in entries.items()} == {
        "desk.a": ("signed", None),
        "desk.b": ("none", None),
        "desk.c": ("signed", "X-Drive-Token"),
    }


def test_identity_defaults_to_auto(tmp_path: Path) -> None:
    entries = _entries(_desired(write_blueprint_dir(tmp_path, [blueprint("desk")])))
    assert entries["desk.default"]["identity"] == "auto" and entries["desk.default"]["oauth_token_header"] is None


@pytest.mark.parametrize(
    ("url", "insecure", "ok"),
    [
        ("https://agents.example.com/x", False, True),
        ("http://127.0.0.1:8700/x", False, True),
        ("http://localhost:8700/x", False, True),
        ("http://[::1]:8700/x", False, True),
        ("http://10.1.2.3/x", True, False),  # insecure lets the key cross in clear, never the user's token
    ],
)
def test_the_oauth_token_goes_only_over_https_or_to_loopback(
    tmp_path: Path, url: str, insecure: bool, ok: bool
) -> None:
    bp = blueprint("desk")
    bp["backend"] = {"url": url, "oauth_token_header": "X-Drive-Token", **({"insecure": True} if insecure else {})}
    root = write_blueprint_dir(tmp_path, [bp])
    if ok:
        load_catalog(root)
        return
    with pytest.raises(BlueprintError) as info:
        load_catalog(root)
    [problem] = info.value.problems
    assert problem.field == "backend.oauth_token_header" and "https://" in problem.message


def test_an_agent_moving_to_plain_http_is_refused_the_oauth_token_it_inherits(tmp_path: Path) -> None:
    bp = blueprint("desk", agents=[{"id": "a", "name": "A", "backend": {"url": "http://10.1.2.3/a", "insecure": True}}])
    bp["backend"] = {"url": "https://agents.example.com/desk", "oauth_token_header": "X-Drive-Token"}
    with pytest.raises(BlueprintError) as info:
        load_catalog(write_blueprint_dir(tmp_path, [bp]))
    assert [p.field for p in info.value.problems] == ["agents[0].backend.oauth_token_header"]


def test_the_samples_document_analyst_reads_documents_and_says_so(tmp_path: Path) -> None:
    state = _desired(REPO / "blueprints")
    assert _caps(state, "document-analyst")["file_upload"] is True
    assert _entries(state)["document-analyst.default"]["reads"] == ["documents"]
    description = state.models["aihub_agent_pipe.document-analyst.default"].fields["meta.description"]
    assert "Attach a document" in description


def test_the_init_template_shows_reads(tmp_path: Path) -> None:
    from provisioner.scaffold import init_repo

    init_repo(tmp_path)
    state = _desired(tmp_path / "blueprints")
    caps = _caps(state, "it-helpdesk")
    assert (caps["file_upload"], caps["vision"]) == (True, True)
