"""Keyword recall read from hafiza's own files (indexer/cold.py) is recall through Whoosh, without Whoosh.

A real vault with several index segments (an import, then edits, forgets, a supersede and new memories,
which leave deleted documents behind), searched both ways: the same hits, order, scores and evidence. A
fresh process answers the cold hook without importing Whoosh, and falls back to it whenever the files do
not describe the index's newest generation. Writes not yet indexed are ranked in memory as their commit
would index them (indexer/pending.py), with the same results as after that commit.
"""

import json
import random
import subprocess
import sys

import pytest

from conftest import edit_in_place
from hafiza.indexer import cold
from hafiza.indexer.recall import FLOOR, SEARCH_FLOOR, Recall
from hafiza.vault.store.vault import Vault

WORDS = ("deploy staging postgres redis pnpm docker kafka nginx terraform helm grafana sentry billing checkout "
         "gateway ankara izmir lockfile rollback migration backup cron webhook timeout latency cache replica "
         "failover certificate ingress queue worker retry invoice payment refund alert runbook incident "
         "yedek sunucu veritabanı kuyruk hata kesinti müşteri fatura ödeme").split()
QUERIES = ["kafka timeout in checkout", "redis cache eviction after deploy", "veritabanı yedek hatası",
           "nginx ingress certificate", "postgres failover replica lag", "fatura ödeme kuyruk", "pnpm lockfile",
           "webhook retry worker", "grafana alert runbook for billing", "ankara sunucu kesinti",
           "helm rollback terraform migration", "zzyzx nothing matches this"]


def _text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


@pytest.fixture
def segmented(vault):
    """A vault whose index has several segments and deleted documents, each with its files."""
    rng = random.Random(18)
    items = [{"id": f"m{n}", "title": _text(rng, 3), "text": _text(rng, rng.randint(5, 40)),
              "scope": rng.choice(["global", "global", "project:alpha", "project:beta"]),
              "tags": sorted(set(_text(rng, 2).split())), **({"aliases": [_text(rng, 3)]} if n % 9 == 0 else {})}
             for n in range(300)]
    vault.import_many(items, source="test")
    Recall(vault.root).search("warm up")  # indexes the import: one segment
    for n in range(0, 40, 6):
        vault.update(f"m{n}", "kafka timeout checkout " * (n % 3 + 1), title=f"kafka {n}")
        Recall(vault.root).search("warm up")  # a segment per write, and deleted documents in the first
    vault.forget("m7")
    vault.remember("redis cache eviction moved to the new cluster", id="m8b", title="redis cache eviction",
                   supersedes=["m8"])
    vault.remember("ödeme kuyruğu fatura hatası", id="late", title="fatura ödeme kuyruk")
    Recall(vault.root).search("warm up")
    return vault


def _searches(root, files: bool):
    recall = Recall(root, files=files)
    out = []
    for query in QUERIES:
        for options in (dict(limit=8, project="alpha", floor=FLOOR, context="kafka nginx"),
                        dict(limit=50, project="beta", floor=SEARCH_FLOOR),
                        dict(limit=50, all_scopes=True, include_inactive=True)):
            out.append([h.to_json(explain=True) for h in recall.search(query, mode="keyword", **options)])
    return recall, out


def test_recall_from_the_files_is_recall_through_whoosh(segmented):
    from hafiza.indexer.index import Index

    ix = Index(segmented.root).open()
    leaves = [s for s, _ in ix.reader().leaf_readers()]
    assert len(leaves) > 1 and any(s.has_deletions() for s in leaves)
    whoosh, want = _searches(segmented.root, files=False)
    files, got = _searches(segmented.root, files=True)
    assert whoosh._view.ix is not None and files._view.ix is None  # each went its own way
    assert sum(map(len, want)) > 100 and any(not hits for hits in want)  # hits, and silence where due
    assert [[h["id"] for h in hits] for hits in got] == [[h["id"] for h in hits] for hits in want]
    for a, b in zip((h for hits in want for h in hits), (h for hits in got for h in hits)):
        assert a["score"] == pytest.approx(b["score"], rel=1e-12) and a["parts"].keys() == b["parts"].keys()
        assert all(a["parts"][k] == pytest.approx(b["parts"][k], rel=1e-12) for k in a["parts"])
        assert a == {**b, "score": a["score"], "parts": a["parts"]}  # titles, snippets, paths, labels


