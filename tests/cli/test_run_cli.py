"""The unit tests' CLI runner (tests/support/run_cli.py) catches a secret in the output, wherever it came from."""

from __future__ import annotations

import sys

import pytest

import tests.support.run_cli as run_cli_module
from tests.support.run_cli import run_cli

TOKEN = "sk-runner-test-token-0123456789"


def leaky_main(text: str, stream: str = "out"):
    def main(args: list[str]) -> int:
        print(f"about to say {text}", file=sys.stdout if stream == "out" else sys.stderr)
        return 0

    return main


@pytest.mark.parametrize("stream", ["out", "err"])
def test_the_token_in_the_environment_is_caught(monkeypatch, capsys, stream: str) -> None:
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    monkeypatch.setattr(run_cli_module, "main", leaky_main(TOKEN, stream))
    with pytest.raises(AssertionError, match="printed secret") as caught:
        run_cli(capsys, "validate")
    assert TOKEN not in str(caught.value)  # the failure names the secret by its end only


def test_the_token_in_a_file_is_caught(monkeypatch, capsys, tmp_path) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.delenv("OPENWEBUI_TOKEN", raising=False)
    monkeypatch.setenv("OPENWEBUI_TOKEN_FILE", str(tmp_path / "token"))
    monkeypatch.setattr(run_cli_module, "main", leaky_main(TOKEN))
    with pytest.raises(AssertionError, match="printed secret"):
        run_cli(capsys, "validate")


def test_a_named_secret_is_caught_and_clean_output_passes(monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENWEBUI_TOKEN", raising=False)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    monkeypatch.setattr(run_cli_module, "main", leaky_main("bk-backend-key-1234"))
    with pytest.raises(AssertionError, match="printed secret"):
        run_cli(capsys, "validate", secrets=("bk-backend-key-1234",))
    assert run_cli(capsys, "validate", secrets=("another-key-5678",)) == (0, "about to say bk-backend-key-1234\n", "")
