"""Prove that the pipe's rules are pinned: apply each breakage alone to the built pipe
(owui_functions/aihub_agent_pipe.py, which the tests load), run the tests that pin the rule,
restore the file. Not a test: run it by hand after changing a pinned rule,

    .venv/bin/python -m tests.support.pin_mutations            # every breakage
    .venv/bin/python -m tests.support.pin_mutations oauth      # those whose rule names "oauth"

and every breakage must fail at least one test; it exits 1 when one survives. A breakage whose
text is no longer in the pipe once is reported as surviving (the rule moved: update its text).
The first six are the agent contract's pins (tests/functions/test_contract_pins.py, issue 29's
mutation audit); the rest are the security rules issue 29 added or that no pin named before
(tests/functions/test_security_pins.py holds those a second pass found unpinned).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPE = ROOT / "owui_functions" / "aihub_agent_pipe.py"
PINS = "tests/functions/test_contract_pins.py"
T = "tests/functions/"
SECURITY = T + "test_security_pins.py"  # the second pass's pins

# (the rule, the text that keeps it, the text that breaks it, the test files that pin it)
BREAKAGES = [
    (
        "a stored chat is read only for its own user",
        'if chat is None or getattr(chat, "user_id", None) != user_id:',
        "if chat is None:",
        PINS,
    ),
    (
        "reads: [] reads nothing",
        "kinds = None if reads is None or taken is None else",
        "kinds = None if not reads or taken is None else",
        PINS,
    ),
    (
        "stored user messages are matched from the newest",
        "zip(reversed(users), reversed(stored or []), strict=False)",
        "zip(users, stored or [], strict=False)",
        PINS,
    ),
    ("the span's sampled flag is kept", '-{int(context.trace_flags):02x}"', '-01"', PINS),
    (
        "an image of exactly MAX_IMAGE_MB is stored",
        "if size > self.max_image_bytes + 3:",
        "if size > self.max_image_bytes:",
        PINS,
    ),
    ("only True approves", "return answer is True, how", "return bool(answer), how", PINS),
    # who may read a file
    (
        "an admin may read any file",
        'record.owner == user_id or user.get("role") == "admin" or',
        "record.owner == user_id or",
        T + "test_inbound_files.py",
    ),
    (
        "Open WebUI's own sharing rule counts",
        "or await store.shared_with(file_id, user_id)",
        "",
        T + "test_inbound_files.py",
    ),
    (
        "a user's attachment name is quoted",
        "{json.dumps(self.name, ensure_ascii=False)}",
        "'{self.name}'",
        T + "test_inbound_limits.py",
    ),
    (
        "at most MAX_FILE_REFERENCES references are looked up",
        "if looked >= max_files:",
        "if False:",
        T + "test_inbound_limits.py",
    ),
    (
        "only raster images pass as inlined images",
        "if inline is None or mime not in RASTER_IMAGES:",
        "if inline is None:",
        T + "test_inbound_limits.py",
    ),
    (
        "inlined images follow reads",
        'return "this agent does not read images", 0',
        "pass",
        T + "test_inbound_limits.py",
    ),
    (
        "inlined images count against MAX_TURN_FILES_MB",
        'if size > budget:\n        return f"the files of this message would be over the limit of '
        '{_limit_mb(limits.per_turn)}", size',
        'if False:\n        return "", size',
        T + "test_inbound_limits.py",
    ),
    (
        "a file whose record is over MAX_FILE_MB is never read",
        "        if record.size > limits.per_file:\n            return LeftOut",
        "        if False:\n            return LeftOut",
        SECURITY,
    ),
    (
        "a file another user owns is not read",
        'record.owner == user_id or user.get("role") == "admin" or',
        'True or user.get("role") == "admin" or',
        T + "test_inbound_files.py",
    ),
    (
        "a stored file is read up to its cap only",
        "            if size > limit:\n                raise FileTooLarge(",
        "            if False:\n                raise FileTooLarge(",
        T + "test_inbound_files.py",
    ),
    (
        "a file past the message's budget is left out",
        "        if record.size > budget:\n            return LeftOut",
        "        if False:\n            return LeftOut",
        T + "test_inbound_files.py",
    ),
    (
        "reads leaves a kind of file out",
        "        if kinds is not None and kind_name not in kinds:",
        "        if False:",
        T + "test_inbound_files.py",
    ),
    (
        "an inlined image over MAX_FILE_MB is left out",
        '    if size > limits.per_file:\n        return f"{_mb(size)} is over',
        '    if False:\n        return f"{_mb(size)} is over',
        T + "test_inbound_limits.py",
    ),
    # what verifies
    (
        "a tool block verifies only with its signature",
        "return bool(expected and call.sig) and hmac.compare_digest(call.sig, expected)",
        "return bool(call.sig)",
        T + "test_history_binding.py",
    ),
    ("a call id becomes a call once", " or call.id in self._calls:", ":", T + "test_history_binding.py"),
    (
        "a tool block's turn is signed",
        "            call.turn,\n            message_id,",
        "            message_id,",
        SECURITY,
    ),
    (
        "a tool block is bound to its user",
        "self._scope = [chat_id, agent_id, user_id]",
        'self._scope = [chat_id, agent_id, ""]',
        T + "test_history_binding.py",
    ),
    (
        "a tool block is bound to its agent",
        "self._scope = [chat_id, agent_id, user_id]",
        'self._scope = [chat_id, "", user_id]',
        T + "test_history_binding.py",
    ),
    ("the identity token names its agent (aud)", '"aud": claims["model"]', '"x": 1', T + "test_inbound_identity.py"),
    (
        "the identity token lives its lifetime",
        '"exp": now + lifetime,',
        '"exp": now + 86400,',
        T + "test_inbound_identity.py",
    ),
    # what an agent may show
    ('"<details" in the agent\'s text stays text', '"&lt;" + found[1:] if', "found if", T + "test_pipe_secrets.py"),
    (
        "only http(s) links are kept",
        'if parts.scheme.lower() not in ("http", "https") or not parts.netloc:',
        "if not parts.netloc:",
        PINS,
    ),
    (
        "at most MAX_IMAGES images per answer",
        "if count < self.max_images and self._image_bytes + size <= self.max_turn_image_bytes:",
        "if True:",
        T + "test_outbound_limits.py",
    ),
    ("absurd usage counts are dropped", "0 <= value <= MAX_USAGE_COUNT", "0 <= value", T + "test_outbound_limits.py"),
    (
        "status text is cut short",
        "if len(text) <= MAX_STATUS_CHARS else",
        "if True else",
        T + "test_outbound_limits.py",
    ),
    ("an unfinished SSE line is bounded", "if self._held_size > self._max:", "if False:", T + "test_stream_bounds.py"),
    ("an SSE event is bounded", "if parser.size > limit:", "if False:", T + "test_stream_bounds.py"),
    (
        "tool arguments are a fenced block the arguments cannot close",
        "fence = _fence(text, 3)",
        'fence = "```"',
        T + "test_approval_dialog.py",
    ),
    (
        "the agent's message is escaped in the dialog",
        'text += "\\n\\n" + markdown_text(message)',
        'text += "\\n\\n" + message',
        T + "test_approval_dialog.py",
    ),
    ("the agent's error is text", "html.escape(error.message, quote=False)", "error.message", SECURITY),
    ("a subagent's name is text", "html.escape(subagent.name, quote=False)", "subagent.name", SECURITY),
    (
        "a tool block's attributes are escaped",
        "return html.escape(value, quote=True).replace",
        "return value.replace",
        T + "test_render_parse.py",
    ),
    ("reasoning is text", "html.escape(reasoning.text, quote=False)", "reasoning.text", T + "test_render_parse.py"),
    (
        "a source's title is text",
        'text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")',
        "pass",
        T + "test_outbound.py",
    ),
    # what is refused
    (
        "the OAuth token goes only to a real loopback address",
        "return ipaddress.ip_address(host).is_loopback",
        'return host.startswith("127.") or ipaddress.ip_address(host).is_loopback',
        T + "test_oauth_checks.py",
    ),
    (
        "the OAuth token never replaces a reserved header",
        "lowered in RESERVED_HEADERS or lowered.startswith",
        "False or lowered.startswith",
        T + "test_oauth_checks.py",
    ),
    (
        "a server-read key never names Open WebUI's own settings",
        "or name.upper().startswith(_OPENWEBUI_SECRETS):",
        ":",
        T + "test_pipe_secrets.py",
    ),
    ("the probe is for admins only", 'and (user or {}).get("role") == "admin"', "", T + "test_probe.py"),
]


def main(argv: list[str]) -> int:
    original = PIPE.read_text(encoding="utf-8")
    chosen = [b for b in BREAKAGES if not argv or any(word in b[0] for word in argv)]
    survived = 0
    try:
        for rule, keeps, breaks, tests in chosen:
            if original.count(keeps) != 1:
                print(f"{rule}: its text is not in the pipe once (found {original.count(keeps)}x)")
                survived += 1
                continue
            PIPE.write_text(original.replace(keeps, breaks), encoding="utf-8")
            run = subprocess.run(
                [sys.executable, "-m", "pytest", *tests.split(), "-q", "-p", "no:cacheprovider"],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            failed = [line.split("::", 1)[1] for line in run.stdout.splitlines() if line.startswith("FAILED")]
            if not failed and run.returncode not in (0, 1):  # did not even load: the breakage is a syntax error
                print(f"{rule}: the broken pipe did not run (pytest exit {run.returncode})")
                survived += 1
                continue
            survived += not failed
            print(
                f"{rule}: {len(failed)} failed"
                + "".join(f"\n    {name}" for name in failed[:3])
                + (f"\n    ... and {len(failed) - 3} more" if len(failed) > 3 else "")
            )
    finally:
        PIPE.write_text(original, encoding="utf-8")
    print(f"{len(chosen) - survived} of {len(chosen)} breakages failed a test")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
