"""Several vaults read as one: the personal vault and the team vaults, in one ranking.

Each vault keeps its own index and vectors, rebuilt from its own files on each machine
(its `.hafiza/`). A search runs in each with the same floor, and the hits are merged by score,
each labelled with the vault it came from; the relative cut is made again over the merged list,
so a team's weak match does not ride along with a strong personal one. Scores come from each
vault's own statistics (BM25's IDF, the rank fusion), which is what lets a small team vault's
best match stand next to a large personal vault's.

`Vaults` answers what the hooks, the warm process, `hafiza search` and the MCP server ask of a
`Recall`; everything that is about one vault (the profile, the warm process's upkeep of the index
and vectors, writes) is about the personal vault, `personal`.
"""

from __future__ import annotations

from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.sync.teams import PERSONAL, readable


def open_recall(root: Path, mode: str | None = None, embedder=None, teams: dict[str, Path] | None = None,
                notice=None, files: bool = False):
    """A Recall for `root` and the mode to use: hybrid when given an embedder, else keyword.
    `embedder` may be Settings (hafiza.indexer.config), which names one and the user's config folder,
    whose team vaults (unless `teams` names them) are then searched too (`Vaults`). With `files`
    (a process that searches once or a few times), a keyword-only search reads the index's own files
    rather than load Whoosh where it can (Recall.files)."""
    from .config import Settings, embedder as choose
    from .recall import Recall

    if isinstance(embedder, Settings):
        teams = readable(Path(embedder.config) if embedder.config else None) if teams is None else teams
        embedder = choose(embedder, mode)
    if teams:
        recall = Vaults(root, teams, embedder, notice, files)
    else:
        recall = Recall(root, embedder, notice, files)
    return recall, mode or ("hybrid" if embedder is not None else "keyword")


class Vaults:
    """The personal vault and the team vaults `teams` (name -> folder), searched together."""

    def __init__(self, root: Path, teams: dict[str, Path], embedder=None, notice=None, files: bool = False):
        from .recall import Recall

        extra = {"notice": notice, "files": files} if notice else {"files": files}
        embedder = OneQuery(embedder) if embedder is not None else None
        self.personal = Recall(root, embedder, **extra)
        self.recalls = {PERSONAL: self.personal, **{name: Recall(path, embedder, **extra)
                                                     for name, path in sorted(teams.items())}}
        self.embedded_generation = None  # the warm process's bookkeeping for the personal vault

    # What is about one vault is about the personal one.
    @property
    def root(self) -> Path:
        return self.personal.root

    @property
    def index(self):
        return self.personal.index

    @property
    def embedder(self):
        return self.personal.embedder

    @property
    def modes(self) -> tuple[str, ...]:
        return self.personal.modes

    def vectors(self):
        return self.personal.vectors()

    def documents(self) -> int:
        return self.personal.documents()

    def roots(self) -> dict[str, str]:
        """Vault name -> folder, so impressions and uses go to the vault a hit came from."""
        return {name: str(recall.root) for name, recall in self.recalls.items()}

    def search(self, query: str, *, limit: int = 10, floor=None, **options) -> list:
        """The best `limit` hits of all vaults, each with `vault` set; `Recall.search`'s options."""
        best = {}
        for name, recall in self.recalls.items():
            try:
                found = recall.search(query, limit=limit, floor=floor, **options)
            except (HafizaError, OSError, ValueError) as exc:
                if recall is self.personal:
                    raise
                # One team vault that cannot be read (its folder moved, a bad mode) must not silence the rest.
                recall.index.notice(f"the vault {name!r} was left out of this search: {exc}")
                continue
            for hit in found:
                kept = best.get(hit.id)
                # A promoted memory lives in both vaults under one id: it is listed once, where it ranks best.
                if kept is None or hit.score > kept.score:
                    best[hit.id] = hit._replace(vault=name)
        hits = sorted(best.values(), key=lambda h: (-h.score, h.id))
        if floor is not None and hits:
            hits = [h for h in hits if h.score >= hits[0].score * floor.relative]
        return hits[:limit]

    def view(self, sync: bool = True):
        """Each vault's reader brought up to its files; the personal one's is returned."""
        for recall in self.recalls.values():
            if recall is not self.personal:
                recall.view(sync)
        return self.personal.view(sync)

    def prepare(self) -> None:
        for recall in self.recalls.values():
            recall.prepare()

    def close(self) -> None:
        for recall in self.recalls.values():
            recall.close()


class OneQuery:
    """The embedder, keeping its last one-text answer: a search embeds its query once, not once per vault."""

    def __init__(self, embedder):
        self.inner = embedder
        self._last = (None, None)

    def __getattr__(self, name):  # name, version, dim... as the embedder has them
        return getattr(self.inner, name)

    def embed(self, texts):
        if len(texts) != 1:
            return self.inner.embed(texts)
        if self._last[0] != texts[0]:
            self._last = (texts[0], self.inner.embed(texts))
        return self._last[1]


def log_shown(personal: Path, hits, roots: dict[str, str] | None, session: str | None = None) -> None:
    """Append an impression for each hit (dicts or Hits) to the usage log of the vault it came from:
    a team memory's counts are folded into the team vault, never into the personal one."""
    from hafiza.vault.store import usage
    from hafiza.vault.format.paths import SIDECAR

    by_root: dict[Path, list[str]] = {}
    for hit in hits:
        name, mem_id = (hit.get("vault"), hit["id"]) if isinstance(hit, dict) else (hit.vault, hit.id)
        root = Path((roots or {}).get(name) or personal)
        by_root.setdefault(root, []).append(mem_id)
    for root, ids in by_root.items():
        usage.append(root / SIDECAR, "shown", ids, session)
