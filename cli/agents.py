"""Commands for agents: hook, daemon, profile (installers and the MCP server live here too)."""

from __future__ import annotations

import os
import sys
import time

import click

from .app import cli, emit, open_vault, settings_of


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("client")
@click.argument("event")
@click.pass_context
def hook(ctx, client, event):
    """Run a client's hook: read its JSON on stdin, print what to inject.

    CLIENT is claude-code, codex, gemini, cursor, goose or opencode; EVENT is
    the client's event name (UserPromptSubmit, SessionStart, BeforeAgent, ...)
    or one of prompt, start, end, precompact. Always exits 0 (fails open).
    """
    from hafiza.hooks.entry import main

    sys.exit(main([client, event], environ={**os.environ, "HAFIZA_VAULT": str(ctx.obj)}))


@cli.group()
def daemon():
    """The warm recall process: status, start, stop."""


@daemon.command("status")
@click.option("--json", "as_json", is_flag=True, help="JSON object.")
@click.pass_context
def daemon_status(ctx, as_json):
    """Show whether the warm recall process runs for this vault."""
    from hafiza.hooks import wire

    vault = open_vault(ctx.parent)
    reply = wire.ask(vault.root, {"op": "status"})
    if as_json:
        emit(reply or {"running": False})
        return
    if reply is None:
        click.echo("not running (hooks fall back to keyword recall and start it)")
        return
    up = time.time() - reply["started"]
    click.echo(f"running: pid {reply['pid']}, mode {reply['mode']}, up {up / 60:.1f} min, "
               f"{reply['served']} requests, memory {reply.get('resident_mb', reply['rss_mb'])} MB "
               f"(peak {reply['rss_mb']} MB, cap {reply.get('cap_mb', '?')} MB)")
    if reply["mode"] == "hybrid" and not reply.get("vectors"):
        click.echo("no usable vectors: recall is keyword-only until `hafiza reindex`")


@daemon.command("start")
@click.pass_context
def daemon_start(ctx):
    """Start the warm recall process in the background (hooks also do this on their own)."""
    from hafiza.hooks import wire

    vault = open_vault(ctx.parent)
    if wire.ask(vault.root, {"op": "ping"}) is not None:
        click.echo("already running")
        return
    wire.spawn(vault.root)
    for _ in range(100):
        time.sleep(0.1)
        if wire.ask(vault.root, {"op": "ping"}) is not None:
            click.echo("started")
            return
    raise click.ClickException("the warm process did not come up within 10 s; see .hafiza/hooks.log")


@daemon.command("stop")
@click.pass_context
def daemon_stop(ctx):
    """Stop the warm recall process."""
    from hafiza.hooks import wire

    vault = open_vault(ctx.parent)
    reply = wire.ask(vault.root, {"op": "stop"})
    click.echo(f"stopped pid {reply['pid']}" if reply else "not running")


@cli.command()
@click.option("--project", help="Project whose rules join the global ones (default: the cwd's git repo).")
@click.option("--cap", type=int, help="Character budget (default $HAFIZA_PROFILE_CHARS or 2200).")
@click.option("--json", "as_json", is_flag=True, help="JSON with the text and every line in or out.")
@click.pass_context
def profile(ctx, project, cap, as_json):
    """Show the session-start profile: what is in, what was left out and why."""
    from hafiza.indexer.index import Index
    from hafiza.indexer.profile import build_profile
    from hafiza.vault.paths import project_of

    vault = open_vault(ctx)
    result = build_profile(Index(vault.root), vault.root, project or project_of(), cap or settings_of(ctx).profile_chars)
    if as_json:
        emit(result.to_json())
        return
    click.echo(result.text or "(empty profile: no identity or rule memories, no profile.md)")
    left = [line for line in result.lines if not line.included]
    if left:
        click.echo(f"\nleft out ({len(left)}):")
        for line in left:
            click.echo(f"  - {line.id or 'profile.md'}: {line.reason}")
