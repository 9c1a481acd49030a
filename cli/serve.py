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
    """Run the MCP server: recall, remember, update, add_aliases, supersede, forget, mark_used, get, list,
    profile, record_episode, search_sessions, set_fact, get_fact.

    Over stdio (the default) nothing but protocol is written to stdout. With no vault yet, it creates
    one as `hafiza init` would (and says so on stderr): an agent's first session must not find a
    server that died before it could say why.
    """
    from hafiza.hooks.mcp import serve
    from hafiza.vault.paths import is_vault, project_of

    address = _address(http) if http else None
    if not is_vault(ctx.obj):
        from hafiza.vault.store import Vault

        Vault.init(ctx.obj, actor="mcp")
        click.echo(f"hafiza: created a vault at {ctx.obj} (none was there)", err=True)
    vault = open_vault(ctx)
    serve(vault.root, project or project_of(), address, settings_of(ctx))