def test_a_fresh_hook_recalls_without_importing_whoosh(segmented):
    script = ("import json, sys; from pathlib import Path; from hafiza.hooks.service import cold; "
              "from hafiza.indexer.config import Settings; "
              "reply = cold(Path(sys.argv[1]), {'op': 'recall', 'query': sys.argv[2]}, Settings()); "
              "print(json.dumps([[h['id'] for h in reply['hits']], sorted(m for m in sys.modules if 'whoosh' in m)]))")
    query = "müşteri fatura ödeme kuyruğu hatası"
    ids, whoosh = json.loads(subprocess.run([sys.executable, "-c", script, str(segmented.root), query], check=True,
                                            capture_output=True, text=True).stdout)
    assert ids and whoosh == []
    assert ids == [h.id for h in Recall(segmented.root).search(query, limit=8, floor=FLOOR)]


def _writes(vault):
    """Writes of every kind a search meets before they are indexed: new, edited, archived, superseded, a fact
    note, and a file a hand then broke in place (still named by the change log)."""
    vault.remember("kafka timeout checkout gateway", id="newest", title="kafka gateway timeout", tags=["kafka"])
    vault.remember(" ".join(WORDS[:57]), id="long")  # a length Whoosh stores rounded (to 60)
    vault.update("m1", "kafka gateway timeout after the upgrade", title="kafka gateway timeout")
    vault.forget("m2")
    vault.remember("postgres failover replica lag moved", id="m4b", title="postgres failover", supersedes=["m4"])
    vault.set_fact("Kafka Cluster", "timeout", "30 s", kind="service")
    vault.update("m5", "redis cache eviction after deploy")
    edit_in_place(vault.memories_dir / "m5.md", "title:", "title: [")


def test_writes_not_yet_indexed_are_ranked_in_memory_as_their_commit_ranks_them(segmented):
    """A search right after writes does not commit them: it ranks them in memory (indexer/pending.py), with
    the same hits, order, scores and evidence as a search after their commit, and the same unparsable files."""
    from hafiza.indexer.index import Index

    _writes(segmented)
    index_dir = segmented.root / ".hafiza" / "index"
    generation = cold.latest_generation(index_dir)
    files, got = _searches(segmented.root, files=True)
    assert files.index.opened is None and files._view.ix is None  # no Whoosh: the index's files, and the writes
    assert files._view.reader.segment(-1).sid == "pending" and cold.latest_generation(index_dir) == generation
    assert any("newest" in [h["id"] for h in hits] for hits in got)
    unparsable = files.index.unparsable()
    assert list(unparsable) == ["m5.md"]
    whoosh, want = _searches(segmented.root, files=False)  # commits the writes first
    assert cold.latest_generation(index_dir) > generation
    assert got == want and unparsable == whoosh.index.unparsable()
    assert _searches(segmented.root, files=True)[1] == want  # and from the files of that commit
    assert Index(segmented.root).preview(64).changes == []


def test_the_view_of_pending_writes_is_the_index_their_commit_makes(segmented):
    """Counts, frequencies, field lengths, stored fields and postings of the in-memory view are those of the
    files the commit then writes, for every word the written documents hold."""
    from hafiza.indexer import impact, pending
    from hafiza.indexer.index import Index
    from hafiza.indexer.schema import FIELD_BOOSTS

    _writes(segmented)
    index = Index(segmented.root)
    preview = index.preview(pending.LIMIT)
    view = pending.overlay(cold.open_files(index.dir), preview)
    assert view is not None and index.unmoved(preview)
    # Committed by another process, as a later search or the warm process commits them: its order of the files
    # must be the view's, whatever the order of a set of names there.
    subprocess.run([sys.executable, "-c", "import sys; from hafiza.indexer.index import Index; "
                    "Index(sys.argv[1]).sync(quick=True)", str(segmented.root)], check=True)
    assert not index.unmoved(preview)  # a commit made since is noticed: the view is not used
    after = cold.open_files(index.dir)
    assert after.segment_count() == view.segment_count()
    assert (after.doc_count_all(), after.doc_count()) == (view.doc_count_all(), view.doc_count())
    fields = (*FIELD_BOOSTS, *impact.MASK_FIELDS)
    assert all(after.field_length(f) == view.field_length(f) and after.lexicon(f) == view.lexicon(f) for f in fields)
    for (a, _, a_file), (b, _, b_file) in zip(after.leaves(), view.leaves()):
        assert a.docs == b.docs and a.deleted_docs_set == b.deleted_docs_set
    new, written = view.segment(-1).file, after.segment(-1).file
    words = {(f, w) for f in fields for counts in new.counts[f] for w in counts}
    assert len(words) > 50
    for field, word in words:
        assert view.doc_frequency(field, word) == after.doc_frequency(field, word)
        a, b = written.get(field, word), new.get(field, word)
        assert [list(x) for x in (a.tf, a.fl, a.starts, a.ordered, a.docs, a.cls)] == \
            [list(x) for x in (b.tf, b.fl, b.starts, b.ordered, b.docs, b.cls)], (field, word)
    assert [after.stored_fields(n) for n in range(after.doc_count_all())] == \
        [view.stored_fields(n) for n in range(view.doc_count_all())]


