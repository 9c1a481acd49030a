"""The warm process's documents as columns: per document number, the fields ranking reads, coded.

The warm process reads every stored document once (`View.load_all`) so that no prompt waits for the
index. Kept as dicts, they were the largest part of it at 100,000 memories: 358 MB as read, 205 MB
without the fields ranking does not read (bench/results/vector-memory-2026-12-01.md). Ranking reads a
few small fields with few distinct values (type, scope, status, dates, counts), so each is an array of
4-byte codes into its distinct values, and the ids a list; at 100,000 memories that is ~20 MB
(bench/results/vector-memory-2026-12-02.md). What only a shown hit needs (title, snippet, path, tags,
notes) and the alias terms of an alias-only match are read from the index for that document (`Row`,
~45 us at 100,000), for the few a search returns. Stdlib arrays, not numpy: a keyword-only warm
process never imports numpy.
"""

from __future__ import annotations

from array import array

# What ranking and the scope filter read of a document (search.factors, search.visible, recall._score).
RANKED = ("type", "scope", "status", "created", "last_used", "shown", "used", "half_life", "verified")
# Each document's `hash` (its file's content hash: vault.model.content_hash, 12 bytes as hex), kept so that
# the vectors' check can tell which files changed without reading every document (refresh.embedding_items).
DIGEST_BYTES = 12
_MISSING = object()  # a field the stored document does not have (Whoosh leaves out None values)


class Columns:
    """The ranked fields of every live document of one reader, by document number."""

    def __init__(self, reader):
        self.reader = reader
        count = reader.doc_count_all()
        self.ids: list[str | None] = [None] * count  # None: a deleted document
        self.numbers: dict[str, int] = {}
        self.codes = {field: array("I", bytes(4 * count)) for field in RANKED}
        self.values: dict[str, list] = {field: [_MISSING] for field in RANKED}  # code 0: not stored
        self.digests = bytearray(DIGEST_BYTES * count)
        self.odd_digests: dict[int, str] = {}  # any `hash` not of that form, as stored
        lookup: dict[str, dict] = {field: {} for field in RANKED}
        for docnum, doc in reader.iter_docs():
            self.ids[docnum] = doc["id"]
            self.numbers[doc["id"]] = docnum
            self._keep_digest(docnum, doc.get("hash") or "")
            for field in RANKED:
                value = doc.get(field, _MISSING)
                if value is _MISSING:
                    continue
                key = (value.__class__, value)  # 1 and True (or 1.0) are one dict key, not one value
                code = lookup[field].get(key)
                if code is None:
                    code = lookup[field][key] = len(self.values[field])
                    self.values[field].append(value)
                self.codes[field][docnum] = code

    def _keep_digest(self, docnum: int, digest: str) -> None:
        try:
            raw = bytes.fromhex(digest)
        except ValueError:
            raw = b""
        if len(raw) == DIGEST_BYTES and raw.hex() == digest:
            self.digests[docnum * DIGEST_BYTES:(docnum + 1) * DIGEST_BYTES] = raw
        else:
            self.odd_digests[docnum] = digest

    def digest(self, docnum: int) -> str:
        """Document `docnum`'s stored `hash`."""
        odd = self.odd_digests.get(docnum)
        return odd if odd is not None else self.digests[docnum * DIGEST_BYTES:(docnum + 1) * DIGEST_BYTES].hex()

    def row(self, docnum: int):
        """Document `docnum` as a read-only mapping; a deleted one as the index stores it."""
        if self.ids[docnum] is None:
            return self.reader.stored_fields(docnum)
        return Row(self, docnum)

    def value(self, field: str, docnum: int):
        """A ranked field's value (`_MISSING` when the document does not store it)."""
        return self.values[field][self.codes[field][docnum]]


class Row:
    """One document, as the dict of its stored fields reads (`[]`, `get`, `in`): the ranked fields from the
    columns, any other field from the index, read once on first use."""

    __slots__ = ("_columns", "_docnum", "_stored")

    def __init__(self, columns: Columns, docnum: int):
        self._columns, self._docnum, self._stored = columns, docnum, None

    def _lookup(self, key: str):
        columns = self._columns
        if key == "id":
            return columns.ids[self._docnum]
        if key in columns.codes:
            return columns.value(key, self._docnum)
        if self._stored is None:
            self._stored = columns.reader.stored_fields(self._docnum)
        return self._stored.get(key, _MISSING)

    def __getitem__(self, key: str):
        value = self._lookup(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default=None):
        value = self._lookup(key)
        return default if value is _MISSING else value

    def __contains__(self, key: str) -> bool:
        return self._lookup(key) is not _MISSING
