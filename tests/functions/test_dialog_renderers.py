"""How each installed Open WebUI release renders the pipe's dialogs (issue 29, point 4), read from
the Svelte source its wheel ships in the frontend's source maps: the pipe writes the dialog's
text for a Markdown renderer with Open WebUI's own marked extensions (agent_pipe/dialogs.py), so
a release that renders it otherwise must fail here, not in a user's dialog.

The version matrix installs one release per minor into the cache dir (`scripts/openwebui-local`);
a release not installed there fails the test under CI (where .ci/run's matrix installs them all,
before these tests run) and is skipped by name elsewhere."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import pytest

from tests.support.owui_instance import unavailable

# The newest patch of each supported minor (docs/openwebui-versions.md), as the matrix installs it.
RELEASES = ("0.6.43", "0.7.2", "0.8.12", "0.9.6", "0.10.2", "0.11.4", "0.12.4")
MARKDOWN = "{@const html = DOMPurify.sanitize(marked.parse(message))}"


def _cache_dir() -> Path:
    """scripts/openwebui-local's cache dir."""
    explicit = os.environ.get("AIHUB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "aihub-provision"


@cache
def _source(version: str, name: str) -> str:
    """The source of ``name`` (a path ending) as the release's frontend source maps hold it."""
    lib = _cache_dir() / f"openwebui-{version}" / "venv" / "lib"
    frontends = sorted(lib.glob("python3*/site-packages/open_webui/frontend/_app"))
    if not frontends:
        unavailable(f"Open WebUI {version} is not installed in {_cache_dir()} (the version matrix installs it)")
    for path in frontends[0].rglob("*.js.map"):
        if name.encode() not in path.read_bytes():
            continue
        mapping = json.loads(path.read_text())
        for source, content in zip(mapping.get("sources", []), mapping.get("sourcesContent") or [], strict=False):
            if source.endswith(name) and content:
                return str(content)
    raise AssertionError(f"Open WebUI {version}'s frontend has no source of {name}")


@pytest.mark.parametrize("version", RELEASES)
def test_the_dialog_renders_its_message_as_markdown_then_dompurify(version: str) -> None:
    """The confirmation and input dialogs are Chat.svelte's EventConfirmDialog, common/ConfirmDialog
    (0.6.5's showed the message as plain text: there the character references would show as typed)."""
    chat = _source(version, "components/chat/Chat.svelte")
    assert "import EventConfirmDialog from '../common/ConfirmDialog.svelte';" in chat
    assert MARKDOWN in _source(version, "components/common/ConfirmDialog.svelte")


@pytest.mark.parametrize("version", RELEASES)
def test_open_webuis_marked_reads_backslash_parentheses_as_raw_math(version: str) -> None:
    """Why the pipe writes punctuation as character references, not backslash escapes: the KaTeX
    extension every chat registers on the shared marked opens math at \\( and \\[ and renders what
    is between as raw HTML."""
    chat = _source(version, "components/chat/Messages/Markdown.svelte")
    katex = _source(version, "utils/marked/katex-extension.ts")
    assert "marked.use(markedKatexExtension(options));" in chat
    assert "{ left: '\\\\(', right: '\\\\)', display: false }" in katex
    assert "return `${token?.text ?? ''}`;" in katex
