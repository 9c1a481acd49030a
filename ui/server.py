"""Serving the app: a socket bound to 127.0.0.1 (never another address), the URL with its one-time token as
the first line on stdout, the browser opened unless told not to, uvicorn until Ctrl-C."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from hafiza.vault.errors import HafizaError


def serve(root: Path, settings, port: int = 0, browser: bool = True) -> None:
    import uvicorn

    from .app import build

    sock = bind(port)
    bound = sock.getsockname()[1]
    app, keys = build(root, settings, port_of=lambda: bound)
    url = f"http://127.0.0.1:{bound}/?token={keys.token}"
    print(url, flush=True)
    print(f"hafiza ui: serving {root} on 127.0.0.1 only; the address above works once. Ctrl-C stops it.",
          file=sys.stderr, flush=True)
    if browser:
        _open(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise HafizaError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another with --port, or "
                          "leave it out for any free port") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _open(url: str) -> None:
    """Open `url` in the desktop's browser. Without a display (an ssh session, a container) Python's webbrowser
    would start a text browser in this very terminal, over the server's output: then only say so."""
    import os

    if sys.platform == "darwin" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        import webbrowser

        if webbrowser.open(url):
            return
    print("hafiza ui: no browser to open here; open the address above (an ssh tunnel to this port works: "
          "-L PORT:127.0.0.1:PORT)", file=sys.stderr, flush=True)
