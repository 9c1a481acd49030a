"""Commands that read: search, show, list, log, stats."""

from __future__ import annotations

import json
from collections import Counter

from hafiza.vault.format.kinds import STATUSES, TYPES
from hafiza.vault.format.layout import vault_rel
from hafiza.vault.format.paths import SIDECAR
from hafiza.vault.format.text import agree, one_line, plural

from .app import cli, emit, reading_vault, vault_root
from .args import UsageError, any_memory_id, arg, binary_input, err, flag, lower, ranged, scope, style




@cli.command(
    arg("query", nargs="?"),
    arg("-n", "--limit", default=5, type=ranged(1), help="How many results."),
    arg("--mode", choices=["keyword", "meaning", "hybrid"],
        help="Channels to use (default: hybrid when an embedder is available, else keyword)."),
    arg("--project", help="Project whose memories join the global ones (default: the git repo of the cwd)."),
    flag("--all-scopes", help="Search every scope."),
    flag("--include-inactive", help="Also superseded and archived memories."),
    flag("--explain", help="Show each score's parts."),
    flag("--floor", "use_floor",
         help="Only what the hooks would inject: the relevance floor that keeps chitchat silent."),
    flag("--json", "as_json", help="JSON with id, title, type, score, status, path."),
    arg("--batch", type=binary_input, metavar="FILE",
        help='JSON lines {"id", "query"} in (- for stdin); one JSON line per query out, {"line", "error"} for '
             "a line that is not one."),
)
def search(ctx, query, limit, mode, project, all_scopes, include_inactive, explain, use_floor, as_json, batch):
    """Search the vault for QUERY (hybrid when the meaning channel is on, else keywords).

    Uses the warm recall process when it runs (it holds the model); otherwise
    searches in-process.
    """
    from hafiza.vault.format.paths import project_of

    root = vault_root(ctx)
    if batch is None and not query:
        raise UsageError("give a QUERY (or --batch FILE)")
    options = dict(limit=limit, project=project or project_of(), all_scopes=all_scopes,
                   include_inactive=include_inactive)
    hits = None if batch is not None or mode == "keyword" else _search_warm(root, query, mode, options, use_floor,
                                                                            warn=True)
    wider = lambda: _search_warm(root, query, mode, {**options, "all_scopes": True}, use_floor)  # noqa: E731
    if hits is None:
        from hafiza.indexer.recall import FLOOR, SEARCH_FLOOR
        from hafiza.indexer.vaults import open_recall

        recall, mode = open_recall(root, mode, embedder=ctx.settings, files=True)
        if mode not in recall.modes:
            raise UsageError(f"--mode {mode} needs the meaning channel, which is off here "
                                   "(HAFIZA_EMBEDDER=none); use --mode keyword")
        options.update(mode=mode, floor=FLOOR if use_floor else SEARCH_FLOOR)
        if batch is not None:
            _batch(recall, batch, options, explain)
            return
        hits = recall.search(query, **options)
        warn_unparsable(recall.index.unparsable())
        wider = lambda: recall.search(query, **{**options, "all_scopes": True})  # noqa: E731
    if not all_scopes and len(hits) < limit:
        _other_scopes(hits, wider() or [])
    if as_json:
        emit([_hit_json(h, explain) for h in hits])
        return
    if not hits:
        print("no memories match")
    from hafiza.hooks.render import unverified
    for hit in hits:
        label = "" if hit.status == "active" else f" [{hit.status}]"
        label += f" [vault: {one_line(hit.vault)}]" if hit.vault else ""  # several vaults were searched
        label += f" [in conflict: {len(hit.conflict)} texts]" if hit.conflict else ""  # `hafiza resolve` picks
        label += f" [{unverified(hit._asdict(), one_line)}]" if hit.verified not in (None, "ok") else ""
        print(f"{hit.score:8.3f}  {style(hit.id, bold=True)}  ({hit.type}){label}  {one_line(hit.title)}")
        if hit.path.startswith("facts/"):  # a fact note's attribute: its value and what it was before
            print(f"          {one_line(hit.snippet)}")
        if explain:
            print("          " + "  ".join(f"{k}={v}" for k, v in hit.parts.items()))


