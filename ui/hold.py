"""What the server holds for its run: the vaults it shows (yours and the team vaults listed), each one's
rows, and the recall the hooks use. Writes open the vault the one way writers do (refresh.writable)."""

from __future__ import annotations

from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.sync.teams import PERSONAL, readable, stamp

from .catalog import Listing, Rows

ACTOR = "ui"
SEARCH_LIMIT = 50


class Hold:
    def __init__(self, root: Path, settings):
        self.root = Path(root)
        self.settings = settings
        self._listed = Path(settings.config) if settings.config else None
        self._stamp: tuple | None = ("unread",)
        self._roots: dict[str, Path] = {}
        self._rows: dict[str, Rows] = {}
        self.listing = Listing()
        self._scopes: tuple[tuple, list[str]] = ((), [])
        self._recall = None
        self.warnings: list[str] = []  # what the last write noticed, shown once on the next page
        self.notices: list[str] = []   # what the last review decision did, shown once on the review page

    @property
    def roots(self) -> dict[str, Path]:
        """Vault name -> folder: yours and the team vaults listed now (a `hafiza vault add` shows on the next page)."""
        self._follow()
        return self._roots

    @property
    def rows(self) -> dict[str, Rows]:
        self._follow()
        return self._rows

    def _follow(self) -> None:
        """Read the list of team vaults again when it changed (one stat otherwise); rows kept for a kept vault."""
        now = stamp(self._listed)
        if now == self._stamp:
            return
        self._stamp = now
        teams = readable(self._listed) if self._listed else {}
        roots = {PERSONAL: self.root, **dict(sorted(teams.items()))}
        self._rows = {name: self._rows[name] if self._roots.get(name) == path else Rows(path, name)
                      for name, path in roots.items()}
        if roots != self._roots and self._recall is not None:
            self._recall.close()
            self._recall = None
        self._roots = roots

    def root_of(self, name: str | None) -> Path:
        if not name:
            return self.root
        if name not in self.roots:
            raise HafizaError(f"no vault {name!r}; `hafiza vault list` lists the team vaults", field="vault")
        return self.roots[name]

    def writable(self, name: str | None = None):
        """The vault `name` for a write, as every writer opens it: the index and vectors follow each commit."""
        from hafiza.indexer.refresh import writable

        return writable(self.root_of(name), ACTOR, embedder=self.settings).require()

    def reader(self, name: str | None = None):
        from hafiza.vault.store.vault import reader

        return reader(self.root_of(name)).require()

    def scopes(self, names: list[str]) -> list[str]:
        """Every scope the memories of `names` have, for the filter; read again when their rows change."""
        key = tuple((name, self.rows[name].version) for name in names)
        if key != self._scopes[0]:
            self._scopes = (key, sorted({r["scope"] for name in names for r in self.rows[name].current()}))
        return self._scopes[1]

    def wrote(self, vault) -> None:
        self.warnings += vault.warnings

    def search(self, query: str, mode: str, include_inactive: bool) -> tuple[list[dict], str | None]:
        """Hits for `query` from the recall the hooks use, every scope and vault: the warm process's (which
        holds the model) when it runs, else this server's own, keyword only. (hits, a note for the page)."""
        from hafiza.hooks import service, wire

        request = {"op": "recall", "query": query, "mode": mode, "floor": "search", "explain": True,
                   "limit": SEARCH_LIMIT, "all_scopes": True, "include_inactive": include_inactive}
        reply = wire.ask(self.root, request) if mode != "keyword" else None
        note = None
        if reply is None:
            if mode != "keyword":
                note = self._start_warm()
            reply = service.answer(self.recall(), {**request, "mode": "keyword"}, "keyword")
        return reply["hits"], note

    def recall(self):
        self._follow()
        if self._recall is None:
            from hafiza.indexer.vaults import open_recall

            self._recall, _ = open_recall(self.root, "keyword", embedder=self.settings, notice=lambda _: None)
        return self._recall

    def _start_warm(self) -> str:
        from hafiza.hooks import wire

        if self.settings.embedder == "none":
            return "the meaning channel is off (HAFIZA_EMBEDDER=none): keyword search"
        if self.settings.daemon:
            try:
                wire.spawn(self.root)
            except OSError:
                pass
        return "the warm recall process, which holds the model, is starting: keyword search until it answers"
