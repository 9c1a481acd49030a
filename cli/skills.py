"""`hafiza skills`: procedures the user repeats, drafted as inert skills; promoted or rejected by a person."""

from __future__ import annotations

import os
from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault
from .args import arg, date_value, flag, folder, ranged
from .curate import MODEL, PROJECTS, projects_of, provider_of
from .sessions import CLIENTS


@cli.group()
def skills():
    """Skills drafted from procedures you repeat (in 3+ sessions on 2+ days, or 3+ successful episodes).

    `skills draft` proposes them on a review branch, inert (`disable-model-invocation: true`); only
    `skills promote NAME` makes one a skill and installs it where Claude Code reads skills.
    """


@skills.command(
    arg("--since", type=date_value, metavar="DATE", help="Only sessions and episodes from DATE (YYYY-MM-DD) on."),
    arg("--client", choices=CLIENTS, help="Only this client's transcripts."),
    arg("--max", dest="limit", default=3, type=ranged(1, 10),
        help="Draft at most this many; the rest waits for the next run."),
    MODEL,
    arg("--budget", default=10, type=ranged(0, 1000), help="At most this many model calls."),
    PROJECTS,
    flag("--json", "as_json", help="Print the run's report as JSON."),
    name="draft",
)
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
    print(f"{plural(len(found), 'recurring procedure')}: {len(report.drafted)} drafted"
          + (f" on {report.branch}" if report.branch else "")
          + (f", {report.known} drafted or decided before" if report.known else "")
          + (f", {report.left} left for the next run" if report.left else ""))
    for d in report.drafted:
        print(f"  drafted {d.name}: {d.description}")
    for name, problems in report.refused:
        print(f"  not drafted {name}: {'; '.join(problems)}")
    for note in report.notes:
        print(f"  note: {note}")


@skills.command(
    flag("--json", "as_json", help="JSON: name, state (draft or active), branch, evidence."),
    name="list",
)
def list_(ctx, as_json):
    """List skill drafts waiting for review and promoted skills."""
    from hafiza.skills.catalog import entries

    found = entries(open_vault(ctx))
    if as_json:
        emit([e.to_json() for e in found])
        return
    if not found:
        print("no skills or drafts; `hafiza skills draft` looks for procedures you repeat")
    for e in found:
        print(f"{e.state:<6}  {e.name}" + (f"  ({e.branch})" if e.branch else ""))


@skills.command(
    arg("name"),
    flag("--json", "as_json", help="JSON: the entry and its SKILL.md text."),
    name="show",
)
def show(ctx, name, as_json):
    """Print the SKILL.md of draft or skill NAME."""
    from hafiza.skills.catalog import show as shown

    entry, text = shown(open_vault(ctx), name)
    if as_json:
        emit({**entry.to_json(), "text": text})
        return
    print(text, end="")


@skills.command(
    arg("name"),
    arg("--client", dest="target", choices=["claude-code", "codex"], default="claude-code",
        help="Install it where this client reads skills."),
    arg("--project", dest="project_dir", type=folder,
        help="Install it in this project's .claude/skills/ instead of your own ~/.claude/skills/."),
    flag("--no-install", help="Only commit skills/NAME/SKILL.md in the vault."),
    flag("--json", "as_json", help="Print the skill, the commit and the files installed as JSON."),
    name="promote",
)
def promote(ctx, name, target, project_dir, no_install, as_json):
    """Make draft NAME a skill: one commit moves it to skills/NAME/ without the inert flag, then it is
    installed for the client (Claude Code: ~/.claude/skills/NAME/SKILL.md)."""
    from hafiza.skills.catalog import promote as promoted, targets

    if project_dir and not Path(project_dir).expanduser().is_dir():
        raise HafizaError(f"--project {project_dir}: no such folder", field="project")
    project_dir = Path(project_dir).expanduser() if project_dir else None
    folders = [] if no_install else [targets(os.environ, target, project_dir)]
    sha, places = promoted(open_vault(ctx), name, folders)
    if as_json:
        emit({"name": name, "commit": sha, "installed": [str(p) for p in places]})
        return
    print(f"promoted {name} ({sha[:10]})" + "".join(f"\n  installed {p}" for p in places))


@skills.command(
    arg("name"),
    arg("--why", help="Why, kept with the ruling."),
    flag("--json", "as_json", help="Print the draft rejected and the commit of the ruling as JSON."),
    name="reject",
)
def reject(ctx, name, why, as_json):
    """Drop draft NAME and record a ruling, so the same procedure is never drafted again."""
    from hafiza.skills.catalog import reject as rejected

    vault = open_vault(ctx)
    rejected(vault, name, why)
    if as_json:
        emit({"name": name, "commit": vault.last_commit})
    else:
        print(f"rejected {name}; it will not be drafted again")
