"""The pipe's identity key: made once by sync, kept, rotated on request with the old public key
kept 24 hours, printed only as a JWKS; the private key never appears in any output."""

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

from provisioner.identity_keys import (
    RETIRED_KEY_SECONDS,
    jwks,
    jwks_of_private_key,
    next_identity_keys,
    private_key_lines,
)
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
NOW = 1_800_000_000.0


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
    assert data["signing"]["kid"] == jwks(value, now=NOW)["keys"][0]["kid"]
    assert next_identity_keys(None, now=NOW) != value  # every instance its own key


def test_a_usable_value_is_kept_byte_for_byte() -> None:
    value = next_identity_keys(None, now=NOW)
    assert next_identity_keys(value, now=NOW + 3600) is value


@pytest.mark.parametrize("live", ["", "not json", "[]", '{"signing": {"kid": "k", "private_key_pem": "x"}}', '{"retired": []}'])
def test_an_unusable_value_is_replaced_by_a_fresh_key(live: str) -> None:
    fresh = next_identity_keys(live, now=NOW)
    assert fresh != live and jwks(fresh, now=NOW) is not None


def test_a_rotation_retires_the_old_public_key_and_signs_with_a_new_one() -> None:
    first = next_identity_keys(None, now=NOW)
    old_kid = json.loads(first)["signing"]["kid"]
    rotated = next_identity_keys(first, now=NOW, rotate=True)
    data = json.loads(rotated)
    assert data["signing"]["kid"] != old_kid
    [retired] = data["retired"]
    assert retired["kid"] == old_kid and retired["retired_at"] == int(NOW)
    assert retired["public_jwk"]["x"] == _x(_key(first)) and "d" not in retired["public_jwk"]
    keys = jwks(rotated, now=NOW + 60)["keys"]
    assert [k["kid"] for k in keys] == [data["signing"]["kid"], old_kid]  # the signing key first
    assert keys[0]["x"] == _x(_key(rotated))


def test_retired_keys_are_dropped_after_24_hours_at_the_next_sync() -> None:
    rotated = next_identity_keys(next_identity_keys(None, now=NOW), now=NOW, rotate=True)
    inside = NOW + RETIRED_KEY_SECONDS - 1
    assert next_identity_keys(rotated, now=inside) is rotated  # nothing to drop: unchanged
    assert len(jwks(rotated, now=inside)["keys"]) == 2
    later = next_identity_keys(rotated, now=NOW + RETIRED_KEY_SECONDS)
    assert json.loads(later)["retired"] == [] and json.loads(later)["signing"] == json.loads(rotated)["signing"]
    assert len(jwks(rotated, now=NOW + RETIRED_KEY_SECONDS)["keys"]) == 1  # jwks never lists an expired one


def test_two_rotations_keep_both_old_keys_for_their_24_hours() -> None:
    one = next_identity_keys(None, now=NOW)
    two = next_identity_keys(one, now=NOW, rotate=True)
    three = next_identity_keys(two, now=NOW + 7200, rotate=True)
    assert [r["retired_at"] for r in json.loads(three)["retired"]] == [int(NOW), int(NOW + 7200)]
    assert len(jwks(three, now=NOW + RETIRED_KEY_SECONDS + 1)["keys"]) == 2


def test_the_jwks_verifies_a_token_signed_with_the_valves_key() -> None:
    value = next_identity_keys(None, now=NOW)
    kid = json.loads(value)["signing"]["kid"]
    token = jwt.encode({"sub": "u1", "aud": "agent"}, _key(value), algorithm="EdDSA", headers={"kid": kid})
    [jwk] = jwks(value, now=NOW)["keys"]
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
    path.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
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


def test_rotate_identity_key_keeps_the_old_kid_in_jwks(capsys, desk) -> None:
    _, server = desk
    assert _run(capsys, desk, "sync")[0] == 0
    first = _valve(server)
    old_kid = json.loads(first)["signing"]["kid"]
    secrets = tuple(private_key_lines(first))
    code, out, _ = _run(capsys, desk, "sync", "--rotate-identity-key", "-o", "json", secrets=secrets)
    assert code == 0
    [change] = json.loads(out)["plan"]["changes"]
    assert change["fields"] == [{"path": "valves.IDENTITY_KEYS", "before": "(sensitive)", "after": "(sensitive)"}]
    rotated = _valve(server)
    secrets += tuple(private_key_lines(rotated))
    code, out, err = _run(capsys, desk, "jwks", secrets=secrets)
    assert code == 0
    keys = json.loads(out)["keys"]
    assert [k["kid"] for k in keys] == [json.loads(rotated)["signing"]["kid"], old_kid]
    assert keys[0]["x"] == _x(_key(rotated))
    assert "signs the identity tokens now" in err and "retired" in err
    code, out, err = _run(capsys, desk, "jwks", "-o", "json", secrets=secrets)
    assert code == 0 and json.loads(out)["keys"] == keys and err == ""


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
