"""Commands for agents: hook, daemon, profile (installers and the MCP server live here too)."""

from __future__ import annotations

import os
import sys
import time

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault
from .args import arg, flag


@cli.command(
    arg("client"),
    arg("event"),
)
def hook(ctx, client, event):
    """Run a client's hook: read its JSON on stdin, print what to inject.

    CLIENT is claude-code, codex, gemini, cursor, goose or opencode; EVENT is
    the client's event name (UserPromptSubmit, SessionStart, BeforeAgent, ...)
    or one of prompt, start, end, precompact. Always exits 0 (fails open).
    """
    from hafiza.hooks.entry import main

    sys.exit(main([client, event], environ={**os.environ, "HAFIZA_VAULT": str(ctx.root)}))


@cli.group()
def daemon():
    """The warm recall process: status, start, stop."""


@daemon.command(
    flag("--json", "as_json", help="JSON object."),
    name="status",
)
def daemon_status(ctx, as_json):
    """Show whether the warm recall process runs for this vault."""
    from hafiza.hooks import wire

    vault = open_vault(ctx)
    reply = wire.ask(vault.root, {"op": "status"})
    if as_json:
        emit(reply or {"running": False})
        return
    if reply is None:
        print("not running (hooks fall back to keyword recall and start it)")
        return
    up = time.time() - reply["started"]
    print(f"running: pid {reply['pid']}, mode {reply['mode']}, up {up / 60:.1f} min, "
          f"{plural(reply['served'], 'request')}, memory {reply.get('resident_mb', reply['rss_mb'])} MB "
          f"(peak {reply['rss_mb']} MB, cap {reply.get('cap_mb', '?')} MB)")
    if reply["mode"] == "hybrid" and not reply.get("vectors") and reply.get("documents", 1):  # none: nothing to embed
        print("no usable vectors: recall is keyword-only until the next write or `hafiza reindex`")


@daemon.command(name="start")
def daemon_start(ctx):
    """Start the warm recall process in the background (hooks also do this on their own)."""
    from hafiza.hooks import wire

    vault = open_vault(ctx)
    if wire.ask(vault.root, {"op": "ping"}) is not None:
        print("already running")
        return
    wire.spawn(vault.root)
    for _ in range(100):
        time.sleep(0.1)
        if wire.ask(vault.root, {"op": "ping"}) is not None:
            print("started")
            return
    raise HafizaError("the warm process did not come up within 10 s; see .hafiza/hooks.log")


@daemon.command(name="stop")
def daemon_stop(ctx):
    """Stop the warm recall process."""
    from hafiza.hooks import wire

    vault = open_vault(ctx)
    reply = wire.ask(vault.root, {"op": "stop"})
    print(f"stopped pid {reply['pid']}" if reply else "not running")


@cli.command(
    arg("--project", help="Project whose rules join the global ones (default: the cwd's git repo)."),
    arg("--cap", type=int, help="Character budget (default $HAFIZA_PROFILE_CHARS or 2200)."),
    flag("--json", "as_json", help="JSON with the text and every line in or out."),
)
def profile(ctx, project, cap, as_json):
    """Show the session-start profile: what is in, what was left out and why."""
    from hafiza.indexer.index import Index
    from hafiza.indexer.profile import build_profile
    from hafiza.vault.format.paths import project_of

    vault = open_vault(ctx)
    result = build_profile(Index(vault.root), vault.root, project or project_of(), cap or ctx.settings.profile_chars)
    if as_json:
        emit(result.to_json())
        return
    print(result.on_terminal() or "(empty profile: no identity or rule memories, no profile.md)")
    left = [line for line in result.lines if not line.included]
    if left:
        print(f"\nleft out ({len(left)}):")
        for line in left:
            print(f"  - {line.id or 'profile.md'}: {line.reason}")