def _hit_json(hit, explain: bool) -> dict:
    """A hit as `search --json` prints it: tags a list, as `show --json` and MCP `recall` give them (the index
    stores them joined, and the warm process sends them so)."""
    from hafiza.indexer.schema import split_field

    return {**hit.to_json(explain), "tags": split_field(hit.tags)}


def _other_scopes(hits, everywhere) -> None:
    """Say on stderr when memories of other projects match: a project's memory is otherwise silently absent."""
    shown = {h.id for h in hits}
    others = [h for h in everywhere if h.id not in shown]
    if others:
        scopes = sorted({h.scope for h in others})
        err(f"{len(others)} more match in other scopes ({', '.join(scopes[:3])}); use --all-scopes")


def _search_warm(root, query, mode, options, use_floor, warn: bool = False):
    """Hits from the warm recall process, or None when it does not run (or lacks the mode); with `warn`, the
    files it left out are named."""
    from hafiza.hooks import wire
    from hafiza.indexer.hits import Hit

    reply = wire.ask(root, {"op": "recall", "query": query, "mode": mode, "floor": "hook" if use_floor else "search",
                            "explain": True, **options})
    if reply is None:
        return None
    if warn:
        warn_unparsable(reply.get("unparsable") or {})
    return [Hit(**hit) for hit in reply["hits"]]


def _batch(recall, lines, options, explain) -> None:
    """One JSON line out per line in; a line that is not {"id", "query"} gets an error line, and the
    rest go on."""
    for n, raw in enumerate(lines, 1):
        item, error = _batch_item(raw, first=n == 1)
        if item is None and error is None:
            continue  # a blank line
        if error is None:
            hits = recall.search(item["query"], sync=n == 1, **options)
            out = {"id": item.get("id"), "results": [_hit_json(h, explain) for h in hits]}
        else:
            out = {"line": n, **({"id": item["id"]} if item and "id" in item else {}), "error": error}
        print(_json_line(out))


def _batch_item(raw: bytes, first: bool) -> tuple[dict | None, str | None]:
    """(item, None), (None, None) for a blank line, or (item or None, what is wrong with it)."""
    try:
        line = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start})"
    if not line.strip():
        return None, None
    try:
        item = json.loads(line)
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(item, dict):
        return None, 'expected an object {"id", "query"}'
    if not isinstance(item.get("query"), str):
        return item, '"query" must be a string'
    return item, None


def _json_line(data: dict) -> str:
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\ud83d" escape: keep it escaped
        text = json.dumps(data)
    return text


@cli.command(
    arg("memory_id", type=any_memory_id),
    flag("--json", "as_json", help="Frontmatter and body as JSON, with the vault it is from (`vault`: personal or "
                                   "a team vault's name) when you read team vaults."),
)
def show(ctx, memory_id, as_json):
    """Print one memory, of your vault or of a team vault you read (`hafiza vault list`).

    A team vault's memory is found as MCP `get` finds it, and the start of just one id of all those vaults
    will do; which team vault it is from is said on stderr, so the file alone is on stdout."""
    from hafiza.vault.files import read_text
    from hafiza.vault.format.text import visible
    from hafiza.vault.sync.teams import PERSONAL, owner

    if memory_id.startswith("fact:"):  # a recalled fact's id: its note is what there is to show
        _show_fact(vault_root(ctx), memory_id, as_json)
        return
    roots = _vaults(ctx)
    name = owner(roots[PERSONAL], ctx.teams, memory_id)
    text = None if as_json else _own_text(roots[name], memory_id)
    if text is None:
        from hafiza.vault.format import model

        name, memory = _find(ctx, roots, memory_id)
        if as_json:
            emit({**model.to_metadata(memory), "body": memory.body, "path": vault_rel(memory.path),
                  **_which(ctx, name)})
            return
        text = read_text(memory.path)
    _say_team(roots, name, memory_id)
    print(visible(text), end="")  # escapes (ESC, BEL, U+202E...) are shown, not acted on by the terminal


def _vaults(ctx) -> dict:
    """Name -> folder of the vaults `show` and `log` find an id in: yours (PERSONAL), then each team vault you
    read (`Context.teams`)."""
    from hafiza.vault.sync.teams import PERSONAL

    return {PERSONAL: vault_root(ctx), **ctx.teams}


