"""`hafiza ui`: the vault in a browser (the app is hafiza.ui)."""

from __future__ import annotations

from .app import cli, vault_root
from .args import arg, flag, ranged


@cli.command(
    arg("--port", default=0, type=ranged(0, 65535), help="Port on 127.0.0.1 (0: any free port)."),
    flag("--no-browser", help="Print the address; do not open a browser."),
)
def ui(ctx, port, no_browser):
    """See, search and review the memory in a browser, served on 127.0.0.1 only.

    The first line printed is the address to open; it carries a one-time token, which the browser trades
    for a session cookie. Edits, undos, accepts and rejects are the same commits the commands make
    (Hafiza-Actor: ui). Ctrl-C stops the server."""
    from hafiza.ui.server import serve

    serve(vault_root(ctx), ctx.settings, port=port, browser=not no_browser)
