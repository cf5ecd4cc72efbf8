"""Access grants as provision compares them: one shape for every release. Imports nothing.

A grant is {principal_type, principal_id, permission}; releases before 0.8 store
`access_control` instead, which compat.py turns into grants before anything is compared.

Layer: vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PUBLIC_GRANT = {"principal_type": "user", "principal_id": "*", "permission": "read"}
GRANT_KEYS = ("principal_type", "principal_id", "permission")


def normalize_grants(grants: Any) -> list[dict[str, str]]:
    """Grants as a sorted list of {principal_type, principal_id, permission}, nothing else."""
    if not isinstance(grants, list):
        return []
    clean = [{k: str(g.get(k, "")) for k in GRANT_KEYS} for g in grants if isinstance(g, Mapping)]
    unique = {tuple(g[k] for k in GRANT_KEYS): g for g in clean}
    return [unique[key] for key in sorted(unique)]
