"""Keyword recall read from hafiza's own files (indexer/cold.py) is recall through Whoosh, without Whoosh.

A real vault with several index segments (an import, then edits, forgets, a supersede and new memories,
which leave deleted documents behind), searched both ways: the same hits, order, scores and evidence. A
fresh process answers the cold hook without importing Whoosh, and falls back to it whenever the files do
not describe the index's newest generation.
"""

import json
import random
import subprocess
import sys

import pytest

from hafiza.indexer import cold
from hafiza.indexer.recall import FLOOR, SEARCH_FLOOR, Recall
from hafiza.vault.store import Vault

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


def test_a_write_not_yet_indexed_is_indexed_through_whoosh_then_read_from_the_files(segmented):
    segmented.remember("kafka timeout checkout gateway", id="newest", title="kafka gateway timeout")
    recall = Recall(segmented.root, files=True)
    first = recall.search("kafka gateway timeout", mode="keyword", limit=5)
    assert first[0].id == "newest" and recall.index.opened is not None  # the catch-up loaded Whoosh
    assert recall._view.ix is None  # and described the new generation, whose files the search then read
    assert [h.to_json(explain=True) for h in first] == \
        [h.to_json(explain=True) for h in Recall(segmented.root).search("kafka gateway timeout", limit=5)]
    again = Recall(segmented.root, files=True)
    assert [h.id for h in again.search("kafka gateway timeout", mode="keyword", limit=5)] == [h.id for h in first]
    assert again._view.ix is None  # the commit described its generation: the next process reads the files


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


def test_a_search_that_indexes_a_write_runs_no_whoosh_query(segmented):
    """A write's files are indexed by the next reader: by document number, not through Whoosh's query
    machinery (whoosh.query, whoosh.searching), which that search would otherwise import."""
    segmented.update("m1", "kafka gateway timeout after the upgrade", title="kafka gateway timeout")
    segmented.remember("kafka gateway timeout in billing", id="newest", title="kafka gateway billing")
    script = ("import json, sys; from pathlib import Path; from hafiza.indexer.recall import Recall; "
              "hits = Recall(Path(sys.argv[1]), files=True).search('kafka gateway timeout', limit=50); "
              "print(json.dumps([[h.id for h in hits], sorted(m for m in sys.modules if m.startswith("
              "('whoosh.query', 'whoosh.searching')))]))")
    ids, loaded = json.loads(subprocess.run([sys.executable, "-c", script, str(segmented.root)], check=True,
                                            capture_output=True, text=True).stdout)
    assert loaded == [] and {"m1", "newest"} <= set(ids[:5])
    assert ids.count("m1") == 1  # its old version was taken out
    assert ids == [h.id for h in Recall(segmented.root).search("kafka gateway timeout", limit=50)]