def test_a_search_commits_first_where_the_commit_would_merge_segments(segmented):
    """A commit that merges segments drops deleted documents from the counts: no view in memory can be that
    commit's, so the search commits (through Whoosh) and reads the files it leaves."""
    for n in range(8):
        if cold.open_files(segmented.root / ".hafiza" / "index").merges():
            break
        segmented.remember(f"kafka note {n}", id=f"extra{n}", title=f"kafka note {n}")
        Recall(segmented.root).search("warm up")  # one small segment each
    assert cold.open_files(segmented.root / ".hafiza" / "index").merges()
    segmented.remember("kafka gateway timeout again", id="newest", title="kafka gateway timeout")
    recall = Recall(segmented.root, files=True)
    hits = [h.to_json(explain=True) for h in recall.search("kafka gateway timeout", mode="keyword", limit=20)]
    assert recall.index.opened is not None and recall._view.ix is None  # committed, then read from the files
    assert hits[0]["id"] == "newest"
    assert hits == [h.to_json(explain=True) for h in Recall(segmented.root).search("kafka gateway timeout", limit=20)]


def test_past_the_limit_the_writes_are_committed_before_the_search(segmented, monkeypatch):
    from hafiza.indexer import pending

    monkeypatch.setattr(pending, "LIMIT", 2)
    for n in range(3):
        segmented.remember(f"kafka gateway note {n}", id=f"newest{n}", title="kafka gateway timeout")
    recall = Recall(segmented.root, files=True)
    found = [h.id for h in recall.search("kafka gateway timeout", mode="keyword", limit=5)]
    assert recall.index.opened is not None and {"newest0", "newest1", "newest2"} <= set(found)


def _as_an_earlier_version_left_it(root):
    """The sidecar as the version before pending.py left it: .docs files without the id table, segments.json
    without the length table, .hafiza/synced without the index generation."""
    where = root / ".hafiza" / "impact"
    for path in where.glob("*.docs"):
        data = path.read_bytes()
        n, name = memoryview(data)[12:20].cast("I")
        offsets = cold._aligned(20 + name)
        tables = offsets + 8 * (n + 1)
        path.write_bytes(cold.MAGIC_1 + data[8:tables] + data[cold._aligned(cold._aligned(tables + 4 * n) + 4 * n):])
    summary = json.loads((where / cold.SUMMARY).read_text())
    del summary["length_bytes"]
    (where / cold.SUMMARY).write_text(json.dumps({**summary, "version": 1}))
    synced = root / ".hafiza" / "synced"
    synced.write_text(json.dumps(json.loads(synced.read_text())[:2]))


def test_an_index_an_earlier_version_made_is_read_then_caught_up_through_whoosh_once(segmented):
    """Its files are read as they are while the index is in step. They cannot take pending writes (no id
    table, no length table, no generation to vouch for): the first search after a write commits it, and
    that commit writes them anew; the next write is ranked in memory."""
    _as_an_earlier_version_left_it(segmented.root)
    recall, got = _searches(segmented.root, files=True)
    assert recall._view.ix is None and recall.index.opened is None
    assert got == _searches(segmented.root, files=False)[1]
    segmented.remember("zebrafish gateway", id="newest", title="zebrafish gateway")
    first = Recall(segmented.root, files=True)
    assert [h.id for h in first.search("zebrafish", limit=3)] == ["newest"] and first.index.opened is not None
    segmented.remember("zebrafish gateway twice", id="newer", title="zebrafish gateway")
    second = Recall(segmented.root, files=True)
    assert {h.id for h in second.search("zebrafish", limit=3)} == {"newest", "newer"}
    assert second.index.opened is None and second._view.reader.segment(-1).sid == "pending"


def test_a_file_made_by_hand_is_found_through_a_full_comparison_not_the_change_log(segmented):
    from hafiza.indexer.index import Index

    segmented.remember("zebrafish gateway", id="newest", title="zebrafish gateway")
    (segmented.memories_dir / "by-hand.md").write_text("---\nid: by-hand\ntitle: zebrafish by hand\n---\nkafka\n")
    assert Index(segmented.root).preview(64) is None
    assert {h.id for h in Recall(segmented.root, files=True).search("zebrafish", limit=5)} == {"newest", "by-hand"}


@pytest.mark.parametrize("damage", ["no summary", "an older generation", "a truncated docs file",
                                    "a missing impact file"])
