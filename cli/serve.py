"""`hafiza mcp`: serve the vault to MCP clients (stdio, or streamable HTTP on loopback)."""

from __future__ import annotations

import click

from hafiza.vault.errors import HafizaError

from .app import cli, open_vault, settings_of


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise HafizaError(f"--http wants HOST:PORT, e.g. 127.0.0.1:8765 (got {value!r})")
    from hafiza.hooks.mcp import check_loopback

    return check_loopback(host or "127.0.0.1"), int(port)


@cli.command("mcp")
@click.option("--http", "http", metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback hosts only).")
@click.option("--project", help="Project whose memories recall adds to the global ones "
                                "(default: the git repo of the cwd).")
@click.pass_context
def mcp_(ctx, http, project):
    """Run the MCP server: recall, remember, supersede, forget, mark_used, get, list, profile, record_episode.

    Over stdio (the default) nothing but protocol is written to stdout.
    """
    from hafiza.hooks.mcp import serve
    from hafiza.vault.paths import project_of

    address = _address(http) if http else None
    vault = open_vault(ctx)
    serve(vault.root, project or project_of(), address, settings_of(ctx))
