"""Commands that set up and look after a vault: init, reindex, doctor, demo."""

from __future__ import annotations

import sys

import click

from .app import cli, emit, open_vault, progress_factory, settings_of


@cli.command()
@click.option("--from", "url", metavar="URL", help="Start from an existing vault's remote: clone it, register the "
                                                  "merge driver, build the index.")
@click.pass_context
def init(ctx, url):
    """Create a vault (a git repository with memories/) at the vault path. Safe to repeat."""
    from hafiza.indexer.config import embedder
    from hafiza.indexer.refresh import rebuild_all
    from hafiza.vault.store import Vault
    from hafiza.vault.sync import clone

    if url:
        clone(url, ctx.obj)
    vault = Vault.init(ctx.obj)
    if url:
        report = rebuild_all(vault.root, progress=progress_factory(), embedder=embedder(settings_of(ctx)))
        click.echo(f"cloned {url}: {report.added} memories indexed")
    click.echo(f"vault ready at {vault.root}")


@cli.command()
@click.pass_context
def reindex(ctx):
    """Rebuild the index (and vectors) from the files, from scratch."""
    from hafiza.indexer.config import embedder
    from hafiza.indexer.refresh import rebuild_all

    vault = open_vault(ctx)
    report = rebuild_all(vault.root, progress=progress_factory(), embedder=embedder(settings_of(ctx)))
    click.echo(f"indexed {report.added} memories" + (f"; {len(report.errors)} file(s) skipped" if report.errors else ""))
    for name, reason in sorted(report.errors.items()):
        click.echo(f"  skipped memories/{name}: {reason}", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="JSON report.")
@click.pass_context
def doctor(ctx, as_json):
    """Check the vault: index against files, unparsable files, vectors, lock, git state, pending usage,
    memories without aliases, Claude Code's MEMORY.md load cliff, installed clients, memories labelled
    unverified, proposals waiting for review, what merges from other machines left (an unfinished merge,
    conflict markers, memories holding two texts)."""
    from hafiza.cli.checks import run_checks

    checks = run_checks(open_vault(ctx), settings_of(ctx))
    if as_json:
        emit([c.__dict__ for c in checks])
    else:
        for c in checks:
            mark = {"ok": click.style("ok  ", fg="green"), "warn": click.style("warn", fg="yellow"),
                    "fail": click.style("FAIL", fg="red")}[c.level]
            click.echo(f"{mark}  {c.name}: {c.summary}")
            for line in c.details:
                click.echo(f"        {line}")
    if any(c.level == "fail" for c in checks):
        sys.exit(1)


@cli.command()
@click.option("--keep", type=click.Path(file_okay=False), help="Build the demo vault here and keep it.")
@click.pass_context
def demo(ctx, keep):
    """Build a demo vault from bundled memories and show recall at work."""
    from .demo import run_demo

    run_demo(keep, settings_of(ctx))
