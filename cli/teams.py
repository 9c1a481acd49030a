"""Many people: team vaults (`hafiza vault add|list|remove`) and `hafiza promote ID --to NAME`."""

from __future__ import annotations

import os
from pathlib import Path

from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault, progress_factory, team_root
from .args import arg, flag, memory_id, switch


def _config(ctx) -> Path:
    return Path(ctx.settings.config)


def _restart_warm(root: Path) -> None:
    """The warm recall process reads the list when it starts: stop it, and the next prompt starts one
    that searches the new list."""
    from hafiza.hooks import wire

    wire.ask(root, {"op": "stop"})


@cli.group(
    flag("--json", "as_json", help="Print the list as JSON."),
    name="vault",
    bare=True,
)
def vault_(ctx, as_json):
    """List your team vaults; `vault add NAME URL|PATH`, `vault remove NAME`.

    Team vaults are more git repositories searched with your own vault, in one ranking. The list is in
    your config folder ($XDG_CONFIG_HOME/hafiza/vaults.json), never in a project."""
    vault_list(ctx, as_json)


@vault_.command(
    flag("--json", "as_json", help="Print the list as JSON."),
    name="list",
)
def vault_list(ctx, as_json):
    """List the team vaults: name, folder, and where it was cloned from."""
    from hafiza.vault.format.paths import is_vault
    from hafiza.vault.sync.teams import load

    teams = sorted(load(_config(ctx)).values())
    if as_json:
        emit([{**t.to_json(), "present": is_vault(t.path)} for t in teams])
        return
    if not teams:
        print("no team vaults; `hafiza vault add NAME URL|PATH` adds one")
    for team in teams:
        missing = "" if is_vault(team.path) else "  (missing: no vault there)"
        print(f"{team.name:<16} {team.path}" + (f"  <- {team.url}" if team.url else "") + missing)


@vault_.command(
    arg("name"),
    arg("source", metavar="URL|PATH"),
    flag("--json", "as_json", help="Print the vault added and what was indexed as JSON."),
    name="add",
)
def vault_add(ctx, name, source, as_json):
    """Add the team vault NAME: clone URL (into ~/.local/share/hafiza/teams/NAME), or use the vault at PATH.

    Its index and vectors are built here, on this machine, from its files."""
    from hafiza.indexer.config import embedder
    from hafiza.indexer.refresh import rebuild_all
    from hafiza.vault.format.paths import data_dir
    from hafiza.vault.sync.teams import add

    from .admin import indexed, tell_skipped

    team = add(_config(ctx), data_dir(os.environ), ctx.root, name, source)
    report = rebuild_all(team.path, progress=progress_factory(), embedder=embedder(ctx.settings))
    _restart_warm(ctx.root)
    if as_json:
        emit({**team.to_json(), **indexed(report)})
        return
    print(f"added the vault {team.name} at {team.path}: {plural(report.added, 'memory')} indexed; `hafiza search` "
          f"and the hooks read it with yours, `hafiza remember --to {team.name}` writes to it")
    tell_skipped(report)


@vault_.command(
    arg("name"),
    flag("--json", "as_json", help="Print the vault removed from the list as JSON."),
    name="remove",
)
def vault_remove(ctx, name, as_json):
    """Stop reading the team vault NAME; its folder is left where it is."""
    from hafiza.vault.sync.teams import remove

    team = remove(_config(ctx), name)
    _restart_warm(ctx.root)
    if as_json:
        emit(team.to_json())
        return
    print(f"removed {team.name} from the list; its files are still at {team.path}")


@cli.command(
    arg("memory_id", type=memory_id),
    arg("--to", metavar="NAME", required=True, help="The team vault to propose it to."),
    switch("--push", help="Push the review branch to the team vault's remote (default: when it has one)."),
    arg("--remote", default="origin", help="The team vault's git remote."),
    flag("--json", "as_json", help="Print the branch as JSON."),
)
def promote(ctx, memory_id, to, push, remote, as_json):
    """Propose your memory MEMORY_ID to the team vault NAME, as a review branch the team decides on.

    Pushed, the branch is a pull request on the team's remote; or a member accepts it with
    `hafiza --vault TEAM_FOLDER review accept BRANCH`. Your memory stays as it is."""
    from hafiza.vault.sync.teams import promote as propose

    done = propose(open_vault(ctx), open_vault(ctx, to=to), memory_id, push, remote)
    if as_json:
        emit({**done._asdict(), "vault": to})
        return
    print(f"proposed {done.memory_id} to {to} on the branch {done.branch}")
    if done.pushed_to:
        print(f"pushed to {done.pushed_to}: open a pull request from {done.branch} there")
    else:
        print(f"a team member accepts it with `hafiza --vault {team_root(ctx, to)} review accept "
              f"{done.branch}`, or push it with `--push`")
