"""The Scrubber masks a key in every encoding a server may echo it in, whole or streamed in pieces.

The key holds the characters each encoding changes: `/` (kept by URL-encoding's default),
`&`, `"`, `<`, `'` (HTML), ` `, `+`, `=`, `%` (percent-encoding) and a non-ASCII letter (several
escapes per character).
"""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from tests.support.pipe_support import pipe_module

P = pipe_module
KEY = "sk/live&Zq\"8<w' +3=x%é"


def _hex_case(text: str, case: str) -> str:
    """Percent-escapes in lower case, or alternating (mixed: %2f%2F, %c3%A9)."""
    escapes = iter(range(1_000))

    def one(match: re.Match[str]) -> str:
        lower = case == "lower" or (case == "mixed" and next(escapes) % 2 == 0)
        return match.group(0).lower() if lower else match.group(0).upper()

    return re.sub(r"%[0-9A-Fa-f]{2}", one, text)


FORMS = {
    "raw": KEY,
    "url, / kept": quote(KEY),
    "url": quote(KEY, safe=""),
    "url, plus": quote_plus(KEY),
    **{
        f"url{kind}, {case} hex": _hex_case(encode, case)
        for kind, encode in (("", quote(KEY, safe="")), (", / kept", quote(KEY)), (", plus", quote_plus(KEY)))
        for case in ("lower", "mixed")
    },
    "json": json.dumps(KEY)[1:-1],
    "json, unicode": json.dumps(KEY, ensure_ascii=False)[1:-1],
    "html": html.escape(KEY),
    "html, quotes kept": html.escape(KEY, quote=False),
    "html, numeric quotes (markupsafe, Jinja)": html.escape(KEY).replace("&quot;", "&#34;").replace("&#x27;", "&#39;"),
    "url, plus, / kept": quote_plus(KEY, safe="/"),
    "json, \\/ for /": json.dumps(KEY)[1:-1].replace("/", "\\/"),
    "json, upper-case \\u": re.sub(r"(?<=\\u)[0-9a-f]{4}", lambda m: m.group(0).upper(), json.dumps(KEY)[1:-1]),
    "base64": base64.b64encode(KEY.encode()).decode(),
    "base64, no padding": base64.b64encode(KEY.encode()).decode().rstrip("="),
}


def test_the_forms_differ_from_each_other_and_from_the_key() -> None:
    assert len(set(FORMS.values())) == len(FORMS)  # each case tests something of its own
    assert "/" in FORMS["url, / kept"] and "%2f" in FORMS["url, lower hex"] and "%2F" in FORMS["url"]
    assert re.search(r"%[0-9a-f]{2}", FORMS["url, mixed hex"]) and re.search(r"%[0-9A-F]{2}", FORMS["url, mixed hex"])
    assert "&amp;" in FORMS["html"] and "&lt;" in FORMS["html"] and "&quot;" in FORMS["html"]


@pytest.mark.parametrize("form", list(FORMS.values()), ids=list(FORMS))
def test_a_key_is_masked_in_each_form(form: str) -> None:
    scrubber = P.Scrubber([KEY])
    echo = f"the server said: Bearer {form}."
    assert scrubber.redact(echo) == "the server said: Bearer [redacted]."
    assert scrubber.text(echo) == "the server said: Bearer [redacted]."
    assert scrubber.error(echo) == "the server said: Bearer [redacted]."


@pytest.mark.parametrize("form", list(FORMS.values()), ids=list(FORMS))
def test_a_key_is_masked_in_each_form_wherever_a_stream_splits_it(form: str) -> None:
    scrubber = P.Scrubber([KEY])
    text = f"key: {form} end"
    for cut in range(1, len(text)):
        recorder = P.Recorder(scrubber=scrubber)
        out = []
        for piece in (text[:cut], text[cut:]):
            recorder.feed({"type": "TEXT_MESSAGE_CONTENT", "messageId": "t", "delta": piece})
            out.append(recorder.drain())
            assert form not in "".join(out), cut
        recorder.feed({"type": "RUN_FINISHED"})
        out.append(recorder.drain())
        assert "".join(out) == "key: [redacted] end", cut


def test_an_error_holding_a_piece_of_a_key_is_withheld_up_to_its_very_end() -> None:
    key = "k3y-0123456789-abcdefgh"
    scrubber = P.Scrubber([key])
    size = P.SECRET_FRAGMENT
    for start in range(len(key) - size + 1):  # every piece of that length, the last one included
        assert scrubber.error(f"refused: …{key[start : start + size]}…") == P.WITHHELD, start
    assert scrubber.error(f"refused: …{key[-(size - 1) :]}") == f"refused: …{key[-(size - 1) :]}"  # shorter: kept
    assert scrubber.error(f"refused: …{key[: size - 1]}") == f"refused: …{key[: size - 1]}"


def test_a_key_whose_own_text_looks_like_a_percent_escape_is_still_masked_raw() -> None:
    for key in ("k3y-0123456789-%a", "k3y-%e9-0123456789", "%2fk3y-0123456789"):
        scrubber = P.Scrubber([key])
        assert scrubber.redact(f"<{key}>") == "<[redacted]>", key
        assert scrubber.redact(f"<{quote(key, safe='')}>") == "<[redacted]>", key
