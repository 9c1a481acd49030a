"""A memory's screen: its text and properties, edited in place as `hafiza edit` does; aliases; the supersede
chain both ways; claims and their last verification; shown and used over time; every commit that touched it,
with its diff, each one undone with a click (`hafiza undo COMMIT`)."""

from __future__ import annotations

import difflib
import re
from urllib.parse import quote

from hafiza.vault.errors import HafizaError, MemoryNotFound, Quarantined
from hafiza.vault.files import read_text
from hafiza.vault.format.layout import existing, vault_rel
from hafiza.vault.sync.teams import PERSONAL

from .web import back, form, from_editable, render

HISTORY = 30      # commits shown on a memory's page (its whole history is `hafiza log ID`)
CHAIN = 20        # memories followed each way along a supersede chain
_COUNT = re.compile(r"^(shown|used): (\d+)$", re.MULTILINE)


def url_of(memory_id: str, vault: str | None = None) -> str:
    return f"/memory/{quote(memory_id)}" + (f"?vault={quote(vault)}" if vault and vault != "personal" else "")


async def memory(request, error: str | None = None, draft_text: str | None = None, status: int = 200):
    hold = request.app.state.hold
    name = request.query_params.get("vault") or None
    vault = hold.reader(name)
    try:
        found = vault.get(request.path_params["id"])
    except MemoryNotFound as exc:
        return render(request, "missing.html", status=404, message=exc.message)
    except Quarantined as exc:  # a secret a sync brought in: a notice, never its text
        return render(request, "missing.html", status=409, message=exc.message, title="Quarantined")
    text = read_text(found.path)
    commits = history(vault, found)
    return render(request, "memory.html", status=status, m=found, vault=name, text=draft_text or text,
                  saved=text, error=error, rel=vault_rel(found.path), chain=chain(vault, found), commits=commits,
                  usage=usage_series(commits), url=url_of(found.id, name), conflict=in_conflict(vault, found),
                  to=lambda ref: _page_of(vault, ref, name), claimed=claimed_by(hold, name, found))


async def edit(request):
    hold = request.app.state.hold
    name = request.query_params.get("vault") or None
    given = form(request)
    text = from_editable(given.get("text", "").replace("\r\n", "\n"))
    vault = hold.writable(name)
    try:
        memory = vault.edit(request.path_params["id"], text, reason=given.get("reason") or None)
    except HafizaError as exc:  # refused: the page shows why, with the edit still in the box (and in a draft)
        hold.wrote(vault)
        return await memory_page(request, exc.message, text)
    hold.wrote(vault)
    return back(url_of(memory.id, name) + "#history")


async def memory_page(request, error, text):
    return await memory(request, error=error, draft_text=text, status=422)


async def undo(request):
    hold = request.app.state.hold
    name = request.query_params.get("vault") or None
    sha = form(request).get("commit", "")
    vault = hold.writable(name)
    try:
        vault.undo(sha)
    except HafizaError as exc:
        hold.wrote(vault)
        return await memory_page(request, exc.message, None)
    hold.wrote(vault)
    return back(url_of(request.path_params["id"], name) + "#history")


async def change(request):
    """Forget, restore or add aliases: the Vault method of the same name, one commit."""
    hold = request.app.state.hold
    name = request.query_params.get("vault") or None
    given = form(request)
    memory_id, what = request.path_params["id"], request.path_params["what"]
    vault = hold.writable(name)
    try:
        if what == "forget":
            vault.forget(memory_id, given.get("reason") or None)
        elif what == "restore":
            vault.restore(memory_id, given.get("reason") or None)
        elif what == "alias":
            phrases = [p.strip() for p in given.get("phrases", "").split("\n") if p.strip()]
            vault.add_aliases(memory_id, phrases, given.get("reason") or None)
        else:
            raise HafizaError(f"no such change {what!r}")
    except HafizaError as exc:
        hold.wrote(vault)
        return await memory_page(request, exc.message, None)
    hold.wrote(vault)
    return back(url_of(memory_id, name))


