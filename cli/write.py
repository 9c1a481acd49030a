"""Commands that change the vault. Each change is one git commit."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hafiza.vault.errors import HafizaError, SecretRefused
from hafiza.vault.kinds import TYPES
from hafiza.vault.layout import vault_rel

from .app import cli, emit, open_vault, settings_of


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


@cli.command()
@click.argument("text", required=False)
@click.option("--title", help="Title (default: the first line of the text).")
@click.option("--type", "type_", default="knowledge", show_default=True,
              type=click.Choice(TYPES, case_sensitive=False))
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--alias", "aliases", multiple=True, help="Another phrase people use for this; repeatable.")
@click.option("--scope", default="global", show_default=True, help="global or project:<name>.")
@click.option("--id", "id_", help="Use this id instead of one derived from the title.")
@click.option("--supersedes", multiple=True, help="Id of a memory this one replaces; repeatable.")
@click.option("--reason", help="Why, recorded in the commit.")
@click.option("--to", "to", metavar="NAME", help="Write to the team vault NAME (`hafiza vault list`) instead of yours.")
@click.option("--json", "as_json", is_flag=True, help="Print the new memory as JSON.")
@click.pass_context
def remember(ctx, text, title, type_, tags, aliases, scope, id_, supersedes, reason, to, as_json):
    """Remember TEXT (or stdin) as a new memory, in one commit (in your vault, or a team's with --to)."""
    vault = open_vault(ctx, to=to)
    memory = vault.remember(_text_arg(text), title=title, type=type_, tags=tags, aliases=aliases,
                            scope=scope, id=id_, supersedes=supersedes, reason=reason)
    if as_json:
        emit(_memory_json(memory))
    else:
        extra = f" (supersedes {', '.join(supersedes)})" if supersedes else ""
        click.echo(f"remembered {memory.id}{extra}" + (f" in the vault {to}" if to else ""))


@cli.command("import")
@click.argument("source")
@click.argument("project", required=False)
@click.option("--scope", help="Scope for memories imported from claude-code (default: project:<its folder>).")
@click.option("--skip-invalid", is_flag=True, help="Import the valid items and list the others, instead of refusing all.")
@click.option("--dry-run", is_flag=True, help="Check everything and say what would be imported; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the imported ids as JSON.")
@click.pass_context
def import_(ctx, source, project, scope, skip_invalid, dry_run, as_json):
    """Import SOURCE: a JSONL file of {id?, title?, text, type?, tags?, scope?, created?},
    a folder of markdown files, or `claude-code [PROJECT]` (Claude Code's MEMORY.md and topic
    files; re-running imports nothing twice). One commit for the whole import."""
    from hafiza.vault.importer import read_source

    vault = open_vault(ctx)
    if source == "claude-code" and not Path(source).exists():
        if dry_run:
            raise HafizaError("--dry-run is for files and folders; `import claude-code` already skips what it "
                              "imported before")
        _import_claude_code(vault, project, scope, as_json)
        return
    items, problems = read_source(Path(source))
    if problems and not skip_invalid:
        raise HafizaError(f"{problems[0]} ({len(problems)} problem(s); nothing imported; --skip-invalid imports the rest)")
    memories, skipped = vault.import_many(items, source=f"import:{Path(source).name}", skip_invalid=skip_invalid,
                                          dry_run=dry_run)
    problems += skipped
    if as_json:
        emit({"imported" if not dry_run else "would_import": [m.id for m in memories], "skipped": problems})
        return
    click.echo(f"{'would import' if dry_run else 'imported'} {len(memories)} memories from {source}"
               + ("; nothing was written" if dry_run else ""))
    for problem in problems:
        click.echo(f"skipped: {problem}", err=True)


@cli.command()
@click.argument("memory_id")
@click.option("--text", help="Replace the memory's text with TEXT (- reads stdin) instead of opening an editor.")
@click.option("--title", help="With --text: a new title too.")
@click.pass_context
def edit(ctx, memory_id, text, title):
    """Open a memory in $EDITOR (or replace its text with --text); validated and committed."""
    from hafiza.vault.files import read_text

    vault = open_vault(ctx)
    if text is not None:
        memory = vault.update(memory_id, _text_arg(text), title=title)
        click.echo(f"updated {memory.id}")
        return
    if title is not None:
        raise HafizaError("--title goes with --text")
    original = read_text(vault.get(memory_id).path)
    edited = click.edit(original, extension=".md", require_save=True)
    if edited is None or edited == original:
        click.echo("no changes")
        return
    try:
        memory = vault.rewrite(memory_id, edited)
    except HafizaError as exc:
        draft = vault.save_draft(memory_id, edited)
        masked = " with the secret masked" if isinstance(exc, SecretRefused) else ""
        exc.message = f"{exc.message} (nothing changed; your edit is saved{masked} in {draft})"
        raise exc from None  # keeps its class and exit code
    click.echo(f"edited {memory.id}")


@cli.command()
@click.argument("memory_id")
@click.argument("phrases", nargs=-1, required=True)
@click.option("--reason", help="Why, recorded in the commit.")
@click.option("--json", "as_json", is_flag=True, help="Print the memory's aliases as JSON.")
@click.pass_context
def alias(ctx, memory_id, phrases, reason, as_json):
    """Add PHRASES people may type for MEMORY_ID, e.g. the same thing in the other language.

    Aliases are searched with the title and feed the meaning vectors, so a
    prompt worded differently from the memory still finds it. One commit;
    phrases the memory already has are skipped.
    """
    vault = open_vault(ctx)
    memory, added = vault.add_aliases(memory_id, list(phrases), reason)
    if as_json:
        emit({"id": memory.id, "added": added, "aliases": memory.aliases})
    elif added:
        click.echo(f"{memory.id}: added {len(added)} alias(es): {'; '.join(added)}")
    else:
        click.echo(f"{memory.id}: it already has every one of these aliases")


@cli.command()
@click.argument("old_id")
@click.argument("new_id")
@click.option("--reason", help="Why the old one no longer holds.")
@click.pass_context
def supersede(ctx, old_id, new_id, reason):
    """Mark OLD_ID as replaced by NEW_ID (kept, but out of recall)."""
    vault = open_vault(ctx)
    vault.supersede(old_id, new_id, reason)
    click.echo(f"{old_id} is superseded by {new_id}")


@cli.command()
@click.argument("memory_id")
@click.option("--reason", help="Why it is no longer wanted.")
@click.pass_context
def forget(ctx, memory_id, reason):
    """Archive a memory: it leaves recall; the file and its history stay."""
    vault = open_vault(ctx)
    vault.forget(memory_id, reason)
    click.echo(f"archived {memory_id}")


@cli.command()
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--session", help="Session id, for the usage log.")
@click.pass_context
def used(ctx, memory_ids, session):
    """Record that memories were useful (the only upward usefulness signal); a team vault's memory
    counts in that team vault."""
    from hafiza.vault.teams import PERSONAL, by_owner, readable

    for name, ids in by_owner(ctx.obj, readable(Path(settings_of(ctx).config)), memory_ids).items():
        open_vault(ctx, to=None if name == PERSONAL else name).record_use(ids, session)
    click.echo(f"recorded use of {len(memory_ids)} memor{'y' if len(memory_ids) == 1 else 'ies'}")


@cli.command()
@click.pass_context
def fold(ctx):
    """Write pending usage counts from the log into the files, in one commit."""
    vault = open_vault(ctx)
    touched = vault.fold()
    click.echo(f"folded usage of {touched} memories" if touched else "nothing to fold")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", help="Why, recorded in the commit.")
@click.pass_context
def restore(ctx, memory_id, reason):
    """Bring an archived (forgotten) memory back into recall, in one commit."""
    memory = open_vault(ctx).restore(memory_id, reason)
    click.echo(f"restored {memory.id}")


@cli.command()
@click.argument("commit", required=False)
@click.option("--redo", is_flag=True, help="Undo the latest undo instead.")
@click.pass_context
def undo(ctx, commit, redo):
    """Revert one hafiza commit: the latest change not yet undone (run it again to walk further back),
    or COMMIT. Refuses commits hafiza did not make."""
    if redo and commit:
        raise HafizaError("--redo takes no COMMIT: it redoes the latest undo")
    vault = open_vault(ctx)
    target, sha = vault.undo(commit, redo=redo)
    click.echo(f"{'redid' if redo else 'reverted'} {target[:10]} as {sha[:10]}")


def _import_claude_code(vault, project, scope, as_json) -> None:
    from hafiza.vault.claude import find_dirs, import_into

    dirs = find_dirs(project)
    if not dirs:
        raise HafizaError(f"no Claude Code memory found{' for ' + project if project else ''} "
                          "under ~/.claude/projects/*/memory/")
    imported, seen = import_into(vault, dirs, scope)
    if as_json:
        emit({"imported": [m.id for m in imported], "already_imported": seen})
        return
    click.echo(f"imported {len(imported)} memories from Claude Code ({len(dirs)} project(s))"
               + (f"; {seen} were imported before" if seen else ""))
