"""Prove the pins of the agent contract (tests/functions/test_contract_pins.py) hold: apply each
breakage alone to the built pipe (owui_functions/aihub_agent_pipe.py, which the tests load), run
the pins, restore the file. Not a test: run it by hand after changing a pinned rule,

    .venv/bin/python -m tests.support.pin_mutations

and every breakage must fail at least one test. A breakage whose text is no longer in the pipe is
reported as such (the rule moved: update its text here).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPE = ROOT / "owui_functions" / "aihub_agent_pipe.py"
PINS = "tests/functions/test_contract_pins.py"

# (the rule, the text that keeps it, the text that breaks it)
BREAKAGES = [
    ("a stored chat is read only for its own user",
     'if chat is None or getattr(chat, "user_id", None) != user_id:', "if chat is None:"),
    ("reads: [] reads nothing", "kinds = None if reads is None or taken is None else",
     "kinds = None if not reads or taken is None else"),
    ("stored user messages are matched from the newest", "zip(reversed(users), reversed(stored or []))",
     "zip(users, stored or [])"),
    ("the span's sampled flag is kept", '-{int(context.trace_flags):02x}"', '-01"'),
    ("an image of exactly MAX_IMAGE_MB is stored", "self.max_image_bytes + 3", "self.max_image_bytes"),
    ("only True approves", '{"approved": answer is True}', '{"approved": bool(answer)}'),
]


def main() -> int:
    original = PIPE.read_text(encoding="utf-8")
    survived = 0
    try:
        for rule, keeps, breaks in BREAKAGES:
            if original.count(keeps) != 1:
                print(f"{rule}: its text is not in the pipe once (found {original.count(keeps)}x)")
                survived += 1
                continue
            PIPE.write_text(original.replace(keeps, breaks), encoding="utf-8")
            run = subprocess.run([sys.executable, "-m", "pytest", PINS, "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                                 capture_output=True, text=True)
            failed = [line.split("::", 1)[1] for line in run.stdout.splitlines() if line.startswith("FAILED")]
            survived += not failed
            print(f"{rule}: {len(failed)} failed" + "".join(f"\n    {name}" for name in failed))
    finally:
        PIPE.write_text(original, encoding="utf-8")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
