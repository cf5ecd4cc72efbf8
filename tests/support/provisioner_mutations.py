"""Prove that the tests pin the provisioner's security rules: apply each breakage alone to its
module, run the tests named for it (stopping at the first failure), restore the module. Not a
test: run it by hand after changing a pinned rule,

    .venv/bin/python -m tests.support.provisioner_mutations [WORD ...]

(WORDs pick the breakages whose rule contains one). Every breakage must fail at least one test;
one whose text is no longer in its module once is reported as such (the rule moved: update its
text here). The pipe's own pins are tests/support/pin_mutations.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SECRETS = "tests/cli/test_secrets.py"
SECURITY = "tests/cli/test_security_inputs.py"
BAD = "tests/cli/test_bad_inputs.py"
KEYS = "tests/cli/test_identity_keys.py"
CLIENT = "tests/cli/test_client.py"
TOKEN = "tests/core/test_token.py"
TOKEN_FILE = "tests/cli/test_token_file.py"
DUMP = "tests/core/test_dump.py"
COMMIT = "tests/core/test_commit_message.py"
REDACTION = "tests/core/test_redaction.py"
VARIABLES = "tests/cli/test_variables_secrets.py"
PINS = "tests/cli/test_provisioner_pins.py"
PIPE_VALVES = "tests/cli/test_pipe_valves.py"

# (the rule, the module, the text that keeps it, the text that breaks it, the tests that pin it)
BREAKAGES = [
    (
        "loopback is an address, not a name starting with 127.",
        "provisioner/urls.py",
        'if host.lower() == "localhost":',
        'if host.lower() == "localhost" or host.startswith("127."):',
        [PINS, CLIENT],
    ),
    (
        "a user or password in a written URL is refused",
        "provisioner/urls.py",
        'if "@" in parts.netloc:',
        "if False:",
        [PINS, SECURITY],
    ),
    (
        "a query parameter named like a credential is refused",
        "provisioner/urls.py",
        "if words & _SECRET_WORDS:",
        "if False:",
        [PINS, SECURITY],
    ),
    (
        "plain http to Open WebUI off loopback is refused",
        "provisioner/openwebui/client.py",
        'parts.scheme == "http"\n        and not insecure\n        and not is_loopback(parts.hostname)',
        "False\n        and not insecure\n        and not is_loopback(parts.hostname)",
        [PINS, CLIENT],
    ),
    (
        "credentials in the Open WebUI URL are refused",
        "provisioner/openwebui/client.py",
        "if parts.username or parts.password:",
        "if False:",
        [PINS, CLIENT],
    ),
    (
        "plain http never goes through an environment proxy",
        "provisioner/openwebui/client.py",
        'mounts={"http://": httpx.HTTPTransport()}',
        "mounts={}",
        [PINS],
    ),
    (
        "redirects are not followed with the token",
        "provisioner/openwebui/client.py",
        "timeout=timeout, follow_redirects=False, mounts=",
        "timeout=timeout, follow_redirects=True, mounts=",
        [PINS],
    ),
    (
        "a token with a line break is refused (header injection)",
        "provisioner/openwebui/client.py",
        "if not _HEADER_VALUE.fullmatch(token):",
        "if False:",
        [PINS, CLIENT],
    ),
    (
        "api_key_env may not name the admin token's variables",
        "provisioner/blueprints.py",
        "if name in TOKEN_VARIABLES:",
        "if False:",
        [PINS, BAD],
    ),
    (
        "api_key_env may not name Open WebUI's own secrets",
        "provisioner/blueprints.py",
        "if name in SERVER_SECRET_VARIABLES:",
        "if False:",
        [PINS, BAD],
    ),
    (
        "a key variable holding the admin token in use is refused",
        "provisioner/desired.py",
        "if token and value and token.strip() in value:",
        "if False:",
        [PINS, VARIABLES],
    ),
    (
        "api_key_from: server reads no value",
        "provisioner/desired.py",
        "continue  # the Open WebUI server reads it at chat time; sync needs no value",
        "pass",
        [PINS],
    ),
    (
        "plain http to a backend off loopback needs insecure: true",
        "provisioner/loader.py",
        "if host and not insecure:",
        "if host and False:",
        [PINS, BAD],
    ),
    (
        "the OAuth token goes only over https or to loopback",
        "provisioner/loader.py",
        'if not backend["oauth_token_header"] or url.lower().startswith("https://"):',
        "if True:",
        [PINS, BAD],
    ),
    (
        "oauth_token_header may not be a header the pipe sets",
        "provisioner/blueprints.py",
        "if lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIX):",
        "if False:",
        [PINS, BAD],
    ),
    (
        "hidden characters in names are refused",
        "provisioner/blueprints.py",
        "    char = first_hidden(value)\n    if char is not None:",
        "    char = first_hidden(value)\n    if False:",
        [PINS, SECURITY],
    ),
    (
        "hidden characters elsewhere are shown escaped",
        "provisioner/text.py",
        'return "".join(_escape(c) if is_hidden(c) and c not in keep else c for c in text)',
        "return text",
        [PINS, SECURITY],
    ),
    (
        "JSON output is ASCII",
        "provisioner/cli.py",
        'sys.stdout.write(json.dumps({"plan": plan.to_json(), "result": report.to_json()}, indent=2) + "\\n")',
        'sys.stdout.write(json.dumps({"plan": plan.to_json(), "result": report.to_json()}, indent=2, '
        'ensure_ascii=False) + "\\n")',
        [PINS],
    ),
    (
        "an icon URL must be https",
        "provisioner/icons.py",
        'if not re.match(r"^https://\\S+$", value, re.IGNORECASE):',
        "if False:",
        [PINS, BAD],
    ),
    (
        "an icon URL may not carry a credential",
        "provisioner/icons.py",
        "        why = credential_in_url(value)\n        if why:",
        "        why = None\n        if why:",
        [PINS, BAD],
    ),
    (
        "an icon file must be inside the blueprint directory",
        "provisioner/paths.py",
        "return path if path.is_relative_to(root) else None",
        "return path",
        [PINS, BAD],
    ),
    (
        "the IDENTITY_KEYS valve is sensitive in plans",
        "provisioner/desired.py",
        "sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_SIGNING_VALVE, PIPE_IDENTITY_VALVE})",
        "sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_SIGNING_VALVE})",
        [KEYS],
    ),
    (
        "the API_KEYS valve is sensitive in plans",
        "provisioner/desired.py",
        "sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_SIGNING_VALVE, PIPE_IDENTITY_VALVE})",
        "sensitive=frozenset({PIPE_SIGNING_VALVE, PIPE_IDENTITY_VALVE})",
        [PINS, SECRETS],
    ),
    (
        "the HISTORY_SIGNING_KEY valve is sensitive in plans",
        "provisioner/desired.py",
        "sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_SIGNING_VALVE, PIPE_IDENTITY_VALVE})",
        "sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_IDENTITY_VALVE})",
        [PIPE_VALVES],
    ),
    (
        "a sensitive field shows as (sensitive)",
        "provisioner/plan.py",
        "    if change.sensitive:\n        return SENSITIVE",
        "    if False:\n        return SENSITIVE",
        [KEYS],
    ),
    (
        "a valve named like a secret is masked in errors",
        "provisioner/openwebui/apply.py",
        "if _SECRET_VALVE_NAME.search(str(name)):",
        "if False:",
        [PINS],
    ),
    (
        "the history signing key is kept, not rotated",
        "provisioner/desired.py",
        "return live if isinstance(live, str) and len(live) >= SIGNING_KEY_MIN_LENGTH else fresh",
        "return fresh",
        [PIPE_VALVES],
    ),
    (
        "redaction masks a JSON-escaped echo",
        "provisioner/redaction.py",
        "        json.dumps(secret)[1:-1],\n",
        "",
        [REDACTION],
    ),
    (
        "redaction withholds a text holding a piece of a secret",
        "provisioner/redaction.py",
        "                return WITHHELD",
        "                return text",
        [REDACTION],
    ),
    (
        "the staged private key is masked too",
        "provisioner/identity_keys.py",
        'entries = (data.get("signing"), data.get("staged")) if data else ()',
        'entries = (data.get("signing"),) if data else ()',
        [KEYS],
    ),
    (
        "a staged key is published in the JWKS",
        "provisioner/identity_keys.py",
        "        keys.append(public_jwk(staged[1], staged[0]))",
        "        pass",
        [KEYS],
    ),
    (
        "a staged key signs only once published STAGED_KEY_SECONDS",
        "provisioner/identity_keys.py",
        "elif staged is not None and now - staged[2] >= STAGED_KEY_SECONDS:",
        "elif staged is not None:",
        [KEYS],
    ),
    (
        "a revoked signing key is not retired (it leaves the JWKS)",
        "provisioner/identity_keys.py",
        "    return new_kid, new_key, None, retired, [note]",
        "    return new_kid, new_key, None, [*retired, _retire(kid, key, now)], [note]",
        [KEYS],
    ),
    (
        "a revoked retired key leaves the JWKS",
        "provisioner/identity_keys.py",
        'return kid, key, staged, [e for e in retired if e["kid"] != revoke], [note]',
        "return kid, key, staged, retired, [note]",
        [KEYS],
    ),
    (
        "a retired key is dropped after RETIRED_KEY_SECONDS",
        "provisioner/identity_keys.py",
        "and now - when < RETIRED_KEY_SECONDS:",
        ":",
        [KEYS],
    ),
    (
        "jwks prints no private key",
        "provisioner/identity_keys.py",
        'return {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid or thumbprint, "x": x}',
        'return {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid or thumbprint, "x": x, '
        '"d": _b64url(key.private_bytes_raw())}',
        [KEYS],
    ),
    (
        "a token file must be a regular file",
        "provisioner/openwebui/token_file.py",
        "if not stat.S_ISREG(info.st_mode):",
        "if False:",
        [TOKEN_FILE, TOKEN],
    ),
    (
        "a token file is opened non-blocking",
        "provisioner/openwebui/token_file.py",
        "flags = os.O_RDONLY | os.O_NONBLOCK |",
        "flags = os.O_RDONLY |",
        [TOKEN_FILE, TOKEN],
    ),
    (
        "a token file is read up to a cap",
        "provisioner/openwebui/token_file.py",
        "raw = _read_at_most(fd, MAX_TOKEN_FILE_BYTES + 1)",
        "raw = os.read(fd, 1 << 30)",
        [PINS, TOKEN_FILE],
    ),
    (
        "a token file others may read is warned about",
        "provisioner/openwebui/token_file.py",
        "if warn is not None and info.st_mode & (stat.S_IRGRP | stat.S_IROTH):",
        "if False:",
        [TOKEN_FILE],
    ),
    (
        "a password file keeps the spaces at its ends",
        "provisioner/openwebui/token.py",
        'password = text.removesuffix("\\n").removesuffix("\\r")',
        "password = text.strip()",
        [TOKEN],
    ),
    (
        "the key file provision token writes is 0600",
        "provisioner/openwebui/token.py",
        "os.fchmod(fd, 0o600)",
        "pass",
        [TOKEN],
    ),
    (
        "commit messages drop hidden characters",
        "provisioner/commit_message.py",
        'words = ("".join(c for c in word if not is_hidden(c)) for word in text.split())',
        "words = iter(text.split())",
        [COMMIT],
    ),
    (
        "a commit message's run URL is plain http(s)",
        "provisioner/commit_message.py",
        "return cls(version, commit, _web_url(run_url),",
        "return cls(version, commit, run_url,",
        [COMMIT],
    ),
    (
        "dump matches names whole",
        "provisioner/dump.py",
        "if not (_IDENTIFIER.fullmatch(blueprint_id) and _IDENTIFIER.fullmatch(agent_id)):",
        'if not (re.match(r"^[a-z][a-z0-9_-]{0,63}$", blueprint_id) and '
        're.match(r"^[a-z][a-z0-9_-]{0,63}$", agent_id)):',
        [DUMP],
    ),
    (
        "dump writes no path outside DIR",
        "provisioner/dump.py",
        "unsafe = [name for name in dumped.files if _unsafe_name(name)]",
        "unsafe = []",
        [DUMP],
    ),
    (
        "dump --force replaces a symlink, never writes through it",
        "provisioner/dump.py",
        "            path.unlink()  # --force replaces the link itself",
        "            pass  # --force replaces the link itself",
        [PINS, DUMP],
    ),
    (
        "init and dump never write through a symlinked directory",
        "provisioner/paths.py",
        "            if path.is_symlink():\n",
        "            if False:\n",
        [PINS, DUMP, "tests/cli/test_init.py"],
    ),
    (
        "a user function may not take a bundle id",
        "provisioner/pipeline.py",
        "if f.id in bundle_ids or f.id.startswith(BUNDLE_PREFIX)",
        "if False",
        [PINS, "tests/cli/test_user_functions.py"],
    ),
    (
        "a conflict sees a valve key the plan did not read",
        "provisioner/conflicts.py",
        "paths = set(want) if only_wanted else set(want) | set(have)",
        "paths = set(want)",
        ["tests/cli/test_conflicts.py"],
    ),
    (
        "drift is credited to the newest version that brought the value back",
        "provisioner/openwebui/drift.py",
        "            if data is None or digest(_snapshot_value(data, path)) != want:\n                break",
        "            if data is None or digest(_snapshot_value(data, path)) != want:\n                continue",
        ["tests/core/test_drift.py"],
    ),
    (
        "a retried group create looks for the group first",
        "provisioner/openwebui/client.py",
        "if attempt and made is not None and (found := made()) is not None:",
        "if False:",
        ["tests/cli/test_groups_apply.py"],
    ),
    (
        "no expanded variable may hold the admin token",
        "provisioner/pipeline.py",
        "return dataclasses.replace(variables, secrets={TOKEN_IN_USE: token, **variables.secrets})",
        "return variables",
        [PINS, VARIABLES],
    ),
    (
        "${NAME} reads the environment only for names env_allow lists",
        "provisioner/variables.py",
        "return self.env.get(name) if name in self.env_allow else None",
        "return self.env.get(name)",
        [VARIABLES, "tests/cli/test_targets.py"],
    ),
    (
        "env_allow may not name a token or server secret",
        "provisioner/targets.py",
        "        if name in secret\n    ]",
        "        if False\n    ]",
        [VARIABLES, "tests/cli/test_targets.py"],
    ),
    (
        "provision token --out never writes through a symlink",
        "provisioner/openwebui/token.py",
        '| getattr(os, "O_NOFOLLOW", 0), 0o600)',
        ", 0o600)",
        [PINS, TOKEN],
    ),
    (
        "a Markdown code span's fence is longer than any backtick run in it",
        "provisioner/render_markdown.py",
        'fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)',
        'fence = "`"',
        ["tests/cli/test_render_markdown.py", "tests/core/test_markdown_safety.py"],
    ),
    (
        "a model icon may not be an SVG",
        "provisioner/icons.py",
        'allowed = MODEL_IMAGE_TYPES | ({"image/svg+xml"} if allow_svg else set())',
        'allowed = MODEL_IMAGE_TYPES | {"image/svg+xml"}',
        [PINS, BAD],
    ),
    (
        "an unmanaged row is never updated without --adopt",
        "provisioner/plan.py",
        "                if (kind, ident) not in adopt_set:",
        "                if False:",
        ["tests/core/test_plan.py", "tests/cli/test_cli.py"],
    ),
    (
        "prune never deletes an unmanaged row",
        "provisioner/plan.py",
        "            if ident in want or not live.managed:",
        "            if ident in want:",
        ["tests/core/test_plan.py"],
    ),
    (
        "a row is provision's only when its marker names provision",
        "provisioner/state.py",
        'and (meta[MARKER_KEY].get("managed_by") == MANAGED_BY)',
        "and True",
        [PINS],
    ),
    (
        "--prune refuses an empty desired set",
        "provisioner/plan.py",
        "    if prune and not desired.models:",
        "    if False:",
        ["tests/core/test_plan.py"],
    ),
    (
        "a private agent gets no grant",
        "provisioner/desired.py",
        "    if not isinstance(access, GroupAccess):\n        return []",
        "    if not isinstance(access, GroupAccess):\n        return [dict(PUBLIC_GRANT)]",
        ["tests/core/test_desired.py"],
    ),
    (
        "a missing group fails validation by default",
        "provisioner/desired.py",
        "        elif skip_missing:\n            continue",
        "        elif True:\n            continue",
        ["tests/core/test_desired.py", "tests/core/test_groups.py"],
    ),
]


def main(words: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still restores the module (finally)
    chosen = [b for b in BREAKAGES if not words or any(w in b[0] for w in words)]
    survived = 0
    for rule, module, keeps, breaks, tests in chosen:
        path = ROOT / module
        original = path.read_text(encoding="utf-8")
        if original.count(keeps) != 1:
            print(f"MOVED     {rule}: its text is in {module} {original.count(keeps)}x, not once", flush=True)
            survived += 1
            continue
        tests = [t for t in tests if (ROOT / t).exists()]
        if not tests:  # pytest with no path would run the whole suite
            print(f"NO TESTS  {rule}: none of its test files exists", flush=True)
            survived += 1
            continue
        started = time.monotonic()
        try:
            path.write_text(original.replace(keeps, breaks), encoding="utf-8")
            run = subprocess.run(
                [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
            )
        finally:
            path.write_text(original, encoding="utf-8")
        failed = [
            line.split("::", 1)[1].split(" ")[0]
            for line in run.stdout.splitlines()
            if line.startswith(("FAILED", "ERROR"))
        ]
        survived += not failed
        print(
            f"{'caught' if failed else 'SURVIVED':9} {rule} ({module}; {time.monotonic() - started:.0f} s)"
            + "".join(f"\n    {name}" for name in failed[:2]),
            flush=True,
        )
    print(f"{len(chosen) - survived} of {len(chosen)} breakages caught")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
