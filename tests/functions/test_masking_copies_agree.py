"""The pipe's copy of the masking code agrees with provision's (provisioner/redaction.py).

A function file stands alone (Open WebUI loads it by itself), so the agent pipe cannot import
provisioner.redaction and carries its own ``secret_forms`` and ``Scrubber``. Both mask a key in
every form a server may echo it in, and withhold a text that keeps a piece of one. This pins that
the copies mask the same: for each key and encoding, the pipe's ``Scrubber.error`` and provision's
``redact`` leave the same text (their placeholders read differently and are compared as one).
Where they knowingly differ (a key in another letter case, a piece of an encoded key) is pinned
by strict xfails below.

The forms provision masks and the pipe's copy does not yet are listed in PIPE_LACKS, each a
strict xfail: the test fails once the pipe masks one of them too, so the list cannot go stale.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provisioner import redaction
from tests.support.pipe_support import pipe_module

P = pipe_module
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Every character an encoding changes: `/` `+` `=` `&` `"` `\` `<` `'` `%` `>`, a space, non-ASCII;
# its base64 holds `+` (so the urlsafe alphabet differs) and ends in padding.
KEY = "bk/Q7+x9=Zr&2\"Lm\\W4<p'V8 nB3%é>>?"


def _hex_case(text: str, mixed: bool) -> str:
    """Percent escapes in lower case, or alternating lower and upper (%2f%2B)."""
    count = iter(range(10_000))
    return re.sub(
        r"%[0-9A-F]{2}", lambda m: m.group(0).lower() if not mixed or next(count) % 2 == 0 else m.group(0), text
    )


def _b64(key: str, urlsafe: bool = False) -> str:
    raw = key.encode()
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda k: k,
    "url-encoded, / encoded": lambda k: quote(k, safe=""),
    "url-encoded, / kept": lambda k: quote(k, safe="/"),
    "url-encoded, lower-case escapes": lambda k: _hex_case(quote(k, safe=""), mixed=False),
    "url-encoded, mixed-case escapes": lambda k: _hex_case(quote(k, safe=""), mixed=True),
    "form-encoded (+ for space)": lambda k: quote_plus(k, safe=""),
    "form-encoded, / kept": lambda k: quote_plus(k, safe="/"),
    "JSON-escaped": lambda k: json.dumps(k)[1:-1],
    "JSON-escaped, UTF-8 kept": lambda k: json.dumps(k, ensure_ascii=False)[1:-1],
    "JSON-escaped, upper-case \\u": lambda k: re.sub(
        r"(?<=\\u)[0-9a-f]{4}", lambda m: m.group(0).upper(), json.dumps(k)[1:-1]
    ),
    "JSON-escaped, \\/ for /": lambda k: json.dumps(k)[1:-1].replace("/", "\\/"),
    "HTML-escaped": lambda k: html.escape(k),
    "HTML-escaped, quotes kept": lambda k: html.escape(k, quote=False),
    "HTML-escaped, decimal entities": lambda k: html.escape(k).replace("&#x27;", "&#39;").replace("&quot;", "&#34;"),
    "base64": lambda k: _b64(k),
    "base64 without padding": lambda k: _b64(k).rstrip("="),
    "urlsafe base64": lambda k: _b64(k, urlsafe=True),
    "urlsafe base64 without padding": lambda k: _b64(k, urlsafe=True).rstrip("="),
}
# What provisioner/redaction.py masks and the pipe's copy does not: none since the pipe took the
# `/`-kept form encoding, the `\/` JSON form, the base64 forms and `\u` escapes in any case. A
# form provision learns and the pipe does not goes here, as a strict xfail, until the pipe has it.
PIPE_LACKS: set[str] = set()
AGREED = [name for name in ENCODINGS if name not in PIPE_LACKS]


def _pipe(text: str, key: str) -> str:
    return P.Scrubber([key]).error(text).replace(P.REDACTED, "<masked>").replace(P.WITHHELD, "<withheld>")


def _provision(text: str, key: str) -> str:
    masked = redaction.redact(text, [key])
    return masked.replace(redaction.SENSITIVE, "<masked>").replace(redaction.WITHHELD, "<withheld>")


def test_the_encodings_differ_from_each_other_for_the_key() -> None:
    """Each case tests a form of its own, and PIPE_LACKS names only encodings that exist."""
    assert len({encode(KEY) for encode in ENCODINGS.values()}) == len(ENCODINGS)
    assert PIPE_LACKS <= set(ENCODINGS)


@pytest.mark.parametrize(
    "encoding",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="the pipe's copy lacks this form"))
        if name in PIPE_LACKS
        else name
        for name in ENCODINGS
    ],
)
def test_both_copies_mask_a_whole_key_in_each_encoding(encoding: str) -> None:
    text = f"the server said: Bearer {ENCODINGS[encoding](KEY)} (end)"
    assert _provision(text, KEY) == "the server said: Bearer <masked> (end)"  # provision masks every encoding
    assert _pipe(text, KEY) == _provision(text, KEY)


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_both_copies_withhold_a_text_that_keeps_a_raw_piece_of_the_key(where: str) -> None:
    piece = {"start": KEY[:8], "middle": KEY[9:17], "end": KEY[-8:]}[where]
    text = f"input_value='...{piece}...'"
    assert _pipe(text, KEY) == _provision(text, KEY) == "<withheld>"


# Where the copies knowingly differ: provision also masks the key in another letter case (it
# matches forms ignoring case) and withholds a text holding a piece of an *encoded* key; the
# pipe, which must decide delta by delta what can stream, matches only escapes' hex in any case
# and withholds on raw pieces. Strict xfails: each fails once the pipe does the same.
@pytest.mark.xfail(strict=True, reason="the pipe matches a key's letters in their own case only")
def test_both_copies_mask_the_key_in_another_letter_case() -> None:
    text = f"echo: {KEY.upper()} (end)"
    assert _pipe(text, KEY) == _provision(text, KEY)


@pytest.mark.xfail(strict=True, reason="the pipe withholds on raw pieces of a key only")
@pytest.mark.parametrize("encode", [lambda k: quote(k, safe=""), _b64], ids=["url-encoded", "base64"])
def test_both_copies_withhold_a_text_that_keeps_a_piece_of_an_encoded_key(encode) -> None:
    text = f"input_value='...{encode(KEY)[4:16]}...'"
    assert _pipe(text, KEY) == _provision(text, KEY) == "<withheld>"


@pytest.mark.parametrize("key", ["Z+a", "~)^", ":yr"])
def test_a_key_shorter_than_a_fragment_is_masked_only_as_itself_not_as_its_base64(key: str) -> None:
    """Their base64 is an ordinary word ("With", "file", "Only"): masking it would eat text."""
    text = f"Without a profile, Only {key} (end)"
    assert _pipe(text, key) == _provision(text, key) == "Without a profile, Only <masked> (end)"


def test_both_copies_leave_a_text_without_the_key_as_it_is() -> None:
    text = "backend https://agents.internal/research is unreachable (50% of 2 tries, &amp; \\u00e9)"
    assert _pipe(text, KEY) == _provision(text, KEY) == text


# Keys as a server may hold them: printable, with the characters the encodings change.
KEYS = st.text(alphabet=st.sampled_from("abcdefXYZ0123456789/+=&\"\\<>'% -_.é€"), min_size=12, max_size=40)


@SETTINGS
@given(key=KEYS, encoding=st.sampled_from(AGREED))
def test_for_any_key_the_copies_agree_on_each_encoding_they_share(key: str, encoding: str) -> None:
    text = f"echo: [{ENCODINGS[encoding](key)}] (end)"
    assert _pipe(text, key) == _provision(text, key) == "echo: [<masked>] (end)"
