"""Translations through a real Open WebUI 0.12.4 (issue 30): what lands in meta.i18n, a change to
one locale's field as one field of the diff, a dropped locale removed, and a second sync writing
nothing. What a user then sees is tests/e2e/test_browser_e2e.py's (in a real Chromium)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.support.builders import REPO
from tests.support.chat_support import get, provision

RESEARCH = "aihub_agent_pipe.research-assistant.default"


def samples(tmp_path: Path) -> Path:
    root = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints", root)
    return root


def edit_research(root: Path, change) -> None:
    path = root / "research_assistant.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(document["agents"][0]["i18n"])
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")


def test_translations_land_as_meta_i18n_and_one_locales_change_is_one_field(
    owui, bundle, recorder, capsys, tmp_path: Path
) -> None:
    root = samples(tmp_path)
    args = ["-p", str(root), *bundle[2:]]
    assert provision(capsys, "sync", *args)[0] == 0
    row = get(owui, "/api/v1/models/model", id=RESEARCH)
    de = row["meta"]["i18n"]["de"]
    assert de["name"] == "Recherche-Assistent" and de["description"].startswith("Recherchiert im Web")
    assert de["suggestion_prompts"][0] == {
        "title": ["Zwei Optionen vergleichen", "mit Quellen"],
        "content": "Vergleiche Wärmepumpen und Gasheizungen für ein kleines Büro, mit Quellen.",
    }
    assert set(row["meta"]["i18n"]["it"]) == {"name", "description"}  # the suggestions fall back
    web = get(owui, "/api/v1/functions/id/aihub_toggle_web_search")
    assert web["meta"]["i18n"]["de"] == {"name": "Websuche", "description": "Das Internet durchsuchen"}
    files = get(owui, "/api/v1/functions/id/aihub_toggle_user_files")
    assert files["meta"]["i18n"]["fr"]["name"] == "Mes fichiers"
    assert provision(capsys, "diff", *args, "--detailed-exitcode")[0] == 0

    edit_research(root, lambda i18n: i18n["de"].update(name="Rechercheassistent"))
    code, out, _ = provision(capsys, "diff", *args, "-o", "json", "--detailed-exitcode")
    assert code == 2
    assert json.loads(out)["changes"] == [
        {
            "kind": "model",
            "id": RESEARCH,
            "action": "update",
            "fields": [
                {
                    "path": "meta.i18n.de.name",
                    "before": "Recherche-Assistent",
                    "after": "Rechercheassistent",
                    "origin": "blueprint",
                }
            ],
        }
    ]

    # An admin's own key in a locale's entry survives the removal of that locale from the blueprint.
    form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
    form["meta"]["i18n"]["it"]["model_controls.effort.label"] = "Impegno"
    with owui.client() as http:
        http.post("/api/v1/models/model/update", json=form).raise_for_status()
    edit_research(root, lambda i18n: i18n.pop("it"))
    assert provision(capsys, "sync", *args)[0] == 0
    after = get(owui, "/api/v1/models/model", id=RESEARCH)["meta"]["i18n"]
    assert after["de"]["name"] == "Rechercheassistent" and after["it"] == {"model_controls.effort.label": "Impegno"}
    recorder.clear()
    code, out, _ = provision(capsys, "sync", *args)
    assert code == 0 and "No changes." in out and recorder.writes == []
