"""`provision` run in process, as the unit tests run it, held to its promise about secrets.

Every run is checked: the admin token the CLI can see (``OPENWEBUI_TOKEN``, or the file
``OPENWEBUI_TOKEN_FILE`` names) and the secrets a test names must not reach stdout or stderr,
whatever the command and however it ends. A test module binds its own secrets once::

    run = functools.partial(run_cli, secrets=(TOKEN,))
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from provisioner.cli import main

SHORTEST_SECRET = 8  # a test's deliberately bad token ("x") would match any output


def admin_tokens() -> list[str]:
    """The admin token(s) the CLI would read from this environment."""
    tokens = [os.environ.get("OPENWEBUI_TOKEN", "")]
    token_file = os.environ.get("OPENWEBUI_TOKEN_FILE")
    if token_file:
        try:
            tokens.append(Path(token_file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            pass  # the CLI reports that file; it holds no token to leak
    return [token.strip() for token in tokens if len(token.strip()) >= SHORTEST_SECRET]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str, secrets: Iterable[str] = ()) -> tuple[int, str, str]:
    """Run ``provision ARGS``; return its exit code, stdout and stderr."""
    watched = [*secrets, *admin_tokens()]
    code = main(list(args))
    out, err = capsys.readouterr()
    leaked = [f"secret #{i} (…{secret[-4:]})" for i, secret in enumerate(watched) if secret in out or secret in err]
    assert not leaked, f"`provision {' '.join(args)}` printed {', '.join(leaked)}"
    return code, out, err
