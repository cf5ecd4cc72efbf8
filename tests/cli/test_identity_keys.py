"""The pipe's identity key: made once by sync, kept, rotated on request (staged, published, then
promoted by a later sync, the old public key kept 24 hours), revoked at once on request, printed
only as a JWKS; no private key ever appears in any output."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path

import jwt
import pytest
import respx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from provisioner.errors import ConfigError
from provisioner.identity_keys import (
    RETIRED_KEY_SECONDS,
    STAGED_KEY_SECONDS,
    TOKEN_SECONDS,
    jwks,
    jwks_of_private_key,
    next_identity_keys,
    plan_identity_keys,
    private_key_lines,
)
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
NOW = 1_800_000_000.0


def keys_of(value: object, *, now: float) -> list[dict[str, str]]:
    """The JWKS keys of an IDENTITY_KEYS value (jwks answers None for a value without keys)."""
    found = jwks(value, now=now)
    assert found is not None
    return found["keys"]


def _key(value: str) -> Ed25519PrivateKey:
    pem = json.loads(value)["signing"]["private_key_pem"]
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    return key


def _x(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_a_fresh_value_holds_one_ed25519_signing_key_and_nothing_retired() -> None:
    value = next_identity_keys(None, now=NOW)
    data = json.loads(value)
    assert set(data) == {"signing", "retired"} and data["retired"] == []
    assert data["signing"]["private_key_pem"].startswith("-----BEGIN PRIVATE KEY-----")
    assert data["signing"]["kid"] == keys_of(value, now=NOW)[0]["kid"]
    assert next_identity_keys(None, now=NOW) != value  # every instance its own key


def test_a_usable_value_is_kept_byte_for_byte() -> None:
    value = next_identity_keys(None, now=NOW)
    assert next_identity_keys(value, now=NOW + 3600) is value


@pytest.mark.parametrize(
    "live", ["", "not json", "[]", '{"signing": {"kid": "k", "private_key_pem": "x"}}', '{"retired": []}']
)
def test_an_unusable_value_is_replaced_by_a_fresh_key(live: str) -> None:
    fresh = next_identity_keys(live, now=NOW)
    assert fresh != live and jwks(fresh, now=NOW) is not None


def _kid(value: str, entry: str = "signing") -> str:
    return json.loads(value)[entry]["kid"]


def _rotated(value: str, at: float) -> str:
    """A rotation done the way it is meant to be: staged at `at`, promoted STAGED_KEY_SECONDS later."""
    return next_identity_keys(next_identity_keys(value, now=at, rotate=True), now=at + STAGED_KEY_SECONDS)


def test_a_rotation_stages_a_new_key_published_in_the_jwks_while_the_old_one_still_signs() -> None:
    first = next_identity_keys(None, now=NOW)
    old_kid = _kid(first)
    plan = plan_identity_keys(first, now=NOW, rotate=True)
    data = json.loads(plan.value)
    assert data["signing"] == json.loads(first)["signing"]  # the same key still signs
    new_kid = data["staged"]["kid"]
    assert new_kid != old_kid and data["staged"]["staged_at"] == int(NOW) and data["retired"] == []
    keys = keys_of(plan.value, now=NOW)
    assert [k["kid"] for k in keys] == [old_kid, new_kid]  # published: agents can fetch it before it signs
    assert "d" not in keys[1] and set(keys[1]) == {"kty", "crv", "alg", "use", "kid", "x"}
    [note] = plan.notes
    assert f"{new_kid} is staged" in note and f"{old_kid} still signs" in note


def test_a_sync_before_the_staged_key_is_old_enough_changes_nothing_and_says_when() -> None:
    staged = next_identity_keys(next_identity_keys(None, now=NOW), now=NOW, rotate=True)
    plan = plan_identity_keys(staged, now=NOW + STAGED_KEY_SECONDS - 1)
    assert plan.value is staged and plan.notes == ()  # byte for byte: the plan stays empty
    assert plan.waiting and _kid(staged, "staged") in plan.waiting and "makes it sign" in plan.waiting


def test_the_first_sync_once_the_staged_key_is_old_enough_promotes_it_and_retires_the_old_one() -> None:
    first = next_identity_keys(None, now=NOW)
    staged = next_identity_keys(first, now=NOW, rotate=True)
    later = NOW + STAGED_KEY_SECONDS
    plan = plan_identity_keys(staged, now=later)
    data = json.loads(plan.value)
    assert data["signing"] == {k: v for k, v in json.loads(staged)["staged"].items() if k != "staged_at"}
    assert "staged" not in data
    [retired] = data["retired"]
    assert retired["kid"] == _kid(first) and retired["retired_at"] == int(later)
    assert retired["public_jwk"]["x"] == _x(_key(first)) and "d" not in retired["public_jwk"]
    keys = keys_of(plan.value, now=later + 60)
    assert [k["kid"] for k in keys] == [data["signing"]["kid"], _kid(first)]  # the signing key first
    assert keys[0]["x"] == _x(_key(plan.value))
    assert plan.waiting is None and "signs from now on" in plan.notes[0]
    assert next_identity_keys(plan.value, now=later + 1) is plan.value  # then kept


def test_a_rotation_while_a_key_is_staged_is_refused() -> None:
    staged = next_identity_keys(next_identity_keys(None, now=NOW), now=NOW, rotate=True)
    with pytest.raises(ConfigError, match="already staged"):
        plan_identity_keys(staged, now=NOW + STAGED_KEY_SECONDS + 5, rotate=True)


def test_retired_keys_are_dropped_after_24_hours_at_the_next_sync() -> None:
    rotated = _rotated(next_identity_keys(None, now=NOW), NOW)
    retired_at = NOW + STAGED_KEY_SECONDS
    inside = retired_at + RETIRED_KEY_SECONDS - 1
    assert next_identity_keys(rotated, now=inside) is rotated  # nothing to drop: unchanged
    assert len(keys_of(rotated, now=inside)) == 2
    later = next_identity_keys(rotated, now=retired_at + RETIRED_KEY_SECONDS)
    assert json.loads(later)["retired"] == [] and json.loads(later)["signing"] == json.loads(rotated)["signing"]
    assert len(keys_of(rotated, now=retired_at + RETIRED_KEY_SECONDS)) == 1  # jwks never lists an expired one


def test_two_rotations_keep_both_old_keys_for_their_24_hours() -> None:
    two = _rotated(next_identity_keys(None, now=NOW), NOW)
    three = _rotated(two, NOW + 7200)
    assert [r["retired_at"] for r in json.loads(three)["retired"]] == [
        int(NOW + STAGED_KEY_SECONDS),
        int(NOW + 7200 + STAGED_KEY_SECONDS),
    ]
    assert len(keys_of(three, now=NOW + STAGED_KEY_SECONDS + RETIRED_KEY_SECONDS + 1)) == 2


# --- revoking a key at once, after a compromise ---------------------------------------------------------


def test_revoking_a_retired_key_drops_it_from_the_jwks_at_once_and_says_agents_must_refresh() -> None:
    first = next_identity_keys(None, now=NOW)
    rotated = _rotated(first, NOW)
    promoted_at = NOW + STAGED_KEY_SECONDS
    plan = plan_identity_keys(rotated, now=promoted_at + 3600, revoke=_kid(first))
    assert (
        json.loads(plan.value)["retired"] == [] and json.loads(plan.value)["signing"] == json.loads(rotated)["signing"]
    )
    assert [k["kid"] for k in keys_of(plan.value, now=promoted_at + 3600)] == [_kid(rotated)]
    [note] = plan.notes
    assert "revoked" in note and "refresh its JWKS" in note and "may still be valid" not in note


def test_revoking_a_key_retired_less_than_a_token_lifetime_ago_says_its_tokens_may_still_be_valid() -> None:
    first = next_identity_keys(None, now=NOW)
    rotated = _rotated(first, NOW)
    promoted_at = NOW + STAGED_KEY_SECONDS
    [note] = plan_identity_keys(rotated, now=promoted_at + 100, revoke=_kid(first)).notes
    assert f"may still be valid for {TOKEN_SECONDS - 100} s" in note and "refresh its JWKS" in note


def test_revoking_the_signing_key_promotes_the_staged_key_at_once_and_drops_the_old_one() -> None:
    first = next_identity_keys(None, now=NOW)
    staged = next_identity_keys(first, now=NOW, rotate=True)
    plan = plan_identity_keys(staged, now=NOW + 5, revoke=_kid(first))  # long before STAGED_KEY_SECONDS
    data = json.loads(plan.value)
    assert data["signing"]["kid"] == _kid(staged, "staged") and "staged" not in data and data["retired"] == []
    assert [k["kid"] for k in keys_of(plan.value, now=NOW + 5)] == [_kid(staged, "staged")]
    [note] = plan.notes
    assert "not retired" in note and "refresh its JWKS" in note and f"last {TOKEN_SECONDS} s" in note


def test_revoking_the_signing_key_with_nothing_staged_signs_with_a_fresh_key_at_once() -> None:
    rotated = _rotated(next_identity_keys(None, now=NOW), NOW)
    plan = plan_identity_keys(rotated, now=NOW + 7200, revoke=_kid(rotated))
    data = json.loads(plan.value)
    assert data["signing"]["kid"] not in (_kid(rotated),) and data["retired"] == json.loads(rotated)["retired"]
    assert _kid(rotated) not in {k["kid"] for k in keys_of(plan.value, now=NOW + 7200)}
    assert "refuses the identity until it does" in plan.notes[0]


def test_revoking_the_staged_key_drops_it_and_keeps_the_signing_key() -> None:
    first = next_identity_keys(None, now=NOW)
    staged = next_identity_keys(first, now=NOW, rotate=True)
    plan = plan_identity_keys(staged, now=NOW + 60, revoke=_kid(staged, "staged"))
    assert json.loads(plan.value) == json.loads(first)


def test_a_revoke_of_an_unknown_kid_or_with_a_rotation_or_of_nothing_is_refused() -> None:
    first = next_identity_keys(None, now=NOW)
    with pytest.raises(ConfigError, match=f"no such key; its keys: {_kid(first)} \\(signs now\\)"):
        plan_identity_keys(first, now=NOW, revoke="nope")
    with pytest.raises(ConfigError, match="one at a time"):
        plan_identity_keys(first, now=NOW, revoke=_kid(first), rotate=True)
    with pytest.raises(ConfigError, match="holds no identity key"):
        plan_identity_keys(None, now=NOW, revoke="k")


def test_an_expired_retired_key_cannot_be_revoked_it_is_gone_already() -> None:
    first = next_identity_keys(None, now=NOW)
    rotated = _rotated(first, NOW)
    with pytest.raises(ConfigError, match="no such key"):
        plan_identity_keys(rotated, now=NOW + STAGED_KEY_SECONDS + RETIRED_KEY_SECONDS, revoke=_kid(first))


def test_the_jwks_verifies_a_token_signed_with_the_valves_key() -> None:
    value = next_identity_keys(None, now=NOW)
    kid = json.loads(value)["signing"]["kid"]
    token = jwt.encode({"sub": "u1", "aud": "agent"}, _key(value), algorithm="EdDSA", headers={"kid": kid})
    [jwk] = keys_of(value, now=NOW)
    assert jwk == {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid, "x": jwk["x"]}
    claims = jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=["EdDSA"], audience="agent")
    assert claims["sub"] == "u1"


def test_a_valve_keys_kid_is_its_rfc_7638_thumbprint() -> None:
    # RFC 8037, appendix A.1 and A.3: this key's thumbprint.
    d = base64.urlsafe_b64decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=")
    key = Ed25519PrivateKey.from_private_bytes(d)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    [jwk] = jwks_of_private_key(pem)["keys"]
    assert jwk["x"] == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    assert jwk["kid"] == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    assert jwks_of_private_key(pem, "ops-2026")["keys"][0]["kid"] == "ops-2026"


def test_a_key_file_without_a_kid_gets_the_pipes_default_for_a_server_key(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AIHUB_IDENTITY_KEY_ID", raising=False)
    path = tmp_path / "identity.pem"
    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    code, out, _ = run_cli(capsys, "jwks", "--key-file", str(path))
    assert code == 0 and json.loads(out)["keys"][0]["kid"] == "server"
    monkeypatch.setenv("AIHUB_IDENTITY_KEY_ID", "ops-2026")
    code, out, _ = run_cli(capsys, "jwks", "--key-file", str(path))
    assert code == 0 and json.loads(out)["keys"][0]["kid"] == "ops-2026"


def test_only_the_private_keys_base64_is_what_redaction_looks_for() -> None:
    value = next_identity_keys(None, now=NOW)
    lines = private_key_lines(value)
    assert lines and all(line in json.loads(value)["signing"]["private_key_pem"] for line in lines)
    assert not any(line.startswith("-----") or line == json.loads(value)["signing"]["kid"] for line in lines)


def test_redaction_looks_for_the_staged_private_key_too() -> None:
    staged = next_identity_keys(next_identity_keys(None, now=NOW), now=NOW, rotate=True)
    pem = json.loads(staged)["staged"]["private_key_pem"]
    body = [line for line in pem.splitlines() if not line.startswith("-----")]
    assert body and set(body) <= set(private_key_lines(staged))


# --- the CLI: sync keeps it, --rotate-identity-key rotates it, jwks prints it -------------------------


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, FakeOpenWebUI]:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("desk")])
    write_function_dir(tmp_path / "fn", root, PIPE)
    server = FakeOpenWebUI()
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", "sk-admin")
    return root, server


def _run(capsys, desk, *command: str, secrets: tuple[str, ...] = ()) -> tuple[int, str, str]:
    root, server = desk
    args = ["-p", str(root), "--bundle", str(root.parent / "fn")] if {"sync", "diff"} & set(command) else []
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        return functools.partial(run_cli, secrets=secrets)(capsys, *command, *args)


def _valve(server: FakeOpenWebUI) -> str:
    return server.functions["aihub_agent_pipe"]["valves"]["IDENTITY_KEYS"]


def test_sync_makes_the_key_once_keeps_it_and_never_prints_it(capsys, desk) -> None:
    _, server = desk
    code, out, _ = _run(capsys, desk, "diff", "-o", "json")
    pipe = next(c for c in json.loads(out)["changes"] if c["id"] == "aihub_agent_pipe")
    assert {"path": "valves.IDENTITY_KEYS", "before": None, "after": "(sensitive)"} in pipe["fields"]
    code, sync_out, sync_err = _run(capsys, desk, "-v", "sync")
    assert code == 0
    value = _valve(server)
    secrets = tuple(private_key_lines(value))
    assert not any(line in out + sync_out + sync_err for line in secrets)  # the runs before it was known
    assert "POST /api/v1/functions/id/aihub_agent_pipe/valves/update -> 200" in sync_err  # -v logged the write
    assert _run(capsys, desk, "diff", "--detailed-exitcode", secrets=secrets)[0] == 0  # kept: nothing to do
    assert _run(capsys, desk, "sync", secrets=secrets)[0] == 0
    assert _valve(server) == value


def test_rotate_identity_key_stages_then_a_later_sync_promotes_and_the_old_kid_stays_in_jwks(
    capsys, desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, server = desk
    assert _run(capsys, desk, "sync")[0] == 0
    first = _valve(server)
    old_kid = _kid(first)
    secrets = tuple(private_key_lines(first))
    code, out, err = _run(capsys, desk, "sync", "--rotate-identity-key", "-o", "json", secrets=secrets)
    assert code == 0, err
    plan = json.loads(out)["plan"]
    [change] = plan["changes"]
    assert change["fields"] == [{"path": "valves.IDENTITY_KEYS", "before": "(sensitive)", "after": "(sensitive)"}]
    staged = _valve(server)
    new_kid = _kid(staged, "staged")
    assert _kid(staged) == old_kid and any(f"{new_kid} is staged" in n for n in plan["notes"])
    secrets += tuple(private_key_lines(staged))
    code, out, err = _run(capsys, desk, "jwks", secrets=secrets)
    assert code == 0 and [k["kid"] for k in json.loads(out)["keys"]] == [old_kid, new_kid]
    assert f"kid {old_kid}: signs the identity tokens now" in err and f"kid {new_kid}: staged" in err

    code, out, err = _run(capsys, desk, "sync", secrets=secrets)  # too early: it stays staged, and says so
    assert code == 0 and "No changes." in out and f"identity key {new_kid} is staged" in err
    assert _valve(server) == staged

    monkeypatch.setattr("provisioner.identity_keys.STAGED_KEY_SECONDS", 0)  # as if ten minutes had passed
    code, out, err = _run(capsys, desk, "sync", secrets=secrets)
    assert code == 0, err
    promoted = _valve(server)
    assert _kid(promoted) == new_kid and "staged" not in json.loads(promoted)
    code, out, err = _run(capsys, desk, "jwks", secrets=secrets)
    assert code == 0, err
    keys = json.loads(out)["keys"]
    assert [k["kid"] for k in keys] == [new_kid, old_kid]
    assert keys[0]["x"] == _x(_key(promoted))
    assert "signs the identity tokens now" in err and "retired" in err
    code, out, err = _run(capsys, desk, "jwks", "-o", "json", secrets=secrets)
    assert code == 0 and json.loads(out)["keys"] == keys and err == ""


def test_revoke_identity_key_drops_the_key_at_once_and_tells_to_refresh(capsys, desk, monkeypatch) -> None:
    _, server = desk
    monkeypatch.setattr("provisioner.identity_keys.STAGED_KEY_SECONDS", 0)
    assert _run(capsys, desk, "sync")[0] == 0
    first = _valve(server)
    secrets = tuple(private_key_lines(first))
    assert _run(capsys, desk, "sync", "--rotate-identity-key", secrets=secrets)[0] == 0
    secrets += tuple(private_key_lines(_valve(server)))
    assert _run(capsys, desk, "sync", secrets=secrets)[0] == 0  # promoted
    rotated = _valve(server)

    before = len(server.writes)
    code, out, err = _run(capsys, desk, "sync", "--revoke-identity-key", "no-such-kid", secrets=secrets)
    assert code == 1 and "no such key" in err and _kid(rotated) in err and len(server.writes) == before

    code, out, err = _run(capsys, desk, "sync", "--revoke-identity-key", _kid(first), secrets=secrets)
    assert code == 0, err
    assert "refresh its JWKS" in err and "valves.IDENTITY_KEYS" in out
    code, out, _ = _run(capsys, desk, "jwks", "-o", "json", secrets=secrets)
    assert [k["kid"] for k in json.loads(out)["keys"]] == [_kid(rotated)]

    code, out, err = _run(capsys, desk, "sync", "--revoke-identity-key", _kid(rotated), secrets=secrets)
    assert code == 0 and "refuses the identity until it does" in err
    fresh = _valve(server)
    secrets += tuple(private_key_lines(fresh))
    code, out, _ = _run(capsys, desk, "jwks", "-o", "json", secrets=secrets)
    assert [k["kid"] for k in json.loads(out)["keys"]] == [_kid(fresh)] and _kid(fresh) != _kid(rotated)


def test_jwks_without_an_identity_key_says_to_sync(capsys, desk) -> None:
    code, out, err = _run(capsys, desk, "jwks")
    assert code == 1 and out == "" and "run `provision sync` first" in err


def test_jwks_of_a_key_file_reads_no_instance_and_prints_no_private_key(
    capsys, desk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path = tmp_path / "identity.pem"
    path.write_bytes(pem)
    secrets = tuple(line for line in pem.decode().splitlines() if not line.startswith("-----"))
    monkeypatch.delenv("OPENWEBUI_URL")  # any attempt to read an instance would fail
    code, out, err = _run(capsys, desk, "jwks", "--key-file", str(path), "--key-id", "k1", secrets=secrets)
    assert code == 0, err
    [jwk] = json.loads(out)["keys"]
    assert (jwk["kid"], jwk["x"]) == ("k1", _x(key))
    assert "AIHUB_IDENTITY_KEY_ID" in err


@pytest.mark.parametrize(
    "content",
    [b"not a key", b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAA\n-----END PRIVATE KEY-----\n"],
)
def test_a_bad_key_file_is_named_and_its_content_never_echoed(capsys, desk, tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.pem"
    path.write_bytes(content)
    code, out, err = _run(capsys, desk, "jwks", "--key-file", str(path))
    assert code == 1 and out == "" and str(path) in err and "not an unencrypted PEM private key" in err
    assert "MC4CAQAwBQYDK2VwBCIEIAAAAAAA" not in err and "not a key" not in err


def test_an_rsa_key_file_is_refused_the_pipe_signs_with_eddsa(capsys, desk, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = tmp_path / "rsa.pem"
    path.write_bytes(pem)
    code, _, err = _run(capsys, desk, "jwks", "--key-file", str(path))
    assert code == 1 and "not an Ed25519 key" in err


def test_a_server_error_echoing_the_valves_masks_the_private_key_and_keeps_the_message(capsys, desk) -> None:
    import httpx

    _, server = desk
    echoed: list[str] = []

    def echo(method: str, path: str, body):
        if not path.endswith("/valves/update"):
            return None
        echoed.append(body["IDENTITY_KEYS"])
        return httpx.Response(400, json={"detail": f"bad valves: {body}"})

    server.faults.append(echo)
    code, _, err = _run(capsys, desk, "sync")
    [value] = echoed
    assert code == 1 and "bad valves" in err
    assert not any(line in err for line in private_key_lines(value))


def test_a_server_error_echoing_the_valves_masks_the_staged_private_key_too(capsys, desk) -> None:
    import httpx

    _, server = desk
    assert _run(capsys, desk, "sync")[0] == 0
    echoed: list[str] = []

    def echo(method: str, path: str, body):
        if not path.endswith("/valves/update"):
            return None
        echoed.append(body["IDENTITY_KEYS"])
        return httpx.Response(400, json={"detail": f"bad valves: {body}"})

    server.faults.append(echo)
    code, _, err = _run(capsys, desk, "sync", "--rotate-identity-key")
    [value] = echoed
    staged_pem = json.loads(value)["staged"]["private_key_pem"]
    body = [line for line in staged_pem.splitlines() if not line.startswith("-----")]
    assert code == 1 and "bad valves" in err and body
    assert not any(line in err for line in body)
