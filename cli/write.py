"""Commands that change the vault. Each change is one git commit."""

from __future__ import annotations

import sys
from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.kinds import TYPES
from hafiza.vault.format.layout import vault_rel
from hafiza.vault.format.text import plural

from .app import cli, emit, open_vault
from .args import UsageError, any_memory_id, arg, edit as edit_text, err, flag, lower, many, memory_id


def _text_arg(text: str | None) -> str:
    if text in (None, "-"):
        if sys.stdin.isatty():
            raise HafizaError("give the memory text as an argument or on stdin")
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HafizaError(f"stdin is not UTF-8 text (byte {exc.start} of {len(data)}); a memory is text: "
                              "convert it (e.g. with iconv) or describe where the file lives") from None
    return text


def _memory_json(memory) -> dict:
    return {"id": memory.id, "title": memory.title, "type": memory.type, "scope": memory.scope,
            "status": memory.status, "path": vault_rel(memory.path) if memory.path else None}


def _written(vault, memory) -> dict:
    """A memory a write changed, as `--json` prints it: its fields and the write's commit."""
    return {**_memory_json(memory), "commit": vault.last_commit}


@cli.command(
    arg("text", nargs="?"),
    arg("--title", help="Title (default: the first line of the text)."),
    arg("--type", dest="type_", default="knowledge", type=lower, choices=TYPES, help="What kind of memory (any case)."),
    many("--tag", dest="tags", help="A tag; repeat for more."),
    many("--alias", dest="aliases", help="Another phrase people use for this; repeatable."),
    arg("--scope", default="global", help="global or project:<name>."),
    arg("--id", dest="id_", help="Use this id instead of one derived from the title."),
    many("--supersedes", help="Id of a memory this one replaces; repeatable."),
    arg("--reason", help="Why, recorded in the commit."),
    arg("--to", metavar="NAME", help="Write to the team vault NAME (`hafiza vault list`) instead of yours."),
    flag("--json", "as_json", help='Print the new memory and the commit as JSON (the existing one, with "duplicate": '
                                   'true and "commit": null, when it was remembered already).'),
    flag("--suggest-aliases", help="Also suggest aliases when the output is not a terminal (on one, they are "
                                   "suggested whenever the memory has none)."),
)
def remember(ctx, text, title, type_, tags, aliases, scope, id_, supersedes, reason, to, as_json, suggest_aliases):
    """Remember TEXT (or stdin) as a new memory, in one commit (in your vault, or a team's with --to).

    The same text (spacing and case aside) in the same scope as an active memory is not written twice:
    it says `already remembered as ID` and exits 0. A memory written without aliases gets suggestions on
    a terminal: other words this vault uses for what it names (never written; add them with `hafiza alias`)."""
    from hafiza.vault.errors import AlreadyRemembered

    vault = open_vault(ctx, to=to)
    try:
        memory = vault.remember(_text_arg(text), title=title, type=type_, tags=tags, aliases=aliases,
                                scope=scope, id=id_, supersedes=supersedes, reason=reason)
    except AlreadyRemembered as same:  # not an error: what was asked for is in the vault (exit 0)
        if as_json:
            emit({**_written(vault, vault.get(same.existing)), "duplicate": True})
        else:
            print(same.message)
        return
    if as_json:
        emit(_written(vault, memory))
    else:
        extra = f" (supersedes {', '.join(supersedes)})" if supersedes else ""
        print(f"remembered {memory.id}{extra}" + (f" in the vault {to}" if to else ""))
        if not memory.aliases and (suggest_aliases or sys.stdout.isatty()):
            _suggest_aliases(vault, memory)


def _suggest_aliases(vault, memory) -> None:
    """Print the aliases indexer/suggest.py finds for `memory`, as a command the person may run."""
    import shlex

    from hafiza.indexer.suggest import alias_suggestions

    found = alias_suggestions(vault.root, " ".join((memory.title, " ".join(memory.tags), memory.body)))
    if found:
        print(f"no aliases; this vault also says: {'; '.join(found)}\n"
              f"  add the ones someone would type: hafiza alias {memory.id} {' '.join(map(shlex.quote, found))}")


@cli.command(
    arg("source"),
    arg("project", nargs="?"),
    arg("--scope", help="Scope for memories imported from claude-code (default: project:<its folder>)."),
    flag("--skip-invalid", help="Import the valid items and list the others, instead of refusing all."),
    flag("--dry-run", help="Check everything and say what would be imported; write nothing."),
    flag("--json", "as_json", help="Print the imported ids and the commit as JSON."),
    name="import",
)
def import_(ctx, source, project, scope, skip_invalid, dry_run, as_json):
    """Import SOURCE: a JSONL file of {id?, title?, text, type?, tags?, scope?, created?},
    a folder of markdown files, or `claude-code [PROJECT]` (Claude Code's MEMORY.md and topic
    files; re-running imports nothing twice). One commit for the whole import; --dry-run says
    the same without writing it."""
    from hafiza.cli.importer import read_source

    vault = open_vault(ctx)
    if source == "claude-code" and not Path(source).exists():
        _import_claude_code(vault, project, scope, dry_run, as_json)
        return
    items, problems = read_source(Path(source))
    if problems and not skip_invalid:
        raise HafizaError(f"{problems[0]} ({plural(len(problems), 'problem')}; nothing imported; "
                          "--skip-invalid imports the rest)")
    memories, skipped = vault.import_many(items, source=f"import:{Path(source).name}", skip_invalid=skip_invalid,
                                          dry_run=dry_run)
    problems += skipped
    if as_json:
        emit({"imported" if not dry_run else "would_import": [m.id for m in memories], "skipped": problems,
              "commit": vault.last_commit})
        return
    _imported(memories, problems, source, dry_run)


