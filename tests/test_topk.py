"""Pruned keyword scoring (impact files + topk) returns exactly what summing every posting returns.

One vault of a few thousand generated memories, built once for the module: a big segment with an
impact file, deleted documents in it (edited memories), small segments without files, superseded,
archived and other projects' memories. Each query's pruned top is compared with an exhaustive sum
computed here from Whoosh's postings, the way search.py computed it before pruning.
"""

import heapq
import math
import os
import random

import pytest

from hafiza.indexer import cold, impact, topk
from hafiza.indexer.index import Index
from hafiza.indexer.schema import FIELD_BOOSTS, PREFIXES
from hafiza.indexer.search import EXACT_FIELDS, GATHER, K1, WORD_FIELDS, B, View, keyword_channel, query_terms, visible
from hafiza.indexer.text import prefix
from hafiza.vault.store.vault import Vault

WORDS = ("deploy staging postgres redis pnpm docker kafka nginx terraform helm grafana sentry billing "
         "checkout gateway ankara izmir berlin lockfile rollback migration backup cron webhook timeout "
         "latency cache eviction replica failover certificate rotation secret vault token ingress pod "
         "cluster node queue worker retry batch invoice payment refund report dashboard alert pager "
         "runbook incident postmortem sprint review release hotfix branch merge rebase lint format test "
         "fixture mock coverage flaky pipeline artifact registry image tag version semver changelog "
         "yedek sunucu veritabani kuyruk hata kesinti musteri fatura odeme").split()
VOCABULARY = WORDS + [f"{a}{b}{c}" for a in ("ka", "lo", "mi", "ne", "su", "te") for b in ("ra", "do", "vi", "zu")
                      for c in ("n", "t", "l", "k", "s", "m", "r", "p", "z", "x")]  # 240 more made-up words
ALSO = ["kafka", "redis", "zzyzx"]  # recent turns' words: only reported where a found memory holds them
SCOPES = ["global"] * 6 + ["project:alpha", "project:beta"]
MEMORIES = 2500


def _zipf(rng, items, s=1.1):
    """An item of `items`, the first ones far more often (rank r with weight 1 / r**s)."""
    weights = [1 / (r + 1) ** s for r in range(len(items))]
    return rng.choices(items, weights)[0]


def _topics(rng):
    # Memories are about something: each draws most of its words from one of 30 topics, so a word is in a
    # few percent of them, a few words in many, and some in almost all (the common words pruning is for).
    return [rng.sample(VOCABULARY, 30) for _ in range(30)]


def _text(rng, topics, topic, n):
    return " ".join(_zipf(rng, topic) if rng.random() < 0.8 else _zipf(rng, VOCABULARY, 0.8) for _ in range(n))


def _items(rng):
    topics, items = _topics(rng), []
    for n in range(MEMORIES):
        topic = _zipf(rng, topics, 0.7)
        item = {"id": f"m{n}", "title": _text(rng, topics, topic, rng.randint(2, 6)),
                "text": _text(rng, topics, topic, rng.randint(8, 60)), "scope": rng.choice(SCOPES),
                "tags": sorted(set(_text(rng, topics, topic, rng.randint(0, 3)).split()))}
        if rng.random() < 0.1:
            item["aliases"] = [_text(rng, topics, topic, 3)]
        if n % 97 == 5:
            item["supersedes"] = [f"m{n - 1}"]
        items.append(item)
    return items


def _queries(rng, count):
    topics, out = _topics(random.Random(18)), []
    for _ in range(count):
        text = _text(rng, topics, rng.choice(topics), rng.randint(1, 8))
        if rng.random() < 0.2:
            text += " " + rng.choice(["zzyzx", "kubernetesless", "qwertyuiop"])  # absent from the index
        out.append(query_terms(text))
    return [q for q in out if q]


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    """(the index) after an import, which builds its big segment's impact file, and edits that leave deleted
    documents in the big segment and add small segments without files."""
    root = tmp_path_factory.mktemp("topk") / "vault"
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
                           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
                           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(root.parent / "gitconfig")}.items():
            mp.setenv(key, value)
        vault = Vault.init(root)
        rng = random.Random(18)
        vault.import_many(_items(rng), source="test")
        index = Index(root, notice=lambda _: None)
        assert list(impact.folder(index.open()).glob("*.imp"))  # the sync that indexed the import built it
        for n in range(0, 60, 7):  # in new segments now; their old versions stay as deleted documents
            vault.update(f"m{n}", "kafka nginx redis rollback " * (n % 3 + 1), title=f"kafka {n}")
        for n in range(3, 40, 9):
            vault.forget(f"m{n}")
        vault.remember("kafka kafka kafka nginx", id="late", title="kafka nginx")
        ix = index.open()
        yield ix
        ix.close()


