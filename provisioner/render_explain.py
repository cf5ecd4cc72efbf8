"""`provision explain` as text: the dict explain.explain_agent made, for a reader.

Values from the instance (ids and names of wrappers, group names) go through `shown`, so a
control character or a bidirectional override in them cannot hide anything.

Layer: output.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from .render import shown


def _at(where: dict[str, Any]) -> str:
    return f"{where['file']}:{where['line']}" if where.get("line") else str(where["file"])


def explain_lines(explained: dict[str, Any]) -> list[str]:
    """The explanation, one printed line per entry."""
    lines = [
        f"Agent {explained['agent']} ({explained['name']}), model {explained['model_id']}",
        f"  defined at {_at(explained)}",
    ]
    if "instance" in explained:  # what is wrong now comes first
        lines += ["", f"On the instance{' (target ' + explained['target'] + ')' if explained.get('target') else ''}:"]
        for note in explained["instance"]:
            lines.append(f"  - {shown(note['note'])}")
            if note.get("fix"):
                lines.append(f"    fix: {shown(note['fix'])}")
        if not explained["instance"]:
            lines.append("  nothing changes what the blueprints say")
    lines += ["", f"Toggles it shows ({len(explained['toggles'])}):"]
    for toggle in explained["toggles"]:
        kind = "native" if toggle["native"] else "custom"
        default = "; on in a new chat" if toggle["on_by_default"] else ""
        lines.append(f"  {toggle['title']} ({toggle['feature']}, {kind}; filter {toggle['filter']}{default})")
        for source in toggle["served_by"]:
            lines.append(f"    served by capability {source['capability']} ({_at(source['at'])})")
            lines += [f"      called by step {step['step']} ({_at(step)})" for step in source["steps"]]
    if not explained["toggles"]:
        lines.append("  none: no step of its blueprint calls a capability that serves a feature")
    lines += ["", f"Not shown ({len(explained['not_shown'])}):"]
    lines += [f"  {item['title']} ({item['feature']}): {item['why']}" for item in explained["not_shown"]]
    if not explained["not_shown"]:
        lines.append("  none: it shows every feature of the catalog")
    row = explained["row"]
    lines += ["", "The row:"]
    lines.append("  meta.capabilities:")
    width = max(len(key) for key in row["meta.capabilities"])
    for key, value in row["meta.capabilities"].items():
        lines.append(f"    {key:<{width}}  {'true ' if value else 'false'}  {row['why_capabilities'][key]}")
    for field in ("meta.filterIds", "meta.defaultFilterIds", "meta.actionIds"):
        lines.append(f"  {field}: {', '.join(row[field]) or '(none)'}")
    lines.append(f"  who may see it: {row['access']}")
    return lines + _backend_lines(explained["backend"])


_IDENTITY = {
    "auto": "what Open WebUI's settings allow (identity: auto)",
    "signed": "a signed identity, or no chat at all (identity: signed)",
    "none": "nothing (identity: none)",
}


def _backend_lines(backend: dict[str, Any]) -> list[str]:
    """Where its chats go: whether Open WebUI reaches it there is doctor's `backend` check."""
    if backend["transport"] == "openai":
        where = f"OpenAI-compatible at {backend['url']}, model {backend['model']}"
    else:
        where = f"AG-UI at {backend['url']}"
    key = backend["api_key_env"]
    if not key:
        says = "none (no api_key_env: the backend gets no Authorization header)"
    elif backend["api_key_from"] == "server":
        says = f"${key} (api_key_from: server), read by the Open WebUI server at chat time"
    else:
        says = f"${key} (api_key_env), read where provision sync runs"
    lines = [
        "",
        "Its backend (`provision doctor` says whether Open WebUI reaches it):",
        f"  {where} ({_at(backend)})",
        f"  key: {says}; sent as Authorization: Bearer" if key else f"  key: {says}",
        f"  about the user: {_IDENTITY.get(backend['identity'], backend['identity'])}",
    ]
    if backend["oauth_token_header"]:
        lines.append(f"  the user's OAuth token: in the header {backend['oauth_token_header']}")
    if backend["insecure"]:
        lines.append(
            "  plain http off loopback allowed (insecure: true): the key and the chats cross the network in clear"
        )
    return lines


def render_explain(explained: dict[str, Any], out: Console) -> None:
    for line in explain_lines(explained):
        out.print(line, soft_wrap=True, markup=False)
