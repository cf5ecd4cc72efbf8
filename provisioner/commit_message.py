"""The commit message each version sync writes carries into Open WebUI's own history. Pure.

Open WebUI 0.12 keeps every version of a model row and a function with who wrote it and a
message. Ours says what wrote it (the provision version), from which file, and in CI from which
commit and run, so an admin reading the history in the UI can trace a version back to Git.
Releases without history ignore the field.

Open WebUI shows the message to every admin who reads the history, so what it shows must be
what it says (docs/security.md): whitespace is folded to one line, and control, bidirectional
and zero-width characters are dropped (text.is_hidden); a run URL that is not plain http(s),
or that carries a credential, is left out rather than becoming a link in the history.

Layer: core.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from .text import is_hidden
from .urls import credential_in_url

MAX_MESSAGE = 500  # a long --message is cut: it is a note, not a changelog


@dataclass(frozen=True)
class CommitInfo:
    """What every message of one sync shares: the version, the CI commit and run, an override."""

    version: str
    commit: str | None = None
    run_url: str | None = None
    override: str | None = None  # `--message`: replaces the whole message

    @classmethod
    def from_env(cls, version: str, env: Mapping[str, str], override: str | None = None) -> CommitInfo:
        """GitHub Actions (GITHUB_SHA, GITHUB_SERVER_URL/GITHUB_REPOSITORY/GITHUB_RUN_ID) or GitLab
        CI (CI_COMMIT_SHA, CI_PIPELINE_URL); elsewhere neither is known."""
        commit = (env.get("GITHUB_SHA") or env.get("CI_COMMIT_SHA") or "").strip() or None
        run_url = None
        server, repo, run = (
            env.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
        )
        if server and repo and run:
            run_url = f"{server.rstrip('/')}/{repo}/actions/runs/{run}"
        elif env.get("CI_PIPELINE_URL", "").strip():
            run_url = env["CI_PIPELINE_URL"].strip()
        return cls(version, commit, _web_url(run_url), _one_line(override or "") or None)

    def message(self, source: str | None) -> str:
        """The message for one object written from `source` (a blueprint or function file)."""
        if self.override:
            return _one_line(self.override)
        parts = [f"provision {self.version} sync"]
        if source:
            parts[0] += f" of {source}"
        if self.commit:
            parts.append(f"commit {self.commit}")
        if self.run_url:
            parts.append(f"run {self.run_url}")
        return _one_line("; ".join(parts))


def _one_line(text: str) -> str:
    """`text` on one line with nothing a reader cannot see: whitespace folded first (a line
    separator becomes a space), then every hidden character dropped, then cut at MAX_MESSAGE."""
    words = ("".join(c for c in word if not is_hidden(c)) for word in text.split())
    flat = " ".join(word for word in words if word)
    return flat if len(flat) <= MAX_MESSAGE else flat[: MAX_MESSAGE - 1] + "…"


def _web_url(url: str | None) -> str | None:
    """`url` when it is a plain http(s) URL with a host, no whitespace or hidden character and no
    credential; else None (a javascript: or data: URL, or a token in it, must not reach the history)."""
    if not url or any(c.isspace() or is_hidden(c) for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or credential_in_url(url):
        return None
    return url
