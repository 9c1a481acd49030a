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
    """Turns every HafizaError into one `Error: ...` line and its exit code; no tracebacks."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except HafizaError as exc:
            err = click.ClickException(exc.message)
            err.exit_code = exc.exit_code
            raise err from None


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

    root = ctx.obj
    if not is_vault(root):
        raise VaultNotFound(f"no vault at {root}; create one with `hafiza init`")
    return root


def open_vault(ctx, actor: str = "cli"):
    from hafiza.vault.store import Vault

    return Vault(ctx.obj, actor=actor).require()


def emit(data) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def refresh(vault, quiet: bool = False) -> None:
    """Bring the index (and the vectors, where an embedder is on) up to the files after a write."""
    from hafiza.indexer.refresh import refresh_all

    refresh_all(vault.root, progress=None if quiet else progress_factory())


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


