"""Ranking factors applied on top of a channel's relevance: decay, usefulness, type, fusion."""

from __future__ import annotations

import datetime as dt

# An old memory fades but relevance still decides: on bench/recall a floor of 0.2 let recency
# outweigh relevance and cost 0.47 recall@2 (0.35 vs 0.82); at 0.7 decay orders
# equally relevant memories without burying the only relevant one.
STRENGTH_FLOOR = 0.7
USEFULNESS_MIN_SHOWN = 5  # a new memory has had no chance yet
USEFULNESS_FLOOR = 0.5
USED_RATE_FULL = 0.2      # used once in every five showings counts as fully useful
TYPE_WEIGHT = {"lesson": 1.15}  # bad experiences rank higher (docs/architecture.md, memory types)
# Fusion: a convex combination of each channel's score, normalised within the query's candidates
# (recall.Recall._score). Reciprocal-rank fusion (k=5, meaning weighted 0.7) gave a weak channel's
# guesses the pull of a strong channel's hits; measured 2026-12-07 (bench/recall/README.md, fusion):
# on the tuning set recall@2 0.804 -> 0.810 (with the agent's aliases 0.873 -> 0.879), on the blind
# conversational set (one memory per chat turn) recall@5 0.667 -> 0.686, keyword alone 0.610, meaning
# alone 0.612. 0.7 lost paraphrases (0.333 -> 0.296), 0.5 the conversation (0.663).
KEYWORD_SHARE = 0.6
# Only seen when asked for (--include-inactive); a stale memory must never outrank its successor.
STATUS_WEIGHT = {"active": 1.0, "superseded": 0.25, "archived": 0.5}
# A memory whose claims stopped being true (a path the curator found gone, a probe that failed) stays
# recallable, labelled, but yields to an equally relevant memory nothing contradicts.
VERIFIED_WEIGHT = {"stale": 0.6, "failed": 0.6}
# The most the factors together multiply a relevance by: strength, usefulness and the weights above are at
# most 1, and only a type weight is above it (recall._score stops scoring candidates that cannot reach the top).
MOST = max(1.0, *TYPE_WEIGHT.values())


def strength(half_life: float | None, created: dt.date, last_used: dt.date | None, today: dt.date) -> float:
    """0.5 ** (days since last use or creation / half-life), floored; None half-life never decays."""
    if not half_life:
        return 1.0
    since = max(d for d in (created, last_used) if d is not None)
    days = max(0, (today - since).days)
    return max(STRENGTH_FLOOR, 0.5 ** (days / half_life))


def usefulness(shown: int, used: int) -> float:
    """Only ever pulls down, and only after enough impressions; a use is the only way back up."""
    if shown < USEFULNESS_MIN_SHOWN:
        return 1.0
    rate = used / shown
    return min(1.0, USEFULNESS_FLOOR + (1 - USEFULNESS_FLOOR) * rate / USED_RATE_FULL)


def type_weight(kind: str) -> float:
    return TYPE_WEIGHT.get(kind, 1.0)


def fuse(keyword: float, meaning: float, share: float = KEYWORD_SHARE) -> float:
    """The hybrid relevance of two channel scores, each already normalised to 0..1 within the query."""
    return share * keyword + (1 - share) * meaning
