"""The commit message each version sync writes carries into Open WebUI's own history. Pure.

Open WebUI 0.12 keeps every version of a model row and a function with who wrote it and a
message. Ours says what wrote it (the provision version), from which file, and in CI from which
commit and run, so an admin reading the history in the UI can trace a version back to Git.
Releases without history ignore the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
        server, repo, run = (env.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
        if server and repo and run:
            run_url = f"{server.rstrip('/')}/{repo}/actions/runs/{run}"
        elif env.get("CI_PIPELINE_URL", "").strip():
            run_url = env["CI_PIPELINE_URL"].strip()
        return cls(version, commit, run_url, (override or "").strip() or None)

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
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_MESSAGE else flat[: MAX_MESSAGE - 1] + "…"