def _find(ctx, roots: dict, memory_id: str):
    """(the name of the vault holding `memory_id`, the memory), found as MCP `get` finds it (teams.find)."""
    from hafiza.vault.sync.teams import PERSONAL, find

    return find(roots[PERSONAL], ctx.teams, memory_id, lambda name: reading_vault(ctx, roots[name]))


def _which(ctx, name: str) -> dict:
    """`vault` for --json, as search --json and MCP get give it: only when team vaults are read."""
    return {"vault": name} if ctx.teams else {}


def _say_team(roots: dict, name: str, memory_id: str) -> None:
    """Which team vault the memory is from, on stderr, so stdout holds only what was asked for."""
    from hafiza.vault.sync.teams import PERSONAL

    if name != PERSONAL:
        err(f"{memory_id} is in the team vault {name} ({roots[name]}):")


def _show_fact(root, fact_id: str, as_json: bool) -> None:
    """The fact note an attribute's id (`fact:acme/city`) names, as `show` prints a memory; which note it
    is goes to stderr, so the note alone is on stdout."""
    from hafiza.vault.errors import MemoryNotFound
    from hafiza.vault.facts import note_of
    from hafiza.vault.files import read_text
    from hafiza.vault.format.text import visible

    note = note_of(fact_id)
    try:
        text = read_text(root / note) if note else None
    except (OSError, UnicodeDecodeError):  # NotRegularFile too: a link by that name is not followed
        text = None
    if text is None:
        raise MemoryNotFound(f"no fact {fact_id!r}" + (f" (no note {note})" if note else "") +
                             "; `hafiza fact list` lists the notes", field="id")
    from hafiza.vault.guard import quarantine

    quarantine.check(text, note)  # a note holding a secret (a sync brought it): its notice, never its text
    if as_json:
        emit({"id": fact_id, "path": note, "body": text})
        return
    err(f"{fact_id} is an attribute of the fact note {note} (`hafiza fact history` has its past values):")
    print(visible(text), end="")


def _own_text(root, memory_id: str) -> str | None:
    """The text of memories/ID.md when its header declares that id, which is all `show` prints: no YAML
    parser is loaded for it (half of the command's time). None sends the vault looking: a file named
    otherwise, or one it will refuse with a reason (a symbolic link, not UTF-8, a secret in it)."""
    from hafiza.vault.errors import Quarantined
    from hafiza.vault.files import read_text
    from hafiza.vault.format.ids import declared_id, is_valid_id
    from hafiza.vault.guard import quarantine
    from hafiza.vault.format.layout import existing
    from hafiza.vault.format.paths import MEMORIES

    path = existing(root / MEMORIES, memory_id) if is_valid_id(memory_id) else None
    if path is None or declared_id(path) != memory_id:
        return None
    try:
        return quarantine.check(read_text(path), path)
    except (OSError, UnicodeDecodeError, Quarantined):
        return None


def _catalog(root, lines: bool = False, **which) -> list:
    """Every memory's id, title, type, scope, status, created and file name (or those `which` names)."""
    from hafiza.indexer.index import Index

    index = Index(root)
    docs = index.catalog(lines, **which)
    warn_unparsable(index.unparsable())
    return docs


def warn_unparsable(errors: dict[str, str]) -> None:
    """One line on stderr when files were left out: a broken hand edit must not vanish without a word."""
    if errors:
        names = ", ".join(f"memories/{name}" for name in sorted(errors)[:3]) + (" ..." if len(errors) > 3 else "")
        err(f"warning: {plural(len(errors), 'memory file')} {agree(len(errors), 'does', 'do')} not parse and "
            f"{agree(len(errors), 'is', 'are')} left out ({names}); "
            "`hafiza doctor` says why")


