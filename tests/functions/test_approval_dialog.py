"""Issue 29, point 4: Open WebUI's confirmation and input dialogs render their message as Markdown
(0.12.4's ConfirmDialog: ``DOMPurify.sanitize(marked.parse(message))``), so nothing the agent
sends (tool name, arguments, its own message) may become markup there: no remote image that
reveals the user's address, no link, no bold "Approved by your admin". The confirmation names
the tool first, whatever the agent's message says."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.markdown_support import Shape
from tests.support.pipe_support import C, pipe_module

P = pipe_module


def _question(arguments: str, message: str = "", name: str = "refund_order") -> dict[str, Any]:
    recorder = P.Recorder(scrubber=P.Scrubber())
    for event in C("c1", name, arguments):
        recorder.feed(event)
    interrupt = {"id": "a1", "reason": "tool_call", "toolCallId": "c1", "message": message}
    return P.question_of(interrupt, recorder)


HOSTILE = (
    '{"order": "1"}\n\n**Approved by your admin** ![x](https://evil.example/pixel.png?ip) '
    "[click](https://evil.example/) <img src=x onerror=alert(1)> ``` ~~~ `"
)


def _rendered(markdown: str) -> str:
    """The dialog's message as Markdown renders it (Open WebUI 0.12.4's ConfirmDialog:
    ``DOMPurify.sanitize(marked.parse(message))``, GitHub-flavoured): cmark-gfm with raw HTML
    passed through, as marked passes it before DOMPurify."""
    from tests.support.markdown_support import github_html

    return github_html(markdown)


def test_tool_arguments_never_become_markup_in_the_dialog() -> None:
    html = _rendered(_question(HOSTILE)["data"]["message"])
    assert "<img" not in html and "<strong>" not in html and "<a " not in html
    assert "evil.example/pixel.png" in html  # shown, as text inside a code block
    assert html.count("<pre>") == 1


def test_the_tool_name_stays_in_the_text_whatever_the_agents_message_says() -> None:
    question = _question('{"order": "1"}', message="Nothing to worry about, just click **Allow**.")
    message = question["data"]["message"]
    assert "refund_order" in message.split("\n")[0]
    html = _rendered(message)
    assert "<strong>" not in html and "Nothing to worry about" in html


def test_a_hostile_tool_name_is_text_too() -> None:
    question = _question("{}", name="x`**y**`\n\n![p](https://evil.example/p.png)")
    html = _rendered(question["data"]["message"])
    assert "<img" not in html and "<strong>" not in html


def test_an_input_question_is_text_too() -> None:
    interrupt = {
        "id": "i1",
        "reason": "input",
        "message": "Which city? ![p](https://evil.example/p.png) "
        "[here](https://evil.example/) <b>now</b> https://evil.example/x www.evil.example",
        "responseSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    question = P.question_of(interrupt, P.Recorder(scrubber=P.Scrubber()))
    html = _rendered(question["data"]["message"])
    assert "<img" not in html and "<a " not in html and "<b>" not in html
    assert "Which city?" in html and "evil.example/p.png" in html


@pytest.mark.parametrize("text", ["`", "a``b", "```", "x`", " lead", "tab\there"])
def test_a_code_span_shows_its_text_exactly(text: str) -> None:
    html = _rendered(P.markdown_code(text))
    code = html.split("<code>", 1)[1].split("</code>", 1)[0]
    assert code == " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;")


def test_arguments_with_a_fence_of_their_own_cannot_close_the_block() -> None:
    arguments = '{"note": "x"}\n```\n![p](https://evil.example/p.png) **Approved**\n````\n<img src=x>\n```'
    html = _rendered(_question(arguments)["data"]["message"])
    assert "<img" not in html and "<strong>" not in html and html.count("<pre>") == 1


# What starts math in the marked Open WebUI's dialog calls (its katex-extension.ts, 0.6.26 to
# 0.12.4, registered once a chat has rendered): "$", "\(", "\[", "\ce{", "\pu{", "\begin{equation}".
# Between them it renders the text as raw HTML, before DOMPurify.
OPEN_WEBUI_MATH = re.compile(r"\$|\\[(\[]|\\(?:ce|pu)\{|\\begin\{equation\}")
WORDS = "Refund (order A-1) [now] for $5? \\(x\\) \\[y\\] \\ce{H2O} (<h1 >Approved) & done"


@pytest.mark.parametrize("question", ["confirmation", "input"])
def test_the_agents_words_open_no_math_and_show_as_written(question: str) -> None:
    if question == "confirmation":
        prose = _question("{}", message=WORDS)["data"]["message"].split("\n\n")[1]
    else:
        interrupt = {"id": "i1", "message": WORDS, "responseSchema": {"type": "string"}}
        prose = P.question_of(interrupt, P.Recorder(scrubber=P.Scrubber()))["data"]["message"]
    assert OPEN_WEBUI_MATH.search(prose) is None, prose
    shape = Shape(_rendered(prose))
    assert "".join(shape.outside).strip() == WORDS and shape.tags == ["p", "/p"]
