"""GitHub's Markdown renderer (cmark-gfm, raw HTML passed through as GitHub passes it before
sanitising) and what a rendered plan holds: tags, code text, text outside code, table widths."""

from __future__ import annotations

from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

# A row description from issue 23: with two-backtick fences it became an image, a link, a
# mention and a closed <details> in GitHub.
PAYLOAD = "x``<img src=https://e.example/p.png>@octocat [go](https://e.example)</details>``"


def github_html(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class Shape(HTMLParser):
    """The tags of a rendered document, the text inside <code>, and the text outside it."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.codes: list[str] = []
        self.outside: list[str] = []
        self.tables: list[list[int]] = []  # per table, the cell count of each row
        self._in_code = 0
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append(0)
        elif tag in ("td", "th"):
            self.tables[-1][-1] += 1
        if tag == "code":
            self._in_code += 1
            self.codes.append("")

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)
        if tag == "code":
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        if self._in_code:
            self.codes[-1] += data
        else:
            self.outside.append(data)
