"""`provision token`: an admin API key for jobs that run inside the cluster, from a sign-in.

A Helm hook Job or a CronJob has the admin's email and password (a Secret, often mounted as a
file), not a ready API key. This signs in once, reuses the admin's key when it has one (creating
one replaces the old, which would break every other job using it) or creates one, and hands it
over on stdout or in a file only its owner can read. The password is read from the environment
or a file, never from argv, and appears in no output.

Layer: adapter.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, ProvisionError
from .token_file import read_secret_file

if TYPE_CHECKING:
    from .client import OpenWebUIClient

EMAIL_ENV = "OPENWEBUI_ADMIN_EMAIL"
PASSWORD_ENV = "OPENWEBUI_ADMIN_PASSWORD"
PASSWORD_FILE_ENV = "OPENWEBUI_ADMIN_PASSWORD_FILE"


@dataclass(frozen=True)
class AdminLogin:
    email: str
    password: str

    def __repr__(self) -> str:  # never show the password
        return f"AdminLogin(email={self.email!r})"


def admin_login(env: Mapping[str, str]) -> AdminLogin:
    """The admin's email and password from the environment (the password, or a file holding it)."""
    email = env.get(EMAIL_ENV, "").strip()
    if not email:
        raise ConfigError(f"no admin email: set {EMAIL_ENV}")
    password = env.get(PASSWORD_ENV, "")
    file = env.get(PASSWORD_FILE_ENV, "").strip()
    if password and file:
        raise ConfigError(f"both {PASSWORD_ENV} and {PASSWORD_FILE_ENV} are set; use one")
    if file:  # read as a token file is (a FIFO, a device, a huge file refused), nothing but the line end stripped
        text = read_secret_file(Path(file), name=PASSWORD_FILE_ENV, holds="the password")
        password = text.removesuffix("\n").removesuffix("\r")
    if not password:
        raise ConfigError(
            f"no admin password: set {PASSWORD_ENV} or {PASSWORD_FILE_ENV} (a file, e.g. a mounted Secret)"
        )
    return AdminLogin(email, password)


def api_key_for(client: OpenWebUIClient) -> tuple[str, bool]:
    """The signed-in admin's API key and whether it was created now (an existing one is reused)."""
    key = client.own_api_key()
    if key:
        return key, False
    return client.create_api_key(), True


def write_secret_file(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only (0600), also when the file existed."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise ProvisionError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (text + "\n").encode("utf-8"))
    finally:
        os.close(fd)