SHOWN = 50  # memories an import lists by id and title; --json lists every id


def _imported(memories, problems: list[str], source: str, dry_run: bool, before: int = 0) -> None:
    """What an import did, or with `dry_run` would do: how many, which (id, type, scope, title), and on stderr
    each item skipped, with why."""
    from hafiza.vault.format.text import one_line
    from hafiza.vault.store.vault import ALREADY

    present = sum(ALREADY in problem for problem in problems)
    skipped = [f"{before} imported before"] * bool(before) + [f"{present} already in the vault"] * bool(present)
    print(f"{'would import' if dry_run else 'imported'} {plural(len(memories), 'memory')} from {source}"
          + (f"; skipped {', '.join(skipped)}" if skipped else "") + ("; nothing was written" if dry_run else ""))
    lines = [f"  {m.id}  ({m.type}, {m.scope})  {one_line(m.title)}" for m in memories[:SHOWN]]
    if len(memories) > SHOWN:
        lines.append(f"  ... and {len(memories) - SHOWN} more (--json lists every id)")
    if lines:
        print("\n".join(lines))
    for problem in problems:
        err(f"skipped: {problem}")


@cli.command(
    arg("memory_id", type=memory_id),
    arg("--text", help="Replace the memory's text with TEXT (- reads stdin) instead of opening an editor."),
    arg("--title", help="With --text: a new title too."),
    flag("--resume", help="Reopen the draft a refused edit of MEMORY_ID saved, instead of the memory."),
    flag("--json", "as_json", help="Print the memory and the commit as JSON (no commit when nothing changed)."),
)
def edit(ctx, memory_id, text, title, resume, as_json):
    """Open a memory in $EDITOR (or replace its text with --text); validated and committed.

    An edit that is refused (a field that does not validate, a secret) changes nothing and is kept as a
    draft under .hafiza/drafts/; `hafiza edit ID --resume` opens that draft to fix it (a draft left as it
    was is saved again as it is).
    """
    from hafiza.vault.files import read_text

    vault = open_vault(ctx)
    if text is not None:
        if resume:
            raise UsageError("--resume opens the saved draft in the editor; it does not go with --text")
        memory = vault.update(memory_id, _text_arg(text), title=title)
        emit({**_written(vault, memory), "draft": None}) if as_json else print(f"updated {memory.id}")
        return
    if title is not None:
        raise HafizaError("--title goes with --text")
    memory_path = vault.get(memory_id).path
    draft = vault.latest_draft(memory_id) if resume else None
    if resume and draft is None:
        raise HafizaError(f"no saved draft for {memory_id!r} (a refused `hafiza edit` keeps one)")
    original = read_text(draft or memory_path)
    edited = edit_text(original, extension=".md")
    if draft is None and edited in (None, original):
        if as_json:
            emit({**_written(vault, vault.get(memory_id)), "draft": None})
        else:
            print("no changes")
        return
    if draft is not None and edited in (None, original):
        # The draft was refused once, and what refused it may be gone (another writer held the vault, the
        # disk was full): it is tried again as it is, rather than "no changes" leaving it untried (new-user
        # trial). Refused again, it is kept again, and the error says why.
        err(f"the draft is unchanged; saving it as it is ({draft})")
        edited = original
    # A refused edit is kept as a draft (replacing the one resumed), and the error says where; one applied
    # removes the draft it came from.
    memory = vault.edit(memory_id, edited, draft=draft)
    emit({**_written(vault, memory), "draft": None}) if as_json else print(f"edited {memory.id}")


@cli.command(
    arg("memory_id", type=memory_id),
    arg("phrases", nargs="+"),
    arg("--reason", help="Why, recorded in the commit."),
    flag("--json", "as_json", help="Print the memory's aliases and the commit (none when nothing was added) as JSON."),
)
def alias(ctx, memory_id, phrases, reason, as_json):
    """Add PHRASES people may type for MEMORY_ID, e.g. the same thing in the other language.

    Aliases are searched with the title and feed the meaning vectors, so a
    prompt worded differently from the memory still finds it. One commit;
    phrases the memory already has are skipped.
    """
    vault = open_vault(ctx)
    memory, added = vault.add_aliases(memory_id, list(phrases), reason)
    if as_json:
        emit({"id": memory.id, "added": added, "aliases": memory.aliases, "commit": vault.last_commit})
    elif added:
        print(f"{memory.id}: added {plural(len(added), 'alias')}: {'; '.join(added)}")
    else:
        print(f"{memory.id}: it already has every one of these aliases")


