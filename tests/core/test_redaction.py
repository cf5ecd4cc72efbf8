"""redaction.redact: every secret is masked in every form a server may echo it in, and a text
still holding a piece of one is withheld; apply.secret_values finds every secret a request carries."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from provisioner.openwebui.apply import secret_values
from provisioner.plan import Action, Change, FieldChange
from provisioner.redaction import SENSITIVE, WITHHELD, redact

# Every character a form treats specially: `/` `+` `=` `&` `"` `\` `<` `'`, a space, non-ASCII.
KEY = "bk/Q7+x9=Zr&2\"Lm\\W4<p'V8 nB3é"
PLAIN = "bk-Hd5Jq8Ws2Xe6Rt9Yu1Io"  # no character any encoding changes


def _mixed_case(text: str) -> str:
    """Percent escapes alternating upper and lower case: `%2F%2b%3D`."""
    out, upper = [], True
    i = 0
    while i < len(text):
        if text[i] == "%":
            escape = text[i + 1 : i + 3]
            out.append("%" + (escape.upper() if upper else escape.lower()))
            upper, i = not upper, i + 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


ENCODINGS = {
    "raw": lambda k: k,
    "url-encoded, / encoded": lambda k: quote(k, safe=""),
    "url-encoded, / kept": lambda k: quote(k, safe="/"),
    "url-encoded, lower-case escapes": lambda k: re.sub(
        r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(k, safe="")
    ),
    "url-encoded, mixed-case escapes": lambda k: _mixed_case(quote(k, safe="")),
    "form-encoded (+ for space)": lambda k: quote_plus(k, safe=""),
    "form-encoded, / kept": lambda k: quote_plus(k, safe="/"),
    "JSON-escaped": lambda k: json.dumps(k)[1:-1],
    "JSON-escaped, upper-case \\u": lambda k: json.dumps(k)[1:-1].replace("\\u00e9", "\\u00E9"),
    "JSON-escaped, UTF-8 kept": lambda k: json.dumps(k, ensure_ascii=False)[1:-1],
    "JSON-escaped, \\/ for /": lambda k: json.dumps(k)[1:-1].replace("/", "\\/"),
    "HTML-escaped": lambda k: html.escape(k),
    "HTML-escaped, quotes kept": lambda k: html.escape(k, quote=False),
    "HTML-escaped, decimal entities": lambda k: html.escape(k).replace("&#x27;", "&#39;").replace("&quot;", "&#34;"),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64 without padding": lambda k: base64.b64encode(k.encode()).decode().rstrip("="),
    "urlsafe base64": lambda k: base64.urlsafe_b64encode(k.encode()).decode(),
    "urlsafe base64 without padding": lambda k: base64.urlsafe_b64encode(k.encode()).decode().rstrip("="),
}


@pytest.mark.parametrize("secret", [KEY, PLAIN, PLAIN + "=="])
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_a_whole_secret_is_masked_in_every_encoding(encoding: str, secret: str) -> None:
    echoed = ENCODINGS[encoding](secret)
    text = f"could not save: API_KEYS={echoed} (end)"
    assert redact(text, [secret]) == f"could not save: API_KEYS={SENSITIVE} (end)", echoed


@pytest.mark.parametrize("encoding", [e for e in ENCODINGS if "base64" not in e])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_piece_of_a_secret_withholds_the_text_in_every_encoding(encoding: str, where: str) -> None:
    """An excerpt cut from the start, the middle or the very end of the key, encoded."""
    piece = {"start": KEY[:8], "middle": KEY[9:17], "end": KEY[-8:]}[where]
    echoed = ENCODINGS[encoding](piece)
    assert redact(f"input_value='...{echoed}...'", [KEY]) == WITHHELD, echoed


@pytest.mark.parametrize("where", ["start", "end"])
def test_a_piece_of_a_plain_secret_withholds_the_text_down_to_its_last_eight_characters(where: str) -> None:
    piece = PLAIN[:8] if where == "start" else PLAIN[-8:]
    assert redact(f"excerpt: {piece}", [PLAIN]) == WITHHELD
    assert redact(f"excerpt: {piece[1:]}", [PLAIN]) == f"excerpt: {piece[1:]}"  # seven are not a piece


def test_a_truncated_base64_echo_withholds_the_text() -> None:
    encoded = base64.b64encode(KEY.encode()).decode()
    assert redact(f"Authorization: Basic {encoded[:12]}", [KEY]) == WITHHELD


def test_text_without_a_secret_is_left_as_it_is() -> None:
    text = "could not save: backend https://agents.internal/research is unreachable (50% of 2 tries)"
    assert redact(text, [KEY, PLAIN]) == text


def _pipe_update(changed: tuple[FieldChange, ...]) -> Change:
    valves = {
        "AGENTS": '[{"id":"desk","url":"https://agents.internal/desk"}]',
        "API_KEYS": json.dumps({"DESK_KEY": KEY, "OTHER_KEY": PLAIN}),
        "HISTORY_SIGNING_KEY": "sign-Zq8Lw3Vn6Xb1Yc4Td7Re0",
        "WEBHOOK_TOKEN": "hook-Aa11Bb22Cc33",  # an admin's own valve, kept by read-merge-write
        "TIMEOUT_SECONDS": 30,
    }
    return Change("function", "aihub_agent_pipe", Action.UPDATE, changed, {"id": "aihub_agent_pipe", "valves": valves})


def test_a_valves_update_that_changes_only_a_url_still_names_every_key_it_sends_as_secret() -> None:
    change = _pipe_update((FieldChange("valves.AGENTS", "[]", "[...]", False),))
    found = secret_values(change)
    assert {KEY, PLAIN, "sign-Zq8Lw3Vn6Xb1Yc4Td7Re0", "hook-Aa11Bb22Cc33"} <= set(found)
    assert not any("agents.internal" in s or s == "DESK_KEY" for s in found)  # names and URLs are no secret


def test_a_rotated_sensitive_value_is_secret_on_both_sides() -> None:
    change = _pipe_update((FieldChange("valves.API_KEYS", json.dumps({"DESK_KEY": "old-Kk99Ll88Mm77"}), "{}", True),))
    assert "old-Kk99Ll88Mm77" in secret_values(change)
