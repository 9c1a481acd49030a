"""The users of a shared MCP server (`hafiza mcp --http --users`): who they are, which token says so, which
vaults each may read and write. Managed with `hafiza token add|list|revoke USER`.

Tokens are stored hashed (SHA-256: a token is 256 random bits, so a slow hash would add nothing against
guessing) in `users.json` in the user's config folder, mode 0600, and a token presented is compared
with every stored hash in constant time (hmac.compare_digest), so neither the answer nor its timing says
which user, or how much of a token, matched. The token itself is printed once, by `token add`, and
written nowhere.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
from pathlib import Path
from typing import NamedTuple

from hafiza.vault.errors import HafizaError
from hafiza.vault.files import atomic_write
from hafiza.vault.sync.teams import load as load_teams

FILE = "users.json"
PREFIX = "hzu_"  # says what a leaked token is for (and lets a secret scanner name it)
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")


class User(NamedTuple):
    name: str
    vault: Path                 # the user's personal vault on the server
    teams: tuple[str, ...]      # the team vaults (names in vaults.json) the user is granted
    created: str = ""

    def to_json(self) -> dict:
        return {"user": self.name, "vault": str(self.vault), "teams": list(self.teams), "created": self.created}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _read(config: Path) -> dict:
    path = Path(config) / FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise HafizaError(f"{path} cannot be read ({exc}); fix or remove it, then add the users again") from None
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict):
        raise HafizaError(f"{path} is not a list of users; fix or remove it, then add the users again")
    return users


def _write(config: Path, users: dict) -> None:
    Path(config).mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(Path(config) / FILE, json.dumps({"users": users}, indent=2, sort_keys=True) + "\n", mode=0o600)


def _user(name: str, entry: dict) -> User:
    return User(name, Path(entry["vault"]), tuple(entry.get("teams") or ()), entry.get("created") or "")


def check_user(name: str) -> str:
    if not _NAME.fullmatch(name or ""):
        raise HafizaError(f"{name!r} is not a user name: use 1-40 lowercase letters, digits, '.', '-' or '_'",
                          field="user")
    return name


def add(config: Path, data: Path, name: str, teams=(), vault: Path | None = None) -> tuple[User, str]:
    """A new user with a fresh token (returned once), a personal vault (`data`/users/NAME unless
    `vault`), and the team vaults `teams` granted. Refuses a user that exists: revoke first."""
    from hafiza.vault.store.vault import Vault

    users = _read(config)
    if check_user(name) in users:
        raise HafizaError(f"the user {name!r} exists; `hafiza token revoke {name}` first to give a new token",
                          field="user")
    listed = load_teams(config)
    unknown = [t for t in teams if t not in listed]
    if unknown:
        raise HafizaError(f"no team vault named {unknown[0]!r} (`hafiza vault add {unknown[0]} URL` first)",
                          field="team")
    root = Path(vault).expanduser().resolve() if vault else Path(data) / "users" / name
    taken = [n for n, e in users.items() if Path(e.get("vault", "")) == root]
    if taken or root in {t.path for t in listed.values()}:
        what = f"{taken[0]}'s vault" if taken else "a team vault"
        raise HafizaError(f"{root} is already {what}; each user has a personal vault of their own", field="vault")
    Vault.init(root, actor=name)
    token = PREFIX + secrets.token_urlsafe(32)
    users[name] = {"hash": _digest(token), "vault": str(root), "teams": sorted(set(teams)),
                   "created": dt.date.today().isoformat()}
    _write(config, users)
    return _user(name, users[name]), token


def listed(config: Path) -> list[User]:
    return [_user(name, entry) for name, entry in sorted(_read(config).items())]


def revoke(config: Path, name: str) -> User:
    """Remove the user's token at once (the running server reads the file on every request); their vault stays."""
    users = _read(config)
    if name not in users:
        raise HafizaError(f"no user {name!r}; `hafiza token list` shows them", field="user")
    user = _user(name, users.pop(name))
    _write(config, users)
    return user


class Tokens:
    """The users file as a running server reads it: again whenever it changed, so a revoked token is
    refused from the next request on."""

    def __init__(self, config: Path):
        self.path = Path(config) / FILE
        self.config = Path(config)
        self._stamp = None
        self._users: dict = {}

    def _fresh(self) -> dict:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._users = _read(self.config) if stamp else {}
            self._stamp = stamp
        return self._users

    def authenticate(self, token: str) -> User | None:
        """The user whose token this is, or None; every stored hash is compared, in constant time."""
        presented = _digest(token)
        found = None
        for name, entry in self._fresh().items():
            stored = entry.get("hash")
            if isinstance(stored, str) and hmac.compare_digest(presented, stored) and found is None:
                found = _user(name, entry)
        return found
