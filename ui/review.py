"""The review screen: every open review branch as a queue of actions (reason, evidence, confidence and the
diff side by side), accepted or rejected one or many at a time with a reason, each as the commit `hafiza review
accept|reject` makes; the curator's related pairs judged duplicate, conflict or fine (a ruling, never asked
again); and the memories a sync left holding two texts, settled ours, theirs or both (`hafiza resolve`)."""

from __future__ import annotations

import difflib

from hafiza.vault.errors import HafizaError, Quarantined
from hafiza.vault.review import VERDICTS, Review

from .web import back, form, pairs, render


async def queue(request):
    hold = request.app.state.hold
    vaults = []
    for name in hold.roots:
        vault = hold.writable(name)  # Review tidies decided branches away: a write path, never a Vault by hand
        rv = Review(vault)
        branches = [_branch(rv, b) for b in rv.branches()]
        vaults.append({"name": name, "branches": branches, "related": _related(hold, rv, name),
                       "conflicts": _conflicts(vault), "open": sum(len(b["open"]) for b in branches)})
    notices, hold.notices = hold.notices, []
    return render(request, "review.html", vaults=vaults, notices=notices, verdicts=VERDICTS)


async def decide(request):
    """Accept or reject the chosen actions of one branch (all open ones when none is ticked)."""
    only = sorted({int(v) for k, v in pairs(request) if k == "only" and v.isdigit()})

    def act(vault, given, notices):
        rv = Review(vault)
        branch = rv.branch(given.get("branch") or "")
        if given.get("decision") == "accept":
            for proposal, result in rv.accept(branch, only):
                notices.append(f"{branch.name} #{proposal.number} {proposal.action}: "
                               + (f"accepted as {result[:10]}" if len(result) == 40 else result))
        elif given.get("decision") == "reject":
            done = rv.reject(branch, only, given.get("why") or None)
            notices.append(f"{branch.name}: rejected {', '.join(f'#{p.number}' for p in done)}; recorded in "
                           "rulings.jsonl, never proposed again")
        else:
            raise HafizaError("say accept or reject")

    return _change(request, act, "/review")


async def judge(request):
    """A related pair judged: a ruling (never listed again); `duplicate` also retires the older memory."""
    def act(vault, given, notices):
        older, newer, verdict = given.get("older", ""), given.get("newer", ""), given.get("verdict", "")
        sha = Review(vault).judge(given.get("key", ""), [older, newer], verdict, given.get("why") or None)
        notices.append(f"{older} / {newer}: judged {verdict} ({sha[:10]})")
        if verdict == "duplicate":
            vault.supersede(older, newer, "judged a duplicate in hafiza ui")
            notices.append(f"{older} is superseded by {newer}")

    return _change(request, act, "/review#related")


async def resolve(request):
    """A memory a sync left with two texts, settled as `hafiza resolve ID --keep ours|theirs|both`."""
    from hafiza.vault.sync.machines import resolve as settle

    def act(vault, given, notices):
        notices += settle(vault, given.get("id", ""), given.get("keep") or None)

    return _change(request, act, "/review#conflicts")


def _change(request, act, then: str):
    """Run `act(vault, form, notices)` on the vault the form names, opened for writing; what it did, or why
    not, is shown on the next review page."""
    hold = request.app.state.hold
    given = form(request)
    vault = hold.writable(given.get("vault") or None)
    try:
        act(vault, given, hold.notices)
    except HafizaError as exc:
        hold.notices.append(f"not done: {exc.message}")
    hold.wrote(vault)
    return back(then)


def _branch(rv: Review, branch) -> dict:
    proposals = []
    for p in branch.proposals:
        facts = p.to_json()
        facts["files"] = _sides(rv, p.commit.sha) if p.state == "open" else []
        proposals.append(facts)
    return {"name": branch.name, "proposals": proposals, "open": [p for p in proposals if p["state"] == "open"],
            "skills": branch.name.startswith("skills/")}


def _sides(rv: Review, sha: str) -> list[dict]:
    """Each file the action changes: its lines before and as proposed, with what changed marked on each side."""
    out = []
    for rel in rv.git.changed_paths(sha):
        before, after = rv.git.blobs([f"{sha}^:{rel}", f"{sha}:{rel}"])
        old, new = _lines(before), _lines(after)
        left, right = [], []
        for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            left += [("same" if op == "equal" else "del", line) for line in old[a1:a2]]
            right += [("same" if op == "equal" else "add", line) for line in new[b1:b2]]
        out.append({"path": rel, "before": left, "after": right, "new": before is None})
    return out


def _lines(data: bytes | None) -> list[str]:
    return (data or b"").decode("utf-8", "replace").splitlines()


def _related(hold, rv: Review, name: str) -> list[dict]:
    """The last curator run's related pairs no one has judged yet, with both texts to compare."""
    from hafiza.curator.run import related

    judged = {frozenset(r.get("memories") or ()) for r in rv.rulings().values() if r.get("action") == "judge"}
    ruled = set(rv.rulings())
    out = []
    for pair in related(rv.vault.sidecar):
        ids = pair["memories"][:2]
        if len(ids) != 2 or pair["key"] in ruled or frozenset(ids) in judged:
            continue
        try:
            sides = [rv.vault.get(i) for i in ids]
        except HafizaError:
            continue  # one of them is gone or unreadable: nothing to judge
        if any(m.status != "active" for m in sides):
            continue
        out.append({**pair, "older": sides[0], "newer": sides[1]})
    return out


def _conflicts(vault) -> list[dict]:
    from hafiza.vault.format.conflicts import sides
    from hafiza.vault.sync.machines import conflicted, this_machine

    out = []
    here = this_machine(vault.git)
    for memory_id, kinds in sorted(conflicted(vault).items()):
        try:
            memory = vault.get(memory_id)
        except Quarantined as exc:  # a secret came with the other text: named, neither text shown
            out.append({"id": memory_id, "kinds": kinds, "quarantined": exc.message})
            continue
        ours, theirs = sides(memory.body, here)  # this machine's text first, whichever machine merged
        out.append({"id": memory_id, "kinds": kinds, "title": memory.title, "ours": ours,
                    "theirs": [theirs] if "body" in kinds else [], "body": "body" in kinds})
    return out
