"""Who embeds a write when the model loads slowly: a background process, or the warm process that has it
loaded already (indexer/refresh.py, `writable`)."""

import os
import time

from hafiza.indexer.embed import HashEmbedder
from hafiza.indexer.refresh import WARM_EMBEDDER, WARM_EMBEDS, writable
from hafiza.indexer.vectors import VectorStore
from hafiza.vault.store.lock import claim
from hafiza.vault.store.vault import Vault


class SlowHash(HashEmbedder):
    """The hash embedder, declared slow to load as the real model is, so writers hand its work off.
    (The background process embeds with the vault's configured embedder: hash, in tests.)"""

    loads_slowly = True
    loaded = False


def embedded(root, wait: float) -> set[str]:
    """The ids the vault's vectors hold, once they hold something or `wait` seconds have passed."""
    deadline = time.monotonic() + wait
    store = VectorStore(root / ".hafiza")
    while True:
        store.load("hash", HashEmbedder.version, HashEmbedder().dim)
        if store.ids or time.monotonic() > deadline:
            return set(store.ids)
        time.sleep(0.1)


def test_a_write_without_a_warm_embedder_is_embedded_in_the_background(tmp_path):
    root = Vault.init(tmp_path / "vault").root
    writable(root, embedder=SlowHash()).remember("Deploys go out from main only.", id="deploys")
    assert embedded(root, wait=60) == {"deploys"}


def test_a_small_write_is_left_to_the_warm_process_that_embeds(tmp_path):
    root = Vault.init(tmp_path / "vault").root
    (root / ".hafiza" / WARM_EMBEDDER).parent.mkdir(parents=True, exist_ok=True)
    held = claim(root / ".hafiza" / WARM_EMBEDDER)  # as hooks/daemon.py does with a model and a watch
    try:
        writable(root, embedder=SlowHash()).remember("Deploys go out from main only.", id="deploys")
        assert embedded(root, wait=3) == set()  # nobody else started to load the model
        # More than the warm process embeds between prompts: a background process does, as before.
        writable(root, embedder=SlowHash()).import_many(
            [{"text": f"Imported note {n} about the staging cluster.", "id": f"n{n}"} for n in range(WARM_EMBEDS + 1)],
            source="test")
        assert len(embedded(root, wait=60)) == WARM_EMBEDS + 2  # and it embeds everything not yet embedded
    finally:
        os.close(held)
