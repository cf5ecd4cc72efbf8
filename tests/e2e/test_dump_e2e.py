"""Through a real Open WebUI 0.12.4: `provision dump` round trips (dump, validate, diff: no change).

On the sample instance nothing changes at all; a hand-made agent row comes back so that
`diff --adopt` changes only what taking ownership sets (the marker and provision's own fields).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from provisioner.dump import OWNED_PATHS
from tests.support.chat_support import SAMPLE_MODELS, get, provision

HAND_MADE = "aihub_agent_pipe.helpdesk.first"


def _functions(bundle: list[str]) -> list[str]:
    return bundle[2:]  # --bundle DIR, without the samples' -p


def test_dump_of_the_sample_instance_round_trips_with_no_change(owui, bundle, tmp_path: Path, capsys) -> None:
    code, _, err = provision(capsys, "sync", *bundle, "--yes")
    assert code == 0, err
    out_dir = tmp_path / "dumped"
    code, out, err = provision(capsys, "dump", "--out", str(out_dir), "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert {r["id"] for r in report["rows"]} == set(SAMPLE_MODELS)
    assert all(r["owned"] and r["not_expressed"] == [] for r in report["rows"]), report["rows"]
    # the translations came back from the rows (issue 30): the research assistant's and the custom toggles'
    dumped = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in out_dir.glob("*.yaml")}
    research = next(d for d in dumped.values() if isinstance(d, dict) and d.get("id") == "research-assistant")
    assert research["agents"][0]["i18n"]["de"]["name"] == "Recherche-Assistent"
    agent = research["agents"][0]
    cards = agent.get("suggestions") or research.get("suggestions") or []
    assert len(agent["i18n"]["fr"]["suggestions"]) == len(cards) == 3
    assert dumped["features.yaml"]["features"]["user_files"]["i18n"]["fr"]["title"] == "Mes fichiers"
    code, out, err = provision(capsys, "validate", "-p", str(out_dir), *_functions(bundle))
    assert code == 0 and "Valid:" in out, err
    code, out, err = provision(capsys, "diff", "-p", str(out_dir), *_functions(bundle), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["changes"] == []

    # A second dump into the same folder refuses and writes nothing; --force replaces.
    before = {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
    code, _, err = provision(capsys, "dump", "--out", str(out_dir))
    assert code == 1 and "wrote nothing" in err
    assert {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()} == before
    code, _, err = provision(capsys, "dump", "--out", str(out_dir), "--force")
    assert code == 0, err


def test_dump_of_a_hand_made_row_changes_only_ownership(owui, bundle, tmp_path: Path, capsys) -> None:
    code, _, err = provision(capsys, "sync", *bundle, "--yes")
    assert code == 0, err
    meta = {
        "description": "Answers IT questions.",
        "tags": [{"name": "IT"}],
        "suggestion_prompts": [{"title": ["Reset", "my password"], "content": "How do I reset my password?"}],
        "filterIds": ["aihub_toggle_web_search"],
        "defaultFilterIds": ["aihub_toggle_web_search"],
    }
    row = {
        "id": HAND_MADE,
        "base_model_id": None,
        "name": "Helpdesk",
        "meta": meta,
        "params": {},
        "access_grants": [{"principal_type": "user", "principal_id": "*", "permission": "read"}],
    }
    entry = {
        "id": "helpdesk.first",
        "name": "Helpdesk",
        "transport": "openai",
        "url": "http://127.0.0.1:8799/v1",
        "model": "helpdesk-model",
        "api_key": "HELPDESK_KEY",
        "key_from": "server",
        "features": ["web_search"],
        "reads": [],
        "identity": "auto",
        "oauth_token_header": None,
    }
    with owui.client() as http:
        http.post("/api/v1/models/create", json=row).raise_for_status()
        valves = http.get("/api/v1/functions/id/aihub_agent_pipe/valves").raise_for_status().json()
        agents = json.loads(valves["AGENTS"])
        valves["AGENTS"] = json.dumps([*agents, entry], ensure_ascii=False, separators=(",", ":"))
        http.post("/api/v1/functions/id/aihub_agent_pipe/valves/update", json=valves).raise_for_status()

    out_dir = tmp_path / "dumped"
    code, out, err = provision(capsys, "dump", "--out", str(out_dir), "-o", "json", "aihub_agent_pipe.*")
    assert code == 0, err
    report = json.loads(out)
    assert report["adopt"] == [f"model/{HAND_MADE}"]
    assert f"{HAND_MADE}: " in err and "--adopt" in err
    doc = yaml.safe_load((out_dir / "helpdesk.yaml").read_text())
    assert doc["backend"] == {
        "transport": "openai",
        "url": "http://127.0.0.1:8799/v1",
        "model": "helpdesk-model",
        "api_key_env": "HELPDESK_KEY",
        "api_key_from": "server",
    }
    assert doc["agents"][0]["access"] == "public" and doc["agents"][0]["defaults"] == ["web_search"]

    code, out, err = provision(capsys, "validate", "-p", str(out_dir), *_functions(bundle))
    assert code == 0, err
    code, out, err = provision(
        capsys, "diff", "-p", str(out_dir), *_functions(bundle), "-o", "json", "--adopt", f"model/{HAND_MADE}"
    )
    assert code == 0, err
    changes = {(c["kind"], c["id"]): c for c in json.loads(out)["changes"]}
    # The pipe lists agents in blueprint order, so the hand-wired entry (appended) only moves.
    pipe = changes.pop(("function", "aihub_agent_pipe"))
    assert [f["path"] for f in pipe["fields"]] == ["valves.AGENTS"], pipe
    before, after = (json.loads(pipe["fields"][0][k]) for k in ("before", "after"))
    assert sorted(before, key=lambda e: e["id"]) == sorted(after, key=lambda e: e["id"]) and before != after
    assert list(changes) == [("model", HAND_MADE)], changes
    paths = [f["path"] for f in changes[("model", HAND_MADE)]["fields"]]
    assert "meta.aihub" in paths
    assert all(p.startswith(OWNED_PATHS) for p in paths), paths  # no name, description, tags, access...

    # After the adopting sync the row is owned and the same dump round trips with no change.
    code, _, err = provision(
        capsys, "sync", "-p", str(out_dir), *_functions(bundle), "--yes", "--adopt", f"model/{HAND_MADE}"
    )
    assert code == 0, err
    assert get(owui, "/api/v1/models/model", id=HAND_MADE)["meta"]["tags"] == [{"name": "IT"}]
    code, out, err = provision(capsys, "diff", "-p", str(out_dir), *_functions(bundle), "-o", "json")
    assert code == 0 and json.loads(out)["changes"] == [], out