def exhaustive(view: View, docs: dict, words, limit, project=None, all_scopes=False, include_inactive=False):
    """[(id, score)]: every posting summed, as search.py did before pruning (and Whoosh's BM25F);
    `docs` maps each undeleted document to its stored fields."""
    reader = view.reader
    count = reader.doc_count_all()
    total: dict[int, float] = {}
    for word in words:
        for field in WORD_FIELDS:  # the concepts field is searched for a query's concepts, not its words
            boost = FIELD_BOOSTS[field]
            key = prefix(word) if field == PREFIXES else word  # the prefixes field holds words cut short
            if not key or (field, key) not in reader:
                continue
            idf = math.log(count / (reader.doc_frequency(field, key) + 1)) + 1
            avgfl = reader.field_length(field) / (count or 1) or 1
            postings = reader.postings(field, key)
            while postings.is_active():
                docnum, tf = postings.id(), postings.weight()
                fl = reader.doc_field_length(docnum, field) or 1
                share = idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * fl / avgfl))) * boost
                total[docnum] = total.get(docnum, 0.0) + share
                postings.next()
    shown = [(-s, d) for d, s in total.items() if visible(docs[d], project, all_scopes, include_inactive)]
    return [(docs[d]["id"], -s) for s, d in heapq.nsmallest(limit, shown)]



def _differences(ix, queries, limits=(GATHER, 5, 1), dense=False):
    """The queries whose pruned top (with `dense`: numpy's sum of every list, indexer/dense.py) differs from
    the exhaustive one in ids, order or score."""
    view = View(ix, dense=dense)
    docs = dict(view.reader.iter_docs())
    numbers = {doc["id"]: docnum for docnum, doc in docs.items()}
    holders = _holders(view.reader)
    scopes = [{"all_scopes": True}, {}, {"project": "alpha"}, {"project": "beta", "include_inactive": True}]
    wrong = []
    for n, words in enumerate(queries):
        scope, limit = scopes[n % len(scopes)], limits[n % len(limits)]
        want = exhaustive(view, docs, words, limit, **scope)
        also = [w for w in ALSO if w not in words]
        found = keyword_channel(view, words, also=also, limit=limit, **scope)
        got = [(doc["id"], score) for doc, score, _ in found]
        if [i for i, _ in got] != [i for i, _ in want] or any(abs(a - b) > 1e-9 for (_, a), (_, b) in zip(got, want)):
            wrong.append((words, scope, limit))
        for doc, _, matched in found:  # every word it holds is reported; in full where not only an alias has it
            docnum = numbers[doc["id"]]
            assert set(matched) == {w for w in words + also if any(docnum in holders(f, w) for f in EXACT_FIELDS)
                                    or w in words and prefix(w) and docnum in holders(PREFIXES, prefix(w))}
            assert all(matched[w] == 1.0 for w in matched
                       if any(docnum in holders(f, w) for f in ("title", "tags", "body")))
    return wrong


def _holders(reader):
    """(field, word) -> the documents holding it, read from Whoosh once."""
    cache = {}

    def holders(field, word) -> set[int]:
        if (field, word) not in cache:
            cache[field, word] = set(reader.postings(field, word).all_ids()) if (field, word) in reader else set()
        return cache[field, word]

    return holders


def test_the_index_has_what_pruning_must_handle(pruned):
    view = View(pruned)
    leaves = view.leaves()
    assert len(leaves) > 1 and leaves[0][2] is not None and any(f is None for _, _, f in leaves[1:])
    assert leaves[0][0].has_deletions()
    assert any(d in view.mask() for d in (offset + n for s, offset, f in leaves if f for n in s.deleted_docs_set))


@pytest.mark.parametrize("lookup_cost", [topk.LOOKUP_COST, 0])
def test_pruned_top_equals_the_full_sum(pruned, monkeypatch, lookup_cost):
    # At this size reading on is mostly cheaper than scoring candidates exactly; with lookups taken
    # as free, reading stops as soon as the top is certain, which is what must never drop a document.
    monkeypatch.setattr(topk, "LOOKUP_COST", lookup_cost)
    assert not _differences(pruned, _queries(random.Random(7), 100))


def test_the_numpy_sum_equals_the_full_sum(pruned):
    assert not _differences(pruned, _queries(random.Random(7), 100), dense=True)


def test_the_numpy_sum_gives_what_pruning_gives_to_the_last_bit(pruned):
    # Same scores, not close ones: a hybrid search (numpy loaded) and a keyword-only one rank alike.
    pure, dense = View(pruned), View(pruned, dense=True)
    scopes = [{"all_scopes": True}, {}, {"project": "alpha"}, {"project": "beta", "include_inactive": True}]
    for n, words in enumerate(_queries(random.Random(21), 80)):
        also = [w for w in ALSO if w not in words]
        got = [keyword_channel(v, words, also=also, **scopes[n % 4]) for v in (pure, dense)]
        assert [(d["id"], s, m) for d, s, m in got[0]] == [(d["id"], s, m) for d, s, m in got[1]]


def test_pruning_reads_less_than_everything(pruned, monkeypatch):
    # The point of it: the tails of common words' lists are left unread.
    monkeypatch.setattr(topk, "LOOKUP_COST", 0)
    view = View(pruned)
    read = []
    block = topk.Term.block

    def counted(self, at):
        found = block(self, at)
        read.append(len(found[2]))
        return found

    monkeypatch.setattr(topk.Term, "block", counted)
    every = 0
    for words in _queries(random.Random(5), 100):
        terms = [t for w in words for f in FIELD_BOOSTS if (t := view.term(f, w)).parts]
        every += sum(len(t) for t in terms)
        topk.top(terms, view.mask(all_scopes=True), 5, view.locate)
    assert sum(read) < every * 0.7