def _page_of(vault, ref: str, name: str | None) -> str | None:
    """The page of the memory `ref` a link in a text names, when the vault holds it."""
    if not ref or "/" in ref or ref.startswith(".") or existing(vault.memories_dir, ref) is None:
        return None
    return url_of(ref, name)


def in_conflict(vault, memory) -> list[tuple[str, str]]:
    """The texts a memory holds while a sync conflict is open, each with whose it is, shown apart as recall
    shows them (issue 30, item 6); [] when it holds one."""
    from hafiza.vault.format.conflicts import fences, sides, texts
    from hafiza.vault.sync.machines import this_machine

    found = fences(memory.body)
    if not found:
        return []
    if any(f.kind == "body" for f in found):
        ours, theirs = sides(memory.body, this_machine(vault.git))
        return [("ours (this machine)", ours), ("theirs (the other machine)", theirs)]
    own, *others = texts(memory.body)
    return [("this memory", own), *(("another memory made with this id elsewhere", t) for t in others)]


def claimed_by(hold, name: str | None, memory) -> list[str]:
    """The memories whose file says it replaces this one (`supersedes: [[id]]`, written by hand, in Obsidian)
    while this one's file names no successor: the chain read from the other end."""
    if memory.superseded_by:
        return []
    rows = hold.rows[name or PERSONAL].current()
    return sorted(r["id"] for r in rows if memory.id in r.get("supersedes", ()) and r["id"] != memory.id)


def chain(vault, memory) -> dict:
    """The memories this one replaced (back) and those that replaced it (forward), each way to its end."""
    def follow(start, step) -> list:
        out, seen, current = [], {memory.id}, start
        while current and current not in seen and len(out) < CHAIN:
            seen.add(current)
            try:
                found = vault.get(current)
            except HafizaError:
                out.append({"id": current, "missing": True})
                break
            out.append({"id": found.id, "title": found.title, "status": found.status})
            current = step(found)
        return out

    back_ids = list(memory.supersedes)
    older = [item for old in back_ids for item in follow(old, lambda m: (m.supersedes or [None])[0])]
    return {"newer": follow(memory.superseded_by, lambda m: m.superseded_by), "older": older}


def history(vault, memory) -> list[dict]:
    """The commits that touched the memory's file, newest first, each with its diff: the file's text at the
    commit and before it, read in one git process, compared here."""
    rel = vault_rel(memory.path)
    commits = vault.git.log(HISTORY, path=rel)
    texts = vault.git.blobs([spec for c in commits for spec in (f"{c.sha}:{rel}", f"{c.sha}^:{rel}")])
    out = []
    for n, commit in enumerate(commits):
        after, before = texts[2 * n], texts[2 * n + 1]
        lines = difflib.unified_diff(_lines(before), _lines(after), "before", "after", n=2, lineterm="")
        out.append({"sha": commit.sha, "date": commit.date, "subject": commit.subject.removeprefix("hafiza: "),
                    "actor": commit.trailers.get("Hafiza-Actor") or commit.author, "action": commit.action,
                    "reason": commit.trailers.get("Hafiza-Reason"), "hafiza": commit.is_hafiza,
                    "diff": list(lines)[2:], "counts": _counts(after)})
    return out


def usage_series(commits: list[dict]) -> list[dict]:
    """Shown and used as the file recorded them at each commit, oldest first (folds write them daily)."""
    points = [{"date": c["date"][:10], **c["counts"]} for c in reversed(commits) if c["counts"]]
    return points


def _lines(data: bytes | None) -> list[str]:
    return (data or b"").decode("utf-8", "replace").splitlines()


def _counts(data: bytes | None) -> dict:
    if not data:
        return {}
    head = data.split(b"\n---", 2)[0].decode("utf-8", "replace")
    found = dict(_COUNT.findall(head))
    return {"shown": int(found.get("shown", 0)), "used": int(found.get("used", 0))}
