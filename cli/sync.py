"""One person, many machines: `hafiza sync`, `hafiza remote`, `hafiza resolve` (and `init --from` in admin)."""

from __future__ import annotations

import click

from hafiza.vault.errors import HafizaError

from .app import cli, emit, open_vault, settings_of

KINDS = ("added", "changed", "superseded")


@cli.command()
@click.option("--remote", default="origin", show_default=True, help="The vault's git remote.")
@click.option("--json", "as_json", is_flag=True, help="Print what came in and went out as JSON.")
@click.pass_context
def sync(ctx, remote, as_json):
    """Sync the vault with its remote: fold usage, commit hand edits, fetch, merge, push.

    Memories merge field by field (counters add, lists merge, supersede and archive stick); where two
    machines changed the same lines both texts are kept and `hafiza resolve` picks. Without a network
    nothing is lost: local commits stay and go out with the next sync. With team vaults listed
    (`hafiza vault list`), each is synced after yours, each with its own remote; one that cannot be
    reached does not stop the others."""
    from pathlib import Path

    from hafiza.vault.sync import sync as run
    from hafiza.vault.teams import PERSONAL, load

    teams = sorted(load(Path(settings_of(ctx).config)))
    if not teams:  # one vault: its report as before, and its error as the command's
        report = run(open_vault(ctx), remote)
        emit(report.to_json()) if as_json else _print(report)
        return
    results, failed = {}, False
    for name in [PERSONAL, *teams]:
        try:
            report = run(open_vault(ctx, to=None if name == PERSONAL else name), remote)
        except HafizaError as exc:
            failed, results[name] = True, {"error": exc.message}
            if not as_json:
                click.echo(f"{name}: error: {exc.message}", err=True)
            continue
        results[name] = report.to_json()
        if not as_json:
            click.echo(f"{name}:")
            _print(report, indent="  ")
    if as_json:
        emit({"vaults": results})
    if failed:
        ctx.exit(1)


def _print(report, indent: str = "") -> None:
    for label, side in (("in", report.came_in), ("out", report.went_out)):
        moved = [f"{len(side[k])} {k}" for k in KINDS if side[k]]
        click.echo(f"{indent}{label:<4}{', '.join(moved) or 'nothing'}")
        for kind in KINDS:
            for memory_id in side[kind][:20]:
                click.echo(f"{indent}      {kind:<11}{memory_id}")
    if report.pushed:
        click.echo(f"{indent}pushed {report.pushed} commit(s) to {report.remote}" +
                   (" (first push)" if report.first_push else ""))
    for note in report.notes:
        click.echo(f"{indent}note: {note}")
    if report.conflicts:
        click.echo(f"{indent}{len(report.conflicts)} memory(ies) hold two texts until you pick: `hafiza resolve` "
                   "lists them")


@cli.group(invoke_without_command=True)
@click.option("--name", default="origin", show_default=True, help="The remote's name.")
@click.pass_context
def remote(ctx, name):
    """Show the vault's remote; `hafiza remote set URL` sets it."""
    if ctx.invoked_subcommand is not None:
        return
    from hafiza.vault.sync import check_remote

    url = open_vault(ctx).git.remote_url(check_remote(name))
    click.echo(url or f"no remote {name!r}; `hafiza remote set URL`")


@remote.command("set")
@click.argument("url")
@click.option("--name", default="origin", show_default=True, help="The remote's name.")
@click.pass_context
def remote_set(ctx, url, name):
    """Point the vault at URL (a bare repository, GitHub, GitLab...); then `hafiza sync`."""
    from hafiza.vault.sync import set_remote

    set_remote(open_vault(ctx), url, name)
    click.echo(f"{name} is {url}; `hafiza sync` sends and fetches")


@cli.command()
@click.argument("memory_id", required=False)
@click.option("--keep", type=click.Choice(("ours", "theirs", "both")),
              help="Which text to keep: this machine's (ours), the other's (theirs), or both one after the other.")
@click.option("--json", "as_json", is_flag=True, help="Print the list (or what was done) as JSON.")
@click.pass_context
def resolve(ctx, memory_id, keep, as_json):
    """List memories a merge left with two texts, or settle one (ID --keep ours|theirs|both)."""
    from hafiza.vault.sync import conflicted, resolve as settle

    vault = open_vault(ctx)
    if memory_id is None:
        found = conflicted(vault)
        if as_json:
            emit(found)
        elif not found:
            click.echo("no memory holds a merge conflict")
        for memory_id, kinds in sorted(found.items()):
            click.echo(f"{memory_id}: {', '.join(kinds)}  (`hafiza resolve {memory_id} --keep ours|theirs|both`)")
        return
    done = settle(vault, memory_id, keep)
    if as_json:
        emit(done)
    for line in [] if as_json else done:
        click.echo(line)
