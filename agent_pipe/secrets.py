"""The Scrubber and TokenMask, which mask every key the pipe holds, and the Signer of tool blocks."""

import base64
import hashlib
import hmac
import html
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from agent_pipe.constants import REDACTED, SECRET_FRAGMENT, WITHHELD
from agent_pipe.helpers import _str
from agent_pipe.segments import ToolCall

# === secrets: the scrubber, the token mask and the signer =========================================


_MARKUP = ("<details", "</details")  # what Open WebUI's Markdown turns into a (tool) block


def secret_forms(secret: str) -> set[str]:
    """The ways a key shows up in a server's echo: whole, URL- or form-encoded (``/`` kept or
    not), JSON-escaped (``\\/`` too), HTML-escaped and base64 (standard or urlsafe, padded or
    not): the forms of provisioner/redaction.py, which a test holds this copy to. Percent and
    ``\\u`` escapes match in any hex case: see ``_form_pattern``."""
    raw = secret.encode("utf-8")
    escaped = html.escape(secret)
    forms = {
        secret,
        quote(secret, safe=""),
        quote(secret, safe="/"),
        quote_plus(secret, safe=""),
        quote_plus(secret, safe="/"),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1].replace("/", "\\/"),
        escaped,
        html.escape(secret, quote=False),
        escaped.replace("&quot;", "&#34;").replace("&#x27;", "&#39;"),  # markupsafe's (Jinja's) quotes
    }
    if len(raw) >= SECRET_FRAGMENT:  # a shorter key's base64 is an ordinary word ("Z+a" is "With")
        forms |= {base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}
    forms |= {f.rstrip("=") for f in forms if f.endswith("=")}
    return {f for f in forms if f}


# The hex digits of a percent-escape or a JSON \u escape (or of the start of one at a delta's end).
_ESCAPE_HEX = re.compile(r"(?<=%)[0-9A-Fa-f]{1,2}|(?<=\\u)[0-9A-Fa-f]{1,4}")


def _form_pattern(form: str) -> str:
    """A form as a regex whose escapes match in either hex case, mixed too (%2f%2F, \\u00E9)."""
    pattern, position = [], 0
    for match in _ESCAPE_HEX.finditer(form):
        pattern += [re.escape(form[position : match.start()]), f"(?i:{match.group(0)})"]
        position = match.end()
    return "".join([*pattern, re.escape(form[position:])])


def _fold_hex(text: str) -> str:
    """Escapes' hex digits upper-cased, so a streamed tail compares with a form in any hex case."""
    return _ESCAPE_HEX.sub(lambda match: match.group(0).upper(), text)


