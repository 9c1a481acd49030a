"""One person, many machines: `hafiza sync`, `hafiza remote`, `hafiza resolve` (and `init --from` in admin)."""

from __future__ import annotations

import sys

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import agree, plural

from .app import cli, emit, open_vault
from .args import arg, err, flag, memory_id

KINDS = ("added", "changed", "superseded")


@cli.command(
    arg("--remote", default="origin", help="The vault's git remote."),
    flag("--json", "as_json", help="Print what came in and went out as JSON."),
)
def sync(ctx, remote, as_json):
    """Sync the vault with its remote: fold usage, commit hand edits, fetch, merge, push.

    Memories merge field by field (counters add, lists merge, supersede and archive stick); where two
    machines changed the same lines both texts are kept and `hafiza resolve` picks. Without a network
    nothing is lost: local commits stay and go out with the next sync. With team vaults listed
    (`hafiza vault list`), each is synced after yours, each with its own remote; one that cannot be
    reached does not stop the others."""
    from pathlib import Path

    from hafiza.vault.sync.machines import sync as run
    from hafiza.vault.sync.teams import PERSONAL, load

    teams = sorted(load(Path(ctx.settings.config)))
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
                err(f"{name}: error: {exc.message}")
            continue
        results[name] = report.to_json()
        if not as_json:
            print(f"{name}:")
            _print(report, indent="  ")
    if as_json:
        emit({"vaults": results})
    if failed:
        sys.exit(1)


def _print(report, indent: str = "") -> None:
    for label, side in (("in", report.came_in), ("out", report.went_out)):
        moved = [f"{len(side[k])} {k}" for k in KINDS if side[k]]
        print(f"{indent}{label:<4}{', '.join(moved) or 'nothing'}")
        for kind in KINDS:
            for memory_id in side[kind][:20]:
                print(f"{indent}      {kind:<11}{memory_id}")
    if report.pushed:
        print(f"{indent}pushed {plural(report.pushed, 'commit')} to {report.remote}" +
              (" (first push)" if report.first_push else ""))
    for note in report.notes:
        print(f"{indent}note: {note}")
    for rel, kinds in report.quarantined.items():
        print(f"{indent}quarantined: {rel} holds what looks like a secret ({', '.join(kinds)}): kept as the remote "
              "has it, never indexed, recalled or shown; `hafiza doctor` says how to remove it from history")
    if report.conflicts:
        held = len(report.conflicts)
        print(f"{indent}{plural(held, 'memory')} {agree(held, 'holds', 'hold')} two texts until you pick: "
              "`hafiza resolve` lists them")


@cli.group(
    arg("--name", default="origin", help="The remote's name."),
    flag("--json", "as_json", help='Print the remote\'s name and URL as JSON ("url": null when there is none).'),
    bare=True,
)
def remote(ctx, name, as_json):
    """Show the vault's remote; `hafiza remote set URL` sets it."""
    from hafiza.vault.sync.machines import check_remote

    url = open_vault(ctx).git.remote_url(check_remote(name))
    if as_json:
        emit({"name": name, "url": url})
    else:
        print(url or f"no remote {name!r}; `hafiza remote set URL`")


@remote.command(
    arg("url"),
    arg("--name", default="origin", help="The remote's name."),
    flag("--json", "as_json", help="Print the remote's name and URL as JSON."),
    name="set",
)
def remote_set(ctx, url, name, as_json):
    """Point the vault at URL (a bare repository, GitHub, GitLab...); then `hafiza sync`."""
    from hafiza.vault.sync.machines import set_remote

    set_remote(open_vault(ctx), url, name)
    emit({"name": name, "url": url}) if as_json else print(f"{name} is {url}; `hafiza sync` sends and fetches")


@cli.command(
    arg("memory_id", nargs="?", type=memory_id),
    arg("--keep", choices=("ours", "theirs", "both"),
        help="Which text to keep: this machine's (ours), the other's (theirs), or both one after the other."),
    flag("--json", "as_json", help="Print the list (or what was done) as JSON."),
)
def resolve(ctx, memory_id, keep, as_json):
    """List memories a merge left with two texts, or settle one (ID --keep ours|theirs|both)."""
    from hafiza.vault.sync.machines import conflicted, resolve as settle

    vault = open_vault(ctx)
    if memory_id is None:
        found = conflicted(vault)
        if as_json:
            emit(found)
            return
        if not found:
            print("no memory holds a merge conflict")
        for memory_id, kinds in sorted(found.items()):
            print(f"{memory_id}: {', '.join(kinds)}  (`hafiza resolve {memory_id} --keep ours|theirs|both`)")
        return
    done = settle(vault, memory_id, keep)
    if as_json:
        emit(done)
    for line in [] if as_json else done:
        print(line)
