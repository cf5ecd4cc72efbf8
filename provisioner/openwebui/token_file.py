"""Read a secret from a file, safely: the admin token (`--token-file`, a target's
`token_file`) and the admin's password (OPENWEBUI_ADMIN_PASSWORD_FILE, `provision token`).

Only a regular file is read, and at most MAX_TOKEN_FILE_BYTES of it: a FIFO would block
forever, `/dev/zero` would fill the memory, a directory is a mistake. The file is opened
non-blocking and checked on the open descriptor (no race between a check and the open). A
token file that group or others may read gets a warning: the token is an admin's key.

Layer: adapter.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError

MAX_TOKEN_FILE_BYTES = 16_384  # an API key or a JWT is a few hundred bytes

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_token_file(path: Path, warn: Callable[[str], None]) -> str:
    """The token in `path`, stripped; ConfigError (never with the file's bytes) when unusable."""
    token = read_secret_file(path, name="token file", holds="the API key", warn=warn).strip()
    if not token:
        raise ConfigError(f"token file {path} is empty")
    return token


def read_secret_file(path: Path, *, name: str, holds: str, warn: Callable[[str], None] | None = None) -> str:
    """The text of `path` as it is (nothing stripped), read as the module says; `name` says which
    file an error is about ("token file"), `holds` what it must hold alone. ConfigError, never
    with the file's bytes, when it is not a regular file, is past the cap or is not UTF-8.
    `warn`, when given, hears that group or others may read the file."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"cannot read {name} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((kind for test, kind in _KINDS if test(info.st_mode)), "not a regular file")
            raise ConfigError(f"{name} {path} is {kind}: it must be a regular file holding {holds} alone")
        if info.st_size > MAX_TOKEN_FILE_BYTES:
            raise ConfigError(_too_big(name, path, holds))
        if warn is not None and info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
            warn(
                f"Warning: {name} {path} is readable by {'others' if info.st_mode & stat.S_IROTH else 'its group'} "
                f"(mode {stat.filemode(info.st_mode)}); it holds an admin's API key: chmod 600 {path}"
            )
        raw = _read_at_most(fd, MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {name} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_TOKEN_FILE_BYTES:  # it grew after the check
        raise ConfigError(_too_big(name, path, holds))
    text = raw.decode("utf-8", errors="replace")
    if "\ufffd" in text:  # decoded outside an except: no exception may carry the bytes
        raise ConfigError(f"{name} {path} is not UTF-8 text")
    return text


def _too_big(name: str, path: Path, holds: str) -> str:
    return f"{name} {path} is larger than {MAX_TOKEN_FILE_BYTES} bytes: it must hold {holds} alone"


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
