"""Where a file named inside a folder really is, symlinks followed; where provision may write.

Icons next to the YAML and the team's function files are read from folders of the repo; a
symlink there that leads out of the folder would upload a file nobody reviewed with the repo.
`provision init` and `provision dump` write files into a directory, never through a symlink on
the way (blocked_paths) and creating what is missing (make_dirs).

Layer: vocabulary.
"""

from __future__ import annotations

import os
from pathlib import Path


def resolved_inside(base: Path, name: str | Path) -> Path | None:
    """The real path of `base / name`, or None when it leads outside `base`.

    Raises ValueError when it cannot be resolved (a symlink loop, a NUL byte in the name)."""
    root = base.resolve()
    try:
        path = (root / name).resolve()
    except (OSError, RuntimeError, ValueError):
        raise ValueError(f"{name} cannot be resolved (a symlink loop?)") from None
    return path if path.is_relative_to(root) else None


def blocked_paths(directory: Path, targets: list[Path]) -> list[tuple[Path, str]]:
    """Each directory on the way to a target that is a symlink (writing through it would write
    somewhere else) or not a directory, and the nearest existing ancestor when it is not writable:
    what `provision init` and `provision dump` check before their first write, so that a refusal
    writes nothing. `directory` itself may be a symlink: the user named it."""
    blocked: dict[Path, str] = {}
    for target in targets:
        for parent in reversed(target.relative_to(directory).parents[:-1]):
            path = directory / parent
            if path.is_symlink():
                blocked.setdefault(
                    path, f"a symlink (to {os.readlink(path)}); provision writes only into real directories"
                )
                break
            if path.exists() and not path.is_dir():
                blocked.setdefault(path, "exists and is not a directory")
                break
    if directory.exists() and not directory.is_dir():
        blocked[directory] = "exists and is not a directory"
    elif not blocked:
        nearest = next(p for p in (directory, *directory.absolute().parents) if p.exists())
        if not nearest.is_dir():
            blocked[nearest] = "exists and is not a directory"
        elif not os.access(nearest, os.W_OK | os.X_OK):
            blocked[nearest] = "not writable"
    return sorted(blocked.items())


def make_dirs(path: Path, made: list[Path]) -> None:
    """mkdir -p that records each directory it creates."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir()
        made.append(directory)
