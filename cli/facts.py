"""`hafiza fact`: notes about people, clients, projects and services, each attribute with its dated history."""

from __future__ import annotations

from .app import cli, emit, open_vault, vault_root
from .args import arg, err, flag


@cli.group()
def fact():
    """Fact notes (facts/<entity>.md): the current value of each attribute of a person, client, project or
    service, and what it was before. `fact set` changes one (one commit, the old value kept), `fact remove`
    ends one (its values kept); recall finds the current values; `fact show` and `fact history` print them."""


@fact.command(
    arg("entity"),
    arg("attribute"),
    arg("value"),
    arg("--since", metavar="DATE",
        help="When the value became true: YYYY-MM-DD, YYYY-MM or YYYY (default: today)."),
    arg("--kind", help="What the entity is, for a new note: person, client, project, service..."),
    arg("--reason", help="Why, recorded in the commit."),
    flag("--json", "as_json", help="Print the note and the commit (none when nothing changed) as JSON."),
    name="set",
)
def set_(ctx, entity, attribute, value, since, kind, reason, as_json):
    """Set ENTITY's ATTRIBUTE to VALUE, in one commit; its current value moves into the history, never
    deleted. Names are matched folded: "ACME A.Ş." and "acme a.s." are one entity."""
    from hafiza.vault import facts

    vault = open_vault(ctx)
    note, change = vault.set_fact(entity, attribute, value, since=since, kind=kind, reason=reason)
    if as_json:
        emit({**facts.to_json(note), "changed": change.changed, "commit": vault.last_commit})
    elif not change.changed:
        print(f"{note.entity}: {change.attribute} is already {change.new.value}; nothing changed")
    else:
        was = f" (was {change.old.value})" if change.old else ""
        print(f"{note.entity}: {change.attribute} = {change.new.value}{was}  [{facts.FACTS}/{note.slug}.md]")


@fact.command(
    arg("entity"),
    arg("attribute"),
    arg("--until", metavar="DATE",
        help="When it stopped being true: YYYY-MM-DD, YYYY-MM or YYYY (default: today)."),
    arg("--reason", help="Why, recorded in the commit."),
    flag("--json", "as_json", help="Print the note and the commit (none when nothing changed) as JSON."),
    name="remove",
)
def remove(ctx, entity, attribute, until, reason, as_json):
    """Remove ATTRIBUTE from ENTITY's note, in one commit: its current value is ended (at --until), so recall,
    `fact show` and MCP `get_fact` leave it out; its values stay in the note's history (`fact history`),
    never deleted. `fact set` gives it a value again."""
    from hafiza.vault import facts

    vault = open_vault(ctx)
    note, change = vault.remove_fact(entity, attribute, until=until, reason=reason)
    if as_json:
        emit({**facts.to_json(note), "changed": change.changed, "commit": vault.last_commit})
    elif not change.changed:
        print(f"{note.entity}: {change.attribute} has no current value; nothing changed")
    else:
        print(f"{note.entity}: {change.attribute} removed (was {change.old.value})  [{facts.FACTS}/{note.slug}.md]")


@fact.command(
    arg("entity"),
    flag("--json", "as_json", help="The note as JSON: `attributes` with a current value, `removed` those without."),
    name="show",
)
def show(ctx, entity, as_json):
    """ENTITY's current attributes, each with what it was before (a removed one: `fact history`)."""
    from hafiza.vault import facts
    from hafiza.vault.format.text import visible

    note = facts.find(vault_root(ctx), entity)
    if as_json:
        emit(facts.to_json(note))
        return
    print(visible(f"{note.entity}" + (f" ({note.kind})" if note.kind else "") + f"  [{facts.FACTS}/{note.slug}.md]"))
    for attribute in note.attributes:
        if attribute.current:
            print(visible(f"  {facts.describe(attribute)}"))


@fact.command(
    arg("entity"),
    arg("attribute", nargs="?"),
    flag("--json", "as_json", help="The values as JSON."),
    name="history",
)
def history(ctx, entity, attribute, as_json):
    """Every value ENTITY's attributes (or ATTRIBUTE) had, newest first, with their dates."""
    from hafiza.vault import facts
    from hafiza.vault.format.text import visible

    note = facts.find(vault_root(ctx), entity)
    chosen = note.attributes if attribute is None else [note.named(attribute)]
    rows = [{"attribute": a.name, "value": e.value, "since": e.since, "until": e.until,
             "current": e is a.current} for a in chosen for e in a.entries]
    if as_json:
        emit(rows)
        return
    for row in rows:
        span = f"since {row['since'] or '?'}" if row["current"] else f"{row['since'] or '?'} → {row['until'] or '?'}"
        print(visible(f"{row['attribute']}: {row['value']}  ({span})" + ("  current" if row["current"] else "")))


@fact.command(
    flag("--json", "as_json", help="The notes as JSON."),
    name="list",
)
def list_(ctx, as_json):
    """Every fact note: its entity, kind and current attributes. Notes that do not parse are named on stderr."""
    from hafiza.vault import facts
    from hafiza.vault.format.text import visible

    notes, errors = facts.load_all(vault_root(ctx))
    for error in errors:
        err(f"warning: {error.message}")
    if as_json:
        emit([facts.to_json(n) for n in notes])
        return
    if not notes:
        print("no fact notes yet; `hafiza fact set ENTITY ATTRIBUTE VALUE` starts one")
    for note in notes:
        current = "; ".join(f"{a.name}: {a.current.value}" for a in note.attributes if a.current)
        kind = f" ({note.kind})" if note.kind else ""
        print(visible(f"{note.entity}{kind}: {current}  [{facts.FACTS}/{note.slug}.md]"))
