"""The pipe's identity signing key (its IDENTITY_KEYS valve) and the JWKS agents verify with.

The pipe signs who is asking (an EdDSA JWT, `aud` the agent) with the private key of the valve's
`signing` entry, and with nothing else; agents verify with the public keys `provision jwks`
prints. sync makes the key once and keeps it, like HISTORY_SIGNING_KEY: a new key at every sync
would fail every agent holding the JWKS.

A rotation publishes first and signs later: `sync --rotate-identity-key` puts a new key in
`staged` (in the JWKS, not signing); the first sync STAGED_KEY_SECONDS or more later promotes it
(it signs, and the old key moves to `retired`). A retired public key stays published for
RETIRED_KEY_SECONDS (far longer than a token lives), so tokens signed just before still verify;
then the next sync drops it. `sync --revoke-identity-key KID` drops a key at once, after a
compromise: a revoked signing key is replaced at once (by the staged key, else a fresh one) and
is not retired. An agent keeps accepting a revoked key until it fetches the JWKS again, and
tokens live TOKEN_SECONDS: the notes say so.

The valve's value holds private keys: it is sensitive, and nothing here returns it in anything
meant for output.

Layer: core.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .contract import IDENTITY_VALVE, PIPE_FUNCTION_ID
from .desired import PIPE_IDENTITY_VALVE
from .errors import ConfigError
from .state import InstanceState

RETIRED_KEY_SECONDS = 86400
# How long a staged key is published before a sync makes it sign: the JWKS caches of the common
# verifiers (PyJWT's PyJWKClient keeps one 300 s, jose's createRemoteJWKSet 600 s) have let it in.
STAGED_KEY_SECONDS = 600
# How long a token the pipe signs is valid (its exp; the server's
# FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS changes it, 300 s by default).
TOKEN_SECONDS = 300
# The kid the pipe signs with when the server's AIHUB_IDENTITY_PRIVATE_KEY comes without an
# AIHUB_IDENTITY_KEY_ID.
SERVER_KEY_ID = "server"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def public_jwk(key: Ed25519PrivateKey, kid: str | None = None) -> dict[str, str]:
    """The key's public half as a JWK agents verify EdDSA tokens with; `kid` defaults to the
    RFC 7638 thumbprint, so the same key always gets the same id."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    x = _b64url(raw)
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"))  # RFC 7638's order
    thumbprint = _b64url(hashlib.sha256(members.encode("ascii")).digest())
    return {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid or thumbprint, "x": x}


def _private_pem(key: Ed25519PrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def load_private_key(pem: bytes | str) -> Ed25519PrivateKey:
    """An Ed25519 private key from PEM; the ValueError never carries the key's text."""
    data = pem.encode("utf-8") if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError("not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 key (the pipe signs with EdDSA)")
    return key


def _signing(value: Any) -> tuple[str, Ed25519PrivateKey] | None:
    """The kid and key of the valve's `signing` entry, or None when it holds no usable key."""
    if not isinstance(value, Mapping):
        return None
    kid, pem = value.get("kid"), value.get("private_key_pem")
    if not (isinstance(kid, str) and kid and isinstance(pem, str)):
        return None
    try:
        return kid, load_private_key(pem)
    except ValueError:
        return None


def _staged(value: Any) -> tuple[str, Ed25519PrivateKey, int] | None:
    """The kid, key and stamp of the valve's `staged` entry, or None (none, or not usable)."""
    signing = _signing(value)
    when = value.get("staged_at") if isinstance(value, Mapping) else None
    if signing is None or not isinstance(when, int) or isinstance(when, bool):
        return None
    return signing[0], signing[1], when


def _retired(value: Any, now: float) -> list[dict[str, Any]]:
    """The well-formed retired entries still inside their RETIRED_KEY_SECONDS."""
    kept = []
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, Mapping):
            continue
        jwk, when = entry.get("public_jwk"), entry.get("retired_at")
        if not (isinstance(entry.get("kid"), str) and isinstance(jwk, Mapping) and isinstance(jwk.get("x"), str)):
            continue
        if isinstance(when, (int, float)) and not isinstance(when, bool) and now - when < RETIRED_KEY_SECONDS:
            kept.append(dict(entry))
    return kept


