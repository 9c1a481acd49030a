"""Who may talk to the server: the holder of the printed URL, from this machine, through a page it served.

- The URL carries a one-time token; the first request with it gets a session cookie (HttpOnly,
  SameSite=Strict) and the token is spent. Every other request without the cookie is refused (401).
- A `Host` other than 127.0.0.1 or localhost (at the server's port) is refused (403): a web page a DNS
  rebinding attack points at 127.0.0.1 carries its own host name.
- A POST must carry the session's CSRF token in its form (and, when the browser sends one, an `Origin` of
  this server); SameSite=Strict already keeps the cookie off other sites' requests, this is the second lock.
- Every answer says: only this origin's scripts, styles and images; no framing; no referrer to other sites; no caching.
"""

from __future__ import annotations

import hmac
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

COOKIE = "hafiza_ui"
MAX_FORM_BYTES = 1 << 20  # a memory is at most 64 KB of text: a form past this is refused (413)
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make the browser send `Origin: null` on a POST
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
LOCAL_HOSTS = ("127.0.0.1", "localhost")


class Keys:
    """The secrets of one server run: the one-time token in the printed URL, the session cookie it is
    exchanged for, and the CSRF token the pages' forms carry."""

    def __init__(self):
        self.token: str | None = secrets.token_urlsafe(32)
        self.session = secrets.token_urlsafe(32)
        self.csrf = secrets.token_urlsafe(32)

    def spend(self, offered: str) -> bool:
        """Exchange the one-time token: True once, for the right one."""
        if self.token is None or not hmac.compare_digest(offered.encode(), self.token.encode()):
            return False
        self.token = None
        return True

    def has_session(self, cookie_header: str) -> bool:
        jar = SimpleCookie()
        try:
            jar.load(cookie_header)
        except Exception:  # a malformed header is no cookie
            return False
        found = jar.get(COOKIE)
        return found is not None and hmac.compare_digest(found.value.encode(), self.session.encode())

    def csrf_ok(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode(), self.csrf.encode())


class Guard:
    """ASGI middleware in front of the whole app: host, token, cookie and CSRF checks, and the headers."""

    def __init__(self, app, keys: Keys, port_of):
        self.app, self.keys = app, keys
        self.port_of = port_of  # () -> the port the server listens on (known once it is bound)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self._host_ok(headers.get("host", "")):
            return await _refuse(send, 403, "This server answers only at 127.0.0.1 or localhost.")
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        signed_in = self.keys.has_session(headers.get("cookie", ""))
        if "token" in query:
            return await self._login(scope, send, query["token"], signed_in)
        if not signed_in:
            return await _refuse(send, 401, "Open the address `hafiza ui` printed (it carries a one-time token); "
                                            "restart `hafiza ui` for a new one.")
        if scope["method"] not in ("GET", "HEAD"):
            if scope["method"] != "POST":
                return await _refuse(send, 405, "Only GET and POST.")
            body = await _read_body(receive)
            if body is None:
                return await _refuse(send, 413, "The form is too large.")
            origin = headers.get("origin")
            form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            if (origin and not self._origin_ok(origin)) or not self.keys.csrf_ok(form.get("csrf")):
                return await _refuse(send, 403, "The form's CSRF token is missing or wrong; reload the page.")
            scope = {**scope, "hafiza.form": body}
            receive = _replay(body)
        return await self.app(scope, receive, _with_headers(send))

    def _host_ok(self, host: str) -> bool:
        name, _, port = host.rpartition(":") if not host.startswith("[") else (host, "", "")
        return name in LOCAL_HOSTS and port == str(self.port_of())

    def _origin_ok(self, origin: str) -> bool:
        return origin in {f"http://{name}:{self.port_of()}" for name in LOCAL_HOSTS}

    async def _login(self, scope, send, token: str, signed_in: bool):
        """Trade the token for the session cookie, once; a browser already signed in that opens the printed
        address again (a reload, a second tab) is sent on, whatever the token."""
        path = scope.get("path") or "/"
        if signed_in:
            headers = []
        elif self.keys.spend(token):
            headers = [(b"set-cookie", f"{COOKIE}={self.keys.session}; HttpOnly; SameSite=Strict; Path=/".encode())]
        else:
            return await _refuse(send, 403, "This token is wrong or already used; restart `hafiza ui` for a new one.")
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", path.encode()), *headers, *HEADERS]})
        await send({"type": "http.response.body", "body": b""})


async def _read_body(receive) -> bytes | None:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_FORM_BYTES:
            return None
        if not message.get("more_body"):
            return body


def _replay(body: bytes):
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _with_headers(send):
    async def wrapped(message):
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            message = {**message, "headers": [*message.get("headers", []),
                                              *[(k, v) for k, v in HEADERS if k not in present]]}
        await send(message)

    return wrapped


async def _refuse(send, status: int, text: str):
    body = f"{status}: {text}\n".encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})
