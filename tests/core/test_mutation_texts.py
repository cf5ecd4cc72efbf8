"""The mutation runners still find every rule they break (tests/support/pin_mutations.py for the
pipe, tests/support/provisioner_mutations.py for the provisioner).

The runners are run by hand; a rule whose text moved (a refactor, a formatter pass) is reported
only then, and until then nothing proves its pin any more. ruff format once rewrapped the check
of plain http to Open WebUI over three lines and the runner's breakage silently stopped applying.
This fast test fails at once instead: each breakage's text is in its file exactly once, its
replacement differs, and the tests it runs exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import pin_mutations, provisioner_mutations

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("rule", "keeps", "breaks", "tests"), pin_mutations.BREAKAGES, ids=[b[0] for b in pin_mutations.BREAKAGES]
)
def test_each_breakage_of_the_pipe_finds_its_text_once(rule: str, keeps: str, breaks: str, tests: str) -> None:
    assert pin_mutations.PIPE.read_text(encoding="utf-8").count(keeps) == 1, f"{rule}: update its text"
    assert breaks != keeps
    assert all((ROOT / t).is_file() for t in tests.split()), tests


@pytest.mark.parametrize(
    ("rule", "module", "keeps", "breaks", "tests"),
    provisioner_mutations.BREAKAGES,
    ids=[b[0] for b in provisioner_mutations.BREAKAGES],
)
def test_each_breakage_of_the_provisioner_finds_its_text_once(
    rule: str, module: str, keeps: str, breaks: str, tests: list[str]
) -> None:
    assert (ROOT / module).read_text(encoding="utf-8").count(keeps) == 1, f"{rule}: update its text in {module}"
    assert breaks != keeps
    assert tests and all((ROOT / t).is_file() for t in tests), tests


def test_rules_are_named_once() -> None:
    """A word given to a runner picks rules by name: two rules of one name could not be told apart."""
    for breakages in (pin_mutations.BREAKAGES, provisioner_mutations.BREAKAGES):
        names = [b[0] for b in breakages]
        assert len(names) == len(set(names))
