"""The vector sidecar: incremental sync, damage detection, search."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading

import numpy as np
import pytest

from hafiza.indexer.embed import HashEmbedder
from hafiza.indexer.vectors import META, VECTORS, VectorStore, embedding_text, embedding_texts


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting how many texts it was asked to embed."""

    def __init__(self, dim: int = 64, version: str = "1"):
        super().__init__(dim)
        self.version = version
        self.embedded: list[str] = []

    def embed(self, texts):
        self.embedded += list(texts)
        return super().embed(texts)


TOPICS = ["deploy production main branch", "pnpm instead of npm", "database backup nightly",
          "rotate api secrets monthly", "client moved to izmir", "review pull requests friday"]


def items(n: int = 6, changed: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(id, content_hash, text) for `n` memories; `changed` replaces some texts."""
    out = []
    for i in range(n):
        id_ = f"m{i}"
        text = (changed or {}).get(id_, f"{TOPICS[i % len(TOPICS)]} note {i}")
        out.append((id_, hashlib.sha1(text.encode()).hexdigest()[:12], text))
    return out


def test_sync_embeds_only_new_and_changed_items(tmp_path):
    embedder = CountingEmbedder()
    store = VectorStore(tmp_path)
    assert store.sync(embedder, items()) == (6, 0)
    assert len(embedder.embedded) == 6

    assert store.sync(embedder, items()) == (0, 0)
    assert len(embedder.embedded) == 6

    fresh = VectorStore(tmp_path)  # another process, same files
    assert fresh.load(embedder.name, embedder.version, embedder.dim)
    changed = items(7, {"m2": "database backup hourly now"})
    assert fresh.sync(embedder, changed) == (2, 0)
    assert embedder.embedded[6:] == ["database backup hourly now", "deploy production main branch note 6"]


def test_sync_without_load_is_a_rebuild(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items())
    assert VectorStore(tmp_path).sync(embedder, items(3)) == (3, 0)
    assert len(embedder.embedded) == 9
    reread = VectorStore(tmp_path)
    assert reread.load(embedder.name, embedder.version, embedder.dim) and reread.ids == ["m0", "m1", "m2"]


def test_sync_drops_items_that_are_gone(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items())
    store = VectorStore(tmp_path)
    assert store.load(embedder.name, embedder.version, embedder.dim)
    assert store.sync(embedder, items(4)) == (0, 2)
    reread = VectorStore(tmp_path)
    assert reread.load(embedder.name, embedder.version, embedder.dim)
    assert sorted(reread.ids) == ["m0", "m1", "m2", "m3"]
    assert len(embedder.embedded) == 6


def test_rows_match_their_ids_after_reload(tmp_path):
    embedder = CountingEmbedder()
    data = items(6, {"m1": "ŞİFRE sıfırlama"})
    VectorStore(tmp_path).sync(embedder, data)
    store = VectorStore(tmp_path)
    assert store.load(embedder.name, embedder.version, embedder.dim)
    expected = embedder.embed([text for _, _, text in data])
    for (id_, _, _), vector in zip(data, expected):
        assert np.array_equal(store.matrix[store.ids.index(id_)], vector)


def test_progress_reports_batches(tmp_path):
    calls = []
    VectorStore(tmp_path).sync(CountingEmbedder(), items(70), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(32, 70), (64, 70), (70, 70)]


def test_damaged_vectors_are_rebuilt(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items())
    (tmp_path / VECTORS).write_bytes(b"\x93NUMPY garbage")
    store = VectorStore(tmp_path)
    assert not store.load(embedder.name, embedder.version, embedder.dim)
    assert len(store) == 0
    assert store.sync(embedder, items()) == (6, 0)
    assert VectorStore(tmp_path).load(embedder.name, embedder.version, embedder.dim)


def test_damaged_json_is_rebuilt(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items())
    (tmp_path / META).write_text('{"ids": ["m0"')
    assert not VectorStore(tmp_path).load(embedder.name, embedder.version, embedder.dim)


@pytest.mark.parametrize("damage", [
    {VECTORS: b""},                    # np.load raises EOFError on an empty file
    {META: b"[1, 2]"},                 # valid JSON, but not our object
    {META: b'"vectors"'},
])
def test_any_damaged_file_loads_empty(tmp_path, damage):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items())
    for name, data in damage.items():
        (tmp_path / name).write_bytes(data)
    store = VectorStore(tmp_path)
    assert not store.load(embedder.name, embedder.version, embedder.dim) and len(store) == 0


def test_rows_from_another_write_are_not_trusted(tmp_path):
    # A crash between the two renames leaves new rows beside the old json.
    embedder = CountingEmbedder()
    store = VectorStore(tmp_path)
    store.sync(embedder, items())
    old_json = (tmp_path / META).read_bytes()
    store.sync(embedder, items(6, {"m0": "completely different text"}))
    (tmp_path / META).write_bytes(old_json)
    assert not VectorStore(tmp_path).load(embedder.name, embedder.version, embedder.dim)


def test_another_embedder_version_or_dim_means_rebuild(tmp_path):
    VectorStore(tmp_path).sync(CountingEmbedder(version="1"), items())
    assert not VectorStore(tmp_path).load("hash", "2", 64)
    assert not VectorStore(tmp_path).load("hash", "1", 128)
    assert not VectorStore(tmp_path).load("usem3", "1", 64)
    newer = CountingEmbedder(version="2")
    assert VectorStore(tmp_path).sync(newer, items()) == (6, 0)
    assert json.loads((tmp_path / META).read_text())["version"] == "2"


def test_missing_files_load_empty(tmp_path):
    store = VectorStore(tmp_path / "nowhere")
    assert not store.load("hash", "1", 64)
    assert store.search(np.ones(64), 5) == []


def test_search_returns_nearest_first(tmp_path):
    embedder = CountingEmbedder()
    store = VectorStore(tmp_path)
    store.sync(embedder, items(12))
    query = embedder.embed(["database backup nightly"])[0]
    hits = store.search(query, 3)
    assert [id_ for id_, _ in hits][:2] in (["m2", "m8"], ["m8", "m2"])
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0 + 1e-6
    assert len(store.search(query, 50)) == 12


def test_readers_never_pair_rows_with_the_wrong_ids(tmp_path):
    embedder = CountingEmbedder()
    variants = [items(40), items(40, {f"m{i}": f"rewritten {i}" for i in range(0, 40, 3)})]
    truth = {(id_, h): vec for data in variants
             for (id_, h, _), vec in zip(data, embedder.embed([t for _, _, t in data]))}
    VectorStore(tmp_path).sync(embedder, variants[0])
    stop = threading.Event()

    def write():
        store = VectorStore(tmp_path)
        for n in range(60):
            store.sync(embedder, variants[n % 2])
        stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    loads = 0
    while not stop.is_set():
        store = VectorStore(tmp_path)
        if store.load(embedder.name, embedder.version, embedder.dim):
            loads += 1
            for row, key in enumerate(zip(store.ids, store.hashes)):
                assert np.array_equal(store.matrix[row], truth[key])
    writer.join()
    assert loads > 0


def test_embedding_text_joins_fields_and_cuts_the_body():
    text = embedding_text("Deploy only from main", ["canlıya çıkmak", "push to prod"],
                          ["deploy"], "word " * 300)
    lines = text.split("\n")
    assert lines[:3] == ["Deploy only from main", "canlıya çıkmak, push to prod", "deploy"]
    assert 450 <= len(lines[3]) <= 500 and lines[3].endswith("word")
    assert embedding_text("Title only") == "Title only"


def test_a_memory_scores_by_its_best_vector(tmp_path):
    embedder = CountingEmbedder()
    store = VectorStore(tmp_path)
    data = items(6)
    data[3] = ("m3", "h3", ("rotate api secrets monthly note 3", "pnpm lockfile conflicts after rebase"))
    assert store.sync(embedder, data) == (6, 0)
    query = embedder.embed(["pnpm lockfile conflicts after rebase"])[0]
    assert store.search(query, 1) == [("m3", pytest.approx(1.0, abs=1e-5))]
    assert len(store.search(query, 50)) == 6  # one answer per memory, not per vector


def test_several_vectors_survive_reload_and_change(tmp_path):
    embedder = CountingEmbedder()
    two = ("backup nightly", "restores tested monthly")
    VectorStore(tmp_path).sync(embedder, [("a", "1", two), ("b", "1", "pnpm only")])
    store = VectorStore(tmp_path)
    assert store.load(embedder.name, embedder.version, embedder.dim)
    assert store.ids == ["a", "b"] and store.counts == [2, 1] and store.matrix.shape == (3, embedder.dim)
    assert np.array_equal(store.matrix[:2], embedder.embed(list(two)))
    # b changes: a's rows are kept, b's replaced, and the rows stay with their memory
    assert store.sync(embedder, [("a", "1", two), ("b", "2", ("pnpm only", "npm is gone"))]) == (1, 0)
    reread = VectorStore(tmp_path)
    assert reread.load(embedder.name, embedder.version, embedder.dim)
    assert reread.ids == ["a", "b"] and reread.counts == [2, 2] and list(reread.starts) == [0, 2]
    assert np.array_equal(reread.matrix[:2], embedder.embed(list(two)))
    assert np.array_equal(reread.matrix[2:], embedder.embed(["pnpm only", "npm is gone"]))


def test_embedding_texts_add_the_body_alone():
    combined, body = embedding_texts("Deploy only from main", [], ["deploy"], "Feature branches go to staging.")
    assert combined == "Deploy only from main\ndeploy\nFeature branches go to staging."
    assert body == "Feature branches go to staging."
    assert embedding_texts("Title only") == ("Title only",)


def test_store_directory_can_be_copied(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path / "a").sync(embedder, items())
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert VectorStore(tmp_path / "b").load(embedder.name, embedder.version, embedder.dim)