class Scrubber:
    """Masks every key the pipe holds in what it shows or logs, and defuses block markup in text.

    ``redact`` is for whole values (tool arguments and results, reasoning, statuses, log lines);
    ``error`` also withholds a text that still holds a piece of a key; ``text`` also writes
    "<details" as "&lt;details", so an agent's text never renders as a tool block. Text streams
    in deltas, so ``stable_length`` says how much of it can go out now: a tail that may be the
    start of a key or of the markup waits for the next delta.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._forms = sorted({_fold_hex(f) for s in self._secrets for f in secret_forms(s)}, key=len, reverse=True)
        alternatives = [_form_pattern(f) for f in self._forms]
        self._redact = re.compile("|".join(alternatives)) if alternatives else None
        self._text = re.compile("|".join([*alternatives, r"(?i:</?details)"]))
        self._longest = max([len(f) for f in self._forms] + [len(m) for m in _MARKUP])
        self._by_first: dict[str, list[str]] = {}
        for form in self._forms:
            self._by_first.setdefault(form[0], []).append(form)
        self._starts = re.compile("[" + re.escape("".join({*self._by_first, "<"})) + "]")

    def redact(self, value: str) -> str:
        return self._redact.sub(REDACTED, value) if self._redact and value else value

    def error(self, message: str) -> str:
        message = self.redact(message)
        for secret in self._secrets:
            size = min(SECRET_FRAGMENT, len(secret))
            if any(secret[i : i + size] in message for i in range(len(secret) - size + 1)):
                return WITHHELD
        return message

    def text(self, value: str) -> str:
        return self._text.sub(self._text_match, value) if value else value

    def _text_match(self, match: re.Match[str]) -> str:
        found = match.group(0)
        return "&lt;" + found[1:] if found[:1] == "<" and found.lower() in _MARKUP else REDACTED

    def stable_length(self, value: str) -> int:
        """How much of ``value`` can be passed to ``text`` now without cutting a key or markup apart."""
        tail = value[-(self._longest - 1) :] if self._longest > 1 else ""
        cut = len(value)
        for candidate in self._starts.finditer(tail):  # earliest start first: the longest partial
            rest = tail[candidate.start() :]
            forms = self._by_first.get(rest[0], ())
            lowered, folded = rest.lower(), _fold_hex(rest)
            if any(len(f) > len(rest) and f.startswith(folded) for f in forms) or any(
                len(m) > len(rest) and m.startswith(lowered) for m in _MARKUP
            ):
                cut = len(value) - len(rest)
                break
        if cut < len(value):  # a whole key or tag may still straddle the cut (overlapping keys)
            for match in self._text.finditer(value, max(0, cut - self._longest)):
                if match.start() < cut < match.end():
                    return match.start()
        return cut


def unescape_markup(text: str) -> str:
    """The agent's own text as it wrote it (history): the inverse of Scrubber.text's markup step."""
    return re.sub(r"&lt;(/?details)", r"<\1", text, flags=re.I)


class TokenMask:
    """Masks the secrets of one chat (its identity tokens, the user's OAuth token) in what the pipe
    shows or logs. Plain replaces, cheap to build: the Scrubber's patterns take milliseconds to
    compile, too much for every chat. ``stream`` holds back a tail that may be a token's start."""

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        self.tokens = sorted(
            {t for t in tokens if isinstance(t, str) and len(t) >= SECRET_FRAGMENT}, key=len, reverse=True
        )
        self._held = ""

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def redact(self, text: str) -> str:
        for token in self.tokens:
            if token in text:
                text = text.replace(token, REDACTED)
        return text

    def error(self, text: str) -> str:
        """Also withholds a text holding a piece of a token (a server may echo one shortened)."""
        text = self.redact(text)
        for token in self.tokens:
            size = 2 * SECRET_FRAGMENT
            if any(token[i : i + size] in text for i in range(0, max(1, len(token) - size + 1))):
                return WITHHELD
        return text

    def stream(self, chunk: str) -> str:
        if not self.tokens:
            return chunk
        text = self.redact(self._held + chunk)
        cut = self._cut(text)
        self._held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self.redact(held)

    def _cut(self, text: str) -> int:
        n, cut = len(text), len(text)
        for token in self.tokens:
            head = token[:3]
            position = text.find(head, max(0, n - len(token) + 1))
            while position >= 0:
                if token.startswith(text[position:]):
                    cut = min(cut, position)
                    break
                position = text.find(head, position + 1)
            for k in (1, 2):  # a tail shorter than the head
                if n >= k and token.startswith(text[n - k :]):
                    cut = min(cut, n - k)
        return cut


class Signer:
    """HMAC-SHA256 over a tool block's fields with the HISTORY_SIGNING_KEY valve, bound to where
    the block was made: the chat, the agent, the user and the turn (Open WebUI's id of the
    assistant message it was rendered in, kept in the block as ``turn``: the messages Open WebUI
    0.12.4 hands a pipe carry no ids, utils/middleware.py process_messages_with_output drops them).

    A chat's stored messages can be edited by the user (Open WebUI lets anyone edit an answer)
    and the agent's own text could imitate the markup, so the next turn trusts a tool block only
    when its ``sig`` matches: then the agent gets back a call and result that really happened, in
    this chat, from this agent, for this user. A block pasted into another chat, or shown to
    another agent or user, is text. Without a key, or outside a chat (no chat or message id),
    nothing is signed and nothing verifies.
    """

    def __init__(self, key: str, chat_id: str = "", agent_id: str = "", user_id: str = "", turn_id: str = "") -> None:
        self._key = key.encode()
        self._scope = [chat_id, agent_id, user_id]
        self.turn_id = turn_id  # the turn the blocks rendered now belong to

    def seal(self, call: ToolCall, message_id: str) -> None:
        """Bind a block that goes out now to this turn and sign it."""
        call.turn = self.turn_id
        call.sig = self.sign(call, message_id)

    def sign(self, call: ToolCall, message_id: str) -> str:
        if not (self._key and self._scope[0] and call.turn):
            return ""
        fields = [
            "aihub-tool-v2",
            *self._scope,
            call.turn,
            message_id,
            call.id,
            call.name,
            call.arguments,
            call.result,
            call.result_id,
            call.failed,
            call.unreported,
        ]
        payload = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
        return hmac.new(self._key, payload, hashlib.sha256).hexdigest()

    def verify(self, call: ToolCall, message_id: str) -> bool:
        expected = self.sign(call, message_id)
        return bool(expected and call.sig) and hmac.compare_digest(call.sig, expected)


def history_signer(key: str, agent_id: str, user: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> Signer:
    """The request's Signer: what Open WebUI says this turn is (metadata's chat and message ids)."""
    return Signer(
        key,
        chat_id=_str(metadata.get("chat_id")),
        agent_id=agent_id,
        user_id=_str((user or {}).get("id")),
        turn_id=_str(metadata.get("message_id")),
    )
