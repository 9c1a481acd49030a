"""Commands that connect hafiza to coding agents: install, uninstall."""

from __future__ import annotations

from pathlib import Path

import click

from hafiza.hooks.payload import CLIENTS

from .app import cli

_SCOPE = click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                      help="Your own config files, or the current project's (they hold this machine's paths).")
_DRY_RUN = click.option("--dry-run", is_flag=True, help="Print the diff of every file it would change; write nothing.")


@cli.command()
@click.argument("client", type=click.Choice(CLIENTS), metavar="CLIENT")
@_SCOPE
@_DRY_RUN
@click.option("--no-mcp", is_flag=True, help="Leave the MCP server out.")
@click.option("--no-hooks", is_flag=True, help="Leave the hooks (and opencode plugin, goose wrapper) out.")
@click.option("--plugin", "plugin_dir", type=click.Path(file_okay=False),
              help="claude-code: also write a Claude Code plugin folder here, with this interpreter's paths.")
@click.pass_context
def install(ctx, client, scope, dry_run, no_mcp, no_hooks, plugin_dir):
    """Connect CLIENT: hooks that recall memories on every prompt, and the MCP server.

    CLIENT is claude-code, codex, gemini, cursor, goose or opencode. Safe to
    repeat: a second run changes nothing. Each file is backed up once, as
    <file>.hafiza-backup, before its first change.
    """
    from hafiza.hooks.install import Options, apply, plan_install

    if plugin_dir and client != "claude-code":
        raise click.UsageError("--plugin is for claude-code only")
    plan = plan_install(Options(client, scope=scope, hooks=not no_hooks, mcp=not no_mcp,
                                vault=_explicit_vault(ctx), plugin_dir=plugin_dir))
    _report(plan, dry_run, apply)


@cli.command()
@click.argument("client", type=click.Choice(CLIENTS), metavar="CLIENT")
@_SCOPE
@_DRY_RUN
@click.option("--plugin", "plugin_dir", type=click.Path(file_okay=False),
              help="claude-code: also remove the plugin folder written by `install --plugin`.")
def uninstall(client, scope, dry_run, plugin_dir):
    """Remove what `hafiza install CLIENT` added, and nothing else.

    A file that only changed by the install comes back byte for byte (from its
    backup); a file the install created is deleted.
    """
    from hafiza.hooks.install import Options, apply, plan_uninstall

    _report(plan_uninstall(Options(client, scope=scope, plugin_dir=plugin_dir)), dry_run, apply)


def _explicit_vault(ctx):
    """The vault the installed hooks and MCP server must name: this one, unless it is where a process with
    no HAFIZA_VAULT looks anyway. An agent runs hooks in its own environment, which does not have the
    shell's HAFIZA_VAULT: a hook written without it injected nothing, silently."""
    from hafiza.vault.paths import xdg_vault

    root = ctx.find_root().obj
    return None if Path(root).resolve() == xdg_vault().resolve() else root


def _report(plan, dry_run: bool, apply) -> None:
    if not plan.changes:
        click.echo(f"{plan.client}: nothing to change ({'already installed' if plan.action == 'install' else 'nothing of hafiza found'}).")
    elif dry_run:
        click.echo(plan.diff(), nl=False)
        click.echo(f"dry run: {len(plan.changes)} file(s) would change; nothing was written.")
    else:
        for path in apply(plan):
            click.echo(f"{'updated' if path.exists() else 'removed'} {path}")
    if plan.changes or plan.action == "install":
        for note in plan.notes:
            click.echo(f"\n{note}")