def test_the_equivalence_check_catches_a_dropped_top_document(pruned, monkeypatch):
    # Bounds trusted 30% beyond what they guarantee stop the reading too early: the check must notice.
    monkeypatch.setattr(topk, "LOOKUP_COST", 0)
    monkeypatch.setattr(topk, "EPS", -0.3)
    assert _differences(pruned, _queries(random.Random(7), 100))


@pytest.mark.parametrize("damage", ["truncated", "another segment's", "garbage"])
def test_a_damaged_or_foreign_impact_file_is_read_from_whoosh_instead(pruned, damage):
    segment = View(pruned).leaves()[0][0]
    path = impact.folder(pruned) / f"{impact.segment_id(segment)}.imp"
    data = path.read_bytes()
    other = data.replace(impact.segment_id(segment).encode(), b"MAIN_" + b"x" * (len(impact.segment_id(segment)) - 5))
    _replace(path, {"truncated": data[: len(data) // 2], "another segment's": other, "garbage": b"\0" * 4096}[damage])
    try:
        view = View(pruned)
        assert view.leaves()[0][2] is None
        assert not _differences(pruned, _queries(random.Random(9), 40))
    finally:
        _replace(path, data)


def _replace(path, data: bytes) -> None:
    # Never rewritten in place: other views of the module have the file mapped (build renames too).
    aside = path.with_suffix(".new")
    aside.write_bytes(data)
    os.replace(aside, path)


def test_without_impact_files_the_result_is_the_same(pruned, monkeypatch):
    monkeypatch.setattr(impact, "MIN_DOCS", 10**9)  # every segment read from Whoosh
    view = View(pruned)
    assert all(f is None for _, _, f in view.leaves())
    assert not _differences(pruned, _queries(random.Random(11), 60))


def test_every_segment_has_its_files_after_a_commit_and_build_removes_gone_ones(pruned, monkeypatch):
    where = impact.folder(pruned)
    leaves = [s for s, _ in pruned.reader().leaf_readers()]
    assert any(s.doc_count_all() < impact.MIN_DOCS for s in leaves)  # the edits' small segments
    assert {p.stem for p in where.glob("*.imp")} == {p.stem for p in where.glob("*.docs")} == \
        {impact.segment_id(s) for s in leaves}
    stale = where / "MAIN_gone.imp"
    stale.write_bytes(b"x")
    assert cold.build(pruned) == [] and not stale.exists()  # nothing left to write
    monkeypatch.setattr(impact, "MIN_DOCS", 1)
    view = View(pruned)
    assert all(f is not None for _, _, f in view.leaves())
    assert not _differences(pruned, _queries(random.Random(13), 60))


def test_an_impact_file_without_the_deleted_documents_is_written_again(pruned):
    """An earlier version walked a segment's postings without its deleted documents: Whoosh's frequencies,
    which count them, could not be read from such a file."""
    segment = max((s for s, _ in pruned.reader().leaf_readers()), key=lambda s: s.doc_count_all())
    assert segment.has_deletions()
    sid = impact.segment_id(segment)
    path = impact.folder(pruned) / f"{sid}.imp"
    _replace(path, b"")
    impact.write(_WithoutDeleted(segment), sid, path)
    found = impact.SegmentFile.open(path, sid, segment.doc_count_all())
    assert found is not None and not impact.complete(found, segment)
    assert cold.build(pruned) == [sid]
    found = impact.SegmentFile.open(path, sid, segment.doc_count_all())
    assert impact.complete(found, segment)
    for word in ("kafka", "redis", "rollback"):
        assert found.frequency("body", word) == segment.doc_frequency("body", word) > 0


class _WithoutDeleted:
    """A segment reader whose postings leave deleted documents out, as the earlier build read them."""

    def __init__(self, segment):
        self._segment = segment

    def __getattr__(self, name):
        if name == "_terms":
            raise AttributeError(name)
        return getattr(self._segment, name)


def test_doctor_builds_the_files_an_older_index_lacks(pruned):
    from hafiza.indexer.doctor import check_index
    from hafiza.vault.format.text import plural

    root = impact.folder(pruned).parent.parent
    for path in impact.folder(pruned).glob("*.imp"):
        path.unlink()  # as an index built before impact files existed
    every = {impact.segment_id(s) for s, _ in pruned.reader().leaf_readers()}
    check = check_index(Vault(root))
    assert check.level == "ok" and f"built {plural(len(every), 'keyword pruning file')}" in check.summary
    assert {p.stem for p in impact.folder(pruned).glob("*.imp")} == every
    assert "built" not in check_index(Vault(root)).summary  # once


def test_an_empty_index_has_no_segment_and_searches_to_nothing(vault):
    ix = Index(vault.root, notice=lambda _: None).open()
    assert cold.build(ix) == []
    assert keyword_channel(View(ix), ["deploy"]) == []
