"""Mask secrets in a text a server sent back, in every form a server may echo them in. Pure.

A server that refuses a request may quote what it received: raw, URL-encoded (a query or
form echo, `/` kept or not, percent escapes in either case), JSON-escaped (a JSON error that
embeds the body), HTML-escaped (an error page) or base64 (a header or token echo, standard or
urlsafe alphabet, padded or not). Each form of each secret is masked; a text that still
holds an 8-character piece of a secret (an excerpt cut in the middle), in any of those
encodings, is withheld whole.

Layer: vocabulary.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote, unquote_plus

# What stands for a secret wherever one would be shown: a plan's field, an error text.
SENSITIVE = "(sensitive)"
# A server may echo a secret shortened (pydantic's input_value, an excerpt): a piece this long
# of a secret is still a leak, so a text that holds one is withheld whole.
SECRET_FRAGMENT = 8
WITHHELD = "(withheld: the answer repeats part of a secret)"

_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\(.)", re.DOTALL)
_JSON_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def secret_forms(secret: str) -> set[str]:
    """`secret` as a server may echo it. Percent and `\\u` escapes are matched in any case
    by `redact`, so only one case of each is listed here."""
    raw = secret.encode("utf-8")
    forms = {
        secret,
        quote(secret, safe=""),
        quote(secret, safe="/"),
        quote_plus(secret, safe=""),
        quote_plus(secret, safe="/"),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1].replace("/", "\\/"),
        html.escape(secret, quote=True),
        html.escape(secret, quote=False),
        html.escape(secret, quote=True).replace("&#x27;", "&#39;").replace("&quot;", "&#34;"),
    }
    if len(raw) >= SECRET_FRAGMENT:  # a shorter secret's base64 is an ordinary word ("Z+a" is "With")
        forms |= {base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}
    forms |= {f.rstrip("=") for f in forms if f.endswith("=")}
    return {f for f in forms if f}


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every form of every secret masked, or WITHHELD when a piece of one is left."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not ordered or not text:
        return text
    forms = sorted({f for s in ordered for f in secret_forms(s)}, key=len, reverse=True)
    # Case-insensitive so `%2f`, `%2F` and `\u00E9` all match; masking a case variant of a
    # secret as well is harmless.
    text = re.sub("|".join(re.escape(f) for f in forms), SENSITIVE, text, flags=re.IGNORECASE)
    views = _decoded_views(text)
    for secret in ordered:
        for form in {secret, *_base64_forms(secret)} if len(secret.encode()) >= SECRET_FRAGMENT else {secret}:
            size = min(SECRET_FRAGMENT, len(form))
            pieces = {form[i : i + size] for i in range(len(form) - size + 1)}
            if any(piece in view for view in views for piece in pieces):
                return WITHHELD
    return text


def _base64_forms(secret: str) -> set[str]:
    raw = secret.encode("utf-8")
    return {
        base64.b64encode(raw).decode("ascii").rstrip("="),
        base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="),
    }


def _decoded_views(text: str) -> set[str]:
    """`text` as it reads once each encoding a server may have applied is undone."""
    views = {text, unquote(text), unquote_plus(text), html.unescape(text), _json_unescape(text)}
    views |= {html.unescape(v) for v in list(views)} | {unquote(v) for v in list(views)}
    return views


def _json_unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1):
            return chr(int(match.group(1), 16))
        return _JSON_SIMPLE.get(match.group(2), match.group(2))

    return _JSON_ESCAPE.sub(one, text)
