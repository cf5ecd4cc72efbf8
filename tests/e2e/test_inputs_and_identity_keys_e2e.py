"""Against the session's real Open WebUI: the samples' rows take the files their capabilities
read, and the pipe's identity key is made once, kept, rotated (staged, then promoted by a later
sync), revoked, and printed as a JWKS that verifies what the key signs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provisioner.identity_keys import private_key_lines
from tests.support.chat_support import get, provision

PIPE = "aihub_agent_pipe"


def _valves(owui) -> dict:
    return get(owui, f"/api/v1/functions/id/{PIPE}/valves")


def _signed(value: str, claims: dict) -> str:
    signing = json.loads(value)["signing"]
    key = serialization.load_pem_private_key(signing["private_key_pem"].encode(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    return jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": signing["kid"]})


# Signs with Open WebUI's own PyJWT and cryptography, as the pipe does there: the PEM on stdin.
SIGN_IN_OPEN_WEBUI = """
import json, sys, jwt
signing = json.loads(sys.stdin.read())["signing"]
print(jwt.encode({"sub": "u3", "aud": "agent-y"}, signing["private_key_pem"], algorithm="EdDSA",
                 headers={"kid": signing["kid"]}))
"""


def _open_webui_python(owui) -> str:
    """The interpreter the instance's server runs on (its venv's python)."""
    pid = owui.status()["pid"]
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    python = argv[0].decode()
    assert Path(python).name.startswith("python"), argv
    return python


def _signed_in_open_webui(owui, value: str) -> str:
    result = subprocess.run(
        [_open_webui_python(owui), "-c", SIGN_IN_OPEN_WEBUI], input=value, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def _verify(token: str, keys: dict, audience: str) -> dict:
    kid = jwt.get_unverified_header(token)["kid"]
    jwk = jwt.PyJWKSet.from_dict(keys)[kid]
    return jwt.decode(token, jwk.key, algorithms=["EdDSA"], audience=audience)


def test_samples_rows_take_what_their_capabilities_read(owui, bundle, recorder, capsys) -> None:
    code, out, err = provision(capsys, "sync", *bundle)
    assert code == 0, out + err
    analyst = get(owui, "/api/v1/models/model", id=f"{PIPE}.document-analyst.default")["meta"]["capabilities"]
    assert (analyst["file_upload"], analyst["file_context"], analyst["vision"]) == (True, False, False)
    research = get(owui, "/api/v1/models/model", id=f"{PIPE}.research-assistant.default")["meta"]["capabilities"]
    assert (research["file_upload"], research["vision"]) == (False, True)
    faq = get(owui, "/api/v1/models/model", id=f"{PIPE}.policy-faq.default")["meta"]["capabilities"]
    assert (faq["file_upload"], faq["vision"]) == (False, False)
    entries = {e["id"]: e for e in json.loads(_valves(owui)["AGENTS"])}
    assert entries["document-analyst.default"]["reads"] == ["documents"]
    assert {e["identity"] for e in entries.values()} == {"auto"}


def test_identity_key_is_kept_staged_promoted_revoked_and_printed_as_a_jwks_that_verifies(
    owui, bundle, recorder, capsys, monkeypatch
) -> None:
    printed: list[str] = []

    def run(*args: str) -> tuple[int, str, str]:
        code, out, err = provision(capsys, *args)
        printed.append(out + err)
        return code, out, err

    def kids() -> list[str]:
        code, out, err = run("jwks", "-o", "json")
        assert code == 0, err
        return [k["kid"] for k in json.loads(out)["keys"]]

    assert run("sync", *bundle)[0] == 0
    first = _valves(owui)["IDENTITY_KEYS"]  # Open WebUI stored it: the pipe declares the valve
    old_kid = json.loads(first)["signing"]["kid"]
    secrets = private_key_lines(first)

    recorder.clear()
    code, out, err = run("sync", *bundle)
    assert code == 0 and "No changes." in out and recorder.writes == []  # kept: the second plan is empty
    assert _valves(owui)["IDENTITY_KEYS"] == first

    code, out, err = run("jwks", "-o", "json")
    assert code == 0, err
    keys = json.loads(out)
    assert [k["kid"] for k in keys["keys"]] == [old_kid]
    old_token = _signed(first, {"sub": "u1", "aud": f"{PIPE}.document-analyst.default"})
    assert _verify(old_token, keys, f"{PIPE}.document-analyst.default")["sub"] == "u1"

    # Publish first: the new key is staged, in the JWKS, and the old key still signs.
    code, out, err = run("sync", *bundle, "--rotate-identity-key")
    assert code == 0, out + err
    assert "valves.IDENTITY_KEYS" in out and "(sensitive)" in out and "is staged" in err
    staged = _valves(owui)["IDENTITY_KEYS"]
    new_kid = json.loads(staged)["staged"]["kid"]
    assert json.loads(staged)["signing"]["kid"] == old_kid != new_kid
    secrets += private_key_lines(staged)
    assert kids() == [old_kid, new_kid]

    recorder.clear()
    code, out, err = run("sync", *bundle)  # too early to sign with it: nothing written
    assert code == 0 and "No changes." in out and recorder.writes == [] and f"{new_kid} is staged" in err

    # Sign later: once it has been published long enough, the next sync promotes it.
    monkeypatch.setattr("provisioner.identity_keys.STAGED_KEY_SECONDS", 0)
    code, out, err = run("sync", *bundle)
    assert code == 0, out + err
    rotated = _valves(owui)["IDENTITY_KEYS"]
    assert json.loads(rotated)["signing"]["kid"] == new_kid and "staged" not in json.loads(rotated)
    assert _valves(owui)["HISTORY_SIGNING_KEY"]  # the history key is not touched

    code, out, err = run("jwks")
    assert code == 0, err
    keys = json.loads(out)
    assert [k["kid"] for k in keys["keys"]] == [new_kid, old_kid]  # the old kid stays for 24 hours
    new_token = _signed(rotated, {"sub": "u2", "aud": "agent-x"})
    assert _verify(new_token, keys, "agent-x")["sub"] == "u2"
    assert _verify(old_token, keys, f"{PIPE}.document-analyst.default")["sub"] == "u1"  # signed before: still valid
    assert _verify(_signed_in_open_webui(owui, rotated), keys, "agent-y")["sub"] == "u3"  # Open WebUI's own libraries

    assert run("diff", *bundle, "--detailed-exitcode")[0] == 0  # the rotation is kept too

    # After a compromise: the old public key leaves the JWKS at once.
    code, out, err = run("sync", *bundle, "--revoke-identity-key", old_kid)
    assert code == 0, out + err
    assert "refresh its JWKS" in err
    assert kids() == [new_kid]
    code, out, err = run("jwks", "-o", "json")
    revoked = json.loads(out)
    try:
        _verify(old_token, revoked, f"{PIPE}.document-analyst.default")
    except KeyError:  # PyJWKSet: no key with that kid
        pass
    else:
        raise AssertionError("a token of the revoked key still verifies")
    assert _verify(new_token, revoked, "agent-x")["sub"] == "u2"
    assert not any(line in output for output in printed for line in secrets)  # no private key, ever
