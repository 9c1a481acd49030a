"""What a claim may ask for: every argument validated before any probe runs.

A claim is data written by a person, an agent or a model, and synced from
other machines: it must never make hafiza read outside the project, run a
shell, pass an option to git, or reach an internal address. Names match a
strict pattern; paths are resolved (symlinks included) and must stay inside
the project; URLs are http(s) with a host, and private, loopback and
link-local addresses are refused unless the user allows them.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

MAX_ARG = 300         # characters in any one argument
MAX_TEXT = 500        # a `contains` probe's literal
NAME = re.compile(r"^[A-Za-z0-9@_][A-Za-z0-9@_.:/+\-]{0,199}$")  # scripts, packages, branches, symbols
SHA = re.compile(r"^[0-9a-f]{7,40}$")
SYMBOL = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]{0,127}$")
BANNED_PARTS = (".ssh", ".gnupg", ".aws", ".netrc", ".git-credentials", ".docker", ".kube", ".git")
# Files a `contains` or `symbol` probe may not read: a claim could otherwise learn, yes or no, whether
# a guessed token is in them (and the answer is committed and synced).
SECRET_FILES = re.compile(r"^(\.env(\..*)?|.*\.(pem|key|p12|pfx|keystore)|id_[a-z0-9]+|credentials(\..*)?|\.npmrc|\.pypirc)$",
                          re.IGNORECASE)


class Refused(ValueError):
    """An argument that no probe may act on; the message says why, for the `invalid` outcome."""


def text(args: dict, key: str, limit: int = MAX_ARG) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Refused(f"{key} must be a non-empty string")
    if len(value) > limit:
        raise Refused(f"{key} has {len(value)} characters; at most {limit}")
    if any(ord(c) < 32 for c in value):
        raise Refused(f"{key} holds a control character (a newline?)")
    return value


def name(args: dict, key: str = "name", pattern: re.Pattern = NAME) -> str:
    """A script, package, branch or symbol name: never option-shaped, never a path out, never a shell word."""
    value = text(args, key).strip()
    if value.startswith("-") or ".." in value or "//" in value or value.endswith((".lock", "/", ".")):
        raise Refused(f"{key} {value!r} is not a plain name")
    if not pattern.match(value):
        raise Refused(f"{key} {value!r} has characters a name cannot have")
    return value


def sha(args: dict, key: str = "sha") -> str:
    value = text(args, key).strip().lower()
    if not SHA.match(value):
        raise Refused(f"{key} {value!r} is not a commit id (7-40 hex digits)")
    return value


def readable(args: dict, root: Path | None, key: str = "path") -> Path | None:
    """A project file a probe may read: a project path (see `path`) that is not a secrets file."""
    target = path(args, root, key)
    if SECRET_FILES.match(Path(args[key]).name) or (target is not None and SECRET_FILES.match(target.name)):
        raise Refused(f"{key} {args[key]!r} may hold secrets; its content is not probed")
    return target


def path(args: dict, root: Path | None, key: str = "path") -> Path | None:
    """The file a claim names, inside the project (symlinks resolved); None when the project is not
    on this machine. Absolute paths and `..` that lead out, and secret folders, are refused."""
    value = text(args, key).strip()
    if value.startswith("-") or value.startswith("~") or "\0" in value:
        raise Refused(f"{key} {value!r} is not a project path")
    parts = Path(value).parts
    if any(part in BANNED_PARTS for part in parts):
        raise Refused(f"{key} {value!r} names a credentials folder")
    if root is None:
        if value.startswith("/") or ".." in parts:
            raise Refused(f"{key} {value!r} leaves the project")
        return None
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base / value.removeprefix("./")))  # follows every symlink on the way
    if target != base and base not in target.parents:
        raise Refused(f"{key} {value!r} leads outside the project")
    return target


def url(args: dict, allow_private: bool = False, resolve: bool = True, key: str = "url") -> str:
    """An http(s) URL with a host; private, loopback and link-local addresses refused unless allowed."""
    value = text(args, key).strip()
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise Refused(f"{key} {value!r} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(f"{key} {value!r}: only http(s) URLs with a host are probed")
    if parts.username or parts.password:
        raise Refused(f"{key} carries credentials; not probed")
    for address in _addresses(parts.hostname, port, resolve):
        if not allowed(address, allow_private):
            raise Refused(f"{key} {parts.hostname} is a private, loopback or link-local address"
                          + ("" if is_link_local(address) else " (--allow-private probes it)"))
    return value


def allowed(address, allow_private: bool) -> bool:
    """Public addresses always; loopback and private ones when the user allows them; link-local (the
    cloud metadata service at 169.254.169.254) and addresses that hide an IPv4 one inside IPv6, never."""
    if is_link_local(address):
        return False
    return address.is_global or allow_private


def is_link_local(address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if inner is not None or address in _NAT64 or address in _COMPAT:
            return True  # an IPv4 address dressed as IPv6: judged as hostile rather than parsed twice
    return address.is_link_local or address.is_multicast or address.is_reserved or address.is_unspecified


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPAT = ipaddress.ip_network("::/96")


def _addresses(host: str, port, resolve: bool) -> list:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    if not resolve:
        return []
    try:
        infos = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
    except UnicodeError:
        raise Refused(f"host {host[:60]!r} is not a valid host name") from None
    except OSError:
        return []  # cannot resolve: the probe itself says unknown
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
