"""Workspace models that wrap one of our agents (`base_model_id` = an agent row). Pure.

Open WebUI runs the filters of the model a chat names, not of its base model, so for such a
wrapper the feature filter does not run: Open WebUI's own toggles are not stripped (it may run
its own web search, image generation or code interpreter if the wrapper's capabilities and the
instance allow it) and the agent receives no requested features from it. `diff` and `list`
name every wrapper so an admin can decide (docs/features.md, "Models that wrap an agent").

Layer: core.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any


def find_wrappers(models: Iterable[Mapping[str, Any]], agent_ids: Collection[str]) -> list[dict[str, str]]:
    """Every row whose base model is one of `agent_ids`: id, name, wrapped agent, owner's user id."""
    found = [
        {
            "id": str(row.get("id")),
            "name": str(row.get("name") or ""),
            "base_model_id": str(row.get("base_model_id")),
            "owner": str(row.get("user_id") or ""),
        }
        for row in models
        if row.get("base_model_id") in agent_ids and row.get("id") not in agent_ids
    ]
    return sorted(found, key=lambda w: w["id"])


def with_owner_names(wrappers: list[dict[str, str]], users: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """The owner shown as `Name <email>` where the user is known, else the user id."""
    named = []
    for wrapper in wrappers:
        user = users.get(wrapper["owner"]) or {}
        label = " ".join(
            p for p in (str(user.get("name") or ""), f"<{user['email']}>" if user.get("email") else "") if p
        )
        named.append({**wrapper, "owner": label or wrapper["owner"] or "(unknown)"})
    return named
