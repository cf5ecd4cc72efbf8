"""
title: PII redaction
description: Masks e-mail addresses and phone numbers in what users send before an agent sees it.
version: 0.1.0
global: false
"""

# An example of your own Open WebUI function. `provision sync` uploads every file of functions/,
# marks it as managed, activates it and sets it global or not from `global:` above. A blueprint
# (or one agent) attaches it with `filters: [pii_redaction]`; the file name is the id.

import re

from pydantic import BaseModel, Field

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
PHONE = re.compile(r"\+?\d[\d ()/-]{7,}\d")


def redact(text: str) -> str:
    return PHONE.sub("[phone]", EMAIL.sub("[e-mail]", text))


class Filter:
    class Valves(BaseModel):
        priority: int = Field(default=20, description="Runs after provision's own filters (0 and 10).")

    def __init__(self) -> None:
        self.valves = self.Valves()

    def inlet(self, body: dict) -> dict:
        messages = body.get("messages") if isinstance(body, dict) else None
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                message["content"] = redact(message["content"])
        return body
