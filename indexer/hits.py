"""What a search returns, in a module of its own: `hafiza search` answered by the warm process builds
hits without importing the search code (Whoosh, the pruning) it does not run."""

from __future__ import annotations

from typing import NamedTuple


class Hit(NamedTuple):
    """One recalled memory. A NamedTuple, not a dataclass: importing dataclasses costs the cold hook ~5 ms."""

    id: str
    title: str
    type: str
    scope: str
    status: str
    score: float
    path: str
    snippet: str = ""
    tags: str = ""
    superseded_by: str | None = None
    verified: str | None = None
    verified_note: str | None = None
    parts: dict | None = None   # how the score was made (--explain)
    vault: str | None = None    # which vault it came from, when several are read (indexer/vaults.py)
    newer: str | None = None    # a newer memory among the hits says something else about the same subject
    conflict: list | None = None  # while a merge conflict is open: its texts, own first (vault/format/conflicts.py)

    def to_json(self, explain: bool = False) -> dict:
        data = self._asdict()
        if not explain:
            data.pop("parts")
        data["score"] = round(self.score, 6)
        if self.vault is None:
            data.pop("vault")
        if self.newer is None:
            data.pop("newer")
        if self.conflict is None:
            data.pop("conflict")
        return data
