"""What each demo agent answers: a deterministic turn from the request (pure: no I/O).

A turn is what a real agent would stream: a lead-in, the tool calls it ran (with results), the
answer, and beside it sources, an image, the token usage, or an approval it waits for. ``wire``
writes the same turn for either transport, so both say the same.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import json
import math
import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AGENTS = ("document-analyst", "policy-faq", "research-assistant", "support-desk")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/csv", "application/x-yaml")
REFUND_TOOL = "refund_payment"


@dataclass(frozen=True)
class Attachment:
    """A file that came with a user message: its name, type and bytes."""

    name: str
    mime: str
    data: bytes

    @property
    def text(self) -> str | None:
        """The file as text when it is text (by type, or bytes that decode as UTF-8), else None."""
        try:
            text = self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if self.mime.startswith(TEXT_TYPES) or "\x00" not in text:
            return text
        return None


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]
    result: str | None  # None: it waits for the user's approval


@dataclass(frozen=True)
class Source:
    url: str
    title: str
    snippet: str


@dataclass(frozen=True)
class Approval:
    """The run pauses: ``call`` runs only when the user approves it (AG-UI interrupt)."""

    interrupt_id: str
    call: Call
    message: str


@dataclass
class Request:
    """What a demo agent reads of a request, from either transport."""

    agent: str
    text: str  # the last user message's text
    files: list[Attachment] = field(default_factory=list)  # every user message's, oldest first
    resume: list[Mapping[str, Any]] = field(default_factory=list)  # AG-UI answers to an interrupt
    words_in: int = 0  # the prompt's size, reported as its token usage


@dataclass
class Turn:
    lead: str
    calls: list[Call] = field(default_factory=list)
    answer: str = ""
    sources: list[Source] = field(default_factory=list)
    image: tuple[str, bytes] | None = None  # (mime, bytes)
    approval: Approval | None = None
    usage: dict[str, int] = field(default_factory=dict)


# --- reading a request --------------------------------------------------------------------------


def _data_uri(uri: str) -> tuple[str, bytes] | None:
    match = re.fullmatch(r"data:([\w.+/-]+)(?:;[\w=.-]+)*;base64,(.*)", uri.strip(), re.S)
    if not match:
        return None
    try:
        return match.group(1), base64.b64decode(match.group(2), validate=False)
    except (binascii.Error, ValueError):
        return None


def _part_file(part: Mapping[str, Any], index: int) -> Attachment | None:
    """A content part that carries a file (OpenAI ``file``/``image_url``, AG-UI ``document``/``image``)."""
    kind = part.get("type")
    if kind == "file" and isinstance(part.get("file"), Mapping):
        file = part["file"]
        decoded = _data_uri(str(file.get("file_data") or ""))
        if decoded:
            return Attachment(str(file.get("filename") or f"file {index}"), *decoded)
    if kind == "image_url" and isinstance(part.get("image_url"), Mapping):
        decoded = _data_uri(str(part["image_url"].get("url") or ""))
        if decoded:
            return Attachment(f"image {index}", *decoded)
    if kind in ("document", "image") and isinstance(part.get("source"), Mapping):
        source, found = part["source"], part.get("metadata")
        meta = found if isinstance(found, Mapping) else {}
        if source.get("type") == "data":
            try:
                data = base64.b64decode(str(source.get("value") or ""), validate=False)
            except (binascii.Error, ValueError):
                return None
            name = str(meta.get("filename") or meta.get("name") or f"{kind} {index}")
            return Attachment(name, str(source.get("mimeType") or source.get("mime_type") or ""), data)
    return None


def parse_request(agent: str, messages: Any, resume: Any = None) -> Request:
    """The last user text, every attached file and the prompt's size, from either transport's messages."""
    request = Request(agent=agent, text="")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        texts = []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif message.get("role") == "user" and (file := _part_file(part, len(request.files) + 1)):
                request.files.append(file)
        text = " ".join(texts) if isinstance(content, list) else str(content or "")
        request.words_in += len(text.split())
        if message.get("role") == "user":
            request.text = text
    request.resume = [r for r in resume if isinstance(r, Mapping)] if isinstance(resume, list) else []
    return request


# --- the agents ----------------------------------------------------------------------------------


def _ids(request: Request) -> str:
    """A short id for this turn's calls: the same request gets the same ids."""
    return hashlib.sha256(f"{request.agent}\n{request.words_in}\n{request.text}".encode()).hexdigest()[:8]


