"""The vector sidecar: incremental sync, damage detection, search."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import zlib

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


def _close(rows, expected) -> bool:
    """Stored rows are Q15: each component within half of 1/32767 of the embedder's."""
    return np.allclose(rows, expected, rtol=0, atol=2e-5)


def _overwrite(path, data: bytes) -> None:
    """Damage a sidecar file the way a person would: the rows are written read-only, so make it writable first."""
    path.chmod(0o600)
    path.write_bytes(data)


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
        row = store.ids.index(id_)
        assert _close(store.rows(row, row + 1)[0], vector)


def test_progress_reports_batches(tmp_path):
    calls = []
    VectorStore(tmp_path).sync(CountingEmbedder(), items(70), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 70), (32, 70), (64, 70), (70, 70)]  # 0 first: the first batch loads the model


def test_damaged_vectors_are_rebuilt(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items())
    _overwrite(tmp_path / VECTORS, b"\x93NUMPY garbage")
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
        _overwrite(tmp_path / name, data)
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
                assert _close(store.rows(row, row + 1)[0], truth[key])
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
    assert _close(store.rows(0, 2), embedder.embed(list(two)))
    # b changes: a's rows are kept, b's replaced, and the rows stay with their memory
    assert store.sync(embedder, [("a", "1", two), ("b", "2", ("pnpm only", "npm is gone"))]) == (1, 0)
    reread = VectorStore(tmp_path)
    assert reread.load(embedder.name, embedder.version, embedder.dim)
    assert reread.ids == ["a", "b"] and reread.counts == [2, 2] and list(reread.starts) == [0, 2]
    assert _close(reread.rows(0, 2), embedder.embed(list(two)))
    assert _close(reread.rows(2), embedder.embed(["pnpm only", "npm is gone"]))


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


# ------------------------------------------------- 16-bit rows, mapped read-only


class RandomEmbedder:
    """A real Embedder of USE's size without the model: each text its own seeded Gaussian direction."""

    name, version = "random", "1"

    def __init__(self, dim: int = 512):
        self.dim = dim

    def embed(self, texts):
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(out, texts):
            row[:] = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _random_items(n: int, changed: int = -1) -> list[tuple[str, str, str]]:
    return [(f"m{i}", "changed" if i == changed else "h", f"memory {i}" + (" changed" if i == changed else ""))
            for i in range(n)]


