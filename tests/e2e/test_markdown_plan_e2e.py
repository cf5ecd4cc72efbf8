"""A row description edited on the real Open WebUI cannot inject Markdown into the plan.

Anyone who can edit a row (an admin, or a leaked key) controls the "before" column of the plan
a pull request shows. The edited text is the issue 23 payload; the plan `diff -o markdown`
prints is rendered with GitHub's renderer (cmark-gfm) and must hold it only as code.
"""

from __future__ import annotations

from typing import Any

from tests.support.chat_support import provision
from tests.support.markdown_support import PAYLOAD, Shape, github_html

ROW = "aihub_agent_pipe.policy-faq.default"


def test_a_description_edited_on_the_instance_renders_as_code_in_the_markdown_plan(owui, bundle, capsys) -> None:
    assert provision(capsys, "sync", "--yes", *bundle)[0] == 0
    with owui.client() as http:
        row: dict[str, Any] = http.get("/api/v1/models/model", params={"id": ROW}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
        form["meta"] = {**form["meta"], "description": PAYLOAD}
        http.post("/api/v1/models/model/update", json=form).raise_for_status()
    code, out, err = provision(capsys, "diff", "-o", "markdown", "--detailed-exitcode", *bundle)
    assert code == 2, err
    assert f"#### model `{ROW}`" in out
    shape = Shape(github_html(out))
    assert not {"img", "a"} & set(shape.tags)
    assert shape.tags.count("details") == shape.tags.count("/details") == 0
    assert "@" not in "".join(shape.outside)
    # the payload's dangerous parts are there, as code: the before column of the description
    assert any("<img src=https://e.example/p.png>" in c for c in shape.codes), shape.codes
    assert any("</details>" in c for c in shape.codes), shape.codes
    # no cell added to any row: objects, field changes, and "Changed in Open WebUI" (who edited it)
    assert [set(rows) for rows in shape.tables] == [{4}, {3}, {4}]
