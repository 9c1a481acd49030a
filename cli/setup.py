"""Commands that connect hafiza to coding agents: install, uninstall."""

from __future__ import annotations

from pathlib import Path

from hafiza.hooks.payload import CLIENTS

from .app import cli, emit
from .args import UsageError, arg, flag, folder

CLIENT = arg("client", choices=CLIENTS, help="claude-code, codex, gemini, cursor, goose or opencode.")
SCOPE = arg("--scope", choices=("user", "project"), default="user",
            help="Your own config files, or the current project's (they hold this machine's paths).")
DRY_RUN = flag("--dry-run", help="Print the diff of every file it would change, and what it would create, update "
                                 "or remove; write nothing.")
JSON = flag("--json", "as_json", help="Print each file (and folder) with what was done to it, in the words of the "
                                      "text report (created, updated, unchanged, removed, restored; under --dry-run "
                                      "`would create`...), the diff of a dry run and the notes, as JSON.")


@cli.command(
    CLIENT,
    SCOPE,
    DRY_RUN,
    JSON,
    flag("--no-mcp", help="Leave the MCP server out."),
    flag("--no-hooks", help="Leave the hooks (and opencode plugin, goose wrapper) out."),
    arg("--plugin", dest="plugin_dir", type=folder,
        help="claude-code: also write a Claude Code plugin folder here, with this interpreter's paths."),
)
def install(ctx, client, scope, dry_run, as_json, no_mcp, no_hooks, plugin_dir):
    """Connect CLIENT: hooks that recall memories on every prompt, and the MCP server.

    CLIENT is claude-code, codex, gemini, cursor, goose or opencode. Safe to
    repeat: a second run changes nothing. Each file is backed up once, as
    <file>.hafiza-backup, before its first change.
    """
    from hafiza.hooks.install import Options, apply, plan_install

    if plugin_dir and client != "claude-code":
        raise UsageError("--plugin is for claude-code only")
    plan = plan_install(Options(client, scope=scope, hooks=not no_hooks, mcp=not no_mcp,
                                vault=_explicit_vault(ctx), plugin_dir=plugin_dir))
    _report(plan, dry_run, apply, as_json)


@cli.command(
    CLIENT,
    SCOPE,
    DRY_RUN,
    JSON,
    arg("--plugin", dest="plugin_dir", type=folder,
        help="claude-code: also remove the plugin folder written by `install --plugin`."),
)
def uninstall(ctx, client, scope, dry_run, as_json, plugin_dir):
    """Remove what `hafiza install CLIENT` added, and nothing else.

    A file that only changed by the install comes back byte for byte (from its
    backup); a file the install created is deleted, and so is a folder it created
    once nothing else is in it.
    """
    from hafiza.hooks.install import Options, apply, plan_uninstall

    _report(plan_uninstall(Options(client, scope=scope, plugin_dir=plugin_dir)), dry_run, apply, as_json)


def _explicit_vault(ctx):
    """The vault the installed hooks and MCP server must name: this one, unless it is where a process with
    no HAFIZA_VAULT looks anyway. An agent runs hooks in its own environment, which does not have the
    shell's HAFIZA_VAULT: a hook written without it injected nothing, silently."""
    from hafiza.vault.format.paths import is_default

    return None if is_default(ctx.root) else ctx.root


def _report(plan, dry_run: bool, apply, as_json: bool = False) -> None:
    """A line per file (and folder): created, updated, removed, restored or unchanged; under --dry-run, the
    diff and what would be done, since nothing is. With `as_json`, the same as one JSON object."""
    if as_json:
        if not (plan.empty or dry_run):
            apply(plan)
        emit(plan.to_json(dry_run))
        return
    if plan.empty:
        for line in plan.lines(dry_run):
            print(line)
        print(f"{plan.client}: nothing to change ({'already installed' if plan.action == 'install' else 'nothing of hafiza found'}).")
    elif dry_run:
        print(plan.diff(), end="")
        for line in plan.lines(dry_run):
            print(line)
        print("dry run: nothing was written.")
    else:
        apply(plan)
        for line in plan.lines(dry_run):
            print(line)
    if not plan.empty or plan.action == "install":
        for note in plan.notes:
            print(f"\n{note}")
