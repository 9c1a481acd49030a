"""Recall: the keyword and meaning channels, fused by score, times decay, usefulness and status.

Measurements on TR/EN recall sets (docs/architecture.md, what the design
measurements showed) showed that equal-weight
reciprocal-rank fusion loses most paraphrase hits: keyword false positives
that match only common words outrank what only the meaning channel found.
So each keyword candidate's score is weighted by its *coverage*: the share of
the query's IDF mass that its matched terms carry, and the channels are
fused by a convex combination of their normalised scores (rank.fuse), which
never fell below the better channel where rank fusion did. The fused score says
nothing about relevance, so silence is decided on calibrated per-channel
evidence instead: coverage and IDF for keywords, cosine for meaning.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import sys
from bisect import insort
from pathlib import Path
from typing import NamedTuple

from hafiza.vault.store import usage
from hafiza.vault.errors import HafizaError

from . import rank
from .gate import general_question, reaction
from .index import Index
from .schema import CONCEPTS
from .search import GATHER, Concept, Hit, Titled, View, factors, keyword_channel, query_terms, to_hit, visible
from .stopwords import informative
from .text import terms

MODES = ("keyword", "meaning", "hybrid")
# Terms from recent turns sharpen the ranking but never supply the subject. Set by hand: the recall set
# has no conversation context to measure it on (bench/recall/README.md, tuned constants).
CONTEXT_BOOST = 0.3
# A pasted log or stack trace can bring hundreds of words; Whoosh's cost grows with every one
# (a 2,000-character turn took ~350 ms at 5,000 memories). The rarest words carry the subject.
MAX_TERMS = 16
MAX_CONTEXT_TERMS = 8   # half of MAX_TERMS: the recent turns only sharpen what the prompt asks
MAX_CONCEPTS = 4        # the lexicon's concepts searched for (the rarest): a short prompt names 0-3
MAX_TYPOS = 4           # words no memory holds read as a slip of the fingers (View.spelled), at most
# A prompt of at most this many informative words that finds nothing is searched again with the recent turns
# and the project's name (Recall._implicit), its hits weighed by IMPLICIT_WEIGHT and only among the memories
# the prompt's own words match. Set by hand (issue 34, lever 2).
SHORT_PROMPT_TERMS = 5
IMPLICIT_WEIGHT = 0.5
# There, a memory counts when the prompt's own words hold at least IMPLICIT_OWN of IDF mass of it (half a word
# found in one memory only: a Turkish form of it counts) and the recent turns (or, with none, the project's name)
# at least IMPLICIT_RECENT (two such words). Issue 34, round three: on the tuning, r34 and r36 sets, chit-chat after
# a real question in a project (its turn as the history, what that turn showed excluded) went silent 0.80-0.82 ->
# 0.96-0.98; short task prompts recall@2 0.33/0.43/0.31 -> 0.08/0.20/0.23 (own 1.0 and recent 1.0: silent
# 0.95-0.96, 0.08/0.11/0.10; 0.5 and 1.0: silent 0.88-0.92, 0.08/0.30/0.31). bench/recall/README.md.
IMPLICIT_OWN = 0.5
IMPLICIT_RECENT = 2.0
# Or the memory is scoped to the project worked in and holds at least this share of the prompt's words (coverage).
# Round four, on r37 with its scopes kept (spent): short task prompts recall@2 0.24 -> 0.64, chit-chat after a real
# question in a project silent 0.865 as before (any coverage: 0.72 and 0.615; 0.2: 0.72 and 0.75; 0.3: 0.68 and
# 0.865; 0.6: 0.48). The other sets hold global memories only.
IMPLICIT_SCOPED = 0.4
# ... and only for a prompt of at least this many informative words: one is too little to say what it is about
# ("thanks, that fixed it" in a project brought its migrations memory, "fixed"). Chosen after the blind r39 run
# (whose two new loud chit-chat prompts were such), on r37 and r38 (spent): after a real question silent 0.892 ->
# 0.915 and 0.930 -> 0.947, short task prompts 0.60 -> 0.48 and 0.59 as before ("deploy it" alone goes silent).
IMPLICIT_SCOPED_WORDS = 2
# USE averages over its tokens, so a long paste embeds as the average of everything in it: the start and
# end of a prompt (where people put the question) are embedded, ~1,000 characters, a long paragraph.
MAX_EMBED_CHARS = 1000
# Every distinct word costs an IDF lookup before the rarest are chosen: a 1.2 MB paste took 3.2 s.
MAX_QUERY_CHARS = 8000
# A word in more than this share of all memories ("deploy" in a deploy-heavy vault) adds cost and almost
# no evidence; such words are left out unless nothing else is left (_uncommon). Set by hand.
COMMON = 0.2
# The least range of cosines fusion normalises over (_normalisers): the gathered 50 span more than this
# on every set measured (the figures did not move), a handful of candidates may not.
COSINE_SPAN = 0.2


class Floor(NamedTuple):
    """When a candidate counts as relevant at all (calibrated on bench/recall, see its README).
    A NamedTuple, not a dataclass: importing dataclasses costs the cold hook ~5 ms."""

    idf: float = 1.5          # matched IDF mass, in units of a word found in one memory only
    # or: closer to the memory than to any background prompt, less this (background.py). 0.0 until issue 34
    # added 300 blind chit-chat prompts to the background; then -0.04 kept tuning recall@2 (0.781 at 0.0,
    # 0.820 here) with chit-chat never seen silent 0.96 (bench/recall/README.md, the background sentences).
    margin: float = -0.04
    # A prompt that reads like a background prompt (a request about the answer's style, a general question about
    # a tool the team also uses: "npm ile yarn farkı ne") needs more keyword evidence. 0.6 and 5 until issue 34's
    # round two; on a grid, chosen on the blind chit-chat calibration prompts of ids 1 mod 4 with the tuning and
    # held-out sets, then checked on ids 3 mod 4: loud 10 -> 3 of 150, tuning and held-out recall@2 0.866 ->
    # 0.869, wrongly empty 0.033 as before; short task prompts with a history (short.jsonl, floored as the
    # hook searches them) recall@2 4 -> 5 of 12, empty 3 of 12 both (bench/recall/README.md, tuned constants).
    background_level: float = 0.45
    background_idf: float = 10.0  # extra IDF units per unit of background similarity above the level
    relative: float = 0.25    # and within this fraction of the best hit's score
    # Of the IDF the memory holds only as a concept of the lexicon (`concept`, lexicon.py), the share that counts;
    # in full when the meaning channel finds the memory near too (a margin of at least concept_near). In full
    # always, the blind chit-chat never seen was silent 0.977 -> 0.963; so, 0.972, with tuning and held-out
    # recall@2 0.855 -> 0.866, wrongly empty 0.039 -> 0.033 (bench/recall/README.md, the lexicon). Set by hand.
    concept: float = 0.5
    concept_near: float = -0.14
    # A general question (gate.general_question) needs this much more keyword evidence and meaning margin. Issue 34,
    # round four: on r37 (spent, scopes kept), chit-chat silent 0.808 -> 0.962; tuning 0.939 -> 0.955; recall@2
    # unchanged on tuning, r34, r36 and r37 (1.5 and 0.1: r37 silent 0.904; higher than 3.0: as 3.0).
    general_idf: float = 3.0
    general_margin: float = 0.2
    # When nothing passed, the first of both channels still counts with this much keyword evidence and this margin
    # (_agreed). Issue 34, round four, on the tuning, r34, r36, r37 and r38 sets (all spent): recall@2 +0.004 to
    # +0.016, wrongly empty -0.005 to -0.027, paraphrases on r38 0.29 -> 0.32; chit-chat silent 0.962 -> 0.955 on the
    # tuning set (one prompt), the blind calibration chit-chat 0.983 -> 0.973 (3 of 300), after a real question
    # -0.004 to -0.008. Idf 1.25: no gain on r36 and r38; margin -0.20: tuning silence 0.947; -0.12: less recall.
    agree_idf: float = 1.0
    agree_margin: float = -0.16
    # The meaning channel's first counts so when the keyword channel ranks it this high: round six, on the twelve
    # spent sets (bench/tune.py), 2: recall@2 0.752 -> 0.755, paraphrases 0.353 -> 0.363, wrongly empty 0.109 -> 0.104,
    # chit-chat silent 0.948 -> 0.947 (one prompt); 3 with the meaning channel's first two: 0.757, 0.376, 0.099, 0.945
    # ("why is my laptop fan so loud whenever I open Chrome" and the CORS lesson); 1 until then.
    agree_rank: int = 2
    # Or: the memory's title and tags hold this share of the prompt's IDF (its subject, search.Titled: "standup
    # kaçta?" and the memory titled "Standup 09:45", one word in two memories, below `idf`), with this margin.
    # Issue 34, round five, on the tuning, r34, r36, r38 and r39 sets (all spent): recall@2 0.760 -> 0.766, wrongly
    # empty 0.126 -> 0.118, chit-chat silent 0.963 as before, after a real question (with the blind calibration
    # prompts that are not background sentences) 0.962 -> 0.960; 0.5: half the gain, 0.3 with -0.2: r36 silent
    # 0.961 -> 0.941.
    subject: float = 0.4
    subject_margin: float = -0.25
    # Or: they hold all of it, whatever the meaning channel says ("commit this" and "Commit messages", "deploy et" and
    # "Deploy via ArgoCD": a task named in a word or two, which reads like every background prompt). Issue 34, round
    # seven, on the sixteen spent sets (bench/tune.py): short task prompts recall@2 0.506 -> 0.525, recall@2 0.750 ->
    # 0.753, wrongly empty 0.110 -> 0.106, chit-chat silent 0.956 -> 0.955 ("looks good, commit it", "run it again");
    # margin -0.5: half the gain; below -0.65: as -0.65. Not for a reaction (reacting), which it made loud in 3 more.
    whole: float = 0.99
    whole_margin: float = -0.65

    def general(self) -> "Floor":
        """This floor for a general question: more evidence, and no first of both channels without it."""
        return self._replace(idf=self.idf + self.general_idf, margin=self.margin + self.general_margin,
                             agree_idf=math.inf, subject=math.inf, whole=math.inf)

    def reacting(self) -> "Floor":
        """This floor for a reaction to the last answer (gate.reaction): its words are about that answer, so
        their being a memory's title ("perfect, that fixed it" and "Units") is no evidence."""
        return self._replace(subject=math.inf, whole=math.inf)


