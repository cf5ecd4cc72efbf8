"""Token usage: one report in any of the agents' spellings as counts, and the counts in the shape
Open WebUI stores. Counts past MAX_USAGE_COUNT are dropped and sums clamped there, so an agent
cannot pass on a number Open WebUI's usage records were never meant to hold."""

from collections.abc import Iterable, Mapping
from typing import Any

from agent_pipe.constants import MAX_USAGE_COUNT

# === token usage ==================================================================================

_USAGE_NAMES = {  # AG-UI 1.0's TokenUsage is camelCase on the wire (0.1.x servers wrote snake_case)
    "input": ("inputTokens", "input_tokens", "prompt_tokens", "input_token_count"),
    "output": ("outputTokens", "output_tokens", "completion_tokens", "output_token_count"),
    "total": ("totalTokens", "total_tokens", "total_token_count"),
    "reasoning": ("reasoningTokens", "reasoning_tokens", "reasoning_output_token_count"),
    "cached": ("cachedInputTokens", "cached_input_tokens", "cache_read_input_token_count"),
}
_USAGE_DETAILS = {
    "reasoning": (("completion_tokens_details", "reasoning_tokens"), ("output_tokens_details", "reasoning_tokens")),
    "cached": (("prompt_tokens_details", "cached_tokens"), ("input_tokens_details", "cached_tokens")),
}


def _count(value: Any) -> int | None:
    """A token count, or None (not an int, negative, or past MAX_USAGE_COUNT)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_USAGE_COUNT
    return value if ok else None


def usage_counts(report: Any) -> dict[str, int]:
    """One usage report (OpenAI, AG-UI TokenUsage or Agent Framework names) as counts by kind."""
    if not isinstance(report, Mapping):
        return {}
    counts: dict[str, int] = {}
    for kind, names in _USAGE_NAMES.items():
        found = next((n for n in map(_count, map(report.get, names)) if n is not None), None)
        for outer, inner in _USAGE_DETAILS.get(kind, ()):
            if found is None and isinstance(report.get(outer), Mapping):
                found = _count(report[outer].get(inner))
        if found is not None:
            counts[kind] = found
    if counts and "total" not in counts and ("input" in counts or "output" in counts):
        counts["total"] = counts.get("input", 0) + counts.get("output", 0)
    return counts


def _add_counts(reports: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in reports:
        for kind, value in counts.items():
            total[kind] = min(MAX_USAGE_COUNT, total.get(kind, 0) + value)
    return total


def openwebui_usage(counts: Mapping[str, int]) -> dict[str, Any]:
    """Counts in the shape Open WebUI's own OpenAI connections store (utils/response.py normalize_usage)."""
    usage: dict[str, Any] = {
        "prompt_tokens": counts.get("input", 0),
        "completion_tokens": counts.get("output", 0),
        "total_tokens": counts.get("total", 0),
        "input_tokens": counts.get("input", 0),
        "output_tokens": counts.get("output", 0),
    }
    if "reasoning" in counts:
        usage["completion_tokens_details"] = {"reasoning_tokens": counts["reasoning"]}
    if "cached" in counts:
        usage["prompt_tokens_details"] = {"cached_tokens": counts["cached"]}
    return usage
