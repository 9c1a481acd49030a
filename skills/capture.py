"""Capture: the user's explicit statements in a session become proposed memories in the inbox.

The inbox is a review branch (`capture/<date>`, vault/review.py), one commit per proposed memory, with
the quote, session and time as evidence. Nothing reaches recall until a person accepts it (`hafiza
inbox accept`), or `--auto` accepts the explicit ones (what the user said in so many words).
A statement that restates an existing memory records a use of it instead; one close to an existing
memory of the same type but saying something else is proposed as superseding it. A fact change
("Acme moved to İzmir") is proposed as a change to the entity's fact note, and a `fact` memory a fact
note contradicts as superseded (skills/facts.py). A rejected proposal is a ruling: no later run proposes
it again.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from hafiza.indexer.search import query_terms
from hafiza.vault.format import model
from hafiza.vault.format.inputs import inherit_aliases
from hafiza.vault.review import Action, Proposal, Review
from hafiza.vault.guard.secrets import held_secret
from hafiza.vault.format.text import fold_text

from .facts import proposals as fact_proposals
from .statements import Statement, find, overlap

ACTOR = "capture"
SAME, CHANGED = 0.8, 0.5   # share of informative words: a restatement; a change of the same subject
CONFIDENCE = 0.9           # explicit statements, found by pattern
EXPLICIT_GUARDS = ("explicit statement", "secret guard")
IMPLICIT_GUARDS = ("model-nominated", "quote verbatim in a user turn", "words from the quote", "type checked",
                   "secret guard")


class Report(NamedTuple):
    branch: str | None
    proposed: list[str]        # ids of proposed memories
    used: list[str]            # existing memories a statement restated
    skipped: int               # already proposed, ruled out, or holding a secret
    accepted: list[str]        # with auto: the commits on main
    implicit: list[str] = []   # of `proposed`, those a model nominated (never accepted by auto)
    dropped: list = []         # what code refused of the model's nominations (implicit.Dropped)


def key_of(statement: Statement) -> str:
    return "capture:" + model.content_hash(" ".join(query_terms(statement.text)))[:16]


def statements(turns) -> list[tuple[Statement, object]]:
    """(statement, turn) for each explicit statement in the user's turns, each said once."""
    out, seen = [], set()
    for turn in turns:
        if turn.role != "user":
            continue
        for statement in find(turn.text):
            folded = fold_text(statement.text)
            if folded not in seen:
                seen.add(folded)
                out.append((statement, turn))
    return out


def file(vault, turns, *, recall=None, auto: bool = False, now: dt.datetime | None = None,
         nominate=None) -> Report:
    """Propose the explicit statements of `turns` (one session's, or several) on a new capture branch; with
    `nominate` (skills/implicit.nominator: a model's), also the implicit ones it nominates and code keeps.
    Passed in, not imported here: the warm process files sessions too, and the model-talking code stays off
    its path (tests/test_architecture.py)."""
    review = Review(vault, actor=ACTOR)
    decided = set(review.rulings()) | review.open_keys()
    taken = vault.taken()
    found = [(statement, turn, None) for statement, turn in statements(turns)]
    dropped = []
    if nominate is not None:
        more, dropped = nominate(turns, [s.quote for s, _, _ in found])
        found += [(f.statement, f.turn, f.confidence) for f in more]
    actions, used, implicit, skipped = [], [], [], 0
    for statement, turn, confidence in found:
        key = key_of(statement)
        if key in decided or held_secret(f"{statement.quote}\n{statement.text}"):
            skipped += 1
            continue
        decided.add(key)
        old, share = _closest(recall, statement)
        if old is not None and share >= SAME:
            vault.record_use([old.id], session=turn.session)
            used.append(old.id)
            continue
        supersedes = [old.id] if old is not None and share >= CHANGED and old.type == statement.type else []
        action = _action(vault, statement, turn, key, taken, supersedes, now, confidence)
        taken.add(action.ids[0])
        actions.append(action)
        if confidence is not None:
            implicit.append(action.ids[0])
    facts = fact_proposals(vault, turns, decided, now)  # "Acme moved to İzmir": skills/facts.py
    actions += facts
    # A supersede found by comparing a fact note with a memory was not said: like a model's nomination,
    # it waits for a person.
    inferred = set(implicit) | {a.ids[0] for a in facts if a.action == "supersede"}
    branch = review.start("capture", now) if actions else None
    if actions:  # one git process for all of them: a 200-turn session is filed in ~0.25 s (bench/capture.py)
        review.propose_all(branch, actions)
    proposed = [a.ids[0] for a in actions]
    accepted = []
    if auto and branch:  # what was said in so many words only: a nomination or an inference waits for a person
        current = review.branch(branch)
        explicit = [p.number for p in current.open if p.ids[:1] and p.ids[0] not in inferred]
        if explicit:
            accepted = [sha for _, sha in Review(vault).accept(current, explicit) if len(sha) == 40]
    return Report(branch, proposed, used, skipped, accepted, implicit, dropped)


def _closest(recall, statement: Statement):
    """The active memory most like the statement, and how much of the statement's words it shares."""
    if recall is None:
        return None, 0.0
    hits = recall.search(statement.text, limit=3, mode="keyword", all_scopes=True)
    best = max(((h, overlap(statement.text, f"{h.title} {h.snippet}")) for h in hits), key=lambda x: x[1],
               default=(None, 0.0))
    return best


