"""The warm process's memory: its documents as columns (indexer/columns.py) and the vectors' check that
reads only the files that changed (VectorStore sources, refresh.embedding_items)."""

import json
import os
import subprocess
import sys
import time

import pytest

from hafiza.hooks import wire
from hafiza.indexer.embed import HashEmbedder
from hafiza.indexer.index import Index
from hafiza.indexer.recall import FLOOR, Recall
from hafiza.indexer.refresh import embedding_items, refresh_all, sync_vectors
from hafiza.indexer.vectors import META, VECTORS, VectorStore

QUERIES = ["production deploy from which branch", "pnpm install", "staging server port", "kafka topics",
           "who leads the backend", "filler topic number 7", "redis cache ttl", "deploy", "port 8443 logs",
           "the release train leaves on thursdays", "npm"]


@pytest.fixture
def varied(vault):
    """Memories with every kind of stored field a ranking reads: types, project scopes, aliases, tags, usage,
    a supersession, a fact note, and filler."""
    vault.import_many([
        {"id": "deploy", "title": "Production deploys only from main", "type": "rule", "tags": ["deploy"],
         "text": "Deploy to production only from main after CI is green."},
        {"id": "pnpm", "title": "Paket yöneticisi pnpm", "aliases": ["which package manager do we use"],
         "text": "Frontend'de pnpm kullanıyoruz; npm install çalıştırma."},
        {"id": "staging", "title": "Staging server", "scope": "project:shop",
         "text": "The staging server is stg-ist-2, port 8443; logs are in Loki."},
        {"id": "lead", "title": "Ayşe, backend lead", "type": "identity", "text": "Ayşe is the backend lead."},
        {"id": "redis-old", "title": "Redis cache TTL", "text": "The Redis cache TTL is 5 minutes."},
        {"id": "release", "text": "The release train leaves on Thursdays at noon."},  # title made from the text
    ] + [{"text": f"Filler note {n} about topic number {n} and the deploy port.", "title": f"Filler {n}"}
         for n in range(30)], source="test")
    vault.remember("The Redis cache TTL is 15 minutes since the outage.", title="Redis cache TTL, now",
                   id="redis-new", supersedes=["redis-old"])
    vault.set_fact("shop", "staging port", "8443")
    vault.record_use(["deploy", "pnpm"])
    vault.fold()
    refresh_all(vault.root, embedder=HashEmbedder())
    return vault


def _key() -> tuple:
    embedder = HashEmbedder()
    return embedder.name, embedder.version, embedder.dim


def _hits(recall, mode, **options):
    return [[h.to_json(explain=True) for h in recall.search(q, mode=mode, floor=FLOOR, **options)] for q in QUERIES]


@pytest.mark.parametrize("mode", ["keyword", "meaning", "hybrid"])
def test_a_warm_recall_finds_what_a_cold_one_finds_field_for_field(varied, mode):
    warm = Recall(varied.root, HashEmbedder())
    warm.prepare()
    for options in ({}, {"project": "shop"}, {"all_scopes": True, "include_inactive": True}):
        cold = _hits(Recall(varied.root, HashEmbedder()), mode, **options)
        assert any(cold), options
        assert _hits(warm, mode, **options) == cold, options
    assert warm.view()._docs == {}  # no document kept whole: columns only


def test_a_row_reads_as_the_stored_document_does(varied):
    view = Recall(varied.root).view()
    view.load_all()
    stored = dict(view.reader.iter_docs())
    assert len(stored) > 35
    for docnum, doc in stored.items():
        row = view.doc(docnum)
        for key in [*doc, "verified", "last_used", "no-such-field"]:
            assert row.get(key, "absent") == doc.get(key, "absent"), (docnum, key)
            assert (key in row) == (key in doc)
            if key not in doc:
                with pytest.raises(KeyError):
                    row[key]
        assert type(row["shown"]) is type(doc["shown"])  # 1 stays 1, not True from another document
        assert view.doc_by_id(doc["id"])["title"] == doc["title"]
    assert view.doc_by_id("no-such-memory") is None


