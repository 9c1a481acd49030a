"""The command group and what every command shares: the vault, output, progress bars.

Heavy modules (gitpython, PyYAML, numpy, Whoosh) are imported inside the
commands that need them, so `hafiza search` starts fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hafiza.vault.errors import HafizaError


class HafizaGroup(click.Group):
    """Turns every HafizaError, and an OS failure such as a full disk, into one `Error: ...` line and
    an exit code; no tracebacks."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except HafizaError as exc:
            err = click.ClickException(exc.message)
            err.exit_code = exc.exit_code
            raise err from None
        except OSError as exc:
            raise click.ClickException(os_message(exc)) from None


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
@click.version_option(package_name="hafiza")
@click.pass_context
def cli(ctx, vault_path):
    """hafiza: long-term memory for AI coding agents, in a git-backed markdown vault."""
    from hafiza.vault.paths import resolve_vault

    ctx.obj = resolve_vault(vault_path)


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


def open_vault(ctx, actor: str = "cli"):
    from hafiza.vault.store import Vault

    return Vault(ctx.obj, actor=actor).require()


def emit(data) -> None:
    """Pretty JSON on stdout; bidi, zero-width and C1 characters as \\u escapes, which json.dumps leaves raw."""
    from hafiza.vault.text import visible

    click.echo(visible(json.dumps(data, ensure_ascii=False, indent=2, default=str), as_json=True))


def refresh(vault, quiet: bool = False) -> None:
    """After a write has been committed: say what it noticed, and bring the index (and the vectors,
    where an embedder is on) up to the files.

    The commit is the write; the index is rebuildable. A failure here (a full disk) is a warning,
    never an error that would invite the user to repeat a write that landed.
    """
    from hafiza.indexer.refresh import refresh_all

    for line in getattr(vault, "warnings", ()):
        click.echo(f"warning: {line}", err=True)
    try:
        refresh_all(vault.root, progress=None if quiet else progress_factory())
    except (OSError, HafizaError) as exc:
        why = os_message(exc) if isinstance(exc, OSError) else exc.message
        click.echo(f"warning: the change is committed, but the index could not be updated ({why.split(';')[0]}); "
                   "search finds it after `hafiza reindex`", err=True)


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