@cli.command(
    arg("--type", dest="type_", type=lower, choices=TYPES, help="Only this type (any case)."),
    arg("--status", default="active", type=lower, choices=(*STATUSES, "all"), help="Only this status (any case)."),
    arg("--scope", type=scope, help="Only this scope (global or project:<name>)."),
    flag("--without-aliases", help="Only memories that have no aliases yet."),
    flag("--json", "as_json", help="JSON list."),
    flag("--ids", help="Only the ids, one a line (what the shell completes an id from)."),
    name="list",
)
def list_(ctx, type_, status, scope, without_aliases, as_json, ids):
    """List memories."""
    docs = _catalog(vault_root(ctx), lines=not as_json, type=type_, status=status, scope=scope,
                    without_aliases=without_aliases)
    if ids:
        if docs:
            print("\n".join(d[0] for d in docs))
        return
    if as_json:
        emit([{**{k: d[k] for k in ("id", "title", "type", "scope", "status", "created")},
               "path": f"memories/{d['path']}"} for d in docs])  # as search --json and remember --json say it
        return
    if docs:  # one write: a write per line cost ~50 ms at 5,000 memories
        print("\n".join([head + one_line(title) for _, head, title in docs]))
    else:
        err("no memories")


@cli.command(
    arg("memory_id", metavar="[ID]", nargs="?", type=any_memory_id),
    arg("-n", "--limit", default=20, type=int, help="How many commits."),
    flag("--all", "everything", help="Include commits hafiza did not make."),
    flag("--json", "as_json", help="JSON list, each commit with the vault it is from (`vault`: personal or a "
                                   "team vault's name) when you read team vaults."),
)
def log(ctx, memory_id, limit, everything, as_json):
    """The vault's history: what hafiza changed, when, by whom and why; with ID, one memory's history
    (hand edits included).

    ID may be a memory of a team vault you read, found as `show` finds it (the start of just one id of all
    those vaults will do): its history is read from that team vault's repository, which is named on stderr."""
    from hafiza.vault.sync.teams import PERSONAL

    roots = _vaults(ctx)
    name, path = PERSONAL, None
    if memory_id:
        name, memory = _find(ctx, roots, memory_id)
        path = str(memory.path.relative_to(roots[name]))
        everything = True  # a person's edit of the file is part of its story
    commits = [c for c in reading_vault(ctx, roots[name]).git.log(None if everything else limit * 5, path=path)
               if everything or c.is_hafiza][:limit]
    if as_json:
        emit([{"sha": c.sha, "date": c.date, "subject": c.subject, "action": c.action,
               "actor": c.trailers.get("Hafiza-Actor"), "reason": c.trailers.get("Hafiza-Reason"),
               **_which(ctx, name)} for c in commits])
        return
    _say_team(roots, name, memory_id)
    for c in commits:
        actor = c.trailers.get("Hafiza-Actor", c.author)
        print(f"{c.sha[:10]}  {c.date[:16].replace('T', ' ')}  {one_line(actor):<12} {one_line(c.subject)}")
        if c.trailers.get("Hafiza-Reason"):
            print(f"{'':30}reason: {one_line(c.trailers['Hafiza-Reason'])}")


@cli.command(flag("--json", "as_json", help="JSON object."))
def stats(ctx, as_json):
    """Counts by type, status and scope; pending usage; index size."""
    from hafiza.vault.store import usage

    root = vault_root(ctx)
    docs = _catalog(root)
    waiting = usage.unfolded(root / SIDECAR)
    index_dir = root / SIDECAR / "index"
    data = {
        "memories": len(docs),
        "by_type": dict(Counter(d["type"] for d in docs)),
        "by_status": dict(Counter(d["status"] for d in docs)),
        "by_scope": dict(Counter(d["scope"] for d in docs)),
        "pending_usage": {"shown": waiting.shown, "used": waiting.used},
        "index_bytes": sum(f.stat().st_size for f in index_dir.glob("*") if f.is_file()),
    }
    if as_json:
        emit(data)
        return
    print(f"memories: {data['memories']}")
    for key in ("by_type", "by_status", "by_scope"):
        print(f"{key.replace('_', ' ')}: " + (", ".join(f"{k} {v}" for k, v in sorted(data[key].items())) or "none"))
    print(f"pending usage: {data['pending_usage']['shown']} shown, {data['pending_usage']['used']} used")
    print(f"index: {data['index_bytes'] / 1024:.0f} KiB")
