"""Many people: team vaults (`hafiza vault add|list|remove`) and `hafiza promote ID --to NAME`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .app import cli, emit, open_vault, progress_factory, settings_of, team_root


def _config(ctx) -> Path:
    return Path(settings_of(ctx).config)


def _restart_warm(root: Path) -> None:
    """The warm recall process reads the list when it starts: stop it, and the next prompt starts one
    that searches the new list."""
    from hafiza.hooks import wire

    wire.ask(root, {"op": "stop"})


@cli.group("vault", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_context
def vault_(ctx, as_json):
    """List your team vaults; `vault add NAME URL|PATH`, `vault remove NAME`.

    Team vaults are more git repositories searched with your own vault, in one ranking. The list is in
    your config folder ($XDG_CONFIG_HOME/hafiza/vaults.json), never in a project."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(vault_list, as_json=as_json)


@vault_.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_context
def vault_list(ctx, as_json):
    """List the team vaults: name, folder, and where it was cloned from."""
    from hafiza.vault.paths import is_vault
    from hafiza.vault.teams import load

    teams = sorted(load(_config(ctx)).values())
    if as_json:
        emit([{**t.to_json(), "present": is_vault(t.path)} for t in teams])
        return
    if not teams:
        click.echo("no team vaults; `hafiza vault add NAME URL|PATH` adds one")
    for team in teams:
        missing = "" if is_vault(team.path) else "  (missing: no vault there)"
        click.echo(f"{team.name:<16} {team.path}" + (f"  <- {team.url}" if team.url else "") + missing)


@vault_.command("add")
@click.argument("name")
@click.argument("source", metavar="URL|PATH")
@click.pass_context
def vault_add(ctx, name, source):
    """Add the team vault NAME: clone URL (into ~/.local/share/hafiza/teams/NAME), or use the vault at PATH.

    Its index and vectors are built here, on this machine, from its files."""
    from hafiza.indexer.config import embedder
    from hafiza.indexer.refresh import rebuild_all
    from hafiza.vault.paths import data_dir
    from hafiza.vault.teams import add

    team = add(_config(ctx), data_dir(os.environ), ctx.obj, name, source)
    report = rebuild_all(team.path, progress=progress_factory(), embedder=embedder(settings_of(ctx)))
    _restart_warm(ctx.obj)
    click.echo(f"added the vault {team.name} at {team.path}: {report.added} memories indexed; `hafiza search` "
               f"and the hooks read it with yours, `hafiza remember --to {team.name}` writes to it")


@vault_.command("remove")
@click.argument("name")
@click.pass_context
def vault_remove(ctx, name):
    """Stop reading the team vault NAME; its folder is left where it is."""
    from hafiza.vault.teams import remove

    team = remove(_config(ctx), name)
    _restart_warm(ctx.obj)
    click.echo(f"removed {team.name} from the list; its files are still at {team.path}")


@cli.command()
@click.argument("memory_id")
@click.option("--to", "to", metavar="NAME", required=True, help="The team vault to propose it to.")
@click.option("--push/--no-push", default=None,
              help="Push the review branch to the team vault's remote (default: when it has one).")
@click.option("--remote", default="origin", show_default=True, help="The team vault's git remote.")
@click.option("--json", "as_json", is_flag=True, help="Print the branch as JSON.")
@click.pass_context
def promote(ctx, memory_id, to, push, remote, as_json):
    """Propose your memory MEMORY_ID to the team vault NAME, as a review branch the team decides on.

    Pushed, the branch is a pull request on the team's remote; or a member accepts it with
    `hafiza --vault TEAM_FOLDER review accept BRANCH`. Your memory stays as it is."""
    from hafiza.vault.teams import promote as propose

    done = propose(open_vault(ctx), open_vault(ctx, to=to), memory_id, push, remote)
    if as_json:
        emit({**done._asdict(), "vault": to})
        return
    click.echo(f"proposed {done.memory_id} to {to} on the branch {done.branch}")
    if done.pushed_to:
        click.echo(f"pushed to {done.pushed_to}: open a pull request from {done.branch} there")
    else:
        click.echo(f"a team member accepts it with `hafiza --vault {team_root(ctx, to)} review accept "
                   f"{done.branch}`, or push it with `--push`")
