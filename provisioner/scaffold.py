"""`provision init [DIR]`: a new blueprint repo from the templates shipped in the package.

What the templates make is a working repo: `provision validate` passes in it with default
options. Nothing is ever overwritten: when any file would be, nothing at all is written.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from . import __version__
from .errors import ProvisionError

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
    """Write the new repo into `directory` (created if needed); return the files written."""
    targets = [directory / name for name in FILES]
    existing = [p for p in targets if p.exists() or p.is_symlink()]
    if existing:
        raise ExistingFilesError(existing)
    if directory.exists() and not directory.is_dir():
        raise ProvisionError(f"{directory} is not a directory")
    contents = {directory / name: render(template) for name, template in FILES.items()}
    for path, text in contents.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("x", encoding="utf-8") as handle:  # "x": never replace a file that appeared meanwhile
                handle.write(text)
        except OSError as exc:
            raise ProvisionError(f"cannot write {path}: {exc.strerror or exc}") from None
    return targets
