"""The command group and what every command shares: the vault, output, progress bars.

Heavy modules (PyYAML, numpy, Whoosh) are imported inside the
commands that need them, so `hafiza search` starts fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hafiza.vault import __version__
from hafiza.vault.errors import HafizaError

SETTINGS, VAULTS = "hafiza.settings", "hafiza.vaults"  # keys in click's ctx.meta


# Each command's module, imported only when that command runs: importing all of them (and what they
# import) cost every command ~40 ms before it did anything. tests/test_cli.py checks this map.
COMMANDS = {
    "admin": ("demo", "doctor", "init", "reindex"),
    "agents": ("daemon", "hook", "profile"),
    "curate": ("curate", "review"),
    "facts": ("fact",),
    "inbox": ("inbox",),
    "read": ("list", "log", "search", "show", "stats"),
    "serve": ("mcp", "token"),
    "sessions": ("sessions",),
    "skills": ("skills",),
    "setup": ("install", "uninstall"),
    "sync": ("remote", "resolve", "sync"),
    "teams": ("promote", "vault"),
    "verify": ("verify",),
    "write": ("alias", "edit", "fold", "forget", "import", "remember", "restore", "supersede", "undo", "used"),
}
MODULE_OF = {command: module for module, commands in COMMANDS.items() for command in commands}


class HafizaGroup(click.Group):
    """Loads a command's module when it is asked for, and turns every HafizaError, and an OS failure
    such as a full disk, into one `Error: ...` line and an exit code; no tracebacks."""

    def get_command(self, ctx, name):
        if name not in self.commands and name in MODULE_OF:
            import importlib

            importlib.import_module(f"hafiza.cli.{MODULE_OF[name]}")
        return super().get_command(ctx, name)

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(MODULE_OF))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except HafizaError as exc:
            err = click.ClickException(exc.message)
            err.exit_code = exc.exit_code
            raise err from None
        except OSError as exc:
            raise click.ClickException(os_message(exc)) from None
        finally:  # what the command's writes noticed: a placeholder key kept, a symlink skipped, the index
            for vault in ctx.meta.get(VAULTS, ()):
                for line in vault.warnings:
                    click.echo(f"warning: {line}", err=True)


def os_message(exc: OSError) -> str:
    """One line for a failure of the machine rather than of the input; the library has rolled back."""
    import errno

    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full{where}; nothing was changed. Free some space and try again."
    if exc.errno == errno.EROFS:
        return f"the file system is read-only{where}; nothing was changed."
    return f"{exc.strerror or exc}{where}; nothing was changed."


@click.group(cls=HafizaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--vault", "vault_path", type=click.Path(file_okay=False), envvar=None,
              help="Vault folder (default: $HAFIZA_VAULT, then ~/.local/share/hafiza/vault).")
@click.version_option(version=__version__, message="%(prog)s, version %(version)s")
@click.pass_context
def cli(ctx, vault_path):
    """hafiza: long-term memory for AI coding agents, in a git-backed markdown vault."""
    from hafiza.indexer.config import settings
    from hafiza.vault.paths import resolve_vault

    ctx.obj = resolve_vault(vault_path)
    ctx.meta[SETTINGS] = settings()  # the environment, read here and passed on (hafiza.indexer.config)


def vault_root(ctx) -> Path:
    """The vault folder, checked without importing the write path (fast for read commands)."""
    from hafiza.vault.errors import VaultNotFound
    from hafiza.vault.paths import is_vault

    from hafiza.vault.paths import check_sidecar

    root = ctx.obj
    if not is_vault(root):
        raise VaultNotFound(f"no vault at {root}; create one with `hafiza init`")
    check_sidecar(root)
    return root


def team_root(ctx, name: str) -> Path:
    """The folder of the team vault `name`, from the user's config (never from a project)."""
    from hafiza.vault.teams import resolve

    return resolve(Path(settings_of(ctx).config), name).path


def settings_of(ctx):
    return ctx.meta[SETTINGS]


def open_vault(ctx, actor: str = "cli", to: str | None = None):
    """The vault, opened the one way writers open it: each write also brings the index and vectors up to
    the files (hafiza.indexer.refresh.writable), and its warnings are printed when the command ends.
    `to` names a team vault (`hafiza vault list`) instead of the personal one."""
    from hafiza.indexer.refresh import writable

    root = team_root(ctx, to) if to else ctx.obj
    vault = writable(root, actor, embedder=settings_of(ctx), progress=progress_factory()).require()
    ctx.meta.setdefault(VAULTS, []).append(vault)
    return vault


def reading_vault(ctx):
    """The vault for a command that only reads (`show`, `log`): no index or model code is imported, and
    a write through it is refused."""
    from hafiza.vault.store import reader

    return reader(vault_root(ctx))


def emit(data) -> None:
    """Pretty JSON on stdout; bidi, zero-width and C1 characters as \\u escapes, which json.dumps leaves raw."""
    from hafiza.vault.text import visible

    click.echo(visible(json.dumps(data, ensure_ascii=False, indent=2, default=str), as_json=True))


def date_value(ctx, param, value):
    """A click callback: YYYY-MM-DD to a date (None stays None)."""
    import datetime as dt

    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


def progress_factory():
    """A callable(done, total) that draws a click progress bar once there is enough work to show."""
    state = {}

    def update(done: int, total: int, label: str = "indexing") -> None:
        if total < 50 or not sys.stderr.isatty():
            return
        bar = state.get(label)
        if bar is None:
            bar = state[label] = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    return update