def test_files_that_do_not_describe_the_index_leave_recall_to_whoosh(segmented, damage):
    where = segmented.root / ".hafiza" / "impact"
    summary = json.loads((where / cold.SUMMARY).read_text())
    sid = summary["segments"][0]["id"]
    if damage == "no summary":
        (where / cold.SUMMARY).unlink()
    elif damage == "an older generation":
        (where / cold.SUMMARY).write_text(json.dumps({**summary, "generation": summary["generation"] - 1}))
    elif damage == "a truncated docs file":
        data = (where / f"{sid}.docs").read_bytes()
        (where / f"{sid}.docs").write_bytes(data[: len(data) // 2])
    else:
        (where / f"{sid}.imp").unlink()
    _, want = _searches(segmented.root, files=False)
    recall, got = _searches(segmented.root, files=True)
    assert recall._view.ix is not None and got == want


def test_a_fresh_search_after_writes_loads_neither_whoosh_nor_pyyaml(segmented):
    """The writes are ranked in memory (pending.py) and their files read without PyYAML (vault/format/frontmatter.py)."""
    segmented.update("m1", "kafka gateway timeout after the upgrade", title="kafka gateway timeout")
    segmented.remember("kafka gateway timeout in billing", id="newest", title="kafka gateway billing")
    script = ("import json, sys; from pathlib import Path; from hafiza.indexer.recall import Recall; "
              "hits = Recall(Path(sys.argv[1]), files=True).search('kafka gateway timeout', limit=50); "
              "print(json.dumps([[h.id for h in hits], sorted(m for m in sys.modules if m.startswith("
              "('whoosh', 'yaml', 'dataclasses')))]))")
    ids, loaded = json.loads(subprocess.run([sys.executable, "-c", script, str(segmented.root)], check=True,
                                            capture_output=True, text=True).stdout)
    assert loaded == [] and {"m1", "newest"} <= set(ids[:5])
    assert ids.count("m1") == 1  # its old version was taken out
    assert ids == [h.id for h in Recall(segmented.root).search("kafka gateway timeout", limit=50)]


def test_a_full_sync_rewrites_a_segment_that_is_mostly_deleted_documents(segmented, monkeypatch):
    from hafiza.indexer import index as index_module
    from hafiza.indexer.index import Index

    for n in (n for n in range(1, 300) if n % 6 and n not in (7, 8)):  # most of the import's segment replaced
        segmented.update(f"m{n}", f"kafka timeout checkout number {n}", title=f"kafka edited {n}")
    Index(segmented.root).sync()
    segments = Index(segmented.root).open()._segments()
    live = sum(s.doc_count() for s in segments)
    assert any(s.deleted_count() * 2 > s.doc_count_all() >= 300 for s in segments)

    monkeypatch.setattr(index_module, "COMPACT_MIN_DOCS", 100)
    Index(segmented.root).sync()  # a full comparison, as doctor and a warm process make
    segments = Index(segmented.root).open()._segments()
    assert not any(s.deleted_count() * 2 > s.doc_count_all() >= 100 for s in segments)
    assert sum(s.doc_count() for s in segments) == live
    # Scores move (Whoosh's counts no longer hold the deleted versions); the files a fresh process reads
    # rank as Whoosh does, and every memory is still found.
    assert _searches(segmented.root, files=True)[1] == _searches(segmented.root, files=False)[1]
    recall = Recall(segmented.root)
    for n in (41, 127, 299):
        assert recall.search(f"checkout number {n}", mode="keyword", all_scopes=True)[0].id == f"m{n}"


@pytest.mark.parametrize("sizes", [[40, 1, 1, 1, 1], [40, 3, 2, 2, 1, 1], [200, 9, 8, 1, 1, 1, 1], [5, 5, 5, 5, 5],
                                   [1, 1, 1], [30, 12, 7, 2, 2, 1]])
def test_the_merge_policy_copied_from_whoosh_merges_what_whoosh_merges(tmp_path, sizes):
    """cold.merged copies Whoosh's MERGE_SMALL (a search that has not loaded Whoosh predicts a commit's merge by
    it: pending.py): the same index committed once with each policy keeps segments of the same sizes."""
    import shutil

    from whoosh import fields, index, writing

    from hafiza.indexer.index import _merge_small

    folder = tmp_path / "ix"
    folder.mkdir()
    ix = index.create_in(folder, fields.Schema(id=fields.ID(stored=True, unique=True)))
    for n, size in enumerate(sizes):
        writer = ix.writer()
        for k in range(size):
            writer.add_document(id=f"{n}-{k}")
        writer.commit(mergetype=writing.NO_MERGE)
    kept = []
    for policy in (writing.MERGE_SMALL, _merge_small):
        copy = tmp_path / f"ix-{len(kept)}"
        shutil.copytree(folder, copy)
        other = index.open_dir(copy)
        writer = other.writer()
        writer.add_document(id="new")
        writer.commit(mergetype=policy)
        kept.append(sorted(s.doc_count_all() for s in index.open_dir(copy)._segments()))
    assert kept[0] == kept[1]
    assert len(ix._segments()) == len(sizes)