def _action(vault, statement: Statement, turn, key: str, taken: set, supersedes: list, now,
            nominated: float | None = None) -> Action:
    """The proposal of one statement; `nominated` is the model's confidence for an implicit one."""
    day = (now or dt.datetime.now()).date()
    memory = vault.new_memory(statement.text, type=statement.type, source=f"session:{turn.session}",
                              taken=taken, created=day)
    files = {vault.rel(memory): model.dump(memory).encode("utf-8")}
    for old_id in supersedes:
        old = vault.get(old_id)
        memory = inherit_aliases(memory.evolve(supersedes=[old_id]), [old])  # the words people type for it
        files[vault.rel(memory)] = model.dump(memory).encode("utf-8")
        files[vault.rel(old)] = model.dump(
            old.evolve(status="superseded", superseded_by=memory.id, updated=day)).encode("utf-8")
    when = turn.time[:16].replace("T", " ")
    subject = f"capture {memory.id}" + (f" (supersedes {supersedes[0]})" if supersedes else "")
    where = f"{turn.client} session {turn.session}, {when}"
    if nominated is None:
        reason, confidence, guards = f"the user said it in so many words ({where})", CONFIDENCE, EXPLICIT_GUARDS
    else:
        reason, confidence, guards = f"a model read it in the user's words ({where})", nominated, IMPLICIT_GUARDS
    return Action("capture", subject, key, files, reason=reason,
                  evidence=f"{turn.client}:{turn.session} {turn.time}: \"{' '.join(statement.quote.split())[:300]}\"",
                  confidence=confidence, guards=guards, ids=(memory.id, *supersedes), body=f"> {statement.quote}")


# ---- the inbox: the open proposals of every capture branch, numbered 1.. in order

def inbox(vault) -> list[tuple[object, object]]:
    """(branch, proposal) for each open capture proposal, oldest branch first."""
    return list(numbered(vault).values())


def numbered(vault) -> dict[int, tuple[object, object]]:
    """The open capture proposals by their inbox number. A number stays with its proposal while its branch
    is open: after `inbox accept 1 3`, item 2 is still 2 (numbers that shifted as items were decided made
    `inbox reject 2` reject what the listing had shown as 4)."""
    out, offset = {}, 0
    for branch in Review(vault).branches():
        if branch.name.startswith("capture/"):
            out.update({offset + p.number: (branch, p) for p in branch.open})
            offset += len(branch.proposals)
    return out


class Decision(NamedTuple):
    """One inbox item decided."""

    number: int          # as `hafiza inbox` listed it
    branch: str          # the capture branch it was proposed on
    proposal: Proposal   # numbered on its branch
    result: str          # the sha it landed as, 'rejected', or why it was not applied
    commit: str | None   # the commit on main: the accepted item's, or its branch's ruling; None when not applied


def decide(vault, numbers, accept: bool, why: str | None = None) -> list[Decision]:
    """Accept or reject inbox items `numbers` (all when empty). Each is its own commit when accepted; the items
    rejected of one branch share a commit, the ruling (one a branch)."""
    from hafiza.vault.errors import HafizaError

    items = numbered(vault)
    wanted = sorted(set(numbers)) or sorted(items)
    bad = [n for n in wanted if n not in items]
    if bad:
        raise HafizaError(f"the inbox has no item {bad[0]}; it has {', '.join(map(str, sorted(items)))}" if items
                          else "the inbox is empty", field="number")
    review, out = Review(vault), []
    for branch in dict.fromkeys(items[n][0].name for n in wanted):
        # A proposal's number on its branch -> its number in the inbox
        inbox_number = {items[n][1].number: n for n in wanted if items[n][0].name == branch}
        current = review.branch(branch)
        if accept:
            done = [(p, r, r if len(r) == 40 else None) for p, r in review.accept(current, list(inbox_number))]
        else:
            done = [(p, "rejected", vault.last_commit) for p in review.reject(current, list(inbox_number), why)]
        out += [Decision(inbox_number[p.number], branch, p, result, commit) for p, result, commit in done]
    return out


def file_sessions(vault, conversations, sessions=(), since=None, recall=None, auto: bool = False, only=None,
                  nominate=None):
    """File imported sessions: `sessions` whole, else the turns not filed yet of every session with turns
    since `since` (of those in `only`, when given: those whose last turn is since `since`): (how many
    sessions, Report). How many turns of each were filed is kept in
    .hafiza/conversations/filed.json, so a session read again as it grows (a compaction, then its end)
    is filed from where the last filing stopped and a restatement is not counted twice."""
    import json

    from hafiza.vault.files import atomic_write

    path = conversations.folder / "filed.json"
    try:
        filed = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        filed = {}
    if sessions:
        chosen = {s: conversations.show(s) for s in sessions}
        todo = [t for turns in chosen.values() for t in turns]
    else:
        names = conversations.sessions(since) if only is None else only
        recent = since.isoformat() if since is not None and only is not None else ""  # ISO dates compare as text
        chosen = {s: turns for s in names if filed.get(s, 0) < len(turns := conversations.show(s))
                  and turns[-1].time[:10] >= recent}
        todo = [t for s, turns in chosen.items() for t in turns[filed.get(s, 0):]]
    report = file(vault, todo, recall=recall, auto=auto, nominate=nominate)
    filed.update({s: len(turns) for s, turns in chosen.items()})
    atomic_write(path, json.dumps(filed), fsync=False)
    return len(chosen), report
