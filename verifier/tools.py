"""The only programs and connections a probe uses: git and gh as argument lists, and one HTTP request."""

from __future__ import annotations

import http.client
import ipaddress
import shutil
import socket
import ssl
import subprocess
from pathlib import Path
from urllib.parse import quote, urlsplit

from hafiza.vault.git import read_only

from .safety import allowed


def git(root: Path, *args: str, timeout: float = 5.0) -> str | None:
    """A read-only git query in the project (hooks, pagers, fsmonitor and diff drivers off)."""
    return read_only(root, *args, timeout=timeout)


def gh(args: list[str], timeout: float) -> str | None:
    """`gh ARGS` (a list, no shell), or None when gh is missing, not logged in, or fails."""
    program = shutil.which("gh")
    if program is None:
        return None
    try:
        proc = subprocess.run([program, *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def http_status(url: str, timeout: float, allow_private: bool = False) -> int | str:
    """The status of one HEAD request (GET when HEAD is refused), redirects not followed, or why none came.

    The connection goes to the address checked here, not to a second lookup a DNS server could answer
    differently (rebinding to 169.254.169.254 after the check)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return f"no address ({getattr(exc, 'strerror', None) or exc.__class__.__name__})"
    address = infos[0][4][0]
    if not allowed(ipaddress.ip_address(address.split("%")[0]), allow_private):
        return f"{parts.hostname} resolved to a private or link-local address; not probed"
    # http.client sends the request line as ASCII: a path in other letters goes percent-encoded.
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~") + (f"?{quote(parts.query, safe='=&%+')}"
                                                                     if parts.query else "")
    for method in ("HEAD", "GET"):
        try:
            status = _request(parts.scheme, parts.hostname, address, port, method, path, timeout)
        except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
            return f"no answer ({exc.__class__.__name__})"
        if status not in (405, 501):
            return status
    return status


def _request(scheme, host, address, port, method, path, timeout) -> int:
    if scheme == "https":
        conn = _PinnedHTTPS(host, address, port, timeout)
    else:
        conn = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        conn.request(method, path, headers={"Host": host if port in (80, 443) else f"{host}:{port}",
                                            "User-Agent": "hafiza-verify"})
        return conn.getresponse().status
    finally:
        conn.close()


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a fixed address, with the certificate checked for the host name."""

    def __init__(self, host: str, address: str, port: int, timeout: float):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
