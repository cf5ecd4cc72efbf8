"""`-o markdown` stays Markdown whatever text it holds, checked with GitHub's own renderer.

Ids, field values (the "before" column is whatever an admin wrote on the instance), versions,
orphan ids and error texts are all text someone else controls. Rendered by cmark-gfm (the
`cmarkgfm` package, with raw HTML passed through as GitHub passes it before sanitising), a plan
holding hostile text must have exactly the HTML shape of the same plan holding harmless text:
no image, no link, no mention outside code, no `</details>` closed early, no extra table cell.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner.render_markdown import MAX_OPEN_FIELDS, _code, render_markdown, result_markdown
from provisioner.text import visible
from tests.support.markdown_support import PAYLOAD, Shape, github_html

HOSTILE = [
    PAYLOAD,
    PAYLOAD + "`",
    "```\n</details>\n\n<img src=x>\n```",
    "a | b | c || d \\| e \\",
    "line one\nline two\r\n| --- | --- |\n# heading",
    "<details><summary>@octocat</summary>",
    "`` ` ```` `",
    " `leading and trailing` ",
    "[go](https://e.example) ![i](https://e.example/i.png) <https://e.example> www.e.example @octocat",
    "**bold** _em_ ~~strike~~ <b>html</b> &amp; &#64;octocat \\`",
    "\u202e reversed \x1b[31m ansi \x00 nul",
    "",
    "   ",
    "`",
]


def plan_with(text: str, fields: int = 2) -> dict[str, Any]:
    """A plan whose every outside-controlled string is `text`."""
    return {
        "format_version": "1",
        "summary": {"add": 1, "change": 2, "destroy": 0},
        "changes": [
            {"kind": "function", "id": f"f{text}", "action": "create", "fields": [], "global": True},
            {
                "kind": "function",
                "id": f"aihub{text}",
                "action": "update",
                "fields": [{"path": "content", "before": "sha256:1", "after": "sha256:2"}],
                "upgrade": {"from": f"0.1{text}", "to": f"0.2{text}"},
            },
            {
                "kind": "model",
                "id": text,
                "action": "update",
                "fields": [{"path": f"meta.{text}{i}", "before": text, "after": f"{text}{i}"} for i in range(fields)],
            },
        ],
        "orphans": [{"kind": "model", "id": text}],
    }


def result_with(text: str) -> dict[str, Any]:
    return {
        "applied": {"add": 1, "change": 0, "destroy": 0},
        "failed": [{"kind": "model", "id": text, "action": "update", "error": f"Open WebUI answered 400: {text}"}],
        "not_attempted": [{"kind": "model", "id": text, "action": "delete"}],
    }


def document(text: str, fields: int = 2) -> str:
    return render_markdown(plan_with(text, fields), target=f"t{text}") + result_markdown(result_with(text))


def assert_safe(text: str, fields: int = 2) -> None:
    hostile, harmless = Shape(github_html(document(text, fields))), Shape(github_html(document("x", fields)))
    assert hostile.tags == harmless.tags  # same tables, cells, headings, list items, <details>
    assert all(len(set(rows)) == 1 for rows in hostile.tables)  # every row as wide as the header
    assert not {"img", "a"} & set(hostile.tags)
    assert hostile.tags.count("details") == hostile.tags.count("/details")
    assert "@" not in "".join(hostile.outside)  # a mention pings only outside code


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_as_code_and_nothing_else(text: str) -> None:
    assert_safe(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_in_a_collapsed_plan_cannot_close_its_details(text: str) -> None:
    assert_safe(text, fields=MAX_OPEN_FIELDS + 1)
    assert "<details>" in document(text, MAX_OPEN_FIELDS + 1)


def test_the_issue_payload_is_one_code_span_with_its_text_intact() -> None:
    """The description from issue 23: before, `_code` fenced it with two backticks."""
    html = github_html(f"- {_code(PAYLOAD)}\n")
    shape = Shape(html)
    assert shape.tags == ["ul", "li", "code", "/code", "/li", "/ul"]
    assert shape.codes == [PAYLOAD]


def expected(text: str) -> str:
    return visible(text, keep="\r\n").replace("\r", " ").replace("\n", " ")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_exactly_one_code_span_in_a_table_cell_and_in_a_list(text: str) -> None:
    table = Shape(github_html(f"| a | b |\n|---|---|\n| {_code(text, cell=True)} | z |\n"))
    assert table.tags.count("td") == 2 and table.tags.count("code") == 1
    assert table.codes == [expected(text)]
    item = Shape(github_html(f"- {_code(text)}\n"))
    assert item.tags == ["ul", "li", "code", "/code", "/li", "/ul"]
    assert item.codes == [expected(text)]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("`|<>/@[]()!\\ \n*_~&#;:xd"), max_size=30))
def test_any_markdown_punctuation_leaves_the_plan_shape_unchanged(text: str) -> None:
    assert_safe(text)


def test_a_long_field_section_collapses_while_the_object_table_stays_open() -> None:
    """Three objects, but more than MAX_OPEN_FIELDS changed fields: only the field tables fold."""
    at_limit = render_markdown(plan_with("x", fields=MAX_OPEN_FIELDS - 1))  # + the function's content hash
    assert "<details>" not in at_limit and "#### model `x`" in at_limit
    text = render_markdown(plan_with("x", fields=MAX_OPEN_FIELDS))
    opened = text.index("<details>")
    assert text.count("<details>") == 1
    assert text[opened:].startswith(
        f"<details>\n<summary>Field changes: {MAX_OPEN_FIELDS + 1} in 2 updated objects</summary>\n\n#### function"
    )
    assert text.index("| + | function | `fx` | create") < opened  # the object table stays open
    assert text.index("</details>") > text.index(f"`meta.x{MAX_OPEN_FIELDS - 1}`")  # every field inside
    shape = Shape(github_html(text))
    assert shape.tags.count("details") == 1 and shape.tags.count("table") == 3