FLOOR = Floor()
# `hafiza search`: any keyword match counts (a person typed the words on purpose), but a
# meaning-only neighbour must still beat the background, or unrelated queries list noise.
SEARCH_FLOOR = Floor(idf=0.0, relative=0.0, background_idf=0.0, general_idf=0.0, general_margin=0.0)
# An agent's search (MCP `recall` with a few words, gate.keyword_query): the same, but what is far below the best
# is left out, as the hooks leave it out; a person scans a long list, an agent pays for every line of it.
AGENT_SEARCH_FLOOR = SEARCH_FLOOR._replace(relative=FLOOR.relative)


class Scope(NamedTuple):
    """Which memories a search may return."""

    project: str | None = None      # its memories join the global ones
    all_scopes: bool = False
    include_inactive: bool = False  # superseded and archived too


class Query(NamedTuple):
    text: str
    limit: int
    mode: str
    scope: Scope
    today: dt.date
    sync: bool
    floor: Floor | None
    exclude: frozenset
    context: str
    # Whether versions of one subject are put in order (_newer_versions, _newer_first): not for _implicit's own
    # searches, which want only what matched (at 50 hits each, the pairs took the cold hook ~75 ms at 5,000 memories).
    versions: bool = True


class Candidate:
    """What the channels found about one memory; `parts()` is what `--explain` shows.
    A plain class with slots: dataclasses costs the cold hook ~5 ms to import."""

    EVIDENCE = ("keyword_rank", "bm25", "coverage", "idf", "concept", "subject", "background", "meaning_rank", "cosine",
                "margin", "unembedded")
    __slots__ = ("doc", *EVIDENCE)

    def __init__(self, doc: dict, **evidence):
        self.doc = doc
        for name in self.EVIDENCE:
            setattr(self, name, evidence.get(name))

    def parts(self) -> dict:
        return {name: _round(getattr(self, name)) for name in self.EVIDENCE if getattr(self, name) is not None}


