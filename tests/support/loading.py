"""Load a standalone file as a module: a function file (it imports nothing of ours) or a script.

One way for every test, the way Open WebUI loads a function (`utils/plugin.py`,
`load_function_module_by_id`): a fresh module registered in `sys.modules` under its name, then the
source executed in it. Registering first matters: dataclasses and pydantic look a class's module
up there while the class is built. Scripts under scripts/ have no `.py` suffix, which the import
system's file loaders refuse, so the source is read and executed here for them too.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path


def load_source(source: str, name: str, *, filename: str | None = None, keep: bool = True) -> types.ModuleType:
    """Run `source` as module `name`; `keep=False` drops it from `sys.modules` afterwards, so the
    same source can be loaded again as a fresh module (Open WebUI reloads a changed function)."""
    module = types.ModuleType(name)
    if filename is not None:
        module.__file__ = filename
    sys.modules[name] = module
    try:
        # dont_inherit: this module's `from __future__ import annotations` must not reach the file
        # (it would hide an annotation naming a class defined further down, which Open WebUI,
        # executing the file as it is, fails on).
        code = compile(source, filename or f"<{name}>", "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - our own files
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not keep:
        sys.modules.pop(name, None)
    return module


def load_file(path: Path, name: str | None = None, *, keep: bool = True) -> types.ModuleType:
    """Run the file at `path` as module `name` (by default its stem, `-` read as `_`)."""
    name = name or path.stem.replace("-", "_")
    return load_source(path.read_text(encoding="utf-8"), name, filename=str(path), keep=keep)
