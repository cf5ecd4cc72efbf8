"""Every relative link in README.md, docs/ and bench/README.md points at a file that exists, and
every #anchor at a heading of that file: the docs were split into pages, and a moved section must
not leave a dead link behind. The developers' guide's Layout block names every provisioner module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]  # standalone: this file may move between test folders

PAGES = sorted([REPO / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").rglob("*.md")])
LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)


def unfenced(text: str) -> str:
    """The text outside fenced code blocks (a `#` line there is no heading)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return "\n".join(kept)


def prose(text: str) -> str:
    """The text outside code blocks and inline code spans (links there are not links)."""
    return CODE_SPAN.sub("", unfenced(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in unfenced(path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    targets = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_pages_are_found_and_link_to_each_other() -> None:
    names = {p.relative_to(REPO).as_posix() for p in PAGES}
    assert {"README.md", "docs/README.md", "docs/openwebui-versions.md", "bench/README.md"} <= names
    assert relative_links(REPO / "README.md"), "the README links to no page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_reachable_from_the_readme_or_the_docs_index() -> None:
    linked = set()
    for index in (REPO / "README.md", REPO / "docs" / "README.md"):
        for target in relative_links(index):
            file_part = target.partition("#")[0]
            if file_part:
                linked.add((index.parent / file_part).resolve())
    orphans = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "docs").rglob("*.md")
        if p.resolve() not in linked and p != REPO / "docs" / "README.md"
    ]
    assert not orphans, f"not linked from README.md or docs/README.md: {orphans}"


def test_the_slug_follows_githubs_rules() -> None:
    assert slug("Plan as Markdown (`-o markdown`)") == "plan-as-markdown--o-markdown"
    assert slug("Commits in Open WebUI's history") == "commits-in-open-webuis-history"
    assert slug("Who is asking, signed") == "who-is-asking-signed"


def test_the_readme_stays_a_five_minute_read() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move detail into docs/ (see docs/README.md)"


REPO_PATH = re.compile(r"`(?:[^`]*\s)?((?:tests|scripts|bench|provisioner|owui_functions|docs|demo_agents)/[^`\s]*)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_path_of_this_repo_in_code_exists(page: Path) -> None:
    """A file or folder named in code (`tests/cli/test_secrets.py`, `scripts/test tests/core -q`)
    exists: tests and modules move, and a page must move with them."""
    missing = []
    for match in REPO_PATH.finditer(page.read_text(encoding="utf-8")):
        path = match.group(1).split("::")[0].rstrip(".,:;)")
        if not any(REPO.glob(path)):
            missing.append(path)
    assert not missing, f"{page.relative_to(REPO)} names paths that do not exist: {missing}"


def layout_modules() -> set[str]:
    """The `provisioner/` modules docs/development.md's Layout block names: every `name.py` (or `openwebui/name.py`)
    on the lines indented under `provisioner/`, up to the next top-level folder."""
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    block = re.search(r"^## Layout\n+```\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert block, "docs/development.md has no fenced block under '## Layout'"
    lines = block.group(1).splitlines()
    assert lines[0].startswith("provisioner/"), "the Layout block no longer starts with provisioner/"
    named: set[str] = set()
    for line in lines[1:]:
        if not line.startswith(" "):
            break  # the next top-level folder (owui_functions/, ...)
        named.update(re.findall(r"(?<![\w/])((?:openwebui/)?[A-Za-z_]\w*\.py)\b", line))
    return named


def test_the_layout_names_every_provisioner_module() -> None:
    """A new module gets its line in the developers' guide, and a removed one loses it."""
    modules = {
        str(p.relative_to(REPO / "provisioner"))
        for p in (REPO / "provisioner").rglob("*.py")
        if (p.parent / "__init__.py").is_file()
    }
    named = layout_modules()
    assert {"cli.py", "__init__.py"} <= named, "the Layout parser found too little"
    missing, stale = sorted(modules - named), sorted(named - modules)
    assert not missing, f"docs/development.md's Layout block does not name: {missing}"
    assert not stale, f"docs/development.md's Layout block names modules that do not exist: {stale}"