class Scored(NamedTuple):
    """A candidate's score and how it was made, before it is cut and made a Hit."""

    score: float
    id: str
    parts: dict
    doc: object  # its stored fields (search.View.doc)


class Recall:
    """Search one vault. Holds the index and, when given an embedder, the vectors."""

    def __init__(self, root: Path, embedder=None, notice=None, files: bool = False):
        self.root = Path(root)
        # A one-shot keyword search (the cold hook, `hafiza search`) reads hafiza's own files rather than
        # open Whoosh when the index is in step (indexer/cold.py): a long-lived process keeps Whoosh's reader.
        self.files = files
        self.index = Index(self.root, **({"notice": notice} if notice else {}))
        self.embedder = embedder
        self._view = None
        self._vectors = None
        self._vectors_stamp = None
        self._background = None
        self._scoped = None  # (the store's ids, view, each one's document number, scope -> which are in it)
        # Catch up with hafiza's writes only (index.sync's `quick`): a search's cost does not grow with the
        # vault. The warm process also runs full syncs when idle, for edits made in place.
        self.quick_sync = True
        self.embedded_generation = None  # the index generation the warm process last embedded for
        self._pending = usage.PendingReader(self.index.sidecar)

    @property
    def modes(self) -> tuple[str, ...]:
        return MODES if self.embedder is not None else ("keyword",)

    def vectors(self):
        """The vector store, reloaded when its files change on disk; None if there is none yet."""
        from .vectors import META, VectorStore

        try:
            stamp = os.stat(self.index.sidecar / META).st_mtime_ns
        except FileNotFoundError:
            # Said once, not on every search of a long-lived process; and not at all while the vault holds nothing
            # to embed (a new vault has no vectors because it has no memories: nothing is wrong).
            if self._vectors_stamp != "missing" and self.documents():
                self._vectors_stamp = "missing"
                self.index.notice(self._why_no_vectors())
            self._vectors = None
            return None
        if stamp != self._vectors_stamp:
            store = VectorStore(self.index.sidecar, notice=self.index.notice)
            e = self.embedder
            self._vectors = store if store.load(e.name, e.version, e.dim) else None
            self._vectors_stamp = stamp
            if self._vectors is None:
                self.index.notice(f"the vectors are damaged or not made by {e.name} {e.version}: search is "
                                  "keyword-only until the next write or `hafiza reindex`")
        return self._vectors

    def documents(self) -> int:
        """How many documents (memories, fact attributes) the index holds: with none there is nothing to embed."""
        return self._view.reader.doc_count() if self._view is not None else self.index.doc_count()

    def _why_no_vectors(self) -> str:
        from hafiza.vault.store.lock import is_held

        from .refresh import VECTORS_LOCK

        if is_held(self.index.sidecar / VECTORS_LOCK):  # a write's background embedding, under way
            return ("the meaning channel is being built in the background (a write just started it): this "
                    "search used keywords only")
        from .vectors import NONE_YET

        return (f"there are no vectors for this vault's memories yet ({NONE_YET}): search is keyword-only "
                "until the next write or `hafiza reindex`")

    def search(self, query: str, *, limit: int = 10, mode: str = "keyword", project: str | None = None,
               all_scopes: bool = False, include_inactive: bool = False, today: dt.date | None = None,
               sync: bool = True, floor: Floor | None = None, exclude=(), context: str = "") -> list[Hit]:
        """The best `limit` memories for `query`, best first; `hit.parts` explains each score.

        With `floor`, candidates without enough evidence are dropped, so an
        unrelated prompt gets nothing. `exclude` ids are skipped (already shown).
        """
        if mode not in self.modes:
            raise HafizaError(f"mode {mode!r} is not available; use one of {', '.join(self.modes)}", field="mode")
        q = Query(query, limit, mode, Scope(project, all_scopes, include_inactive), today or dt.date.today(),
                  sync, floor, frozenset(exclude), context)
        try:
            return self._search(q)
        except _damage() as exc:
            # Damage that only shows while reading (a truncated posting file): rebuild once.
            self.index.notice(f"the index could not be read ({type(exc).__name__}); rebuilding it from the files")
            self.index.rebuild()
            return self._search(q)

    def _search(self, q: Query) -> list[Hit]:
        # Its start and end only, as every other part of the query: on a 1.2 MB paste the whole took ~90 ms.
        head = _head_and_tail(q.text, MAX_QUERY_CHARS)
        general = q.floor is not None and general_question(head)
        # A reaction to the last answer (gate.reaction: "ok that fixed it", "teşekkürler, çalıştı") is about that
        # answer: its words name no subject, and it gets no second query from the turns (_implicit).
        reacts = q.floor is not None and not general and reaction(head)
        if general:
            q = q._replace(floor=q.floor.general())
        elif reacts:
            q = q._replace(floor=q.floor.reacting())
        scored = self._scored(q)
        if not scored and q.floor is not None and not general and not reacts and (q.context or q.scope.project):
            scored = self._implicit(q)

        # Hits are made for the few returned only: a warm View reads their title, snippet and the like
        # from the index (indexer/columns.py), ~45 us each at 100,000 memories.
        return [to_hit(s.doc, s.score, s.parts) for s in scored]

    def _scored(self, q: Query) -> list[Scored]:
        view = self.view(q.sync)
        words = query_terms(_head_and_tail(q.text, MAX_QUERY_CHARS))
        extra = [w for w in query_terms(_head_and_tail(q.context, MAX_QUERY_CHARS)) if w not in words] \
            if q.context else []
        cands: dict[str, Candidate] = {}
        if q.mode != "meaning" and words:
            self._keyword(view, words, extra, q.scope, cands, _concepts(q.text, words, self.index.sidecar))
        if q.mode != "keyword":
            self._meaning(view, q.text, q.scope, cands)
        scored = self._score(cands, q.mode, q.today, q.exclude, q.floor, q.limit, q.versions)
        if not q.floor:
            return scored
        scored = apply_floor(scored, q.mode, q.floor)
        if not scored and q.mode == "hybrid" and (agreed := _agreed(cands, q.floor)) and agreed not in q.exclude:
            scored = [s._replace(parts={**s.parts, "agreed": True})
                      for s in self._score({agreed: cands[agreed]}, q.mode, q.today, q.exclude, None, 1)]
        return scored

    def _implicit(self, q: Query) -> list[Scored]:
        """A short prompt whose subject is implicit ("write a commit message for this change") that found
        nothing on its own: the prompt with the recent turns and the project's name, as a weaker second query.
        A memory counts only when the prompt's own words match it (another form of them too) and the recent
        turns hold it as well (the project's name, when there are no turns yet), or it is scoped to the project
        worked in and holds enough of the prompt's words (IMPLICIT_SCOPED), or its title and tags hold the project's
        name and the prompt's subject (Floor.subject; issue 34, round six, on the twelve spent sets: short task
        prompts recall@2 0.524 -> 0.543, wrongly empty 0.112 -> 0.109 of all answerable, chit-chat silence as
        before; without the subject share, 0.580 and silence 0.948 -> 0.938): the turns sharpen, they never
        bring a subject the prompt does not touch, and a word of the prompt that only happens to match ("nice
        jobs" and the nightly jobs' memory) is not enough. The project's name counted with the turns made every
        memory naming the project a subject (chit-chat after a question in site-yonetim-api, silent 0.94 ->
        0.97 without it). Also counting the prompt's nearest by meaning let "thanks, that fixed it" after a
        question about a lockfile recall it (issue 34, lever 2). A reaction to the last answer gets none (_search)."""
        words = query_terms(q.text)
        if not words or len(words) > SHORT_PROMPT_TERMS:
            return []
        plain = q._replace(floor=None, limit=GATHER, mode="keyword", context="", versions=False)
        matched = [s for s in self._scored(plain) if s.parts.get("idf", 0.0) >= IMPLICIT_OWN]
        own = {s.id for s in matched}
        if not own:
            return []
        project = (q.scope.project or "").replace("-", " ").replace("_", " ")
        recent = q.context[-MAX_EMBED_CHARS:]
        told = {s.id for s in self._scored(plain._replace(text=recent or project))
                if s.parts.get("idf", 0.0) >= IMPLICIT_RECENT}
        # A memory scoped to the project worked in is about it, whatever its words ("run the tests" there).
        if q.scope.project and len(informative(words)) >= IMPLICIT_SCOPED_WORDS:
            mine = f"project:{q.scope.project}"
            told |= {s.id for s in matched
                     if s.doc["scope"] == mine and s.parts.get("coverage", 0.0) >= IMPLICIT_SCOPED}
        # So is a memory titled with the project's name and the prompt's subject ("Running tests in fatura-kuyruk"
        # for "run the tests" there), whatever its scope.
        if q.scope.project:
            name = set(query_terms(q.scope.project)[:1])
            told |= {s.id for s in matched
                     if s.parts.get("subject", 0.0) >= q.floor.subject and name & _subject_words(s.doc)}
        if not own & told:
            return []
        # Ranked by the prompt's words, the turns and the project's name re-ranking them (_sharpen): searched as one
        # query, their words cost the cold hook ~80 ms at 5,000 memories (bench/versions.py, round four).
        sharpened = q._replace(context=" ".join(part for part in (recent, project) if part), floor=None, limit=GATHER)
        found = [s for s in self._scored(sharpened) if s.id in own & told][: q.limit]
        cut = found[0].score * q.floor.relative if found and q.floor else 0.0  # as apply_floor cuts
        return [s._replace(score=s.score * IMPLICIT_WEIGHT, parts={**s.parts, "implicit": True})
                for s in found if s.score >= cut]

    def view(self, sync: bool = True) -> View:
        """The open reader on the current index, kept while the index object stays the same."""
        if self.files and self.embedder is None and (self._view is None or self._view.ix is None):
            view = self._files_view(sync)
            if view is not None:
                return view
        opened = self.index.opened
        ix = self.index.open(quick=self.quick_sync) if sync or opened is None else opened
        if self._view is None or self._view.ix is not ix:
            self.close()
            self._view = View(ix, dense=self.embedder is not None)  # numpy is loaded for the meaning channel
        return self._view

    def _files_view(self, sync: bool) -> View | None:
        """A view of the index through its files (cold.Files), without Whoosh; None when Whoosh must answer:
        the files do not describe the index's newest generation. Files that hafiza's writes changed since the
        index was last in step are ranked in memory as their commit would index them (pending.py), up to
        pending.LIMIT of them; otherwise they are committed first, which loads Whoosh (but the files spare
        it opening a reader on the new generation)."""
        from . import cold, pending

        current = self._view
        if current is not None and current.ix is None:
            stamps, generation = self.index.state()
            if generation == current.reader.state[1] and (not sync or stamps == current.reader.state[0]):
                return current  # nothing was written or committed since it was made
        preview = self.index.preview(pending.LIMIT) if sync and self.quick_sync else None
        if preview is None and sync:
            self.index.sync(quick=self.quick_sync, whoosh=False)
        state = self.index.state() if preview is None else (preview.stamps, preview.generation)
        files = cold.open_files(self.index.dir)
        if files is not None and preview is not None:
            files = pending.overlay(files, preview)
            if files is None or not self.index.unmoved(preview):  # its commit would merge, or one was made meanwhile
                self.index.sync(quick=self.quick_sync, whoosh=False)
                state, files = self.index.state(), cold.open_files(self.index.dir)
            else:
                self.index.previewed(preview)
        if files is None:
            return None
        files.state = state
        self.close()
        self._view = View(None, files)
        return self._view

    def prepare(self) -> None:
        """Sync, open the view and read all of its documents, and load the vectors as they are now (with their
        signs: indexer/coarse.py): a long-lived process does this while idle, so no prompt waits for either."""
        self.view().load_all()
        if self.embedder is not None:
            self.vectors()

    def close(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None

    # ---- channels

    def _keyword(self, view, words, extra, scope, cands, concepts=None) -> None:
        n = view.reader.doc_count()
        idf = {w: _idf_of(n, view.frequency(w)) for w in dict.fromkeys(words + extra)}  # each looked up once
        absent = _idf_of(n, 0)
        # A word no memory holds in any form may be a slip of the fingers: the word it was typed for is asked too. Not
        # in a long prompt (a pasted log holds dozens of such words, each ~2 lookups a letter), where one word less
        # matters little; and for the first MAX_TYPOS such words only.
        unknown = [w for w in words if idf[w] >= absent][:MAX_TYPOS] if len(words) <= MAX_TERMS else []
        meant = [w for w in dict.fromkeys(view.spelled(w) for w in unknown) if w and w not in idf]
        if meant:
            words = words + meant
            idf.update({w: _idf_of(n, view.frequency(w)) for w in meant})
        held = {c: df for c in (concepts or {}) if (df := view.reader.doc_frequency(CONCEPTS, c))}
        # The rarest few: a long prompt, or a short one searched again with its recent turns (_implicit), names
        # dozens of concepts, each a long list to score (a warm keyword search at 1,000 memories, 2.8 -> 8 ms).
        concepts = {c: concepts[c] for c in sorted(held, key=held.get)[:MAX_CONCEPTS]}
        for concept, owners in concepts.items():
            # A word no memory holds in any form but that names a concept some do: as rare as the concept.
            for w in owners:
                if not view.frequency(w):
                    idf[w] = min(idf[w], _idf_of(n, held[concept]))
        asked = words  # all of them: an alias phrase is covered by what the prompt says, rare or not
        words = _uncommon(words, idf, n)
        total = sum(idf[w] for w in _rarest(words, idf, MAX_TERMS)) or 1.0  # what the prompt is most about
        # A word no memory holds matches nothing: pasted ids or log tokens, rarest of all, must not
        # take the places of the words that can match.
        words = _rarest([w for w in words if idf[w] < absent], idf, MAX_TERMS)
        extra = _rarest([w for w in _uncommon(extra, idf, n) if idf[w] < absent], idf, MAX_CONTEXT_TERMS)
        if not words and not concepts:
            return
        rarest = _idf_of(n, 1)
        found = keyword_channel(view, words, also=extra, asked=asked, concepts=concepts, **scope._asdict())
        if extra:
            found = _sharpen(found, {w: idf[w] for w in extra})
        recent = set(extra)
        for position, (doc, bm25, matched) in enumerate(found, 1):
            # Evidence is what the prompt's own words found: the recent turns' words only re-ranked (_sharpen).
            # Counted as evidence, "C#'ta record ile class farkı ne?" after a question about Flagsmith injected
            # the Flagsmith runner's memory: chit-chat after a real question went silent 0.94 -> 0.82.
            own = [(w, weight) for w, weight in matched.items() if w not in recent]
            mass = sum(idf.get(w, 0.0) * weight for w, weight in own)
            concept = sum(idf.get(w, 0.0) * weight for w, weight in own if isinstance(weight, Concept))
            subject = sum(idf.get(w, 0.0) for w, weight in own if isinstance(weight, Titled))
            cands[doc["id"]] = Candidate(doc, keyword_rank=position, bm25=bm25, coverage=mass / total,
                                         idf=mass / rarest, concept=concept / rarest if concept else None,
                                         subject=subject / total if subject else None)

    def _meaning(self, view, query, scope, cands) -> None:
        store = self.vectors()
        if store is None or not len(store) or not query.strip():
            return
        qvec = self.embedder.embed([_head_and_tail(_subject_clauses(query), MAX_EMBED_CHARS)])[0]
        if not qvec.any():
            return  # nothing to embed (the hash embedder on punctuation): every cosine would tie at 0
        if self._background is None:
            from .background import vectors

            self._background = vectors(self.embedder, self.index.sidecar)
        background = float((self._background @ qvec).max())
        for mem_id, cand in cands.items():
            cand.background = background
            if not store.holds(mem_id):  # written a moment ago, its vectors still being made (refresh.py)
                cand.unembedded = True
        for position, (mem_id, doc, cosine) in enumerate(self._nearest(store, qvec, view, scope, cands), 1):
            cand = cands.setdefault(mem_id, Candidate(doc, background=background))
            cand.meaning_rank, cand.cosine, cand.margin = position, cosine, cosine - background

    def _nearest(self, store, qvec, view, scope, cands) -> list[tuple[str, dict, float]]:
        """The GATHER nearest memories that are in scope, as (id, document, cosine)."""
        allowed = self._in_scope(store, view, scope)
        k = GATHER * 3 if allowed is None else GATHER
        while True:
            near = []
            for mem_id, cosine in store.search(qvec, k, allowed):
                cand = cands.get(mem_id)
                doc = cand.doc if cand else view.doc_by_id(mem_id)
                if doc is not None and visible(doc, **scope._asdict()):
                    near.append((mem_id, doc, float(cosine)))
                    if len(near) == GATHER:
                        return near
            if k >= len(store) or allowed is not None:  # with `allowed`, it searched only those in scope
                return near
            k = len(store)  # the nearest were mostly out of scope (other projects', superseded): look at all

    def _in_scope(self, store, view, scope):
        """Which of the store's memories `scope` lets a search return, a bool each in the store's order, so
        that its coarse pass picks among those only (indexer/coarse.py) and never scans all for the few in
        scope; None where the view has not read its documents (a one-shot search: it filters afterwards)."""
        numbers = view.numbers()
        if numbers is None:
            return None
        import numpy as np

        # Made again when either changes (the store's ids are a new list whenever it loads or writes).
        if self._scoped is None or self._scoped[0] is not store.ids or self._scoped[1] is not view:
            docnums = np.fromiter((numbers.get(id_, -1) for id_ in store.ids), dtype=np.intp, count=len(store))
            self._scoped = (store.ids, view, docnums, {})  # ~20 ms at 100,000 memories
        docnums, masks = self._scoped[2], self._scoped[3]
        if scope not in masks:
            masks[scope] = (docnums >= 0) & ~view.dense_mask(*scope)[docnums]
        return masks[scope]

    # ---- fusion, floor, factors

    def _score(self, cands: dict[str, Candidate], mode: str, today, exclude, floor: Floor | None,
               limit: int, versions: bool = True) -> list[Scored]:
        """The `limit` best candidates with the evidence `floor` asks for, best first (ties: by id).

        A candidate's factors (strength, usefulness...: ~30 us, its document's dates and counts) are
        worked out only while it can still reach the top: they never raise its relevance by more than
        rank.MOST (a hybrid search at 100,000 memories has ~100 candidates, ~3 ms of factors).
        """
        ranked, below = [], []  # below: what the floor left out that the prompt's words found
        keyword, meaning = _normalisers(cands.values())
        for mem_id, c in cands.items():
            if mem_id in exclude:
                continue
            # A memory not embedded yet is judged by its words alone, as a keyword search would: a write is
            # found by the next read, not seconds later once its vectors are made (issue 30, item 2).
            channels = "keyword" if c.unembedded else mode
            if mode == "keyword":
                relevance = c.bm25
            elif mode == "meaning":
                relevance = c.cosine
            elif c.unembedded:
                relevance = keyword(c)
            else:
                relevance = rank.fuse(keyword(c), meaning(c))
            parts = c.parts()
            if floor is None or relevant(parts, channels, floor):
                ranked.append((relevance, mem_id, parts, c.doc))
            elif c.keyword_rank is not None:
                below.append((relevance, mem_id, parts, c.doc))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        pending = self._pending.read()

        def scored(relevance, mem_id, parts, doc) -> Scored:
            parts["relevance"] = _round(relevance)
            parts.update(factors(doc, pending, today))
            score = relevance * parts["strength"] * parts["usefulness"] * parts["type_weight"] * parts["status"]
            return Scored(score, mem_id, parts, doc)

        hits: list[Scored] = []
        for relevance, mem_id, parts, doc in ranked:
            if len(hits) >= limit and relevance * rank.MOST * (1 + 1e-9) < hits[limit - 1].score:
                break  # nor can any after it
            insort(hits, scored(relevance, mem_id, parts, doc), key=lambda h: (-h.score, h.id))
        hits = hits[:limit]
        if not versions:
            return hits
        alike = self._likeness(mode)
        hits += [scored(*c) for c in _newer_versions(hits, below, alike)]
        return _newer_first(_successors_first(hits), alike)

    def _likeness(self, mode: str):
        """Whether two memories (documents) are alike enough to be one subject when they share a single title or
        tag word (_same_subject): the same type and scope, and their vectors (all their fields together) at a
        cosine of SAME_SUBJECT_COSINE or more (SAME_SUBJECT_COSINE_NARROW for two facts or a project's memories).
        Never without vectors (keyword mode, the cold hook, a memory not embedded yet)."""
        store = self.vectors() if mode != "keyword" and self.embedder is not None else None
        if store is None:
            return _unalike

        def alike(a: dict, b: dict) -> bool:
            if a["type"] != b["type"] or a["scope"] != b["scope"]:
                return False
            va, vb = store.first(a["id"]), store.first(b["id"])
            narrow = a["type"] == "fact" or a["scope"] != "global"
            return va is not None and vb is not None and \
                float(va @ vb) >= (SAME_SUBJECT_COSINE_NARROW if narrow else SAME_SUBJECT_COSINE)
        return alike


def _successors_first(hits: list[Scored]) -> list[Scored]:
    """A superseded memory shown with its successor (include_inactive) ranks just below it, whatever the
    words: a prompt naming the old value ("npm ci") matches the old version best (rank.STATUS_WEIGHT alone
    let it win where the fused scores were far apart)."""
    score = {h.id: h.score for h in hits}
    moved = False
    for i, h in enumerate(hits):
        after = h.doc.get("superseded_by") if h.doc["status"] != "active" else None
        if after in score and h.score >= score[after]:
            hits[i] = h._replace(score=score[after] * 0.999)
            moved = True
    return sorted(hits, key=lambda h: (-h.score, h.id)) if moved else hits


# A newer memory that marks itself as an exception leaves the rule it bends standing (issue 34, lever 5).
_EXCEPTION = re.compile(r"\b(?:exception|one-off|one off|this time|only this|for now|temporar\w*|istisna\w*|"
                        r"bu seferlik|bir kereli\w*|sadece bu|gecici|geçici\w*)\b", re.IGNORECASE)
SAME_SUBJECT = 0.34  # the least Jaccard of two memories' title and tag words (two shared at least): 0.25 moved
# pairs of different subjects (tuning recall@2 0.833 -> 0.814), 0.5 missed changed facts (8 of 15 tuning prompts still
# showed the old one first, 4 at 0.34, 13 without this)
# Or one shared title or tag word, the same type and scope, and vectors this close (Recall._likeness): two versions
# written months apart in other words or the other language ("Staging DB port" / "Staging veritabanı portu"). Issue
# 34, round six, on the twelve spent sets (bench/tune.py): stale over successor 0.078 -> 0.067, recall@2 0.751 ->
# 0.750. Of their 6,770 pairs sharing a word, the labelled changed facts caught 144 -> 187 of 244, other pairs
# taken for one 82 -> 100; 0.65: 171 and 91, sos 0.073; without the type and scope: 189 and 174, recall@2 0.748.
SAME_SUBJECT_COSINE = 0.6
# ... or this close for two facts, or two memories scoped to one project: there a shared word is most often a value
# that changed (a timeout, an owner, a version). Round seven, on the eleven spent sets with labelled pairs: pairs
# sharing a word at 0.5 against 0.6, facts: changed (replace and supersedes) 137 against 87, others 22 against 8;
# scoped to a project: 103 against 62, others 14 against 1. On the seventeen spent sets (bench/tune.py): stale over
# successor 0.100 -> 0.081, recall@2 0.753 -> 0.752, cross-language 0.884 -> 0.877 (a client's SLA taken for a newer
# version of its address); 0.55: 0.096; 0.45 for a project's facts only: 0.092.
SAME_SUBJECT_COSINE_NARROW = 0.5


def _unalike(a: dict, b: dict) -> bool:
    return False


def _newer_first(hits: list[Scored], alike=_unalike) -> list[Scored]:
    """Two active memories about the same subject (their titles and tags share most words), neither linked to
    the other, the older ranked first: the newer goes just above it and the older is labelled 'possibly
    outdated: newer memory <id>' (parts["newer"]), so a changed fact nobody marked superseded does not win
    on words only the old value holds (stale over successor, bench/recall/README.md: 13 of 15 tuning prompts).
    Not when the newer calls itself an exception ("bu seferlik", "one-off"): the rule it bends still holds.
    The curator's related-pairs pass proposes the supersede (curator/conflicts.py)."""
    if len(hits) < 2:
        return hits
    words = [_subject_words(h.doc) for h in hits]
    moved = False
    for i in range(len(hits)):
        for j in range(i + 1, len(hits)):
            old, new = hits[i], hits[j]
            if not (_may_replace(old.doc, new.doc) and _same_subject(words[i], words[j], lambda: alike(old.doc, new.doc))):
                continue
            hits[j] = new._replace(score=max(new.score, old.score * 1.001))
            hits[i] = old._replace(parts={**old.parts, "newer": new.id})
            moved = True
    return sorted(hits, key=lambda h: (-h.score, h.id)) if moved else hits


# A newer version comes past the floor with its older one (_newer_versions) when the prompt's words give it at least
# this share of the older's evidence: a changed fact's two versions share the prompt's words. On tuning / r34 / r36,
# recall@2 0.782 / 0.673 / 0.684 -> 0.778 / 0.673 / 0.688, newer disagrees 0.70 -> 0.83 on r36 (0.9: 0.778 / 0.668 /
# 0.688; any evidence: 0.769 / 0.661 / 0.688).
NEWER_EVIDENCE = 1.0


def _newer_versions(hits: list[Scored], below: list, alike=_unalike) -> list:
    """Of the candidates the floor left out (`below`: relevance, id, parts, document), those that say something
    newer about the subject of a hit (as _newer_first judges it): a changed fact whose old version passed the
    floor by a hair more evidence (its words are the prompt's: "2 hafta") is shown with the new one, which then
    goes first. Issue 34, lever 5: on r36, "sprint şu an kaç hafta sürüyor?" showed only the old sprint length."""
    if not hits or not below:
        return []
    words = {}  # a shown memory's subject words, made when first needed (~0.15 ms a memory on the cold path)

    def subject_of(hit) -> set:
        if hit.id not in words:
            words[hit.id] = _subject_words(hit.doc)
        return words[hit.id]

    out = []
    for cand in below:
        doc, held = cand[3], cand[2].get("idf", 0.0)
        older = [h for h in hits if held >= h.parts.get("idf", 0.0) * NEWER_EVIDENCE and _may_replace(h.doc, doc)]
        if not older:
            continue  # most: fewer of the prompt's words than any shown memory
        subject = _subject_words(doc)
        replaced = next((h.id for h in older if _same_subject(subject_of(h), subject, lambda: alike(h.doc, doc))),
                        None)
        if replaced:
            cand[2]["newer_of"] = replaced  # the floor lets it through with the older (apply_floor)
            out.append(cand)
    return out


def _may_replace(old, new) -> bool:
    """Whether the document `new` may say something newer than `old` about its subject (_same_subject decides
    that it is the same subject): both active and unlinked, `new` written later, with another text (the same
    text twice is a duplicate, the curator's duplicates pass), and not calling itself an exception."""
    return (old["created"] < new["created"] and old["status"] == "active" == new["status"]
            and not _linked(old, new) and old.get("snippet") != new.get("snippet")
            and not _EXCEPTION.search(f"{new.get('title') or ''} {new.get('snippet') or ''}"))


def _subject_words(doc) -> set:
    """A memory's title and tag words, a hyphenated name as one word: query_terms adds its parts ("fatura-motoru",
    "fatura", "motoru"), and a project's name in two titles made two memories of it one subject (its stack and
    its review rule: the newer went first, whatever the prompt asked)."""
    words = set(query_terms(f"{doc.get('title') or ''} {doc.get('tags') or ''}"))
    parts = {part for word in words if "-" in word for part in word.split("-")}
    return words - parts


def _same_subject(a: set, b: set, alike=lambda: False) -> bool:
    """Whether two memories with subject words `a` and `b` (_subject_words) are about one subject: most of their
    words shared, or one shared and `alike()` (Recall._likeness: the same type and scope, vectors this close)."""
    shared = len(a & b)
    return (shared >= 2 and shared / len(a | b) >= SAME_SUBJECT) or (shared >= 1 and alike())


def _linked(a, b) -> bool:
    return a["id"] in (b.get("supersedes") or ()) or b["id"] in (a.get("supersedes") or ())


def _normalisers(cands):
    """Each channel's score of a candidate as 0..1 within this query's candidates: BM25 over the best BM25,
    times the coverage (the share of the query's IDF the memory holds: keyword noise that matches only
    common words counts little, docs/architecture.md, what the design measurements showed); the cosine
    over the range from the lowest gathered to the highest, a range of at least COSINE_SPAN (with a few
    candidates of nearly equal cosine, the lowest would otherwise count as nothing at all)."""
    cands = list(cands)
    top = max((c.bm25 for c in cands if c.bm25), default=0.0) or 1.0
    cosines = [c.cosine for c in cands if c.cosine is not None]
    high = max(cosines, default=1.0)
    low = min(min(cosines, default=0.0), high - COSINE_SPAN)

    def keyword(c) -> float:
        return (c.bm25 or 0.0) / top * (c.coverage or 0.0)

    def meaning(c) -> float:
        return 0.0 if c.cosine is None else (c.cosine - low) / (high - low)

    return keyword, meaning


def apply_floor(hits: list, mode: str, floor: Floor) -> list:
    """Drop hits (a Hit, or anything with its `score` and `parts`) without enough evidence of relevance,
    then those far below the best one."""
    kept = [h for h in hits if relevant(h.parts, mode, floor) or h.parts.get("newer_of")]
    if not kept:
        return kept
    best = kept[0].score
    return [h for h in kept if h.score >= best * floor.relative]


def _agreed(cands: dict[str, Candidate], floor: Floor) -> str | None:
    """The memory the meaning channel found first when the keyword channel ranks it near the top too
    (floor.agree_rank), with some keyword evidence (floor.agree_idf) and near the background (floor.agree_margin):
    the floor wants more of either channel alone, but two channels that agree are evidence of their own (a
    paraphrase that keeps one rare word: "doing planned maintenance tonight, how do I keep the pager quiet?").
    None otherwise."""
    for mem_id, c in cands.items():
        if c.meaning_rank == 1:
            agree = (c.keyword_rank is not None and c.keyword_rank <= floor.agree_rank
                     and (c.idf or 0.0) >= floor.agree_idf and c.margin is not None and c.margin >= floor.agree_margin)
            return mem_id if agree else None
    return None


def relevant(parts: dict, mode: str, floor: Floor) -> bool:
    extra = floor.background_idf * max(0.0, parts.get("background", 0.0) - floor.background_level)
    margin = parts.get("margin", -1.0)
    weak = (parts.get("concept") or 0.0) * (1 - floor.concept) if margin < floor.concept_near else 0.0
    keyword_ok = "keyword_rank" in parts and parts.get("idf", 0.0) - weak >= floor.idf + extra
    meaning_ok = margin >= floor.margin
    subject = parts.get("subject", 0.0)
    subject_ok = (subject >= floor.subject and margin >= floor.subject_margin) or \
        (subject >= floor.whole and margin >= floor.whole_margin)
    return (keyword_ok and mode != "meaning") or (meaning_ok and mode != "keyword") or (subject_ok and mode == "hybrid")


def _damage() -> tuple:
    """What reading a damaged index raises (a truncated posting file): those of the modules loaded, so the
    cold path, which reads hafiza's own files (cold.py), imports neither pickle nor struct for it."""
    kinds = [EOFError, OSError]
    for name, error in (("struct", "error"), ("pickle", "UnpicklingError")):
        if name in sys.modules:
            kinds.append(getattr(sys.modules[name], error))
    return tuple(kinds)


def _sharpen(found: list, extra_idf: dict[str, float]) -> list:
    """Re-rank what the prompt's own words found by the recent turns' words (never adds a memory).

    Putting context words into the query scored their whole posting lists: 58 ms -> 145 ms
    p50 at 20,000 memories. Checking them only for the gathered hits costs almost nothing.
    """
    total = sum(extra_idf.values()) or 1.0
    boosted = [(doc, bm25 * (1 + CONTEXT_BOOST * sum(extra_idf.get(w, 0.0) for w in matched) / total), matched)
               for doc, bm25, matched in found]
    return sorted(boosted, key=lambda item: -item[1])


def _uncommon(words: list[str], idf: dict[str, float], n: int) -> list[str]:
    """Words found in more than COMMON of all memories add cost and almost no evidence; they are
    dropped unless nothing else is left (a small vault, where every word is common)."""
    if n < 100:  # frequencies in a small vault say little, and its queries are cheap anyway
        return words
    absent = _idf_of(n, 0)
    common = {w for w in words if idf[w] < _idf_of(n, int(COMMON * n))}
    kept = [w for w in words if w not in common]
    return kept if common and any(idf[w] < absent for w in kept) else words


def _rarest(words: list[str], idf: dict[str, float], keep: int) -> list[str]:
    """The `keep` words with the highest IDF, in their original order."""
    if len(words) <= keep:
        return words
    ranked = sorted(words, key=lambda w: -idf[w])[:keep]
    chosen = set(ranked)
    return [w for w in words if w in chosen]


_CLAUSE = re.compile(r"(?<=[.!?,;:…])\s+|\s+[-–—]\s+")


def _subject_clauses(text: str) -> str:
    """The prompt without its clauses of stop words only ("tamam.", "thanks!", "günaydın ekip,"): chit-chat
    around a subject pulled the prompt's meaning toward the background's chit-chat, and a subject's memory
    below it (issue 34: on the blind prompts of chit-chat around one team fact, recall@2 0.80 -> 0.87 with
    this). The whole prompt when every clause is such, or it has one clause."""
    if len(text) > MAX_EMBED_CHARS:
        return text
    parts = _CLAUSE.split(text.strip())
    if len(parts) < 2:
        return text
    kept = [part for part in parts if informative(terms(part))]
    return " ".join(kept) if kept and len(kept) < len(parts) else text


def _concepts(text: str, words: list[str], cache: Path | None = None) -> dict[str, tuple[str, ...]]:
    """The lexicon's concepts `text` names, each with the informative `words` that name it (lexicon.py; `cache`,
    the vault's .hafiza/, where it is kept parsed)."""
    from .lexicon import lexicon

    asked = set(words)
    said = terms(_head_and_tail(text, MAX_QUERY_CHARS))
    found = lexicon(cache).concepts(said)
    return {c: kept for c, owners in found.items() if (kept := tuple(w for w in owners if w in asked))}


def _head_and_tail(text: str, limit: int) -> str:
    """A long prompt's start and end (the question is usually at one of them)."""
    return text if len(text) <= limit else text[: limit * 3 // 5] + " … " + text[-(limit * 2 // 5):]


def _idf_of(n: int, df: int) -> float:
    n = max(n, 1)
    df = min(df, n)  # deleted documents still count in Whoosh's frequencies until a merge
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _round(value):
    return round(value, 4) if isinstance(value, float) else value