def _lines(text: str) -> list[str]:
    return [line.strip(" \t-*•") for line in text.splitlines() if line.strip(" \t-*•")]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 3]


DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}[./]\d{1,2}[./]\d{2,4}|\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"\w* \d{4}|(?:by|before|until|deadline|due)\b)",
    re.I,
)


def document_analyst(request: Request) -> Turn:
    """Reads the attached files and quotes from them; without one it says how to attach it."""
    ids = _ids(request)
    names = [f.name for f in request.files]
    if not request.files:
        return Turn(
            lead="",
            calls=[Call(f"read-{ids}", "read_user_files", {"files": []}, json.dumps({"files": []}))],
            answer=(
                "No file reached me with this message. To let me read one, attach it with the **+** "
                "button beside the message box (*Upload files*), or switch on **My files**, then ask again, "
                "e.g. *Summarise the document I shared in five key points.*"
            ),
        )
    read = Call(
        f"read-{ids}",
        "read_user_files",
        {"files": names},
        json.dumps([{"name": f.name, "type": f.mime, "bytes": len(f.data)} for f in request.files]),
    )
    texts = [(f, f.text) for f in request.files]
    readable = [(f, t) for f, t in texts if t and t.strip()]
    unread = [
        f"*{f.name}* ({f.mime or 'unknown type'}, {len(f.data):,} bytes)" for f, t in texts if not (t and t.strip())
    ]
    parts: list[str] = []
    ask = request.text.lower()
    if ("compare" in ask or "changed" in ask) and len(readable) >= 2:
        (old, old_text), (new, new_text) = readable[-2], readable[-1]
        diff = [
            line
            for line in difflib.unified_diff(_lines(old_text), _lines(new_text), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        changes = [f'- {"added" if d[0] == "+" else "removed"}: "{d[1:].strip()}"' for d in diff[:10]]
        parts.append(f"What changed from *{old.name}* to *{new.name}*:\n" + ("\n".join(changes) or "- nothing"))
    elif "deadline" in ask or "obligation" in ask:
        for f, text in readable:
            found = [s for s in _sentences(text) if DATE.search(s)]
            listed = "\n".join(f'- "{s}"' for s in found[:10]) or "- none found"
            parts.append(f"Deadlines and obligations in *{f.name}*:\n{listed}")
    else:
        for f, text in readable:
            points = _sentences(text)[:5]
            listed = "\n".join(f'{i}. "{s}"' for i, s in enumerate(points, 1))
            parts.append(f"*{f.name}* ({len(text.split()):,} words), its key points in its own words:\n{listed}")
    if unread:
        parts.append("I could not read " + ", ".join(unread) + " as text: this demo agent reads text files only.")
    quote = next((s for _, t in readable for s in _sentences(t)), "")
    summary = (
        Call(
            f"condense-{ids}", "summarise", {"files": [f.name for f, _ in readable]}, json.dumps({"quote": quote[:200]})
        )
        if readable
        else None
    )
    return Turn(
        lead=f"Reading {', '.join(names)}.", calls=[read] + ([summary] if summary else []), answer="\n\n".join(parts)
    )


def _doubling(text: str) -> tuple[float, float] | None:
    """(rate in %, years to double) when the question asks for a doubling time at a rate."""
    match = re.search(r"(\d+(?:[.,]\d+)?)\s*%", text)
    if not match or "doubl" not in text.lower():
        return None
    rate = float(match.group(1).replace(",", "."))
    return (rate, math.log(2) / math.log1p(rate / 100)) if rate > 0 else None


def research_assistant(request: Request) -> Turn:
    """A web search (tool call), cited sources, token usage; a calculation and a chart for numbers."""
    ids, question = _ids(request), request.text.strip() or "your question"
    sources = [
        Source(
            "https://example.org/demo-research/overview",
            "Demo source: an overview",
            f"What the scripted web search found for: {question[:120]}",
        ),
        Source(
            "https://example.com/demo-research/figures",
            "Demo source: the figures",
            "Numbers and dates the demo answer quotes.",
        ),
    ]
    calls = [
        Call(
            f"search-{ids}",
            "web_research",
            {"query": question[:200]},
            json.dumps([{"title": s.title, "url": s.url} for s in sources]),
        )
    ]
    answer = (
        f"Here is what the (scripted) search found about *{question[:200]}*: the overview [1] explains the "
        "background and the figures page [2] has the numbers. The source chips below the answer link both, "
        "and the usage info shows what this answer cost in tokens."
    )
    image = None
    if doubling := _doubling(question):
        rate, years = doubling
        code = f"import math\nprint(math.log(2) / math.log1p({rate} / 100))"
        calls.append(Call(f"compute-{ids}", "python_sandbox", {"code": code}, f"{years:.2f}"))
        answer = (
            f"At {rate:g}% a year, money doubles in ln 2 / ln(1 + {rate / 100:g}) = **{years:.1f} years** "
            f"(the rule of 72 gives {72 / rate:.1f}). The chart shows the growth year by year; the "
            "sources [1] [2] explain compound interest."
        )
        image = ("image/png", growth_chart(rate, math.ceil(years)))
    return Turn(lead="Let me look that up.", calls=calls, answer=answer, sources=sources, image=image)


HANDBOOK = {
    "leave": (
        "Handbook §4 Leave",
        "Full-time staff get 28 days of paid leave a year; book them in the HR portal at least two weeks ahead.",
    ),
    "travel": (
        "Handbook §7 Travel",
        "Book work trips through the travel desk; hotels up to 150 EUR a night, "
        "economy class for flights under six hours.",
    ),
    "expense": (
        "Handbook §8 Expenses",
        "Client dinners up to 60 EUR a person with an itemised receipt and the guests' names.",
    ),
    "security": (
        "Handbook §9 Security",
        "Lock your screen when you leave your desk and report lost devices within an hour.",
    ),
}


def policy_faq(request: Request) -> Turn:
    ids, ask = _ids(request), request.text.lower()
    topic = next(
        (t for t in HANDBOOK if t in ask),
        "expense"
        if "dinner" in ask
        else "travel"
        if "trip" in ask
        else "leave"
        if "days" in ask or "holiday" in ask
        else "security",
    )
    title, rule = HANDBOOK[topic]
    calls = [
        Call(
            f"retrieve-{ids}",
            "retrieve_policies",
            {"query": request.text[:200]},
            json.dumps({"section": title, "text": rule}),
        ),
        Call(f"reply-{ids}", "draft_reply", {"section": title}, "drafted"),
    ]
    return Turn(
        lead="Looking it up in the policy handbook.",
        calls=calls,
        answer=f"From *{title}* (a demo handbook): {rule}",
        sources=[Source("", title, rule)],
    )


def support_desk(request: Request) -> Turn:
    """Triage, an order lookup, and a refund that waits for the user's approval."""
    ids, ask = _ids(request), request.text
    if request.resume:
        return _refund_resumed(request)
    asked = re.search(r"\b(\d{4,6})\b", ask)
    order = asked.group(1) if asked else "10023"
    lowered = ask.lower()
    refund = "refund" in lowered or "charged twice" in lowered or "double charge" in lowered
    topic = (
        "billing"
        if refund or "invoice" in lowered
        else "delivery"
        if "order" in lowered or "parcel" in lowered
        else "account"
    )
    calls = [
        Call(
            f"triage-{ids}",
            "classify_ticket",
            {"text": ask[:200]},
            json.dumps({"topic": topic, "urgency": "high" if refund else "normal"}),
        )
    ]
    if re.search(r"\b\d{4,6}\b", ask) or refund:
        calls.append(
            Call(
                f"order-{ids}",
                "lookup_order",
                {"order_id": order},
                json.dumps(
                    {"order_id": order, "status": "delivered", "charged": 2 if refund else 1, "amount_eur": 49.9}
                ),
            )
        )
    if refund:
        call = Call(f"refund-{ids}", REFUND_TOOL, {"order_id": order, "amount_eur": 49.9}, None)
        return Turn(
            lead=f"Order {order} was charged twice. I can refund the duplicate charge of 49.90 EUR, once you approve it.",
            calls=calls,
            approval=Approval(f"approve-{call.id}", call, f"Refund 49.90 EUR for order {order}?"),
        )
    calls.append(Call(f"reply-{ids}", "draft_reply", {"topic": topic}, "drafted"))
    answer = (
        f"Order {order} shows as delivered. Here is a reply you can send:\n\n> Thank you for getting in touch "
        "about your order. I have checked it and will keep you posted."
        if len(calls) > 2
        else f"Topic: *{topic}*, urgency normal. Here is a reply you can send:\n\n> Thank you for getting in touch. "
        "I am sorry for the trouble and will sort it out today."
    )
    return Turn(lead="Let me triage that.", calls=calls, answer=answer)


def _refund_resumed(request: Request) -> Turn:
    """The paused refund, answered: it runs when approved, and does not when declined or cancelled."""
    entry = request.resume[0]
    found = entry.get("payload")
    payload = found if isinstance(found, Mapping) else {}
    approved = entry.get("status") == "resolved" and payload.get("approved") is True
    interrupt = str(entry.get("interruptId") or "")
    call_id = interrupt.removeprefix("approve-") or f"refund-{_ids(request)}"
    if approved:
        call = Call(call_id, REFUND_TOOL, {}, json.dumps({"refunded_eur": 49.9, "status": "done"}))
        return Turn(
            lead="",
            calls=[call],
            answer="Done: the duplicate charge of 49.90 EUR is refunded. "
            "The customer sees it in three to five working days.",
        )
    # Not approved: declined, or nobody answered (the pipe sends both as approved: false, since
    # Agent Framework ends a run whose approval is "cancelled" in an error), so say neither.
    reason = "not approved" if entry.get("status") == "resolved" else "no answer"
    call = Call(call_id, REFUND_TOOL, {}, json.dumps({"status": "not run", "reason": reason}))
    return Turn(
        lead="", calls=[call], answer="I did not refund anything: the refund was not approved. Nothing was changed."
    )


SCRIPTS = {
    "document-analyst": document_analyst,
    "policy-faq": policy_faq,
    "research-assistant": research_assistant,
    "support-desk": support_desk,
}


def answer(request: Request) -> Turn:
    """The agent's turn, with its token usage (words in and out, as a demo's tokens)."""
    turn = SCRIPTS[request.agent](request)
    words_out = len(f"{turn.lead} {turn.answer}".split()) + sum(
        len(json.dumps(c.arguments).split()) for c in turn.calls
    )
    turn.usage = {
        "input_tokens": request.words_in,
        "output_tokens": words_out,
        "total_tokens": request.words_in + words_out,
    }
    return turn


# --- the chart -----------------------------------------------------------------------------------


def growth_chart(rate: float, years: int, width: int = 360, height: int = 180) -> bytes:
    """A PNG bar chart of money growing at ``rate`` % a year for ``years`` years (standard library only)."""
    years = max(1, min(years, 60))
    values = [(1 + rate / 100) ** y for y in range(years + 1)]
    bar = max(1, (width - 20) // len(values))
    rows = []
    for y in range(height):
        row = bytearray()
        for x in range(width):
            index = (x - 10) // bar
            level = values[index] / values[-1] * (height - 20) if 0 <= index < len(values) and (x - 10) % bar else 0
            inside = height - 10 - y < level
            row += bytes((40, 110, 200) if inside else (150, 150, 150) if y == height - 10 else (255, 255, 255))
        rows.append(b"\x00" + bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )
