"""`hafiza skills`: procedures the user repeats, drafted as inert skills; promoted or rejected by a person."""

from __future__ import annotations

import os
from pathlib import Path

import click

from hafiza.vault.errors import HafizaError

from .app import cli, date_value, emit, open_vault
from .curate import projects_of, provider_of
from .sessions import CLIENT_CHOICE


@cli.group()
def skills():
    """Skills drafted from procedures you repeat (in 3+ sessions on 2+ days, or 3+ successful episodes).

    `skills draft` proposes them on a review branch, inert (`disable-model-invocation: true`); only
    `skills promote NAME` makes one a skill and installs it where Claude Code reads skills.
    """


@skills.command("draft")
@click.option("--since", callback=date_value, metavar="DATE", help="Only sessions and episodes from DATE (YYYY-MM-DD) on.")
@click.option("--client", type=CLIENT_CHOICE, help="Only this client's transcripts.")
@click.option("--max", "limit", default=3, show_default=True, type=click.IntRange(1, 10),
              help="Draft at most this many; the rest waits for the next run.")
@click.option("--model", "model_spec", help="Model provider for the prose: none, command:ARGV, openai:MODEL@URL or "
                                            "anthropic:MODEL@URL (default: $HAFIZA_MODEL, git config hafiza.model).")
@click.option("--budget", default=10, show_default=True, type=click.IntRange(0, 1000), help="At most this many model calls.")
@click.option("--project", "project_dirs", multiple=True, metavar="NAME=FOLDER",
              help="Where project NAME lives on this machine, for the path checks; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's report as JSON.")
@click.pass_context
def draft(ctx, since, client, limit, model_spec, budget, project_dirs, as_json):
    """Find procedures repeated in the agents' transcripts and the episode log; draft each as an inert skill,
    one commit per draft on a review branch `skills/<date>` (never on main). An episode's commands are
    checked in the folder you run it from."""
    from hafiza.skills import drafts, procedures, sources

    vault = open_vault(ctx, actor="skills")
    found = procedures.find(sources.files(sources.locations(os.environ), client, since), vault.root, since)
    report = drafts.run(vault, found, provider=provider_of(ctx, vault, model_spec, budget),
                        projects=projects_of(vault, project_dirs), search_path=os.environ.get("PATH"), limit=limit,
                        here=Path.cwd())
    if as_json:
        emit({**report.to_json(), "found": len(found)})
        return
    click.echo(f"{len(found)} recurring procedure(s): {len(report.drafted)} drafted"
               + (f" on {report.branch}" if report.branch else "")
               + (f", {report.known} drafted or decided before" if report.known else "")
               + (f", {report.left} left for the next run" if report.left else ""))
    for d in report.drafted:
        click.echo(f"  drafted {d.name}: {d.description}")
    for name, problems in report.refused:
        click.echo(f"  not drafted {name}: {'; '.join(problems)}")
    for note in report.notes:
        click.echo(f"  note: {note}")


@skills.command("list")
@click.option("--json", "as_json", is_flag=True, help="JSON: name, state (draft or active), branch, evidence.")
@click.pass_context
def list_(ctx, as_json):
    """List skill drafts waiting for review and promoted skills."""
    from hafiza.skills.catalog import entries

    found = entries(open_vault(ctx))
    if as_json:
        emit([e.to_json() for e in found])
        return
    if not found:
        click.echo("no skills or drafts; `hafiza skills draft` looks for procedures you repeat")
    for e in found:
        click.echo(f"{e.state:<6}  {e.name}" + (f"  ({e.branch})" if e.branch else ""))


@skills.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="JSON: the entry and its SKILL.md text.")
@click.pass_context
def show(ctx, name, as_json):
    """Print the SKILL.md of draft or skill NAME."""
    from hafiza.skills.catalog import show as shown

    entry, text = shown(open_vault(ctx), name)
    if as_json:
        emit({**entry.to_json(), "text": text})
        return
    click.echo(text, nl=False)


@skills.command("promote")
@click.argument("name")
@click.option("--client", "target", type=click.Choice(["claude-code", "codex"]), default="claude-code",
              show_default=True, help="Install it where this client reads skills.")
@click.option("--project", "project_dir", type=click.Path(file_okay=False),
              help="Install it in this project's .claude/skills/ instead of your own ~/.claude/skills/.")
@click.option("--no-install", is_flag=True, help="Only commit skills/NAME/SKILL.md in the vault.")
@click.pass_context
def promote(ctx, name, target, project_dir, no_install):
    """Make draft NAME a skill: one commit moves it to skills/NAME/ without the inert flag, then it is
    installed for the client (Claude Code: ~/.claude/skills/NAME/SKILL.md)."""
    from hafiza.skills.catalog import promote as promoted, targets

    if project_dir and not Path(project_dir).expanduser().is_dir():
        raise HafizaError(f"--project {project_dir}: no such folder", field="project")
    project_dir = Path(project_dir).expanduser() if project_dir else None
    folders = [] if no_install else [targets(os.environ, target, project_dir)]
    sha, places = promoted(open_vault(ctx), name, folders)
    click.echo(f"promoted {name} ({sha[:10]})" + "".join(f"\n  installed {p}" for p in places))


@skills.command("reject")
@click.argument("name")
@click.option("--why", help="Why, kept with the ruling.")
@click.pass_context
def reject(ctx, name, why):
    """Drop draft NAME and record a ruling, so the same procedure is never drafted again."""
    from hafiza.skills.catalog import reject as rejected

    rejected(open_vault(ctx), name, why)
    click.echo(f"rejected {name}; it will not be drafted again")
