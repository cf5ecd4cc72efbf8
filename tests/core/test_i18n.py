"""Translations from the blueprint land as Open WebUI 0.12's `meta.i18n` (issue 30). Pure.

The shape is the one Open WebUI 0.12.4's chat page reads (src/lib/utils/localizedContent.ts):
`meta.i18n[locale].name`, `.description`, `.suggestion_prompts` on a model row, `.name` and
`.description` on a function row; it tries the user's locale, then its first subtag, then the
default text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from provisioner.desired import build_desired
from provisioner.errors import BlueprintError
from provisioner.features import NATIVE_TOGGLES
from provisioner.loader import load_catalog
from provisioner.locales import locale_problem
from provisioner.openwebui.compat import select
from provisioner.openwebui.observed import observe
from provisioner.pipeline import translation_notes
from provisioner.plan import Action, make_plan, remerge_model_form
from provisioner.state import InstanceState
from provisioner.text import first_hidden
from provisioner.toggle_filters import rendered_toggle_functions, toggle_translations
from provisioner.toggle_translations import NATIVE_TOGGLE_TRANSLATIONS
from tests.support.builders import blueprint, write_blueprint_dir

CARDS = [
    {"title": "Order status", "subtitle": "by number", "prompt": "Where is order 1?"},
    {"title": "Refund", "prompt": "Refund order 2"},
]
DE = {
    "name": "Kundendienst",
    "description": "Hilft bei Bestellungen.",
    "suggestions": [
        {"title": "Bestellstatus", "subtitle": "nach Nummer", "prompt": "Wo ist Bestellung 1?"},
        {"title": "Erstattung", "prompt": "Erstatte Bestellung 2"},
    ],
}
FR = {"name": "Service client"}
AGENT = "aihub_agent_pipe.desk.default"


def desk(tmp_path: Path, agent_i18n: Any = None, **extra: Any) -> Path:
    agent: dict[str, Any] = {
        "id": "default",
        "name": "Support desk",
        "access": "public",
        "description": "Helps with orders.",
    }
    if agent_i18n is not None:
        agent["i18n"] = agent_i18n
    bp = blueprint("desk", agents=[agent], suggestions=CARDS, calls=["summarise", "web_research"], **extra)
    features = {
        "features": {
            "user_files": {
                "title": "My files",
                "description": "Your uploads",
                "i18n": {"de": {"title": "Meine Dateien"}},
            }
        }
    }
    return write_blueprint_dir(tmp_path / "bp", [bp], features=features)


def state(root: Path, i18n: bool = True) -> InstanceState:
    catalog = load_catalog(root)
    return build_desired(
        catalog, rendered_toggle_functions(catalog), groups=None, translations=toggle_translations(catalog), i18n=i18n
    )


def synced(desired: InstanceState) -> InstanceState:
    """The instance after a sync of `desired` onto an empty one: the create bodies as rows."""
    plan = make_plan(desired, InstanceState())
    models = [dict(c.body or {}, is_active=True) for c in plan.changes if c.kind == "model"]
    functions = [dict(c.body or {}, is_active=True, is_global=False) for c in plan.changes if c.kind == "function"]
    return observe(models, functions)


def test_an_agents_translations_land_in_open_webuis_shape(tmp_path: Path) -> None:
    fields = state(desk(tmp_path, {"de": DE, "fr": FR})).models[AGENT].fields
    i18n = {k: v for k, v in fields.items() if k.startswith("meta.i18n.")}
    assert i18n == {
        "meta.i18n.de.name": "Kundendienst",
        "meta.i18n.de.description": "Hilft bei Bestellungen.",
        "meta.i18n.de.suggestion_prompts": [
            {"title": ["Bestellstatus", "nach Nummer"], "content": "Wo ist Bestellung 1?"},
            {"title": ["Erstattung", ""], "content": "Erstatte Bestellung 2"},
        ],
        "meta.i18n.fr.name": "Service client",  # the rest falls back to the default
    }
    body = make_plan(state(desk(tmp_path, {"de": DE, "fr": FR})), InstanceState()).changes
    row = next(c.body for c in body if c.id == AGENT)
    assert row is not None and row["meta"]["i18n"]["fr"] == {"name": "Service client"}
    assert row["meta"]["description"] == "Helps with orders." and row["name"] == "Support desk"


def test_a_blueprints_translations_go_to_agents_that_take_its_text(tmp_path: Path) -> None:
    agents: list[dict[str, Any]] = [
        {"id": "plain", "name": "Plain", "access": "public"},
        {"id": "own", "name": "Own", "access": "public", "description": "Mine.", "suggestions": [CARDS[0]]},
    ]
    bp = blueprint(
        "desk",
        agents=agents,
        suggestions=CARDS,
        i18n={"de": {"description": "Ein Schreibtisch.", "suggestions": DE["suggestions"]}},
    )
    models = state(write_blueprint_dir(tmp_path / "bp", [bp])).models
    plain = models["aihub_agent_pipe.desk.plain"].fields
    assert plain["meta.i18n.de.description"] == "Ein Schreibtisch."
    assert len(plain["meta.i18n.de.suggestion_prompts"]) == 2
    # An agent with its own description and suggestions is not given a translation of other text.
    own = models["aihub_agent_pipe.desk.own"]
    assert not [k for k in own.fields if k.startswith("meta.i18n.")] and own.owned_maps == {"meta.i18n"}


def test_the_bundles_toggles_and_a_custom_feature_carry_their_translations(tmp_path: Path) -> None:
    functions = state(desk(tmp_path, {"de": DE})).functions
    web = functions["aihub_toggle_web_search"].fields
    assert (web["meta.i18n.de.name"], web["meta.i18n.de.description"]) == ("Websuche", "Das Internet durchsuchen")
    assert web["meta.i18n.fr.name"] == "Recherche Web" and web["meta.i18n.it.name"] == "Ricerca sul Web"
    files = functions["aihub_toggle_user_files"].fields
    assert files["meta.i18n.de.name"] == "Meine Dateien" and "meta.i18n.de.description" not in files


def test_the_native_toggle_table_is_open_webuis_words_under_standard_tags() -> None:
    assert set(NATIVE_TOGGLE_TRANSLATIONS) == set(NATIVE_TOGGLES)
    for feature, table in NATIVE_TOGGLE_TRANSLATIONS.items():
        assert {"de", "fr", "it"} <= set(table), feature
        for locale, entry in table.items():
            assert locale_problem(locale) is None, locale
            assert entry and set(entry) <= {"name", "description"}
            for text in entry.values():
                assert text.strip() and first_hidden(text) is None and len(text) <= 80
                assert text not in (NATIVE_TOGGLES[feature].title, NATIVE_TOGGLES[feature].description)


def test_a_synced_row_plans_nothing_and_one_locales_field_is_one_field_change(tmp_path: Path) -> None:
    live = synced(state(desk(tmp_path, {"de": DE, "fr": FR})))
    assert make_plan(state(desk(tmp_path, {"de": DE, "fr": FR})), live).is_empty
    changed = make_plan(state(desk(tmp_path, {"de": {**DE, "name": "Kundenservice"}, "fr": FR})), live)
    (change,) = changed.changes
    assert change.id == AGENT and change.action is Action.UPDATE
    assert [(f.path, f.before, f.after) for f in change.fields] == [
        ("meta.i18n.de.name", "Kundendienst", "Kundenservice")
    ]
    assert change.body is not None and change.body["meta"]["i18n"]["de"]["name"] == "Kundenservice"


def test_a_dropped_locale_is_removed_from_the_row_and_an_admins_other_keys_stay(tmp_path: Path) -> None:
    live = synced(state(desk(tmp_path, {"de": DE, "fr": FR})))
    raw = dict(live.models[AGENT].raw or {})
    raw["meta"] = {
        **raw["meta"],
        "i18n": {**raw["meta"]["i18n"], "fr": {"name": "Service client", "model_controls.x.label": "X"}},
    }
    live = observe(
        [raw, *(m.raw or {} for i, m in live.models.items() if i != AGENT)],
        [f.raw or {} for f in live.functions.values()],
    )
    plan = make_plan(state(desk(tmp_path, {"de": DE})), live)
    (change,) = plan.changes
    assert [(f.path, f.before, f.after) for f in change.fields] == [("meta.i18n.fr.name", "Service client", None)]
    assert change.body is not None and change.body["meta"]["i18n"]["fr"] == {"model_controls.x.label": "X"}
    assert remerge_model_form(raw, change)["meta"]["i18n"]["fr"] == {"model_controls.x.label": "X"}
    # `i18n: {}` owns the translations and removes them all; no `i18n` at all leaves them alone.
    (cleared,) = make_plan(state(desk(tmp_path, {})), live).changes
    assert {f.path for f in cleared.fields} == {
        "meta.i18n.de.name",
        "meta.i18n.de.description",
        "meta.i18n.de.suggestion_prompts",
        "meta.i18n.fr.name",
    }
    assert make_plan(state(desk(tmp_path)), live).is_empty


def test_before_open_webui_0_12_only_the_default_language_is_written_with_one_note(tmp_path: Path) -> None:
    old = state(desk(tmp_path, {"de": DE, "fr": FR}), i18n=False)
    assert not [
        k for obj in (*old.models.values(), *old.functions.values()) for k in obj.fields if k.startswith("meta.i18n")
    ]
    catalog = load_catalog(desk(tmp_path, {"de": DE}))
    (note,) = translation_notes(catalog, select("0.11.4"))
    assert "1 agent, 1 custom feature" in note and "0.12" in note and "0.11.4" in note
    assert translation_notes(catalog, select("0.12.4")) == []
    assert translation_notes(load_catalog(write_blueprint_dir(tmp_path / "plain")), select("0.11.4")) == []


@pytest.mark.parametrize(
    ("i18n", "field", "message"),
    [
        ({"de-ch": FR}, "agents[0].i18n.de-ch", "write 'de-CH'"),
        ({"xx-yy-zz": FR}, "agents[0].i18n.xx-yy-zz", "not a BCP 47 language tag"),
        (
            {"de": {"suggestions": DE["suggestions"][:1]}},
            "agents[0].i18n.de.suggestions",
            "1 suggestions, where the blueprint's",
        ),
        ({"de": {"name": "Kunden\u202edienst"}}, "agents[0].i18n.de.name", "U+202E"),
        ({"de": {"name": "x" * 256}}, "agents[0].i18n.de.name", "too long"),
        ({"de": {"title": "x"}}, "agents[0].i18n.de.title", "unknown field"),
        ({False: FR}, "agents[0].i18n.false", "quote it"),  # YAML reads `no:` (Norwegian) as false
    ],
)
def test_bad_translations_name_the_field(tmp_path: Path, i18n: Any, field: str, message: str) -> None:
    with pytest.raises(BlueprintError) as info:
        load_catalog(desk(tmp_path, i18n))
    found = [(p.field, p.message) for p in info.value.problems]
    assert any(f == field and message in m for f, m in found), found
    assert all(p.line for p in info.value.problems)


def test_a_translated_field_must_exist_in_the_default(tmp_path: Path) -> None:
    agent = {"id": "default", "name": "A", "access": "public", "i18n": {"de": {"description": "Beschreibung"}}}
    bp = blueprint("desk", agents=[agent], description="", i18n={"de": {"suggestions": DE["suggestions"]}})
    features = {"features": {"user_files": {"title": "My files", "i18n": {"de": {"description": "Ihre Dateien"}}}}}
    with pytest.raises(BlueprintError) as info:
        load_catalog(write_blueprint_dir(tmp_path / "bp", [bp], features=features))
    fields = sorted(p.field for p in info.value.problems)
    assert fields == ["agents[0].i18n.de.description", "features.user_files.i18n.de.description", "i18n.de.suggestions"]


@pytest.mark.parametrize(
    "text", ["```\n</details>\n\n<img src=x>\n```", "a | b || c @octocat [go](https://e.example) <b>x</b>"]
)
def test_hostile_translations_leave_a_markdown_plan_its_shape(tmp_path: Path, text: str) -> None:
    from provisioner.render_markdown import render_markdown
    from tests.support.markdown_support import Shape, github_html

    def shape(words: str) -> Shape:
        de = {"description": words, "suggestions": [{"title": "T", "prompt": words}, {"title": "U", "prompt": "p"}]}
        plan = make_plan(state(desk(tmp_path / words[:1].replace("/", "_"), {"de": de})), InstanceState())
        return Shape(github_html(render_markdown(plan.to_json(), target="t")))

    hostile, harmless = shape(text), shape("x")
    assert hostile.tags == harmless.tags
    assert not {"img", "a"} & set(hostile.tags) and "@" not in "".join(hostile.outside)


def test_a_text_plan_folds_many_translated_fields_into_one_line_and_shows_a_few_each(tmp_path: Path) -> None:
    """Upgrading to a provision that translates the bundle's toggles: 120 fields per toggle are one line."""
    import io

    from rich.console import Console

    from provisioner.render import render_plan

    desired = state(desk(tmp_path, {"de": DE, "fr": FR}))
    untranslated = state(desk(tmp_path, {"de": DE, "fr": FR}), i18n=False)
    live = synced(untranslated)
    plan = make_plan(desired, live)
    web = next(c for c in plan.changes if c.id == "aihub_toggle_web_search")
    assert len(web.fields) == sum(map(len, NATIVE_TOGGLE_TRANSLATIONS["web_search"].values()))  # each in the JSON form
    out = io.StringIO()
    render_plan(plan.to_json(), Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert (
        f"meta.i18n  {len(web.fields)} translated fields in {len(NATIVE_TOGGLE_TRANSLATIONS['web_search'])} languages change"
        in text
    )
    assert "meta.i18n.de.name" in text and "Kundendienst" in text  # the agent's few fields, each on its line
    assert "meta.i18n.ja.name" not in text


def test_a_markdown_plan_folds_many_translated_fields_as_the_text_plan_does(tmp_path: Path) -> None:
    """A pull request comment for the upgrade that translates the bundle's toggles: one row per
    toggle counts its translations, instead of 120 rows each."""
    from provisioner.render_markdown import render_markdown

    live = synced(state(desk(tmp_path, {"de": DE, "fr": FR}), i18n=False))
    plan = make_plan(state(desk(tmp_path, {"de": DE, "fr": FR})), live)
    markdown = render_markdown(plan.to_json(), target="t")
    web = next(c for c in plan.changes if c.id == "aihub_toggle_web_search")
    languages = len(NATIVE_TOGGLE_TRANSLATIONS["web_search"])
    assert f"| `meta.i18n.*` | | {len(web.fields)} translated fields in {languages} languages change" in markdown
    assert "meta.i18n.ja.name" not in markdown and "`meta.i18n.de.name`" in markdown  # the agent's few, each a row
    assert f"Field changes: {sum(len(c.fields) for c in plan.changes)} in" in markdown  # the count keeps them all
