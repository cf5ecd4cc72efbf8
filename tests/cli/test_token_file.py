"""`token_file` (and --token-file) reads only a regular file, up to a size cap, and warns when
group or others may read it (issue 23, finding 7)."""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import pytest

from provisioner.errors import ConfigError
from provisioner.openwebui.token_file import MAX_TOKEN_FILE_BYTES, read_token_file
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-token-file-Rt5Yu8Io1Pa4Sd7F"
run = functools.partial(run_cli, secrets=(TOKEN,))


def _read(path: Path) -> tuple[str, list[str]]:
    warnings: list[str] = []
    return read_token_file(path, warnings.append), warnings


def _read_within(path: Path, seconds: float = 5.0) -> BaseException | str:
    """read_token_file in a thread, so a read that blocks fails the test instead of hanging it."""
    outcome: list[BaseException | str] = []

    def target() -> None:
        try:
            outcome.append(read_token_file(path, lambda message: None))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"reading {path} blocked"
    return outcome[0]


def test_a_private_regular_file_is_read_without_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n")
    path.chmod(0o600)
    assert _read(path) == (TOKEN, [])


@pytest.mark.parametrize("mode, who", [(0o640, "its group"), (0o644, "others"), (0o604, "others")])
def test_a_file_others_may_read_gets_a_warning(tmp_path: Path, mode: int, who: str) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(mode)
    token, [warning] = _read(path)
    assert token == TOKEN and f"readable by {who}" in warning and "chmod 600" in warning and TOKEN not in warning


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    outcome = _read_within(path)
    assert isinstance(outcome, ConfigError) and "is a named pipe (FIFO)" in str(outcome)


@pytest.mark.parametrize(
    "path, kind", [(Path("/dev/zero"), "a character device"), (Path("/dev/null"), "a character device")]
)
def test_a_device_is_refused(path: Path, kind: str) -> None:
    outcome = _read_within(path)
    assert isinstance(outcome, ConfigError) and f"is {kind}" in str(outcome)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    outcome = _read_within(tmp_path)
    assert isinstance(outcome, ConfigError) and "is a directory" in str(outcome)


def test_a_file_past_the_cap_is_refused_without_its_content(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "x" * MAX_TOKEN_FILE_BYTES)
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=f"larger than {MAX_TOKEN_FILE_BYTES} bytes") as exc:
        _read(path)
    assert TOKEN not in str(exc.value)


def test_the_cli_warns_on_stderr_and_refuses_a_fifo_with_a_clear_error(
    capsys, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(0o644)
    args = ["list"]
    code, _, err = run(capsys, *args, "--token-file", str(path))
    assert code == 0 and f"Warning: token file {path} is readable by others" in err, err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = run(capsys, *args, "--token-file", str(fifo))
    assert code == 1 and f"token file {fifo} is a named pipe (FIFO)" in err and "Traceback" not in err