@cli.command(
    arg("old_id", type=memory_id),
    arg("new_id", type=memory_id),
    arg("--reason", help="Why the old one no longer holds."),
    flag("--json", "as_json", help="Print both memories and the commit as JSON."),
)
def supersede(ctx, old_id, new_id, reason, as_json):
    """Mark OLD_ID as replaced by NEW_ID (kept, but out of recall)."""
    vault = open_vault(ctx)
    old, new = vault.supersede(old_id, new_id, reason)
    if as_json:
        emit({"old": _memory_json(old), "new": _memory_json(new), "commit": vault.last_commit})
    else:
        print(f"{old_id} is superseded by {new_id}")


@cli.command(
    arg("memory_id", type=memory_id),
    arg("--reason", help="Why it is no longer wanted."),
    flag("--json", "as_json", help="Print the archived memory and the commit as JSON."),
)
def forget(ctx, memory_id, reason, as_json):
    """Archive a memory: it leaves recall; the file and its history stay."""
    vault = open_vault(ctx)
    memory = vault.forget(memory_id, reason)
    emit(_written(vault, memory)) if as_json else print(f"archived {memory_id}")


@cli.command(
    arg("memory_ids", nargs="+", type=any_memory_id),
    arg("--session", help="Session id, for the usage log."),
    flag("--json", "as_json", help="Print the ids recorded, by which vault, and those no memory has (`unknown`, "
                                   "each with the ids it may mean) as JSON."),
)
def used(ctx, memory_ids, session, as_json):
    """Record that memories were useful (the only upward usefulness signal); a team vault's memory
    counts in that team vault. Logged, not committed: `hafiza fold` (or any write once the log is a day old)
    commits the counts. An id no memory has is named with the ids it may mean, and the others are
    recorded all the same; the exit status is then 3, as for an unknown id alone."""
    from hafiza.vault.errors import MemoryNotFound
    from hafiza.vault.sync.teams import PERSONAL, readable, record_uses

    uses = record_uses(ctx.root, readable(Path(ctx.settings.config)), memory_ids,
                       lambda name: open_vault(ctx, to=None if name == PERSONAL else name), session)
    if as_json:
        emit(uses.to_json())
    else:  # what was recorded, not what was typed: `used a a` is one use of one memory
        print(f"recorded use of {plural(len(uses.recorded), 'memory')}")
    for exc in uses.unknown.values():
        err(f"Error: {exc.message}")
    if uses.unknown:
        sys.exit(MemoryNotFound.exit_code)


@cli.command(
    flag("--json", "as_json", help="Print how many memories were folded and the commit (none when nothing was) "
                                   "as JSON."),
)
def fold(ctx, as_json):
    """Write pending usage counts from the log into the files, in one commit."""
    vault = open_vault(ctx)
    touched = vault.fold()
    if as_json:
        emit({"folded": touched, "commit": vault.last_commit})
    else:
        print(f"folded usage of {plural(touched, 'memory')}" if touched else "nothing to fold")


@cli.command(
    arg("memory_id", metavar="ID", type=memory_id),
    arg("--reason", help="Why, recorded in the commit."),
    flag("--json", "as_json", help="Print the restored memory and the commit as JSON."),
)
def restore(ctx, memory_id, reason, as_json):
    """Bring an archived (forgotten) memory back into recall, in one commit."""
    vault = open_vault(ctx)
    memory = vault.restore(memory_id, reason)
    emit(_written(vault, memory)) if as_json else print(f"restored {memory.id}")


@cli.command(
    arg("commit", nargs="?"),
    flag("--redo", help="Undo the latest undo instead."),
    flag("--json", "as_json", help="Print the commit reverted, the new commit and the files it changed as JSON."),
)
def undo(ctx, commit, redo, as_json):
    """Revert one hafiza commit: the latest change not yet undone (run it again to walk further back),
    or COMMIT. Refuses commits hafiza did not make."""
    if redo and commit:
        raise HafizaError("--redo takes no COMMIT: it redoes the latest undo")
    vault = open_vault(ctx)
    target, sha = vault.undo(commit, redo=redo)
    if as_json:
        emit({"action": "redo" if redo else "undo", "reverted": target, "commit": sha,
              "paths": vault.git.changed_paths(sha)})
    else:
        print(f"{'redid' if redo else 'reverted'} {target[:10]} as {sha[:10]}")


def _import_claude_code(vault, project, scope, dry_run, as_json) -> None:
    from hafiza.hooks.claude import find_dirs, import_into

    dirs = find_dirs(project)
    if not dirs:
        raise HafizaError(f"no Claude Code memory found{' for ' + project if project else ''} "
                          "under ~/.claude/projects/*/memory/")
    imported, seen, skipped = import_into(vault, dirs, scope, dry_run=dry_run)
    if as_json:
        emit({"imported" if not dry_run else "would_import": [m.id for m in imported], "already_imported": seen,
              "skipped": skipped, "commit": vault.last_commit})
        return
    _imported(imported, skipped, f"Claude Code ({plural(len(dirs), 'project')})", dry_run,
              before=seen)
