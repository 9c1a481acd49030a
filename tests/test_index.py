"""The index: incremental sync from hand-edited files, and automatic rebuilds with identical results."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import edit_in_place, run_cli
from hafiza.indexer.index import Index
from hafiza.indexer.recall import Recall
from hafiza.vault.errors import HafizaError

QUERIES = ["deploy main", "pnpm", "şifre", "staging port", "müşteri izmir", "test komutu"]

ITEMS = [
    {"id": "deploy-main", "type": "rule", "title": "Deploy only from main", "text": "Production deploys only from main after CI is green.", "tags": ["deploy"]},
    {"id": "pnpm", "title": "Package manager", "text": "We use pnpm, not npm. Run pnpm install.", "created": "2025-06-01"},
    {"id": "sifre", "title": "Şifre politikası", "text": "Şifreler 1Password'da; şifre sıfırlama 24 saat.", "type": "rule"},
    {"id": "staging-old", "title": "Staging port", "text": "Staging server listens on port 8080.", "created": "2024-03-01"},
    {"id": "staging-new", "title": "Staging port", "text": "Staging server listens on port 9090.", "created": "2026-01-01"},
    {"id": "izmir", "title": "İzmir müşterisi", "text": "Müşteri İzmir'de, Alsancak ofisi; deploy saatleri 09-17.", "type": "fact"},
    {"id": "tests", "title": "Test komutu", "text": "Testler `make test` ile çalışır; pytest -q.", "type": "preference"},
    {"id": "lesson", "title": "Deploy on Friday broke prod", "text": "We deployed on Friday and prod broke. Never again.", "type": "lesson"},
]


@pytest.fixture
def filled(vault):
    vault.import_many(ITEMS, source="import:test")
    return vault


def write(vault, name, header, body):
    (vault.memories_dir / name).write_text(f"---\n{header.strip()}\n---\n{body}\n", encoding="utf-8")


def ids(root, query, **options):
    return [h.id for h in Recall(root).search(query, mode="keyword", all_scopes=True, **options)]


def snapshot(root) -> dict:
    """Ids and scores of several queries, as a user would see them."""
    recall = Recall(root, notice=lambda _: None)
    return {q: [(h.id, round(h.score, 9)) for h in recall.search(q, mode="keyword", all_scopes=True)]
            for q in QUERIES}


def cli_snapshot() -> dict:
    return {q: [(h["id"], h["score"]) for h in json.loads(run_cli("search", "--json", "--all-scopes", q).stdout)]
            for q in QUERIES[:2]}


def test_the_index_lives_in_the_ignored_sidecar(filled):
    Index(filled.root).sync()
    assert (filled.root / ".hafiza" / "index").is_dir()
    assert not filled.git.dirty()


def test_hand_added_changed_and_deleted_files_are_synced_without_reindex(filled):
    index = Index(filled.root)
    index.sync()
    write(filled, "by-hand.md", "id: by-hand\ntitle: Kubernetes namespace", "Our namespace is alpha.")
    report = index.sync()
    assert (report.added, report.changed, report.removed, report.rebuilt) == (1, 0, 0, False)
    assert ids(filled.root, "kubernetes namespace") == ["by-hand"]

    path = filled.memories_dir / "by-hand.md"
    path.write_text(path.read_text().replace("alpha", "beta"))
    report = index.sync()
    assert (report.added, report.changed, report.removed) == (0, 1, 0)
    assert ids(filled.root, "beta") == ["by-hand"]
    assert ids(filled.root, "alpha") == []

    path.unlink()
    report = index.sync()
    assert (report.added, report.changed, report.removed) == (0, 0, 1)
    assert ids(filled.root, "kubernetes") == []
    assert index.doc_count() == len(ITEMS)


def test_search_alone_picks_up_hand_edits(filled):
    Index(filled.root).sync()
    write(filled, "by-hand.md", "id: by-hand", "Redis runs on port 6380.")
    assert json.loads(run_cli("search", "--json", "redis").stdout)[0]["id"] == "by-hand"
    os.remove(filled.memories_dir / "pnpm.md")
    assert ids(filled.root, "pnpm") == []


def test_a_file_touched_but_unchanged_costs_no_reindex(filled):
    index = Index(filled.root)
    index.sync()
    segments = sorted(p.name for p in index.dir.iterdir())
    path = filled.memories_dir / "pnpm.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    path.write_text(path.read_text())  # rewritten with the same content
    report = index.sync()
    assert (report.touched, report.rebuilt) == (0, False)
    assert sorted(p.name for p in index.dir.iterdir()) == segments  # no index write happened
    assert index.sync().touched == 0


def test_a_renamed_file_is_found_once(filled):
    index = Index(filled.root)
    index.sync()
    os.rename(filled.memories_dir / "pnpm.md", filled.memories_dir / "package-manager.md")
    report = index.sync()
    assert report.errors == {}
    assert ids(filled.root, "pnpm") == ["pnpm"]
    assert index.doc_count() == len(ITEMS)


def test_a_malformed_file_is_skipped_and_reported_and_the_rest_work(filled):
    write(filled, "broken.md", "id: broken\ntags: [a, b\ntitle: Broken", "pnpm everywhere")
    write(filled, "bad-type.md", "id: bad-type\ntype: memo", "pnpm too")
    report = Index(filled.root).sync()
    assert set(report.errors) == {"broken.md", "bad-type.md"}
    assert "invalid YAML" in report.errors["broken.md"] and "memo" in report.errors["bad-type.md"]
    assert ids(filled.root, "pnpm") == ["pnpm"]
    # fixed by hand: indexed on the next sync
    write(filled, "bad-type.md", "id: bad-type\ntype: lesson", "pnpm too")
    report = Index(filled.root).sync()
    assert set(report.errors) == {"broken.md"} and report.added + report.changed == 1
    assert set(ids(filled.root, "pnpm")) == {"pnpm", "bad-type"}


def test_a_second_file_with_the_same_id_is_reported(filled):
    Index(filled.root).sync()
    write(filled, "zz-copy.md", "id: pnpm\ntitle: Copy", "A copy of pnpm.")
    report = Index(filled.root).sync()
    assert "duplicate id 'pnpm'" in report.errors["zz-copy.md"]
    assert ids(filled.root, "pnpm") == ["pnpm"]


def test_a_deleted_index_is_rebuilt_with_a_notice_and_identical_results(filled):
    before, cli_before = snapshot(filled.root), cli_snapshot()
    assert all(before[q] for q in QUERIES)
    shutil.rmtree(filled.root / ".hafiza" / "index")
    proc = run_cli("search", "--json", "pnpm")
    assert "rebuilding" in proc.stderr
    assert json.loads(proc.stdout)[0]["id"] == "pnpm"
    assert snapshot(filled.root) == before
    assert cli_snapshot() == cli_before


def test_a_corrupt_index_is_rebuilt_with_a_notice_and_identical_results(filled):
    before, cli_before = snapshot(filled.root), cli_snapshot()
    segments = list((filled.root / ".hafiza" / "index").glob("*.seg"))
    assert segments
    for segment in segments:
        os.truncate(segment, 100)
    proc = run_cli("search", "--json", "pnpm", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "rebuilding" in proc.stderr
    assert snapshot(filled.root) == before
    assert cli_snapshot() == cli_before


def test_a_corrupt_index_is_rebuilt_in_process_too(filled):
    before = snapshot(filled.root)
    for segment in (filled.root / ".hafiza" / "index").glob("*.seg"):
        os.truncate(segment, 100)
    notices = []
    recall = Recall(filled.root, notice=notices.append)
    assert [h.id for h in recall.search("pnpm", mode="keyword", all_scopes=True)][:1] == ["pnpm"]
    assert notices and "rebuild" in notices[0]
    assert snapshot(filled.root) == before


def test_a_lost_or_outdated_manifest_means_a_rebuild(filled):
    import sqlite3

    before = snapshot(filled.root)
    manifest = filled.root / ".hafiza" / "manifest.db"
    with sqlite3.connect(manifest) as db:
        db.execute("PRAGMA user_version = 1")
    notices = []
    report = Index(filled.root, notice=notices.append).sync()
    assert report.rebuilt and notices
    manifest.unlink()
    assert Index(filled.root, notice=notices.append).sync().rebuilt
    manifest.write_bytes(b"not a database at all")
    assert Index(filled.root, notice=notices.append).sync().rebuilt
    assert snapshot(filled.root) == before


def test_reindex_rebuilds_from_scratch(filled):
    before = snapshot(filled.root)
    out = run_cli("reindex").stdout
    assert f"indexed {len(ITEMS)} memories" in out
    assert snapshot(filled.root) == before


HOLD_INDEX_LOCK = """
import sys
from pathlib import Path
from hafiza.vault.store.lock import locked
with locked(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_a_sync_that_finds_another_syncing_searches_what_is_there(filled):
    index = Index(filled.root)
    index.sync()
    write(filled, "by-hand.md", "id: by-hand", "Redis runs on port 6380.")
    proc = subprocess.Popen([sys.executable, "-c", HOLD_INDEX_LOCK, str(index.lock_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        report = Index(filled.root).sync()
        assert report.skipped and report.touched == 0
        assert ids(filled.root, "pnpm") == ["pnpm"]  # not blocked, a moment stale
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    assert ids(filled.root, "redis") == ["by-hand"]


def test_stored_fields_are_enough_for_a_hit(filled):
    hit = Recall(filled.root).search("pnpm", mode="keyword", all_scopes=True)[0]
    assert (hit.id, hit.title, hit.type, hit.status, hit.path) == ("pnpm", "Package manager", "knowledge",
                                                                   "active", "memories/pnpm.md")
    assert hit.snippet.startswith("We use pnpm")


def test_a_fresh_process_opens_an_index_in_step_without_reading_the_manifest(filled):
    Index(filled.root).sync()  # a full sync records the stamps it matched in .hafiza/synced
    manifest = filled.sidecar / "manifest.db"
    st = manifest.stat()
    manifest.write_bytes(b"{not a database")  # damaged, but with the same mtime: a quick open must not read it
    os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns))
    notices = []
    quick = Index(filled.root, notice=notices.append)
    report = quick.sync(quick=True)
    assert quick._ix is not None and quick._ix.doc_count() == len(ITEMS)
    assert not report.rebuilt and notices == []
    quick.sync()  # a full sync reads the manifest, finds the damage and rebuilds
    assert notices and quick._ix.doc_count() == len(ITEMS)
    # A write moves the stamps: the next quick open syncs fully and sees it.
    write(filled, "kafka.md", "id: kafka\ntitle: Kafka topics", "Kafka topics come from Terraform.")
    fresh = Index(filled.root, notice=lambda _: None)
    fresh.sync(quick=True)
    assert fresh._ix.doc_count() == len(ITEMS) + 1


def test_a_full_sync_after_a_quick_open_keeps_the_open_index(filled):
    Index(filled.root).sync()
    index = Index(filled.root, notice=lambda _: None)
    index.sync(quick=True)
    opened = index._ix
    index.sync()  # the warm process's periodic full sync: nothing changed, so its reader stays valid
    assert index._ix is opened
    path = filled.memories_dir / "pnpm.md"
    path.write_text(path.read_text().replace("We use pnpm", "We use pnpm 9"))  # in place: no folder change
    index.sync()
    assert index._ix is not opened and "pnpm" in [h.id for h in Recall(filled.root).search("pnpm 9", mode="keyword")]


def test_a_write_during_a_sync_is_not_vouched_for_by_its_stamps(filled):
    index = Index(filled.root, notice=lambda _: None)
    scan = index._scan

    def scan_while_another_writer_adds_a_file():
        found = scan()  # this sync's scan is done; another writer's file lands before it records its stamps
        write(filled, "kafka.md", "id: kafka\ntitle: Kafka topics", "Kafka topics come from Terraform.")
        return found

    index._scan = scan_while_another_writer_adds_a_file
    write(filled, "redis.md", "id: redis\ntitle: Redis eviction", "Redis evicts with allkeys-lru.")
    index.sync()
    fresh = Index(filled.root, notice=lambda _: None)
    fresh.sync(quick=True)  # the stamps do not match: a full sync, which indexes the other writer's file
    assert fresh._ix.doc_count() == len(ITEMS) + 2


# ---- cost independent of the vault's size: a write reads only what it wrote

def _counting_reads(monkeypatch):
    """The memory files the index reads, by name (it reads each through index.read_text)."""
    from hafiza.indexer import index as index_module

    read = []
    original = index_module.read_text

    def counted(path, *args, **kwargs):
        read.append(path.name)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(index_module, "read_text", counted)
    return read


def test_a_write_reads_only_the_files_it_wrote(filled, monkeypatch):
    from hafiza.indexer.refresh import writable
    from hafiza.vault.format import model

    Index(filled.root).sync()
    vault = writable(filled.root, embedder=None)
    read = _counting_reads(monkeypatch)
    monkeypatch.setattr(model, "declared_id", lambda path: pytest.fail(f"read the header of {path.name}"))
    vault.remember("Kafka topics come from Terraform.", title="Kafka topics")
    vault.forget("pnpm")
    assert read == []  # keyword only, a write leaves the indexing to the next reader
    assert ids(filled.root, "kafka terraform") == ["kafka-topics"]
    assert sorted(read) == ["kafka-topics.md", "pnpm.md"]  # which reads just what the writes logged
    assert "pnpm" not in ids(filled.root, "pnpm")


def test_a_fresh_reader_catches_up_on_writes_by_reading_only_them(filled, monkeypatch):
    from hafiza.indexer.embed import HashEmbedder
    from hafiza.indexer.refresh import writable

    Index(filled.root).sync()
    writer = writable(filled.root, embedder=HashEmbedder())
    writer.after_commit = None  # the writer dies before its index follows: readers catch up from the log
    writer.remember("Kafka topics come from Terraform.", title="Kafka topics")
    writer.remember("Redis evicts with allkeys-lru.", title="Redis eviction")
    read = _counting_reads(monkeypatch)
    assert ids(filled.root, "kafka terraform") == ["kafka-topics"]
    assert sorted(read) == ["kafka-topics.md", "redis-eviction.md"]


def test_a_file_created_by_hand_is_found_by_the_next_reader(filled):
    Index(filled.root).sync()
    from hafiza.indexer.refresh import writable

    writable(filled.root, embedder=None).remember("Kafka topics come from Terraform.", title="Kafka topics")
    write(filled, "by-hand.md", "id: by-hand\ntitle: Kubernetes namespace", "Our namespace is alpha.")
    assert ids(filled.root, "kubernetes namespace") == ["by-hand"]  # no line explains it: every file compared


def test_an_id_a_hand_made_file_declares_is_taken_without_reading_every_header(filled, monkeypatch):
    from hafiza.indexer.refresh import writable
    from hafiza.vault.format import model

    Index(filled.root).sync()
    write(filled, "Notes From Ayse.md", "id: deploy-notes\ntitle: Deploy notes", "Hand made.")
    vault = writable(filled.root, embedder=None)
    headers, declared = [], model.declared_id

    def counted(path):
        headers.append(path.name)
        return declared(path)

    monkeypatch.setattr(model, "declared_id", counted)
    with pytest.raises(HafizaError, match="already taken"):
        vault.remember("Another.", id="deploy-notes")
    assert vault.remember("Another.", title="Deploy notes").id == "deploy-notes-2"
    assert vault.remember("Yet another.", title="Staging port").id == "staging-port"  # a name no file has
    # Only headers of files written since the index last caught up are read, never every one.
    assert set(headers) <= {"Notes From Ayse.md", "deploy-notes-2.md"}
    monkeypatch.setattr(model, "declared_id", declared)
    assert vault.load_all()[1] == []


def test_a_kernel_watch_names_edits_made_in_place_and_only_those_are_read(filled, monkeypatch):
    from hafiza.hooks.watch import FolderWatch

    index = Index(filled.root)
    index.sync()
    watch = FolderWatch.open(filled.memories_dir)
    if watch is None:
        pytest.skip("no inotify here: the warm process falls back to its periodic full sync")
    try:
        assert index.follow(watch.changed).touched == 0  # nothing yet
        path = filled.memories_dir / "pnpm.md"
        edit_in_place(path, "We use pnpm", "We use pnpm 9")
        write(filled, ".pnpm.md.123.tmp", "id: temp", "An editor's temp file.")  # never a memory
        read = _counting_reads(monkeypatch)
        report = index.follow(watch.changed)
        assert (report.changed, read) == (1, ["pnpm.md"])
        assert "pnpm" in ids(filled.root, "pnpm 9")
    finally:
        watch.close()


def test_unparsable_files_are_found_through_their_own_index_which_an_older_manifest_gains(vault):
    import sqlite3

    vault.remember("Deploy from main.", id="deploy")
    (vault.root / "memories" / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n")
    index = Index(vault.root, notice=lambda _: None)
    assert set(index.sync().errors) == {"broken.md"}
    db = sqlite3.connect(index.manifest_path)
    db.executescript("DROP INDEX unparsable;")  # as a manifest made before it existed
    db.close()
    with index._manifest() as manifest:
        assert set(manifest.errors()) == {"broken.md"}
        plan = manifest.db.execute("EXPLAIN QUERY PLAN SELECT name, error FROM files WHERE error IS NOT NULL")
        assert "INDEX unparsable" in plan.fetchall()[0][-1]  # not a read of every row
