"""A finding becomes an action: the memory files it rewrites, with the words and trailers of its commit."""

from __future__ import annotations

import datetime as dt

from hafiza.vault.format import model
from hafiza.vault.format.layout import memory_rel
from hafiza.vault.review import Action
from hafiza.vault.format.inputs import MAX_ALIASES
from hafiza.vault.format.text import fold_text

from .corpus import Corpus
from .findings import Finding

ACTOR = "curator"


def build(finding: Finding, corpus: Corpus) -> Action:
    today = corpus.today
    memories = [corpus.by_id[i].memory for i in finding.ids]
    if finding.kind == "merge-duplicate":
        changed, subject = merged(*memories, today), f"merge duplicate {memories[1].id} into {memories[0].id}"
    elif finding.kind == "supersede":
        changed, subject = superseded(*memories, today), f"supersede {memories[1].id} with {memories[0].id}"
    elif finding.kind == "mark-stale":
        verified = {"status": "stale", "at": today, "by": ACTOR, "detail": finding.data["detail"]}
        changed, subject = [memories[0].evolve(verified=verified, updated=today)], f"mark {memories[0].id} stale"
    elif finding.kind == "archive":
        changed = [memories[0].evolve(status="archived", archived_reason=finding.data["reason"], updated=today)]
        subject = f"archive {memories[0].id}"
    elif finding.kind == "add-aliases":
        aliases = _union(memories[0].aliases, finding.data["aliases"])
        changed, subject = [memories[0].evolve(aliases=aliases, updated=today)], f"add aliases to {memories[0].id}"
    else:
        raise ValueError(f"no action for {finding.kind}")
    files = {memory_rel(m): model.dump(m).encode("utf-8") for m in changed}
    return Action(finding.kind, subject, finding.key, files, finding.reason, finding.evidence, finding.confidence,
                  finding.guards, finding.ids, body=_body(finding))


def merged(kept: model.Memory, other: model.Memory, today: dt.date) -> list[model.Memory]:
    """The kept memory takes the other's aliases, tags and usage; the other is superseded by it."""
    last = max(filter(None, [kept.last_used, other.last_used]), default=None)
    keep = kept.evolve(
        aliases=_union(kept.aliases, other.aliases), tags=list(dict.fromkeys([*kept.tags, *other.tags])),
        shown=kept.shown + other.shown, used=kept.used + other.used, last_used=last,
        supersedes=list(dict.fromkeys([*kept.supersedes, other.id])), updated=today)
    return [keep, other.evolve(status="superseded", superseded_by=kept.id, updated=today)]


def superseded(current: model.Memory, retired: model.Memory, today: dt.date) -> list[model.Memory]:
    return [current.evolve(supersedes=list(dict.fromkeys([*current.supersedes, retired.id])), updated=today),
            retired.evolve(status="superseded", superseded_by=current.id, updated=today)]


def _union(existing, new) -> list[str]:
    out, seen = [], set()
    for phrase in [*existing, *new]:
        key = fold_text(phrase)
        if key not in seen:
            seen.add(key)
            out.append(phrase)
    return out[:MAX_ALIASES]


def _body(finding: Finding) -> str:
    return f"{finding.reason}.\n\nEvidence: {finding.evidence}."