def test_the_vectors_check_reads_only_the_documents_whose_file_changed(varied):
    index = Index(varied.root)
    meta = json.loads((index.sidecar / META).read_text())
    docs = {d["id"]: d for d in index.stored()}
    assert meta["sources"] == [docs[i]["hash"] for i in meta["ids"]]  # what each memory's vectors came from
    varied.rewrite("lead", "Ayşe is the backend lead; she also owns the payments service.")
    recall = Recall(varied.root, HashEmbedder())
    recall.prepare()
    view = recall.view(sync=False)
    read = []

    def reading(listing):
        for id_, source, doc in listing:
            yield id_, source, (lambda doc=doc, id_=id_: read.append(id_) or doc())

    store = VectorStore(index.sidecar)
    assert store.load(*_key())
    assert store.sync(HashEmbedder(), embedding_items(index, store, reading(view.sources()))) == (1, 0)
    assert read == ["lead"]
    assert store.stale(list(embedding_items(Index(varied.root)))) == []  # the full check agrees


def test_sources_of_an_earlier_sidecar_are_filled_in_without_rewriting_the_rows(varied):
    sidecar = varied.root / ".hafiza"
    meta = json.loads((sidecar / META).read_text())
    for key in ("sources", "texts"):
        del meta[key]
    (sidecar / META).write_text(json.dumps(meta))
    rows = os.stat(sidecar / VECTORS)
    index = Index(varied.root)
    assert sync_vectors(index, HashEmbedder()) == (0, 0)
    after = json.loads((sidecar / META).read_text())
    assert after["sources"] == [d["hash"] for d in sorted(index.stored(), key=lambda d: after["ids"].index(d["id"]))]
    assert (os.stat(sidecar / VECTORS).st_ino, os.stat(sidecar / VECTORS).st_mtime_ns) == (rows.st_ino, rows.st_mtime_ns)
    # Sources of another version of the texts are not trusted: every memory's texts are made to be checked.
    after["texts"] = -1
    (sidecar / META).write_text(json.dumps(after))
    store = VectorStore(sidecar)
    assert store.load(*_key())
    assert all(texts is not None for _, _, texts, _ in embedding_items(index, store))


def test_the_warm_process_embeds_a_hand_edit_made_before_it_started(varied):
    path = varied.get("lead").path
    path.write_text(path.read_text(encoding="utf-8").replace("Ayşe is the backend lead.",
                                                            "Ayşe is the backend lead and owns the payments ledger."),
                    encoding="utf-8")
    meta = varied.root / ".hafiza" / META

    def embedded(mem_id: str) -> str:
        found = json.loads(meta.read_text())
        return found["hashes"][found["ids"].index(mem_id)]

    before = embedded("lead")
    env = {**os.environ, "HAFIZA_EMBEDDER": "hash"}
    subprocess.Popen([sys.executable, "-m", "hafiza.hooks.daemon", str(varied.root)], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while wire.ask(varied.root, {"op": "ping"}) is None:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        while embedded("lead") == before:  # its first full pass, a few seconds after it is ready
            assert time.monotonic() < deadline
            time.sleep(0.5)
        reply = wire.ask(varied.root, {"op": "recall", "query": "payments ledger", "mode": "meaning",
                                       "all_scopes": True})
        assert reply["hits"][0]["id"] == "lead"
        index = Index(varied.root)
        store = VectorStore(index.sidecar)
        assert store.load(*_key()) and store.stale(list(embedding_items(index))) == []
        found = json.loads(meta.read_text())
        assert found["sources"] == [d["hash"] for d in sorted(index.stored(), key=lambda d: found["ids"].index(d["id"]))]
    finally:
        wire.ask(varied.root, {"op": "stop"})
