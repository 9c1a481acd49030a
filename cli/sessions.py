"""`hafiza sessions`: import the agents' transcripts, search them, show one session."""

from __future__ import annotations

import datetime as dt
import os

import click

from .app import cli, date_value, emit, progress_factory, vault_root

CLIENT_CHOICE = click.Choice(["claude-code", "codex", "gemini", "opencode"])


@cli.group()
def sessions():
    """Conversation search over the agents' transcripts (Claude Code, Codex, Gemini CLI, opencode).

    Turns go into their own index in the vault's .hafiza/ folder, never into the memories; secrets in
    them are masked first. The warm process reads each session's transcript when the session ends.
    """


@sessions.command("import")
@click.option("--client", type=CLIENT_CHOICE, help="Only this client's transcripts.")
@click.option("--since", callback=date_value, metavar="DATE", help="Only transcripts and turns from DATE (YYYY-MM-DD) on.")
@click.pass_context
def import_(ctx, client, since):
    """Read new turns from the clients' transcript folders into the conversation index.

    Incremental: a transcript is read from where the last import stopped.
    """
    from hafiza.skills import sources
    from hafiza.skills.conversations import Conversations

    root = vault_root(ctx)
    where = sources.locations(os.environ)
    found = sources.files(where, client, since)
    report = Conversations(root).ingest(found, since, progress=progress_factory())
    click.echo(f"{report.turns} turns from {report.files} of {len(found)} transcripts"
               + (f"; secrets masked in {report.redacted}" if report.redacted else ""))


@sessions.command("search")
@click.argument("query")
@click.option("--project", help="Only conversations in this project (its folder's name).")
@click.option("--since", callback=date_value, metavar="DATE", help="Only turns from DATE (YYYY-MM-DD) on.")
@click.option("-n", "--limit", default=10, show_default=True, type=click.IntRange(min=1), help="How many turns.")
@click.option("--json", "as_json", is_flag=True, help="JSON: session, client, project, role, time, score, context.")
@click.pass_context
def search(ctx, query, project, since, limit, as_json):
    """Find past conversation turns about QUERY (BM25 over each turn, Turkish/ASCII folded)."""
    from hafiza.skills.conversations import Conversations

    results = Conversations(vault_root(ctx)).search(query, project=project, since=since, limit=limit)
    if as_json:
        emit([r.to_json() for r in results])
        return
    if not results:
        click.echo("no matching turns (run `hafiza sessions import` to read new transcripts)")
    for r in results:
        click.echo(f"{r.time[:16].replace('T', ' ')}  {r.client}  {r.project or '-'}  {r.session}  ({r.role})")
        for line in r.context:
            click.echo(f"    {line}")


@sessions.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="JSON: every turn with its role, time and text.")
@click.pass_context
def show(ctx, session_id, as_json):
    """Print one whole session (SESSION_ID, or the start of it) as indexed, secrets masked."""
    from hafiza.skills.conversations import Conversations

    turns = Conversations(vault_root(ctx)).show(session_id)
    if as_json:
        emit([{k: v for k, v in t._asdict().items() if k != "call"} for t in turns])  # index turns hold no call
        return
    first = turns[0]
    click.echo(f"session {first.session}  {first.client}  {first.project or '-'}  {first.time[:10]}")
    for t in turns:
        click.echo(f"\n[{t.time[11:19]}] {t.role}:")
        click.echo(t.text)
