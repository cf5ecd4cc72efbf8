"""Where a file named inside a folder really is, symlinks followed. Pure apart from the file system.

Icons next to the YAML and the team's function files are read from folders of the repo; a
symlink there that leads out of the folder would upload a file nobody reviewed with the repo.
"""

from __future__ import annotations

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