def _parsed(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _valve(
    kid: str,
    key: Ed25519PrivateKey,
    retired: list[dict[str, Any]],
    staged: tuple[str, Ed25519PrivateKey, int] | None = None,
) -> str:
    data: dict[str, Any] = {"signing": {"kid": kid, "private_key_pem": _private_pem(key)}, "retired": retired}
    if staged is not None:
        data["staged"] = {"kid": staged[0], "private_key_pem": _private_pem(staged[1]), "staged_at": staged[2]}
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class KeyPlan:
    """The IDENTITY_KEYS value sync writes, and what a reader of the plan must know about it:
    `notes` go with the change (a key staged, promoted, revoked), `waiting` is said even when
    nothing changes (a staged key not yet old enough to sign)."""

    value: str
    notes: tuple[str, ...] = ()
    waiting: str | None = None


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _fresh() -> tuple[str, Ed25519PrivateKey]:
    key = Ed25519PrivateKey.generate()
    return public_jwk(key)["kid"], key


def _retire(kid: str, key: Ed25519PrivateKey, now: float) -> dict[str, Any]:
    return {"kid": kid, "public_jwk": public_jwk(key, kid), "retired_at": int(now)}


_REFRESH = (
    "agents keep accepting it until they fetch the JWKS again: make every agent refresh its JWKS now "
    "(restart it, or clear its JWKS cache)"
)


def plan_identity_keys(live: Any, *, now: float, rotate: bool = False, revoke: str | None = None) -> KeyPlan:
    """What sync does to the IDENTITY_KEYS valve, given the live value (None: there is none).

    A usable live value comes back unchanged (byte for byte: the plan stays empty) unless a
    retired key has outlived RETIRED_KEY_SECONDS (it is dropped), a staged key has been
    published STAGED_KEY_SECONDS (it is promoted), `rotate` stages a new key, or `revoke` names
    a key to drop at once. A missing or unusable value is replaced by a fresh key. ConfigError
    (nothing written) for a rotation while a key is staged, a revoke of a kid the valve has not,
    or both at once.
    """
    if rotate and revoke:
        raise ConfigError("--rotate-identity-key and --revoke-identity-key: use one at a time")
    data = _parsed(live)
    current = _signing(data.get("signing")) if data else None
    if data is None or current is None:
        if revoke:
            raise ConfigError(f"--revoke-identity-key {revoke}: the pipe holds no identity key (nothing to revoke)")
        kid, key = _fresh()
        return KeyPlan(_valve(kid, key, []))
    kid, key = current
    staged = _staged(data.get("staged"))
    retired = _retired(data.get("retired"), now)
    notes: list[str] = []
    waiting = None
    if revoke:
        kid, key, staged, retired, notes = _revoked(revoke, kid, key, staged, retired, now)
    elif rotate:
        if staged is not None:
            raise ConfigError(
                f"identity key {staged[0]} is already staged (since {_utc(staged[2])}): the first sync from "
                f"{_utc(staged[2] + STAGED_KEY_SECONDS)} on makes it sign; rotate again after that "
                f"(--revoke-identity-key {staged[0]} drops it)"
            )
        new_kid, new_key = _fresh()
        staged = (new_kid, new_key, int(now))
        notes.append(
            f"identity key {new_kid} is staged: `provision jwks` publishes it now, {kid} still signs. The first sync "
            f"from {_utc(now + STAGED_KEY_SECONDS)} on makes {new_kid} sign: give every agent that holds a copy of the "
            "JWKS the new one before that"
        )
    elif staged is not None and now - staged[2] >= STAGED_KEY_SECONDS:
        retired.append(_retire(kid, key, now))
        notes.append(
            f"identity key {staged[0]} (staged {_utc(staged[2])}) signs from now on; {kid} is retired and stays in "
            f"the JWKS {RETIRED_KEY_SECONDS // 3600} hours"
        )
        kid, key, staged = staged[0], staged[1], None
    elif staged is not None:
        waiting = (
            f"Note: identity key {staged[0]} is staged (published since {_utc(staged[2])}); the first sync from "
            f"{_utc(staged[2] + STAGED_KEY_SECONDS)} on makes it sign"
        )
    value = _valve(kid, key, retired, staged)
    if json.loads(value) == data:
        value = live  # unchanged: byte for byte, so the plan stays empty
    return KeyPlan(value, tuple(notes), waiting)


def _revoked(
    revoke: str,
    kid: str,
    key: Ed25519PrivateKey,
    staged: tuple[str, Ed25519PrivateKey, int] | None,
    retired: list[dict[str, Any]],
    now: float,
) -> tuple[str, Ed25519PrivateKey, tuple[str, Ed25519PrivateKey, int] | None, list[dict[str, Any]], list[str]]:
    """The valve's parts once `revoke` is dropped, and the notes that say what that means."""
    if staged is not None and revoke == staged[0]:
        note = f"identity key {revoke} (staged, it never signed) is revoked and leaves the JWKS; {_REFRESH}"
        return kid, key, None, retired, [note]
    gone = next((e for e in retired if e["kid"] == revoke), None)
    if gone is not None:
        note = f"identity key {revoke} (retired {_utc(gone['retired_at'])}) is revoked and leaves the JWKS; {_REFRESH}"
        left = gone["retired_at"] + TOKEN_SECONDS - now
        if left > 0:
            note += (
                f". Tokens it signed before it retired may still be valid for {int(left)} s (they live "
                f"{TOKEN_SECONDS} s): they stop verifying too"
            )
        return kid, key, staged, [e for e in retired if e["kid"] != revoke], [note]
    if revoke != kid:
        known = [f"{kid} (signs now)"]
        known += [f"{staged[0]} (staged)"] if staged is not None else []
        known += [f"{e['kid']} (retired)" for e in retired]
        raise ConfigError(f"--revoke-identity-key {revoke}: the pipe has no such key; its keys: {', '.join(known)}")
    if staged is not None:
        new_kid, new_key = staged[0], staged[1]
        since = f"the staged key, published since {_utc(staged[2])}"
    else:
        new_kid, new_key = _fresh()
        since = "a new key, published from now on"
    note = (
        f"identity key {revoke} signed until now: it is revoked and leaves the JWKS at once (not retired), so tokens "
        f"it signed in the last {TOKEN_SECONDS} s stop verifying; {_REFRESH}. {new_kid} ({since}) signs from the "
        f"next chat: an agent that has not fetched a JWKS with {new_kid} refuses the identity until it does"
    )
    return new_kid, new_key, None, retired, [note]


def next_identity_keys(live: Any, *, now: float, rotate: bool = False, revoke: str | None = None) -> str:
    """The IDENTITY_KEYS value sync writes (plan_identity_keys, without its notes)."""
    return plan_identity_keys(live, now=now, rotate=rotate, revoke=revoke).value


def live_identity_keys(observed: InstanceState) -> Any:
    """The pipe's IDENTITY_KEYS valve as the instance holds it (None: no pipe, or no valve)."""
    pipe = observed.functions.get(PIPE_FUNCTION_ID)
    return pipe.fields.get(PIPE_IDENTITY_VALVE) if pipe is not None else None


def jwks(value: Any, *, now: float) -> dict[str, list[dict[str, str]]] | None:
    """The public keys of an IDENTITY_KEYS value: the signing key first, then the staged key,
    then each retired key still inside its RETIRED_KEY_SECONDS. None when the value holds no
    usable signing key."""
    data = _parsed(value)
    current = _signing(data.get("signing")) if data else None
    if data is None or current is None:
        return None
    kid, key = current
    keys = [public_jwk(key, kid)]
    staged = _staged(data.get("staged"))
    if staged is not None:
        keys.append(public_jwk(staged[1], staged[0]))
    for entry in _retired(data.get("retired"), now):
        keys.append({**keys[0], "kid": entry["kid"], "x": entry["public_jwk"]["x"]})
    return {"keys": keys}


def jwks_of_private_key(pem: bytes, kid: str | None = None) -> dict[str, list[dict[str, str]]]:
    """The JWKS of one private key (a server's AIHUB_IDENTITY_PRIVATE_KEY); ValueError when the
    PEM is not an Ed25519 private key."""
    return {"keys": [public_jwk(load_private_key(pem), kid)]}


def instance_identity_keys(functions: list[dict[str, Any]]) -> Any:
    """The IDENTITY_KEYS valve of the pipe in an instance's function listing (with valves)."""
    pipe = next((f for f in functions if f.get("id") == PIPE_FUNCTION_ID), None)
    if pipe is None:
        raise ConfigError(f"no {PIPE_FUNCTION_ID} function on the instance: run `provision sync` first")
    found = pipe.get("valves")
    valves = found if isinstance(found, Mapping) else {}
    return valves.get(IDENTITY_VALVE)


def instance_jwks(functions: list[dict[str, Any]], *, now: float) -> dict[str, list[dict[str, str]]]:
    """The JWKS of the pipe in an instance's function listing (with valves)."""
    keys = jwks(instance_identity_keys(functions), now=now)
    if keys is None:
        raise ConfigError(
            f"the {PIPE_FUNCTION_ID} function holds no identity key (its IDENTITY_KEYS valve is empty or unusable): "
            "run `provision sync`, which makes one"
        )
    return keys


def key_file_jwks(path: Path, kid: str) -> dict[str, list[dict[str, str]]]:
    """The JWKS of the private key in `path`; errors name the file, never its contents."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    try:
        return jwks_of_private_key(data, kid)
    except ValueError as exc:
        raise ConfigError(f"key file {path}: {exc}") from None


def describe_jwks(keys: Mapping[str, list[dict[str, str]]], from_file: bool, value: Any = None) -> list[str]:
    """Which key is which, for a reader (the JWKS itself does not say); `value` is the valve the
    keys come from (it says which key is staged, and since when)."""
    entries = keys["keys"]
    if from_file:
        return [
            f"kid {entries[0]['kid']}: the key in the file; the server's AIHUB_IDENTITY_KEY_ID must say the same "
            f"(unset, the pipe uses {SERVER_KEY_ID!r})"
        ]
    data = _parsed(value)
    staged = _staged(data.get("staged")) if data else None
    lines = [f"kid {entries[0]['kid']}: signs the identity tokens now"]
    for e in entries[1:]:
        if staged is not None and e["kid"] == staged[0]:
            lines.append(
                f"kid {e['kid']}: staged, published for agents to fetch; the first sync from "
                f"{_utc(staged[2] + STAGED_KEY_SECONDS)} on makes it sign"
            )
        else:
            lines.append(
                f"kid {e['kid']}: retired, still verifies tokens it signed (kept {RETIRED_KEY_SECONDS // 3600} hours)"
            )
    return lines


def private_key_lines(value: Any) -> list[str]:
    """The secret part of an IDENTITY_KEYS value, as error redaction looks for it: the base64
    lines of its private keys, the signing one and the staged one (they survive any escaping a
    server's echo applies; the PEM's armour lines, the kids and the public keys are not secret)."""
    data = _parsed(value)
    entries = (data.get("signing"), data.get("staged")) if data else ()
    pems = [
        e["private_key_pem"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("private_key_pem"), str)
    ]
    if not pems:
        return [value] if isinstance(value, str) and value else []
    return [line.strip() for pem in pems for line in pem.splitlines() if line.strip() and not line.startswith("-----")]
