"""docs/blueprints.md's field reference is generated from the schema's field descriptions.

scripts/blueprint-reference renders one table per model of provisioner/blueprints.py; this fails
when the committed section differs from a fresh render (a field added, a description changed)
or when a field has no description.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.loading import load_file

ROOT = Path(__file__).resolve().parents[2]
reference = load_file(ROOT / "scripts" / "blueprint-reference", "blueprint_reference")


def test_the_field_reference_in_docs_blueprints_md_is_fresh() -> None:
    page = reference.DOC.read_text(encoding="utf-8")
    assert reference.with_reference(page, reference.render()) == page, "run scripts/blueprint-reference"


def test_every_field_of_every_blueprint_model_has_a_description() -> None:
    assert reference.missing_descriptions() == []


def test_every_model_and_field_of_the_schema_is_in_the_reference() -> None:
    page = reference.DOC.read_text(encoding="utf-8")
    for _, root in reference.ROOTS:
        for model in reference.models_under(root):
            assert f"### {model.__name__}\n" in page
            for name in model.model_fields:
                assert f"| `{name}` |" in page


def test_a_changed_description_makes_the_section_stale(monkeypatch) -> None:
    page = reference.DOC.read_text(encoding="utf-8")
    field = reference.blueprints.Agent.model_fields["defaults"]
    monkeypatch.setattr(field, "description", "Something else.")
    assert reference.with_reference(page, reference.render()) != page
