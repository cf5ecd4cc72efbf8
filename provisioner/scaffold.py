"""`provision init [DIR]`: a new blueprint repo from the templates shipped in the package.

What the templates make is a working repo: `provision validate` passes in it with default
options. Nothing is ever overwritten, nothing is written through a symlinked directory, and when
init refuses, nothing at all is written.

Layer: source.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import ProvisionError
from .paths import blocked_paths, make_dirs
from .version import __version__

VERSION_PLACEHOLDER = "@PROVISION_VERSION@"

# Path in the new repo -> template file (in provisioner/templates/init/). Dot files are stored
# under plain names, so the wheel's package data needs no hidden-file globs.
FILES: dict[str, str] = {
    "README.md": "README.md",
    "targets.yaml": "targets.yaml",
    "blueprints/capabilities.yaml": "capabilities.yaml",
    "blueprints/features.yaml": "features.yaml",
    "blueprints/icons/knowledge_base.svg": "knowledge_base.svg",
    "blueprints/it_helpdesk.yaml": "it_helpdesk.yaml",
    "functions/pii_redaction.py": "pii_redaction.py",
    ".github/workflows/provision.yml": "github-workflow.yml",
    ".github/workflows/provision-drift.yml": "github-drift.yml",
    ".gitlab-ci.yml": "gitlab-ci.yml",
}


class ExistingFilesError(ProvisionError):
    """`init` would overwrite files; it names them and writes nothing."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        names = "\n".join(f"  {p}" for p in paths)
        super().__init__(
            f"{len(paths)} file{'s' if len(paths) != 1 else ''} already exist; provision init never "
            f"overwrites, so it wrote nothing:\n{names}"
        )


def render(template: str, version: str = __version__) -> str:
    """One template's text, with the pinned provision version filled in."""
    text = resources.files("provisioner").joinpath("templates", "init", template).read_text(encoding="utf-8")
    return text.replace(VERSION_PLACEHOLDER, version)


def init_repo(directory: Path) -> list[Path]:
    """Write the new repo into `directory` (created if needed); return the files written.

    Every path is checked before the first write, and a write that still fails (a full disk)
    removes what this run wrote, so a refusal always leaves the tree as it was."""
    targets = [directory / name for name in FILES]
    blocked = blocked_paths(directory, targets)
    if blocked:
        names = "\n".join(f"  {p}: {why}" for p, why in blocked)
        raise ProvisionError(f"provision init cannot write there, so it wrote nothing:\n{names}")
    existing = [p for p in targets if p.exists() or p.is_symlink()]
    if existing:
        raise ExistingFilesError(existing)
    contents = {directory / name: render(template) for name, template in FILES.items()}
    made: list[Path] = []  # files and directories this run created, in order
    try:
        for path, text in contents.items():
            make_dirs(path.parent, made)
            with path.open("x", encoding="utf-8") as handle:  # "x": never replace a file that appeared meanwhile
                made.append(path)
                handle.write(text)
    except OSError as exc:
        _remove(made)
        raise ProvisionError(
            f"cannot write {exc.filename or directory}: {exc.strerror or exc}; wrote nothing"
        ) from None
    return targets


def _remove(made: list[Path]) -> None:
    for path in reversed(made):
        try:
            path.rmdir() if path.is_dir() else path.unlink()
        except OSError:
            pass
