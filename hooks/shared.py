"""`hafiza mcp --http HOST:PORT --users`: one MCP server for several people, each seeing only their own.

Every request to /mcp passes a gate before any tool runs: no bearer token is 401, a token no user holds
(or a revoked one) is 401, a request that names another user (`X-Hafiza-User`) or carries another
user's MCP session id is 403. Past the gate, the request goes to that user's own MCP server: a
`Memories` over their personal vault and the team vaults they are granted (hooks/users.py), with
its own sessions. Nothing is shared between users but the team vaults both were granted, so no tool
argument can reach another user's vault: the server that would answer it is not theirs.
"""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from hafiza.vault.sync.teams import load as load_teams

from .users import Tokens, User

SESSION_HEADER = b"mcp-session-id"
USER_HEADER = b"x-hafiza-user"
# Sessions one user may hold open at once: their agents in parallel, with room to spare. Each holds ~2 MB, and
# one user opened 3,400 without limit (issue 29, item 5: 100 -> 228 MB, never freed); the next gets a 503.
SESSIONS_PER_USER = 32
IDLE_SECONDS = 30 * 60  # a session with no request for this long is closed; its client starts a new one
MAX_BODY = 4 << 20  # what the MCP server itself takes (its max_request_body_size); far past any tool call
LOG = logging.getLogger("uvicorn.error")  # uvicorn prints it, one line a message


class Gate:
    """The ASGI app at /mcp: authenticates, then hands the request to the user's own server."""

    def __init__(self, config: Path, settings, host: str, sessions: int = SESSIONS_PER_USER,
                 idle: float = IDLE_SECONDS):
        self.config = Path(config)
        self.tokens = Tokens(config)
        self.settings = settings
        self.host = host
        self.sessions, self.idle = sessions, idle
        self.servers: dict[tuple, object] = {}   # (user, vault, teams) -> that user's ASGI app
        self.owners: dict[str, str] = {}         # MCP session id -> the user it was opened for
        self._group = None
        self._lock = anyio.Lock()

    @asynccontextmanager
    async def running(self, _app=None):
        """The lifespan: each user's session manager runs in this task group until the server stops."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                group.cancel_scope.cancel()

    async def __call__(self, scope, receive, send):
        headers = {k.lower(): v for k, v in scope.get("headers") or ()}
        kind, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            return await refuse(send, 401, "a bearer token is required (`hafiza token add USER` makes one)")
        user = await anyio.to_thread.run_sync(self.tokens.authenticate, token.strip())
        if user is None:
            return await refuse(send, 401, "the token is not valid (unknown or revoked)")
        claimed = headers.get(USER_HEADER)
        if claimed is not None and claimed.decode("latin-1") != user.name:
            return await refuse(send, 403, "this token is not that user's")
        session = headers.get(SESSION_HEADER)
        owner = self.owners.get(session.decode("latin-1")) if session else None
        if owner is not None and owner != user.name:
            return await refuse(send, 403, "this session belongs to another user")
        app = await self._server(user)
        if scope.get("method") == "POST":
            receive = await _whole_body(receive, user.name, send)
            if receive is None:
                return

        async def remember_session(message):
            if message["type"] == "http.response.start":
                for key, value in message.get("headers") or ():
                    if key.lower() == SESSION_HEADER:
                        self.owners.setdefault(value.decode("latin-1"), user.name)
            await send(message)

        await app(scope, receive, remember_session)
        if session and scope.get("method") == "DELETE":  # the client ended its session
            self.owners.pop(session.decode("latin-1"), None)

    async def _server(self, user: User):
        """The user's MCP app, made on first use and again when their grants change."""
        key = (user.name, str(user.vault), user.teams)
        async with self._lock:
            app = self.servers.get(key)
            if app is None:
                app = self.servers[key] = await self._start(user)
        return app

    async def _start(self, user: User):
        from .mcp import create_server

        listed = load_teams(self.config, strict=False)
        teams = {name: listed[name].path for name in user.teams if name in listed}
        server = create_server(user.vault, settings=self.settings, teams=teams, user=user.name)
        # Each user has a session manager of their own, so its cap is theirs alone: one user's sessions never
        # keep another's out.
        app = server.streamable_http_app(host=self.host, max_sessions=self.sessions, session_idle_timeout=self.idle)
        await self._group.start(_run, server.session_manager)
        return app


async def _whole_body(receive, user: str, send):
    """Read a POST's body before the MCP server does: a client that goes away mid-body (or sends more than a
    request may hold) is answered here, with one line in the log, instead of the server's traceback (issue 29,
    item 5). A `receive` that replays the body, then listens on; None when the request is done with."""
    messages, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            LOG.warning("a client of %s went away mid-request; nothing was done", user)
            return None
        messages.append(message)
        size += len(message.get("body", b""))
        if size > MAX_BODY:
            await refuse(send, 413, f"a request may hold at most {MAX_BODY:,} bytes")
            return None
        if not message.get("more_body"):
            break

    async def replay():
        return messages.pop(0) if messages else await receive()

    return replay


async def _run(manager, *, task_status=anyio.TASK_STATUS_IGNORED):
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


async def refuse(send, status: int, message: str) -> None:
    """Answer before anything is read or written."""
    body = json.dumps({"error": message}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="hafiza"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def app(config: Path, settings, host: str, sessions: int = SESSIONS_PER_USER, idle: float = IDLE_SECONDS):
    """The whole shared server as an ASGI app: /mcp behind the gate, nothing else."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    gate = Gate(config, settings, host, sessions, idle)
    return Starlette(routes=[Route("/mcp", endpoint=gate)], lifespan=gate.running)


def serve(config: Path, settings, http: tuple[str, int], sessions: int = SESSIONS_PER_USER,
          idle: float = IDLE_SECONDS) -> None:
    """Run the shared server until the process is stopped."""
    import uvicorn

    host, port = http
    uvicorn.run(app(config, settings, host, sessions, idle), host=host, port=port, log_level="warning")
