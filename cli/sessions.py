"""`hafiza sessions`: import the agents' transcripts, search them, show one session."""

from __future__ import annotations

import os

from .app import cli, emit, progress_factory, vault_root
from .args import arg, date_value, flag, ranged

CLIENTS = ("claude-code", "codex", "gemini", "opencode")  # the clients whose transcripts are read


@cli.group()
def sessions():
    """Conversation search over the agents' transcripts (Claude Code, Codex, Gemini CLI, opencode).

    Turns go into their own index in the vault's .hafiza/ folder, never into the memories; secrets in
    them are masked first. The warm process reads each session's transcript when the session ends.
    """


@sessions.command(
    arg("--client", choices=CLIENTS, help="Only this client's transcripts."),
    arg("--since", type=date_value, metavar="DATE", help="Only transcripts and turns from DATE (YYYY-MM-DD) on."),
    name="import",
)
def import_(ctx, client, since):
    """Read new turns from the clients' transcript folders into the conversation index.

    Incremental: a transcript is read from where the last import stopped.
    """
    from hafiza.skills import sources
    from hafiza.skills.conversations import Conversations
    from hafiza.vault.format.text import plural

    root = vault_root(ctx)
    where = sources.locations(os.environ)
    found = sources.files(where, client, since)
    report = Conversations(root).ingest(found, since, progress=progress_factory())
    print(f"{plural(report.turns, 'turn')} from {report.files} of {plural(len(found), 'transcript')}"
          + (f"; secrets masked in {report.redacted}" if report.redacted else ""))


@sessions.command(
    arg("query"),
    arg("--project", help="Only conversations in this project (its folder's name)."),
    arg("--since", type=date_value, metavar="DATE", help="Only turns from DATE (YYYY-MM-DD) on."),
    arg("-n", "--limit", default=10, type=ranged(1), help="How many turns."),
    flag("--json", "as_json", help="JSON: session, client, project, role, time, score, context."),
    name="search",
)
def search(ctx, query, project, since, limit, as_json):
    """Find past conversation turns about QUERY (BM25 over each turn, Turkish/ASCII folded)."""
    from hafiza.skills.conversations import Conversations

    results = Conversations(vault_root(ctx)).search(query, project=project, since=since, limit=limit)
    if as_json:
        emit([r.to_json() for r in results])
        return
    if not results:
        print("no matching turns (run `hafiza sessions import` to read new transcripts)")
    from hafiza.vault.format.text import one_line, visible

    for r in results:
        print(f"{r.time[:16].replace('T', ' ')}  {r.client}  {one_line(r.project) or '-'}  {one_line(r.session)}  "
              f"({r.role})")
        for line in r.context:
            print(f"    {visible(line)}")


@sessions.command(
    arg("session_id"),
    flag("--json", "as_json", help="JSON: every turn with its role, time and text."),
    name="show",
)
def show(ctx, session_id, as_json):
    """Print one whole session (SESSION_ID, or the start of just one id, 4 or more characters) as indexed,
    secrets masked."""
    from hafiza.skills.conversations import Conversations

    turns = Conversations(vault_root(ctx)).show(session_id)
    if as_json:
        emit([{k: v for k, v in t._asdict().items() if k != "call"} for t in turns])  # index turns hold no call
        return
    from hafiza.vault.format.text import one_line, visible

    first = turns[0]  # what was said, shown as written: its escapes (ESC, U+202E...) printed, not acted on
    print(f"session {one_line(first.session)}  {first.client}  {one_line(first.project) or '-'}  {first.time[:10]}")
    for t in turns:
        print(f"\n[{t.time[11:19]}] {t.role}:")
        print(visible(t.text))