def _in_subprocess(script: str, *args) -> dict:
    """Run `script` in a fresh interpreter (its memory is its own; a crash is a result, not pytest's end)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    return json.loads(out.stdout.splitlines()[-1])


def test_loaded_rows_are_a_read_only_map_of_a_16_bit_file(tmp_path):
    embedder = RandomEmbedder(64)
    VectorStore(tmp_path).sync(embedder, _random_items(10))
    store = VectorStore(tmp_path)
    assert store.load(embedder.name, embedder.version, embedder.dim)
    assert store.matrix.dtype == np.int16 and not store.matrix.flags.writeable and not store.matrix.flags.owndata
    assert (tmp_path / VECTORS).stat().st_size == 128 + 10 * 64 * 2  # the .npy header, then 2 bytes a component
    assert not (tmp_path / VECTORS).stat().st_mode & 0o222  # read-only: a `cp` over it fails instead of truncating
    if os.path.exists("/proc/self/maps"):
        with open("/proc/self/maps") as fh:
            assert any(line.rstrip().endswith(str(tmp_path / VECTORS)) for line in fh)


def test_16_bit_rows_keep_cosines_and_rankings(tmp_path):
    embedder = RandomEmbedder()
    data = [(f"m{i}", "h", (f"memory {i}", f"memory {i} body")) for i in range(300)]
    store = VectorStore(tmp_path)
    store.sync(embedder, data)
    exact = embedder.embed([text for _, _, texts in data for text in texts])
    assert _close(store.rows(), exact)
    for n in range(40):
        query = embedder.embed([f"query {n}"])[0]
        best = (exact @ query).reshape(-1, 2).max(axis=1)
        found = dict(store.search(query, 300))
        assert max(abs(found[f"m{i}"] - best[i]) for i in range(300)) < 1e-4
        order = np.argsort(-best, kind="stable")
        gaps = np.diff(best[order])
        ranked = [id_ for id_, _ in store.search(query, 300)]
        # the same order, but for neighbours closer than the rounding can tell apart
        assert all(ranked[j] == f"m{order[j]}" or min(abs(gaps[max(j - 1, 0):j + 1])) < 2e-4 for j in range(300))


def test_a_float32_sidecar_of_format_2_is_converted_not_reembedded(tmp_path):
    embedder = CountingEmbedder()
    data = items(6)
    rows = HashEmbedder(embedder.dim).embed([text for _, _, text in data])
    np.save(tmp_path / VECTORS, rows)  # what format 2 wrote: float32 rows, read whole into memory
    (tmp_path / META).write_text(json.dumps({
        "format": 2, "embedder": embedder.name, "version": embedder.version, "dim": embedder.dim, "rows": 6,
        "crc32": zlib.crc32(rows.tobytes()), "ids": [i for i, _, _ in data], "hashes": [h for _, h, _ in data],
        "counts": [1] * 6}))
    notices = []
    store = VectorStore(tmp_path, notice=notices.append)
    assert store.load(embedder.name, embedder.version, embedder.dim)
    assert store.upgraded_from == 2 and "float32 vectors of an earlier hafiza (format 2)" in notices[0]
    assert _close(store.rows(), rows) and store.search(rows[2], 1)[0][0] == "m2"
    assert store.sync(embedder, data) == (0, 0) and embedder.embedded == []  # stored again, not embedded again
    assert json.loads((tmp_path / META).read_text())["format"] == 3
    assert np.load(tmp_path / VECTORS).dtype == np.int16
    notices.clear()
    again = VectorStore(tmp_path, notice=notices.append)
    assert again.load(embedder.name, embedder.version, embedder.dim) and again.upgraded_from is None and not notices


def test_a_damaged_format_2_sidecar_is_rebuilt(tmp_path):
    rows = HashEmbedder(64).embed(["a", "b"])
    np.save(tmp_path / VECTORS, rows)
    (tmp_path / META).write_text(json.dumps({"format": 2, "embedder": "hash", "version": "1", "dim": 64, "rows": 2,
                                              "crc32": zlib.crc32(rows.tobytes()) ^ 1, "ids": ["a", "b"],
                                              "hashes": ["1", "2"], "counts": [1, 1]}))
    assert not VectorStore(tmp_path).load("hash", "1", 64)


def test_a_reader_keeps_its_map_through_writes(tmp_path):
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items(12))
    reader = VectorStore(tmp_path)
    assert reader.load(embedder.name, embedder.version, embedder.dim)
    query = embedder.embed(["database backup nightly"])[0]
    before = reader.search(query, 12)
    writer = VectorStore(tmp_path)
    assert writer.load(embedder.name, embedder.version, embedder.dim)
    for n in range(5):  # each write renames a new file over the one the reader has mapped
        writer.sync(embedder, items(12, {"m2": f"rewritten {n}", "m8": f"rewritten {n}"}))
    assert reader.search(query, 12) == before  # its rows, still paired with its ids
    fresh = VectorStore(tmp_path)
    assert fresh.load(embedder.name, embedder.version, embedder.dim)
    assert dict(fresh.search(query, 12))["m2"] < 0.1 < dict(before)["m2"]  # the writes' rows


def test_rows_rewritten_in_place_are_reloaded_not_touched(tmp_path):
    # Touching a mapped page past a truncated end is SIGBUS: the process would die, not raise.
    embedder = CountingEmbedder()
    VectorStore(tmp_path).sync(embedder, items(12))
    found = _in_subprocess("""
        import json, os, sys
        from hafiza.indexer.embed import HashEmbedder
        from hafiza.indexer.vectors import VECTORS, VectorStore
        folder = sys.argv[1]
        path = os.path.join(folder, VECTORS)
        store = VectorStore(folder)
        assert store.load("hash", "1", 64)
        query = HashEmbedder(64).embed(["database backup nightly"])[0]
        out = {"before": store.search(query, 3)}
        original = open(path, "rb").read()
        os.chmod(path, 0o600)

        def rewrite(data):
            with open(path, "r+b") as fh:  # the same inode: what `cp` over it or an editor does
                fh.truncate(len(data))
                fh.write(data)
            os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 10**9))  # a write in the same tick still counts

        for name, data in [("empty", b""), ("halved", original[:len(original) // 2]), ("reversed", original[::-1])]:
            rewrite(original)
            assert store.load("hash", "1", 64) and store.search(query, 3) == out["before"]
            rewrite(data)
            out[name] = [store.search(query, 3), len(store)]
        rewrite(original)
        out["restored"] = [store.search(query, 3), len(store)]  # empty until loaded again (Recall: when the json changes)
        assert store.load("hash", "1", 64)
        out["reloaded"] = [store.search(query, 3), len(store)]
        print(json.dumps(out))
    """, tmp_path)
    assert [id_ for id_, _ in found["before"]][:2] in (["m2", "m8"], ["m8", "m2"])
    assert found["empty"] == found["halved"] == found["reversed"] == [[], 0]  # keyword search answers alone
    assert found["restored"] == [[], 0] and found["reloaded"] == [found["before"], 12]


_FOOTPRINT = """
    import json, sys
    import numpy as np
    from hafiza.indexer.vectors import VectorStore

    class RandomEmbedder:
        name, version, dim = "random", "1", 512

        def embed(self, texts):
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for row, text in zip(out, texts):
                row[:] = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dim)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    def rss():
        fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
        return {k: int(fields[k].split()[0]) * 1024 for k in ("RssAnon", "RssFile", "VmHWM")}

    folder, n = sys.argv[1], int(sys.argv[2])
    query = np.ones(512, dtype=np.float32)
    items = [(f"m{i}", "changed" if i == 7 else "h", f"memory {i}" + (" changed" if i == 7 else "")) for i in range(n)]
    out = {"start": rss()}
    warm = VectorStore(folder)  # the warm process's store
    assert warm.load("random", "1", 512)
    out["loaded"] = rss()
    for _ in range(3):
        warm.search(query, 10)
    out["searched"] = rss()
    writer = VectorStore(folder)  # the warm process's sync of a hand edit: the same file, loaded again
    assert writer.load("random", "1", 512)
    assert writer.sync(RandomEmbedder(), items) == (1, 0)
    out["synced"] = rss()
    assert warm.load("random", "1", 512)  # the warm process takes in the write
    warm.search(query, 10)
    out["reloaded"] = rss()
    print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads RssAnon and RssFile from /proc")
def test_loading_searching_and_syncing_copy_no_rows(tmp_path):
    n = 40_000
    VectorStore(tmp_path).sync(RandomEmbedder(), _random_items(n))
    float32 = n * 512 * 4  # what format 2 held per copy: 82 MB
    stored = n * 512 * 2
    got = _in_subprocess("import zlib\n" + textwrap.dedent(_FOOTPRINT), tmp_path, n)
    grown = {step: {k: got[step][k] - got["start"][k] for k in got[step]} for step in got}
    # Anonymous memory: ids, hashes and the sync's bookkeeping (~0.5 KB a memory), a chunk of widened
    # rows; never a copy of the rows (format 2 read one whole at load, 82 MB, and a sync made two more).
    assert all(grown[step]["RssAnon"] < float32 / 2 for step in grown), grown
    assert grown["loaded"]["RssFile"] < stored / 4, grown  # the CRC is read, not paged through the map
    assert stored * 0.9 < grown["searched"]["RssFile"] < stored * 1.25, grown  # the search pages the rows in, once
    # The writer's copy of the kept rows went through reads, not its own map of the same file: no second copy.
    assert grown["synced"]["RssFile"] < stored * 1.25, grown
    assert grown["reloaded"]["VmHWM"] < stored * 1.25 + float32 / 2, grown  # the peak: one set of rows
